package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.txn.TaskTransaction;
import java.util.Map;

/**
 * At least once: the task's records are sent and flushed, with no transaction. A failed
 * task leaves what it sent; its retry sends it again.
 */
final class AtLeastOnceDataWriter extends KplexDataWriter {
  AtLeastOnceDataWriter(WriteConf conf, RowCodec codec, int partitionId, int stageAttempt, int attempt,
      Map<Integer, Long> floor, KafkaClients clients) {
    super(conf, codec, partitionId, stageAttempt, attempt, floor, clients.producer(conf.kafka.producer()));
  }

  @Override
  void beforeSend() {
    // Nothing to wait for.
  }

  @Override
  TaskTransaction flushed() {
    flush();
    return null;
  }

  @Override
  public void abort() {
    // Records already sent stay; the task's retry sends them again.
  }

  @Override
  public void close() {
    producer.close(CLOSE_GRACE);
  }
}
