package io.kplex.spark.read;

import static org.junit.Assert.assertEquals;

import java.util.Map;
import java.util.TreeMap;
import org.junit.Test;

/** A streaming read's offsets: their checkpoint form and the per-trigger rate limit. */
public class StreamOffsetsTest {
  @Test
  public void offsetsReadBackFromTheCheckpointAsWrittenInSparksKafkaForm() {
    SourceOffset o = new SourceOffset("views", Map.of(0, 42L, 2, 7L, 1, 0L));
    assertEquals("{\"views\":{\"0\":42,\"1\":0,\"2\":7}}", o.json());
    assertEquals(o.next, SourceOffset.parse("views", o.json()).next);
    SourceOffset flushed = o.flushed().flushed();
    SourceOffset back = SourceOffset.parse("views", flushed.json());
    assertEquals(2, back.flushes);
    assertEquals(o.next, back.next);
  }

  @Test
  public void idleAndDrainedPartitionsAndThePlanningTimeReadBack() {
    SourceOffset o = new SourceOffset("views", Map.of(0, 42L), 1, java.util.Set.of(3), java.util.Set.of(1, 5),
        1_700_000_000_000L);
    assertEquals("{\"views\":{\"0\":42},\"kplex.flushes\":1,\"kplex.idle\":[3],\"kplex.drained\":[1,5],"
        + "\"kplex.at\":1700000000000}", o.json());
    SourceOffset back = SourceOffset.parse("views", o.json());
    assertEquals(o.json(), back.json());
    assertEquals(java.util.Set.of(1, 5), back.drained);
    assertEquals(1_700_000_000_000L, back.at);
  }

  @Test
  public void aCheckpointOfAnEarlierKplexWithItsCaughtUpFlagStillReads() {
    SourceOffset old = SourceOffset.parse("views", "{\"views\":{\"0\":42},\"kplex.caught_up\":true}");
    assertEquals(Map.of(0, 42L), old.next);
    assertEquals("{\"views\":{\"0\":42}}", old.json());
  }

  @Test(expected = io.kplex.spark.errors.KplexException.class)
  public void aCheckpointOfAnotherTopicIsRefused() {
    SourceOffset.parse("views", "{\"clicks\":{\"0\":1}}");
  }

  private static Map<Integer, Long> map(long... values) {
    Map<Integer, Long> m = new TreeMap<>();
    for (int i = 0; i < values.length; i++) m.put(i, values[i]);
    return m;
  }

  @Test
  public void theLimitIsSharedFairlyAndUsedInFull() {
    Map<Integer, Long> out = KplexMicroBatchStream.capped(map(0, 100, 0), map(900, 200, 0), 100);
    long total = 0;
    for (int p = 0; p < 3; p++) total += out.get(p) - map(0, 100, 0).get(p);
    assertEquals(100, total);
    assertEquals("equal shares while both have more", out.get(0) - 0, out.get(1) - 100);
    assertEquals(0L, (long) out.get(2));
  }

  @Test
  public void aTinyBacklogBesideAHugeOneDrainsAtOnce() {
    // Before: shares in proportion to backlog, rounded down, gave the tiny one 0 offsets for ever.
    Map<Integer, Long> out = KplexMicroBatchStream.capped(map(0, 0), map(1_000_000, 5), 400);
    assertEquals(5L, (long) out.get(1));
    assertEquals(395L, (long) out.get(0));
  }

  @Test
  public void everyPartitionWithABacklogGetsAnOffsetWhileTheLimitLasts() {
    Map<Integer, Long> out = KplexMicroBatchStream.capped(map(0, 0, 0), map(1_000, 1_000, 1_000), 3);
    assertEquals(map(1, 1, 1), out);
  }

  @Test
  public void aBacklogUnderTheLimitIsReadWhole() {
    Map<Integer, Long> until = map(10, 20);
    assertEquals(until, KplexMicroBatchStream.capped(map(0, 0), until, 1_000));
  }

  @Test
  public void withoutMaxOffsetsPerTriggerAMicroBatchFitsAQuarterOfTheCommitsBudget() {
    // 15 min timeout less 30 s: 870 s; at the first pace of 5,000/s, a quarter of it.
    assertEquals(1_087_500, KplexMicroBatchStream.defaultCap(870_000, -1));
    assertEquals("at the last micro-batch's pace", 10_875_000, KplexMicroBatchStream.defaultCap(870_000, 50));
    assertEquals("a 60 s timeout (30 s budget) at 20,000/s", 150_000, KplexMicroBatchStream.defaultCap(30_000, 20));
    assertEquals("never below the floor", KplexMicroBatchStream.MIN_DEFAULT_CAP,
        KplexMicroBatchStream.defaultCap(1_000, 0.001));
  }

