package io.kplex.spark.errors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * kplex's error conditions as data: {@code error_conditions.json}, one file for the JVM
 * plugin and the Python package (it lives in {@code python/kplex/} and the build copies it
 * into the jar), in the shape of Spark's {@code error-conditions.json}: per condition
 * ({@code KPLEX_<CODE>}) its SQLSTATE, the {@code kplex.errors} class Python raises it as,
 * and what it means. Every {@link KplexException} names one of them.
 */
public final class ErrorConditions {
  static final String RESOURCE = "/io/kplex/spark/errors/error_conditions.json";

  /** A condition: its SQLSTATE and the Python class it becomes. */
  public record Condition(String name, String sqlState, String python, String description) {}

  private static final Map<String, Condition> ALL = load();

  private ErrorConditions() {}

  private static Map<String, Condition> load() {
    try (InputStream in = ErrorConditions.class.getResourceAsStream(RESOURCE)) {
      if (in == null) throw new IllegalStateException("kplex: " + RESOURCE + " is missing from the jar");
      JsonNode root = new ObjectMapper().readTree(in);
      Map<String, Condition> out = new TreeMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        if (e.getKey().startsWith("_")) continue;
        JsonNode c = e.getValue();
        out.put(e.getKey(), new Condition(e.getKey(), c.path("sqlState").asText(), c.path("python").asText(),
            c.path("description").asText()));
      }
      return Collections.unmodifiableMap(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Every condition, by name ({@code KPLEX_<CODE>}). */
  public static Map<String, Condition> all() {
    return ALL;
  }

  /** The condition of {@code code} (without the {@code KPLEX_} prefix), or null if none is declared. */
  public static Condition of(String code) {
    return ALL.get("KPLEX_" + code);
  }
}
