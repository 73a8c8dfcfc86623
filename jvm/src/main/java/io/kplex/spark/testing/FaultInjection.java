package io.kplex.spark.testing;

import io.kplex.spark.errors.Errors;
import java.io.Serializable;
import java.util.Map;

/**
 * Test-only faults, so that exactly-once is tested through real task failures, dead
 * executors and slow tasks. Chosen per write by a {@code kplex.testing.*} write option or
 * {@code spark.kplex.testing.*} session setting, and honoured only in a driver JVM the test
 * harness armed ({@link #ARMED_ENV}{@code =1} in its environment, or the system property
 * {@link #ARMED_PROPERTY}{@code =true}): nothing a SQL user can set. Anywhere else such a
 * setting fails the write when it is planned, naming the setting, before anything is
 * written, so that on a shared Thrift or Connect server no user can halt the JVM or slow
 * everyone's writes ({@link #of}).
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
  /** The environment variable that arms the hooks in the JVM that plans writes. */
  public static final String ARMED_ENV = "KPLEX_TESTING_FAULTS";
  /** The system property that arms them too ({@code -Dkplex.testing.faults=true}). */
  public static final String ARMED_PROPERTY = "kplex.testing.faults";
  /** No fault. */
  public static final FaultInjection NONE = new FaultInjection(-1, 1, -1, 0, -1, 0, -1);

  /** Whether this JVM's environment or system properties arm the test hooks. */
  public static boolean armed() {
    return "1".equals(System.getenv(ARMED_ENV)) || Boolean.parseBoolean(System.getProperty(ARMED_PROPERTY));
  }

  /**
   * The faults {@code settings} ask for ({@code kplex.*} keys: write options and session
   * settings merged), each read by {@code setting} (the settings layer: options.json declares
   * the hooks): none when no {@code kplex.testing.*} key is set; those asked for in an armed
   * JVM ({@code armed}); otherwise {@code [KPLEX_TEST_HOOK]}, naming the key.
   */
  public static FaultInjection of(Map<String, String> settings, boolean armed,
      java.util.function.ToLongFunction<String> setting) {
    String asked = settings.keySet().stream().filter(k -> k.startsWith(PREFIX)).sorted().findFirst().orElse(null);
    if (asked == null) return NONE;
    if (!armed) throw Errors.testHookNotArmed(asked, ARMED_ENV, ARMED_PROPERTY);
    return new FaultInjection(setting);
  }

  final long failAfterRows;
  final int failAttempts;
  final long haltAfterRows;
  final long sleepMs;
  final long haltAfterCommits;
  final long pauseBetweenCommitsMs;
  /** A streaming task's records waiting for its commit spill to disk past this many bytes (-1: kplex's default). */
  public final long pendingMemoryBytes;

  /**
   * The hooks as {@code setting} reads them: the write's settings layer, by their names in
   * options.json, with its ranges and defaults.
   */
  FaultInjection(java.util.function.ToLongFunction<String> setting) {
    this(setting.applyAsLong(PREFIX + "fail_after_rows"), (int) setting.applyAsLong(PREFIX + "fail_attempts"),
        setting.applyAsLong(PREFIX + "halt_after_rows"), setting.applyAsLong(PREFIX + "sleep_ms"),
        setting.applyAsLong(PREFIX + "halt_after_commits"), setting.applyAsLong(PREFIX + "pause_between_commits_ms"),
        setting.applyAsLong(PREFIX + "pending_memory_bytes"));
  }

  private FaultInjection(long failAfterRows, int failAttempts, long haltAfterRows, long sleepMs,
      long haltAfterCommits, long pauseBetweenCommitsMs, long pendingMemoryBytes) {
    this.failAfterRows = failAfterRows;
    this.failAttempts = failAttempts;
    this.haltAfterRows = haltAfterRows;
    this.sleepMs = sleepMs;
    this.haltAfterCommits = haltAfterCommits;
    this.pauseBetweenCommitsMs = pauseBetweenCommitsMs;
    this.pendingMemoryBytes = pendingMemoryBytes;
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
