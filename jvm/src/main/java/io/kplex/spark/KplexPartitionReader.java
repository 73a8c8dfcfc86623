package io.kplex.spark;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.util.GenericArrayData;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Reads one offset range with a plain consumer (read_committed). Offsets may have gaps
 * (transaction markers, aborted records): the range ends when the consumer's position
 * reaches its end, not after a number of records.
 */
final class KplexPartitionReader implements PartitionReader<InternalRow> {
  private static final Duration POLL = Duration.ofMillis(500);
  private static final long STALL_MS = 120_000;

  private final OffsetRange range;
  private final boolean derived;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final TopicPartition tp;
  private final UTF8String topic;
  private Iterator<ConsumerRecord<byte[], byte[]>> batch = java.util.Collections.emptyIterator();
  private InternalRow current;
  private long lastProgress = System.currentTimeMillis();

  KplexPartitionReader(KafkaConf kafka, OffsetRange range, boolean derived) {
    this.range = range;
    this.derived = derived;
    this.tp = new TopicPartition(range.topic, range.partition);
    this.topic = UTF8String.fromString(range.topic);
    this.consumer = new KafkaConsumer<>(kafka.consumer());
    consumer.assign(List.of(tp));
    consumer.seek(tp, range.from);
  }

  @Override
  public boolean next() {
    while (true) {
      while (batch.hasNext()) {
        ConsumerRecord<byte[], byte[]> r = batch.next();
        if (r.offset() >= range.until) {
          return false;
        }
        current = toRow(r);
        return true;
      }
      if (consumer.position(tp) >= range.until) {
        return false;
      }
      List<ConsumerRecord<byte[], byte[]>> records = consumer.poll(POLL).records(tp);
      if (!records.isEmpty()) {
        lastProgress = System.currentTimeMillis();
      } else if (System.currentTimeMillis() - lastProgress > STALL_MS) {
        throw new KplexException("READ_STALLED", "no progress reading " + range + " at offset "
            + consumer.position(tp) + " for " + STALL_MS / 1000 + " s.");
      }
      batch = records.iterator();
    }
  }

  private InternalRow toRow(ConsumerRecord<byte[], byte[]> r) {
    Header[] hs = r.headers().toArray();
    Object[] headers = new Object[hs.length];
    Integer vp = null;
    Long order = null;
    for (int i = 0; i < hs.length; i++) {
      headers[i] = new GenericInternalRow(new Object[] {UTF8String.fromString(hs[i].key()), hs[i].value()});
      if (derived && hs[i].value() != null) {
        if (hs[i].key().equals(KplexDataWriter.VP_HEADER)) {
          vp = Integer.valueOf(new String(hs[i].value(), StandardCharsets.US_ASCII));
        } else if (hs[i].key().equals(KplexDataWriter.ORDER_HEADER)) {
          order = Long.valueOf(new String(hs[i].value(), StandardCharsets.US_ASCII));
        }
      }
    }
    Object[] row = new Object[derived ? 9 : 7];
    row[0] = r.key();
    row[1] = r.value();
    row[2] = topic;
    row[3] = r.partition();
    row[4] = r.offset();
    row[5] = r.timestamp() < 0 ? null : r.timestamp() * 1000L;
    row[6] = new GenericArrayData(headers);
    if (derived) {
      row[7] = vp;
      row[8] = order;
    }
    return new GenericInternalRow(row);
  }

  @Override
  public InternalRow get() {
    return current;
  }

  @Override
  public void close() {
    consumer.close(Duration.ofSeconds(5));
  }
}
