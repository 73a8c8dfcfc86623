package io.kplex.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.HexFormat;

/**
 * The shared test vectors under {@code tests/vectors/}: one JSON file per rule that the
 * Java plugin and the Python package both implement; pytest reads the same files.
 */
public final class Vectors {
  private Vectors() {}

  private static final ObjectMapper JSON = new ObjectMapper();

  public static Path dir() {
    String configured = System.getProperty("kplex.vectors");
    return configured != null ? Paths.get(configured) : Paths.get("tests", "vectors");
  }

  public static JsonNode load(String file) {
    try {
      return JSON.readTree(Files.readAllBytes(dir().resolve(file)));
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read test vectors " + dir().resolve(file), e);
    }
  }

  /** The bytes of a case's {@code <prefix>_utf8}, {@code <prefix>_hex} or {@code <prefix>_latin1} field; null for JSON null. */
  public static byte[] bytes(JsonNode node, String prefix) {
    if (node.has(prefix + "_utf8")) return node.get(prefix + "_utf8").asText().getBytes(StandardCharsets.UTF_8);
    if (node.has(prefix + "_hex")) return HexFormat.of().parseHex(node.get(prefix + "_hex").asText());
    JsonNode latin1 = node.get(prefix + "_latin1");
    if (latin1 == null) throw new IllegalArgumentException("no " + prefix + " in " + node);
    return latin1.isNull() ? null : latin1.asText().getBytes(StandardCharsets.ISO_8859_1);
  }

  public static String describe(JsonNode node) {
    return node.toString();
  }
}
