package io.kplex.spark.txn;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Finishes a commit that a dead driver left half done, for any session that touches the
 * table: the catalog calls {@link #finish} whenever it loads a kplex table (a read, a
 * write, DESCRIBE, the CLI), so a half-visible write does not wait for the next write.
 * Only the transactions the commit log names are committed; nothing is fenced (a live
 * writer of the table keeps its open transactions). Cheap when nothing is pending: the
 * end offset of {@code _kplex_commits} is compared with the one at which this JVM last
 * found the table clean.
 *
 * <p>What remains: if nothing touches the table before the unfinished transactions
 * outlive {@code transaction.timeout.ms}, the broker aborts them and the write stays half
 * visible; running {@code kplex recover} more often than that closes the window.
 */
public final class PendingCommits {
  private static final Logger LOG = LoggerFactory.getLogger(PendingCommits.class);
  /** (bootstrap, table) -> the end offset of the commit log at which the table had nothing pending. */
  private static final Map<String, Long> CLEAN_AT = new ConcurrentHashMap<>();

  private PendingCommits() {}

  /** Rolls the table's pending commit forward, if any; returns how many transactions it committed. */
  public static int finish(KafkaTopics kafka, String table, String topic) {
    Optional<Long> end = endOffset(kafka);
    if (end.isEmpty()) return 0;
    String key = kafka.conf().bootstrap() + "\u0000" + table;
    if (end.get().equals(CLEAN_AT.get(key))) return 0;
    CommitLog log = new CommitLog(kafka);
    Optional<CommitLog.Pending> pending = log.pending(table);
    int committed = 0;
    if (pending.isPresent()) {
      List<TaskTransaction> txns = pending.get().transactions;
      LOG.warn("kplex: table {} has a commit that a previous driver left half done (query {}): committing"
          + " its {} remaining transactions", table, pending.get().query, txns.size());
      new TransactionFinisher(kafka.conf(), table, null).commitAll(txns);
      log.end(pending.get());
      CommitVisibility.awaitEnd(kafka, table, topic);
      committed = txns.size();
      end = endOffset(kafka);
    }
    end.ifPresent(offset -> CLEAN_AT.put(key, offset));
    return committed;
  }

  /**
   * {@link #finish}, for a catalog that must load the table whatever happens: a commit that
   * cannot be finished now (the broker aborted it, a missing ACL) is logged, and
   * {@code kplex recover} or the next write reports it.
   */
  public static void finishQuietly(KafkaTopics kafka, String table, String topic) {
    try {
      finish(kafka, table, topic);
    } catch (KplexException e) {
      LOG.warn("kplex: could not finish the pending commit of table {}: {}", table, e.getMessage());
    }
  }

  private static Optional<Long> endOffset(KafkaTopics kafka) {
    if (kafka.partitionCount(CommitLog.TOPIC).isEmpty()) return Optional.empty();
    TopicPartition tp = new TopicPartition(CommitLog.TOPIC, 0);
    return Optional.of(kafka.call(() -> kafka.admin().listOffsets(Map.of(tp, OffsetSpec.latest())).all()
        .get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS).get(tp).offset()));
  }
}
