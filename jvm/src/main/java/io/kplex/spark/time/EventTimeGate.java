package io.kplex.spark.time;

import io.kplex.spark.wire.OrderValues;
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
 * What was held back comes two ways: records to be placed again with this micro-batch's
 * ({@code heldInOrder}: those still held go out again through {@code hold}), and runs left
 * where they are ({@link Run}: a file of an earlier micro-batch, sorted): of those only the
 * records released are read, so that a micro-batch's cost follows what it releases, not
 * everything held.
 */
public final class EventTimeGate<T> {
  /** A record with what it is ordered by. */
  public record Item<T>(T payload, long order, byte[] key, byte[] value, int vp) {}

  /**
   * The records waiting for the commit, added in order and read back once, in order, at the
   * commit: in memory ({@link #inMemory}), or spilled to disk by the task once they grow.
   */
  public interface Pending<T> {
    void add(Item<T> item);

    /** The records added, in the order they were added; called once. */
    java.util.Iterator<Item<T>> drain();
  }

  /** Pending records kept in a list. */
  public static <T> Pending<T> inMemory() {
    List<Item<T>> list = new ArrayList<>();
    return new Pending<>() {
      @Override
      public void add(Item<T> item) {
        list.add(item);
      }

      @Override
      public java.util.Iterator<Item<T>> drain() {
        return list.iterator();
      }
    };
  }

  /**
   * Held records left in place, in order: the gate takes from its head what it releases and
   * leaves the rest (the run then knows where it stopped).
   */
  public interface Run<T> {
    /** The next record, or null when none is left. */
    Item<T> head();

