package io.kplex.spark.txn;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
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
 * It acts only under the table's writer claim ({@link WriterLease}), on what it reads
 * under it: a live writer's commit is that writer's to finish (the claim is refused, and
 * nothing is touched). Cheap when nothing is pending: the end offset of
 * {@code _kplex_commits} is compared with the one at which this JVM last found the table
 * clean.
 *
 * <p>If nothing touches the table before the unfinished transactions outlive
 * {@code transaction.timeout.ms}, the broker aborts them: the commit is then settled as a
 * {@link PartialCommit} (see {@link ExactlyOnceCommitter#recover}), never left in the way.
 *
 * <p>Lifecycle: one per catalog instance (a Spark session's catalog), which keeps where it
 * last found each table clean for as long as it lives; {@link #clear} forgets that (the
 * next load checks the log again). Its writer claims are made in {@code claims}; its
 * clients and clock are those of the {@link KafkaTopics} it is handed.
 */
public final class PendingCommits {
  private static final Logger LOG = LoggerFactory.getLogger(PendingCommits.class);
  /** (bootstrap, table) -> the end offset of the commit log at which the table had nothing pending. */
  private final Map<String, Long> cleanAt = new ConcurrentHashMap<>();
  private final WriterClaims claims;

  /** Claims made in this JVM's {@link WriterClaims#JVM}. */
  public PendingCommits() {
    this(WriterClaims.JVM);
  }

  public PendingCommits(WriterClaims claims) {
    this.claims = claims;
  }

  /**
   * Rolls the table's pending commit forward, if any, under its writer claim (a claim of
   * another writer unchanged for {@code staleMs} is taken over); returns what it did, or
   * an empty string.
   */
  public String finish(KafkaTopics kafka, String table, String topic, int virtualPartitions, long staleMs) {
    Optional<Long> end = endOffset(kafka, table);
    if (end.isEmpty()) return "";
    String key = kafka.conf().bootstrap() + "\u0000" + table;
    if (end.get().equals(cleanAt.get(key))) return "";
    String report = "";
    if (new CommitLog(kafka).pending(table).isPresent()) {
      try (WriterLease lease = claims.acquire(kafka.conf(), table, "kplex (table load)", null, staleMs)) {
        report = new ExactlyOnceCommitter(kafka.conf(), table, topic, virtualPartitions, null, null, kafka.clients(),
            kafka.clock()).recover(lease);
        LOG.warn("kplex: table {} had a commit that a previous driver left half done: {}", table, report);
        CommitVisibility.awaitEnd(kafka, table, topic);
      }
      end = endOffset(kafka, table);
    }
    end.ifPresent(offset -> cleanAt.put(key, offset));
    return report;
  }

  /** Forgets where every table was found clean: the next {@link #finish} reads the log again. */
  public void clear() {
    cleanAt.clear();
  }

  /**
   * {@link #finish}, for a catalog that must load the table whatever happens: a live writer
   * holding the table, or a commit that cannot be finished now (a missing ACL), is logged,
   * and {@code kplex recover} or the next write deals with it.
   */
  public void finishQuietly(KafkaTopics kafka, String table, String topic, int virtualPartitions,
      long staleMs) {
    try {
      finish(kafka, table, topic, virtualPartitions, staleMs);
    } catch (KplexException e) {
      if ("TABLE_BUSY".equals(e.code())) {
        LOG.info("kplex: table {} has a commit under way by a live writer, which finishes it", table);
      } else {
        LOG.warn("kplex: could not finish the pending commit of table {}: {}", table, e.getMessage());
      }
    }
  }

  /** The end offset of the commit log's partition that holds {@code table}'s records. */
  private static Optional<Long> endOffset(KafkaTopics kafka, String table) {
    if (kafka.partitionCount(CommitLog.TOPIC).isEmpty()) return Optional.empty();
    TopicPartition tp = new TopicPartition(CommitLog.TOPIC, CommitLog.topic(kafka).partitionOf(table));
    return Optional.of(kafka.call(() -> kafka.admin().listOffsets(Map.of(tp, OffsetSpec.latest())).all()
        .get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS).get(tp).offset()));
  }
}
