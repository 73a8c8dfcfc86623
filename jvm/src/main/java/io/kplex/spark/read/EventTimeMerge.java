package io.kplex.spark.read;

import io.kplex.spark.time.EventTime;
import io.kplex.spark.wire.OrderValues;
import java.util.Comparator;
import java.util.PriorityQueue;

/**
 * Merges the records of several source partitions into one event-time order, with a
 * declared bound on lateness ({@code kplex.max_delay_ms}), as the original kplex does.
 * Pure logic: no Kafka, no Spark. The rule itself is {@link EventTime}'s, which the streaming
 * sink applies too. {@code python/kplex/merge.py} implements the same rules; both are pinned by the shared vectors in {@code tests/vectors/event_time_merge.json}.
 *
 * <ul>
 *   <li><b>Late.</b> Every record of every source partition goes through {@link #isLate}
 *       and {@link #accept}. A record is late when its order value is more than maxDelay
 *       below the largest order value seen before it on its own partition. Lateness
 *       depends on one partition's sequence alone, so every reader, however its polls
 *       interleave, finds the same late records.</li>
 *   <li><b>Watermark.</b> The smallest (largest order seen - maxDelay) over the partitions
 *       not yet read to their end; a partition that has produced nothing holds it at
 *       -infinity.</li>
 *   <li><b>Release.</b> A buffered record is released once its order value is strictly
 *       below the watermark, smallest first: no record still to come, late ones aside,
 *       can sort before it. When every partition has ended, the rest is released.</li>
 * </ul>
 *
 * So the output is exactly the sorted sequence of the non-late records added, ties broken
 * as a kplex write breaks them (order value, key bytes, value bytes, unsigned, a NULL value
 * first), then by source partition (its index: sources are numbered in (topic, partition)
 * order) and offset: the same sequence an INSERT of the same
 * definition writes.
 */
final class EventTimeMerge<T> {
  static final class Entry<T> {
    final long order;
    final byte[] key;
    final byte[] value;
    /** The source partition's index among the merged ones (sorted by topic, then partition). */
    final int partition;
    final long offset;
    final T payload;

    Entry(long order, byte[] key, byte[] value, int partition, long offset, T payload) {
      this.order = order;
      this.key = key;
      this.value = value;
      this.partition = partition;
      this.offset = offset;
      this.payload = payload;
    }
  }

  /** kplex's order of records (OrderValues.compare), then source partition and offset. */
  private static final Comparator<Entry<?>> ORDER = ((Comparator<Entry<?>>) (a, b) ->
      OrderValues.compare(a.order, a.key, a.value, b.order, b.key, b.value))
      .thenComparingInt(e -> e.partition)
      .thenComparingLong(e -> e.offset);

  private final long maxDelay;
  private final long[] high;
  private final boolean[] seen;
  private final boolean[] ended;
  private final PriorityQueue<Entry<T>> buffer = new PriorityQueue<>(ORDER);

  EventTimeMerge(int sources, long maxDelayMs) {
    this.maxDelay = maxDelayMs;
    this.high = new long[sources];
    this.seen = new boolean[sources];
    this.ended = new boolean[sources];
  }

  /** Largest order value seen so far on a source (meaningless before its first record). */
  long high(int source) {
    return high[source];
  }

  /** The source's own watermark: its largest order value minus maxDelay, saturating. */
  private long mark(int source) {
    return seen[source] ? EventTime.mark(high[source], maxDelay) : Long.MIN_VALUE;
  }

  boolean isLate(int source, long order) {
    return EventTime.judge(order, seen[source] ? high[source] : Long.MIN_VALUE, Long.MIN_VALUE, maxDelay)
        != EventTime.Late.ON_TIME;
  }

  /** Records a record that is not late (of any virtual partition) on its source. */
  void accept(int source, long order) {
    if (!seen[source] || order > high[source]) {
      high[source] = order;
      seen[source] = true;
    }
  }

  /** Buffers a record of the reader's virtual partition (already accepted). */
  void add(Entry<T> entry) {
    buffer.add(entry);
  }

  void end(int source) {
    ended[source] = true;
  }

  boolean ended(int source) {
    return ended[source];
  }

  boolean allEnded() {
    for (boolean e : ended) if (!e) return false;
    return true;
  }

  long watermark() {
    long w = Long.MAX_VALUE;
    for (int s = 0; s < ended.length; s++) {
      if (!ended[s]) w = Math.min(w, mark(s));
    }
    return w;
  }

  /** A source that holds the watermark back: reading it is what lets records out. */
  boolean holdsWatermark(int source) {
    return !ended[source] && mark(source) == watermark();
  }

  /** The next record in order, if it can be released now; otherwise null. */
  Entry<T> poll() {
    Entry<T> head = buffer.peek();
    if (head == null) return null;
    if (allEnded() || head.order < watermark()) return buffer.poll();
    return null;
  }

  int buffered() {
    return buffer.size();
  }
}
