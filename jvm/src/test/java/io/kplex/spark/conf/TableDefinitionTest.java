package io.kplex.spark.conf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kplex.spark.Vectors;
import io.kplex.spark.errors.KplexException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import org.junit.Test;

/** The stored table-definition record, against tests/vectors/table_definition.json. */
public class TableDefinitionTest {
  private static final JsonNode VECTORS = Vectors.load("table_definition.json");
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  public void createTableWritesTheVectorsRecord() throws Exception {
    for (JsonNode c : VECTORS.get("written")) {
      Map<String, String> props = new HashMap<>();
      c.get("properties").fields().forEachRemaining(e -> props.put(e.getKey(), e.getValue().asText()));
      ObjectNode written = (ObjectNode) JSON.readTree(TableDefinition.create(c.get("name").asText(), props).toJson());
      assertTrue(written.get("created_ms").asLong() > 0);
      written.remove("created_ms");
      assertEquals(c.get("name").asText(), c.get("record"), written);
    }
  }

  @Test
  public void aStoredRecordReadsBackAsTheVectorsTable() {
    for (JsonNode c : VECTORS.get("read")) {
      byte[] record = c.get("record").toString().getBytes(StandardCharsets.UTF_8);
      if (c.has("error")) {
        try {
          TableDefinition.fromJson(record);
          fail("accepted " + c);
        } catch (KplexException e) {
          assertEquals("DEFINITION_FORMAT", e.code());
          assertTrue(e.getMessage(), e.getMessage().contains(c.get("error").asText()));
        }
        continue;
      }
      TableDefinition def = TableDefinition.fromJson(record);
      JsonNode t = c.get("table");
      assertEquals(t.get("name").asText(), def.name());
      assertEquals(t.get("topic").asText(), def.topic());
      assertEquals(t.get("virtual_partitions").asInt(), def.virtualPartitions());
      assertEquals(t.get("physical_partitions").asInt(), def.physicalPartitions());
      assertEquals(t.get("source").isNull() ? null : t.get("source").asText(), def.source());
      assertEquals(!t.get("source").isNull(), def.isReadTime());
    }
  }

  @Test
  public void theReplicationFactorIsTheDeclaredDefaultUnlessSet() {
    Map<String, String> props = new HashMap<>(Map.of("kplex.virtual_partitions", "9", "kplex.physical_partitions", "3"));
    assertEquals(Short.parseShort(io.kplex.spark.spec.OptionSpecs.of("kplex.replication_factor").defaultValue()),
        TableDefinition.create("t", props).replicationFactor());
    props.put("kplex.replication_factor", "3");
    assertEquals(3, TableDefinition.create("t", props).replicationFactor());
  }
}
