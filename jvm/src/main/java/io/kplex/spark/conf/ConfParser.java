package io.kplex.spark.conf;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.spec.OptionSpec;
import io.kplex.spark.spec.OptionSpecs;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * kplex's settings resolved over their layers, each typed value parsed here and only here,
 * by what {@code options.json} declares ({@link OptionSpecs}). Precedence, highest first:
 * <ol>
 *   <li>options of the write or read ({@code df.write.option(k, v)}, {@code spark.read.option(k, v)});</li>
 *   <li>the table's properties (TBLPROPERTIES, stored in its definition);</li>
 *   <li>the catalog's options ({@code spark.sql.catalog.kplex.<k>});</li>
 *   <li>the session's settings ({@code spark.kplex.<k>} for {@code kplex.<k>}, e.g.
 *       {@code SET spark.kplex.delivery=at_least_once});</li>
 *   <li>the default options.json gives (exactly_once, fail on NULL key and NULL order, ...).</li>
 * </ol>
 * Names compare in any case (as Spark's options do). A value is checked when it is read, so
 * a wrong one is named ({@code KPLEX_BAD_OPTION}) by the getter that needed it. Kafka client
 * settings ({@code kafka.*}) pass through {@code kafka/KafkaConf}; the one kplex reads itself
 * ({@code kafka.transaction.timeout.ms}) is declared and parsed like any other, over
 * {@code KafkaConf.options()}. A stream's session settings ({@code kplex.stream.*}, each
 * option's {@code session_key}) are the session layer of {@code read/ReadConf.streamSettings}.
 *
 * <pre>
 * ConfParser settings = ConfParser.builder().options(writeOptions).table(def.properties())
 *     .catalog(catalogOptions).session(WriteConf.sessionSettings()).build();
 * NullKeyPolicy nullKey = settings.enumConf(KplexOptions.NULL_KEY, NullKeyPolicy.class);
 * </pre>
 */
public final class ConfParser {
  /** Highest first; keys lower-cased. */
  private final List<Map<String, String>> layers;

  private ConfParser(List<Map<String, String>> layers) {
    this.layers = layers;
  }

  /** The layers by role; whatever order they are given in, they resolve in the order above. */
  public static Builder builder() {
    return new Builder();
  }

  /** One layer alone (a table's properties, a catalog's settings). */
  public static ConfParser of(Map<String, String> settings) {
    return builder().options(settings).build();
  }

  /** Collects the layers of a {@link ConfParser}; a layer not given is empty. */
  public static final class Builder {
    private Map<String, String> options = Map.of();
    private Map<String, String> table = Map.of();
    private Map<String, String> catalog = Map.of();
    private Map<String, String> session = Map.of();

    private Builder() {}

    public Builder options(Map<String, String> given) { options = given; return this; }
    public Builder table(Map<String, String> given) { table = given; return this; }
    public Builder catalog(Map<String, String> given) { catalog = given; return this; }
    public Builder session(Map<String, String> given) { session = given; return this; }

    public ConfParser build() {
      List<Map<String, String>> layers = new ArrayList<>();
      for (Map<String, String> layer : List.of(options, table, catalog, session)) layers.add(lower(layer));
      return new ConfParser(layers);
    }
  }

  private static Map<String, String> lower(Map<String, String> layer) {
    Map<String, String> out = new HashMap<>();
    layer.forEach((k, v) -> out.put(k.toLowerCase(Locale.ROOT), v));
    return out;
  }

  /** Whether some layer sets {@code key} (a default does not count). */
  public boolean isSet(String key) {
    return given(key) != null;
  }

  /** The value the highest layer gives {@code key}, as given, or null. */
  private String given(String key) {
    String k = key.toLowerCase(Locale.ROOT);
    for (Map<String, String> layer : layers) {
      String v = layer.get(k);
      if (v != null) return v;
    }
    return null;
  }

  /** The value of {@code key} as given (not trimmed), else its default, else null. */
  public String text(String key) {
    String v = given(key);
    OptionSpec spec = OptionSpecs.of(key);
    if (v != null && spec.type() == OptionSpec.Type.TOPIC) {
      topic(spec, v);
    }
    return v != null ? v : spec.defaultValue();
  }

  /** An int setting, in its range. */
  public int intConf(String key) {
    return (int) number(OptionSpecs.of(key), text(key));
  }

  /** A long setting, in its range. */
  public long longConf(String key) {
    return number(OptionSpecs.of(key), text(key));
  }

  /** A true/false setting (any case). */
  public boolean booleanConf(String key) {
    return flag(OptionSpecs.of(key), text(key));
  }

  /** A choice setting, as its enum (constants named as the wire names, upper-cased). */
  public <E extends Enum<E>> E enumConf(String key, Class<E> type) {
    return parseEnum(key, type, text(key));
  }

  /**
   * Every setting of every layer resolved into one map, lower-cased names (for checks over
   * several settings at once, and {@code kplex.testing.*}).
   */
  public Map<String, String> merged() {
    Map<String, String> out = new HashMap<>();
    for (int i = layers.size() - 1; i >= 0; i--) out.putAll(layers.get(i));
    return out;
  }

  /**
   * {@code value} as {@code key}'s setting would hold it, or a {@code KPLEX_BAD_OPTION}: a
   * choice lower-cased, anything else as given. A table property is checked by this.
   */
  public static String canonical(String key, String value) {
    OptionSpec spec = OptionSpecs.of(key);
    switch (spec.type()) {
      case INT:
      case LONG:
        number(spec, value);
        return value;
      case BOOLEAN:
        flag(spec, value);
        return value;
      case CHOICE:
        if (!spec.choices().contains(value.trim().toLowerCase(Locale.ROOT))) {
          throw Errors.badOption(spec.name(), value, spec.expected());
        }
        return value.trim().toLowerCase(Locale.ROOT);
      case TOPIC:
        topic(spec, value);
        return value;
      default:
        return value;
    }
  }

  /** A topic's name, unless Kafka would refuse it (its answer names neither it nor why). */
  private static void topic(OptionSpec spec, String value) {
    String problem = io.kplex.spark.kafka.TopicNames.problem(value);
    if (problem != null) {
      throw Errors.badTopicOption(spec.name(), value, problem);
    }
  }

  /** An enum's constant by its wire name (any case), or a {@code KPLEX_BAD_OPTION} naming the choices. */
  public static <E extends Enum<E>> E parseEnum(String key, Class<E> type, String value) {
    E[] constants = type.getEnumConstants();
    List<String> wire = new ArrayList<>();
    for (E e : constants) {
      String name = e.name().toLowerCase(Locale.ROOT);
      if (value != null && name.equals(value.trim().toLowerCase(Locale.ROOT))) return e;
      wire.add(name);
    }
    throw Errors.badChoice(key, value, wire);
  }

  /** The number {@code value} spells (Java's parseInt for an int, parseLong for a long), in range. */
  private static long number(OptionSpec spec, String value) {
    if (value == null) throw Errors.badOption(spec.name(), null, spec.expected());
    try {
      String t = value.trim();
      long n = spec.type() == OptionSpec.Type.INT ? Integer.parseInt(t) : Long.parseLong(t);
      boolean inRange = n >= spec.min() && (spec.max() == null || n <= spec.max());
      if (inRange || (spec.also() != null && n == spec.also())) return n;
    } catch (NumberFormatException e) {
      // named below
    }
    throw Errors.badOption(spec.name(), value, spec.expected());
  }

  private static boolean flag(OptionSpec spec, String value) {
    if (value != null && value.trim().equalsIgnoreCase("true")) return true;
    if (value != null && value.trim().equalsIgnoreCase("false")) return false;
    throw Errors.badOption(spec.name(), value, spec.expected());
  }
}
