package io.kplex.spark.write;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.catalog.TableStore;
import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import java.util.Map;
import io.kplex.spark.stream.StreamingBatch;
import io.kplex.spark.txn.ExactlyOnceCommitter;
import io.kplex.spark.txn.TransactionalIds;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Validates the written schema and the settings when the query is planned. */
public final class KplexWriteBuilder implements WriteBuilder {
  private static final Logger LOG = LoggerFactory.getLogger(KplexWriteBuilder.class);
  private final KplexTable table;
  private final LogicalWriteInfo info;

  public KplexWriteBuilder(KplexTable table, LogicalWriteInfo info) {
    this.table = table;
    this.info = info;
  }

  @Override
  public Write build() {
    TableDefinition def = table.definition().orElseThrow(() -> table.exists()
        ? Errors.notAKplexTable(table.topic()) : Errors.unknownTopic(table.topic()));
    WriteSchema schema = WriteSchema.resolve(info.schema());
    Map<String, String> options = info.options().asCaseSensitiveMap();
    WriteConf conf = new WriteConf(def, table.catalogOptions(), options, WriteConf.sessionSettings());
    // A streaming query builds a write for every micro-batch: check once per run.
    StreamingRuns.Run run = StreamingRuns.DRIVER.of(conf.table, info.queryId());
    if (run.runId == null || !run.checked) {
      check(conf);
      run.checked = true;
    }
    return new KplexWrite(conf, schema, info.queryId(), checkpoint(options, info.queryId()), table::reportEpoch,
        run.runId == null ? 0 : writerTasks(conf, run, info.queryId()));
  }

  /**
   * A micro-batch's writer tasks: min(V, Spark's default parallelism); but the first
   * micro-batch of a run that reruns an epoch whose commit a driver recorded and did not
   * finish (Kafka may have cut it short) runs as many tasks as that epoch did, whatever the
   * parallelism is now (executors added or gone): a task's transaction is committed or not as
   * a whole, and what a task releases depends on what else it read, so the rerun's tasks must
   * hold the virtual partitions the first run's did ({@link io.kplex.spark.txn.PartialCommit}).
   */
  private static int writerTasks(WriteConf conf, StreamingRuns.Run run, String queryId) {
    int tasks = Math.min(conf.virtualPartitions, SparkContext.getOrCreate().defaultParallelism());
    boolean firstOfRun;
    synchronized (run) {
      firstOfRun = !run.recovered;
    }
    StreamingBatch batch = StreamingBatch.current();
    if (!firstOfRun || !conf.exactlyOnce() || batch == null || !batch.queryId().equals(queryId)) return tasks;
    // Its own connection (once per run), not the run's shared clients: those are closed when the
    // run's claim ends, and a run that fails before it claims the table would leave them open.
    int before = new ExactlyOnceCommitter(conf.kafka, conf.table, conf.topic,
        conf.virtualPartitions, conf.faults, null).rerunTasks(queryId, batch.batchId());
    if (before <= 0 || before == tasks) return tasks;
    LOG.info("kplex: micro-batch {} of query {} into table {} runs again with the {} writer tasks of its first run"
        + " (its commit was recorded and not finished), not {}", batch.batchId(), queryId, conf.table, before, tasks);
    return before;
  }

  /**
   * Fails before any task starts if the topic lost its partitioning, or the principal may not
   * write it; under {@code late_policy = side_topic}, if the late topic is the table's own (its
   * late records would go back into its virtual partitions), another table's or a topic of
   * Kafka's or kplex's own, and otherwise makes the late topic if it is missing (one partition,
   * as a read-time table makes it), so that no task blocks on sending to a topic that does not
   * exist.
   */
  private void check(WriteConf conf) {
    try (TableStore store = new TableStore(conf.kafka, table.metadataTopic())) {
      int actual = store.partitionCount(conf.topic).orElseThrow(() -> Errors.tableTopicDeleted(conf.table, conf.topic));
      if (actual != conf.physicalPartitions) {
        throw Errors.partitionMismatch(conf.topic, actual, conf.physicalPartitions);
      }
      store.requireAllowed(conf.topic, AclOperation.WRITE);  // secured Kafka
      if (conf.latePolicy == io.kplex.spark.conf.LatePolicy.SIDE_TOPIC) {
        if (conf.lateTopic.equals(conf.topic)) throw Errors.lateTopicIsTable(conf.table, conf.lateTopic);
        io.kplex.spark.catalog.LateTopics.prepare(store, conf.table, conf.lateTopic);
        store.requireAllowed(conf.lateTopic, AclOperation.WRITE);
      }
      if (conf.exactlyOnce()) {
        store.requireTransactionalIds(TransactionalIds.prefix(conf.table));
      }
    }
  }

  /**
   * A streaming write's checkpoint: the query's {@code checkpointLocation} option, else the
   * session's {@code spark.sql.streaming.checkpointLocation}/&lt;query id&gt;; null if neither.
   */
  private static String checkpoint(Map<String, String> options, String queryId) {
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getKey().equalsIgnoreCase("checkpointLocation")) return e.getValue();
    }
    String[] root = {null};
    SparkSession.getActiveSession().foreach(session -> {
      root[0] = session.conf().get("spark.sql.streaming.checkpointLocation", null);
      return null;
    });
    return root[0] == null ? null : root[0] + "/" + queryId;
  }
}
