package io.kplex.spark.spec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * kplex's settings as data: {@code options.json}, one file for the JVM plugin and the Python
 * package (it lives in {@code python/kplex/} and the build copies it into the jar, as it does
 * the error conditions), in its order: table properties first.
 */
public final class OptionSpecs {
  static final String RESOURCE = "/io/kplex/spark/spec/options.json";

  /** By lower-cased name, in the file's order. */
  private static final Map<String, OptionSpec> ALL = load();

  private OptionSpecs() {}

  private static Map<String, OptionSpec> load() {
    try (InputStream in = OptionSpecs.class.getResourceAsStream(RESOURCE)) {
      if (in == null) throw new IllegalStateException("kplex: " + RESOURCE + " is missing from the jar");
      Map<String, OptionSpec> out = new LinkedHashMap<>();
      for (JsonNode o : new ObjectMapper().readTree(in).path("options")) {
        OptionSpec spec = read(o);
        out.put(spec.name().toLowerCase(Locale.ROOT), spec);
      }
      return Collections.unmodifiableMap(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static OptionSpec read(JsonNode o) {
    List<String> choices = new ArrayList<>();
    o.path("choices").forEach(c -> choices.add(c.asText()));
    Set<OptionSpec.Scope> setAs = EnumSet.noneOf(OptionSpec.Scope.class);
    o.path("set_as").forEach(s -> setAs.add(OptionSpec.Scope.valueOf(s.asText().toUpperCase(Locale.ROOT))));
    return new OptionSpec(o.path("name").asText(),
        OptionSpec.Type.valueOf(o.path("type").asText().toUpperCase(Locale.ROOT)),
        number(o, "min"), number(o, "max"), number(o, "also"), List.copyOf(choices), text(o, "default"),
        o.path("required").asBoolean(false), Collections.unmodifiableSet(setAs), text(o, "expected"),
        text(o, "session_key"), text(o, "read_time_default"), specialValues(o));
  }

  private static Map<String, String> specialValues(JsonNode o) {
    Map<String, String> out = new java.util.LinkedHashMap<>();
    o.path("special_values").fields().forEachRemaining(e -> out.put(e.getKey(), e.getValue().asText()));
    return Collections.unmodifiableMap(out);
  }

  private static Long number(JsonNode o, String field) {
    return o.hasNonNull(field) ? o.get(field).asLong() : null;
  }

  private static String text(JsonNode o, String field) {
    return o.hasNonNull(field) ? o.get(field).asText() : null;
  }

  /** Every setting, in the file's order. */
  public static List<OptionSpec> all() {
    return List.copyOf(ALL.values());
  }

  /** The setting named {@code name} (any case), or null if kplex has none. */
  public static OptionSpec find(String name) {
    return ALL.get(name.toLowerCase(Locale.ROOT));
  }

  /** The setting named {@code name}; a name the spec lacks is a bug of the caller. */
  public static OptionSpec of(String name) {
    OptionSpec spec = find(name);
    if (spec == null) throw new IllegalArgumentException("kplex: no setting " + name + " in options.json");
    return spec;
  }

  /** The names of the settings that may be given as {@code scope}, in the file's order. */
  public static List<String> names(OptionSpec.Scope scope) {
    List<String> out = new ArrayList<>();
    for (OptionSpec spec : ALL.values()) {
      if (spec.settableAs(scope)) out.add(spec.name());
    }
    return List.copyOf(out);
  }
}
