package io.kplex.spark.errors;

/**
 * A kplex error: the message starts with {@code [KPLEX_<CODE>]} so that the Python
 * wrapper can turn it into the matching Python exception class.
 */
public class KplexException extends IllegalArgumentException {
  private final String code;

  public KplexException(String code, String message) {
    super("[KPLEX_" + code + "] " + message);
    this.code = code;
  }

  public KplexException(String code, String message, Throwable cause) {
    super("[KPLEX_" + code + "] " + message, cause);
    this.code = code;
  }

  public String code() {
    return code;
  }
}
