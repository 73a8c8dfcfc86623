package io.kplex.spark.conf;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.spec.OptionSpec;
import io.kplex.spark.spec.OptionSpecs;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.testing.FaultInjection;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;

/**
 * The settings of one write, resolved once on the driver by {@link ConfParser}. Precedence,
 * highest first:
 * <ol>
 *   <li>options of the write ({@code df.write.option(k, v)});</li>
 *   <li>the table's properties (TBLPROPERTIES, stored in its definition);</li>
 *   <li>the catalog's options ({@code spark.sql.catalog.kplex.<k>});</li>
 *   <li>the session's settings ({@code spark.kplex.<k>} for {@code kplex.<k>}, e.g. {@code SET spark.kplex.delivery=at_least_once});</li>
 *   <li>kplex's defaults (exactly_once, fail on NULL key and NULL order).</li>
 * </ol>
 * Kafka client settings ({@code kafka.*}): options of the write over the catalog's.
 */
public final class WriteConf implements Serializable {
  public final String table;
  public final String topic;
  public final int virtualPartitions;
  public final int physicalPartitions;
  public final Delivery delivery;
  public final NullKeyPolicy nullKey;
  public final NullOrderPolicy nullOrder;
  public final KafkaConf kafka;
  public final FaultInjection faults;
  /** Streaming writes: how far behind the largest order value seen a record may arrive. */
  public final long maxDelayMs;
  /** Streaming writes: what a record later than that meets. */
  public final LatePolicy latePolicy;
  public final String lateTopic;
  /** How long another writer's claim may go unrenewed before this write takes it over. */
  public final long claimTimeoutMs;
  /** Streaming writes: the records held back past which the source reads only the partitions that hold the watermark (-1: no cap). */
  public final long maxHeldRecords;
  /** Streaming writes: the folder for held records outside the checkpoint, or null (in the checkpoint). */
  public final String heldLocation;

  public WriteConf(TableDefinition def, Map<String, String> catalogOptions, Map<String, String> writeOptions) {
    this(def, catalogOptions, writeOptions, Map.of());
  }

  /** {@code session}: the session's {@code spark.kplex.*} settings as {@code kplex.*} keys. */
  public WriteConf(TableDefinition def, Map<String, String> catalogOptions, Map<String, String> writeOptions,
      Map<String, String> session) {
    checkOptions(writeOptions, def.name());
    ServerPolicy.current().checkStatement(writeOptions);
    checkSession(session);
    ConfParser settings = ConfParser.builder().options(writeOptions).table(def.properties())
        .catalog(catalogOptions).session(session).build();
    this.table = def.name();
    this.topic = def.topic();
    this.virtualPartitions = def.virtualPartitions();
    this.physicalPartitions = def.physicalPartitions();
    this.delivery = settings.enumConf(KplexOptions.DELIVERY, Delivery.class);
    this.nullKey = settings.enumConf(KplexOptions.NULL_KEY, NullKeyPolicy.class);
    this.nullOrder = settings.enumConf(KplexOptions.NULL_ORDER, NullOrderPolicy.class);
    this.kafka = KafkaConf.from(catalogOptions, writeOptions);
    this.faults = FaultInjection.of(settings.merged(), FaultInjection.armed(), settings::longConf);
    this.latePolicy = settings.enumConf(KplexOptions.LATE_POLICY, LatePolicy.class);
    this.maxDelayMs = settings.longConf(KplexOptions.MAX_DELAY_MS);
    this.lateTopic = settings.text(KplexOptions.LATE_TOPIC);
    this.claimTimeoutMs = settings.longConf(KplexOptions.WRITER_CLAIM_TIMEOUT_MS);
    this.maxHeldRecords = settings.longConf(KplexOptions.MAX_HELD_RECORDS);
    String location = settings.text(KplexOptions.HELD_LOCATION);
    this.heldLocation = location == null || location.isBlank() ? null : location.replaceAll("/+$", "");
    if (latePolicy == LatePolicy.SIDE_TOPIC && (lateTopic == null || lateTopic.isBlank())) {
      throw Errors.lateTopicNeeded(KplexOptions.LATE_POLICY, latePolicy.wire());
    }
  }

