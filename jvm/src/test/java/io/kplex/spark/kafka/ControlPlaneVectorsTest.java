package io.kplex.spark.kafka;

import static org.junit.Assert.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import java.nio.charset.StandardCharsets;
import org.junit.Test;

/**
 * Where a table's control-plane records live ({@link CompactedTopic#ofScope}), pinned by
 * tests/vectors/control_plane.json, which kplex.status.control_plane_partition follows too.
 */
public class ControlPlaneVectorsTest {
  private static final JsonNode VECTORS = Vectors.load("control_plane.json");

  @Test
  public void aScopeLandsInTheVectorsPartition() {
    for (JsonNode c : VECTORS.get("cases")) {
      String scope = new String(Vectors.bytes(c, "scope"), StandardCharsets.UTF_8);
      assertEquals(Vectors.describe(c), c.get("partition").asInt(), CompactedTopic.ofScope(scope, c.get("partitions").asInt()));
    }
  }

  @Test
  public void aNewControlPlaneHasTheVectorsPartitionCount() {
    assertEquals(VECTORS.get("new_log_partitions").asInt(), CompactedTopic.SCOPED_PARTITIONS);
  }
}
