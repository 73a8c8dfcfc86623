package io.kplex.spark.kafka;

import io.kplex.spark.errors.Errors;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;

/**
 * A one-partition compacted topic used as a key-value map: the latest record of a key
 * is its value, a tombstone deletes it. kplex keeps its table definitions
 * ({@code _kplex_tables}) and its pending commits ({@code _kplex_commits}) this way. Its
 * clients and clock are those of the {@link KafkaTopics} it is made with.
 */
public final class CompactedTopic {
  private final KafkaTopics kafka;
  private final String topic;

  public CompactedTopic(KafkaTopics kafka, String topic) {
    this.kafka = kafka;
    this.topic = topic;
  }

  public String name() {
    return topic;
  }

  /** The latest value of every key (read to the end offset), deleted keys left out; empty if no topic. */
  public Map<String, byte[]> readAll() {
    Map<String, byte[]> latest = new HashMap<>();
    scan(r -> latest.put(new String(r.key(), StandardCharsets.UTF_8), r.value()));
    latest.values().removeIf(v -> v == null);
    return latest;
  }

  /**
   * The latest value of every key whose name starts with {@code prefix}, with the offset at
   * which the key was last (re)created, i.e. its first record after its last tombstone.
   */
  public Map<String, Map.Entry<Long, byte[]>> readPrefix(String prefix) {
    Map<String, Map.Entry<Long, byte[]>> out = new HashMap<>();
    readPrefixLived(prefix).forEach((key, lived) -> out.put(key, Map.entry(lived.offset(), lived.value())));
    return out;
  }

  /**
   * A key's life in the log: its latest value, the offset and timestamp of its first record
   * after its last tombstone (compaction may have removed earlier ones, so the earliest kept),
   * and the timestamp of its latest record.
   */
  public record Lived(long offset, long sinceMs, long latestMs, byte[] value) {}

  /** As {@link #readPrefix}, with when each key was (re)created and last written. */
  public Map<String, Lived> readPrefixLived(String prefix) {
    Map<String, Lived> latest = new HashMap<>();
    scan(r -> {
      String key = new String(r.key(), StandardCharsets.UTF_8);
      if (!key.startsWith(prefix)) return;
      if (r.value() == null) {
        latest.remove(key);
      } else {
        Lived was = latest.get(key);
        latest.put(key, was == null ? new Lived(r.offset(), r.timestamp(), r.timestamp(), r.value())
            : new Lived(was.offset(), was.sinceMs(), r.timestamp(), r.value()));
      }
    });
    return latest;
  }

  /** The latest value of {@code key} and the offset of that record; empty if deleted or never written. */
  public java.util.Optional<Map.Entry<Long, byte[]>> latest(String key) {
    byte[] wanted = key.getBytes(StandardCharsets.UTF_8);
    java.util.concurrent.atomic.AtomicReference<Map.Entry<Long, byte[]>> last =
        new java.util.concurrent.atomic.AtomicReference<>();
    scan(r -> {
      if (java.util.Arrays.equals(r.key(), wanted)) last.set(r.value() == null ? null : Map.entry(r.offset(), r.value()));
    });
    return java.util.Optional.ofNullable(last.get());
  }

  /** Hands every record, from the beginning to the end offset of now, to {@code each}; nothing if no topic. */
  private void scan(java.util.function.Consumer<ConsumerRecord<byte[], byte[]>> each) {
    if (kafka.partitionCount(topic).isEmpty()) {
      return;
    }
    TopicPartition tp = new TopicPartition(topic, 0);
    kafka.call("READ", "topic '" + topic + "'", () -> {
      try (Consumer<byte[], byte[]> consumer = kafka.clients().consumer(kafka.conf().consumer())) {
        consumer.assign(List.of(tp));
        consumer.seekToBeginning(List.of(tp));
        long end = consumer.endOffsets(List.of(tp)).get(tp);
        long deadline = kafka.clock().millis() + KafkaConf.ADMIN_TIMEOUT_MS;
        while (consumer.position(tp) < end) {
          if (kafka.clock().millis() > deadline) {
            throw Errors.metadataReadTimedOut(topic);
          }
          for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
            each.accept(r);
          }
        }
        // Nothing to commit: do not wait for the fetch still parked at the broker (up to
        // fetch.max.wait.ms, 500 ms, on every read of this topic).
        consumer.close(Duration.ZERO);
      }
      return null;
    });
  }

  /**
   * Writes (or, with a null value, deletes) one key, synchronously; creates the topic if
   * needed. Returns the record's offset.
   */
  public long put(String key, byte[] value) {
    Map<String, byte[]> one = new LinkedHashMap<>();
    one.put(key, value);
    return putAll(one);
  }

  /**
   * Writes (or deletes) these keys in their order, in one round trip: the log has one
   * partition, so a reader sees them in that order. Synchronous; creates the topic if needed.
   * Returns the offset of the last.
   */
  public long putAll(Map<String, byte[]> entries) {
    // Short segments: the log cleaner only compacts closed ones, and readers read it all.
    kafka.ensureTopic(topic, 1, Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT,
        TopicConfig.SEGMENT_MS_CONFIG, "600000"));
    return kafka.call("WRITE", "topic '" + topic + "'", () -> {
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      entries.forEach((key, value) -> sent.add(kafka.producer()
          .send(new ProducerRecord<>(topic, 0, key.getBytes(StandardCharsets.UTF_8), value))));
      long last = -1;
      for (Future<RecordMetadata> f : sent) last = f.get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS).offset();
      return last;
    });
  }
}
