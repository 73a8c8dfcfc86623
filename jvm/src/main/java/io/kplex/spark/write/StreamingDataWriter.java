package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.time.Clock;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.time.EventTimeGate;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.Placement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;

/**
 * One task of a streaming epoch: the batch writer ({@link KplexDataWriter}) behind the
 * event-time gate ({@link EventTimeGate}, the rule of {@link EventTime}) that keeps each
 * virtual partition in order across micro-batches (G2) whatever their pacing. The task's
 * rows arrive sorted (order value, key bytes, value), as in a batch write, each with its
 * source partition and the largest order value before it there in this micro-batch (the
 * columns {@code plan.SourcePositions} adds; without them, as from another
 * source, the input counts as one partition judged against earlier micro-batches). The
 * records it held back in the previous epoch are merged in. Late records meet
 * {@code kplex.late_policy}; the rest are written now, at the commit, or held back in a
 * file of the query's checkpoint ({@link HeldRows}).
 * Rows whose fate the NULL policies decide (a NULL key, or a NULL order under 'fail' or
 * 'drop') go straight to the batch writer, which applies them; rows are read through the
 * write's {@link RowCodec}, and durations measured on the injected {@link Clock}.
 */
final class StreamingDataWriter implements DataWriter<InternalRow> {
  private final KplexDataWriter out;
  private final WriteConf conf;
  private final WriteSchema schema;
  private final EpochStart start;
  private final int partitionId;
  private final int numPartitions;
  private final String heldFile;
  private final HeldRows held;
  private final RowCodec codec;
  private final Clock clock;
  private final UnsafeProjection toUnsafe;
  private final EventTimeGate<UnsafeRow> gate;
  private final long[] times = TaskTimes.none();
  /** The clock's nanos when the writer was ready, and when its first row came (0: none yet). */
  private final long readyAt;
  private long firstRowAt;
  /** When the task began (ms, its clock): its transaction, opened then or later, is no older. */
  private final long openedAtMs;

  StreamingDataWriter(KplexDataWriter out, WriteConf conf, WriteSchema schema, RowCodec codec, EpochStart start,
      int partitionId, int numPartitions, HeldRows held, String heldFile, Clock clock) {
    this.out = out;
    this.conf = conf;
    this.schema = schema;
    this.codec = codec;
    this.clock = clock;
    this.start = start;
    this.partitionId = partitionId;
    this.numPartitions = numPartitions;
    this.held = held;
    this.heldFile = heldFile;
    this.toUnsafe = UnsafeProjection.create(schema.schema);
    this.readFrom = bounds(start, true);
    this.readUntil = bounds(start, false);
    long started = clock.nanos();
    this.openedAtMs = clock.millis();
    try {
      List<java.util.Iterator<EventTimeGate.Item<UnsafeRow>>> runs = new ArrayList<>();
      List<HeldRows.Ref> mine = new ArrayList<>();
      for (String named : start.held()) {
        HeldRows.Ref ref = HeldRows.Ref.parse(named);
        int[] by = HeldRows.writtenBy(ref.file());
        boolean sameTasks = by != null && by[1] == numPartitions;
        if (sameTasks && by[0] != partitionId) continue;  // another task's virtual partitions
        if (sameTasks && ref.placed() && !HeldRows.absolute(ref.file())) {
          mine.add(ref);
          continue;
        }
        // From where its held rows begin: the rows before were released by an earlier epoch.
        HeldRows.Reader rows = held.open(held.resolve(ref.file()), schema.schema.length(),
            ref.placed() ? ref.position() : HeldRows.FIRST_ROW);
        readers.add(rows);
        runs.add(new Filtered(rows, sameTasks));
      }
      long[] sizes = mine.stream().mapToLong(HeldRows.Ref::rows).toArray();
      int mergeFrom = REWRITE_ALL ? 0 : mergedFrom(sizes, MAX_RUNS);
      for (int i = 0; i < mine.size(); i++) {
        HeldRows.Ref ref = mine.get(i);
        if (i < mergeFrom) {
          inPlace.add(new InPlace(ref));
        } else {
          HeldRows.Reader rows = held.open(held.resolve(ref.file()), schema.schema.length(), ref.position());
          readers.add(rows);
          runs.add(new Filtered(rows, true));
        }
      }
      this.pending = new Spilling(conf.faults.pendingMemoryBytes > 0 ? conf.faults.pendingMemoryBytes
          : PENDING_MEMORY_BYTES);
      this.gate = new EventTimeGate<>(start.marks(), start.partitions(), start.idle(), conf.maxDelayMs, start.releaseAll(),
          merged(runs), inPlace, pending, new Out()).judgingHeld(row -> readBefore(row, item(row)));
    } catch (RuntimeException | Error e) {
      // A held file that cannot be read (gone, of other columns): Spark gets no writer to
      // abort, so what this one opened, the held files' readers and the task's producer, is
      // let go here.
      for (HeldRows.Reader r : readers) {
        try {
          r.close();
        } catch (RuntimeException closing) {
          e.addSuppressed(closing);
        }
      }
      try {
        out.abort();
      } catch (RuntimeException aborting) {
        e.addSuppressed(aborting);
      }
      try {
        out.close();
      } catch (RuntimeException closing) {
        e.addSuppressed(closing);
      }
      throw e;
    }
    this.readyAt = clock.nanos();
    times[TaskTimes.HELD_READ] = TaskTimes.ms(started, readyAt);
  }

