package io.kplex.spark.write;

import static io.kplex.spark.write.WriterFixture.conf;
import static io.kplex.spark.write.WriterFixture.row;
import static io.kplex.spark.write.WriterFixture.text;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.Test;

/**
 * How a written row becomes a record's parts ({@link RowCodec}): the key's canonical bytes,
 * the order value and the record timestamp it gives, the value's bytes, the row's own
 * headers, and which rows the NULL policies decide.
 */
public class RowCodecTest {
  private static RowCodec codec(StructType schema, String... options) {
    return RowCodec.of(WriteSchema.resolve(schema), conf(options));
  }

  private static final StructType TYPED = new StructType()
      .add("key", DataTypes.IntegerType)
      .add("order_value", DataTypes.TimestampType)
      .add("value", DataTypes.BinaryType);

  @Test
  public void aStringKeyAndValueAreTheirUtf8Bytes() {
    RowCodec c = WriterFixture.codec(conf());
    InternalRow r = row("clé", 3L, "välue");
    assertEquals("clé", text(c.key(r)));
    assertEquals("välue", text(c.value(r)));
    assertEquals(3L, c.order(r));
  }

  @Test
  public void anIntKeyIsFourBytesBigEndianAndABinaryValueItself() {
    RowCodec c = codec(TYPED);
    byte[] value = {0, (byte) 0xff, 7};
    InternalRow r = new GenericInternalRow(new Object[] {258, 1_500_000L, value});
    assertArrayEquals(new byte[] {0, 0, 1, 2}, c.key(r));
    assertArrayEquals(value, c.value(r));
  }

  @Test
  public void aTimeOrderIsEpochMillisecondsAndTheRecordsTimestamp() {
    RowCodec c = codec(TYPED);
    InternalRow r = new GenericInternalRow(new Object[] {1, 1_500_999L, new byte[0]});
    assertEquals(1_500L, c.order(r));
    assertEquals(Long.valueOf(1_500L), c.timestamp(c.order(r)));
    assertNull("before 1970: the producer's clock", c.timestamp(-1L));
  }

  @Test
  public void anIntegralOrderGivesNoTimestamp() {
    RowCodec c = WriterFixture.codec(conf());
    assertNull(c.timestamp(c.order(row("a", 1_700_000_000_000L, "v"))));
  }

  @Test
  public void nullsAreNullBytesAndAnOrderThatSortsFirst() {
    RowCodec c = WriterFixture.codec(conf());
    InternalRow r = row(null, null, null);
    assertNull(c.key(r));
    assertNull(c.value(r));
    assertEquals(Long.MIN_VALUE, c.order(r));
  }

  @Test
  public void theRowsOwnHeadersLeaveOutKplexsAndNamelessOnes() {
    RowCodec c = WriterFixture.codec(conf());
    List<String> seen = new ArrayList<>();
    for (Header h : c.userHeaders(row("a", 1L, "v", "a", "1", "kplex.order", "2", null, "3", "b", null), 2)) {
      seen.add(h.key() + "=" + text(h.value()));
    }
    assertEquals(List.of("a=1", "b=null"), seen);
    assertNull("no headers", c.userHeaders(row("a", 1L, "v"), 2));
    assertNull("no headers column", codec(TYPED).userHeaders(new GenericInternalRow(new Object[] {1, 1L, null}), 2));
  }

  @Test
  public void theNullPoliciesDecideARowWithANullKeyOrARefusedNullOrder() {
    RowCodec first = WriterFixture.codec(conf("kplex.null_order", "first"));
    assertTrue(first.nullsDecide(row(null, 1L, "v")));
    assertFalse("ordered first, like any row", first.nullsDecide(row("a", null, "v")));
    assertFalse(first.nullsDecide(row("a", 1L, "v")));
    for (String policy : new String[] {"fail", "drop"}) {
      assertTrue(policy, WriterFixture.codec(conf("kplex.null_order", policy)).nullsDecide(row("a", null, "v")));
    }
  }
}
