package io.kplex.spark.kafka;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.TopicConfig;

/**
 * A one-partition compacted topic used as a key-value map: the latest record of a key
 * is its value, a tombstone deletes it. kplex keeps its table definitions
 * ({@code _kplex_tables}) and its pending commits ({@code _kplex_commits}) this way. Its
 * clients and clock are those of the {@link KafkaTopics} it is made with; its reads go
 * through the JVM's {@link LogView} of the topic, current as of the read.
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
    return view(latest -> {
      Map<String, byte[]> out = new HashMap<>();
      latest.forEach((key, e) -> out.put(key, e.lived().value()));
      return out;
    });
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
    return view(latest -> {
      Map<String, Lived> out = new HashMap<>();
      withPrefix(latest, prefix).forEach((key, e) -> out.put(key, e.lived()));
      return out;
    });
  }

  /** The latest value of every key that starts with one of {@code prefixes} (a table's records, say). */
  public Map<String, byte[]> readPrefixes(String... prefixes) {
    return view(latest -> {
      Map<String, byte[]> out = new HashMap<>();
      for (String prefix : prefixes) withPrefix(latest, prefix).forEach((key, e) -> out.put(key, e.lived().value()));
      return out;
    });
  }

  /** The keys of a sorted map that start with {@code prefix}: a range, read in what it holds. */
  private static <V> java.util.SortedMap<String, V> withPrefix(java.util.NavigableMap<String, V> sorted,
      String prefix) {
    return sorted.subMap(prefix, true, prefix + Character.MAX_VALUE, false);
  }

  /** The latest value of {@code key} and the offset of that record; empty if deleted or never written. */
  public java.util.Optional<Map.Entry<Long, byte[]>> latest(String key) {
    return view(latest -> java.util.Optional.ofNullable(latest.get(key))
        .map(e -> Map.entry(e.latestOffset(), e.lived().value())));
  }

  /**
   * {@code reader} over the latest record of every live key, read to the log's end offset of
   * now: this JVM's {@link LogView} of the topic reads only what was appended since its last
   * read, so a read costs what changed, not the topic's history.
   */
  private <T> T view(java.util.function.Function<java.util.NavigableMap<String, LogView.Entry>, T> reader) {
    return LogView.of(kafka, topic).read(kafka, reader);
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
    // Short segments, cleaned once a tenth is dirty: the log cleaner only compacts closed
    // segments, and a new reader (another driver) reads whatever it has not cleaned yet.
    kafka.ensureTopic(topic, 1, Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT,
        TopicConfig.SEGMENT_MS_CONFIG, "600000", TopicConfig.SEGMENT_BYTES_CONFIG, Integer.toString(16 << 20),
        TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, "0.1"));
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
