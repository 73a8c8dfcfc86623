package io.kplex.spark.read;

import io.kplex.spark.kafka.ConsumerPool;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.wire.KplexHeaders;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Reads one offset range of one physical partition with a plain consumer
 * (read_committed): a plain topic's partition, or, with {@code vp >= 0}, the records of
 * one virtual partition of a kplex-written topic (header {@code kplex.vp}), which sit in
 * order on their physical partition (G2). Offsets may have gaps (transaction markers,
 * aborted records): the range ends when the consumer's position reaches its end, not
 * after a number of records.
 */
final class KplexPartitionReader implements PartitionReader<InternalRow> {
  private static final Duration POLL = Duration.ofMillis(500);

  private final ReadConf conf;
  private final KafkaConf kafka;
  private final io.kplex.spark.kafka.KafkaClients clients;
  private final OffsetRange range;
  private final int vp;
  private final Consumer<byte[], byte[]> consumer;
  private final TopicPartition tp;
  private final UTF8String topic;
  private final int[] columns;
  private Iterator<ConsumerRecord<byte[], byte[]>> batch = java.util.Collections.emptyIterator();
  private InternalRow current;
  private final ReadProgress progress;
  private long read;
  /** The whole range was read: the consumer may serve the next task ({@link ConsumerPool}). */
  private boolean finished;

  /**
   * {@code vp} = -1: every record, as a topic row of {@code columns}; {@link VirtualRange#ALL}:
   * every kplex-written record, as derived rows; otherwise that virtual partition's.
   */
  KplexPartitionReader(ReadConf conf, OffsetRange range, int vp, int[] columns) {
    this.conf = conf;
    this.kafka = conf.kafka;
    this.clients = conf.clients;
    this.progress = new ReadProgress(conf.clock);
    this.range = range;
    this.columns = columns;
    this.vp = vp;
    this.tp = new TopicPartition(range.topic, range.partition);
    this.topic = UTF8String.fromString(range.topic);
    this.consumer = ConsumerPool.borrow(clients, kafka, tp);
    consumer.seek(tp, range.from);
  }

  @Override
  public boolean next() {
    while (true) {
      while (batch.hasNext()) {
        ConsumerRecord<byte[], byte[]> r = batch.next();
        if (r.offset() >= range.until) {
          finished = true;
          return false;
        }
        if (r.offset() < range.from) continue;  // never expected: the consumer starts at its position
        read++;
        if (vp == -1) {
          current = RecordRows.row(r, topic, columns);
          return true;
        }
        Integer recordVp = KplexHeaders.vp(r.headers());
        if (recordVp != null && (recordVp == vp || vp == VirtualRange.ALL)) {
          current = RecordRows.derived(r, topic, recordVp);
          return true;
        }
      }
      if (range.from >= range.until || consumer.position(tp) >= range.until) {
        finished = true;
        return false;
      }
      List<ConsumerRecord<byte[], byte[]>> records = DeletedOffsets.poll(consumer, POLL, conf, p -> range.until).records(tp);
      progress.polled(!records.isEmpty(), () -> range + " at offset " + consumer.position(tp));
      batch = records.iterator();
    }
  }

  @Override
  public InternalRow get() {
    return current;
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    return ReadMetrics.values(read, 0, 0);
  }

  /** The records this reader returned. */
  long read() {
    return read;
  }

  /** Closed once: a second close must not give the consumer back to the pool a second time. */
  private boolean closed;

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    if (finished && !Thread.currentThread().isInterrupted()) {
      ConsumerPool.giveBack(clients, kafka, tp, consumer);
    } else {
      // Failed or stopped half way: nothing to commit, do not wait for a parked fetch.
      consumer.close(Duration.ZERO);
    }
  }
}
