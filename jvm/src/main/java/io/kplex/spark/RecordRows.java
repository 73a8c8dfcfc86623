package io.kplex.spark;

import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.unsafe.types.UTF8String;

/** Kafka records as rows of {@link KplexTable#TOPIC_SCHEMA} and {@link KplexTable#DERIVED_SCHEMA}. */
final class RecordRows {
  private RecordRows() {}

  static final int TOPIC_COLUMNS = 7;
  static final int DERIVED_COLUMNS = 9;

  /** A topic row; with {@code columns} = 9 two more (NULL) slots for vpartition and order_value. */
  static GenericInternalRow row(ConsumerRecord<byte[], byte[]> r, UTF8String topic, int columns) {
    Header[] hs = r.headers().toArray();
    Object[] headers = new Object[hs.length];
    for (int i = 0; i < hs.length; i++) {
      headers[i] = new GenericInternalRow(new Object[] {UTF8String.fromString(hs[i].key()), hs[i].value()});
    }
    Object[] row = new Object[columns];
    row[0] = r.key();
    row[1] = r.value();
    row[2] = topic;
    row[3] = r.partition();
    row[4] = r.offset();
    row[5] = r.timestamp() < 0 ? null : r.timestamp() * 1000L;
    row[6] = new GenericArrayData(headers);
    return new GenericInternalRow(row);
  }

  /** The virtual partition of a kplex-written record (header kplex.vp), or null. */
  static Integer vpHeader(ConsumerRecord<byte[], byte[]> r) {
    Header h = r.headers().lastHeader(KplexDataWriter.VP_HEADER);
    return h == null || h.value() == null ? null : parseInt(h.value());
  }

  /** The order value of a kplex-written record (header kplex.order), or null. */
  static Long orderHeader(ConsumerRecord<byte[], byte[]> r) {
    Header h = r.headers().lastHeader(KplexDataWriter.ORDER_HEADER);
    if (h == null || h.value() == null) return null;
    try {
      return Long.valueOf(new String(h.value(), StandardCharsets.US_ASCII));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  private static Integer parseInt(byte[] ascii) {
    try {
      return Integer.valueOf(new String(ascii, StandardCharsets.US_ASCII));
    } catch (NumberFormatException e) {
      return null;
    }
  }

  /** A record of a kplex-written topic: its columns plus vpartition and order_value from its headers. */
  static InternalRow derived(ConsumerRecord<byte[], byte[]> r, UTF8String topic, Integer vp) {
    GenericInternalRow row = row(r, topic, DERIVED_COLUMNS);
    row.update(7, vp);
    row.update(8, orderHeader(r));
    return row;
  }
}
