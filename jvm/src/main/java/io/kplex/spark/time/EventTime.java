package io.kplex.spark.time;

import java.io.Serializable;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * kplex's one rule of event time, for batch reads, read-time tables and streams alike
 * (docs/contract.md, "Late records"). Pure: no Kafka, no Spark.
 * <ul>
 *   <li><b>Late.</b> A record is late when its order value is more than
 *       {@code max_delay_ms} below the largest order value before it on its own source
 *       partition ({@link Late#BEHIND_PARTITION}); lateness then depends on that
 *       partition's sequence alone, not on how it was read. A stream adds one case: a record
 *       below the largest order value already written to its virtual partition
 *       ({@link Late#BELOW_WRITTEN}), which only a flush on request, or another writer of
 *       the table, can cause.</li>
 *   <li><b>Watermark.</b> The smallest ({@code high - max_delay_ms}) over the source
 *       partitions still open; a partition with no record yet holds it at -infinity.
 *       <b>Idleness:</b> a partition read to its end that is empty, or has had no new record
 *       for the read's {@code idleTimeoutMs}, is idle and holds nothing until its next record
 *       (if every partition is idle, those with a record set it). A record on a partition that
 *       was idle, below what its virtual partition already holds, is late as
 *       {@link Late#AFTER_IDLE} (counted apart from {@link Late#BELOW_WRITTEN}).</li>
 *   <li><b>Release.</b> A record is written once its order value is strictly below the
 *       watermark: no record still to come on any partition, late ones aside, can sort
 *       before it.</li>
 * </ul>
 * So every pacing of the same input (one batch, micro-batches cut by any rate limit,
 * runs that end and start again, partitions visible at different moments) writes the same
 * records in the same order and finds the same late ones.
 */
public final class EventTime {
  private EventTime() {}

  /** Why a record is late, or that it is not. */
  public enum Late { ON_TIME, BEHIND_PARTITION, BELOW_WRITTEN, AFTER_IDLE }

  /** A partition's watermark: its largest order value minus the delay, saturating; MIN before any record. */
  public static long mark(long high, long maxDelayMs) {
    return high < Long.MIN_VALUE + maxDelayMs ? Long.MIN_VALUE : high - maxDelayMs;
  }

  /**
   * {@code highBefore}: the largest order value before the record on its source partition
   * (Long.MIN_VALUE: none); {@code written}: the largest already written to its virtual
   * partition (Long.MIN_VALUE: none).
   */
  public static Late judge(long order, long highBefore, long written, long maxDelayMs) {
    if (order < mark(highBefore, maxDelayMs)) return Late.BEHIND_PARTITION;
    if (order < written) return Late.BELOW_WRITTEN;
    return Late.ON_TIME;
  }

  /**
   * Where a stream stands between micro-batches: per source partition, the largest order
   * value read; per virtual partition, the largest written; the partitions idle in the
   * micro-batch that made them; and per source partition, when its high last rose
   * ({@code moved}: the planning time, in ms, of that micro-batch, as its source recorded it
   * in its offsets; what a partition's quietness is measured from when only the sink can
   * tell it, as for a kplex table's virtual partitions). Immutable; the next epoch's is made
   * by {@link #after}.
   */
  public record Marks(Map<Integer, Long> highs, Map<Integer, Long> written, java.util.Set<Integer> idle,
      Map<Integer, Long> moved) implements Serializable {
    public static final Marks NONE = new Marks(Map.of(), Map.of());
    /** A key of {@code written} that holds for every virtual partition (an older kplex's bound). */
    public static final int EVERY_VP = -1;

    public Marks {
      highs = Collections.unmodifiableMap(new TreeMap<>(highs));
      written = Collections.unmodifiableMap(new TreeMap<>(written));
      idle = Collections.unmodifiableSortedSet(new java.util.TreeSet<>(idle));
      moved = Collections.unmodifiableMap(new TreeMap<>(moved));
    }

    /** Marks with no time of movement known. */
    public Marks(Map<Integer, Long> highs, Map<Integer, Long> written, java.util.Set<Integer> idle) {
      this(highs, written, idle, Map.of());
    }

    /** Marks with no partition idle. */
    public Marks(Map<Integer, Long> highs, Map<Integer, Long> written) {
      this(highs, written, java.util.Set.of());
    }

    /** These marks, made when {@code partitions} were idle. */
    public Marks withIdle(int[] partitions) {
      java.util.Set<Integer> set = new java.util.TreeSet<>();
      for (int p : partitions) set.add(p);
      return new Marks(highs, written, set, moved);
    }

    /**
     * Those of {@code drained} (partitions read to their end in a micro-batch planned at
     * {@code atMs}) that are idle by these marks: no record yet (empty), or a high that has
     * not risen for {@code timeoutMs} (quiet; a partition with no time of movement known
     * counts from its next micro-batch). A negative timeout: none (strict waiting).
     */
    public int[] idleOf(int[] drained, long atMs, long timeoutMs) {
      if (timeoutMs < 0) return new int[0];
      return java.util.Arrays.stream(drained).filter(p -> high(p) == Long.MIN_VALUE
          || (atMs > 0 && moved.containsKey(p) && atMs - moved.get(p) >= timeoutMs)).toArray();
    }

    /** Those of {@code drained} with no record yet (a negative timeout: none), quiet ones not. */
    public int[] emptyOf(int[] drained, long timeoutMs) {
      return idleOf(drained, 0, timeoutMs);
    }

    /** Marks of what is written alone (a batch write's floor). */
    public static Marks of(Map<Integer, Long> written) {
      return new Marks(Map.of(), written);
    }

    public long high(int partition) {
      return highs.getOrDefault(partition, Long.MIN_VALUE);
    }

    public long written(int vp) {
      return Math.max(written.getOrDefault(vp, Long.MIN_VALUE), written.getOrDefault(EVERY_VP, Long.MIN_VALUE));
    }

    /**
     * The watermark over {@code partitions} (the source's, as of the micro-batch): the
     * smallest of their marks. No partition: MIN (nothing is known, nothing released).
     */
    public long watermark(int[] partitions, long maxDelayMs) {
      return watermark(partitions, new int[0], maxDelayMs);
    }

    /**
     * The watermark over {@code partitions} but the {@code idle} ones; if all are idle, over
     * those with a record (none: MIN).
     */
    public long watermark(int[] partitions, int[] idle, long maxDelayMs) {
      int[] open = holdingCandidates(partitions, idle);
      if (open.length == 0) return Long.MIN_VALUE;
      long w = Long.MAX_VALUE;
      for (int p : open) w = Math.min(w, mark(high(p), maxDelayMs));
      return w;
    }

    /** The partitions that hold the watermark: not idle; if all are idle, those with a record. */
    private int[] holdingCandidates(int[] partitions, int[] idle) {
      java.util.Set<Integer> out = new java.util.HashSet<>();
      for (int p : idle) out.add(p);
      int[] open = java.util.Arrays.stream(partitions).filter(p -> !out.contains(p)).toArray();
      if (open.length > 0 || idle.length == 0) return open;
      return java.util.Arrays.stream(partitions).filter(p -> high(p) != Long.MIN_VALUE).toArray();
    }

    /** The partitions whose mark is the watermark (what holds the release back). */
    public int[] holding(int[] partitions, long maxDelayMs) {
      return holding(partitions, new int[0], maxDelayMs);
    }

    /** As {@link #holding(int[], long)}, with {@code idle} partitions not holding it. */
    public int[] holding(int[] partitions, int[] idle, long maxDelayMs) {
      long w = watermark(partitions, idle, maxDelayMs);
      return java.util.Arrays.stream(holdingCandidates(partitions, idle))
          .filter(p -> mark(high(p), maxDelayMs) == w).toArray();
    }

    /** These marks raised by a micro-batch's (per partition: largest read; per vp: largest written). */
    public Marks after(Map<Integer, Long> readHighs, Map<Integer, Long> writtenHighs) {
      return new Marks(maxMerge(highs, readHighs), maxMerge(written, writtenHighs), idle, moved);
    }

    /**
     * As {@link #after(Map, Map)}, for a micro-batch planned at {@code atMs} (0: unknown): a
     * partition whose high rose, or that has a high and no time yet, moved then.
     */
    public Marks after(Map<Integer, Long> readHighs, Map<Integer, Long> writtenHighs, long atMs) {
      Map<Integer, Long> nextHighs = maxMerge(highs, readHighs);
      Map<Integer, Long> nextMoved = new HashMap<>(moved);
      if (atMs > 0) {
        nextHighs.forEach((p, h) -> {
          if (h > high(p) || !moved.containsKey(p)) nextMoved.put(p, atMs);
        });
      }
      return new Marks(nextHighs, maxMerge(written, writtenHighs), idle, nextMoved);
    }

    /** The larger of both, per virtual partition (the table's marks over several writers). */
    public Marks withWrittenAtLeast(Map<Integer, Long> floor) {
      return new Marks(highs, maxMerge(written, floor), idle, moved);
    }

    /**
     * These marks with the high of each of {@code partitions} at least {@code floor} plus
     * {@code maxDelayMs}: what a source that publishes that no record to come is below
     * {@code floor} allows (no record below it can be on time, so none is waited for).
     * Long.MIN_VALUE: unchanged.
     */
    public Marks withFloor(int[] partitions, long floor, long maxDelayMs) {
      if (floor == Long.MIN_VALUE) return this;
      long high = floor > Long.MAX_VALUE - maxDelayMs ? Long.MAX_VALUE : floor + maxDelayMs;
      Map<Integer, Long> raised = new HashMap<>(highs);
      for (int p : partitions) raised.merge(p, high, Math::max);
      return new Marks(raised, written, idle, moved);
    }
  }

  static Map<Integer, Long> maxMerge(Map<Integer, Long> a, Map<Integer, Long> b) {
    Map<Integer, Long> out = new HashMap<>(a);
    b.forEach((k, v) -> out.merge(k, v, Math::max));
    return out;
  }
}
