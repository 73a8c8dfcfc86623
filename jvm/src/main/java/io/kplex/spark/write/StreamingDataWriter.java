package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.time.Clock;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.time.EventTimeGate;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.Placement;
import java.util.ArrayList;
import java.util.List;
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
    long started = clock.nanos();
    List<EventTimeGate.Item<UnsafeRow>> mine = new ArrayList<>();
    for (String file : start.held()) {
      int[] by = HeldRows.writtenBy(file);
      boolean sameTasks = by != null && by[1] == numPartitions;
      if (sameTasks && by[0] != partitionId) continue;  // another task's virtual partitions
      for (UnsafeRow row : held.read(held.resolve(file), schema.schema.length())) {
        EventTimeGate.Item<UnsafeRow> e = item(row);
        if (sameTasks || owner(e.vp()) == partitionId) mine.add(e);
      }
    }
    this.gate = new EventTimeGate<>(start.marks(), start.partitions(), start.idle(), conf.maxDelayMs, start.releaseAll(),
        mine,
        new Out());
    this.readyAt = clock.nanos();
    times[TaskTimes.HELD_READ] = TaskTimes.ms(started, readyAt);
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
          unsafe.isNullAt(schema.highBefore) ? Long.MIN_VALUE : unsafe.getLong(schema.highBefore));
    } else {
      gate.add(e, 0, Long.MIN_VALUE);
    }
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
    if (start.outside(partition, offset)) {
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
              positioned ? start.sourceTopic() + "-" + partition + " offset " + offset : null);
      }
    }
  }

  @Override
  public WriterCommitMessage commit() {
    long committing = clock.nanos();
    if (firstRowAt != 0) times[TaskTimes.WRITE] = TaskTimes.ms(firstRowAt, committing);
    List<EventTimeGate.Item<UnsafeRow>> holding = gate.commit();
    String file = null;
    if (!holding.isEmpty()) {
      List<UnsafeRow> rows = new ArrayList<>(holding.size());
      for (EventTimeGate.Item<UnsafeRow> e : holding) rows.add(e.payload());
      held.write(heldFile, schema.schema.length(), rows);
      file = held.relative(heldFile);
    }
    KplexCommitMessage written = (KplexCommitMessage) out.commit();
    times[TaskTimes.COMMIT] = TaskTimes.ms(committing, clock.nanos());
    return new EpochCommitMessage(written, file, holding.size(), gate.read(), gate.written(),
        gate.late(EventTime.Late.BEHIND_PARTITION), gate.late(EventTime.Late.BELOW_WRITTEN),
        gate.late(EventTime.Late.AFTER_IDLE), times);
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
