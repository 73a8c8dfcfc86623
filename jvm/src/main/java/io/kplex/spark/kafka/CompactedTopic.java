package io.kplex.spark.kafka;

import io.kplex.spark.errors.Errors;
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
 * A compacted topic used as a key-value map: the latest record of a key is its value, a
 * tombstone deletes it. kplex keeps its table definitions ({@code _kplex_tables}) and its
 * commit log ({@code _kplex_commits}) this way. Its clients and clock are those of the
 * {@link KafkaTopics} it is made with; its reads go through the JVM's {@link LogView}s of the
 * topic's partitions, current as of the read.
 *
 * <p>Layout. Without a {@link Scope}, the topic has one partition. With one, each key belongs
 * to a scope (the commit log's: a table), and every key of a scope lives in one partition,
 * {@code murmur2(scope) mod N}: a read of one scope's keys reads that partition's view only,
 * so its cost follows that scope's records, not the whole log's. N is the topic's partition
 * count as recorded in the {@link #LAYOUT_KEY} record of partition 0 when the topic was first
 * written ({@link #SCOPED_PARTITIONS} for a topic kplex creates). A topic with one partition,
 * or whose partition 0 was written before it had a layout record (a kplex before scopes, or
 * partitions added by hand), keeps everything in partition 0 (N = 1) until {@link #spread}
 * moves it. Keys of one scope stay in one partition, so the offsets of a scope's records
 * keep their order (a claim's take-over marker against a pending commit, say).
 */
public final class CompactedTopic {
  /** The key of partition 0's record that says over how many partitions scopes are spread. */
  public static final String LAYOUT_KEY = "_layout";
  /** The partitions of a scoped topic kplex creates. */
  public static final int SCOPED_PARTITIONS = 16;

  /** The scope of a key, or of a key prefix (null: a prefix that spans every scope). */
  public interface Scope {
    String of(String keyOrPrefix);
  }

  private final KafkaTopics kafka;
  private final String topic;
  private final Scope scope;
  /**
   * The topic's description as this object last took it for a read, and when (System.nanoTime).
   * Reads within {@link #DESCRIPTION_REUSE_MS} of it take it again instead of asking the
   * broker: a driver's commit reads the commit log two or three times within milliseconds
   * (the mark, the claim check), and a description is a round trip on a connection the
   * commit shares. What it gives a read is the topic's id (a topic deleted and created again
   * is read afresh) and partition count; the records are still read up to the end offset of
   * the moment, so a read sees every record acknowledged before it began. A topic not found
   * is asked again at once. Only a scoped topic's (the commit log's, read through an object
   * made for one commit or one look-up); a topic of one partition is described every read.
   */
  private java.util.Optional<org.apache.kafka.clients.admin.TopicDescription> described = java.util.Optional.empty();
  private long describedAtNanos;
  /** How long a read reuses the description an earlier read of this object took. */
  static final long DESCRIPTION_REUSE_MS = 250;

  public CompactedTopic(KafkaTopics kafka, String topic) {
    this(kafka, topic, null);
  }

  public CompactedTopic(KafkaTopics kafka, String topic, Scope scope) {
    this.kafka = kafka;
    this.topic = topic;
    this.scope = scope;
  }

  public String name() {
    return topic;
  }

  /** The latest value of every key (read to the end offset), deleted keys left out; empty if no topic. */
  public Map<String, byte[]> readAll() {
    return view(null, latest -> {
      Map<String, byte[]> out = new HashMap<>();
      latest.forEach((key, e) -> {
        if (!LAYOUT_KEY.equals(key)) out.put(key, e.lived().value());
      });
      return out;
    });
  }

  /** The latest value of every key of scope {@code name} (a table's records, in the partition that holds them). */
  public Map<String, byte[]> readScope(String name) {
    return view(name, latest -> {
      Map<String, byte[]> out = new HashMap<>();
      latest.forEach((key, e) -> {
        if (scope == null || name.equals(scope.of(key))) out.put(key, e.lived().value());
      });
      return out;
    });
  }

  /** The partition that holds scope {@code name}'s records (0 if the topic does not exist). */
  public int partitionOf(String name) {
    java.util.Optional<org.apache.kafka.clients.admin.TopicDescription> described = kafka.describe(topic);
    int n = described.isEmpty() ? 1 : layout(described.get());
    return n == 1 ? 0 : ofScope(name, n);
  }

  /** Where scope {@code name} lives: the topic's layout (over how many partitions), its partition, that partition's live keys. */
  public record Where(int partitions, int partition, int liveKeys) {}

  public Where where(String name) {
    java.util.Optional<org.apache.kafka.clients.admin.TopicDescription> described = describedForRead();
    int n = described.isEmpty() ? 1 : layout(described.get());
    int p = n == 1 ? 0 : ofScope(name, n);
    return new Where(n, p, LogView.of(kafka, topic, p).read(kafka, described, Map::size));
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
    return view(prefix, latest -> {
      Map<String, Lived> out = new HashMap<>();
      withPrefix(latest, prefix).forEach((key, e) -> out.put(key, e.lived()));
      return out;
    });
  }

  /** The latest value of every key that starts with one of {@code prefixes} (a table's records, say). */
  public Map<String, byte[]> readPrefixes(String... prefixes) {
    java.util.Set<String> scopes = new java.util.HashSet<>();
    for (String prefix : prefixes) scopes.add(scope == null ? "" : java.util.Objects.toString(scope.of(prefix), "\u0000"));
    // One read when the prefixes share a scope (one table's records: its partition), as usual.
    String[] groups = scopes.size() == 1 ? new String[] {prefixes.length == 0 ? null : prefixes[0]} : prefixes;
    Map<String, byte[]> out = new HashMap<>();
    for (String by : groups) {
      out.putAll(view(by, latest -> {
        Map<String, byte[]> found = new HashMap<>();
        for (String prefix : prefixes) {
          withPrefix(latest, prefix).forEach((key, e) -> found.put(key, e.lived().value()));
        }
        return found;
      }));
    }
    return out;
  }

  /** The keys of a sorted map that start with {@code prefix}: a range, read in what it holds. */
  private static <V> java.util.SortedMap<String, V> withPrefix(java.util.NavigableMap<String, V> sorted,
      String prefix) {
    return sorted.subMap(prefix, true, prefix + Character.MAX_VALUE, false);
  }

  /** The latest value of {@code key} and the offset of that record; empty if deleted or never written. */
  public java.util.Optional<Map.Entry<Long, byte[]>> latest(String key) {
    return view(key, latest -> java.util.Optional.ofNullable(latest.get(key))
        .map(e -> Map.entry(e.latestOffset(), e.lived().value())));
  }

  /**
   * As {@link #latest}, for {@code key} and every key that starts with {@code prefix}, in one
   * read: the two must be of one scope (one table's records).
   */
  public Map<String, Map.Entry<Long, byte[]>> latest(String key, String prefix) {
    return view(key, latest -> {
      Map<String, Map.Entry<Long, byte[]>> out = new HashMap<>();
      LogView.Entry one = latest.get(key);
      if (one != null) out.put(key, Map.entry(one.latestOffset(), one.lived().value()));
      withPrefix(latest, prefix).forEach((k, e) -> out.put(k, Map.entry(e.latestOffset(), e.lived().value())));
      return out;
    });
  }

  /** The topic's description for a read: the one this object took within {@link #DESCRIPTION_REUSE_MS}, else the broker's. */
  private java.util.Optional<org.apache.kafka.clients.admin.TopicDescription> describedForRead() {
    synchronized (this) {
      if (scope != null && described.isPresent()
          && System.nanoTime() - describedAtNanos < DESCRIPTION_REUSE_MS * 1_000_000L) {
        return described;
      }
    }
    long asked = System.nanoTime();
    java.util.Optional<org.apache.kafka.clients.admin.TopicDescription> now = kafka.describe(topic);
    synchronized (this) {
      described = now;
      describedAtNanos = asked;
    }
    return now;
  }

  /**
   * {@code reader} over the latest record of every live key of the partition that holds
   * {@code keyOrPrefix}'s scope (null, or a prefix of no scope: of every partition, each key
   * from the partition it belongs to), read to the log's end offset of now: this JVM's
   * {@link LogView}s read only what was appended since their last read, so a read costs what
   * changed, not the topic's history.
   */
  private <T> T view(String keyOrPrefix, java.util.function.Function<java.util.NavigableMap<String, LogView.Entry>, T> reader) {
    java.util.Optional<org.apache.kafka.clients.admin.TopicDescription> described = describedForRead();
    int n = described.isEmpty() ? 1 : layout(described.get());
    String of = keyOrPrefix == null || scope == null ? null : scope.of(keyOrPrefix);
    if (n == 1 || of != null) {
      return LogView.of(kafka, topic, n == 1 ? 0 : ofScope(of, n)).read(kafka, described, reader);
    }
    java.util.TreeMap<String, LogView.Entry> all = new java.util.TreeMap<>();
    for (int p = 0; p < n; p++) {
      int partition = p;
      LogView.of(kafka, topic, p).read(kafka, described, latest -> {
        // A key copied out of partition 0 by a spread may linger there until its tombstone.
        latest.forEach((key, e) -> {
          if (ofKey(key, n) == partition) all.put(key, e);
        });
        return null;
      });
    }
    return reader.apply(java.util.Collections.unmodifiableNavigableMap(all));
  }

  /** The partition of a key (by its scope) when scopes are spread over {@code n} partitions. */
  private int ofKey(String key, int n) {
    if (n == 1 || LAYOUT_KEY.equals(key)) return 0;
    String of = scope.of(key);
    return ofScope(of == null ? key : of, n);
  }

  /** The partition of scope {@code name} when scopes are spread over {@code n} partitions. */
  public static int ofScope(String name, int n) {
    return org.apache.kafka.common.utils.Utils.toPositive(
        org.apache.kafka.common.utils.Utils.murmur2(name.getBytes(StandardCharsets.UTF_8))) % n;
  }

  /**
   * The layout writes use, by (settings, clients, topic), once known to be spread (a spread
   * topic never goes back to one partition): a write need not describe the topic first. A
   * one-partition layout is looked up at every write, so that a JVM writes where readers look
   * once the topic is spread.
   */
  private static final Map<java.util.List<Object>, Integer> WRITES = new java.util.concurrent.ConcurrentHashMap<>();

  /** Layouts known to be spread, by (settings, clients, topic, topic id): they never go back to one partition. */
  private static final Map<java.util.List<Object>, Integer> SPREAD = new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * Over how many partitions this topic's scopes are spread ({@link CompactedTopic}'s layout):
   * 1 without a scope or with one partition; else as partition 0's layout record says; a
   * topic never written yet gets one now, over all its partitions; else (written before it had
   * one) 1.
   */
  private int layout(org.apache.kafka.clients.admin.TopicDescription d) {
    int count = d.partitions().size();
    if (scope == null || count == 1) return 1;
    java.util.List<Object> key = java.util.List.of(kafka.conf(), kafka.clients(), topic, String.valueOf(d.topicId()));
    Integer known = SPREAD.get(key);
    if (known != null) return known;
    LogView first = LogView.of(kafka, topic, 0);
    byte[] recorded = first.read(kafka, java.util.Optional.of(d), latest -> {
      LogView.Entry e = latest.get(LAYOUT_KEY);
      return e == null ? null : e.lived().value();
    });
    int n;
    if (recorded != null) {
      n = Integer.parseInt(new String(recorded, StandardCharsets.UTF_8).trim());
    } else if (first.neverWritten()) {
      n = count;  // a new topic: spread over all its partitions, from its first record on
      try {
        send(Map.of(LAYOUT_KEY, Integer.toString(n).getBytes(StandardCharsets.UTF_8)), 0);
      } catch (io.kplex.spark.errors.KplexException e) {
        // A reader that may not write (kplex status, say): the first writer records the same layout.
      }
    } else {
      n = 1;
    }
    if (n > 1) {
      SPREAD.put(key, n);
      WRITES.put(java.util.List.of(kafka.conf(), kafka.clients(), topic), n);
    }
    return n;
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
    kafka.ensureTopic(topic, scope == null ? 1 : SCOPED_PARTITIONS, Map.of(TopicConfig.CLEANUP_POLICY_CONFIG,
        TopicConfig.CLEANUP_POLICY_COMPACT, TopicConfig.SEGMENT_MS_CONFIG, "600000", TopicConfig.SEGMENT_BYTES_CONFIG,
        Integer.toString(16 << 20), TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, "0.1"));
    Integer spread = scope == null ? Integer.valueOf(1) : WRITES.get(java.util.List.of(kafka.conf(), kafka.clients(), topic));
    int n = spread != null ? spread
        : layout(kafka.describe(topic).orElseThrow(() -> io.kplex.spark.errors.Errors.unknownTopic(topic)));
    int partition = -1;
    for (String key : entries.keySet()) {
      int p = ofKey(key, n);
      if (partition >= 0 && p != partition) {
        throw new IllegalArgumentException("kplex: keys of two scopes written together to " + topic + ": " + entries.keySet());
      }
      partition = p;
    }
    return send(entries, Math.max(partition, 0));
  }

  /**
   * Moves a topic written before scopes (everything in partition 0) to the scoped layout over
   * {@code partitions} partitions: adds the partitions, copies every live key whose scope
   * belongs to another partition there (in the order of their latest records, each with its
   * latest record's timestamp, so that a scope's records keep their order and a claim its
   * age), records the layout in partition 0, then deletes the originals of the copies. Readers
   * use partition 0 until the layout record is there, the scopes' partitions from then on (an
   * original not deleted yet is never read: a key is read from its scope's partition). Run it
   * with no writer at work ({@code CommitLog.spread} checks). Cut short, it is run again.
   * Returns the keys moved; -1 if there was nothing to do (already spread, or no topic yet,
   * which kplex creates spread).
   */
  public int spread(int partitions) {
    if (scope == null) throw new IllegalStateException("kplex: topic " + topic + " has no scopes to spread");
    org.apache.kafka.clients.admin.TopicDescription d = kafka.describe(topic).orElse(null);
    if (d == null || layout(d) > 1) return -1;
    if (d.partitions().size() < partitions) {
      kafka.call("ALTER", Errors.Resource.topic(topic), () -> kafka.admin().createPartitions(Map.of(topic,
          org.apache.kafka.clients.admin.NewPartitions.increaseTo(partitions))).all()
          .get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS));
      d = kafka.describe(topic).orElseThrow(() -> io.kplex.spark.errors.Errors.unknownTopic(topic));
    }
    List<Map.Entry<String, LogView.Entry>> live = LogView.of(kafka, topic, 0).read(kafka, java.util.Optional.of(d),
        latest -> new ArrayList<>(latest.entrySet()));
    live.sort(java.util.Comparator.comparingLong(e -> e.getValue().latestOffset()));
    // A spread cut short left copies there; a key deleted in partition 0 since must not live on.
    java.util.Set<String> liveKeys = new java.util.HashSet<>();
    for (Map.Entry<String, LogView.Entry> e : live) liveKeys.add(e.getKey());
    for (int p = 1; p < partitions; p++) {
      Map<String, byte[]> gone = new LinkedHashMap<>();
      LogView.of(kafka, topic, p).read(kafka, java.util.Optional.of(d), latest -> {
        latest.keySet().forEach(key -> {
          if (!liveKeys.contains(key)) gone.put(key, null);
        });
        return null;
      });
      if (!gone.isEmpty()) send(gone, p);
    }
    Map<String, byte[]> moved = new LinkedHashMap<>();
    kafka.call("WRITE", Errors.Resource.topic(topic), () -> {
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      for (Map.Entry<String, LogView.Entry> e : live) {
        int p = ofKey(e.getKey(), partitions);
        if (p == 0) continue;
        sent.add(kafka.producer().send(new ProducerRecord<>(topic, p, e.getValue().lived().latestMs(),
            e.getKey().getBytes(StandardCharsets.UTF_8), e.getValue().lived().value())));
        moved.put(e.getKey(), null);
      }
      for (Future<RecordMetadata> f : sent) f.get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      return null;
    });
    send(Map.of(LAYOUT_KEY, Integer.toString(partitions).getBytes(StandardCharsets.UTF_8)), 0);
    if (!moved.isEmpty()) send(moved, 0);
    return moved.size();
  }

  /** Writes {@code entries} in their order to {@code partition}, in one round trip; the offset of the last. */
  private long send(Map<String, byte[]> entries, int partition) {
    return kafka.call("WRITE", Errors.Resource.topic(topic), () -> {
      try {
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        entries.forEach((key, value) -> sent.add(kafka.producer()
            .send(new ProducerRecord<>(topic, partition, key.getBytes(StandardCharsets.UTF_8), value))));
        long last = -1;
        for (Future<RecordMetadata> f : sent) last = f.get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS).offset();
        return last;
      } catch (Exception e) {
        kafka.discardProducer();  // shared with the JVM's other statements: they get a new one
        throw e;
      }
    });
  }
}
