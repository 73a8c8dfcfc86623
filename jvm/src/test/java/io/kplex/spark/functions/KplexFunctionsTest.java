package io.kplex.spark.functions;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.wire.Placement;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.functions.BoundFunction;
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Test;

/**
 * The registry of kplex's SQL functions, and {@code kplex_write_vpartition}, the write's
 * distribution, which refuses the NULLs a write's policies refuse before any task writes:
 *
 * <pre>
 * null_key | null_order | key  | order || result
 * ---------+------------+------+-------++--------------------------------------
 * fail     | any        | NULL | any   || NULL_KEY, naming the key column
 * drop     | any        | NULL | any   || 0 (the writer drops it)
 * any      | fail       | 'a'  | NULL  || NULL_ORDER, naming the order column
 * any      | drop       | 'a'  | NULL  || the key's virtual partition (the writer drops it)
 * any      | first      | 'a'  | NULL  || the key's virtual partition
 * any      | any        | 'a'  | 7     || the key's virtual partition
 * </pre>
 */
public class KplexFunctionsTest {
  private static final int V = 16;

  private static final StructType WRITE_ARGS = new StructType()
      .add("_0", DataTypes.StringType).add("_1", DataTypes.IntegerType).add("_2", DataTypes.LongType)
      .add("_3", DataTypes.StringType).add("_4", DataTypes.StringType).add("_5", DataTypes.StringType)
      .add("_6", DataTypes.StringType);

  private static Object vpartition(String nullKey, String nullOrder, String key, Long order) {
    BoundFunction f = KplexFunctions.ALL.get(KplexFunctions.WRITE_VPARTITION).bind(WRITE_ARGS);
    InternalRow args = new GenericInternalRow(new Object[] {utf8(key), V, order, utf8(nullKey), utf8(nullOrder),
        utf8("user"), utf8("ts")});
    return ((ScalarFunction<?>) f).produceResult(args);
  }

  private static UTF8String utf8(String s) {
    return s == null ? null : UTF8String.fromString(s);
  }

  private static final int VP_OF_A = Placement.virtualPartition("a".getBytes(StandardCharsets.UTF_8), V);

  @Test
  public void theFunctionsAreListedOnceInOrderAndCannotBeChanged() {
    assertEquals(List.of("kplex_key", "kplex_order", "kplex_vpartition", "kplex_json", "kplex_confluent_payload",
        "kplex_confluent_schema_id", "kplex_write_vpartition", "kplex_write_order"),
        List.copyOf(KplexFunctions.ALL.keySet()));
    for (var e : KplexFunctions.ALL.entrySet()) assertEquals(e.getKey(), e.getValue().name());
    UnboundFunction key = KplexFunctions.ALL.get(KplexFunctions.KEY);
    assertThrows(UnsupportedOperationException.class, () -> KplexFunctions.ALL.put("kplex_other", key));
    assertThrows(UnsupportedOperationException.class, () -> KplexFunctions.ALL.remove(KplexFunctions.KEY));
  }

  @Test
  public void aNullKeyIsRefusedOrSentToVirtualPartitionZero() {
    for (String nullOrder : new String[] {"fail", "drop", "first"}) {
      KplexException e = assertThrows(KplexException.class, () -> vpartition("fail", nullOrder, null, 7L));
      assertEquals("NULL_KEY", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("`user`") && e.getMessage().contains("order value 7"));
      assertEquals(0, vpartition("drop", nullOrder, null, null));
    }
  }

  @Test
  public void aNullOrderIsRefusedOnlyUnderFail() {
    for (String nullKey : new String[] {"fail", "drop"}) {
      KplexException e = assertThrows(KplexException.class, () -> vpartition(nullKey, "fail", "a", null));
      assertEquals("NULL_ORDER", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("`ts`"));
      assertEquals(VP_OF_A, vpartition(nullKey, "drop", "a", null));
      assertEquals(VP_OF_A, vpartition(nullKey, "first", "a", null));
    }
  }

  @Test
  public void aRowWithKeyAndOrderGoesToItsKeysVirtualPartition() {
    assertEquals(VP_OF_A, vpartition("fail", "fail", "a", 7L));
    assertEquals(Placement.virtualPartition("b".getBytes(StandardCharsets.UTF_8), V),
        vpartition("fail", "fail", "b", 7L));
  }

  @Test
  public void theWritesFunctionTakesExactlyTheArgumentsAWritePlans() {
    UnboundFunction f = KplexFunctions.ALL.get(KplexFunctions.WRITE_VPARTITION);
    StructType two = new StructType().add("_0", DataTypes.StringType).add("_1", DataTypes.IntegerType);
    assertThrows(UnsupportedOperationException.class, () -> f.bind(two));
  }

  private static Object writeOrder(org.apache.spark.sql.types.DataType type, Object value) {
    BoundFunction f = KplexFunctions.ALL.get(KplexFunctions.WRITE_ORDER).bind(new StructType().add("o", type));
    return ((ScalarFunction<?>) f).produceResult(new GenericInternalRow(new Object[] {value}));
  }

  @Test
  public void theWritesOrderIsTheOrderValueANullIsTheSmallestAndOtherTypesAreRefused() {
    assertEquals(-1L, writeOrder(DataTypes.TimestampType, -1L));
    assertEquals(1_700_000_000_123L, writeOrder(DataTypes.TimestampType, 1_700_000_000_123_999L));
    assertEquals(Long.MIN_VALUE, writeOrder(DataTypes.LongType, null));
    assertEquals(Long.MIN_VALUE, writeOrder(DataTypes.LongType, Long.MIN_VALUE));
    assertEquals(-7L, writeOrder(DataTypes.IntegerType, -7));
    assertEquals(Long.MIN_VALUE, writeOrder(DataTypes.IntegerType, null));
    KplexException e = assertThrows(KplexException.class, () -> writeOrder(DataTypes.StringType, null));
    assertTrue(e.getMessage(), e.getMessage().contains("kplex_write_order(o)") && e.getMessage().contains("STRING"));
  }
}
