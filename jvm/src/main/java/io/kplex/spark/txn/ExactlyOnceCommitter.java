package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.testing.FaultInjection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly once across a whole Spark write (G3), on the driver. Each task writes inside
 * its own Kafka transaction ({@link TransactionalIds}) and leaves it open, reporting a
 * {@link TaskTransaction}; the driver then:
 * <ol>
 *   <li>records the transactions to commit in the {@link CommitLog} (so that a driver that
 *       dies while committing is rolled forward later);</li>
 *   <li>fences every other open transaction of the table (failed, lost and speculative
 *       attempts): Kafka aborts them ({@link TransactionFencer});</li>
 *   <li>commits each task's transaction by resuming it ({@link TransactionFinisher});</li>
 *   <li>deletes the log record.</li>
 * </ol>
 * An aborted job fences all open transactions of the table. Every write first runs
 * {@link #recover}: it finishes a commit that a dead driver left half done and fences
 * whatever a crashed run left open, so no transaction pins the topic's last stable
 * offset. One writer per table at a time: a new write fences a running one.
 */
public final class ExactlyOnceCommitter {
  private static final Logger LOG = LoggerFactory.getLogger(ExactlyOnceCommitter.class);
  /** kplex's transaction.timeout.ms: the broker's default transaction.max.timeout.ms (15 min). */
  public static final int DEFAULT_TRANSACTION_TIMEOUT_MS = 900_000;

  private final KafkaConf kafka;
  private final String table;
  private final String topic;
  /** Test-only faults of the driver's commit (null: none). */
  private final FaultInjection faults;
  /** Clients kept across commits (a streaming run's), or null: each call makes its own. */
  private final Supplier<KafkaTopics> shared;

  public ExactlyOnceCommitter(KafkaConf kafka, String table, String topic, FaultInjection faults) {
    this(kafka, table, topic, faults, null);
  }

  public ExactlyOnceCommitter(KafkaConf kafka, String table, String topic, FaultInjection faults,
      Supplier<KafkaTopics> shared) {
    this.kafka = kafka;
    this.table = table;
    this.topic = topic;
    this.faults = faults;
    this.shared = shared;
  }

  private <T> T withKafka(Function<KafkaTopics, T> body) {
    if (shared != null) return body.apply(shared.get());
    try (KafkaTopics admin = new KafkaTopics(kafka)) {
      return body.apply(admin);
    }
  }

  /**
   * Commits the tasks' transactions, then waits until read_committed consumers see them.
   * {@code startedMs}: when the driver started the write (its clock); no task's transaction
   * is older.
   */
  public void commit(String queryId, List<TaskTransaction> txns, long[] lastOffsets, long startedMs) {
    commit(queryId, txns, lastOffsets, null, startedMs);
  }

  /**
   * {@code mark}: a streaming epoch's, recorded in the commit log once its transactions are
   * committed (by this driver, or by whoever rolls an interrupted commit forward).
   */
  public void commit(String queryId, List<TaskTransaction> txns, long[] lastOffsets, EpochMark mark,
      long startedMs) {
    if (!txns.isEmpty()) {
      try {
        requireTimeLeft(startedMs);
      } catch (KplexException tooLate) {
        // Nothing committed, nothing in the commit log: fence the write's transactions now,
        // so that none pins the topic until Kafka's own timeout. (After the log record, a
        // failure leaves them to recover(), which rolls the commit forward.)
        try {
          abort();
        } catch (RuntimeException e) {
          tooLate.addSuppressed(e);
        }
        throw tooLate;
      }
    }
    withKafka(admin -> {
      CommitLog log = new CommitLog(admin);
      log.begin(table, queryId, txns, mark);
      finish(admin, txns);
      log.end(table, mark);
      CommitVisibility.await(admin, table, topic, lastOffsets);
      return null;
    });
  }

  /**
   * Kafka aborts a transaction open longer than transaction.timeout.ms, and commits one
   * transaction at a time: a write whose oldest transaction has expired would become
   * visible in part. So a write that ran for nearly the timeout commits nothing and fails.
   * Its age is measured on the driver alone, from the write's start, which no task's
   * transaction precedes: no clock skew, only caution.
   */
  void requireTimeLeft(long startedMs) {
    long timeoutMs = transactionTimeoutMs(kafka);
    long marginMs = Math.min(timeoutMs / 2, COMMIT_MARGIN_MS);
    long openMs = System.currentTimeMillis() - startedMs;
    if (openMs > timeoutMs - marginMs) {
      throw Errors.commitTooLate(table, openMs, timeoutMs, marginMs);
    }
  }

  /** Time a commit keeps in hand before transaction.timeout.ms (at most half of it). */
  static final long COMMIT_MARGIN_MS = 30_000;

  /** The transaction.timeout.ms the tasks' producers use: the user's, else kplex's default. */
  public static long transactionTimeoutMs(KafkaConf kafka) {
    Object set = kafka.producer().get(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG);
    if (set == null) return DEFAULT_TRANSACTION_TIMEOUT_MS;
    try {
      long ms = Long.parseLong(set.toString().trim());
      if (ms > 0 && ms <= Integer.MAX_VALUE) return ms;
    } catch (NumberFormatException e) {
      // named below
    }
    throw Errors.badOption("kafka." + ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, set.toString(), "milliseconds > 0");
  }

  /**
   * The last epoch {@code query} committed to this table (after rolling a pending commit
   * forward), its written marks raised to what every query wrote to the table: a new query
   * (or one restarted after another wrote) never puts a virtual partition below what is
   * already there.
   */
  public EpochMark lastEpoch(String query) {
    return withKafka(admin -> {
      CommitLog log = new CommitLog(admin);
      EpochMark last = log.lastEpoch(table, query).orElse(EpochMark.start(table, query));
      return new EpochMark(table, query, last.epoch(), last.marks().withWrittenAtLeast(log.writtenHighs(table)),
          last.held());
    });
  }

  /** Per virtual partition, the largest order value any writer recorded for this table. */
  public Map<Integer, Long> writtenHighs() {
    return withKafka(admin -> new CommitLog(admin).writtenHighs(table));
  }

  /** Records an at-least-once epoch: its rows are flushed, there is no transaction to commit. */
  public void mark(EpochMark mark) {
    withKafka(admin -> {
      new CommitLog(admin).mark(mark);
      return null;
    });
  }

  /** Aborts a failed write: every open transaction of the table is fenced. */
  public void abort() {
    try (KafkaTopics admin = new KafkaTopics(kafka)) {
      TransactionFencer.fenceOpen(admin, table, Set.of());
    }
  }

  /** Rolls a half-done commit forward, then fences what is left open. Returns a report. */
  public String recover() {
    StringBuilder report = new StringBuilder();
    try (KafkaTopics admin = new KafkaTopics(kafka)) {
      CommitLog log = new CommitLog(admin);
      Optional<CommitLog.Pending> pending = log.pending(table);
      if (pending.isPresent()) {
        List<TaskTransaction> txns = pending.get().transactions;
        LOG.warn("kplex: finishing the commit of {} transactions that a previous driver of table {}"
            + " left half done", txns.size(), table);
        finish(admin, txns);
        log.end(pending.get());
        report.append("committed ").append(txns.size()).append(" transactions of an interrupted commit; ");
      }
      int fenced = TransactionFencer.fenceOpen(admin, table, Set.of());
      report.append("fenced ").append(fenced).append(" open transactions");
    }
    return report.toString();
  }

  /** Fences every other open transaction of the table, then commits these. */
  private void finish(KafkaTopics admin, List<TaskTransaction> txns) {
    Set<String> keep = new HashSet<>();
    for (TaskTransaction t : txns) keep.add(t.id());
    TransactionFencer.fenceOpen(admin, table, keep);
    new TransactionFinisher(kafka, table, faults).commitAll(txns);
  }
}
