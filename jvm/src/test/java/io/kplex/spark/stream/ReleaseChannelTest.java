package io.kplex.spark.stream;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import java.util.concurrent.atomic.AtomicReference;
import org.junit.Test;

/**
 * The source-to-sink release signal: addressed by query and batch, so it reaches the sink of
 * its own query and batch, whichever thread takes it, and nothing else.
 */
public class ReleaseChannelTest {
  private static final HeldRelease.Signal FLUSH = new HeldRelease.Signal("src", new int[] {0, 1, 2}, true);
  private static final HeldRelease.Signal PLAIN = new HeldRelease.Signal("other", new int[] {3}, false);

  @Test
  public void theSinkTakesTheSignalOfTheBatchItsSourcePlanned() {
    ReleaseChannel channel = new ReleaseChannel(8);
    channel.signal("q", 4, FLUSH);
    HeldRelease.Signal taken = channel.take("q", 4);
    assertSame(FLUSH, taken);
    assertEquals("src", taken.topic());
    assertArrayEquals(new int[] {0, 1, 2}, taken.partitions());
    assertTrue(taken.releaseAll());
  }

  @Test
  public void aSignalIsTakenOnceThenTheSinkAssumesNone() {
    ReleaseChannel channel = new ReleaseChannel(8);
    channel.signal("q", 4, FLUSH);
    channel.take("q", 4);
    assertSame(HeldRelease.NONE, channel.take("q", 4));
    assertEquals(0, channel.waiting());
  }

  @Test
  public void aBatchPlannedAgainKeepsItsLastSignal() {
    ReleaseChannel channel = new ReleaseChannel(8);
    channel.signal("q", 4, PLAIN);
    channel.signal("q", 4, FLUSH);
    assertSame(FLUSH, channel.take("q", 4));
  }

  @Test
  public void twoQueriesInterleavedEachTakeTheirOwnSignal() {
    ReleaseChannel channel = new ReleaseChannel(8);
    channel.signal("a", 1, FLUSH);
    channel.signal("b", 1, PLAIN);
    assertSame(PLAIN, channel.take("b", 1));
    channel.signal("b", 2, FLUSH);
    assertSame(FLUSH, channel.take("a", 1));
    assertSame(FLUSH, channel.take("b", 2));
    assertEquals(0, channel.waiting());
  }

  @Test
  public void withoutASignalTheSinkAssumesNone() {
    ReleaseChannel channel = new ReleaseChannel(8);
    assertSame(HeldRelease.NONE, channel.take("q", 0));
    channel.signal("other query", 0, FLUSH);
    assertSame(HeldRelease.NONE, channel.take("q", 0));
  }

  @Test
  public void aSignalOfAnotherBatchIsNotUsed() {
    ReleaseChannel channel = new ReleaseChannel(8);
    channel.signal("q", 4, FLUSH);  // planned, never written (the query stopped, then restarted at batch 5)
    assertSame(HeldRelease.NONE, channel.take("q", 5));
    channel.signal("q", 6, FLUSH);  // a rerun of batch 5 must not see batch 6's flush either
    assertSame(HeldRelease.NONE, channel.take("q", 5));
  }

  @Test
  public void theSignalDoesNotDependOnTheThreadThatTakesIt() throws InterruptedException {
    ReleaseChannel channel = new ReleaseChannel(8);
    channel.signal("q", 9, FLUSH);
    AtomicReference<HeldRelease.Signal> taken = new AtomicReference<>();
    Thread sink = new Thread(() -> taken.set(channel.take("q", 9)));
    sink.start();
    sink.join();
    assertSame(FLUSH, taken.get());
  }

  @Test
  public void signalsNoSinkTakesAreBoundedOldestFirst() {
    ReleaseChannel channel = new ReleaseChannel(2);
    channel.signal("a", 1, FLUSH);
    channel.signal("b", 1, FLUSH);
    channel.signal("a", 2, PLAIN);  // a planned again: now the newest
    channel.signal("c", 1, FLUSH);  // drops b's
    assertEquals(2, channel.waiting());
    assertSame(HeldRelease.NONE, channel.take("b", 1));
    assertSame(PLAIN, channel.take("a", 2));
    assertSame(FLUSH, channel.take("c", 1));
  }
}
