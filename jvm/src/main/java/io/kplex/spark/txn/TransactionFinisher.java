package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.AccessErrors;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.testing.FaultInjection;
import io.kplex.spark.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Commits tasks' open transactions from the driver: each is resumed in a new producer by
 * producer id and epoch and committed ({@link ResumedCommit}), in parallel. A
 * retriable failure or a timeout is tried again with a fresh producer until
 * {@link #DEADLINE_MS}. A transaction Kafka aborted (fenced: its epoch was bumped by the
 * broker's timeout or by a fencer; or no longer known) cannot be committed by anyone: it
 * is reported back as lost, for the committer to settle ({@link PartialCommit}); a missing
 * ACL and anything else fail at once, with an error that says which ({@link CommitFailure}).
 *
 * <p>Not cut off by an interrupt ({@code query.stop()} interrupts the thread that commits):
 * every commit already under way runs to its end; the caller's interrupt status is kept.
 */
final class TransactionFinisher {
  private static final Logger LOG = LoggerFactory.getLogger(TransactionFinisher.class);
  /** How long one transaction's commit is retried. */
  static final long DEADLINE_MS = 120_000;
  private static final long BACKOFF_MS = 200;

  private final KafkaConf kafka;
  private final String table;
  private final FaultInjection faults;
  private final ResumedCommit resumed;
  private final Clock clock;

  /** {@code kafka}: the settings the errors name (the principal); {@code resumed}: how one commit is made. */
  TransactionFinisher(KafkaConf kafka, String table, FaultInjection faults, ResumedCommit resumed, Clock clock) {
    this.kafka = kafka;
    this.table = table;
    this.faults = faults;
    this.resumed = resumed;
    this.clock = clock;
  }

  /** Commits {@code txns}; returns those Kafka had aborted (empty: all committed). */
  List<TaskTransaction> commitAll(List<TaskTransaction> txns) {
    List<TaskTransaction> lost = new ArrayList<>();
    if (faults != null && faults.commitsOneByOne()) {
      for (int i = 0; i < txns.size(); i++) {
        if (!commit(txns.get(i))) lost.add(txns.get(i));
        faults.afterCommit(i + 1);
      }
      return lost;
    }
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(16, txns.size())));
    boolean interrupted = false;
    try {
      List<Future<Boolean>> done = new ArrayList<>();
      for (TaskTransaction t : txns) done.add(pool.submit(() -> commit(t)));
      for (int i = 0; i < done.size(); i++) {
        while (true) {
          try {
            if (!done.get(i).get()) lost.add(txns.get(i));
            break;
          } catch (InterruptedException e) {
            interrupted = true;  // finish what is under way; the caller sees the interrupt after
          } catch (ExecutionException e) {
            throw e.getCause() instanceof KplexException k ? k
                : Errors.commitFailed(table, e.getCause());
          }
        }
      }
      return lost;
    } finally {
      pool.shutdown();
      if (interrupted) Thread.currentThread().interrupt();
    }
  }

  /** Commits {@code t}: true, or false if Kafka had aborted it. */
  private boolean commit(TaskTransaction t) {
    long deadline = clock.millis() + DEADLINE_MS;
    for (int attempt = 1; ; attempt++) {
      try {
        resumed.commit(t);
        return true;
      } catch (RuntimeException e) {
        CommitFailure kind = CommitFailure.of(e);
        if (kind == CommitFailure.NOT_AUTHORIZED) {
          throw AccessErrors.notAuthorized(kafka, e, "WRITE", Errors.Resource.transactionalId(t.id()));
        }
        if (kind.aborted()) {
          LOG.warn("kplex: transaction {} of table {} was aborted by Kafka ({}: {})", t, table, kind, e.toString());
          return false;
        }
        if (!kind.retry() || clock.millis() + BACKOFF_MS > deadline) {
          throw Errors.commitFailed(kind.code, t.toString(), table, attempt, e);
        }
        LOG.warn("kplex: committing {} of table {} failed ({}: {}); trying again", t, table, kind, e.toString());
        Uninterruptibly.sleep(clock, BACKOFF_MS);
      }
    }
  }
}
