package io.kplex.spark.read;

import java.util.Iterator;
import java.util.List;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;

/**
 * One partition of a read-time table's source, read once, whole, in offset order: every
 * record derived ({@link ReadTimeRecords}: key, order value, virtual partition), a late
 * one (more than {@code kplex.max_delay_ms} below the largest order value before it on
 * this partition: the rule of {@link EventTimeMerge}, which depends on this partition's
 * sequence alone) handed to the late policy, the others returned unordered when their
 * virtual partition is read. {@link ReadTimePlan}'s shuffle by virtual partition and sort
 * by (order, key, value, topic, partition, offset) then give every virtual partition the
 * sequence the merge would release.
 */
final class SourcePartitionReader extends ReadTimeReader {
  private final OffsetRange range;
  private final TopicPartition tp;
  private final Set<Integer> vps;
  /** Used for its lateness rule alone, over this one source. */
  private final EventTimeMerge<Void> lateness;
  private Iterator<ConsumerRecord<byte[], byte[]>> polled = java.util.Collections.emptyIterator();
  private long position;

  /** {@code vps}: the virtual partitions to return (null: all). */
  SourcePartitionReader(ReadConf conf, OffsetRange range, Set<Integer> vps) {
    super(conf);
    this.range = range;
    this.vps = vps;
    this.lateness = new EventTimeMerge<>(1, conf.maxDelayMs);
    this.tp = new TopicPartition(range.topic, range.partition);
    consumer.assign(List.of(tp));
    consumer.seek(tp, range.from);
    this.position = range.from;
  }

  @Override
  public boolean next() {
    while (position < range.until) {
      if (!polled.hasNext()) {
        // Transaction markers and aborted records take offsets: the position says how far we are.
        position = Math.max(position, consumer.position(tp));
        if (position >= range.until) break;
        poll();
        continue;
      }
      ConsumerRecord<byte[], byte[]> r = polled.next();
      position = r.offset() + 1;
      if (r.offset() >= range.until) break;
      GenericInternalRow row = onTime(r, lateness, 0, vp -> vps == null || vps.contains(vp));
      if (row != null) {
        current = row;
        return true;
      }
    }
    records.finish();
    return false;
  }

  private void poll() {
    ConsumerRecords<byte[], byte[]> batch = DeletedOffsets.poll(consumer, POLL, readConf, p -> range.until);
    polled = batch.iterator();
    progress.polled(!batch.isEmpty(), () -> range.topic + "-" + range.partition + " at offset " + position);
  }
}
