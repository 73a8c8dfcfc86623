package io.kplex.spark.write;

import io.kplex.spark.conf.NullKeyPolicy;
import io.kplex.spark.conf.NullOrderPolicy;
import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.AccessErrors;
import io.kplex.spark.testing.FaultInjection;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.txn.ExactlyOnceCommitter;
import io.kplex.spark.txn.TaskTransaction;
import io.kplex.spark.txn.TransactionResumer;
import io.kplex.spark.txn.TransactionalIds;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.KplexHeaders;
import io.kplex.spark.wire.OrderValues;
import io.kplex.spark.wire.Placement;
import java.time.Duration;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.util.ArrayData;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.types.BinaryType;

/**
 * Writes one task's rows (whole virtual partitions, sorted by order value, so each
 * virtual partition's rows come in its order) with one Kafka producer. Sends are asynchronous: the first failed send is
 * recorded by the callback, {@link #write} fails fast on it, and {@link #commit} checks,
 * flushes and checks again, so nothing is reported committed before it is on the broker.
 * Exactly once: the rows go into a Kafka transaction that this task opens and leaves
 * open; the driver commits it ({@link ExactlyOnceCommitter}).
 */
public final class KplexDataWriter implements DataWriter<InternalRow> {

  private final WriteConf conf;
  private final WriteSchema schema;
  private final int partitionId;
  private final KeyBytes.Encoder key;
  private final OrderValues.Reader order;
  private final boolean timeOrder;
  private final boolean binaryValue;
  private final Header[] vpHeaders;
  private final long[] rowsPerVp;
  private final KafkaProducer<byte[], byte[]> producer;
  /**
   * The offset of the last record acknowledged per physical partition (-1: none). Written
   * by the producer's I/O thread in callbacks, read after {@code flush()}, which waits for
   * every batch to complete after its callbacks ran.
   */
  private final long[] lastOffsets;
  private final Callback callback = this::acknowledged;
  private volatile Exception failure;
  private long dropped;

  private final String transactionalId;
  private final FaultInjection faults;
  private final int faultAttempt;
  private long rows;
  /** Late records sent to the side topic: they too are in the task's transaction. */
  private long sideRows;
  private TaskTransaction txn;
  /** Exactly once: initTransactions and beginTransaction, under way; null once done (or at least once). */
  private CompletableFuture<Void> opening;
  private RuntimeException openFailure;

  /**
   * A batch write's floor per virtual partition: the largest order value the table holds
   * there (another writer's); a record below it is late. Null: none (a stream's gate judges).
   */
  private final long[] floor;
  /** The largest order value this task wrote per virtual partition (Long.MIN_VALUE: none). */
  private final long[] highs;

  KplexDataWriter(WriteConf conf, WriteSchema schema, int partitionId, int stageAttempt, int attempt) {
    this(conf, schema, partitionId, stageAttempt, attempt, null);
  }

