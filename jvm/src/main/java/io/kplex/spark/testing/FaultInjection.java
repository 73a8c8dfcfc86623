package io.kplex.spark.testing;

import io.kplex.spark.errors.Errors;
import java.io.Serializable;
import java.util.Map;

/**
 * Test-only faults, so that exactly-once is tested through real task failures, dead
 * executors and slow tasks. Off unless a {@code kplex.testing.*} write option or
 * {@code spark.kplex.testing.*} session setting is given; never set them in production.
 * <ul>
 *   <li>{@code fail_after_rows=N}: after N rows (flushed to the broker), the task throws;
 *       on the first {@code fail_attempts} attempts (default 1; {@code -1} = every attempt);</li>
 *   <li>{@code halt_after_rows=N}: after N flushed rows, the first attempt of partition 0
 *       halts its JVM (a lost executor);</li>
 *   <li>{@code sleep_ms=N}: the first attempt of partition 0 sleeps N ms after each of its
 *       first 10 rows, and 5 N ms before committing (a straggler, a window to kill things in);</li>
 *   <li>{@code halt_after_commits=N}: the driver commits the tasks' transactions one at a
 *       time and halts its JVM after N of them (a driver that dies mid-commit, leaving the
 *       write half visible until the next session touches the table);</li>
 *   <li>{@code pause_between_commits_ms=N}: the driver commits the tasks' transactions one at
 *       a time and waits N ms after each (a window for {@code query.stop()} mid-commit).</li>
 * </ul>
 */
public final class FaultInjection implements Serializable {
  static final String PREFIX = "kplex.testing.";

  final long failAfterRows;
  final int failAttempts;
  final long haltAfterRows;
  final long sleepMs;
  final long haltAfterCommits;
  final long pauseBetweenCommitsMs;

  public FaultInjection(Map<String, String> settings) {
    failAfterRows = number(settings, "fail_after_rows", -1);
    failAttempts = (int) number(settings, "fail_attempts", 1);
    haltAfterRows = number(settings, "halt_after_rows", -1);
    sleepMs = number(settings, "sleep_ms", 0);
    haltAfterCommits = number(settings, "halt_after_commits", -1);
    pauseBetweenCommitsMs = number(settings, "pause_between_commits_ms", 0);
  }

  private static long number(Map<String, String> settings, String key, long orElse) {
    String v = settings.get(PREFIX + key);
    if (v == null) return orElse;
    try {
      return Long.parseLong(v.trim());
    } catch (NumberFormatException e) {
      throw Errors.badOption(PREFIX + key, v, "an integer");
    }
  }

  public boolean any() {
    return failAfterRows >= 0 || haltAfterRows >= 0 || sleepMs > 0;
  }

  /**
   * Called after each row a task sent; {@code flush} makes what was sent reach the broker.
   * {@code attempt} is -1 in a retried stage, which no fault hits (a lost executor makes
   * Spark rerun the whole stage, and its first task attempts are numbered 0 again).
   */
  public void afterRow(int partition, int attempt, long rows, Runnable flush) {
    boolean failing = attempt >= 0 && (failAttempts < 0 || attempt < failAttempts);
    if (failAfterRows >= 0 && failing && rows == failAfterRows) {
      flush.run();
      throw new IllegalStateException("kplex.testing: injected failure after " + rows
          + " rows in partition " + partition + ", attempt " + attempt);
    }
    if (partition == 0 && attempt == 0) {
      if (haltAfterRows >= 0 && rows == haltAfterRows) {
        flush.run();
        Runtime.getRuntime().halt(137);
      }
      if (sleepMs > 0 && rows <= 10) {
        sleep();
      }
    }
  }

  /** Whether the driver must commit one transaction at a time, calling {@link #afterCommit}. */
  public boolean commitsOneByOne() {
    return haltAfterCommits >= 0 || pauseBetweenCommitsMs > 0;
  }

  /** Called on the driver after each transaction it committed ({@code committed} so far). */
  public void afterCommit(int committed) {
    if (haltAfterCommits >= 0 && committed == haltAfterCommits) {
      Runtime.getRuntime().halt(137);
    }
    if (pauseBetweenCommitsMs > 0) {
      try {
        Thread.sleep(pauseBetweenCommitsMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  public void beforeCommit(int partition, int attempt) {
    if (sleepMs > 0 && partition == 0 && attempt == 0) {
      for (int i = 0; i < 5; i++) sleep();
    }
  }

  private void sleep() {
    try {
      Thread.sleep(sleepMs);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("kplex.testing: interrupted while sleeping", e);
    }
  }
}
