package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.OrderValues;
import io.kplex.spark.wire.Placement;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.unsafe.hash.Murmur3_x86_32;

/**
 * One task of a streaming epoch: the batch writer ({@link KplexDataWriter}) behind an
 * event-time gate that keeps each virtual partition in order across micro-batches (G2).
 * The task's rows arrive sorted (order value, key bytes, value), as in a batch write; the
 * records it held back in the previous epoch, sorted the same way, are merged in. Each
 * record then:
 * <ul>
 *   <li>below the epoch's late bound (everything below it was released earlier): is late,
 *       and meets {@code kplex.late_policy} (fail, drop and count, or the side topic);</li>
 *   <li>below the release bound (the watermark: largest order value seen up to the last
 *       epoch, minus {@code kplex.max_delay_ms}): is written now;</li>
 *   <li>when the source read all there was ({@link io.kplex.spark.stream.HeldRelease}),
 *       below the largest order value of the task's own rows of this epoch minus
 *       {@code kplex.max_delay_ms} (at most the watermark this epoch sets): is written at
 *       the task's commit, after the rows above (rows arrive sorted, so that largest value
 *       is known only at the end);</li>
 *   <li>else: is held back, in a file of the query's checkpoint ({@link HeldRows}).</li>
 * </ul>
 * The driver makes the largest bound a task released below the next epoch's late bound.
 * Rows with a NULL key, or a NULL order under 'fail'/'drop', go straight to the batch
 * writer, which applies the NULL policies.
 */
final class StreamingDataWriter implements DataWriter<InternalRow> {
  private final KplexDataWriter out;
  private final WriteConf conf;
  private final WriteSchema schema;
  private final int partitionId;
  private final int numPartitions;
  private final String heldFile;
  private final HeldRows held;
  private final long lateBound;
  private final long releaseBound;
  private final boolean releaseWithBatch;
  private final KeyBytes.Encoder key;
  private final boolean keyIsBytes;
  private final OrderValues.Reader order;
  private final boolean binaryValue;
  private final UnsafeProjection toUnsafe;
  private final ArrayDeque<Entry> previous;
  /** Rows at or above the release bound, in order: released at commit, or held. */
  private final List<Entry> pending = new ArrayList<>();
  private final List<UnsafeRow> holding = new ArrayList<>();
  private long maxSeen = Long.MIN_VALUE;
  private long maxReleased = Long.MIN_VALUE;
  private long late;
  private final long[] times = TaskTimes.none();
  /** System.nanoTime() when the writer was ready, and when its first row came (0: none yet). */
  private final long readyAt;
  private long firstRowAt;

  /** A row with what it is ordered by. */
  private record Entry(UnsafeRow row, long order, byte[] key, byte[] value) {}

  private static final Comparator<Entry> ORDER = (a, b) ->
      OrderValues.compare(a.order, a.key, a.value, b.order, b.key, b.value);

  StreamingDataWriter(KplexDataWriter out, WriteConf conf, WriteSchema schema, int partitionId, int numPartitions,
      long lateBound, long releaseBound, boolean releaseWithBatch, HeldRows held, List<String> heldBefore,
      String heldFile) {
    this.out = out;
    this.conf = conf;
    this.schema = schema;
    this.partitionId = partitionId;
    this.numPartitions = numPartitions;
    this.lateBound = lateBound;
    this.releaseBound = releaseBound;
    this.releaseWithBatch = releaseWithBatch;
    this.held = held;
    this.heldFile = heldFile;
    this.key = KeyBytes.encoderFor(schema.type(schema.key));
    this.keyIsBytes = schema.type(schema.key) instanceof BinaryType;
    this.order = OrderValues.readerFor(schema.type(schema.order));
    this.binaryValue = schema.type(schema.value) instanceof BinaryType;
    this.toUnsafe = UnsafeProjection.create(schema.schema);
    long started = System.nanoTime();
    List<Entry> mine = new ArrayList<>();
    for (String file : heldBefore) {
      int[] by = HeldRows.writtenBy(file);
      boolean sameTasks = by != null && by[1] == numPartitions;
      if (sameTasks && by[0] != partitionId) continue;  // another task's virtual partitions
      for (UnsafeRow row : held.read(file, schema.schema.length())) {
        Entry e = entry(row);
        if (sameTasks || owner(Placement.virtualPartition(e.key, conf.virtualPartitions)) == partitionId) mine.add(e);
      }
    }
    mine.sort(ORDER);
    this.previous = new ArrayDeque<>(mine);
    this.readyAt = System.nanoTime();
    times[TaskTimes.HELD_READ] = TaskTimes.ms(started, readyAt);
  }

