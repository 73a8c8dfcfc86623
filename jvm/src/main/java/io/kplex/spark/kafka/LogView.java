package io.kplex.spark.kafka;

import io.kplex.spark.errors.Errors;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * One JVM's view of one partition of a compacted topic ({@link CompactedTopic}): the latest
 * record of every key, kept current by a consumer that stays assigned and reads only what
 * was appended since its last read, as Kafka keeps {@code __consumer_offsets} and Kafka
 * Streams its global stores. So a read costs what changed since the last one, not the
 * topic's history: the history is read once per JVM.
 *
 * <p>Every read is current: it first reads up to the log's end offset of that moment (one
 * round trip when nothing changed), so a record acknowledged before the read began is in it
 * (a claim check right after recording a commit sees the commit). A log whose end went back
 * (the topic deleted and recreated, or truncated) is read again from its beginning.
 *
 * <p>Lifecycle: one view per (client settings, client factory, topic, partition), made on first use;
 * its consumer is closed after {@link #IDLE_MS} unused (the next read reopens it and reads the
 * history again). Views hold the live keys only, as compaction would. Thread-safe: reads of a
 * view take turns.
 */
final class LogView {
  /**
   * A JVM system property ({@code -Dkplex.controlPlane.fullScan=true}) that makes every read
   * read the whole log again, as kplex did before it kept views: for the control plane's
   * benchmark (bench/control_plane.py) to compare both in one run. A SQL session cannot set it.
   */
  static final String FULL_SCAN_PROPERTY = "kplex.controlPlane.fullScan";

  /** How long a fetch of the view's consumer may wait at the broker for records (see {@link #catchUp}). */
  static final int FETCH_WAIT_MS = 5;

  /** A view unused for this long closes its consumer and forgets what it read. */
  static final long IDLE_MS = 300_000;

  private record Key(KafkaConf conf, KafkaClients clients, String topic, int partition) {}

  /** A key's record as the view keeps it: its life ({@link CompactedTopic.Lived}) and its latest record's offset. */
  record Entry(CompactedTopic.Lived lived, long latestOffset) {}

  private static final Map<Key, LogView> VIEWS = new HashMap<>();
  private static ScheduledExecutorService evictor;

  private final String topic;
  private final TopicPartition tp;
  private Consumer<byte[], byte[]> consumer;
  /** The next offset to fold in. */
  private long next;
  /** The partition's end offset at the last read. */
  private long end;
  /** Sorted, so that a read of the keys of one prefix (one table's) costs what it finds, not the log's size. */
  private final java.util.NavigableMap<String, Entry> latest = new java.util.TreeMap<>();
  private long usedAtMs = System.currentTimeMillis();
  /** The topic's id when the view read it (null: none yet, or an in-memory test broker's). */
  private Object topicId;
  /** Records folded in since the view was (re)opened, for tests and status. */
  private long folded;

  private LogView(String topic, int partition) {
    this.topic = topic;
    this.tp = new TopicPartition(topic, partition);
  }

