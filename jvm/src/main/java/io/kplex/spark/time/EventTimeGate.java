package io.kplex.spark.time;

import io.kplex.spark.wire.OrderValues;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One writer task's share of a streaming micro-batch, under {@link EventTime}'s rule: which
 * of its records are late, which are written now, which at its commit and which are held
 * back for a later micro-batch. Pure (the task does the I/O through {@link Out}), so that
 * every pacing is a unit test.
 *
 * <p>Records come in kplex's order (order value, key bytes, value bytes), as Spark's sort
 * hands them to the task; the ones held back by the previous micro-batch are merged in.
 * A record is written:
 * <ul>
 *   <li>at once, when below the watermark as of the micro-batch's start;</li>
 *   <li>at the commit, when below the watermark of the partitions' largest order values
 *       including what this task read (each of those is at most the true one, so the bound
 *       is at most the watermark the micro-batch sets: safe whatever the other tasks read);</li>
 *   <li>else it is held back, or, on a release of everything ({@code releaseAll}: a flush
 *       requested at the end of the input), written at the commit too.</li>
 * </ul>
 */
public final class EventTimeGate<T> {
  /** A record with what it is ordered by. */
  public record Item<T>(T payload, long order, byte[] key, byte[] value, int vp) {}

  /** Where the gate's decisions go. */
  public interface Out<T> {
    void write(Item<T> item);

    /** {@code bound}: the order value it had to reach (a partition's mark, or what was written). */
    void late(Item<T> item, EventTime.Late why, long bound);
  }

  public static final Comparator<Item<?>> ORDER = (a, b) ->
      OrderValues.compare(a.order, a.key, a.value, b.order, b.key, b.value);

  private final EventTime.Marks before;
  private final int[] partitions;
  /** Those of {@code partitions} idle in this micro-batch: they do not hold the watermark. */
  private final int[] idle;
  private final long maxDelayMs;
  private final boolean releaseAll;
  private final Out<T> out;
  private final long releaseNow;
  private final ArrayDeque<Item<T>> previous;
  private final List<Item<T>> pending = new ArrayList<>();
  private final Map<Integer, Long> read = new HashMap<>();
  private final Map<Integer, Long> written = new HashMap<>();
  private long late;
  private final long[] lateWhy = new long[EventTime.Late.values().length];

  /**
   * {@code before}: the marks the micro-batch starts from; {@code partitions}: the source's
   * partitions, whose watermark releases; {@code held}: what the last micro-batch held back
   * for this task.
   */
  public EventTimeGate(EventTime.Marks before, int[] partitions, long maxDelayMs, boolean releaseAll,
      Collection<Item<T>> held, Out<T> out) {
    this(before, partitions, new int[0], maxDelayMs, releaseAll, held, out);
  }

  /** {@code idle}: those of {@code partitions} that are idle in this micro-batch. */
  public EventTimeGate(EventTime.Marks before, int[] partitions, int[] idle, long maxDelayMs, boolean releaseAll,
      Collection<Item<T>> held, Out<T> out) {
    this.before = before;
    this.partitions = partitions;
    this.idle = idle;
    this.maxDelayMs = maxDelayMs;
    this.releaseAll = releaseAll;
    this.out = out;
    this.releaseNow = before.watermark(partitions, idle, maxDelayMs);
    List<Item<T>> sorted = new ArrayList<>(held);
    sorted.sort(ORDER);
    this.previous = new ArrayDeque<>(sorted);
  }

  /**
   * A record of this micro-batch, in order. {@code partition}: its source partition;
   * {@code highInBatch}: the largest order value before it on that partition in this
   * micro-batch (Long.MIN_VALUE: none, or unknown).
   */
  public void add(Item<T> item, int partition, long highInBatch) {
    read.merge(partition, item.order, Math::max);
    while (!previous.isEmpty() && ORDER.compare(previous.peek(), item) <= 0) place(previous.poll());
    long highBefore = Math.max(before.high(partition), highInBatch);
    long writtenVp = before.written(item.vp);
    EventTime.Late why = EventTime.judge(item.order, highBefore, writtenVp, maxDelayMs);
    if (why == EventTime.Late.BELOW_WRITTEN && before.idle().contains(partition)) why = EventTime.Late.AFTER_IDLE;
    if (why != EventTime.Late.ON_TIME) {
      late++;
      lateWhy[why.ordinal()]++;
      out.late(item, why, why == EventTime.Late.BEHIND_PARTITION ? EventTime.mark(highBefore, maxDelayMs) : writtenVp);
      return;
    }
    place(item);
  }

  private void place(Item<T> item) {
    if (item.order < releaseNow) {
      write(item);
    } else {
      pending.add(item);
    }
  }

  private void write(Item<T> item) {
    out.write(item);
    written.merge(item.vp, item.order, Math::max);
  }

  /** The bound the commit releases below (Long.MAX_VALUE: everything). */
  public long commitBound() {
    if (releaseAll) return Long.MAX_VALUE;
    return before.after(read, Map.of()).watermark(partitions, idle, maxDelayMs);
  }

  /** Releases what the commit may; returns what is held back, in order. */
  public List<Item<T>> commit() {
    while (!previous.isEmpty()) place(previous.poll());
    long bound = commitBound();
    List<Item<T>> held = new ArrayList<>();
    for (Item<T> item : pending) {
      if (releaseAll || item.order < bound) {  // all: Long.MAX_VALUE itself too
        write(item);
      } else {
        held.add(item);
      }
    }
    pending.clear();
    return held;
  }

  /** Per source partition, the largest order value this task read in the micro-batch. */
  public Map<Integer, Long> read() {
    return read;
  }

  /** Per virtual partition, the largest order value this task wrote in the micro-batch. */
  public Map<Integer, Long> written() {
    return written;
  }

  public long late() {
    return late;
  }

  public long late(EventTime.Late why) {
    return lateWhy[why.ordinal()];
  }
}
