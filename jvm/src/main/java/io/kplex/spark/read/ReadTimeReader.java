package io.kplex.spark.read;

import java.time.Duration;
import java.util.function.IntPredicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;

/**
 * What the two readers of a read-time table share: one consumer over the source, every
 * record derived ({@link ReadTimeRecords}) and judged on time or late against the
 * largest order value before it on its source partition ({@link EventTimeMerge}'s rule).
 * {@link SourcePartitionReader} returns one source partition's rows unordered,
 * {@link VirtualPartitionReader} one virtual partition's in event-time order.
 */
abstract class ReadTimeReader implements PartitionReader<InternalRow> {
  static final Duration POLL = Duration.ofMillis(500);

  final ReadConf readConf;
  final ReadTimeRecords records;
  final Consumer<byte[], byte[]> consumer;
  final ReadProgress progress;
  InternalRow current;

  ReadTimeReader(ReadConf conf) {
    this.readConf = conf;
    this.records = new ReadTimeRecords(conf);
    this.consumer = conf.clients.consumer(conf.kafka.consumer());
    this.progress = new ReadProgress(conf.clock);
  }

  /**
   * The derived row of {@code r}, read from source {@code i} of {@code lateness}, when it is
   * on time and its virtual partition is {@code wanted}; else null. An on-time record moves
   * its source's mark whether wanted or not; a late one of a wanted virtual partition meets
   * the late policy.
   */
  final GenericInternalRow onTime(ConsumerRecord<byte[], byte[]> r, EventTimeMerge<?> lateness, int i,
      IntPredicate wanted) {
    GenericInternalRow row = records.derive(r);
    if (row == null) return null;
    long order = ReadTimeRecords.order(row);
    boolean mine = wanted.test(ReadTimeRecords.vp(row));
    if (lateness.isLate(i, order)) {
      if (mine) records.late(r, row, lateness.high(i));
      return null;
    }
    lateness.accept(i, order);
    return mine ? row : null;
  }

  @Override
  public final InternalRow get() {
    return current;
  }

  @Override
  public final CustomTaskMetric[] currentMetricsValues() {
    return ReadMetrics.values(records.read, records.lateDropped, records.lateSent);
  }

  @Override
  public final void close() {
    // Nothing to commit: do not wait for the fetch still parked at the broker.
    consumer.close(Duration.ZERO);
    records.close();
  }
}
