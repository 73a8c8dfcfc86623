package io.kplex.spark.functions;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import io.kplex.spark.errors.KplexException;
import java.nio.charset.StandardCharsets;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

/** JSON pointers and kplex_json against tests/vectors/json_pointer.json. */
public class JsonPointerTest {
  private static final JsonNode VECTORS = Vectors.load("json_pointer.json");

  @Test
  public void malformedPointersAreRefusedNamingThemAndOthersParse() {
    for (JsonNode c : VECTORS.get("parse")) {
      String pointer = c.get("pointer").asText();
      try {
        JsonPointer p = JsonPointer.parse(pointer);
        if (c.path("error").asBoolean()) fail("accepted " + c);
        assertEquals(c.toString(), pointer, p.text);
        assertEquals(c.toString(), c.get("tokens").size(), p.size());
        for (int i = 0; i < p.size(); i++) assertEquals(c.toString(), c.get("tokens").get(i).asText(), p.token(i));
      } catch (KplexException e) {
        if (!c.path("error").asBoolean()) throw e;
        assertEquals("JSON_POINTER", e.code());
        assertTrue(e.getMessage(), e.getMessage().contains("'" + pointer + "'"));
      }
    }
  }

  @Test
  public void kplexJsonReturnsTheVectorsValue() {
    for (JsonNode c : VECTORS.get("extract")) {
      byte[] json = c.get("json").asText().getBytes(StandardCharsets.UTF_8);
      UTF8String value = KplexJson.extract(JsonPointer.parse(c.get("pointer").asText()), json, 0, json.length);
      JsonNode expected = c.get("value");
      assertEquals(c.toString(), expected.isNull() ? null : expected.asText(), value == null ? null : value.toString());
    }
  }
}
