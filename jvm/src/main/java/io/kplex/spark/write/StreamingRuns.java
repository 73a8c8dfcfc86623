package io.kplex.spark.write;

import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.txn.EpochMark;
import io.kplex.spark.txn.WriterLease;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;

/**
 * What the driver knows about one run of a streaming query writing a table, across its
 * micro-batches (Spark makes a new {@link KplexStreamingWrite} for every batch): whether
 * this run has recovered what an earlier driver left (once per run), the last epoch
 * mark this run committed, so an epoch does not read it back from {@code _kplex_commits},
 * and its claim on the table ({@link WriterLease}), held from its first epoch until the
 * query's thread ends.
 * A run is Spark's (query id, run id); a restarted query, in this JVM or another, is a
 * new run and reads everything afresh. One entry per (table, query) is kept.
 */
final class StreamingRuns {
  private StreamingRuns() {}

  /** Thread-local properties Spark's stream execution sets: the query's id, and its run's id as the job group. */
  static final String QUERY_ID = "sql.streaming.queryId";
  static final String JOB_GROUP = "spark.jobGroup.id";

  static final class Run {
    final String runId;
    /** Whether the topic's partitions and the principal's permissions were checked. */
    volatile boolean checked;
    boolean recovered;
    EpochMark last;
    /** This query's epochs that Kafka cut short (their rerun commits only what was lost), by epoch. */
    Map<Long, io.kplex.spark.txn.PartialCommit> partials = Map.of();
    /** The run's claim on the table (null: none yet, or given up after a failed epoch). */
    WriterLease lease;
    /** Kafka clients of the run's commits, closed when its claim ends. */
    private KafkaTopics clients;

    Run(String runId) {
      this.runId = runId;
    }

    synchronized KafkaTopics clients(KafkaConf kafka) {
      if (clients == null) clients = new KafkaTopics(kafka);
      return clients;
    }

    synchronized void closeClients() {
      if (clients != null) {
        clients.close();
        clients = null;
      }
    }
  }

  private static final Map<String, Run> RUNS = new ConcurrentHashMap<>();

  /** This run's state; a fresh one when the run id is unknown or changed. */
  static Run of(String table, String queryId) {
    SparkContext sc = SparkContext.getOrCreate();
    String runId = sc.getLocalProperty(QUERY_ID) == null ? null : sc.getLocalProperty(JOB_GROUP);
    if (runId == null) return new Run(null);
    return RUNS.compute(table + "\n" + queryId,
        (key, run) -> run != null && Objects.equals(run.runId, runId) ? run : new Run(runId));
  }
}
