package io.kplex.spark.stream;

/**
 * What kplex's streaming source tells kplex's streaming sink about the micro-batch it just
 * planned: the source topic and its partitions, whose watermark releases held-back records
 * (the smallest of their marks, {@link io.kplex.spark.time.EventTime}), and whether the
 * batch releases everything (a flush requested at the end of the input: the read options
 * {@code releaseAtEnd} with Trigger.AvailableNow, or {@code idleReleaseMs}). Another source
 * gives no signal: its input counts as one partition.
 *
 * <p>The source signals when it plans a micro-batch, from what its offsets record (so a
 * batch rerun from the checkpoint gives the same signal); the sink takes the signal when it
 * writes the batch. The signal goes through a {@link ReleaseChannel}, one per driver JVM,
 * addressed by the query's and the batch's ids as Spark sets them ({@link StreamingBatch}):
 * outside a micro-batch of a streaming query there is no signal.
 */
public final class HeldRelease {
  /**
   * A micro-batch's signal; see the class comment. {@code starts} and {@code ends}: per
   * partition of {@code topic}, the batch's range of offsets, as its tasks read them: the sink
   * checks that every row it gets lies in it (a partition's high comes only from what the
   * batch read), and commits {@code ends} to the query's monitoring group once the batch is
   * committed exactly once (kafka/MonitorGroup), under {@code monitorGroup}, the read's
   * option of that name. Empty maps: ranges unknown, nothing checked. {@code idle}: those of
   * {@code partitions} that are idle (read to their end, empty or quiet for the read's
   * {@code idleTimeoutMs}): they do not hold the watermark. {@code drained}: those of a
   * kplex table's virtual partitions whose physical partition the batch reads to its end: the
   * sink makes one idle when it has seen no record of it, or none newer for
   * {@code idleTimeoutMs} before {@code atMs}, when the batch was planned
   * ({@link io.kplex.spark.time.EventTime.Marks#idleOf}). {@code resumeFrom}: the table the
   * query was started to resume from ({@code startingOffsets = 'table'}), or null.
   * {@code sourceTable}: the kplex table read as the source (its strict streams' published
   * watermarks carry over: {@link io.kplex.spark.txn.EpochMark.Floor}), or null (a topic).
   * {@code resumedAt}: where the query resumed the table's stream (its first micro-batch's start
   * offsets, before a loss the source reported moved them on: failOnDataLoss = false), or null
   * (as {@code starts}).
   */
  public record Signal(String topic, int[] partitions, int[] idle, boolean releaseAll,
      java.util.Map<Integer, Long> starts, java.util.Map<Integer, Long> ends, String monitorGroup,
      int[] drained, long atMs, long idleTimeoutMs, String resumeFrom, String sourceTable, String topicId,
      java.util.Map<Integer, Long> resumedAt) {
    public Signal(String topic, int[] partitions, int[] idle, boolean releaseAll, java.util.Map<Integer, Long> starts,
        java.util.Map<Integer, Long> ends, String monitorGroup, int[] drained, long atMs, long idleTimeoutMs,
        String resumeFrom, String sourceTable, String topicId) {
      this(topic, partitions, idle, releaseAll, starts, ends, monitorGroup, drained, atMs, idleTimeoutMs, resumeFrom,
          sourceTable, topicId, null);
    }

    /** Where the query resumed the table's stream: {@code resumedAt}, else {@code starts}. */
    public java.util.Map<Integer, Long> resumedStarts() {
      return resumedAt != null ? resumedAt : starts;
    }

    public Signal(String topic, int[] partitions, boolean releaseAll) {
      this(topic, partitions, new int[0], releaseAll, java.util.Map.of(), java.util.Map.of(), null, new int[0], 0,
          -1, null, null, null);
    }

    /** Without the source topic's id. */
    public Signal(String topic, int[] partitions, int[] idle, boolean releaseAll, java.util.Map<Integer, Long> starts,
        java.util.Map<Integer, Long> ends, String monitorGroup, int[] drained, long atMs, long idleTimeoutMs,
        String resumeFrom, String sourceTable) {
      this(topic, partitions, idle, releaseAll, starts, ends, monitorGroup, drained, atMs, idleTimeoutMs, resumeFrom,
          sourceTable, null);
    }

    /**
     * The partitions idle in the batch: the source's, and those of {@code drained} idle by
     * {@code before}; of a topic's partitions (no {@code sourceTable}), only those no row of
     * which reached the sink yet: the source judges a topic's quiet by its offsets, and
     * {@code before} does not hold this batch's rows, so a partition quiet by it may have
     * records in this very batch (the first of a run that starts long after the last).
     */
    public int[] idleBy(io.kplex.spark.time.EventTime.Marks before) {
      java.util.Set<Integer> out = new java.util.TreeSet<>();
      for (int p : idle) out.add(p);
      for (int p : sourceTable == null ? before.emptyOf(drained, idleTimeoutMs)
          : before.idleOf(drained, atMs, idleTimeoutMs)) {
        out.add(p);
      }
      return out.stream().mapToInt(Integer::intValue).toArray();
    }
  }

  /** What a sink assumes without a signal: one partition, no flush. */
  public static final Signal NONE = new Signal(null, new int[] {0}, false);

  /** The driver's channel: far more queries than one driver runs at once. */
  private static final ReleaseChannel CHANNEL = new ReleaseChannel(256);

  private HeldRelease() {}

  /** The source: what the micro-batch it is planning tells the sink. */
  public static void signal(Signal signal) {
    StreamingBatch batch = StreamingBatch.current();
    if (batch != null) CHANNEL.signal(batch.queryId(), batch.batchId(), signal);
  }

  /** The sink: the signal of the micro-batch it is writing (NONE if its source gave none). */
  public static Signal take() {
    StreamingBatch batch = StreamingBatch.current();
    return batch == null ? NONE : CHANNEL.take(batch.queryId(), batch.batchId());
  }
}
