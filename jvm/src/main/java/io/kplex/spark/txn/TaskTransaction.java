package io.kplex.spark.txn;

import java.io.Serializable;

/**
 * The committable of one task (Flink's {@code KafkaCommittable}): the open Kafka
 * transaction a task wrote its rows in, flushed and left open for the driver to commit.
 */
public record TaskTransaction(String id, long producerId, short epoch) implements Serializable {
  @Override
  public String toString() {
    return id + "(pid " + producerId + ", epoch " + epoch + ")";
  }
}
