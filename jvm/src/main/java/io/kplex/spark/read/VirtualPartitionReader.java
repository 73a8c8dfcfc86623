package io.kplex.spark.read;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;

/**
 * One virtual partition of a read-time table, for a session without kplex's extension
 * (so without {@link ReadTimePlan}'s read-once plan): reads every partition of the
 * source (its planned offset ranges) with one consumer, derives each record
 * ({@link ReadTimeRecords}), and releases this partition's records in event-time order
 * through an {@link EventTimeMerge}. A late record of this virtual partition meets
 * {@code kplex.late_policy}.
 *
 * <p>Memory: only this partition's records that wait for the watermark are held. When
 * more than {@link #MAX_BUFFERED} wait, the source partitions that do not hold the
 * watermark back are paused until it moves.
 */
final class VirtualPartitionReader extends ReadTimeReader {
  static final int MAX_BUFFERED = 100_000;

  private final ReadConf conf;
  private final int vp;
  private final OffsetRange[] ranges;
  private final TopicPartition[] tps;
  private final Map<TopicPartition, Integer> index = new HashMap<>();
  private final EventTimeMerge<InternalRow> merge;
  private boolean paused;

  VirtualPartitionReader(ReadConf conf, VirtualRange range) {
    super(conf);
    this.conf = conf;
    this.vp = range.vp;
    this.ranges = range.sources;
    this.tps = new TopicPartition[ranges.length];
    this.merge = new EventTimeMerge<>(ranges.length, conf.maxDelayMs);
    List<TopicPartition> assigned = new ArrayList<>();
    for (int i = 0; i < ranges.length; i++) {
      tps[i] = new TopicPartition(ranges[i].topic, ranges[i].partition);
      index.put(tps[i], i);
      if (ranges[i].from >= ranges[i].until) {
        merge.end(i);
      } else {
        assigned.add(tps[i]);
      }
    }
    consumer.assign(assigned);
    for (int i = 0; i < ranges.length; i++) {
      if (!merge.ended(i)) consumer.seek(tps[i], ranges[i].from);
    }
  }

  @Override
  public boolean next() {
    while (true) {
      EventTimeMerge.Entry<InternalRow> e = merge.poll();
      if (e != null) {
        current = e.payload;
        return true;
      }
      if (merge.allEnded()) {
        records.finish();
        return false;
      }
      fetch();
    }
  }

  private void fetch() {
    flowControl();
    ConsumerRecords<byte[], byte[]> polled = DeletedOffsets.poll(consumer, POLL, conf, p -> ranges[index.get(p)].until);
    for (TopicPartition tp : polled.partitions()) {
      int i = index.get(tp);
      for (ConsumerRecord<byte[], byte[]> r : polled.records(tp)) {
        if (merge.ended(i) || r.offset() >= ranges[i].until) {
          break;
        }
        handle(i, r);
      }
    }
    for (int i = 0; i < ranges.length; i++) {
      if (!merge.ended(i) && consumer.position(tps[i]) >= ranges[i].until) {
        merge.end(i);
        consumer.pause(List.of(tps[i]));
      }
    }
    progress.polled(!polled.isEmpty(), () -> conf.topic + " for vp " + vp);
  }

  private void handle(int i, ConsumerRecord<byte[], byte[]> r) {
    GenericInternalRow row = onTime(r, merge, i, v -> v == vp);
    if (row != null) {
      // Ranges are sorted by topic and partition, so i breaks ties as (topic, partition) does.
      merge.add(new EventTimeMerge.Entry<>(ReadTimeRecords.order(row), row.getBinary(0), r.value(), i, r.offset(), row));
    }
  }

  /** Bounds the buffer: with too much waiting, read only the partitions that hold the watermark. */
  private void flowControl() {
    boolean full = merge.buffered() > MAX_BUFFERED;
    if (!full && !paused) return;
    List<TopicPartition> pause = new ArrayList<>();
    List<TopicPartition> resume = new ArrayList<>();
    for (int i = 0; i < ranges.length; i++) {
      if (merge.ended(i)) continue;
      (full && !merge.holdsWatermark(i) ? pause : resume).add(tps[i]);
    }
    consumer.pause(pause);
    consumer.resume(resume);
    paused = !pause.isEmpty();
  }
}
