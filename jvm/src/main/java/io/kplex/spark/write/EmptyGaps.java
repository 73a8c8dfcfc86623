package io.kplex.spark.write;

import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.txn.OffsetRanges;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.common.TopicPartition;

/**
 * Joins what the table's INSERTs read of a source topic across gaps that hold no record: an
 * INSERT's rows span from their smallest offset to their largest, so one that reads a
 * transactional source (a kplex table) up to its end stops before the last transaction's
 * commit marker, and the next INSERT, reading on from that end, starts after it. Left apart,
 * every such INSERT would add a range per partition to the mark the table's INSERTs share
 * ({@link io.kplex.spark.txn.EpochMark#INSERTS}), which every later INSERT reads and writes
 * again: months of hourly INSERTs would make it too large for the commit log. A gap is joined
 * only where a read_committed consumer finds no record in it (markers, aborted records), and
 * only for a source read read_committed from the target's own cluster (the analyzer rule
 * plan/SourcePositions names its bootstrap servers then), so nothing is counted
 * as read that such a reader could get; a gap it cannot check in time, or at all (records
 * deleted by retention, no READ on the source for the target's principal), stays apart.
 */
final class EmptyGaps {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(EmptyGaps.class);
  /** The widest gap checked: a few markers, or an aborted transaction's records. */
  static final long MAX_GAP = 1_000;
  /** How long the check may take in all; a gap not checked by then stays. */
  static final Duration BUDGET = Duration.ofSeconds(3);

  private EmptyGaps() {}

  /** {@code all} (what the INSERTs read, {@code fresh} included), the gaps beside {@code fresh} that hold no record joined. */
  static OffsetRanges join(KafkaConf kafka, KafkaClients clients, String topic, OffsetRanges all, OffsetRanges fresh) {
    List<OffsetRanges.Gap> gaps = all.gapsBeside(fresh, MAX_GAP);
    if (gaps.isEmpty()) return all;
    Map<String, Object> props = kafka.consumer();
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 64 << 10);  // the gap's first batch is enough
    OffsetRanges out = all;
    try (Consumer<byte[], byte[]> consumer = clients.consumer(props)) {
      for (OffsetRanges.Gap gap : empty(consumer, topic, gaps)) out = out.with(gap.partition(), gap.from(), gap.until());
    } catch (RuntimeException e) {
      LOG.debug("kplex: the gaps between the reads of {} were not checked: {}", topic, e.toString());
    }
    return out;
  }

  /** Of {@code gaps}, those {@code consumer} finds no record in, within {@link #BUDGET}. */
  static List<OffsetRanges.Gap> empty(Consumer<byte[], byte[]> consumer, String topic, List<OffsetRanges.Gap> gaps) {
    Map<TopicPartition, Deque<OffsetRanges.Gap>> left = new HashMap<>();
    for (OffsetRanges.Gap gap : gaps) {
      left.computeIfAbsent(new TopicPartition(topic, gap.partition()), tp -> new ArrayDeque<>()).add(gap);
    }
    consumer.assign(left.keySet());
    left.forEach((tp, queue) -> consumer.seek(tp, queue.peek().from()));
    List<OffsetRanges.Gap> out = new java.util.ArrayList<>();
    long deadline = System.nanoTime() + BUDGET.toNanos();
    while (!left.isEmpty() && System.nanoTime() < deadline) {
      ConsumerRecords<byte[], byte[]> got = consumer.poll(Duration.ofMillis(100));
      for (TopicPartition tp : List.copyOf(left.keySet())) {
        Deque<OffsetRanges.Gap> queue = left.get(tp);
        OffsetRanges.Gap gap = queue.peek();
        List<ConsumerRecord<byte[], byte[]>> records = got.records(tp);
        // The first record at or after the gap's start: in the gap, or past it (the gap is empty).
        long next = records.isEmpty() ? -1 : records.get(0).offset();
        boolean decided = next >= 0 || consumer.position(tp) >= gap.until();
        if (!decided) continue;
        if (next < 0 || next >= gap.until()) out.add(gap);
        queue.poll();
        if (queue.isEmpty()) {
          left.remove(tp);
          consumer.pause(List.of(tp));
        } else {
          consumer.seek(tp, queue.peek().from());
        }
      }
    }
    return out;
  }
}
