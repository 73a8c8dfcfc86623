package io.kplex.spark.kafka;

import java.io.Serializable;
import java.util.Map;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;

/**
 * Where kplex's Kafka clients come from. Production code uses {@link #REAL}; a JUnit test of
 * a stateful class (the committer, the writer claim, the data writers) injects fakes
 * (Kafka's {@code MockProducer}, {@code MockConsumer}) to reach its failure paths in
 * seconds: fenced, timed out, send failed. Serializable, so a writer factory can carry it
 * to the executors.
 */
public interface KafkaClients extends Serializable {
  Producer<byte[], byte[]> producer(Map<String, Object> props);

  Consumer<byte[], byte[]> consumer(Map<String, Object> props);

  Admin admin(Map<String, Object> props);

  /** The real clients, made from their settings. */
  KafkaClients REAL = Real.INSTANCE;

  /** An enum, so that it stays one instance across serialization. */
  enum Real implements KafkaClients {
    INSTANCE;

    @Override
    public Producer<byte[], byte[]> producer(Map<String, Object> props) {
      return new KafkaProducer<>(props);
    }

    @Override
    public Consumer<byte[], byte[]> consumer(Map<String, Object> props) {
      return new KafkaConsumer<>(props);
    }

    @Override
    public Admin admin(Map<String, Object> props) {
      return Admin.create(props);
    }
  }
}
