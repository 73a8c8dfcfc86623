package io.kplex.spark.errors;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * kplex's error conditions as data: {@code error_conditions.json}, one file for the JVM
 * plugin and the Python package (it lives in {@code python/kplex/} and the build copies it
 * into the jar), in the shape of Spark's {@code error-conditions.json}: per condition
 * ({@code KPLEX_<CODE>}) its SQLSTATE, the {@code kplex.errors} class Python raises it as,
 * what it means, its message template and, where one condition has several texts, its
 * sub-classes, each with its own template. Every {@link KplexException} names one of them.
 *
 * <p>Templates, as Spark's: a message is a list of lines, here joined with a space (a kplex
 * message is one line); {@code <name>} is the parameter {@code name} ({@code \<} a literal
 * {@code <}); a sub-class's message follows its condition's (which may be empty). Rendering
 * a template without one of its parameters fails: an error without its culprit is a bug.
 * {@code kplex.errors.render} follows the same rules.
 */
public final class ErrorConditions {
  static final String RESOURCE = "/io/kplex/spark/errors/error_conditions.json";

  /** {@code <name>}, or an escaped {@code \<}. */
  private static final Pattern PLACEHOLDER = Pattern.compile("\\\\<|<([a-z][a-z0-9_]*)>");

  /**
   * A condition: its SQLSTATE, the Python class it becomes, what it means, its message
   * template and its sub-classes' templates (by name, without the condition's).
   */
  public record Condition(String name, String sqlState, String python, String description, String message,
      Map<String, String> subClasses) {}

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
        Map<String, String> subs = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> s = c.path("subClass").fields(); s.hasNext(); ) {
          Map.Entry<String, JsonNode> sub = s.next();
          subs.put(sub.getKey(), lines(sub.getValue().path("message")));
        }
        out.put(e.getKey(), new Condition(e.getKey(), c.path("sqlState").asText(), c.path("python").asText(),
            c.path("description").asText(), lines(c.path("message")), Collections.unmodifiableMap(subs)));
      }
      return Collections.unmodifiableMap(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String lines(JsonNode message) {
    List<String> out = new ArrayList<>();
    message.forEach(line -> out.add(line.asText()));
    return String.join(" ", out);
  }

  /** Every condition, by name ({@code KPLEX_<CODE>}). */
  public static Map<String, Condition> all() {
    return ALL;
  }

  /** The condition of {@code code} (without the {@code KPLEX_} prefix), or null if none is declared. */
  public static Condition of(String code) {
    return ALL.get("KPLEX_" + code);
  }

  /**
   * The message template of {@code condition} ({@code CODE} or {@code CODE.SUB_CLASS}, without
   * {@code KPLEX_}), or null if it is not declared, or names no sub-class of a condition that
   * has them.
   */
  public static String template(String condition) {
    int dot = condition.indexOf('.');
    Condition c = of(dot < 0 ? condition : condition.substring(0, dot));
    if (c == null) return null;
    if (dot < 0) return c.subClasses().isEmpty() ? c.message() : null;
    String sub = c.subClasses().get(condition.substring(dot + 1));
    if (sub == null) return null;
    return c.message().isEmpty() ? sub : c.message() + " " + sub;
  }

  /** The names of the parameters {@code template} uses, in order of first use. */
  public static Set<String> parameters(String template) {
    Set<String> out = new LinkedHashSet<>();
    Matcher m = PLACEHOLDER.matcher(template);
    while (m.find()) {
      if (m.group(1) != null) out.add(m.group(1));
    }
    return out;
  }

  /**
   * The message of {@code condition} with {@code parameters} (a null value renders as
   * {@code null}). Fails on an undeclared condition, or a parameter the template uses and
   * {@code parameters} lacks.
   */
  public static String render(String condition, Map<String, String> parameters) {
    String template = template(condition);
    if (template == null) {
      throw new IllegalStateException("kplex: error condition KPLEX_" + condition + " is not declared in "
          + "error_conditions.json (with a sub-class where it has them)");
    }
    Matcher m = PLACEHOLDER.matcher(template);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String name = m.group(1);
      String value;
      if (name == null) {
        value = "<";
      } else if (parameters.containsKey(name)) {
        value = String.valueOf(parameters.get(name));
      } else {
        throw new IllegalStateException("kplex: error condition KPLEX_" + condition + " has no parameter <"
            + name + "> (given " + parameters.keySet() + ")");
      }
      m.appendReplacement(out, Matcher.quoteReplacement(value));
    }
    m.appendTail(out);
    return out.toString();
  }
}