    /** Moves past the head (it was written). */
    void advance();
  }

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
  /** What the last micro-batch held back for this task, in order, not yet placed. */
  private final java.util.Iterator<Item<T>> previous;
  private Item<T> nextPrevious;
  private final Pending<T> pending;
  /** The runs left in place with records still to read, by their heads. */
  private final java.util.PriorityQueue<Run<T>> runs =
      new java.util.PriorityQueue<>((a, b) -> ORDER.compare(a.head(), b.head()));
  private final Map<Integer, Long> read = new HashMap<>();
  private final Map<Integer, Long> written = new HashMap<>();
  private long late;
  private final long[] lateWhy = new long[EventTime.Late.values().length];
  private long alreadyWritten;
  /** Whether another writer of the table read a held record's source record ({@link #judgingHeld}). */
  private java.util.function.Predicate<T> readByOthers = payload -> false;

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
    this(before, partitions, idle, maxDelayMs, releaseAll, sorted(held), inMemory(), out);
  }

  /**
   * {@code heldInOrder}: what the last micro-batch held back for this task, already in order
   * (read from its files as they come, never all at once); {@code pending}: where the records
   * waiting for the commit go.
   */
  public EventTimeGate(EventTime.Marks before, int[] partitions, int[] idle, long maxDelayMs, boolean releaseAll,
      java.util.Iterator<Item<T>> heldInOrder, Pending<T> pending, Out<T> out) {
    this(before, partitions, idle, maxDelayMs, releaseAll, heldInOrder, List.of(), pending, out);
  }

  /** {@code inPlace}: held runs left where they are; of each only what is released is taken. */
  public EventTimeGate(EventTime.Marks before, int[] partitions, int[] idle, long maxDelayMs, boolean releaseAll,
      java.util.Iterator<Item<T>> heldInOrder, List<? extends Run<T>> inPlace, Pending<T> pending, Out<T> out) {
    for (Run<T> run : inPlace) {
      if (run.head() != null) runs.add(run);
    }
    this.before = before;
    this.partitions = partitions;
    this.idle = idle;
    this.maxDelayMs = maxDelayMs;
    this.releaseAll = releaseAll;
    this.out = out;
    this.releaseNow = before.watermark(partitions, idle, maxDelayMs);
    this.previous = heldInOrder;
    this.pending = pending;
    this.nextPrevious = heldInOrder.hasNext() ? heldInOrder.next() : null;
  }

  private static <T> java.util.Iterator<Item<T>> sorted(Collection<Item<T>> held) {
    List<Item<T>> sorted = new ArrayList<>(held);
    sorted.sort(ORDER);
    return sorted.iterator();
  }

  /**
   * Judges held records again as they are released: {@code readByOthers} tells whether another
   * writer of the table (a stream, an INSERT) read a record's source record ({@link #heldToWrite}).
   */
  public EventTimeGate<T> judgingHeld(java.util.function.Predicate<T> readByOthers) {
    this.readByOthers = readByOthers;
    return this;
  }

  /**
   * Whether a record held back by an earlier micro-batch is still to be written. This query's
   * own writes never pass what it holds (it holds records at or above the bound it released
   * below), so a record at or below what its virtual partition holds means another writer
   * wrote there after the record was held (an INSERT, or a stream from another source, while
   * this query was stopped). Then: if that writer read the record, it was written then, and is
   * skipped ({@link #alreadyWritten}); else a record equal to what is there is written (a tie
   * keeps the order), and one below is late ({@link EventTime.Late#BELOW_WRITTEN}).
   */
  private boolean heldToWrite(Item<T> item) {
    long floor = before.written(item.vp);
    if (item.order > floor) return true;
    if (readByOthers.test(item.payload)) {
      alreadyWritten++;
      return false;
    }
    if (item.order == floor) return true;
    late++;
    lateWhy[EventTime.Late.BELOW_WRITTEN.ordinal()]++;
    out.late(item, EventTime.Late.BELOW_WRITTEN, floor);
    return false;
  }

  /** A held record of a run left in place, released: written unless judged otherwise ({@link #heldToWrite}). */
  private void release(Item<T> held) {
    if (heldToWrite(held)) write(held);
  }

  /**
   * Whether held records came back in an order no kplex writes: an order value going back.
   * Records of one order value are compared no further: a kplex before the one that sorts a
   * TIMESTAMP order by its milliseconds held them by microsecond, and a query it stopped must
   * resume (G2 asks for order values, and its ties stay deterministic for those records).
   */
  private static boolean goesBack(Item<?> taken, Item<?> next) {
    return taken.order > next.order;
  }

  /** The next held record of the last micro-batch, taken (it must not go back in order). */
  private Item<T> takePrevious() {
    Item<T> taken = nextPrevious;
    nextPrevious = previous.hasNext() ? previous.next() : null;
    if (nextPrevious != null && goesBack(taken, nextPrevious)) {
      throw new IllegalStateException("kplex bug (an internal invariant; please report it): the records held back by the last"
          + " micro-batch are not in order at"
          + " order value " + nextPrevious.order + " after " + taken.order);
    }
    return taken;
  }

  /**
   * A record of this micro-batch, in order. {@code partition}: its source partition;
   * {@code highInBatch}: the largest order value before it on that partition in this
   * micro-batch (Long.MIN_VALUE: none, or unknown).
   */
  public void add(Item<T> item, int partition, long highInBatch) {
    add(item, partition, highInBatch, false);
  }

  /**
   * {@link #add(Item, int, long)}; {@code readBefore}: another query's stream into the table
   * already read this record from the source; if its order value is not above what its
   * virtual partition holds, it was written then (or late then) and is skipped, counted in
   * {@link #alreadyWritten}. Its order value still counts for its partition's high.
   */
  public void add(Item<T> item, int partition, long highInBatch, boolean readBefore) {
    read.merge(partition, item.order, Math::max);
    if (readBefore && item.order <= before.written(item.vp)) {
      alreadyWritten++;
      return;
    }
    catchUp(item);
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

  /**
   * Places the held records up to {@code upTo} (null: all of them) in order: those to be
   * placed again, and from the runs left in place those released as of the start (the rest
   * of a run waits for the commit, which may release more of it).
   */
  private void catchUp(Item<T> upTo) {
    while (true) {
      Run<T> run = runs.peek();
      Item<T> inPlace = run == null || run.head().order >= releaseNow ? null : run.head();
      boolean fromRun = inPlace != null && (nextPrevious == null || ORDER.compare(inPlace, nextPrevious) <= 0);
      Item<T> next = fromRun ? inPlace : nextPrevious;
      if (next == null || upTo != null && ORDER.compare(next, upTo) > 0) return;
      if (fromRun) {
        release(take(run));
      } else {
        Item<T> held = takePrevious();
        if (heldToWrite(held)) place(held);
      }
    }
  }

  /** The head of a run left in place, taken (the run goes back by its next head, if any). */
  private Item<T> take(Run<T> run) {
    runs.poll();
    Item<T> taken = run.head();
    run.advance();
    Item<T> next = run.head();
    if (next != null) {
      if (goesBack(taken, next)) {
        throw new IllegalStateException("kplex bug (an internal invariant; please report it): a file of held"
            + " records is not in order at order value " + next.order
            + " after " + taken.order);
      }
      runs.add(run);
    }
    return taken;
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
    List<Item<T>> held = new ArrayList<>();
    commit(held::add);
    return held;
  }

  /** Releases what the commit may; hands what is held back to {@code hold}, in order. */
  public void commit(java.util.function.Consumer<Item<T>> hold) {
    catchUp(null);
    long bound = commitBound();
    java.util.Iterator<Item<T>> waiting = pending.drain();
    Item<T> next = waiting.hasNext() ? waiting.next() : null;
    while (next != null || !runs.isEmpty()) {
      Run<T> run = runs.peek();
      if (run != null && (next == null || ORDER.compare(run.head(), next) <= 0)) {
        if (releaseAll || run.head().order < bound) {
          release(take(run));
        } else {
          runs.poll();  // the rest of it stays where it is, held
        }
        continue;
      }
      if (releaseAll || next.order < bound) {  // all: Long.MAX_VALUE itself too
        write(next);
      } else {
        hold.accept(next);
      }
      next = waiting.hasNext() ? waiting.next() : null;
    }
  }

  /** Per source partition, the largest order value this task read in the micro-batch. */
  public Map<Integer, Long> read() {
    return read;
  }

  /** Per virtual partition, the largest order value this task wrote in the micro-batch. */
  public Map<Integer, Long> written() {
    return written;
  }

  /** Records skipped as written by another writer of the table before (a stream, an INSERT). */
  public long alreadyWritten() {
    return alreadyWritten;
  }

  public long late() {
    return late;
  }

  public long late(EventTime.Late why) {
    return lateWhy[why.ordinal()];
  }
}
