package io.kplex.spark.write;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.txn.OffsetRanges;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * A gap between two reads of a source partition is joined only where a read_committed consumer
 * finds no record in it (the broker's run of this: tests/test_control_plane.py).
 */
public class EmptyGapsTest {
  @Test
  public void aGapIsEmptyWhenTheFirstRecordFromItsStartLiesPastIt() {
    // Partition 0: records at 98 and 100 (read): 99 holds none. Partition 1: a marker's offset
    // (40) holds no record a consumer gets: the next is 41.
    MockConsumer<byte[], byte[]> consumer = consumer(Map.of(0, new long[] {98, 100}, 1, new long[] {39, 41}));
    List<OffsetRanges.Gap> gaps = List.of(new OffsetRanges.Gap(0, 99, 100), new OffsetRanges.Gap(1, 40, 41));
    assertEquals(gaps, sorted(EmptyGaps.empty(consumer, "views", gaps)));
  }

  @Test
  public void aGapWithARecordInItStaysAndIsToldAtOnce() {
    MockConsumer<byte[], byte[]> consumer = consumer(Map.of(0, new long[] {200, 250, 300}));
    long started = System.nanoTime();
    assertEquals(List.of(), EmptyGaps.empty(consumer, "views", List.of(new OffsetRanges.Gap(0, 201, 300))));
    assertTrue("told by the record, not the budget", System.nanoTime() - started < EmptyGaps.BUDGET.toNanos() / 2);
  }

  @Test
  public void aGapNotCheckedInTimeStaysApart() {
    MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
    TopicPartition p0 = new TopicPartition("views", 0);
    consumer.updateBeginningOffsets(Map.of(p0, 0L));
    // No record comes at all (the partition's end is the gap's start, say): nothing is joined.
    long started = System.nanoTime();
    assertEquals(List.of(), EmptyGaps.empty(consumer, "views", List.of(new OffsetRanges.Gap(0, 10, 11))));
    assertTrue("within the budget", System.nanoTime() - started < EmptyGaps.BUDGET.toNanos() + 2_000_000_000L);
  }

  /** A consumer of topic "views" whose partitions hold records at these offsets. */
  private static MockConsumer<byte[], byte[]> consumer(Map<Integer, long[]> offsets) {
    MockConsumer<byte[], byte[]> consumer = new MockConsumer<>(OffsetResetStrategy.NONE);
    Map<TopicPartition, Long> starts = new HashMap<>();
    offsets.keySet().forEach(p -> starts.put(new TopicPartition("views", p), 0L));
    consumer.assign(starts.keySet());
    consumer.updateBeginningOffsets(starts);
    offsets.forEach((p, at) -> {
      for (long offset : at) consumer.addRecord(record(p, offset));
    });
    return consumer;
  }

  private static ConsumerRecord<byte[], byte[]> record(int partition, long offset) {
    return new ConsumerRecord<>("views", partition, offset, new byte[0], new byte[0]);
  }

  private static List<OffsetRanges.Gap> sorted(List<OffsetRanges.Gap> gaps) {
    return gaps.stream().sorted(java.util.Comparator.comparingInt(OffsetRanges.Gap::partition)
        .thenComparingLong(OffsetRanges.Gap::from)).toList();
  }
}
