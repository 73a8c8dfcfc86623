package io.kplex.spark.stream;

/**
 * How kplex's streaming source tells kplex's streaming sink, in the same micro-batch, that
 * its input has gone idle (Trigger.AvailableNow reached its end, or no record arrived for
 * the read option {@code idleReleaseMs}), so that the sink releases every record it holds back
 * instead of waiting for later records to move the event-time watermark.
 *
 * <p>The source plans a batch, then the sink's driver side runs it, on the query's own
 * thread: the signal is a flag of that thread, set by the source when it plans a
 * micro-batch whose end offset carries a new flush (so a batch rerun from the checkpoint
 * gives the same signal) and taken by the sink. With another source, held records are
 * released only when later records move the watermark.
 */
public final class HeldRelease {
  private static final ThreadLocal<Boolean> FLUSH = ThreadLocal.withInitial(() -> false);

  private HeldRelease() {}

  /** The source: this micro-batch ends an idle stretch. */
  public static void signal() {
    FLUSH.set(true);
  }

  /** The sink: whether this micro-batch releases everything held; clears the flag. */
  public static boolean take() {
    boolean flush = FLUSH.get();
    FLUSH.set(false);
    return flush;
  }
}