  /**
   * Records waiting for the commit are kept in memory up to this many bytes per task, then
   * spilled to a file on the executor's local disk (they are in order: written once, read
   * once at the commit).
   */
  static final long PENDING_MEMORY_BYTES = 64L << 20;

  /**
   * A task keeps at most this many of its held files in place; past it, they are merged into
   * one again (each file is read, from its head, in every micro-batch).
   */
  static final int MAX_RUNS = 12;

  /**
   * {@code -Dkplex.held.rewriteAll=true}: every held file is merged again in every micro-batch
   * (what kplex did before files stayed in place), for the benchmark to compare against.
   */
  private static final boolean REWRITE_ALL = Boolean.getBoolean("kplex.held.rewriteAll");

  /**
   * Of a task's held files in place, oldest first, with the rows each still holds: the index
   * from which they are merged with this micro-batch's held rows into its new file (their
   * count: none). The newest files are merged while each older one holds at most twice what
   * the newer ones merged so far hold, so that files grow geometrically: a held record is
   * rewritten a logarithmic number of times, not in every micro-batch, and a micro-batch's
   * cost follows what it reads and releases, not everything held.
   */
  static int mergedFrom(long[] rows, int maxRuns) {
    int k = rows.length;
    if (k > maxRuns) return 0;
    if (k < 2 || rows[k - 2] > 2 * rows[k - 1]) return k;
    long merged = rows[k - 1];
    int from = k - 1;
    while (from > 0 && rows[from - 1] <= 2 * merged) {
      from--;
      merged += rows[from];
    }
    return from;
  }

  /** The task's held files left in place (read only as far as they are released). */
  private final List<InPlace> inPlace = new ArrayList<>();

  /** A held file of this task's own left in place: read from where the last epoch stopped. */
  private final class InPlace implements EventTimeGate.Run<UnsafeRow> {
    private final HeldRows.Ref ref;
    private final HeldRows.Reader rows;
    private EventTimeGate.Item<UnsafeRow> head;
    private long headAt;
    private long taken;

    InPlace(HeldRows.Ref ref) {
      this.ref = ref;
      this.rows = held.open(held.resolve(ref.file()), schema.schema.length(), ref.position());
      readers.add(rows);
      read();
    }

    private void read() {
      headAt = rows.position();
      head = rows.hasNext() ? item(rows.next()) : null;
    }

    @Override
    public EventTimeGate.Item<UnsafeRow> head() {
      return head;
    }

    @Override
    public void advance() {
      taken++;
      read();
    }

    /** What it still holds after the commit, as the next mark names it, or null (nothing). */
    HeldRows.Ref left() {
      return head == null ? null : new HeldRows.Ref(ref.file(), headAt, Math.max(1, ref.rows() - taken));
    }
  }

  /** The held files being read (closed at the commit, or on abort). */
  private final List<HeldRows.Reader> readers = new ArrayList<>();
  private final Spilling pending;

  /** A held file's records of this task's virtual partitions, as gate items. */
  private final class Filtered implements java.util.Iterator<EventTimeGate.Item<UnsafeRow>> {
    private final java.util.Iterator<UnsafeRow> rows;
    private final boolean mineOnly;
    private EventTimeGate.Item<UnsafeRow> next;

