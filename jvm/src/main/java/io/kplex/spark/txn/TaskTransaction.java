package io.kplex.spark.txn;

import java.io.Serializable;
import java.util.Map;
import java.util.TreeMap;

/**
 * The committable of one task (Flink's {@code KafkaCommittable}): the open Kafka
 * transaction a task wrote its rows in, flushed and left open for the driver to commit,
 * and per virtual partition the largest order value it holds ({@code highs}), so that a
 * commit Kafka cut short can say which virtual partitions it lost ({@link PartialCommit}).
 * {@code highs} is empty for a transaction recorded before kplex kept it.
 */
public record TaskTransaction(String id, long producerId, short epoch, Map<Integer, Long> highs)
    implements Serializable {
  public TaskTransaction {
    highs = Map.copyOf(highs);
  }

  public TaskTransaction(String id, long producerId, short epoch) {
    this(id, producerId, epoch, Map.of());
  }

  /** The Spark partition of the task that wrote it ({@link TransactionalIds}). */
  public int partition() {
    return TransactionalIds.partitionOf(id);
  }

  @Override
  public String toString() {
    return id + "(pid " + producerId + ", epoch " + epoch + (highs.isEmpty() ? "" : ", virtual partitions "
        + new TreeMap<>(highs).keySet()) + ")";
  }
}
