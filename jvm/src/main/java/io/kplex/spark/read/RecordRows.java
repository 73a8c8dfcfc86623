package io.kplex.spark.read;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.wire.KplexHeaders;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;

/** Kafka records as rows of {@link KplexTable#TOPIC_SCHEMA} and {@link KplexTable#DERIVED_SCHEMA}. */
final class RecordRows {
  private RecordRows() {}

  static final int TOPIC_COLUMNS = 7;
  static final int DERIVED_COLUMNS = 9;

  private static final int[] ALL_TOPIC_COLUMNS = {0, 1, 2, 3, 4, 5, 6};

  /** The indexes into TOPIC_SCHEMA of the fields of {@code required} (all when null). */
  static int[] columns(StructType required) {
    if (required == null) return ALL_TOPIC_COLUMNS;
    int[] out = new int[required.fields().length];
    for (int i = 0; i < out.length; i++) {
      out[i] = KplexTable.TOPIC_SCHEMA.fieldIndex(required.fields()[i].name());
    }
    return out;
  }

  /** The schema of rows of these TOPIC_SCHEMA columns. */
  static StructType schema(int[] columns) {
    StructType out = new StructType();
    for (int c : columns) out = out.add(KplexTable.TOPIC_SCHEMA.fields()[c]);
    return out;
  }

  /** A topic row of the given columns of TOPIC_SCHEMA. */
  static GenericInternalRow row(ConsumerRecord<byte[], byte[]> r, UTF8String topic, int[] columns) {
    Object[] row = new Object[columns.length];
    for (int i = 0; i < columns.length; i++) {
      row[i] = column(r, topic, columns[i]);
    }
    return new GenericInternalRow(row);
  }

  /** A topic row; with {@code columns} = 9 two more (NULL) slots for vpartition and order_value. */
  static GenericInternalRow row(ConsumerRecord<byte[], byte[]> r, UTF8String topic, int columns) {
    Object[] row = new Object[columns];
    for (int c = 0; c < TOPIC_COLUMNS; c++) {
      row[c] = column(r, topic, c);
    }
    return new GenericInternalRow(row);
  }

  private static Object column(ConsumerRecord<byte[], byte[]> r, UTF8String topic, int column) {
    switch (column) {
      case 0: return r.key();
      case 1: return r.value();
      case 2: return topic;
      case 3: return r.partition();
      case 4: return r.offset();
      case 5: return r.timestamp() < 0 ? null : r.timestamp() * 1000L;
      default:
        Header[] hs = r.headers().toArray();
        Object[] headers = new Object[hs.length];
        for (int i = 0; i < hs.length; i++) {
          headers[i] = new GenericInternalRow(new Object[] {UTF8String.fromString(hs[i].key()), hs[i].value()});
        }
        return new GenericArrayData(headers);
    }
  }

  /** A record of a kplex-written topic: its columns plus vpartition and order_value from its headers. */
  static InternalRow derived(ConsumerRecord<byte[], byte[]> r, UTF8String topic, Integer vp) {
    GenericInternalRow row = row(r, topic, DERIVED_COLUMNS);
    row.update(7, vp);
    row.update(8, KplexHeaders.order(r.headers()));
    return row;
  }
}
