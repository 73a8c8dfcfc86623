package io.kplex.spark.catalog;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.KafkaTopics;
import java.util.Map;

/**
 * The topic late records go to under {@code late_policy = side_topic}, for a write to a table
 * and for a read of a read-time table alike. A late record keeps its key, value and kplex's
 * headers, and goes to a partition of the producer's choosing: any topic that something reads
 * as more than a list of records would take it for what it is not.
 */
public final class LateTopics {
  private LateTopics() {}

  /**
   * Refuses {@code lateTopic} of table {@code table} when it is a topic of Kafka's or kplex's
   * own (a late record's key could replace a table's definition or a commit's record), or the
   * topic of another kplex table (its records would land in that table's virtual partitions,
   * out of their order and outside its commits); then makes it if it is missing, with one
   * partition. The caller has refused the table's own topic, or its sources, already.
   */
  public static void prepare(TableStore store, String table, String lateTopic) {
    check(store, table, lateTopic);
    store.ensureTopic(lateTopic, 1, Map.of());
  }

  /** The refusals of {@link #prepare}, making nothing (a REPLACE checks before it drops the old table). */
  public static void check(TableStore store, String table, String lateTopic) {
    if (KafkaTopics.KAFKA_INTERNAL.contains(lateTopic) || lateTopic.equals(store.metadataTopic())
        || lateTopic.equals(KafkaTopics.COMMITS_TOPIC)) {
      throw Errors.lateTopicReserved(table, lateTopic);
    }
    store.writtenTopics().forEach((other, itsTopic) -> {
      if (itsTopic.equals(lateTopic) && !other.equals(table)) throw Errors.lateTopicOfTable(table, lateTopic, other);
    });
  }
}
