package io.kplex.spark.write;

import io.kplex.spark.txn.EpochMark;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;

/**
 * What the driver knows about one run of a streaming query writing a table, across its
 * micro-batches (Spark makes a new {@link KplexStreamingWrite} for every batch): whether
 * this run has recovered what an earlier driver left (once per run), and the last epoch
 * mark this run committed, so an epoch does not read it back from {@code _kplex_commits}.
 * A run is Spark's (query id, run id); a restarted query, in this JVM or another, is a
 * new run and reads everything afresh. One entry per (table, query) is kept.
 */
final class StreamingRuns {
  private StreamingRuns() {}

  /** The thread-local property Spark's stream execution sets to the run's id. */
  static final String RUN_ID = "sql.streaming.runId";

  static final class Run {
    final String runId;
    boolean recovered;
    EpochMark last;

    Run(String runId) {
      this.runId = runId;
    }
  }

  private static final Map<String, Run> RUNS = new ConcurrentHashMap<>();

  /** This run's state; a fresh one when the run id is unknown or changed. */
  static Run of(String table, String queryId) {
    SparkContext sc = SparkContext.getOrCreate();
    String runId = sc.getLocalProperty(RUN_ID);
    if (runId == null) return new Run(null);
    return RUNS.compute(table + "\n" + queryId,
        (key, run) -> run != null && Objects.equals(run.runId, runId) ? run : new Run(runId));
  }
}
