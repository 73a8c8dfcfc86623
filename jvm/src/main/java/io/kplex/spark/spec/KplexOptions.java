package io.kplex.spark.spec;

import java.util.List;

/**
 * The name of every setting, as constants; what each accepts (type, range, default, where it
 * may be set) is data, {@code options.json} ({@link OptionSpecs}). How the layers combine is
 * decided by {@code conf.ConfParser}; what values mean is documented in docs/sql.md.
 * Below every other package: the error catalogue names these keys too.
 */
public final class KplexOptions {
  private KplexOptions() {}

  public static final String VIRTUAL_PARTITIONS = "kplex.virtual_partitions";
  public static final String PHYSICAL_PARTITIONS = "kplex.physical_partitions";
  public static final String REPLICATION_FACTOR = "kplex.replication_factor";
  public static final String TOPIC = "kplex.topic";
  public static final String DELIVERY = "kplex.delivery";
  public static final String KEY = "kplex.key";
  public static final String ORDER = "kplex.order";
  public static final String NULL_KEY = "kplex.null_key";
  public static final String NULL_ORDER = "kplex.null_order";
  // A read-time (virtual) table's source.
  public static final String SOURCE = "kplex.source";
  // Event time, for read-time tables and streaming writes alike.
  public static final String MAX_DELAY_MS = "kplex.max_delay_ms";
  public static final String LATE_POLICY = "kplex.late_policy";
  public static final String LATE_TOPIC = "kplex.late_topic";
  /**
   * How long a writer's claim on a table may go unrenewed before another writer takes it
   * over (a session, catalog or write setting, not a table property): above the longest
   * pause of a driver (GC), see {@code txn/WriterLease}.
   */
  public static final String WRITER_CLAIM_TIMEOUT_MS = "kplex.writer_claim_timeout_ms";
  public static final long DEFAULT_WRITER_CLAIM_TIMEOUT_MS = OptionSpecs.of(WRITER_CLAIM_TIMEOUT_MS).longDefault();
  /**
   * A streaming write's cap on the records it holds back (-1: none): past it, its kplex
   * source reads only the partitions that hold the watermark (read/KplexMicroBatchStream).
   */
  public static final String MAX_HELD_RECORDS = "kplex.max_held_records";
  /**
   * A streaming write's folder for held records, outside its checkpoint (unset: in it), so
   * that they outlive the checkpoint: write/KplexWrite, docs/streaming.md.
   */
  public static final String HELD_LOCATION = "kplex.held_location";
  /** Read-time tables: their default key (the source record's key) and order (its timestamp), options.json's. */
  public static final String DEFAULT_VIRTUAL_KEY = OptionSpecs.of(KEY).readTimeDefault();
  public static final String DEFAULT_VIRTUAL_ORDER = OptionSpecs.of(ORDER).readTimeDefault();

  // Options of a read (spark.read.option(...) or SELECT ... FROM kplex.t WITH (...)), as
  // Spark's Kafka source names them. Offsets JSON: {"topic":{"0":23,"1":-2}}, -2 = earliest,
  // -1 = latest; timestamps in epoch milliseconds (the first record at or after it).
  public static final String STARTING_OFFSETS = "startingOffsets";
  public static final String STARTING_TABLE = "startingTable";
  /**
   * The session settings of {@link #STARTING_OFFSETS} and {@link #STARTING_TABLE} for streams
   * in SQL, as options.json declares them ({@code session_key}).
   */
  public static final String STARTING_OFFSETS_CONF = OptionSpecs.of(STARTING_OFFSETS).sessionKey();
  public static final String STARTING_TABLE_CONF = OptionSpecs.of(STARTING_TABLE).sessionKey();
  public static final String ENDING_OFFSETS = "endingOffsets";
  public static final String STARTING_TIMESTAMP = "startingTimestamp";
  public static final String ENDING_TIMESTAMP = "endingTimestamp";
  /** The fewest read tasks of a plain topic; a stream's tasks per micro-batch (Spark's Kafka source's name). */
  public static final String MIN_PARTITIONS = "minPartitions";
  // Options of a streaming read (see read/KplexMicroBatchStream).
  public static final String MAX_OFFSETS_PER_TRIGGER = "maxOffsetsPerTrigger";
  public static final String FAIL_ON_DATA_LOSS = "failOnDataLoss";
  /** After this long without a new record, a micro-batch releases what a kplex sink holds back. */
  public static final String IDLE_RELEASE_MS = "idleReleaseMs";
  /**
   * A source partition read to its end that is empty, or has had no new record for this
   * long, stops holding a kplex sink's watermark until its next record (-1: never).
   */
  public static final String IDLE_TIMEOUT_MS = "idleTimeoutMs";
  /** The session setting of {@link #IDLE_TIMEOUT_MS}, as {@link #RELEASE_AT_END_CONF} is of its option. */
  public static final String IDLE_TIMEOUT_MS_CONF = OptionSpecs.of(IDLE_TIMEOUT_MS).sessionKey();
  /** With Trigger.AvailableNow: release everything a kplex sink holds once the run has read all. */
  public static final String RELEASE_AT_END = "releaseAtEnd";
  /**
   * The consumer group a streaming query commits its committed offsets to, for monitoring only
   * (default {@code kplex.<table>.<query id>}; {@code false}: none). See kafka/MonitorGroup.
   */
  public static final String MONITOR_GROUP = "monitorGroup";
  /** The same for every kplex source of a session (SQL's STREAM(...) takes no read options). */
  public static final String RELEASE_AT_END_CONF = OptionSpecs.of(RELEASE_AT_END).sessionKey();
  /**
   * Table properties a read may override on a read-time table (the rest are fixed): the
   * kplex.* settings options.json allows as read options (a test keeps the two the same), in
   * the order errors name them.
   */
  public static final List<String> READ_OVERRIDES = List.of(MAX_DELAY_MS, LATE_POLICY, LATE_TOPIC,
      NULL_KEY, NULL_ORDER);

