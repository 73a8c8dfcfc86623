package io.kplex.spark.spec;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * One setting as {@code options.json} declares it: its name, type, range, default and where
 * it may be set. Data only: {@code conf/ConfParser} parses values by it, {@code
 * conf/TableProperties} validates table properties by it.
 *
 * @param min the least number allowed (null: not a number)
 * @param max the greatest number allowed, or null
 * @param also one number allowed besides the range (-1 for the broker default), or null
 * @param defaultValue the value when no layer sets it, as text, or null
 * @param sessionKey the session setting of a read option that a session may set too
 *     ({@code kplex.stream.<name>}: SQL's STREAM(...) takes no read options), or null
 * @param readTimeDefault what a read-time table stores when the property is not given, or null
 * @param specialValues values with a meaning of their own, by what they mean (startingOffsets'
 *     {@code resume_from_table})
 */
public record OptionSpec(String name, Type type, Long min, Long max, Long also, List<String> choices,
    String defaultValue, boolean required, Set<Scope> setAs, String expectedText, String sessionKey,
    String readTimeDefault, Map<String, String> specialValues) {

  /** How a value is read (TOPIC: text that must be a legal Kafka topic name). */
  public enum Type { INT, LONG, BOOLEAN, CHOICE, TEXT, TOPIC }

  /** Where a setting may be given. */
  public enum Scope {
    /** TBLPROPERTIES of a kplex table, stored in its definition. */
    TABLE,
    /** {@code df.write.option(k, v)}. */
    WRITE,
    /** {@code spark.read.option(k, v)} (kplex.* ones on read-time tables only). */
    READ,
    /** {@code spark.sql.catalog.kplex.<k>}. */
    CATALOG,
    /** {@code spark.kplex.<k>} for {@code kplex.<k>}. */
    SESSION,
    /**
     * {@code spark.kplex.<k>} in a server's start-up configuration only (its SparkConf; a
     * session's value is not read): conf/ServerPolicy.
     */
    SERVER;

    /** The wire name, as options.json spells it. */
    public String wire() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /** The special value that means {@code meaning} (as options.json names it); fails if none is declared. */
  public String specialValue(String meaning) {
    String value = specialValues.get(meaning);
    if (value == null) throw new IllegalStateException("kplex bug: " + name + " declares no special value " + meaning);
    return value;
  }

  /** Its default as a number (an int or long setting that has one); fails if it has none. */
  public long longDefault() {
    if ((type != Type.LONG && type != Type.INT) || defaultValue == null) {
      throw new IllegalStateException("kplex bug: " + name + " has no numeric default");
    }
    return Long.parseLong(defaultValue.trim());
  }

  public boolean settableAs(Scope scope) {
    return setAs.contains(scope);
  }

  /**
   * What a value should have been, for an error: as declared, else {@code one of [a, b]} for a
   * choice, {@code an integer >= min} for a number, {@code true or false} for a flag.
   */
  public String expected() {
    if (expectedText != null) return expectedText;
    switch (type) {
      case CHOICE:
        return "one of " + choices;
      case INT:
      case LONG:
        return "an integer >= " + min;
      case BOOLEAN:
        return "true or false";
      case TOPIC:
        return "a Kafka topic name";
      default:
        return "text";
    }
  }
}
