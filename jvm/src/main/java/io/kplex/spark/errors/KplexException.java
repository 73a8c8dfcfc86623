package io.kplex.spark.errors;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.spark.SparkThrowable;

/**
 * A kplex error: its message starts with {@code [KPLEX_<CODE>]}, and as a
 * {@link SparkThrowable} it carries its condition ({@code KPLEX_<CODE>}) and SQLSTATE from
 * {@link ErrorConditions}, so Spark Connect and JDBC clients get an error condition, and
 * the Python package raises the matching {@code kplex.errors} class. Made only by
 * {@link Errors}, the catalogue of kplex's error texts; its code is declared in the
 * conditions file (ErrorConditionsTest checks every code the sources use).
 *
 * <p>Its message parameters name its culprits ({@code table}, {@code topic}, {@code option},
 * {@code value}...: the names {@code kplex.errors.kplex_error} gives on the Python side), in
 * the order Errors gives them, fixed when it is made: {@link #getMessageParameters()} is an
 * unmodifiable copy. A culprit that is null is left out.
 */
public class KplexException extends IllegalArgumentException implements SparkThrowable {
  private final String code;
  private final Map<String, String> parameters;

  KplexException(String code, String message) {
    this(code, Map.of(), message);
  }

  KplexException(String code, String message, Throwable cause) {
    this(code, Map.of(), message, cause);
  }

  KplexException(String code, Map<String, String> parameters, String message) {
    super("[KPLEX_" + code + "] " + message);
    this.code = code;
    this.parameters = frozen(parameters);
  }

  KplexException(String code, Map<String, String> parameters, String message, Throwable cause) {
    super("[KPLEX_" + code + "] " + message, cause);
    this.code = code;
    this.parameters = frozen(parameters);
  }

  private static Map<String, String> frozen(Map<String, String> parameters) {
    return Collections.unmodifiableMap(new LinkedHashMap<>(parameters));
  }

  /** The code, without the {@code KPLEX_} prefix. */
  public String code() {
    return code;
  }

  /** Spark 4's name for the error class (a method of {@code SparkThrowable} there, not on 3.5). */
  public String getCondition() {
    return "KPLEX_" + code;
  }

  @Override
  public String getErrorClass() {
    return getCondition();
  }

  @Override
  public String getSqlState() {
    ErrorConditions.Condition c = ErrorConditions.of(code);
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

  /** Spark's template lookup knows only its own conditions: kplex's message is its own. */
  public String getDefaultMessageTemplate() {
    return getMessage();
  }
}