    Filtered(java.util.Iterator<UnsafeRow> rows, boolean mineOnly) {
      this.rows = rows;
      this.mineOnly = mineOnly;
      advance();
    }

    private void advance() {
      next = null;
      while (next == null && rows.hasNext()) {
        EventTimeGate.Item<UnsafeRow> e = item(rows.next());
        if (mineOnly || owner(e.vp()) == partitionId) next = e;
      }
    }

    @Override
    public boolean hasNext() {
      return next != null;
    }

    @Override
    public EventTimeGate.Item<UnsafeRow> next() {
      EventTimeGate.Item<UnsafeRow> e = next;
      advance();
      return e;
    }
  }

  /** The runs (each in order) merged into one sequence in order: one file, or several when the tasks changed. */
  static <T> java.util.Iterator<EventTimeGate.Item<T>> merged(List<java.util.Iterator<EventTimeGate.Item<T>>> runs) {
    if (runs.size() == 1) return runs.get(0);
    java.util.PriorityQueue<Object[]> heads = new java.util.PriorityQueue<>(Math.max(1, runs.size()),
        (a, b) -> EventTimeGate.ORDER.compare(item(a), item(b)));
    for (java.util.Iterator<EventTimeGate.Item<T>> run : runs) {
      if (run.hasNext()) heads.add(new Object[] {run.next(), run});
    }
    return new java.util.Iterator<>() {
      @Override
      public boolean hasNext() {
        return !heads.isEmpty();
      }

      @Override
      @SuppressWarnings("unchecked")
      public EventTimeGate.Item<T> next() {
        Object[] head = heads.poll();
        java.util.Iterator<EventTimeGate.Item<T>> run = (java.util.Iterator<EventTimeGate.Item<T>>) head[1];
        if (run.hasNext()) heads.add(new Object[] {run.next(), run});
        return (EventTimeGate.Item<T>) head[0];
      }
    };
  }

  @SuppressWarnings("unchecked")
  private static <T> EventTimeGate.Item<T> item(Object[] head) {
    return (EventTimeGate.Item<T>) head[0];
  }

  /**
   * The records waiting for the commit: in memory up to {@code memoryBytes}, then all of
   * them in a file on the local disk, in order (written as they come, read once at the commit).
   */
  private final class Spilling implements EventTimeGate.Pending<UnsafeRow> {
    private final long memoryBytes;
    private final List<EventTimeGate.Item<UnsafeRow>> memory = new ArrayList<>();
    private long bytes;
    private java.io.File file;
    private HeldRows.Writer spill;
    private HeldRows.Reader reading;
    private long spilled;

    Spilling(long memoryBytes) {
      this.memoryBytes = memoryBytes;
    }

    @Override
    public void add(EventTimeGate.Item<UnsafeRow> item) {
      if (spill != null) {
        spill.add(item.payload());
        spilled++;
        return;
      }
      memory.add(item);
      // The row, and the key and value bytes the item keeps beside it.
      bytes += 2L * item.payload().getSizeInBytes() + 64;
      if (bytes > memoryBytes) {
        try {
          file = java.io.File.createTempFile("kplex-pending-", ".rows");
          spill = new HeldRows.Writer(file.getPath(), new java.io.DataOutputStream(
              new java.io.BufferedOutputStream(new java.io.FileOutputStream(file), 1 << 16)));
        } catch (java.io.IOException e) {
          throw Errors.heldWrite(String.valueOf(file), e);
        }
        for (EventTimeGate.Item<UnsafeRow> e : memory) spill.add(e.payload());
        spilled += memory.size();
        memory.clear();
      }
    }

    @Override
    public java.util.Iterator<EventTimeGate.Item<UnsafeRow>> drain() {
      if (spill == null) return memory.iterator();
      spill.close();
      try {
        reading = new HeldRows.Reader(file.getPath(), new java.io.DataInputStream(new java.io.BufferedInputStream(
            new java.io.FileInputStream(file), 1 << 16)), schema.schema.length(), -1);
      } catch (java.io.IOException e) {
        throw Errors.heldRead(file.getPath(), e);
      }
      return new Filtered(reading, true);
    }

    long spilled() {
      return spilled;
    }

