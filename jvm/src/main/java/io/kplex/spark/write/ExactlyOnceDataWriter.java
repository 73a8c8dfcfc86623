package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.AccessErrors;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.txn.CommitFailure;
import io.kplex.spark.txn.ExactlyOnceCommitter;
import io.kplex.spark.txn.TaskTransaction;
import io.kplex.spark.txn.TransactionResumer;
import io.kplex.spark.txn.TransactionalIds;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.utils.ProducerIdAndEpoch;

/**
 * Exactly once: the task's records go into a Kafka transaction of its own (a transactional
 * id per task attempt, {@link TransactionalIds}), which it opens, flushes and leaves open;
 * the driver commits it ({@link ExactlyOnceCommitter}). The transaction opens (two broker
 * round trips, and waiting for the coordinator) on a background thread while Spark sorts
 * the task's rows; the first send waits for it.
 */
final class ExactlyOnceDataWriter extends KplexDataWriter {
  /** Where the task's transaction stands: what decides how the task ends. */
  private enum Txn {
    /** initTransactions and beginTransaction under way (nothing sent yet). */
    OPENING,
    /** Open: records go into it. */
    OPEN,
    /** Could not be opened: the error is rethrown by whatever comes next. */
    BROKEN,
    /** Flushed and reported to the driver, which commits it: it stays open. */
    HANDED_OVER
  }