  KplexDataWriter(WriteConf conf, WriteSchema schema, int partitionId, int stageAttempt, int attempt,
      Map<Integer, Long> floor) {
    this.conf = conf;
    this.schema = schema;
    this.partitionId = partitionId;
    this.faultAttempt = stageAttempt == 0 ? attempt : -1;  // faults hit the first stage attempt only
    this.faults = conf.faults.any() ? conf.faults : null;
    this.key = KeyBytes.encoderFor(schema.type(schema.key));
    this.order = OrderValues.readerFor(schema.type(schema.order));
    this.timeOrder = OrderValues.isTime(schema.type(schema.order));
    this.binaryValue = schema.type(schema.value) instanceof BinaryType;
    this.vpHeaders = new Header[conf.virtualPartitions];
    this.rowsPerVp = new long[conf.virtualPartitions];
    this.highs = new long[conf.virtualPartitions];
    Arrays.fill(highs, Long.MIN_VALUE);
    if (floor == null || floor.isEmpty()) {
      this.floor = null;
    } else {
      this.floor = new long[conf.virtualPartitions];
      for (int vp = 0; vp < this.floor.length; vp++) this.floor[vp] = EventTime.Marks.of(floor).written(vp);
    }
    this.lastOffsets = new long[conf.physicalPartitions];
    java.util.Arrays.fill(lastOffsets, -1L);
    Map<String, Object> props = conf.kafka.producer();
    this.transactionalId = conf.exactlyOnce()
        ? TransactionalIds.of(conf.table, partitionId, stageAttempt, attempt) : null;
    if (transactionalId != null) {
      props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
      props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, (int) ExactlyOnceCommitter.transactionTimeoutMs(conf.kafka));
    }
    this.producer = new KafkaProducer<>(props);
    // Exactly once: the transaction opens (two broker round trips, and waiting for the
    // coordinator) while Spark sorts the task's rows; the first send waits for it.
    this.opening = conf.exactlyOnce() ? CompletableFuture.runAsync(() -> {
      producer.initTransactions();
      producer.beginTransaction();
    }, OPENERS) : null;
  }

  /** Threads that open transactions, idle ones ending after a minute. */
  private static final ExecutorService OPENERS = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "kplex-open-transaction");
    t.setDaemon(true);
    return t;
  });

  /** Waits for the transaction to be open; fails naming the transactional id if it could not be. */
  private void awaitOpen() {
    if (openFailure != null) throw openFailure;
    if (opening == null) return;
    try {
      opening.join();
    } catch (CompletionException e) {
      openFailure = AccessErrors.rethrow(conf.kafka, e.getCause(), "WRITE", "transactional id '" + transactionalId + "'");
      throw openFailure;
    } finally {
      opening = null;
    }
  }

  private void acknowledged(org.apache.kafka.clients.producer.RecordMetadata metadata, Exception e) {
    if (e != null) {
      fail(e);
    } else if (metadata.offset() > lastOffsets[metadata.partition()]) {
      lastOffsets[metadata.partition()] = metadata.offset();
    }
  }

  private synchronized void fail(Exception e) {
    if (failure == null) failure = e;
  }

  private void checkFailure() {
    if (failure != null) {
      KplexException access = AccessErrors.of(conf.kafka, failure, "WRITE", "topic '" + conf.topic + "'");
      if (access != null) throw access;
      if (conf.exactlyOnce() && io.kplex.spark.txn.CommitFailure.of(failure).aborted()) {
        throw Errors.taskFenced(conf.table, transactionalId, failure);
      }
      throw Errors.sendFailed(conf.topic, failure);
    }
  }

  @Override
  public void write(InternalRow row) {
    awaitOpen();
    checkFailure();
    boolean nullOrder = row.isNullAt(schema.order);
    if (row.isNullAt(schema.key)) {
      if (conf.nullKey == NullKeyPolicy.DROP) {
        dropped++;
        return;
      }
      throw Errors.nullKey(schema.name(schema.key), nullOrder ? Long.MIN_VALUE : order.read(row, schema.order));
    }
    byte[] keyBytes = key.encode(row, schema.key);
    long orderValue;
    if (nullOrder) {
      if (conf.nullOrder == NullOrderPolicy.DROP) {
        dropped++;
        return;
      } else if (conf.nullOrder == NullOrderPolicy.FAIL) {
        throw Errors.nullOrder(schema.name(schema.order), KeyBytes.printable(keyBytes));
      }
      orderValue = Long.MIN_VALUE;
    } else {
      orderValue = order.read(row, schema.order);
    }
    int vp = Placement.virtualPartition(keyBytes, conf.virtualPartitions);
    if (floor != null && orderValue < floor[vp]) {
      late(row, keyBytes, vp, orderValue);
      return;
    }
    if (orderValue > highs[vp]) highs[vp] = orderValue;
    // A Collection: ProducerRecord copies it into its own headers in one step.
    List<Header> headers;
    Header orderHeader = new RecordHeader(KplexHeaders.ORDER, KplexHeaders.ascii(orderValue));
    if (schema.headers >= 0 && !row.isNullAt(schema.headers)) {
      headers = userHeaders(row.getArray(schema.headers));
      headers.add(vpHeader(vp));
      headers.add(orderHeader);
    } else {
      headers = Arrays.asList(vpHeader(vp), orderHeader);
    }
    byte[] value = row.isNullAt(schema.value) ? null
        : binaryValue ? row.getBinary(schema.value) : row.getUTF8String(schema.value).getBytes();
    Long timestamp = timeOrder && orderValue >= 0 ? orderValue : null;
    producer.send(new ProducerRecord<>(conf.topic, Placement.physicalPartition(vp, conf.physicalPartitions),
        timestamp, keyBytes, value, headers), callback);
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
        return;
      case SIDE_TOPIC:
        sendLate(row, keyBytes, vp, orderValue, conf.lateTopic, null, -1, -1, null);
        return;
      default:
        throw Errors.lateStreamRecord(conf.table, KeyBytes.printable(keyBytes), orderValue, vp, false, floor[vp],
            conf.maxDelayMs, null);
    }
  }

  /**
   * A streaming write's late record under {@code late_policy = side_topic}, inside this
   * task's transaction, to {@code lateTopic}: its key bytes, value, headers and timestamp
   * (the source record's; null: the producer's clock), plus {@code kplex.vp},
   * {@code kplex.order} and, when known, where it came from ({@code kplex.source_topic},
   * {@code kplex.source_partition}, {@code kplex.source_offset}), as the contract gives
   * late records of read-time tables.
   */
  void sendLate(InternalRow row, byte[] keyBytes, int vp, long orderValue, String lateTopic, String sourceTopic,
      int sourcePartition, long sourceOffset, Long timestampMs) {
    awaitOpen();
    checkFailure();
    byte[] value = row.isNullAt(schema.value) ? null
        : binaryValue ? row.getBinary(schema.value) : row.getUTF8String(schema.value).getBytes();
    List<Header> headers = schema.headers >= 0 && !row.isNullAt(schema.headers)
        ? userHeaders(row.getArray(schema.headers)) : new ArrayList<>(5);
    headers.add(vpHeader(vp));
    headers.add(new RecordHeader(KplexHeaders.ORDER, KplexHeaders.ascii(orderValue)));
    if (sourceTopic != null) {
      headers.add(new RecordHeader(KplexHeaders.SOURCE_TOPIC, sourceTopic.getBytes(StandardCharsets.UTF_8)));
      headers.add(new RecordHeader(KplexHeaders.SOURCE_PARTITION, KplexHeaders.ascii(sourcePartition)));
      headers.add(new RecordHeader(KplexHeaders.SOURCE_OFFSET, KplexHeaders.ascii(sourceOffset)));
    }
    producer.send(new ProducerRecord<>(lateTopic, null, timestampMs, keyBytes, value, headers), (m, e) -> {
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

  private static List<Header> userHeaders(ArrayData array) {
    List<Header> headers = new ArrayList<>(array.numElements() + 2);
    for (int i = 0; i < array.numElements(); i++) {
      InternalRow h = array.getStruct(i, 2);
      if (h.isNullAt(0)) continue;
      String name = h.getUTF8String(0).toString();
      if (KplexHeaders.isReserved(name)) continue;
      headers.add(new RecordHeader(name, h.isNullAt(1) ? null : h.getBinary(1)));
    }
    return headers;
  }

  @Override
  public WriterCommitMessage commit() {
    if (faults != null) {
      faults.beforeCommit(partitionId, faultAttempt);
    }
    if (opening != null && rows + sideRows == 0) {
      // Exactly once, and nothing sent: no transaction to wait for, nor for the driver to
      // commit (close abandons the one still opening).
      return new KplexCommitMessage(partitionId, rowsPerVp, dropped, null, lastOffsets, highs);
    }
    awaitOpen();
    checkFailure();
    producer.flush();
    checkFailure();
    if (conf.exactlyOnce() && rows + sideRows > 0) {
      // A transaction with no record never started on the broker: nothing to commit.
      var id = TransactionResumer.idAndEpoch(producer);
      Map<Integer, Long> written = new HashMap<>();
      for (int vp = 0; vp < highs.length; vp++) {
        if (highs[vp] != Long.MIN_VALUE) written.put(vp, highs[vp]);
      }
      txn = new TaskTransaction(transactionalId, id.producerId, id.epoch, written);
    }
    return new KplexCommitMessage(partitionId, rowsPerVp, dropped, txn, lastOffsets, highs);
  }

  @Override
  public void abort() {
    if (conf.exactlyOnce()) {
      try {
        awaitOpen();
        producer.abortTransaction();
      } catch (RuntimeException e) {
        // Fenced or broken: the driver fences this transaction when it aborts the job.
      }
    }
    // At least once: records already sent stay; the task's retry sends them again.
  }

  @Override
  public void close() {
    if (openFailure != null || opening != null) {
      // Never opened, or still opening (the task failed first): nothing of it to keep.
      producer.close(Duration.ZERO);
      return;
    }
    if (txn != null) {
      // A flushed transaction stays open for the driver to commit: close at once, since a
      // graceful close would abort it.
      producer.close(Duration.ZERO);
      return;
    }
    if (conf.exactlyOnce() && rows + sideRows == 0 && failure == null) {
      // A transaction that never sent a record: nothing is on the broker, nothing to wait for
      // (a graceful close would wait on it).
      producer.close(Duration.ZERO);
      return;
    }
    producer.close(Duration.ofSeconds(30));
  }
}
