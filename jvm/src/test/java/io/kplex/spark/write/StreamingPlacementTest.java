package io.kplex.spark.write;

import static org.junit.Assert.assertEquals;

import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.plans.physical.HashPartitioning;
import org.apache.spark.sql.types.DataTypes;
import org.junit.Test;
import scala.jdk.javaapi.CollectionConverters;

/**
 * A streaming write's task knows which virtual partitions are its own (so it merges in
 * only their held-back records) by the same formula Spark's hash partitioning uses for
 * the write's clustering: checked here against Spark's own HashPartitioning.
 */
public class StreamingPlacementTest {
  @Test
  public void theOwnerOfAVirtualPartitionIsTheTaskSparksHashPartitioningSendsItTo() {
    for (int tasks : new int[] {1, 2, 3, 4, 7, 200}) {
      for (int vp = 0; vp < 1000; vp++) {
        Expression value = Literal.create(vp, DataTypes.IntegerType);
        HashPartitioning spark = new HashPartitioning(
            CollectionConverters.asScala(java.util.List.of(value)).toSeq(), tasks);
        int expected = (Integer) spark.partitionIdExpression().eval(null);
        assertEquals("vp " + vp + " of " + tasks + " tasks", expected, StreamingDataWriter.owner(vp, tasks));
      }
    }
  }
}