    /** Removes the spill file (after the commit, or on abort). */
    void clear() {
      if (reading != null) reading.close();
      if (spill != null && reading == null) {
        try {
          spill.close();
        } catch (RuntimeException e) {
          // abandoned: the file goes below
        }
      }
      if (file != null && !file.delete()) file.deleteOnExit();
    }
  }

  private int owner(int vp) {
    return owner(vp, numPartitions);
  }

  /**
   * The task Spark's hash partitioning gives a virtual partition (the clustering
   * expression's value): pmod(Murmur3(vp, seed 42), tasks), as {@code HashPartitioning}.
   */
  static int owner(int vp, int numPartitions) {
    int h = Murmur3_x86_32.hashInt(vp, 42);
    return ((h % numPartitions) + numPartitions) % numPartitions;
  }

  private EventTimeGate.Item<UnsafeRow> item(UnsafeRow row) {
    byte[] k = codec.key(row);
    return new EventTimeGate.Item<>(row, codec.order(row), k, codec.value(row),
        Placement.virtualPartition(k, conf.virtualPartitions));
  }

  @Override
  public void write(InternalRow row) {
    if (firstRowAt == 0) {
      firstRowAt = clock.nanos();
      times[TaskTimes.SORT] = TaskTimes.ms(readyAt, firstRowAt);
    }
    if (codec.nullsDecide(row)) {
      out.write(row);
      return;
    }
    UnsafeRow unsafe = (row instanceof UnsafeRow ? (UnsafeRow) row : toUnsafe.apply(row)).copy();
    EventTimeGate.Item<UnsafeRow> e = item(unsafe);
    if (owner(e.vp()) != partitionId) {
      throw Errors.streamingPlacement(e.vp(), partitionId, numPartitions);
    }
    if (schema.positioned()) {
      requireRead(unsafe);
      gate.add(e, unsafe.isNullAt(schema.orderedPartition) ? 0 : unsafe.getInt(schema.orderedPartition),
          unsafe.isNullAt(schema.highBefore) ? Long.MIN_VALUE : unsafe.getLong(schema.highBefore), readBefore(unsafe, e));
    } else {
      gate.add(e, 0, Long.MIN_VALUE);
    }
  }

  /**
   * Whether another writer of the table read this row's source record, and it was theirs to
   * write ({@link EpochStart#readBefore}); {@code item}: the row's virtual partition and order value.
   */
  private boolean readBefore(UnsafeRow row, EventTimeGate.Item<UnsafeRow> item) {
    if (start.readBefore().isEmpty() || schema.sourceOffset < 0 || row.isNullAt(schema.sourcePartition)
        || row.isNullAt(schema.sourceOffset)) {
      return false;
    }
    return start.readBefore(row.getInt(schema.sourcePartition), row.getLong(schema.sourceOffset), item.vp(), item.order());
  }

  /**
   * Fails on a row from an offset the epoch did not read of its source partition: its order
   * value would become the partition's high, and release records the partition has not
   * reached yet (and judge on-time ones late). Never expected; a guard, so that whatever
   * delivered it is named instead of hidden in a later batch's late records.
   */
  private void requireRead(UnsafeRow row) {
    if (schema.sourceOffset < 0 || row.isNullAt(schema.sourcePartition) || row.isNullAt(schema.sourceOffset)) return;
    int partition = row.getInt(schema.sourcePartition);
    long offset = row.getLong(schema.sourceOffset);
    boolean known = partition >= 0 && partition < readFrom.length;
    if (known ? offset < readFrom[partition] || offset >= readUntil[partition] : start.outside(partition, offset)) {
      throw Errors.rowOutsideEpoch(conf.table, start.lastEpoch() + 1, start.sourceTopic(), partition, offset,
          start.range(partition), codec.order(row));
    }
  }

  /** What the gate decides, done: written by the batch writer, or the late policy. */
  private final class Out implements EventTimeGate.Out<UnsafeRow> {
    @Override
    public void write(EventTimeGate.Item<UnsafeRow> item) {
      out.write(item.payload());
    }

