package io.kplex.spark.errors;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.SparkThrowable;

/**
 * A kplex error: its condition ({@code KPLEX_<CODE>}, or {@code KPLEX_<CODE>.<SUB_CLASS>} as
 * Spark names a sub-class) and its message parameters; its message is the condition's
 * template in {@link ErrorConditions} filled with them, after {@code [KPLEX_<CODE>]}. As a
 * {@link SparkThrowable} it carries its condition and SQLSTATE, so Spark Connect and JDBC
 * clients get an error condition, and the Python package raises the matching
 * {@code kplex.errors} class. Made only by {@link Errors}; its condition is declared in the
 * conditions file (ErrorConditionsTest checks every one the sources use).
 *
 * <p>The message's prefix names the main condition only ({@code [KPLEX_BAD_OPTION]}, also
 * for {@code KPLEX_BAD_OPTION.KAFKA_TABLE_PROPERTY}): the Python class and the SQLSTATE are
 * the main condition's. {@link #getCondition()} gives the sub-class too.
 *
 * <p>Its message parameters name its culprits ({@code table}, {@code topic}, {@code option},
 * {@code value}...: the names {@code kplex.errors.kplex_error} gives on the Python side), in
 * the order Errors gives them, fixed when it is made: {@link #getMessageParameters()} is an
 * unmodifiable copy. A parameter that is null renders as {@code null} and is left out.
 */
public class KplexException extends IllegalArgumentException implements SparkThrowable {
  private final String condition;
  private final Map<String, String> parameters;

  /** The error of {@code condition} ({@code CODE} or {@code CODE.SUB_CLASS}, without {@code KPLEX_}). */
  KplexException(String condition, Map<String, String> parameters) {
    this(condition, parameters, null);
  }

  KplexException(String condition, Map<String, String> parameters, Throwable cause) {
    super("[KPLEX_" + main(condition) + "] " + ErrorConditions.render(condition, parameters), cause);
    this.condition = condition;
    Map<String, String> named = new LinkedHashMap<>();
    parameters.forEach((name, value) -> {
      if (value != null) named.put(name, value);
    });
    this.parameters = Collections.unmodifiableMap(named);
  }

  private static String main(String condition) {
    int dot = condition.indexOf('.');
    return dot < 0 ? condition : condition.substring(0, dot);
  }

  /** The main condition's code, without the {@code KPLEX_} prefix (and without a sub-class). */
  public String code() {
    return main(condition);
  }

  /** Spark 4's name for the error class (a method of {@code SparkThrowable} there, not on 3.5). */
  public String getCondition() {
    return "KPLEX_" + condition;
  }

  @Override
  public String getErrorClass() {
    return getCondition();
  }

  @Override
  public String getSqlState() {
    ErrorConditions.Condition c = ErrorConditions.of(code());
    return c == null ? null : c.sqlState();
  }

  @Override
  public boolean isInternalError() {
    return false;
  }

  /** Its culprits by name, in the order Errors gives them (unmodifiable). */
  @Override
  public Map<String, String> getMessageParameters() {
    return parameters;
  }

  /** Its message without the {@code [KPLEX_<CODE>]} prefix: its template rendered with its parameters. */
  public String text() {
    return getMessage().substring(getMessage().indexOf("] ") + 2);
  }

  /** The template its message was rendered from (without the {@code [KPLEX_<CODE>]} prefix). */
  public String getDefaultMessageTemplate() {
    return Objects.requireNonNull(ErrorConditions.template(condition));
  }
}
