package io.kplex.spark;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * Kafka as the catalog's storage: topics are tables, and kplex table definitions live
 * in a compacted topic (one record per table, keyed by name; a tombstone drops it).
 */
final class TableStore implements AutoCloseable {
  private static final long TIMEOUT_MS = KafkaConf.ADMIN_TIMEOUT_MS;

  private final KafkaConf kafka;
  private final String metadataTopic;
  private Admin admin;

  TableStore(KafkaConf kafka, String metadataTopic) {
    this.kafka = kafka;
    this.metadataTopic = metadataTopic;
  }

  String metadataTopic() {
    return metadataTopic;
  }

  synchronized Admin admin() {
    if (admin == null) {
      admin = Admin.create(kafka.admin());
    }
    return admin;
  }

  /** Topic names, internal ones (starting with '_' or '__') left out. */
  Set<String> topics() {
    return call(() -> new TreeSet<>(admin().listTopics().names().get(TIMEOUT_MS, TimeUnit.MILLISECONDS)));
  }

  /** The partition count of a topic, or empty if the topic does not exist. */
  Optional<Integer> partitionCount(String topic) {
    return describe(topic).map(d -> d.partitions().size());
  }

  Optional<TopicDescription> describe(String topic) {
    return call(() -> {
      try {
        return Optional.of(admin().describeTopics(List.of(topic)).allTopicNames()
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(topic));
      } catch (ExecutionException e) {
        if (e.getCause() instanceof UnknownTopicOrPartitionException) {
          return Optional.empty();
        }
        throw e;
      }
    });
  }

  void createTopic(String topic, int partitions, short replication, Map<String, String> configs) {
    call(() -> {
      NewTopic t = new NewTopic(topic, Optional.of(partitions),
          replication < 1 ? Optional.empty() : Optional.of(replication)).configs(configs);
      admin().createTopics(List.of(t)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      return null;
    });
  }

  void deleteTopic(String topic) {
    call(() -> admin().deleteTopics(List.of(topic)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
  }

  /** All live table definitions, by table name. */
  Map<String, TableDefinition> definitions() {
    Map<String, TableDefinition> defs = new HashMap<>();
    readCompacted(metadataTopic).forEach((name, json) -> defs.put(name, TableDefinition.fromJson(json)));
    return defs;
  }

  /**
   * The latest value of every key of a compacted topic (read to its end offset),
   * tombstoned keys left out; empty if the topic does not exist.
   */
  Map<String, byte[]> readCompacted(String topic) {
    Map<String, byte[]> latest = new HashMap<>();
    if (partitionCount(topic).isEmpty()) {
      return latest;
    }
    TopicPartition tp = new TopicPartition(topic, 0);
    try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(kafka.consumer())) {
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long end = call(() -> consumer.endOffsets(List.of(tp)).get(tp));
      long deadline = System.currentTimeMillis() + TIMEOUT_MS;
      while (consumer.position(tp) < end) {
        if (System.currentTimeMillis() > deadline) {
          throw new KplexException("METADATA", "timed out reading topic '" + topic + "'.");
        }
        for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
          latest.put(new String(r.key(), StandardCharsets.UTF_8), r.value());
        }
      }
    }
    latest.values().removeIf(v -> v == null);
    return latest;
  }

  Optional<TableDefinition> definition(String name) {
    return Optional.ofNullable(definitions().get(name));
  }

  void putDefinition(TableDefinition def) {
    publish(metadataTopic, def.name(), def.toJson());
  }

  void removeDefinition(String name) {
    publish(metadataTopic, name, null);
  }

  /** Writes (or, with a null value, deletes) one key of a compacted topic, synchronously. */
  void publish(String topic, String key, byte[] value) {
    ensureCompactedTopic(topic);
    Map<String, Object> props = kafka.producer();
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
      call(() -> producer.send(new ProducerRecord<>(topic, 0,
          key.getBytes(StandardCharsets.UTF_8), value)).get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
    }
  }

  private void ensureCompactedTopic(String topic) {
    if (partitionCount(topic).isPresent()) {
      return;
    }
    try {
      createTopic(topic, 1, (short) -1,
          Map.of(TopicConfig.CLEANUP_POLICY_CONFIG, TopicConfig.CLEANUP_POLICY_COMPACT));
    } catch (KplexException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw e;
      }
    }
  }

  interface KafkaCall<T> {
    T run() throws Exception;
  }

  /** Runs an admin call, turning timeouts into an "unreachable broker" error. */
  <T> T call(KafkaCall<T> body) {
    try {
      return body.run();
    } catch (TimeoutException | org.apache.kafka.common.errors.TimeoutException e) {
      throw Errors.unreachable(kafka.bootstrap(), e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof org.apache.kafka.common.errors.TimeoutException) {
        throw Errors.unreachable(kafka.bootstrap(), cause);
      }
      throw new KplexException("KAFKA", cause.getClass().getSimpleName() + ": " + cause.getMessage(), cause);
    } catch (KplexException e) {
      throw e;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new KplexException("INTERRUPTED", "interrupted while talking to Kafka", e);
    } catch (Exception e) {
      throw new KplexException("KAFKA", e.getClass().getSimpleName() + ": " + e.getMessage(), e);
    }
  }

  List<String> tableNames() {
    List<String> names = new ArrayList<>();
    for (String t : topics()) {
      if (!t.startsWith("_")) {
        names.add(t);
      }
    }
    return names;
  }

  @Override
  public synchronized void close() {
    if (admin != null) {
      admin.close(Duration.ofSeconds(5));
      admin = null;
    }
  }
}
