package io.kplex.spark.write;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.catalog.TableStore;
import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import java.util.Map;
import io.kplex.spark.txn.TransactionalIds;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/** Validates the written schema and the settings when the query is planned. */
public final class KplexWriteBuilder implements WriteBuilder {
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
        run.runId == null ? 0 : Math.min(conf.virtualPartitions, SparkContext.getOrCreate().defaultParallelism()));
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
