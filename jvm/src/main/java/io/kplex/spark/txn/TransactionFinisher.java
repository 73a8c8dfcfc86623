package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.AccessErrors;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.testing.FaultInjection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits tasks' open transactions from the driver: each is resumed in a new producer by
 * producer id and epoch ({@link TransactionResumer}) and committed, in parallel. A
 * retriable failure or a timeout is tried again with a fresh producer until
 * {@link #DEADLINE_MS}; fenced, expired and unauthorized transactions fail at once, with
 * an error that says which ({@link CommitFailure}).
 */
final class TransactionFinisher {
  private static final Logger LOG = LoggerFactory.getLogger(TransactionFinisher.class);
  /** How long one transaction's commit is retried. */
  static final long DEADLINE_MS = 120_000;
  private static final long BACKOFF_MS = 200;

  private final KafkaConf kafka;
  private final String table;
  private final FaultInjection faults;

  TransactionFinisher(KafkaConf kafka, String table, FaultInjection faults) {
    this.kafka = kafka;
    this.table = table;
    this.faults = faults;
  }

  void commitAll(List<TaskTransaction> txns) {
    if (faults != null && faults.commitsOneByOne()) {
      try {
        for (int i = 0; i < txns.size(); i++) {
          commit(txns.get(i));
          faults.afterCommit(i + 1);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new KplexException("INTERRUPTED", "interrupted while committing transactions", e);
      }
      return;
    }
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(16, txns.size())));
    try {
      List<Future<?>> done = new ArrayList<>();
      for (TaskTransaction t : txns) {
        done.add(pool.submit(() -> {
          commit(t);
          return null;
        }));
      }
      for (Future<?> f : done) {
        try {
          f.get();
        } catch (ExecutionException e) {
          throw e.getCause() instanceof KplexException k ? k
              : new KplexException("COMMIT_FAILED", e.getCause().toString(), e.getCause());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new KplexException("INTERRUPTED", "interrupted while committing transactions", e);
    } finally {
      pool.shutdownNow();
    }
  }

  private void commit(TaskTransaction t) throws InterruptedException {
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    for (int attempt = 1; ; attempt++) {
      try {
        commitOnce(t);
        return;
      } catch (RuntimeException e) {
        CommitFailure kind = CommitFailure.of(e);
        if (kind == CommitFailure.NOT_AUTHORIZED) {
          throw AccessErrors.notAuthorized(kafka, e, "WRITE", "transactional id '" + t.id() + "'");
        }
        if (!kind.retry() || System.currentTimeMillis() + BACKOFF_MS > deadline) {
          throw Errors.commitFailed(kind.code, kind.meaning, t.toString(), table, attempt, e);
        }
        LOG.warn("kplex: committing {} of table {} failed ({}: {}); trying again", t, table, kind, e.toString());
        Thread.sleep(BACKOFF_MS);
      }
    }
  }

  private void commitOnce(TaskTransaction t) {
    Map<String, Object> props = kafka.producer();
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, t.id());
    KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props);
    boolean committed = false;
    try {
      TransactionResumer.resume(producer, t.producerId(), t.epoch());
      producer.commitTransaction();
      committed = true;
    } finally {
      // After a failure, close at once: a graceful close would abort the transaction that
      // the next attempt is to commit.
      producer.close(committed ? Duration.ofSeconds(30) : Duration.ZERO);
    }
  }
}
