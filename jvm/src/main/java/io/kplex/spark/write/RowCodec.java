package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.KplexHeaders;
import io.kplex.spark.wire.NullPolicy;
import io.kplex.spark.wire.OrderValues;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.types.BinaryType;

/**
 * How a written row becomes a Kafka record's parts, decided once per write from its columns
 * ({@link WriteSchema}) and settings: the canonical key bytes, the order value, the value
 * bytes, the row's own headers, and what the NULL policies ({@link NullPolicy}) make of it.
 * The batch writer ({@link KplexDataWriter}) and the streaming one ({@link StreamingDataWriter})
 * both read rows through it; shipped to the executors inside the writer factories.
 */
final class RowCodec implements Serializable {
  private static final long serialVersionUID = 1L;

  private final int keyColumn;
  private final int orderColumn;
  private final int valueColumn;
  /** -1: no headers column. */
  private final int headersColumn;
  private final KeyBytes.Encoder key;
  private final OrderValues.Reader order;
  private final boolean timeOrder;
  private final boolean binaryValue;
  private final NullPolicy nulls;
  /**
   * A batch write from a kplex table: the columns of each row's source partition and offset,
   * and the topic ({@link WriteSchema#readsKnown}); -1 and null otherwise (a stream's gate
   * reads its positions itself).
   */
  private final int sourcePartitionColumn;
  private final int sourceOffsetColumn;
  final String sourceTopic;

  private RowCodec(WriteSchema schema, NullPolicy nulls) {
    this.keyColumn = schema.key;
    this.orderColumn = schema.order;
    this.valueColumn = schema.value;
    this.headersColumn = schema.headers;
    this.key = KeyBytes.encoderFor(schema.type(schema.key));
    this.order = OrderValues.readerFor(schema.type(schema.order));
    this.timeOrder = OrderValues.isTime(schema.type(schema.order));
    this.binaryValue = schema.type(schema.value) instanceof BinaryType;
    this.nulls = nulls;
    boolean reads = schema.readsKnown() && !schema.positioned();
    this.sourcePartitionColumn = reads ? schema.sourcePartition : -1;
    this.sourceOffsetColumn = reads ? schema.sourceOffset : -1;
    this.sourceTopic = reads ? schema.sourceTopic : null;
  }

  /**
   * Whether another writer read the row's source record and it was theirs to write, the row
   * being of order value {@code order} for virtual partition {@code vp} (false when this write's
   * rows carry no position).
   */
  boolean readIn(InternalRow row, io.kplex.spark.txn.ReadByOthers read, int vp, long order) {
    if (sourceOffsetColumn < 0 || row.isNullAt(sourcePartitionColumn) || row.isNullAt(sourceOffsetColumn)) return false;
    return read.wrote(row.getInt(sourcePartitionColumn), row.getLong(sourceOffsetColumn), vp, order);
  }

  /** The row's source partition, or -1 when this write's rows carry no position. */
  int sourcePartition(InternalRow row) {
    return sourcePartitionColumn < 0 || row.isNullAt(sourcePartitionColumn) ? -1 : row.getInt(sourcePartitionColumn);
  }

  /** The row's source offset, or -1 when this write's rows carry no position. */
  long sourceOffset(InternalRow row) {
    return sourceOffsetColumn < 0 || row.isNullAt(sourceOffsetColumn) ? -1 : row.getLong(sourceOffsetColumn);
  }

  /** Adds the row's source position to {@code reads} (nothing when this write's rows carry none). */
  void read(InternalRow row, SourceReads reads) {
    if (sourceOffsetColumn < 0 || row.isNullAt(sourcePartitionColumn) || row.isNullAt(sourceOffsetColumn)) return;
    reads.add(row.getInt(sourcePartitionColumn), row.getLong(sourceOffsetColumn));
  }

  /** The codec of a write: its columns, and its NULL policies ({@code kplex.null_key}, {@code kplex.null_order}). */
  static RowCodec of(WriteSchema schema, WriteConf conf) {
    return new RowCodec(schema,
        NullPolicy.of(conf.nullKey.wire(), conf.nullOrder.wire(), schema.name(schema.key), schema.name(schema.order)));
  }

  /** The row's canonical key bytes; null for a NULL key. */
  byte[] key(InternalRow row) {
    return row.isNullAt(keyColumn) ? null : key.encode(row, keyColumn);
  }

  /** The row's order value; {@link Long#MIN_VALUE} for NULL (it sorts first). */
  long order(InternalRow row) {
    return row.isNullAt(orderColumn) ? Long.MIN_VALUE : order.read(row, orderColumn);
  }

  /**
   * The record timestamp of an order value: itself if the order is a time (epoch
   * milliseconds), else null (the producer's clock).
   */
  Long timestamp(long orderValue) {
    return timeOrder && orderValue >= 0 ? orderValue : null;
  }

  /** The row's value bytes: BINARY as is, STRING as UTF-8; null for NULL. */
  byte[] value(InternalRow row) {
    if (row.isNullAt(valueColumn)) return null;
    return binaryValue ? row.getBinary(valueColumn) : row.getUTF8String(valueColumn).getBytes();
  }

  /**
   * Whether the row is written (true) or dropped (false) under the NULL policies; throws the
   * write's error for a NULL they refuse. {@code keyBytes} and {@code orderValue}: the row's
   * ({@link #key}, {@link #order}).
   */
  boolean admits(InternalRow row, byte[] keyBytes, long orderValue) {
    return nulls.admits(keyBytes, row.isNullAt(orderColumn), orderValue);
  }

  /** Whether the NULL policies, rather than its order, decide the row's fate. */
  boolean nullsDecide(InternalRow row) {
    return nulls.decides(row.isNullAt(keyColumn), row.isNullAt(orderColumn));
  }

  /**
   * The row's own headers, in a list with room for {@code more}; null if it has none (no
   * headers column, or NULL). Headers with a NULL name, and kplex's reserved ones, are left
   * out: kplex sets those.
   */
  List<Header> userHeaders(InternalRow row, int more) {
    if (headersColumn < 0 || row.isNullAt(headersColumn)) return null;
    ArrayData array = row.getArray(headersColumn);
    List<Header> headers = new ArrayList<>(array.numElements() + more);
    for (int i = 0; i < array.numElements(); i++) {
      InternalRow h = array.getStruct(i, 2);
      if (h.isNullAt(0)) continue;
      String name = h.getUTF8String(0).toString();
      if (KplexHeaders.isReserved(name)) continue;
      headers.add(new RecordHeader(name, h.isNullAt(1) ? null : h.getBinary(1)));
    }
    return headers;
  }

  @Override
  public String toString() {
    return nulls.toString();
  }
}