  /**
   * The kplex.* settings a write may give as options, as errors name them: those options.json
   * allows on a write, but the test hooks ({@code kplex.testing.*}), which are accepted and
   * never suggested.
   */
  public static final List<String> WRITE_OPTIONS = OptionSpecs.names(OptionSpec.Scope.WRITE).stream()
      .filter(n -> n.startsWith("kplex.") && !n.startsWith("kplex.testing.")).toList();

  /**
   * The kplex.* settings a session may give ({@code SET spark.<name>}), as errors name them: but
   * the test hooks, which are accepted and never suggested.
   */
  public static final List<String> SESSION_SETTINGS = OptionSpecs.names(OptionSpec.Scope.SESSION).stream()
      .filter(n -> n.startsWith("kplex.") && !n.startsWith("kplex.testing.")).toList();

  /** What a stream's session settings start with: {@code SET kplex.stream.releaseAtEnd = true}. */
  public static final String STREAM_SETTING_PREFIX = "kplex.stream.";

  /**
   * The settings a stream takes from its session ({@code SET kplex.stream.<option>}; SQL's
   * STREAM(...) takes no read options), as options.json names them ({@code session_key}).
   */
  public static final List<String> STREAM_SESSION_SETTINGS = OptionSpecs.all().stream()
      .map(OptionSpec::sessionKey).filter(java.util.Objects::nonNull).sorted().toList();

  /**
   * The options a read takes besides kplex.* and kafka.* ones, as errors name them: those
   * options.json allows on a read, and the table's name.
   */
  public static final List<String> READ_OPTIONS = java.util.stream.Stream.concat(
      OptionSpecs.names(OptionSpec.Scope.READ).stream().filter(n -> !n.startsWith("kplex.") && !n.startsWith("kafka.")),
      java.util.stream.Stream.of("table")).toList();

  /** The table name for {@code df.write.format("kplex").option("table", ...)}. */
  public static final String TABLE = "table";
  /** Passed to every Kafka client with the prefix removed (Spark's Kafka connector does the same). */
  public static final String KAFKA_PREFIX = "kafka.";
  public static final String BOOTSTRAP = "kafka.bootstrap.servers";
  /** The compacted topic holding a catalog's table definitions (a catalog option). */
  public static final String METADATA_TOPIC = "metadata_topic";
  public static final String DEFAULT_METADATA_TOPIC = OptionSpecs.of(METADATA_TOPIC).defaultValue();

  /**
   * The one Kafka client setting kplex reads itself: its exactly-once producers' transaction
   * timeout, which bounds how long a write may run before its commit (txn/ExactlyOnceCommitter).
   */
  public static final String TRANSACTION_TIMEOUT_MS = "kafka.transaction.timeout.ms";
  /** The catalog {@code spark.read/df.write.format("kplex")} goes through (KplexSource). */
  public static final String CATALOG = "catalog";

  /** The metadata topic a catalog's options name, or its default. */
  public static String metadataTopic(java.util.Map<String, String> catalogOptions) {
    String set = catalogOptions.get(METADATA_TOPIC);
    return set == null || set.isBlank() ? DEFAULT_METADATA_TOPIC : set;
  }

  /**
   * The table properties: those options.json allows as such (a test keeps the two the same),
   * in the order the catalog's errors name them.
   */
  public static final List<String> TABLE_PROPERTIES = List.of(
      VIRTUAL_PARTITIONS, PHYSICAL_PARTITIONS, REPLICATION_FACTOR, TOPIC, DELIVERY, KEY, ORDER,
      NULL_KEY, NULL_ORDER, SOURCE, MAX_DELAY_MS, LATE_POLICY, LATE_TOPIC,
      HELD_LOCATION);
}