  /**
   * A write's kplex.* options are those options.json allows on a write: a misspelt one would
   * otherwise be ignored, its setting silently the default (as a misspelt table property is
   * refused, {@link TableProperties#validate}).
   */
  private static void checkOptions(Map<String, String> writeOptions, String table) {
    for (String key : writeOptions.keySet()) {
      String k = key.toLowerCase(java.util.Locale.ROOT);
      OptionSpec spec = OptionSpecs.find(k);
      if (!k.startsWith("kplex.") || spec != null && spec.settableAs(OptionSpec.Scope.WRITE)) {
        continue;
      }
      if (KplexOptions.TABLE_PROPERTIES.contains(k)) {
        throw Errors.fixedOnWrite(key, table, KplexOptions.WRITE_OPTIONS);
      }
      throw Errors.unknownWriteOption(key, TableProperties.closest(k, KplexOptions.WRITE_OPTIONS),
          KplexOptions.WRITE_OPTIONS);
    }
  }

  /**
   * The session's {@code spark.kplex.*} settings ({@code SET spark.kplex.max_delay_ms = ...}, the
   * way SQL sets them) are those options.json allows in a session: a misspelt one would be ignored,
   * as Spark ignores a setting it does not know.
   */
  private static void checkSession(Map<String, String> session) {
    for (String key : session.keySet()) {
      OptionSpec spec = OptionSpecs.find(key);
      // (A server's start-up switch is in every session's settings, copied from the SparkConf,
      // where alone ServerPolicy reads it.)
      if (spec != null && spec.settableAs(OptionSpec.Scope.SERVER)) continue;
      if (spec == null || !spec.settableAs(OptionSpec.Scope.SESSION)) {
        String suggestion = TableProperties.closest(key.toLowerCase(java.util.Locale.ROOT), KplexOptions.SESSION_SETTINGS);
        throw Errors.unknownSessionSetting("spark." + key, suggestion == null ? null : "spark." + suggestion,
            KplexOptions.SESSION_SETTINGS.stream().map(n -> "spark." + n).toList());
      }
    }
  }

  private WriteConf(WriteConf base, KafkaConf kafka) {
    this.table = base.table;
    this.topic = base.topic;
    this.virtualPartitions = base.virtualPartitions;
    this.physicalPartitions = base.physicalPartitions;
    this.delivery = base.delivery;
    this.nullKey = base.nullKey;
    this.nullOrder = base.nullOrder;
    this.kafka = kafka;
    this.faults = base.faults;
    this.latePolicy = base.latePolicy;
    this.maxDelayMs = base.maxDelayMs;
    this.lateTopic = base.lateTopic;
    this.claimTimeoutMs = base.claimTimeoutMs;
    this.maxHeldRecords = base.maxHeldRecords;
    this.heldLocation = base.heldLocation;
  }

  /** These settings with the Kafka client settings {@code kafka} instead. */
  public WriteConf withKafka(KafkaConf kafka) {
    return new WriteConf(this, kafka);
  }

  /** The writer claim timeout of these settings ({@link KplexOptions#WRITER_CLAIM_TIMEOUT_MS}). */
  public static long claimTimeoutMs(Map<String, String> settings) {
    return ConfParser.of(settings).longConf(KplexOptions.WRITER_CLAIM_TIMEOUT_MS);
  }

  /** The active session's {@code spark.kplex.*} settings, as {@code kplex.*} keys. */
  public static Map<String, String> sessionSettings() {
    Map<String, String> settings = new HashMap<>();
    org.apache.spark.sql.SparkSession.getActiveSession().foreach(session -> {
      io.kplex.spark.compat.Scala.asJava(session.conf().getAll()).forEach((k, v) -> {
        if (k.startsWith("spark.kplex.")) settings.put(k.substring("spark.".length()), v);
      });
      return null;
    });
    return settings;
  }

  public boolean exactlyOnce() {
    return delivery == Delivery.EXACTLY_ONCE;
  }

  @Override
  public String toString() {
    return table + " (topic " + topic + ", V=" + virtualPartitions + ", P=" + physicalPartitions
        + ", " + delivery + ", null key: " + nullKey + ", null order: " + nullOrder + ", " + kafka + ")";
  }
}
