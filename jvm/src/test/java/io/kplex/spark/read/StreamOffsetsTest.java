package io.kplex.spark.read;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;

import io.kplex.spark.errors.KplexException;
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

  /** The topic's id travels with the offsets; only two known and different ids say it was recreated. */
  @Test
  public void theTopicsIdReadsBackAndTellsARecreatedTopic() {
    SourceOffset o = new SourceOffset("views", Map.of(0, 42L)).withTopicId("AAAAAAAAAAAAAAAAAAAAAQ");
    assertEquals("{\"views\":{\"0\":42},\"kplex.topic_id\":\"AAAAAAAAAAAAAAAAAAAAAQ\"}", o.json());
    SourceOffset back = SourceOffset.parse("views", o.flushed().withIdle(java.util.Set.of(1), java.util.Set.of(), 5).json());
    assertEquals("AAAAAAAAAAAAAAAAAAAAAQ", back.topicId);
    org.junit.Assert.assertFalse(o.recreatedBy(back));
    org.junit.Assert.assertTrue(o.recreatedBy(back.withTopicId("AAAAAAAAAAAAAAAAAAAAAg")));
    SourceOffset older = SourceOffset.parse("views", "{\"views\":{\"0\":42}}");  // a checkpoint without it
    org.junit.Assert.assertFalse(older.recreatedBy(o));
    org.junit.Assert.assertFalse(o.recreatedBy(older));
  }

  @Test
  public void aCheckpointOfAnEarlierKplexWithItsCaughtUpFlagStillReads() {
    SourceOffset old = SourceOffset.parse("views", "{\"views\":{\"0\":42},\"kplex.caught_up\":true}");
    assertEquals(Map.of(0, 42L), old.next);
    assertEquals("{\"views\":{\"0\":42}}", old.json());
  }

  @Test
  public void aCheckpointOfAnotherTopicIsRefusedNamingBoth() {
    KplexException e = assertThrows(KplexException.class,
        () -> SourceOffset.parse("views", "{\"clicks\":{\"0\":1}}"));
    assertEquals("KPLEX_CHECKPOINT.ANOTHER_TOPIC", e.getCondition());
    assertEquals(Map.of("offsets", "{\"clicks\":{\"0\":1}}", "topic", "views"), e.getMessageParameters());
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

  // Event-time shares (KplexMicroBatchStream.aligned): each partition with a backlog reads
  // ceil((T - high) / density) offsets, T the latest that fits the limit. At 250 ms an offset,
  // 100 s of event time is 400 offsets.
  private static final long BASE = 1_700_000_000_000L;

  private static io.kplex.spark.stream.QuerySinks.Stand stand(long... highs) {
    Map<Integer, Long> byPartition = new TreeMap<>();
    for (int i = 0; i < highs.length; i++) byPartition.put(i, highs[i]);
    return new io.kplex.spark.stream.QuerySinks.Stand(byPartition, java.util.Set.of(), 1_000);
  }

  private static Map<Integer, Double> densities(double... values) {
    Map<Integer, Double> m = new TreeMap<>();
    for (int i = 0; i < values.length; i++) m.put(i, values[i]);
    return m;
  }

  @Test
  public void partitionsLevelInEventTimeAndEquallyDenseShareTheLimitEqually() {
    // The streaming benchmark's backlog: before, one partition a micro-batch.
    Map<Integer, Long> out = KplexMicroBatchStream.aligned(map(0, 0, 0), map(400_000, 300_000, 300_000), 100_000,
        stand(BASE, BASE, BASE), densities(250, 250, 250));
    assertEquals("99,999 reach the same ms, the one left goes to the first", map(33_334, 33_333, 33_333), out);
  }

  @Test
  public void aPartitionBehindInEventTimeCatchesUpFirstThenBothShare() {
    io.kplex.spark.stream.QuerySinks.Stand oneAhead = stand(BASE + 100_000, BASE);
    assertEquals("400 offsets take partition 1 to partition 0's high: all of them to 1", map(200, 600),
        KplexMicroBatchStream.aligned(map(200, 200), map(1_000_000, 1_000_000), 400, oneAhead, densities(250, 250)));
    assertEquals("1,000: 400 to catch up, then 300 each; both end at BASE + 175 s", map(500, 900),
        KplexMicroBatchStream.aligned(map(200, 200), map(1_000_000, 1_000_000), 1_000, oneAhead, densities(250, 250)));
    assertEquals("the rule before: the one ahead (by more than max_delay_ms) got nothing", map(200, 1_200),
        KplexMicroBatchStream.capped(map(200, 200), map(1_000_000, 1_000_000), 1_000,
            KplexMicroBatchStream.ahead(oneAhead.highs(), java.util.Set.of(), java.util.List.of(0, 1), 1_000)));
  }

  @Test
  public void aPartitionDenserInEventTimeReadsMoreOffsetsToTheSameEventTime() {
    // Partition 1 has ten records for each of partition 0's in the same event time.
    Map<Integer, Long> out = KplexMicroBatchStream.aligned(map(0, 0), map(1_000_000, 1_000_000), 1_100,
        stand(BASE, BASE), densities(250, 25));
    assertEquals("both reach BASE + 25 s", map(100, 1_000), out);
  }

  @Test
  public void aSmallBacklogIsReadWholeAndTheOthersShareWhatIsLeft() {
    Map<Integer, Long> out = KplexMicroBatchStream.aligned(map(0, 0, 0), map(1_000_000, 1_000_000, 50), 1_000,
        stand(BASE, BASE, BASE), densities(250, 250, 250));
    assertEquals(map(475, 475, 50), out);
  }

  @Test
  public void theLimitIsNeverExceededAndTheSlowestPartitionAlwaysReads() {
    assertEquals("one ms of partition 0 is 1,000 offsets, past the limit: it takes the whole limit", map(10, 0),
        KplexMicroBatchStream.aligned(map(0, 0), map(1_000_000, 1_000_000), 10, stand(BASE, BASE + 500),
            densities(0.001, 250)));
    assertEquals("three tied slowest, a limit of 2: one offset each while it lasts", map(1, 1, 0),
        KplexMicroBatchStream.aligned(map(0, 0, 0), map(1_000, 1_000, 1_000), 2, stand(BASE, BASE, BASE),
            densities(0.001, 0.001, 0.001)));
    java.util.Random random = new java.util.Random(37);
    for (int run = 0; run < 2_000; run++) {
      int n = 1 + random.nextInt(5);
      long[] until = new long[n];
      long[] highs = new long[n];
      double[] density = new double[n];
      long backlog = 0;
      for (int p = 0; p < n; p++) {
        until[p] = random.nextInt(4) == 0 ? random.nextInt(20) : random.nextInt(1_000_000);
        highs[p] = BASE + random.nextInt(1_000_000);
        density[p] = Math.pow(10, random.nextInt(9) - 4) * (1 + random.nextDouble());
        backlog += until[p];
      }
      long max = 1 + random.nextInt(random.nextBoolean() ? 10 : 200_000);
      Map<Integer, Long> out = KplexMicroBatchStream.aligned(map(new long[n]), map(until), max, stand(highs),
          densities(density));
      long total = 0;
      long slowest = Long.MAX_VALUE;
      for (int p = 0; p < n; p++) {
        long read = out.get(p);
        org.junit.Assert.assertTrue("within the backlog", read >= 0 && read <= until[p]);
        total += read;
        if (until[p] > 0) slowest = Math.min(slowest, highs[p]);
      }
      assertEquals("the limit, used in full", Math.min(max, backlog), total);
      boolean slowestReads = slowest == Long.MAX_VALUE;
      for (int p = 0; p < n; p++) slowestReads |= until[p] > 0 && highs[p] == slowest && out.get(p) >= 1;
      org.junit.Assert.assertTrue("the slowest partition with a backlog reads (run " + run + ")", slowestReads);
    }
  }

  @Test
  public void withoutADensityOrAHighForEveryPartitionWithABacklogTheSharesAreAsBefore() {
    io.kplex.spark.stream.QuerySinks.Stand oneAhead = stand(BASE + 100_000, BASE, BASE);
    Map<Integer, Long> from = map(200, 200, 200);
    Map<Integer, Long> until = map(1_000_000, 1_000_000, 1_000_000);
    Map<Integer, Long> before = KplexMicroBatchStream.capped(from, until, 1_000,
        KplexMicroBatchStream.ahead(oneAhead.highs(), java.util.Set.of(), until.keySet(), 1_000));
    assertEquals("the one ahead waits, the others share", map(200, 700, 700), before);
    Map<Integer, Double> noDensityFor2 = Map.of(0, 250.0, 1, 250.0);
    assertEquals(before, KplexMicroBatchStream.aligned(from, until, 1_000, oneAhead, noDensityFor2));
    io.kplex.spark.stream.QuerySinks.Stand noHighFor2 = new io.kplex.spark.stream.QuerySinks.Stand(
        Map.of(0, BASE + 100_000, 1, BASE), java.util.Set.of(), 1_000);
    assertEquals("partition 2, no record read yet, is the furthest behind: it takes the limit", map(200, 200, 1_200),
        KplexMicroBatchStream.aligned(from, until, 1_000, noHighFor2, densities(250, 250, 250)));
    io.kplex.spark.stream.QuerySinks.Stand idle2 = new io.kplex.spark.stream.QuerySinks.Stand(
        oneAhead.highs(), java.util.Set.of(2), 1_000);
    assertEquals("an idle partition with a backlog: its high says nothing of what woke it", map(200, 700, 700),
        KplexMicroBatchStream.aligned(from, until, 1_000, idle2, densities(250, 250, 250)));
    assertEquals("a partition without a backlog needs no density", map(250, 650, 200),
        KplexMicroBatchStream.aligned(from, map(1_000_000, 1_000_000, 200), 500, oneAhead, noDensityFor2));
    assertEquals("a backlog within the limit is read whole", map(300, 300, 300),
        KplexMicroBatchStream.aligned(from, map(300, 300, 300), 1_000, oneAhead, Map.of()));
  }

  @Test
  public void theEventTimeAnOffsetCarriesIsTakenFromTwoObservationsWhereBothMoved() {
    KplexMicroBatchStream.Densities d = new KplexMicroBatchStream.Densities();
    d.observe(map(0, 0), Map.of(0, BASE));
    assertEquals("one observation: no estimate", Map.of(), d.perOffset());
    d.observe(map(400, 0), Map.of(0, BASE + 100_000));
    assertEquals(Map.of(0, 250.0), d.perOffset());
    d.observe(map(800, 100), Map.of(0, BASE + 100_000, 1, BASE + 10_000));
    assertEquals("partition 0's high did not move: its estimate stays; partition 1 has a first base",
        Map.of(0, 250.0), d.perOffset());
    d.observe(map(1_200, 200), Map.of(0, BASE + 200_000, 1, BASE + 12_500));
    assertEquals("partition 0 over both micro-batches: 100 s over 800 offsets", Map.of(0, 125.0, 1, 25.0), d.perOffset());
    d.observe(map(10, 300), Map.of(0, BASE + 300_000, 1, BASE + 15_000));
    assertEquals("offsets went back: no estimate from them", Map.of(0, 125.0, 1, 25.0), d.perOffset());
    d.observe(map(20, 300), Map.of(0, BASE + 301_000, 1, BASE + 15_000));
    assertEquals("a topic recreated: the estimate after it is from the new offsets", Map.of(0, 100.0, 1, 25.0),
        d.perOffset());
  }
}
