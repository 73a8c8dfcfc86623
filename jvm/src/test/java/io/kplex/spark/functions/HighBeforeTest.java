package io.kplex.spark.functions;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.junit.Test;

/**
 * {@code kplex_high_before}: per source partition, the largest order value before each row
 * in the task's range, read in offset order; state that does not belong to the range (an
 * offset at or before one already seen on the partition) fails instead of being used.
 */
public class HighBeforeTest {
  private static Long high(HighBefore f, Long order, int partition, long offset) {
    return f.produceResult(new GenericInternalRow(new Object[] {order, partition, offset}));
  }

  @Test
  public void eachPartitionHasItsOwnRunningHighOverItsOffsets() {
    HighBefore f = new HighBefore(DataTypes.LongType);
    assertNull(high(f, 1_000L, 0, 0));
    assertNull("partition 1 has seen nothing yet", high(f, 100L, 1, 0));
    assertEquals(Long.valueOf(1_000L), high(f, 500L, 0, 1));
    assertEquals(Long.valueOf(100L), high(f, 200L, 1, 1));
    assertEquals(Long.valueOf(1_000L), high(f, 2_000L, 0, 5));
    assertEquals(Long.valueOf(2_000L), high(f, null, 0, 6));
    assertEquals("a NULL order value moves nothing", Long.valueOf(2_000L), high(f, 3_000L, 0, 7));
  }

  @Test
  public void anOffsetAtOrBeforeOneAlreadySeenOnItsPartitionFailsNamingBoth() {
    HighBefore f = new HighBefore(DataTypes.LongType);
    high(f, 108_100L, 1, 1081);
    high(f, 10L, 0, 0);
    for (long offset : new long[] {0, 1081}) {
      KplexException e = assertThrows(KplexException.class, () -> high(f, 19_900L, 1, offset));
      assertEquals("SOURCE_RANGE", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("offset " + offset + " of source partition 1 after offset 1081"));
    }
  }

  @Test
  public void aFreshCopyStartsWithNoState() throws Exception {
    HighBefore f = new HighBefore(DataTypes.LongType);
    high(f, 108_100L, 1, 1081);
    java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
    try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(bytes)) {
      out.writeObject(f);
    }
    HighBefore copy;
    try (java.io.ObjectInputStream in = new java.io.ObjectInputStream(
        new java.io.ByteArrayInputStream(bytes.toByteArray()))) {
      copy = (HighBefore) in.readObject();
    }
    assertNull("a task's copy does not carry the state of the one it was copied from", high(copy, 0L, 1, 0));
  }
}
