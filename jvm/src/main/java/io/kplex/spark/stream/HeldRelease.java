package io.kplex.spark.stream;

/**
 * How kplex's streaming source tells kplex's streaming sink, in the same micro-batch, what
 * the sink may release of the records it holds back:
 * <ul>
 *   <li>{@link Mode#ALL}: the input has gone idle (Trigger.AvailableNow reached its end, or
 *       no record arrived for the read option {@code idleReleaseMs}): release everything
 *       instead of waiting for later records to move the event-time watermark;</li>
 *   <li>{@link Mode#WITH_BATCH}: the batch read every partition up to its last stable
 *       offset (no {@code maxOffsetsPerTrigger} cut), so all partitions are cut at one
 *       moment: release with the watermark this batch's own records set;</li>
 *   <li>{@link Mode#LAST_WATERMARK} (no signal): release with the watermark of the batches
 *       before. A batch cut by a rate limit may have read one partition further in event
 *       time than another, and the records of the one behind, still unread, would be late
 *       against its own watermark; another source gives no signal either.</li>
 * </ul>
 *
 * <p>The source plans a batch, then the sink's driver side runs it, on the query's own
 * thread: the signal is a flag of that thread, set by the source when it plans a
 * micro-batch from what its end offset records (so a batch rerun from the checkpoint gives
 * the same signal) and taken by the sink.
 */
public final class HeldRelease {
  /** What a micro-batch releases; see the class comment. */
  public enum Mode { LAST_WATERMARK, WITH_BATCH, ALL }

  private static final ThreadLocal<Mode> MODE = ThreadLocal.withInitial(() -> Mode.LAST_WATERMARK);

  private HeldRelease() {}

  /** The source: what the micro-batch it just planned lets the sink release. */
  public static void signal(Mode mode) {
    MODE.set(mode);
  }

  /** The sink: what this micro-batch releases; clears the signal. */
  public static Mode take() {
    Mode mode = MODE.get();
    MODE.set(Mode.LAST_WATERMARK);
    return mode;
  }
}
