package io.kplex.spark.catalog;

import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.KafkaConf;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiFunction;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.SupportsWrite;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.streaming.ReportsSinkMetrics;
import org.apache.spark.sql.connector.write.LogicalWriteInfo;
import org.apache.spark.sql.connector.write.WriteBuilder;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A Kafka topic as a table. With a kplex definition it is a derived table (V virtual
 * partitions on P physical ones) that can be written; without, a plain topic to read.
 * Writes accept any schema: {@code write.WriteSchema} finds the key, order and value columns.
 *
 * <p>Reading and writing sit above this package (their builders take the table), so the
 * catalog that loads a table hands their builders in as an {@link Access}: catalog/ does
 * not depend on read/ or write/.
 */
public final class KplexTable implements SupportsRead, SupportsWrite, ReportsSinkMetrics {
  static final StructType HEADERS = new StructType().add("key", DataTypes.StringType)
      .add("value", DataTypes.BinaryType);
  public static final StructType TOPIC_SCHEMA = new StructType()
      .add("key", DataTypes.BinaryType)
      .add("value", DataTypes.BinaryType)
      .add("topic", DataTypes.StringType, false)
      .add("partition", DataTypes.IntegerType, false)
      .add("offset", DataTypes.LongType, false)
      .add("timestamp", DataTypes.TimestampType)
      .add("headers", DataTypes.createArrayType(HEADERS));
  static final StructType DERIVED_SCHEMA = TOPIC_SCHEMA
      .add("vpartition", DataTypes.IntegerType)
      .add("order_value", DataTypes.LongType);

  private final String name;
  private final String topic;
  private final Optional<TableDefinition> definition;
  private final Map<String, String> catalogOptions;
  private final String metadataTopic;
  private final Access access;
  /** The catalog that loaded this table (so a streaming write can find kplex's functions). */
  private TableCatalog catalog;

  public KplexTable withCatalog(TableCatalog catalog) {
    this.catalog = catalog;
    return this;
  }

  public Optional<TableCatalog> catalog() {
    return Optional.ofNullable(catalog);
  }

  /** How a table is read and written: {@code KplexScanBuilder::new} and {@code KplexWriteBuilder::new}. */
  public record Access(BiFunction<KplexTable, CaseInsensitiveStringMap, ScanBuilder> scan,
      BiFunction<KplexTable, LogicalWriteInfo, WriteBuilder> write) {}

  public KplexTable(String name, String topic, Optional<TableDefinition> definition,
      Map<String, String> catalogOptions, String metadataTopic, Access access) {
    this.name = name;
    this.topic = topic;
    this.definition = definition;
    this.catalogOptions = catalogOptions;
    this.metadataTopic = metadataTopic;
    this.access = access;
  }

  public Optional<TableDefinition> definition() { return definition; }

  /** False for a table standing for a topic that does not exist (see KplexCatalog.loadTable). */
  public boolean exists() {
    if (definition.isPresent()) return true;
    try (TableStore store = new TableStore(KafkaConf.from(catalogOptions), metadataTopic)) {
      return store.partitionCount(topic).isPresent();
    }
  }
  public String topic() { return topic; }

  /** The topics a read of this table reads: a read-time table's sources, else its topic. */
  public java.util.List<String> readTopics() {
    return definition.filter(TableDefinition::isReadTime).map(TableDefinition::sources).orElse(java.util.List.of(topic));
  }
  public Map<String, String> catalogOptions() { return catalogOptions; }
  public String metadataTopic() { return metadataTopic; }

  @Override public String name() { return name; }

  @Override
  public StructType schema() {
    return definition.isPresent() ? DERIVED_SCHEMA : TOPIC_SCHEMA;
  }

  @Override
  public Map<String, String> properties() {
    return definition.map(TableDefinition::properties).orElse(Map.of());
  }

  @Override
  public Set<TableCapability> capabilities() {
    return Set.of(TableCapability.BATCH_READ, TableCapability.BATCH_WRITE, TableCapability.ACCEPT_ANY_SCHEMA,
        TableCapability.MICRO_BATCH_READ, TableCapability.STREAMING_WRITE);
  }

  /** A streaming write's figures of its last epoch, for the query's progress (sink metrics). */
  private volatile Map<String, String> lastEpoch = Map.of();

  public void reportEpoch(Map<String, String> figures) {
    lastEpoch = Map.copyOf(figures);
  }

  @Override
  public Map<String, String> metrics() {
    return lastEpoch;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    io.kplex.spark.conf.TableProperties.refuseMisspeltReadOptions(options.asCaseSensitiveMap());
    return access.scan().apply(this, options);
  }

  @Override
  public WriteBuilder newWriteBuilder(LogicalWriteInfo info) {
    if (definition.isPresent() && definition.get().isReadTime()) {
      throw Errors.virtualReadOnly(name, definition.get().source());
    }
    return access.write().apply(this, info);
  }

  @Override
  public String toString() {
    return definition.map(TableDefinition::toString).orElse("kafka topic " + topic);
  }
}
