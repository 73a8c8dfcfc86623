package io.kplex.spark.write;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;

import java.util.concurrent.CountDownLatch;
import org.junit.Test;

/** The runs a driver keeps: one per (table, query) while its thread runs, gone once it ended. */
public class StreamingRunsTest {
  /** A query's thread: runs until {@link #end}. */
  private static final class QueryThread implements AutoCloseable {
    private final CountDownLatch stop = new CountDownLatch(1);
    final Thread thread = new Thread(() -> {
      try {
        stop.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "query");

    QueryThread() {
      thread.start();
    }

    void end() throws InterruptedException {
      stop.countDown();
      thread.join();
    }

    @Override
    public void close() throws InterruptedException {
      end();
    }
  }

  @Test
  public void aRunIsKeptAcrossItsMicroBatches() throws InterruptedException {
    StreamingRuns runs = new StreamingRuns();
    try (QueryThread query = new QueryThread()) {
      StreamingRuns.Run first = runs.of("t", "q", "run-1", query.thread);
      first.recovered = true;
      assertSame(first, runs.of("t", "q", "run-1", query.thread));
      assertEquals(1, runs.size());
    }
  }

  @Test
  public void aNewRunOfTheQueryStartsAfresh() throws InterruptedException {
    StreamingRuns runs = new StreamingRuns();
    try (QueryThread before = new QueryThread(); QueryThread after = new QueryThread()) {
      StreamingRuns.Run first = runs.of("t", "q", "run-1", before.thread);
      first.recovered = true;
      StreamingRuns.Run second = runs.of("t", "q", "run-2", after.thread);
      assertNotSame(first, second);
      assertEquals(false, second.recovered);
      assertEquals(1, runs.size());
    }
  }

  @Test
  public void twoQueriesOrTwoTablesAreTwoRuns() throws InterruptedException {
    StreamingRuns runs = new StreamingRuns();
    try (QueryThread a = new QueryThread(); QueryThread b = new QueryThread()) {
      StreamingRuns.Run qa = runs.of("t", "a", "run-a", a.thread);
      StreamingRuns.Run qb = runs.of("t", "b", "run-b", b.thread);
      StreamingRuns.Run other = runs.of("u", "a", "run-a", a.thread);
      assertNotSame(qa, qb);
      assertNotSame(qa, other);
      assertEquals(3, runs.size());
    }
  }

  @Test
  public void aRunIsForgottenOnceItsThreadEnded() throws InterruptedException {
    StreamingRuns runs = new StreamingRuns();
    QueryThread stopped = new QueryThread();
    try (QueryThread running = new QueryThread()) {
      runs.of("t", "stopped", "run-1", stopped.thread);
      runs.of("t", "running", "run-2", running.thread);
      stopped.end();
      runs.removeEnded();
      assertEquals(1, runs.size());
    }
    runs.removeEnded();
    assertEquals(0, runs.size());
  }

  @Test
  public void theEndOfARunsClaimForgetsItOnlyIfItsThreadEnded() throws InterruptedException {
    StreamingRuns runs = new StreamingRuns();
    QueryThread query = new QueryThread();
    StreamingRuns.Run run = runs.of("t", "q", "run-1", query.thread);
    runs.claimEnded(run);  // a failed epoch gave the claim up; the run goes on
    assertSame(run, runs.of("t", "q", "run-1", query.thread));
    query.end();
    runs.claimEnded(run);  // the query stopped
    assertEquals(0, runs.size());
  }

  @Test
  public void aWriteOutsideARunIsNotKept() {
    StreamingRuns runs = new StreamingRuns();
    StreamingRuns.Run run = runs.of("t", "q", null, Thread.currentThread());
    assertNull(run.runId);
    assertNotSame(run, runs.of("t", "q", null, Thread.currentThread()));
    assertEquals(0, runs.size());
  }
}
