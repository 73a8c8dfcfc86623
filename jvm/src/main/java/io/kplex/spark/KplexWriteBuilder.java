package io.kplex.spark;

import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.Write;
import org.apache.spark.sql.connector.write.WriteBuilder;

/** Validates the written schema and the settings when the query is planned. */
final class KplexWriteBuilder implements WriteBuilder {
  private final KplexTable table;
  private final LogicalWriteInfo info;

  KplexWriteBuilder(KplexTable table, LogicalWriteInfo info) {
    this.table = table;
    this.info = info;
  }

  @Override
  public Write build() {
    TableDefinition def = table.definition().orElseThrow(() -> table.exists()
        ? Errors.notAKplexTable(table.topic()) : Errors.unknownTopic(table.topic()));
    WriteSchema schema = WriteSchema.resolve(info.schema());
    Map<String, String> options = info.options().asCaseSensitiveMap();
    WriteConf conf = new WriteConf(def, table.catalogOptions(), options, sessionSettings());
    try (TableStore store = new TableStore(conf.kafka, table.metadataTopic())) {
      int actual = store.partitionCount(conf.topic).orElseThrow(() -> Errors.unknownTopic(conf.topic));
      if (actual != conf.physicalPartitions) {
        throw Errors.partitionMismatch(conf.topic, actual, conf.physicalPartitions);
      }
    }
    return new KplexWrite(conf, schema, info.queryId());
  }

  /** The active session's {@code spark.kplex.*} settings, as {@code kplex.*} keys. */
  private static Map<String, String> sessionSettings() {
    Map<String, String> settings = new java.util.HashMap<>();
    SparkSession.getActiveSession().foreach(session -> {
      scala.jdk.javaapi.CollectionConverters.asJava(session.conf().getAll()).forEach((k, v) -> {
        if (k.startsWith("spark.kplex.")) settings.put(k.substring("spark.".length()), v);
      });
      return null;
    });
    return settings;
  }
}
