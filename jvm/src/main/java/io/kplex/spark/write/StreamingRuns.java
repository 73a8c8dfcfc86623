package io.kplex.spark.write;

import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.stream.StreamingBatch;
import io.kplex.spark.txn.EpochMark;
import io.kplex.spark.txn.ReadByOthers;
import io.kplex.spark.txn.PartialCommit;
import io.kplex.spark.txn.WriterLease;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;

/**
 * What the driver knows about the runs of streaming queries writing tables, across their
 * micro-batches (Spark makes a new {@link KplexStreamingWrite} for every batch): for each
 * run, whether it has recovered what an earlier driver left (once per run), the last epoch
 * mark it committed, so an epoch does not read it back from {@code _kplex_commits}, and its
 * claim on the table ({@link WriterLease}), held from its first epoch until the query's
 * thread ends.
 * A run is Spark's (query id, run id); a restarted query, in this JVM or another, is a
 * new run and reads everything afresh. One entry per (table, query) is kept.
 *
 * <p>Lifecycle: a run lives as long as the query's thread that runs it (the thread that
 * plans and commits its micro-batches, which owns its claim too). An entry is removed once
 * that thread has ended: when the run's claim ends (its renewer sees the thread gone), and
 * whenever a run is looked up, so a run that ended before it claimed the table goes too.
 * Removing it when the claim ends for another reason (a failed epoch) would make the next
 * epoch of a live run recover afresh and check the topic again; the thread decides instead.
 */
final class StreamingRuns {
  /** The runs of this driver JVM. */
  static final StreamingRuns DRIVER = new StreamingRuns();

  /** Thread-local property Spark's stream execution sets: its run's id, as the job group. */
  static final String JOB_GROUP = "spark.jobGroup.id";

  static final class Run {
    final String runId;
    /** The thread running the query (null for a write outside a run, which is not kept). */
    final Thread thread;
    /** Whether the topic's partitions and the principal's permissions were checked. */
    volatile boolean checked;
    /** Whether a failed commit to the monitoring group was logged in this run. */
    private boolean monitorWarned;

    /** Whether this run logged that its rows come without their source position. */
    private boolean positionsWarned;

    /** True the first time it is asked in this run: log that the source positions are lost once. */
    synchronized boolean warnPositionsOnce() {
      boolean first = !positionsWarned;
      positionsWarned = true;
      return first;
    }

    /** True the first time it is asked in this run: log a monitoring failure once. */
    synchronized boolean warnMonitorOnce() {
      boolean first = !monitorWarned;
      monitorWarned = true;
      return first;
    }
    boolean recovered;
    EpochMark last;
    /** The id of the table's topic the run writes to (checked before each epoch); null: not known. */
    String topicId;
    /** This query's epochs that Kafka cut short (their rerun commits only what was lost), by epoch. */
    private Map<Long, PartialCommit> partials = Map.of();
    /**
     * What other writers of the table read of the run's source, looked up once per run (no
     * other writer writes while the run holds its claim), and what it was looked up for
     * (source topic, its id and the query it resumed from).
     */
    private ReadByOthers readByOthers;
    private java.util.List<String> readByOthersOf;

    /** What other writers read of {@code topic}, of id {@code topicId} (not counting {@code resumedFrom}), looked up once per run. */
    synchronized ReadByOthers readByOthers(String topic, String topicId, String resumedFrom,
        java.util.function.Supplier<ReadByOthers> lookUp) {
      java.util.List<String> of = java.util.Arrays.asList(topic, topicId, resumedFrom);
      if (readByOthers == null || !of.equals(readByOthersOf)) {
        readByOthers = lookUp.get();
        readByOthersOf = of;
      }
      return readByOthers;
    }

    /** The last epoch of this run whose every task transaction the driver committed (-1: none). */
    private long committedInFull = -1;

    /** Epoch {@code epoch} is committed: every task transaction of it ({@code inFull}), or only some. */
    synchronized void committed(long epoch, boolean inFull) {
      committedInFull = inFull ? epoch : -1;
    }

    /**
     * The epoch whose task producers the next epoch's tasks may go on with ({@link KeptProducers}):
     * {@code last}, the table's last committed epoch, if this run committed it in full; else -1
     * (the first epoch of a run; an epoch Kafka cut short, whose rerun commits only the lost
     * tasks' transactions and fences the others).
     */
    synchronized long producersFrom(long last) {
      return committedInFull == last ? last : -1;
    }

    /** After a failed epoch, whose claim is given up: others may write before the next one. */
    synchronized void forgetReadByOthers() {
      readByOthers = null;
      readByOthersOf = null;
      committedInFull = -1;
    }

    /** The run's claim on the table (null: none yet, or given up after a failed epoch). */
    WriterLease lease;
    /** Kafka clients of the run's commits (the JVM's shared ones, leased), given back when its claim ends. */
    private KafkaTopics clients;

    Run(String runId, Thread thread) {
      this.runId = runId;
      this.thread = thread;
    }

    boolean ended() {
      return thread != null && !thread.isAlive();
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

    synchronized void partials(Map<Long, PartialCommit> partials) {
      this.partials = partials;
    }

    /** How epoch {@code epoch} was cut short in an earlier run, or null. */
    synchronized PartialCommit partial(long epoch) {
      return partials.get(epoch);
    }

    /** Epoch {@code epoch}'s partial commit is completed. */
    synchronized void completed(long epoch) {
      Map<Long, PartialCommit> left = new HashMap<>(partials);
      left.remove(epoch);
      partials = left;
    }
  }

  private final Map<String, Run> runs = new ConcurrentHashMap<>();

  /** This thread's run of query {@code queryId} writing {@code table}, as Spark's local properties name it. */
  Run of(String table, String queryId) {
    SparkContext sc = SparkContext.getOrCreate();
    String runId = sc.getLocalProperty(StreamingBatch.QUERY_ID) == null ? null : sc.getLocalProperty(JOB_GROUP);
    return of(table, queryId, runId, Thread.currentThread());
  }

  /**
   * Run {@code runId} of query {@code queryId} writing {@code table}, run by {@code thread}:
   * kept across its micro-batches; a fresh one when the run id is unknown or changed, and a
   * fresh one not kept for a write with no run id (no stream thread).
   */
  Run of(String table, String queryId, String runId, Thread thread) {
    removeEnded();
    if (runId == null) return new Run(null, null);
    return runs.compute(table + "\n" + queryId,
        (key, known) -> known != null && Objects.equals(known.runId, runId) ? known : new Run(runId, thread));
  }

  /** Run {@code run}'s claim on its table ended: its clients are closed, and it is forgotten if its thread ended. */
  void claimEnded(Run run) {
    run.closeClients();
    removeEnded();
  }

  /** Forgets the runs whose thread has ended (a stopped or failed query's). */
  void removeEnded() {
    runs.values().removeIf(Run::ended);
  }

  /** How many runs are kept. */
  int size() {
    return runs.size();
  }
}