    @Override
    public void late(EventTimeGate.Item<UnsafeRow> item, EventTime.Late why, long bound) {
      UnsafeRow row = item.payload();
      boolean positioned = schema.positioned();
      int partition = positioned ? row.getInt(schema.sourcePartition) : -1;
      long offset = positioned && schema.sourceOffset >= 0 ? row.getLong(schema.sourceOffset) : -1;
      switch (conf.latePolicy) {
        case DROP:
          return;
        case SIDE_TOPIC:
          Long timestamp = schema.sourceTimestamp >= 0 && !row.isNullAt(schema.sourceTimestamp)
              ? Math.floorDiv(row.getLong(schema.sourceTimestamp), 1000L) : null;
          out.sendLate(row, item.key(), item.vp(), item.order(), conf.lateTopic,
              positioned ? start.sourceTopic() : null, partition, offset, timestamp);
          return;
        default:
          throw Errors.lateStreamRecord(conf.table, KeyBytes.printable(item.key()), item.order(), item.vp(),
              why == EventTime.Late.BEHIND_PARTITION, bound, conf.maxDelayMs,
              positioned ? start.sourceTopic() : null, partition, offset);
      }
    }
  }

  @Override
  public WriterCommitMessage commit() {
    long committing = clock.nanos();
    if (firstRowAt != 0) times[TaskTimes.WRITE] = TaskTimes.ms(firstRowAt, committing);
    Map<Integer, Long> heldFrom = new HashMap<>();
    HeldRows.Writer[] holding = new HeldRows.Writer[1];
    List<String> files = new ArrayList<>();
    long heldCount = 0;
    try {
      gate.commit(e -> {
        UnsafeRow row = e.payload();
        if (holding[0] == null) holding[0] = held.writer(heldFile, schema.schema.length());
        if (schema.sourceOffset >= 0 && !row.isNullAt(schema.sourcePartition) && !row.isNullAt(schema.sourceOffset)) {
          holding[0].add(row, row.getInt(schema.sourcePartition), row.getLong(schema.sourceOffset));
        } else {
          holding[0].add(row);
        }
      });
      // Oldest first, the new file last: the order the next micro-batch merges them by.
      for (InPlace run : inPlace) {
        HeldRows.Ref left = run.left();
        if (left == null) continue;
        files.add(left.toString());
        heldCount += left.rows();
        if (schema.sourceOffset >= 0) {
          Map<Integer, Long> from = held.heldFrom(held.resolve(left.file()));
          if (from != null) from.forEach((p, o) -> heldFrom.merge(p, o, Math::min));
        }
      }
    } finally {
      if (holding[0] != null) holding[0].close();
      release();
    }
    if (holding[0] != null) {
      files.add(new HeldRows.Ref(held.relative(heldFile), HeldRows.FIRST_ROW, holding[0].rows()).toString());
      heldCount += holding[0].rows();
      holding[0].from().forEach((p, o) -> heldFrom.merge(p, o, Math::min));
    }
    KplexCommitMessage written = (KplexCommitMessage) out.commit();
    times[TaskTimes.COMMIT] = TaskTimes.ms(committing, clock.nanos());
    return new EpochCommitMessage(written, files, heldCount, gate.read(), gate.written(),
        gate.late(EventTime.Late.BEHIND_PARTITION), gate.late(EventTime.Late.BELOW_WRITTEN),
        gate.late(EventTime.Late.AFTER_IDLE), times, heldFrom, openedAtMs, pending.spilled(), gate.alreadyWritten());
  }

  /**
   * The epoch's range per source partition as arrays ({@link EpochStart#outside} per row
   * would look up two boxed maps): [from, until), an empty range for a partition not read;
   * no ranges (length 0) when the source gave none.
   */
  private final long[] readFrom;
  private final long[] readUntil;

  private static long[] bounds(EpochStart start, boolean from) {
    if (start.starts().isEmpty()) return new long[0];
    int size = java.util.Collections.max(start.starts().keySet()) + 1;
    for (int p : start.ends().keySet()) size = Math.max(size, p + 1);
    long[] out = new long[size];
    for (int p = 0; p < size; p++) {
      Long f = start.starts().get(p);
      Long u = start.ends().get(p);
      boolean read = f != null && u != null;
      out[p] = from ? (read ? f : Long.MAX_VALUE) : (read ? u : Long.MIN_VALUE);
    }
    return out;
  }

  /** Closes the held files read and removes the spill file. */
  private void release() {
    readers.forEach(HeldRows.Reader::close);
    readers.clear();
    pending.clear();
  }

  @Override
  public void abort() {
    try {
      release();
    } finally {
      out.abort();
    }
  }

  @Override
  public void close() {
    out.close();
  }
}
