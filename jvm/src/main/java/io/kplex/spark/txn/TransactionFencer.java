package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.common.KafkaFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fences open transactions of a table (Kafka aborts them): those of failed, lost and
 * speculative task attempts, of a crashed run, or of a writer whose claim was taken over
 * ({@link WriterLease}): never those of a writer that holds its claim.
 */
final class TransactionFencer {
  private static final Logger LOG = LoggerFactory.getLogger(TransactionFencer.class);

  private TransactionFencer() {}

  /** Fences every open transaction of {@code table} whose id is not in {@code keep}; returns how many. */
  static int fenceOpen(KafkaTopics kafka, String table, Set<String> keep) {
    return fence(kafka, table, keep, listOpen(kafka));
  }

  /**
   * Asks the broker for the open transactions (of every table: the listing cannot filter by
   * prefix), without waiting for the answer; {@link #fence} reads it. On its own connection:
   * the broker takes a while to list them, and the commit reads the control topic meanwhile.
   */
  static KafkaFuture<Collection<TransactionListing>> listOpen(KafkaTopics kafka) {
    return kafka.slowAdmin().listTransactions(new ListTransactionsOptions().filterStates(List.of(
        TransactionState.ONGOING, TransactionState.PREPARE_ABORT, TransactionState.PREPARE_COMMIT))).all();
  }

  /**
   * Fences the transactions of {@code table} in {@code listed} (an answer of {@link #listOpen})
   * whose id is not in {@code keep}; returns how many.
   */
  static int fence(KafkaTopics kafka, String table, Set<String> keep, KafkaFuture<Collection<TransactionListing>> listed) {
    List<String> stale = new ArrayList<>();
    Errors.Resource ids = Errors.Resource.transactionalIdPrefix(TransactionalIds.prefix(table));
    for (TransactionListing t : kafka.call("DESCRIBE", ids, () -> listed.get(KafkaConf.ADMIN_TIMEOUT_MS,
        TimeUnit.MILLISECONDS))) {
      if (TransactionalIds.belongsTo(table, t.transactionalId()) && !keep.contains(t.transactionalId())) {
        stale.add(t.transactionalId());
      }
    }
    if (!stale.isEmpty()) {
      LOG.info("kplex: fencing {} open transactions of table {}: {}", stale.size(), table, stale);
      kafka.call("WRITE", ids, () -> kafka.admin().fenceProducers(stale).all()
          .get(KafkaConf.ADMIN_TIMEOUT_MS * 4L, TimeUnit.MILLISECONDS));
    }
    return stale.size();
  }
}
