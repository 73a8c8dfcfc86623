package io.kplex.spark.txn;

import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.Clock;

/** The in-memory broker of these tests, for tests of other packages. */
public final class FakeKafkaAccess {
  private final FakeKafka kafka = new FakeKafka();

  public KafkaTopics topics() {
    return kafka.topics(Clock.SYSTEM);
  }

  /** Its clients, for a class that takes a {@link io.kplex.spark.kafka.KafkaClients} (the read side's). */
  public io.kplex.spark.kafka.KafkaClients clients() {
    return kafka;
  }

  /** Records of {@code topic}'s {@code partition} below {@code offset} are gone (retention). */
  public void deleteBefore(String topic, int partition, long offset) {
    kafka.deleteBefore(new org.apache.kafka.common.TopicPartition(topic, partition), offset);
  }

  public int consumers() {
    return kafka.consumers.get();
  }

  public int recordsRead() {
    return kafka.recordsRead.get();
  }

  /** Times a consumer was asked for beginning offsets so far. */
  public int beginnings() {
    return kafka.beginnings.get();
  }

  /** Topic descriptions asked of the admin client so far. */
  public int descriptions() {
    return kafka.descriptions.get();
  }
}
