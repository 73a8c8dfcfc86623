package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.AccessErrors;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.testing.FaultInjection;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.txn.ReadByOthers;
import io.kplex.spark.txn.TaskTransaction;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.KplexHeaders;
import io.kplex.spark.wire.Placement;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * Writes one task's rows (whole virtual partitions, sorted by order value, so each
 * virtual partition's rows come in its order) with one Kafka producer. Sends are
 * asynchronous: the first failed send is recorded by the callback, {@link #write} fails fast
 * on it, and {@link #commit} checks, flushes and checks again, so nothing is reported
 * committed before it is on the broker.
 *
 * <p>Delivery is the writer's type, chosen once per task by {@link #open} (Flink's
 * {@code ExactlyOnceKafkaWriter extends KafkaWriter}): {@link AtLeastOnceDataWriter} sends
 * and flushes; {@link ExactlyOnceDataWriter} sends inside a Kafka transaction the task
 * opens and leaves open for the driver to commit. Rows are read through the write's
 * {@link RowCodec}; the producer comes from {@link KafkaClients}.
 */
abstract sealed class KplexDataWriter implements DataWriter<InternalRow>
    permits AtLeastOnceDataWriter, ExactlyOnceDataWriter {

  /** How long closing a producer waits for what is still in flight. */
  static final Duration CLOSE_GRACE = Duration.ofSeconds(30);

  final WriteConf conf;
  final int partitionId;
  final Producer<byte[], byte[]> producer;
  private final RowCodec codec;
  private final Header[] vpHeaders;
  private final long[] rowsPerVp;
  /** The virtual partitions of which a row went to the late topic, in this task's transaction. */
  private final boolean[] lateIn;
  /**
   * The offset of the last record acknowledged per physical partition (-1: none). Written
   * by the producer's I/O thread in callbacks, read after {@code flush()}, which waits for
   * every batch to complete after its callbacks ran.
   */
  private final long[] lastOffsets;
  private final Callback callback = this::acknowledged;
  private volatile Exception failure;
  private long dropped;
  private final FaultInjection faults;
  private final int faultAttempt;
  private long rows;
  /** Late records sent to the side topic (in an exactly-once write, in the task's transaction too). */
  private long sideRows;
  /** A batch write's late records, dropped or sent to the side topic ({@link #late}). */
  private long late;
  /**
   * A batch write's floor per virtual partition: the largest order value the table holds
   * there (another writer's); a record below it is late. Null: none (a stream's gate judges).
   */
  private final long[] floor;
  /** The largest order value this task wrote per virtual partition (Long.MIN_VALUE: none). */
  private final long[] highs;
  /** What a batch write from a kplex table read of its source ({@link RowCodec#read}). */
  private final SourceReads reads = new SourceReads();
  /**
   * What other writers of the table (streams, earlier INSERTs) read of a batch write's source:
   * a row from there at or below its virtual partition's floor was written then ({@link #skipping}).
   */
  private ReadByOthers readBefore = ReadByOthers.NONE;
  private long alreadyWritten;

  KplexDataWriter(WriteConf conf, RowCodec codec, int partitionId, int stageAttempt, int attempt,
      Map<Integer, Long> floor, Producer<byte[], byte[]> producer) {
    this.conf = conf;
    this.codec = codec;
    this.partitionId = partitionId;
    this.faultAttempt = stageAttempt == 0 ? attempt : -1;  // faults hit the first stage attempt only
    this.faults = conf.faults.any() ? conf.faults : null;
    this.vpHeaders = new Header[conf.virtualPartitions];
    this.rowsPerVp = new long[conf.virtualPartitions];
    this.lateIn = new boolean[conf.virtualPartitions];
    this.highs = new long[conf.virtualPartitions];
    Arrays.fill(highs, Long.MIN_VALUE);
    if (floor == null || floor.isEmpty()) {
      this.floor = null;
    } else {
      this.floor = new long[conf.virtualPartitions];
      for (int vp = 0; vp < this.floor.length; vp++) this.floor[vp] = EventTime.Marks.of(floor).written(vp);
    }
    this.lastOffsets = new long[conf.physicalPartitions];
    Arrays.fill(lastOffsets, -1L);
    this.producer = producer;
  }

  /** The writer of the running Spark task (its attempt numbers from its {@link TaskContext}). */
  static KplexDataWriter forTask(WriteConf conf, RowCodec codec, int partitionId, Map<Integer, Long> floor,
      KafkaClients clients) {
    return forTask(conf, codec, partitionId, floor, clients, null);
  }

  /** A streaming task's writer: {@code epoch} lets its producer be kept for the next epoch. */
  static KplexDataWriter forTask(WriteConf conf, RowCodec codec, int partitionId, Map<Integer, Long> floor,
      KafkaClients clients, ExactlyOnceDataWriter.Epoch epoch) {
    TaskContext task = TaskContext.get();
    return open(conf, codec, partitionId, task == null ? 0 : task.stageAttemptNumber(),
        task == null ? 0 : task.attemptNumber(), floor, clients, epoch);
  }

  /**
   * The writer of one task, of the write's delivery: the one place that asks it.
   * {@code floor}: a batch write's largest order value per virtual partition already in
   * the table (null or empty: none).
   */
  static KplexDataWriter open(WriteConf conf, RowCodec codec, int partitionId, int stageAttempt, int attempt,
      Map<Integer, Long> floor, KafkaClients clients) {
    return open(conf, codec, partitionId, stageAttempt, attempt, floor, clients, null);
  }

  static KplexDataWriter open(WriteConf conf, RowCodec codec, int partitionId, int stageAttempt, int attempt,
      Map<Integer, Long> floor, KafkaClients clients, ExactlyOnceDataWriter.Epoch epoch) {
    return conf.exactlyOnce()
        ? new ExactlyOnceDataWriter(conf, codec, partitionId, stageAttempt, attempt, floor, clients, epoch)
        : new AtLeastOnceDataWriter(conf, codec, partitionId, stageAttempt, attempt, floor, clients);
  }

  /**
   * A batch write's rows that another writer of the table read from the same source
   * ({@code readBefore}) and that are at or below their virtual partition's floor were written
   * then (or were late then): they are skipped and counted, not written twice nor late (an
   * INSERT run again over the same records writes nothing).
   */
  final KplexDataWriter skipping(ReadByOthers readBefore) {
    this.readBefore = readBefore;
    return this;
  }

  /** Called before anything is sent: the exactly-once writer waits for its transaction to be open. */
  abstract void beforeSend();

  /**
   * Makes what the task sent durable ({@link #flush}) and returns what the driver commits:
   * the task's open transaction, or null (at least once, or nothing sent).
   */
  abstract TaskTransaction flushed();

  /** Ends the task after a failure: the exactly-once writer aborts its transaction. */
  @Override
  public abstract void abort();

  /** Closes the producer, waiting only for what must still reach the broker. */
  @Override
  public abstract void close();

  /** The error a failed send fails the task with (not an access error: those are named first). */
  RuntimeException sendError(Exception failure) {
    return Errors.sendFailed(conf.topic, failure);
  }

  private void acknowledged(RecordMetadata metadata, Exception e) {
    if (e != null) {
      fail(e);
    } else if (metadata.offset() > lastOffsets[metadata.partition()]) {
      lastOffsets[metadata.partition()] = metadata.offset();
    }
  }

  private synchronized void fail(Exception e) {
    if (failure == null) failure = e;
  }

  /** Whether a send failed. */
  final boolean failed() {
    return failure != null;
  }

  /** Throws the first failed send's error, if a send failed. */
  final void checkFailure() {
    Exception f = failure;
    if (f == null) return;
    KplexException access = AccessErrors.of(conf.kafka, f, "WRITE", Errors.Resource.topic(conf.topic));
    if (access != null) throw access;
    throw sendError(f);
  }

  /** Check for a failed send, flush, check again. */
  final void flush() {
    checkFailure();
    producer.flush();
    checkFailure();
  }

  /** Records sent, to the table's topic and to a side topic. */
  final long sent() {
    return rows + sideRows;
  }

  /** Per virtual partition written, the largest order value the task wrote there. */
  final Map<Integer, Long> written() {
    Map<Integer, Long> written = new HashMap<>();
    for (int vp = 0; vp < highs.length; vp++) {
      // (A virtual partition whose only rows are of order -2^63, or went to the late topic, is
      // in the transaction too: a commit Kafka cuts short names it among those to write again.)
      if (highs[vp] != Long.MIN_VALUE || rowsPerVp[vp] > 0 || lateIn[vp]) written.put(vp, highs[vp]);
    }
    return written;
  }

  @Override
  public final void write(InternalRow row) {
    beforeSend();
    checkFailure();
    codec.read(row, reads);
    byte[] keyBytes = codec.key(row);
    long orderValue = codec.order(row);
    if (!codec.admits(row, keyBytes, orderValue)) {
      dropped++;
      return;
    }
    int vp = Placement.virtualPartition(keyBytes, conf.virtualPartitions);
    if (floor != null && orderValue <= floor[vp] && !readBefore.isEmpty() && codec.readIn(row, readBefore, vp, orderValue)) {
      alreadyWritten++;
      return;
    }
    if (floor != null && orderValue < floor[vp]) {
      late(row, keyBytes, vp, orderValue);
      return;
    }
    if (orderValue > highs[vp]) highs[vp] = orderValue;
    // A Collection: ProducerRecord copies it into its own headers in one step.
    Header orderHeader = new RecordHeader(KplexHeaders.ORDER, KplexHeaders.ascii(orderValue));
    List<Header> headers = codec.userHeaders(row, 2);
    if (headers == null) {
      headers = Arrays.asList(vpHeader(vp), orderHeader);
    } else {
      headers.add(vpHeader(vp));
      headers.add(orderHeader);
    }
    producer.send(new ProducerRecord<>(conf.topic, Placement.physicalPartition(vp, conf.physicalPartitions),
        codec.timestamp(orderValue), keyBytes, codec.value(row), headers), callback);
    rowsPerVp[vp]++;
    rows++;
    if (faults != null) {
      faults.afterRow(partitionId, faultAttempt, rows, producer::flush);
    }
  }

  /**
   * A batch write's record below what the table already holds on its virtual partition
   * (written by another INSERT or a streaming query): the virtual partition never goes back,
   * so it meets {@code kplex.late_policy}.
   */
  private void late(InternalRow row, byte[] keyBytes, int vp, long orderValue) {
    switch (conf.latePolicy) {
      case DROP:
        dropped++;
        late++;
        return;
      case SIDE_TOPIC:
        sendLate(row, keyBytes, vp, orderValue, conf.lateTopic, null, -1, -1, null);
        late++;
        return;
      default:
        int partition = codec.sourcePartition(row);
        throw Errors.lateInsertRecord(conf.table, KeyBytes.printable(keyBytes), orderValue, vp, floor[vp],
            partition < 0 ? null : codec.sourceTopic, partition, codec.sourceOffset(row));
    }
  }

  /**
   * A streaming write's late record under {@code late_policy = side_topic}, inside this
   * task's transaction (exactly once), to {@code lateTopic}: its key bytes, value, headers
   * and timestamp (the source record's; null: the producer's clock), plus {@code kplex.vp},
   * {@code kplex.order} and, when known, where it came from ({@code kplex.source_topic},
   * {@code kplex.source_partition}, {@code kplex.source_offset}), as the contract gives
   * late records of read-time tables.
   */
  final void sendLate(InternalRow row, byte[] keyBytes, int vp, long orderValue, String lateTopic,
      String sourceTopic, int sourcePartition, long sourceOffset, Long timestampMs) {
    beforeSend();
    checkFailure();
    if (vp >= 0 && vp < lateIn.length) lateIn[vp] = true;
    List<Header> headers = codec.userHeaders(row, 5);
    if (headers == null) headers = new ArrayList<>(5);
    if (sourceTopic != null) headers.removeIf(h -> KplexHeaders.isLateRecords(h.key()));
    else headers.removeIf(h -> KplexHeaders.isReserved(h.key()));
    headers.add(vpHeader(vp));
    headers.add(new RecordHeader(KplexHeaders.ORDER, KplexHeaders.ascii(orderValue)));
    if (sourceTopic != null) {
      headers.add(new RecordHeader(KplexHeaders.SOURCE_TOPIC, sourceTopic.getBytes(StandardCharsets.UTF_8)));
      headers.add(new RecordHeader(KplexHeaders.SOURCE_PARTITION, KplexHeaders.ascii(sourcePartition)));
      headers.add(new RecordHeader(KplexHeaders.SOURCE_OFFSET, KplexHeaders.ascii(sourceOffset)));
    }
    producer.send(new ProducerRecord<>(lateTopic, null, timestampMs, keyBytes, codec.value(row), headers), (m, e) -> {
      if (e != null) fail(e);
    });
    sideRows++;
  }

  /** The kplex.vp header of a virtual partition, made once: the producer only reads headers. */
  private Header vpHeader(int vp) {
    Header h = vpHeaders[vp];
    if (h == null) {
      h = new RecordHeader(KplexHeaders.VP, KplexHeaders.ascii(vp));
      vpHeaders[vp] = h;
    }
    return h;
  }

  @Override
  public final WriterCommitMessage commit() {
    if (faults != null) {
      faults.beforeCommit(partitionId, faultAttempt);
    }
    TaskTransaction txn = flushed();
    return new KplexCommitMessage(partitionId, rowsPerVp, dropped, txn, lastOffsets, highs, reads.ranges(),
        alreadyWritten, late);
  }
}