  /** The event-time watermark: the largest order value seen minus the delay bound (no overflow). */
  static long watermark(long maxSeen, long maxDelayMs) {
    return maxSeen < Long.MIN_VALUE + maxDelayMs ? Long.MIN_VALUE : maxSeen - maxDelayMs;
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

  private Entry entry(UnsafeRow row) {
    long o = row.isNullAt(schema.order) ? Long.MIN_VALUE : order.read(row, schema.order);
    byte[] k = keyIsBytes ? row.getBinary(schema.key) : key.encode(row, schema.key);
    byte[] v = row.isNullAt(schema.value) ? null
        : binaryValue ? row.getBinary(schema.value) : row.getUTF8String(schema.value).getBytes();
    return new Entry(row, o, k, v);
  }

  @Override
  public void write(InternalRow row) {
    if (firstRowAt == 0) {
      firstRowAt = System.nanoTime();
      times[TaskTimes.SORT] = TaskTimes.ms(readyAt, firstRowAt);
    }
    if (row.isNullAt(schema.key) || (row.isNullAt(schema.order) && !"first".equals(conf.nullOrder))) {
      out.write(row);
      return;
    }
    UnsafeRow unsafe = (row instanceof UnsafeRow ? (UnsafeRow) row : toUnsafe.apply(row)).copy();
    Entry e = entry(unsafe);
    int vp = Placement.virtualPartition(e.key, conf.virtualPartitions);
    if (owner(vp) != partitionId) {
      throw Errors.streamingPlacement(vp, partitionId, numPartitions);
    }
    maxSeen = Math.max(maxSeen, e.order);
    while (!previous.isEmpty() && ORDER.compare(previous.peek(), e) <= 0) {
      place(previous.poll());
    }
    emit(e);
  }

  /** A row of this epoch's input: late, or placed. */
  private void emit(Entry e) {
    if (e.order < lateBound) {
      late++;
      switch (conf.latePolicy) {
        case "drop":
          return;
        case "side_topic":
          out.sendLate(e.row, e.key, conf.lateTopic);
          return;
        default:
          throw Errors.lateRecord(conf.table, KeyBytes.printable(e.key), e.order, lateBound, conf.maxDelayMs);
      }
    }
    place(e);
  }

  /**
   * Released now (below the release bound) or at commit. A row held back from the last
   * epoch is never late: it was on time when it came, and it is at or above the bound its
   * task released below, so it still follows everything written for its virtual partition
   * (the late bound, the largest bound any task released below, may be above it).
   */
  private void place(Entry e) {
    if (e.order < releaseBound) {
      release(e);
    } else {
      pending.add(e);
    }
  }

  private void release(Entry e) {
    out.write(e.row);
    maxReleased = Math.max(maxReleased, e.order);
  }

  @Override
  public WriterCommitMessage commit() {
    long committing = System.nanoTime();
    if (firstRowAt != 0) times[TaskTimes.WRITE] = TaskTimes.ms(firstRowAt, committing);
    while (!previous.isEmpty()) place(previous.poll());
    long bound = releaseBound;
    if (releaseWithBatch) bound = Math.max(bound, watermark(maxSeen, conf.maxDelayMs));
    for (Entry e : pending) {
      if (e.order < bound) {
        release(e);
      } else {
        holding.add(e.row);
      }
    }
    String file = null;
    if (!holding.isEmpty()) {
      held.write(heldFile, schema.schema.length(), holding);
      file = heldFile;
    }
    KplexCommitMessage written = (KplexCommitMessage) out.commit();
    times[TaskTimes.COMMIT] = TaskTimes.ms(committing, System.nanoTime());
    return new EpochCommitMessage(written, file, holding.size(), maxSeen, maxReleased, bound, late, times);
  }

  @Override
  public void abort() {
    out.abort();
  }

  @Override
  public void close() {
    out.close();
  }
}
