package io.kplex.spark;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.catalog.StagedKplexTable;
import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.catalog.TableStore;
import io.kplex.spark.catalog.ReadTimeTables;
import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.functions.KplexFunctions;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.read.KplexScanBuilder;
import io.kplex.spark.read.ReadExpressions;
import io.kplex.spark.txn.PendingCommits;
import io.kplex.spark.write.KplexWriteBuilder;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import org.apache.spark.sql.catalyst.analysis.NoSuchFunctionException;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.StagedTable;
import org.apache.spark.sql.connector.catalog.StagingTableCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableChange;
import org.apache.spark.sql.connector.catalog.functions.UnboundFunction;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * {@code spark.sql.catalog.kplex=io.kplex.spark.KplexCatalog}: every Kafka topic is a
 * table; {@code CREATE TABLE} makes a derived topic with P physical and V virtual
 * partitions and stores its definition in Kafka. Catalog options:
 * {@code kafka.bootstrap.servers} (required), any other {@code kafka.*} client setting,
 * {@code metadata_topic} (default {@code _kplex_tables}) and defaults for
 * {@code kplex.delivery}, {@code kplex.null_key}, {@code kplex.null_order}. With
 * {@code kplex.source}, {@code CREATE TABLE} makes a read-time table instead: a stored
 * definition and no topic ({@link ReadTimeTables}); dropping it leaves the source alone.
 * {@code REPLACE TABLE} (and {@code CREATE OR REPLACE}, {@code df.writeTo(t).replace()}) checks the
 * new definition in full before it drops the old table ({@link #stageReplace}).
 */
public class KplexCatalog implements StagingTableCatalog, FunctionCatalog {
  /** How this catalog's tables are read and written (catalog/ sits below read/ and write/). */
  private static final KplexTable.Access ACCESS = new KplexTable.Access(KplexScanBuilder::new, KplexWriteBuilder::new);
  /** How a read-time table's key and order are checked when it is created. */
  private static final ReadTimeTables.Expressions EXPRESSIONS = new ReadTimeTables.Expressions() {
    @Override
    public boolean checkable() {
      return ReadExpressions.sessionAvailable();
    }

    @Override
    public void check(String table, String key, String order) {
      ReadExpressions.compile(table, key, order);
    }
  };

  private String name;
  private Map<String, String> options;
  private String metadataTopic;
  /** Finishes commits dead drivers left half done; remembers, for this catalog's life, which tables it found clean. */
  private final PendingCommits pending = new PendingCommits();

  @Override
  public void initialize(String name, CaseInsensitiveStringMap options) {
    // On a restricted server, only the catalogs it started with, as it started them.
    io.kplex.spark.conf.ServerPolicy.current().checkCatalog(name, options.asCaseSensitiveMap(), getClass().getName());
    this.name = name;
    this.options = Map.copyOf(options.asCaseSensitiveMap());
    this.metadataTopic = KplexOptions.metadataTopic(options);
  }

  @Override
  public String name() {
    return name;
  }

  private TableStore store() {
    return new TableStore(KafkaConf.from(options), metadataTopic);
  }

  private KplexTable kplexTable(String table, String topic, Optional<TableDefinition> def) {
    return new KplexTable(table, topic, def, options, metadataTopic, ACCESS).withCatalog(this);
  }

  private static String tableName(Identifier ident) {
    if (ident.namespace().length > 0) {
      throw Errors.namespace(ident.toString());
    }
    return ident.name();
  }

  @Override
  public Identifier[] listTables(String[] namespace) {
    try (TableStore store = store()) {
      TreeSet<String> names = new TreeSet<>(store.tableNames());
      names.addAll(store.definitions().keySet());
      return names.stream().map(n -> Identifier.of(new String[0], n)).toArray(Identifier[]::new);
    }
  }

  @Override
  public Table loadTable(Identifier ident) throws NoSuchTableException {
    String table = tableName(ident);
    try (TableStore store = store()) {
      Optional<TableDefinition> def = store.definition(table);
      if (def.isPresent()) {
        if (!def.get().isReadTime()) {
          // Whatever touches the table finishes a commit a dead driver left half done.
          Map<String, String> settings = new java.util.HashMap<>(WriteConf.sessionSettings());
          settings.putAll(options);
          pending.finishQuietly(store, table, def.get().topic(), def.get().virtualPartitions(),
              WriteConf.claimTimeoutMs(settings));
        }
        return kplexTable(table, def.get().topic(), def);
      }
      // A missing topic still loads, as a table whose reads and writes fail naming the
      // topic: with NoSuchTableException, Spark would go on to read `kplex.<name>` as a
      // file in the kplex format and fail with an error that names neither.
      return kplexTable(table, table, Optional.empty());
    }
  }

  @Override
  public boolean tableExists(Identifier ident) {
    String table = tableName(ident);
    try (TableStore store = store()) {
      return store.definition(table).isPresent() || store.visible(table);
    }
  }

  /**
   * {@code CREATE TABLE}: a kplex table's columns are fixed (key, value, topic, partition,
   * offset, timestamp, headers, and a table's vpartition and order_value) and it is partitioned
   * by {@code kplex.virtual_partitions}, so a column list or {@code PARTITIONED BY} is refused
   * naming it, as {@code kplex sql check} does ({@code AS SELECT} gives the query's columns:
   * {@link #stageCreate}).
   */
  @Override
  public Table createTable(Identifier ident, Column[] columns, Transform[] partitions,
      Map<String, String> properties) throws TableAlreadyExistsException {
    if (columns.length > 0) {
      throw Errors.columnsGiven(tableName(ident), columns[0].name());
    }
    return create(ident, partitions, properties);
  }

  private Table create(Identifier ident, Transform[] partitions, Map<String, String> properties)
      throws TableAlreadyExistsException {
    String table = tableName(ident);
    if (partitions.length > 0) {
      throw Errors.partitionedBy(table, partitions[0].describe());
    }
    if (ReadTimeTables.isReadTime(properties)) {
      try (TableStore store = store()) {
        if (store.definition(table).isPresent()) {
          throw new TableAlreadyExistsException(ident);
        }
        TableDefinition def = ReadTimeTables.create(table, properties, store, EXPRESSIONS, options,
            WriteConf.sessionSettings());
        return kplexTable(table, def.topic(), Optional.of(def));
      }
    }
    TableDefinition def = TableDefinition.create(table, properties);
    try (TableStore store = store()) {
      if (store.definition(table).isPresent()) {
        throw new TableAlreadyExistsException(ident);
      }
      Optional<Integer> existing = requireFree(store, table, def);
      if (existing.isEmpty()) {
        createTopicOrYield(store, ident, def);
      }
      try {
        store.putDefinition(def);
      } catch (RuntimeException e) {
        // No definition, no table: a topic made for it would be left that kplex may neither
        // CREATE over nor DROP. The topic an admin made for it stays, as it was, and so does
        // one whose definition was stored after all (a write that timed out late).
        if (existing.isEmpty() && !definitionStored(store, table)) {
          try {
            store.deleteTopic(def.topic());
          } catch (RuntimeException left) {
            e.addSuppressed(left);
          }
        }
        throw e;
      }
    }
    return kplexTable(table, def.topic(), Optional.of(def));
  }

  /** How long a CREATE that lost the race for its topic waits for the winner's definition. */
  static final long CREATED_MEANWHILE_WAIT_MS = 5_000;

  /**
   * Creates the topic of new table {@code def}. Another client may have created it since
   * {@link #requireFree} found none: most often a second session's CREATE of the same table
   * (a scheduler's {@code CREATE TABLE IF NOT EXISTS} run twice at once), whose definition
   * follows its topic within moments. Once that definition is there, this CREATE finds the
   * table existing, as Spark expects (IF NOT EXISTS then does nothing); without one, the topic
   * is someone else's and the CREATE fails naming it.
   */
  private static void createTopicOrYield(TableStore store, Identifier ident, TableDefinition def)
      throws TableAlreadyExistsException {
    try {
      store.createTopic(def.topic(), def.physicalPartitions(), def.replicationFactor(), Map.of());
    } catch (KplexException e) {
      if (!(e.getCause() instanceof org.apache.kafka.common.errors.TopicExistsException)) throw e;
      long deadline = System.nanoTime() + CREATED_MEANWHILE_WAIT_MS * 1_000_000;
      do {
        if (store.definition(def.name()).isPresent()) throw new TableAlreadyExistsException(ident);
        try {
          Thread.sleep(100);
        } catch (InterruptedException stop) {
          Thread.currentThread().interrupt();
          throw e;
        }
      } while (System.nanoTime() < deadline);
      KplexException taken = Errors.topicCreatedMeanwhile(def.name(), def.topic(), CREATED_MEANWHILE_WAIT_MS);
      taken.addSuppressed(e);
      throw taken;
    }
  }

  /** Whether {@code table}'s definition is in the store; when that cannot be told, no. */
  private static boolean definitionStored(TableStore store, String table) {
    try {
      return store.definition(table).isPresent();
    } catch (RuntimeException e) {
      return false;  // a definition without its topic is DROPped; a topic without one is not
    }
  }

  /**
   * The partition count of the topic a new table {@code table} would write, if it exists
   * (empty: kplex creates it), once the topic is found free for it: not Kafka's own
   * ({@link io.kplex.spark.kafka.KafkaTopics#KAFKA_INTERNAL}) or kplex's (its metadata topic, its commit log), not another table's, and
   * if it exists, never written (every end offset 0: one an admin made for the table, named
   * with {@code kplex.topic}). DROP TABLE deletes the topic, so a table must not take one with
   * someone's records in it.
   */
  private Optional<Integer> requireFree(TableStore store, String table, TableDefinition def) {
    String topic = def.topic();
    if (io.kplex.spark.kafka.KafkaTopics.KAFKA_INTERNAL.contains(topic)) throw Errors.topicOfKafka(table, topic);
    if (topic.equals(metadataTopic)) throw Errors.topicOfDefinitions(table, topic);
    if (topic.equals(io.kplex.spark.txn.CommitLog.TOPIC)) throw Errors.topicOfCommitLog(table, topic);
    store.writtenTopics().forEach((other, itsTopic) -> {
      if (itsTopic.equals(topic) && !other.equals(table)) throw Errors.topicOfAnotherTable(table, topic, other);
    });
    Optional<Integer> existing = store.partitionCount(topic);
    if (existing.isPresent()) {
      Map<Integer, Long> ends = store.endOffsets(topic, existing.get());
      if (ends.values().stream().anyMatch(end -> end > 0)) throw Errors.topicWritten(table, topic, ends);
      if (existing.get() != def.physicalPartitions()) {
        throw Errors.partitionMismatch(topic, existing.get(), def.physicalPartitions());
      }
    }
    return existing;
  }

  /**
   * {@code CREATE TABLE ... AS SELECT} and {@code df.writeTo(t).create()}: the table is made
   * at once, as Spark makes it for a catalog without staging, and dropped again if the write
   * fails.
   */
  @Override
  public StagedTable stageCreate(Identifier ident, Column[] columns, Transform[] partitions,
      Map<String, String> properties) throws TableAlreadyExistsException {
    return new StagedKplexTable(create(ident, partitions, properties), () -> dropTable(ident));
  }

  @Override
  @SuppressWarnings("deprecation")
  public StagedTable stageCreate(Identifier ident, StructType schema, Transform[] partitions,
      Map<String, String> properties) throws TableAlreadyExistsException {
    return stageCreate(ident, new Column[0], partitions, properties);
  }

  /**
   * {@code REPLACE TABLE} and {@code df.writeTo(t).replace()}: the new definition is checked
   * as {@code CREATE TABLE} checks it (its properties, its topic free for it, a read-time
   * table's sources and expressions) before the old table is dropped, so a refused definition
   * leaves the table, its topic and its records as they were. Then the old table is dropped
   * (its topic deleted) and the new one made; a write that fails drops it again. What only the
   * broker decides as it makes the topic (replicas, ACLs, policies) fails after the drop.
   * Spark's own replace for a catalog without staging drops first and checks after.
   */
  @Override
  public StagedTable stageReplace(Identifier ident, Column[] columns, Transform[] partitions,
      Map<String, String> properties) throws NoSuchTableException {
    if (!tableExists(ident)) {
      throw new NoSuchTableException(ident);
    }
    return replace(ident, columns, partitions, properties);
  }

  @Override
  @SuppressWarnings("deprecation")
  public StagedTable stageReplace(Identifier ident, StructType schema, Transform[] partitions,
      Map<String, String> properties) throws NoSuchTableException {
    return stageReplace(ident, new Column[0], partitions, properties);
  }

  /** {@code CREATE OR REPLACE TABLE}, {@code df.writeTo(t).createOrReplace()}: as {@link #stageReplace}. */
  @Override
  public StagedTable stageCreateOrReplace(Identifier ident, Column[] columns, Transform[] partitions,
      Map<String, String> properties) {
    return replace(ident, columns, partitions, properties);
  }

  @Override
  @SuppressWarnings("deprecation")
  public StagedTable stageCreateOrReplace(Identifier ident, StructType schema, Transform[] partitions,
      Map<String, String> properties) {
    return stageCreateOrReplace(ident, new Column[0], partitions, properties);
  }

  private StagedTable replace(Identifier ident, Column[] columns, Transform[] partitions,
      Map<String, String> properties) {
    String table = tableName(ident);
    if (partitions.length > 0) {
      throw Errors.partitionedBy(table, partitions[0].describe());  // before the drop, as every check
    }
    try (TableStore store = store()) {
      Optional<TableDefinition> old = store.definition(table);
      if (old.isEmpty() && store.visible(table)) {
        throw Errors.dropPlainTopic(table);
      }
      String goingAway = old.filter(d -> !d.isReadTime()).map(TableDefinition::topic).orElse(null);
      if (goingAway != null) {
        // The drop would keep a topic that holds others' records (deleteTableTopic), which the
        // new definition, whatever it is, could then not take or would stand beside: refused
        // now, before the drop (DROP TABLE, then CREATE, is the way to leave that topic).
        Map<Integer, Long> others = store.describe(goingAway)
            .map(d -> othersRecords(store, table, goingAway, d)).orElse(null);
        if (others != null) throw Errors.topicOthersRecords(table, goingAway, others);
      }
      if (ReadTimeTables.isReadTime(properties)) {
        ReadTimeTables.definition(table, properties, store, EXPRESSIONS, goingAway, options,
            WriteConf.sessionSettings());
      } else {
        TableDefinition def = TableDefinition.create(table, properties);
        if (!def.topic().equals(goingAway)) requireFree(store, table, def);
      }
    }
    dropTable(ident);
    try {
      return new StagedKplexTable(create(ident, partitions, properties), () -> dropTable(ident));
    } catch (TableAlreadyExistsException e) {
      throw new IllegalStateException("kplex: table " + table + " was created again while it was being replaced", e);
    }
  }

  @Override
  @SuppressWarnings("deprecation")
  public Table createTable(Identifier ident, StructType schema, Transform[] partitions,
      Map<String, String> properties) throws TableAlreadyExistsException {
    if (schema.fields().length > 0) {
      throw Errors.columnsGiven(tableName(ident), schema.fields()[0].name());
    }
    return create(ident, partitions, properties);
  }

  @Override
  public Table alterTable(Identifier ident, TableChange... changes) {
    throw Errors.cannotAlter();
  }

  @Override
  public boolean dropTable(Identifier ident) {
    String table = tableName(ident);
    try (TableStore store = store()) {
      Optional<TableDefinition> def = store.definition(table);
      if (def.isEmpty()) {
        if (store.visible(table)) {
          throw Errors.dropPlainTopic(table);
        }
        return false;
      }
      if (!def.get().isReadTime()) {
        deleteTableTopic(store, table, def.get().topic());
      }
      store.removeDefinition(table);
      // A table created again under this name starts with no marks of what was written
      // (best effort: a principal that may drop a table but not write kplex's commit log
      // leaves them; a new table of that name then starts above them).
      try {
        new io.kplex.spark.txn.CommitLog(store).forgetMarks(table);
      } catch (RuntimeException e) {
        org.slf4j.LoggerFactory.getLogger(KplexCatalog.class).warn(
            "kplex: table {} dropped; its epoch marks in {} stay: {}", table, io.kplex.spark.txn.CommitLog.TOPIC, e.toString());
      }
      return true;
    }
  }

  /**
   * DROP's part of a derived table's topic: deleted, unless it was deleted and created again
   * outside kplex after kplex wrote to it (its id is not the one the commit log recorded at
   * the table's first write) and holds records: those are others', and stay, with a warning
   * (a CREATE of the table over the topic then names them). A topic already gone is left so.
   */
  private static void deleteTableTopic(TableStore store, String table, String topic) {
    Optional<org.apache.kafka.clients.admin.TopicDescription> described = store.describe(topic);
    if (described.isEmpty()) return;
    Map<Integer, Long> others = othersRecords(store, table, topic, described.get());
    if (others != null) {
      org.slf4j.LoggerFactory.getLogger(KplexCatalog.class).warn("kplex: table {} dropped; its topic '{}' stays: it was"
          + " deleted and created again outside kplex after kplex wrote to it, and holds records kplex did not write"
          + " (end offsets {})", table, topic, others);
      return;
    }
    store.deleteTopic(topic);
  }

  /**
   * The end offsets of {@code table}'s topic if it holds others' records: it was deleted and
   * created again outside kplex after kplex wrote to it (its id is not the one the commit log
   * recorded) and holds records; else null. A commit log kplex cannot read tells nothing: an
   * empty topic is anyone's to delete (null), one that holds records is refused naming the log
   * ({@code TOPIC_IN_USE.UNVERIFIED}), as whose records they are cannot be told.
   */
  private static Map<Integer, Long> othersRecords(TableStore store, String table, String topic,
      org.apache.kafka.clients.admin.TopicDescription described) {
    String id = io.kplex.spark.kafka.KafkaTopics.topicId(described);
    String wrote;
    try {
      wrote = new io.kplex.spark.txn.CommitLog(store).writtenTopicId(table).filter(w -> !w.isEmpty()).orElse(null);
    } catch (RuntimeException e) {
      Map<Integer, Long> ends = store.endOffsets(topic, described.partitions().size());
      if (ends.values().stream().allMatch(end -> end == 0)) return null;
      throw Errors.tableTopicUnverified(table, topic, io.kplex.spark.txn.CommitLog.TOPIC, e);
    }
    if (id == null || wrote == null || id.equals(wrote)) return null;
    Map<Integer, Long> ends = store.endOffsets(topic, described.partitions().size());
    return ends.values().stream().anyMatch(end -> end > 0) ? new java.util.TreeMap<>(ends) : null;
  }

  @Override
  public void renameTable(Identifier from, Identifier to) {
    throw Errors.cannotRename();
  }

  @Override
  public Identifier[] listFunctions(String[] namespace) {
    return KplexFunctions.ALL.keySet().stream().map(n -> Identifier.of(new String[0], n))
        .toArray(Identifier[]::new);
  }

  @Override
  public UnboundFunction loadFunction(Identifier ident) throws NoSuchFunctionException {
    UnboundFunction f = ident.namespace().length == 0 ? KplexFunctions.ALL.get(ident.name()) : null;
    if (f == null) {
      throw new NoSuchFunctionException(ident);
    }
    return f;
  }
}
