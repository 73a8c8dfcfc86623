package io.kplex.spark.wire;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import org.apache.kafka.common.utils.Utils;
import org.junit.Test;

/** G4 placement against Kafka's own murmur2 vectors and partitioner (tests/vectors/placement.json). */
public class PlacementTest {
  private static final JsonNode VECTORS = Vectors.load("placement.json");

  @Test
  public void murmur2OfEveryVectorIsKafkasOwn() {
    for (JsonNode c : VECTORS.get("murmur2")) {
      byte[] key = Vectors.bytes(c, "key");
      assertEquals(Vectors.describe(c), c.get("murmur2").asInt(), Utils.murmur2(key));
    }
  }

  @Test
  public void virtualAndPhysicalPartitionsFollowTheVectors() {
    for (JsonNode c : VECTORS.get("placement")) {
      byte[] key = Vectors.bytes(c, "key");
      int vp = Placement.virtualPartition(key, c.get("V").asInt());
      assertEquals(Vectors.describe(c), c.get("vp").asInt(), vp);
      assertEquals(Vectors.describe(c), c.get("physical").asInt(), Placement.physicalPartition(vp, c.get("P").asInt()));
    }
  }

  @Test
  public void whenPDividesVARecordSitsWhereKafkasPartitionerPutsIt() {
    int checked = 0;
    for (JsonNode c : VECTORS.get("placement")) {
      byte[] key = Vectors.bytes(c, "key");
      int v = c.get("V").asInt();
      int p = c.get("P").asInt();
      if (v % p != 0) continue;
      int kafka = Utils.toPositive(Utils.murmur2(key)) % p;
      assertEquals(Vectors.describe(c), kafka, Placement.physicalPartition(Placement.virtualPartition(key, v), p));
      checked++;
    }
    assertTrue("the vectors have cases where P divides V", checked > 0);
  }
}