  @Test
  public void partitionsAheadInEventTimeWaitWhileAPartitionBehindHasABacklog() {
    // Partition 0 read up to 199 s, partition 1 up to 19.9 s; max_delay_ms 5 s: 0 is ahead.
    java.util.Set<Integer> ahead = KplexMicroBatchStream.ahead(Map.of(0, 199_000L, 1, 19_900L), java.util.Set.of(),
        java.util.List.of(0, 1), 5_000);
    assertEquals(java.util.Set.of(0), ahead);
    Map<Integer, Long> out = KplexMicroBatchStream.capped(map(200, 200), map(2_000, 2_000), 400, ahead);
    assertEquals("the one behind takes the whole limit", Map.of(0, 200L, 1, 600L), out);
    assertEquals("nothing behind has a backlog: all share again", Map.of(0, 400L, 1, 2_000L),
        KplexMicroBatchStream.capped(map(200, 2_000), map(2_000, 2_000), 200, ahead));
    assertEquals("within max_delay_ms none is ahead", java.util.Set.of(),
        KplexMicroBatchStream.ahead(Map.of(0, 24_000L, 1, 19_900L), java.util.Set.of(), java.util.List.of(0, 1), 5_000));
    assertEquals("an idle partition holds nothing back", java.util.Set.of(),
        KplexMicroBatchStream.ahead(Map.of(0, 199_000L, 1, 19_900L), java.util.Set.of(1), java.util.List.of(0, 1), 5_000));
    assertEquals("a partition with no record yet is the furthest behind", java.util.Set.of(0, 1),
        KplexMicroBatchStream.ahead(Map.of(0, 1L, 1, 2L), java.util.Set.of(), java.util.List.of(0, 1, 2), 5_000));
  }

  @Test
  public void atTheHeldCapOnlyThePartitionsHoldingTheWatermarkAreRead() {
    io.kplex.spark.stream.QuerySinks.Stand below = new io.kplex.spark.stream.QuerySinks.Stand(
        Map.of(0, 90_000L, 1, 19_900L, 2, 50_000L), java.util.Set.of(), 5_000, 999, 1_000);
    Map<Integer, Long> until = map(2_000, 2_000, 2_000);
    assertEquals("below the cap: as planned", until,
        KplexMicroBatchStream.heldCapped(map(200, 200, 200), until, below, true, true, "t", "tb"));
    io.kplex.spark.stream.QuerySinks.Stand full = new io.kplex.spark.stream.QuerySinks.Stand(
        Map.of(0, 90_000L, 1, 19_900L, 2, 50_000L), java.util.Set.of(), 5_000, 1_000, 1_000);
    assertEquals("at the cap: only partition 1, the lowest high, reads", Map.of(0, 200L, 1, 2_000L, 2, 200L),
        KplexMicroBatchStream.heldCapped(map(200, 200, 200), until, full, true, true, "t", "tb"));
    io.kplex.spark.stream.QuerySinks.Stand idleOne = new io.kplex.spark.stream.QuerySinks.Stand(
        Map.of(0, 90_000L, 1, 19_900L, 2, 50_000L), java.util.Set.of(1), 5_000, 1_000, 1_000);
    assertEquals("an idle partition does not hold it: partition 2 reads", Map.of(0, 200L, 1, 200L, 2, 2_000L),
        KplexMicroBatchStream.heldCapped(map(200, 200, 200), until, idleOne, true, true, "t", "tb"));
    io.kplex.spark.stream.QuerySinks.Stand silent = new io.kplex.spark.stream.QuerySinks.Stand(
        Map.of(0, 90_000L, 1, 19_900L), java.util.Set.of(), 5_000, 1_000, 1_000);
    Map<Integer, Long> silentUntil = map(2_000, 2_000, 0);
    assertEquals("partition 2 never had a record: waiting for it to go idle, nothing is read",
        map(200, 200, 0), KplexMicroBatchStream.heldCapped(map(200, 200, 0), silentUntil, silent, true, false, "t", "tb"));
    assertEquals("an AvailableNow run reads on: its end releases everything", silentUntil,
        KplexMicroBatchStream.heldCapped(map(200, 200, 0), silentUntil, silent, false, false, "t", "tb"));
    io.kplex.spark.errors.KplexException e = org.junit.Assert.assertThrows(io.kplex.spark.errors.KplexException.class,
        () -> KplexMicroBatchStream.heldCapped(map(200, 200, 0), silentUntil, silent, true, true, "views", "by_user"));
    assertEquals("HELD_LIMIT", e.code());
    org.junit.Assert.assertTrue(e.getMessage(), e.getMessage().contains("partition(s) [2] of topic 'views'")
        && e.getMessage().contains("kplex.max_held_records = 1000") && e.getMessage().contains("table by_user"));
    io.kplex.spark.stream.QuerySinks.Stand noCap = new io.kplex.spark.stream.QuerySinks.Stand(
        Map.of(0, 90_000L, 1, 19_900L), java.util.Set.of(), 5_000, 5_000_000, -1);
    assertEquals("-1: no cap", silentUntil,
        KplexMicroBatchStream.heldCapped(map(200, 200, 0), silentUntil, noCap, true, true, "t", "tb"));
  }
}
