package io.kplex.spark.txn;

import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.Clock;

/** The in-memory broker of these tests, for tests of other packages. */
public final class FakeKafkaAccess {
  private final FakeKafka kafka = new FakeKafka();

  public KafkaTopics topics() {
    return kafka.topics(Clock.SYSTEM);
  }

  public int consumers() {
    return kafka.consumers.get();
  }

  public int recordsRead() {
    return kafka.recordsRead.get();
  }
}
