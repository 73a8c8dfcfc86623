package io.kplex.spark.txn;

import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka acknowledges a commit before its markers are on the partitions. This waits for
 * them, so that a read_committed consumer started after the INSERT returns sees its rows.
 * Its clients and clock are those of the {@link KafkaTopics} it is given.
 */
final class CommitVisibility {
  private static final Logger LOG = LoggerFactory.getLogger(CommitVisibility.class);
  /** How long a commit waits for its markers before it returns anyway (with a warning). */
  static final long WAIT_MS = 30_000;

  private CommitVisibility() {}

  /**
   * Waits until read_committed consumers see everything written to {@code topic} so far
   * (every partition's last stable offset at its current end).
   */
  static void awaitEnd(KafkaTopics kafka, String table, String topic) {
    Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
    int partitions = kafka.partitionCount(topic).orElse(0);
    for (int p = 0; p < partitions; p++) specs.put(new TopicPartition(topic, p), OffsetSpec.latest());
    var ends = kafka.call(() -> kafka.admin().listOffsets(specs).all()
        .get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS));
    long[] last = new long[partitions];
    for (int p = 0; p < partitions; p++) last[p] = ends.get(new TopicPartition(topic, p)).offset() - 1;
    await(kafka, table, topic, last);
  }

  /**
   * Waits until every partition's last stable offset is past {@code lastOffsets[p]} (-1:
   * nothing written there).
   */
  static void await(KafkaTopics kafka, String table, String topic, long[] lastOffsets) {
    Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
    for (int p = 0; p < lastOffsets.length; p++) {
      if (lastOffsets[p] >= 0) specs.put(new TopicPartition(topic, p), OffsetSpec.latest());
    }
    long deadline = kafka.clock().millis() + WAIT_MS;
    try {
      while (!specs.isEmpty()) {
        var stable = kafka.call(() -> kafka.admin().listOffsets(specs,
            new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all()
            .get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS));
        specs.keySet().removeIf(tp -> stable.get(tp).offset() > lastOffsets[tp.partition()]);
        if (specs.isEmpty()) return;
        if (kafka.clock().millis() > deadline) {
          LOG.warn("kplex: table {} is committed, but after {} s the commit markers of {} are not"
              + " visible yet; read_committed consumers will see the records once they are",
              table, WAIT_MS / 1000, specs.keySet());
          return;
        }
        kafka.clock().sleep(10);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