  /** The view of partition {@code partition} of {@code topic} for {@code kafka}'s settings and clients. */
  static LogView of(KafkaTopics kafka, String topic, int partition) {
    synchronized (VIEWS) {
      if (evictor == null) {
        evictor = Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "kplex-log-view-evictor");
          t.setDaemon(true);
          return t;
        });
        evictor.scheduleWithFixedDelay(LogView::evictIdle, IDLE_MS / 5, IDLE_MS / 5, TimeUnit.MILLISECONDS);
      }
      return VIEWS.computeIfAbsent(new Key(kafka.conf(), kafka.clients(), topic, partition),
          k -> new LogView(topic, partition));
    }
  }

  /** Closes the views unused for {@link #IDLE_MS}. */
  static void evictIdle() {
    List<LogView> views;
    synchronized (VIEWS) {
      views = new ArrayList<>(VIEWS.values());
    }
    long before = System.currentTimeMillis() - IDLE_MS;
    for (LogView v : views) {
      synchronized (v) {
        if (v.usedAtMs < before) v.reset();
      }
    }
  }

  /**
   * {@code reader} applied to the latest record of every live key, once the view has read up
   * to the log's end offset of now (an empty map if the topic does not exist).
   */
  synchronized <T> T read(KafkaTopics kafka, Function<java.util.NavigableMap<String, Entry>, T> reader) {
    return read(kafka, kafka.describe(topic), reader);
  }

  /** As {@link #read(KafkaTopics, Function)}, the topic already described ({@code described}: empty if none). */
  synchronized <T> T read(KafkaTopics kafka, java.util.Optional<org.apache.kafka.clients.admin.TopicDescription> described,
      Function<java.util.NavigableMap<String, Entry>, T> reader) {
    usedAtMs = System.currentTimeMillis();
    if (described.isEmpty()) {
      reset();
      return reader.apply(java.util.Collections.emptyNavigableMap());
    }
    if (Boolean.getBoolean(FULL_SCAN_PROPERTY)) reset();
    Object id = described.get().topicId();
    if (topicId != null && !topicId.equals(id)) reset();  // deleted and created again: another log
    topicId = id;
    kafka.call("READ", Errors.Resource.topic(topic), () -> {
      try {
        catchUp(kafka);
      } catch (RuntimeException e) {
        reset();  // read again from the beginning next time
        throw e;
      }
      return null;
    });
    return reader.apply(Collections.unmodifiableNavigableMap(latest));
  }

  /** Whether nothing was ever written to the partition (as of the last read). */
  synchronized boolean neverWritten() {
    return end == 0;
  }

  /** Records folded in since the view was (re)opened. */
  synchronized long folded() {
    return folded;
  }

  private void catchUp(KafkaTopics kafka) {
    if (consumer == null) {
      Map<String, Object> props = new HashMap<>(kafka.conf().consumer());
      // A fetch the consumer sends ahead waits at the broker up to fetch.max.wait.ms for
      // records, and the broker answers one request of a connection at a time: the next
      // read's end-offset request would wait behind it. Keep that wait short.
      props.put(org.apache.kafka.clients.consumer.ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, FETCH_WAIT_MS);
      consumer = kafka.clients().consumer(props);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      next = 0;
    }
    long end = consumer.endOffsets(List.of(tp)).get(tp);
    this.end = end;
    if (end < next) {
      // The log's end went back: the topic was recreated or truncated. Read it afresh.
      latest.clear();
      consumer.seekToBeginning(List.of(tp));
      next = 0;
    }
    long deadline = kafka.clock().millis() + KafkaConf.ADMIN_TIMEOUT_MS;
    while (consumer.position(tp) < end) {
      if (kafka.clock().millis() > deadline) {
        throw Errors.metadataReadTimedOut(topic);
      }
      for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) fold(r);
    }
  }

  private void fold(ConsumerRecord<byte[], byte[]> r) {
    if (r.offset() < next) return;
    next = r.offset() + 1;
    folded++;
    String key = new String(r.key(), StandardCharsets.UTF_8);
    if (r.value() == null) {
      latest.remove(key);
      return;
    }
    Entry was = latest.get(key);
    CompactedTopic.Lived lived = was == null ? new CompactedTopic.Lived(r.offset(), r.timestamp(), r.timestamp(), r.value())
        : new CompactedTopic.Lived(was.lived().offset(), was.lived().sinceMs(), r.timestamp(), r.value());
    latest.put(key, new Entry(lived, r.offset()));
  }

  /** Closes the consumer and forgets what was read. */
  private void reset() {
    if (consumer != null) {
      try {
        consumer.close(Duration.ZERO);
      } catch (RuntimeException e) {
        // closing a broken consumer: nothing to keep
      }
      consumer = null;
    }
    latest.clear();
    next = 0;
    folded = 0;
    topicId = null;
  }
}
