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
}
