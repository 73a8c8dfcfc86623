package io.kplex.spark.txn;

import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import java.time.Duration;
import java.util.Map;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;

/**
 * Commits one task's open transaction from the driver: resumes it by transactional id,
 * producer id and epoch in a new producer, and commits it. The seam between
 * {@link TransactionFinisher}'s handling of each failure kind (retried, aborted by Kafka,
 * refused) and Kafka's internals: a JUnit test gives the finisher one that throws what a
 * broker would ({@code ProducerFencedException}, a timeout, ...).
 */
@FunctionalInterface
interface ResumedCommit {
  /** Commits {@code t}, or throws what Kafka threw ({@link CommitFailure#of} tells its kind). */
  void commit(TaskTransaction t);

  /**
   * The real one: a producer from {@code clients} (a {@link KafkaProducer}, whose internals
   * {@link TransactionResumer} sets), closed after each attempt.
   */
  static ResumedCommit withProducers(KafkaConf kafka, KafkaClients clients) {
    return withProducers(kafka, clients, null, null);
  }

  /**
   * As {@link #withProducers(KafkaConf, KafkaClients)}; with {@code kept} (a streaming run's
   * clients), a producer that committed is kept there for the next commit of its
   * transactional id, instead of a new producer for every commit of every micro-batch; with
   * {@code prepared} (a batch write's), the producer made for the id while the tasks wrote is
   * used, and closed in the background once it committed.
   */
  static ResumedCommit withProducers(KafkaConf kafka, KafkaClients clients, Supplier<KafkaTopics> kept,
      PreparedCommitters prepared) {
    return t -> {
      Map<String, Object> props = settings(kafka, t.id());
      Producer<byte[], byte[]> producer = kept == null ? null : kept.get().takeCommitter(t.id(), props);
      if (producer == null && prepared != null) producer = prepared.take(t.id());
      if (producer == null) producer = clients.producer(props);
      boolean committed = false;
      try {
        TransactionResumer.resume((KafkaProducer<?, ?>) producer, t.producerId(), t.epoch());
        producer.commitTransaction();
        committed = true;
      } finally {
        if (committed && kept != null) {
          kept.get().keepCommitter(t.id(), props, producer);
        } else if (committed && prepared != null) {
          prepared.closeLater(producer, Duration.ofSeconds(30));
        } else {
          // After a failure, close at once: a graceful close would abort the transaction that
          // the next attempt is to commit.
          producer.close(committed ? Duration.ofSeconds(30) : Duration.ZERO);
        }
      }
    };
  }

  /** The settings of the producer that commits {@code transactionalId}'s transactions. */
  static Map<String, Object> settings(KafkaConf kafka, String transactionalId) {
    Map<String, Object> props = kafka.producer();
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    return props;
  }
}
