package io.kplex.spark.conf;

import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import io.kplex.spark.errors.KplexException;
import java.util.HashMap;
import java.util.Map;
import org.junit.Test;

/** Which TBLPROPERTIES the catalog accepts, against tests/vectors/table_properties.json. */
public class TablePropertiesTest {
  @Test
  public void theCatalogAcceptsExactlyTheValidCasesAndNamesTheCulprit() {
    for (JsonNode c : Vectors.load("table_properties.json").get("cases")) {
      Map<String, String> props = new HashMap<>();
      c.get("properties").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
      try {
        TableProperties.validate(props, "t");
        if (!c.get("valid").asBoolean()) fail("accepted " + c);
      } catch (KplexException e) {
        if (c.get("valid").asBoolean()) throw new AssertionError("refused " + c + ": " + e.getMessage(), e);
        assertTrue(c + " -> " + e.getMessage(), e.getMessage().contains(c.get("culprit").asText()));
      }
    }
  }
}
