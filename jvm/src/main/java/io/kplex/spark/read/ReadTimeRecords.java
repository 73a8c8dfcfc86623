package io.kplex.spark.read;

import io.kplex.spark.conf.NullKeyPolicy;
import io.kplex.spark.conf.NullOrderPolicy;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.wire.KplexHeaders;
import io.kplex.spark.wire.Placement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * What both readers of a read-time table do to one source record: compute its key, order
 * value and virtual partition ({@link ReadExpressions}) into a row of
 * {@code DERIVED_SCHEMA}, apply the NULL policies, and handle a late record by
 * {@code kplex.late_policy}: fail the read, drop it (counted), or send it to
 * {@code kplex.late_topic} (counted; at least once: a retried task sends it again).
 * Whether a record is late is the caller's to judge ({@link EventTimeMerge#isLate}).
 */
final class ReadTimeRecords implements AutoCloseable {
  private final ReadConf conf;
  private final ReadExpressions.Evaluator eval;
  private final Map<String, UTF8String> topics = new HashMap<>();
  private Producer<byte[], byte[]> lateProducer;
  private volatile Exception lateFailure;
  long read;
  long lateDropped;
  long lateSent;

  ReadTimeRecords(ReadConf conf) {
    this.conf = conf;
    this.eval = conf.expressions.evaluator();
  }

  /** The record as a derived row (key, order, vp set), or null when a NULL policy drops it. */
  GenericInternalRow derive(ConsumerRecord<byte[], byte[]> r) {
    read++;
    GenericInternalRow row = RecordRows.row(r, topics.computeIfAbsent(r.topic(), UTF8String::fromString),
        RecordRows.DERIVED_COLUMNS);
    byte[] key = eval.key(row);
    Long order = eval.order(row);
    if (key == null) {
      if (conf.nullKey == NullKeyPolicy.DROP) return null;
      throw Errors.nullReadTimeKey(conf.table, conf.expressions.keyText,
          r.topic(), r.partition(), r.offset());
    }
    if (order == null) {
      if (conf.nullOrder == NullOrderPolicy.DROP) return null;
      throw Errors.nullReadTimeOrder(conf.table, conf.expressions.orderText,
          r.topic(), r.partition(), r.offset());
    }
    row.update(0, key);
    row.update(7, Placement.virtualPartition(key, conf.virtualPartitions));
    row.update(8, order);
    return row;
  }

  static int vp(GenericInternalRow derived) {
    return derived.getInt(7);
  }

  static long order(GenericInternalRow derived) {
    return derived.getLong(8);
  }

  /** A late record of a virtual partition the read keeps: by the late policy. */
  void late(ConsumerRecord<byte[], byte[]> r, GenericInternalRow derived, long partitionMax) {
    switch (conf.latePolicy) {
      case DROP:
        lateDropped++;
        return;
      case SIDE_TOPIC:
        sendLate(r, vp(derived), order(derived));
        lateSent++;
        return;
      default:
        throw Errors.lateRecord(conf.table, r.topic(), r.partition(), r.offset(), order(derived), partitionMax,
            conf.maxDelayMs);
    }
  }

  /** The source record as it was, plus kplex.vp, kplex.order and where it came from (topic, partition, offset). */
  private void sendLate(ConsumerRecord<byte[], byte[]> r, int vp, long order) {
    if (lateFailure != null) throw Errors.lateTopicFailed(conf.lateTopic, lateFailure);
    if (lateProducer == null) {
      lateProducer = conf.clients.producer(conf.kafka.producer());
    }
    RecordHeaders headers = new RecordHeaders();
    for (org.apache.kafka.common.header.Header h : r.headers()) {
      if (!KplexHeaders.isLateRecords(h.key())) headers.add(h);
    }
    headers.add(KplexHeaders.VP, KplexHeaders.ascii(vp));
    headers.add(KplexHeaders.ORDER, KplexHeaders.ascii(order));
    headers.add(KplexHeaders.SOURCE_TOPIC, r.topic().getBytes(java.nio.charset.StandardCharsets.UTF_8));
    headers.add(KplexHeaders.SOURCE_PARTITION, KplexHeaders.ascii(r.partition()));
    headers.add(KplexHeaders.SOURCE_OFFSET, KplexHeaders.ascii(r.offset()));
    lateProducer.send(new ProducerRecord<>(conf.lateTopic, null, r.timestamp() < 0 ? null : r.timestamp(),
        r.key(), r.value(), headers), (metadata, e) -> {
          if (e != null && lateFailure == null) lateFailure = e;
        });
  }

  /** At the end of the read: every late record sent reached the side topic. */
  void finish() {
    if (lateProducer != null) {
      lateProducer.flush();
      if (lateFailure != null) throw Errors.lateTopicFailed(conf.lateTopic, lateFailure);
    }
  }

  @Override
  public void close() {
    if (lateProducer != null) lateProducer.close(Duration.ofSeconds(30));
  }
}
