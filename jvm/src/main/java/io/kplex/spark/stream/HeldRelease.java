package io.kplex.spark.stream;

/**
 * What kplex's streaming source tells kplex's streaming sink about the micro-batch it just
 * planned: the source topic and its partitions, whose watermark releases held-back records
 * (the smallest of their marks, {@link io.kplex.spark.time.EventTime}), and whether the
 * batch releases everything (a flush requested at the end of the input: the read options
 * {@code releaseAtEnd} with Trigger.AvailableNow, or {@code idleReleaseMs}). Another source
 * gives no signal: its input counts as one partition.
 *
 * <p>The source plans a batch, then the sink's driver side runs it, on the query's own
 * thread: the signal is a value of that thread, set by the source when it plans a
 * micro-batch from what its offsets record (so a batch rerun from the checkpoint gives the
 * same signal) and taken by the sink.
 */
public final class HeldRelease {
  /** A micro-batch's signal; see the class comment. */
  public record Signal(String topic, int[] partitions, boolean releaseAll) {}

  /** What a sink assumes without a signal: one partition, no flush. */
  public static final Signal NONE = new Signal(null, new int[] {0}, false);

  private static final ThreadLocal<Signal> SIGNAL = ThreadLocal.withInitial(() -> NONE);

  private HeldRelease() {}

  /** The source: what the micro-batch it just planned tells the sink. */
  public static void signal(Signal signal) {
    SIGNAL.set(signal);
  }

  /** The sink: this micro-batch's signal; clears it. */
  public static Signal take() {
    Signal signal = SIGNAL.get();
    SIGNAL.set(NONE);
    return signal;
  }
}
