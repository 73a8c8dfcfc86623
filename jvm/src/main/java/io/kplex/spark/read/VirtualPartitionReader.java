package io.kplex.spark.read;

import io.kplex.spark.conf.KplexOptions;
import io.kplex.spark.conf.ReadConf;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.wire.KplexHeaders;
import io.kplex.spark.wire.Placement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One virtual partition of a read-time table: reads every partition of the source (its
 * planned offset ranges) with one consumer, computes each record's key, order value and
 * virtual partition ({@link ReadExpressions}), and releases this partition's records in
 * event-time order through an {@link EventTimeMerge}. A late record of this virtual
 * partition meets {@code kplex.late_policy}: fail the read, drop it (counted), or send it
 * to {@code kplex.late_topic} (counted; at least once: a retried task sends it again).
 *
 * <p>Memory: only this partition's records that wait for the watermark are held. When
 * more than {@link #MAX_BUFFERED} wait, the source partitions that do not hold the
 * watermark back are paused until it moves.
 */
final class VirtualPartitionReader implements PartitionReader<InternalRow> {
  private static final Duration POLL = Duration.ofMillis(500);
  static final int MAX_BUFFERED = 100_000;

  private final ReadConf conf;
  private final int vp;
  private final OffsetRange[] ranges;
  private final TopicPartition[] tps;
  private final Map<TopicPartition, Integer> index = new HashMap<>();
  private final UTF8String topic;
  private final KafkaConsumer<byte[], byte[]> consumer;
  private final ReadExpressions.Evaluator eval;
  private final EventTimeMerge<InternalRow> merge;
  private KafkaProducer<byte[], byte[]> lateProducer;
  private volatile Exception lateFailure;
  private InternalRow current;
  private long lastProgress = System.currentTimeMillis();
  private long read;
  private long lateDropped;
  private long lateSent;
  private boolean paused;

  VirtualPartitionReader(ReadConf conf, VirtualRange range) {
    this.conf = conf;
    this.vp = range.vp;
    this.ranges = range.sources;
    this.tps = new TopicPartition[ranges.length];
    this.topic = UTF8String.fromString(conf.topic);
    this.eval = conf.expressions.evaluator();
    this.merge = new EventTimeMerge<>(ranges.length, conf.maxDelayMs);
    this.consumer = new KafkaConsumer<>(conf.kafka.consumer());
    List<TopicPartition> assigned = new ArrayList<>();
    for (int i = 0; i < ranges.length; i++) {
      tps[i] = new TopicPartition(ranges[i].topic, ranges[i].partition);
      index.put(tps[i], i);
      if (ranges[i].from >= ranges[i].until) {
        merge.end(i);
      } else {
        assigned.add(tps[i]);
      }
    }
    consumer.assign(assigned);
    for (int i = 0; i < ranges.length; i++) {
      if (!merge.ended(i)) consumer.seek(tps[i], ranges[i].from);
    }
  }

  @Override
  public boolean next() {
    while (true) {
      EventTimeMerge.Entry<InternalRow> e = merge.poll();
      if (e != null) {
        current = e.payload;
        return true;
      }
      if (merge.allEnded()) {
        finishLate();
        return false;
      }
      fetch();
    }
  }

  private void fetch() {
    flowControl();
    ConsumerRecords<byte[], byte[]> records = consumer.poll(POLL);
    if (!records.isEmpty()) {
      lastProgress = System.currentTimeMillis();
    }
    for (TopicPartition tp : records.partitions()) {
      int i = index.get(tp);
      for (ConsumerRecord<byte[], byte[]> r : records.records(tp)) {
        if (merge.ended(i) || r.offset() >= ranges[i].until) {
          break;
        }
        read++;
        handle(i, r);
      }
    }
    for (int i = 0; i < ranges.length; i++) {
      if (!merge.ended(i) && consumer.position(tps[i]) >= ranges[i].until) {
        merge.end(i);
        consumer.pause(List.of(tps[i]));
      }
    }
    if (records.isEmpty() && System.currentTimeMillis() - lastProgress > KplexPartitionReader.STALL_MS) {
      throw new KplexException("READ_STALLED", "no progress reading " + conf.topic + " for vp " + vp
          + " for " + KplexPartitionReader.STALL_MS / 1000 + " s.");
    }
  }

  private void handle(int i, ConsumerRecord<byte[], byte[]> r) {
    GenericInternalRow row = RecordRows.row(r, topic, RecordRows.DERIVED_COLUMNS);
    byte[] key = eval.key(row);
    Long order = eval.order(row);
    if (key == null) {
      if (conf.nullKey.equals("drop")) return;
      throw Errors.nullKey(KplexOptions.KEY + " = " + conf.expressions.keyText,
          order == null ? Long.MIN_VALUE : order);
    }
    if (order == null) {
      if (conf.nullOrder.equals("drop")) return;
      throw Errors.nullOrder(KplexOptions.ORDER + " = " + conf.expressions.orderText,
          "at " + r.topic() + "-" + r.partition() + " offset " + r.offset());
    }
    int recordVp = Placement.virtualPartition(key, conf.virtualPartitions);
    if (merge.isLate(i, order)) {
      if (recordVp == vp) late(r, key, order, merge.high(i));
      return;
    }
    merge.accept(i, order);
    if (recordVp == vp) {
      row.update(0, key);
      row.update(7, recordVp);
      row.update(8, order);
      merge.add(new EventTimeMerge.Entry<>(order, key, r.value(), r.partition(), r.offset(), row));
    }
  }

  private void late(ConsumerRecord<byte[], byte[]> r, byte[] key, long order, long partitionMax) {
    switch (conf.latePolicy) {
      case "drop":
        lateDropped++;
        return;
      case "side_topic":
        sendLate(r, order);
        lateSent++;
        return;
      default:
        throw Errors.lateRecord(conf.table, r.topic(), r.partition(), r.offset(), order, partitionMax,
            conf.maxDelayMs);
    }
  }

  /** The source record as it was, plus kplex.vp, kplex.order and where it came from. */
  private void sendLate(ConsumerRecord<byte[], byte[]> r, long order) {
    if (lateFailure != null) throw Errors.lateTopicFailed(conf.lateTopic, lateFailure);
    if (lateProducer == null) {
      lateProducer = new KafkaProducer<>(conf.kafka.producer());
    }
    RecordHeaders headers = new RecordHeaders(r.headers().toArray());
    headers.add(KplexHeaders.VP, KplexHeaders.ascii(vp));
    headers.add(KplexHeaders.ORDER, KplexHeaders.ascii(order));
    headers.add(KplexHeaders.SOURCE_PARTITION, KplexHeaders.ascii(r.partition()));
    headers.add(KplexHeaders.SOURCE_OFFSET, KplexHeaders.ascii(r.offset()));
    lateProducer.send(new ProducerRecord<>(conf.lateTopic, null, r.timestamp() < 0 ? null : r.timestamp(),
        r.key(), r.value(), headers), (metadata, e) -> {
          if (e != null && lateFailure == null) lateFailure = e;
        });
  }

  private void finishLate() {
    if (lateProducer != null) {
      lateProducer.flush();
      if (lateFailure != null) throw Errors.lateTopicFailed(conf.lateTopic, lateFailure);
    }
  }

  /** Bounds the buffer: with too much waiting, read only the partitions that hold the watermark. */
  private void flowControl() {
    boolean full = merge.buffered() > MAX_BUFFERED;
    if (!full && !paused) return;
    List<TopicPartition> pause = new ArrayList<>();
    List<TopicPartition> resume = new ArrayList<>();
    for (int i = 0; i < ranges.length; i++) {
      if (merge.ended(i)) continue;
      (full && !merge.holdsWatermark(i) ? pause : resume).add(tps[i]);
    }
    consumer.pause(pause);
    consumer.resume(resume);
    paused = !pause.isEmpty();
  }

  @Override
  public InternalRow get() {
    return current;
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    return ReadMetrics.values(read, lateDropped, lateSent);
  }

  @Override
  public void close() {
    // Nothing to commit: do not wait for the fetch still parked at the broker.
    consumer.close(Duration.ZERO);
    if (lateProducer != null) lateProducer.close(Duration.ofSeconds(30));
  }
}