  /** Threads that open transactions, idle ones ending after a minute. */
  private static final ExecutorService OPENERS = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "kplex-open-transaction");
    t.setDaemon(true);
    return t;
  });

  private final String transactionalId;
  private final Map<String, Object> settings;
  private final Epoch epoch;
  private final CompletableFuture<Void> opening;
  private Txn state = Txn.OPENING;
  private RuntimeException openFailure;

  /**
   * A streaming task's epoch: the query's run, the epoch it writes, and the epoch whose
   * producers it may go on with (the table's last, if the run committed every transaction of
   * it; else -1), so that its producer can be kept for the next epoch ({@link KeptProducers}).
   */
  record Epoch(String run, long epoch, long lastCommitted) {}

  ExactlyOnceDataWriter(WriteConf conf, RowCodec codec, int partitionId, int stageAttempt, int attempt,
      Map<Integer, Long> floor, KafkaClients clients, Epoch epoch) {
    this(conf, codec, partitionId, floor, TransactionalIds.of(conf.table, partitionId, stageAttempt, attempt),
        stageAttempt, attempt, settings(conf, TransactionalIds.of(conf.table, partitionId, stageAttempt, attempt)),
        clients, epoch);
  }

  private ExactlyOnceDataWriter(WriteConf conf, RowCodec codec, int partitionId, Map<Integer, Long> floor,
      String transactionalId, int stageAttempt, int attempt, Map<String, Object> settings, KafkaClients clients,
      Epoch epoch) {
    this(conf, codec, partitionId, floor, transactionalId, stageAttempt, attempt, settings,
        kept(transactionalId, settings, epoch), clients, epoch);
  }

  private ExactlyOnceDataWriter(WriteConf conf, RowCodec codec, int partitionId, Map<Integer, Long> floor,
      String transactionalId, int stageAttempt, int attempt, Map<String, Object> settings,
      Producer<byte[], byte[]> kept, KafkaClients clients, Epoch epoch) {
    super(conf, codec, partitionId, stageAttempt, attempt, floor, kept != null ? kept : clients.producer(settings));
    this.transactionalId = transactionalId;
    this.settings = settings;
    this.epoch = epoch;
    if (kept != null) {
      // The driver committed its last transaction: the next one opens without a round trip.
      producer.beginTransaction();
      this.opening = CompletableFuture.completedFuture(null);
    } else {
      this.opening = CompletableFuture.runAsync(() -> {
        producer.initTransactions();
        producer.beginTransaction();
      }, OPENERS);
    }
  }

  /** The producer this executor kept for the transactional id, ready for a transaction; null if none fits. */
  private static Producer<byte[], byte[]> kept(String transactionalId, Map<String, Object> settings, Epoch epoch) {
    // With lastCommitted -1 (nothing committed in full before), no kept producer matches: one
    // kept from before is closed.
    if (epoch == null || epoch.run() == null) return null;
    Producer<byte[], byte[]> kept = KeptProducers.EXECUTOR.take(transactionalId, epoch.run(), epoch.lastCommitted(),
        settings);
    if (!(kept instanceof KafkaProducer<byte[], byte[]> real)) return null;
    try {
      TransactionResumer.adoptCommitted(real);
      return real;
    } catch (RuntimeException e) {
      real.close(Duration.ZERO);
      return null;
    }
  }

  private static Map<String, Object> settings(WriteConf conf, String transactionalId) {
    Map<String, Object> props = conf.kafka.producer();
    props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
    props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, (int) ExactlyOnceCommitter.transactionTimeoutMs(conf.kafka));
    return props;
  }

  /** Waits for the transaction to be open; fails naming the transactional id if it could not be. */
  @Override
  void beforeSend() {
    if (state == Txn.BROKEN) throw openFailure;
    if (state != Txn.OPENING) return;
    try {
      opening.join();
      state = Txn.OPEN;
    } catch (CompletionException e) {
      openFailure = AccessErrors.rethrow(conf.kafka, e.getCause(), "WRITE", Errors.Resource.transactionalId(transactionalId));
      state = Txn.BROKEN;
      throw openFailure;
    }
  }

  /** A send Kafka refused because the transaction was fenced or expired: the task was taken over. */
  @Override
  RuntimeException sendError(Exception failure) {
    if (CommitFailure.of(failure).aborted()) return Errors.taskFenced(conf.table, transactionalId, failure);
    return super.sendError(failure);
  }

  @Override
  TaskTransaction flushed() {
    if (state == Txn.OPENING) {
      // Nothing sent: no transaction to wait for, nor for the driver to commit (close
      // abandons the one still opening).
      return null;
    }
    beforeSend();
    flush();
    if (sent() == 0) {
      // A transaction with no record never started on the broker: nothing to commit.
      return null;
    }
    ProducerIdAndEpoch id = idAndEpoch();
    state = Txn.HANDED_OVER;
    return new TaskTransaction(transactionalId, id.producerId, id.epoch, written());
  }

  /**
   * The producer's id and epoch, which the driver needs to resume the transaction. Only a
   * real producer has them ({@link TransactionResumer}); a test's fake has none.
   */
  private ProducerIdAndEpoch idAndEpoch() {
    return producer instanceof KafkaProducer<byte[], byte[]> real
        ? TransactionResumer.idAndEpoch(real) : ProducerIdAndEpoch.NONE;
  }

  @Override
  public void abort() {
    try {
      beforeSend();
      producer.abortTransaction();
    } catch (RuntimeException e) {
      // Fenced or broken: the driver fences this transaction when it aborts the job.
    }
  }

  @Override
  public void close() {
    switch (state) {
      case HANDED_OVER -> {
        // Flushed and left open for the driver to commit: a graceful close would abort it. A
        // streaming task's producer is kept for the next epoch, which takes it once the
        // driver committed this one.
        if (epoch != null && epoch.run() != null && producer instanceof KafkaProducer<byte[], byte[]>) {
          KeptProducers.EXECUTOR.keep(transactionalId, producer, epoch.run(), epoch.epoch(), settings);
        } else {
          producer.close(Duration.ZERO);
        }
      }
      case OPENING, BROKEN ->
          // Never opened, or still opening (the task failed first): nothing of it to keep.
          producer.close(Duration.ZERO);
      case OPEN ->
          // A transaction that never sent a record has nothing on the broker to wait for (a
          // graceful close would wait on it).
          producer.close(sent() == 0 && !failed() ? Duration.ZERO : CLOSE_GRACE);
    }
  }
}
