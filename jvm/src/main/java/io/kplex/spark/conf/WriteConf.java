package io.kplex.spark.conf;

import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.testing.FaultInjection;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The settings of one write, resolved once on the driver. Precedence, highest first:
 * <ol>
 *   <li>options of the write ({@code df.write.option(k, v)});</li>
 *   <li>the table's properties (TBLPROPERTIES, stored in its definition);</li>
 *   <li>the catalog's options ({@code spark.sql.catalog.kplex.<k>});</li>
 *   <li>the session's settings ({@code spark.kplex.<k>} for {@code kplex.<k>}, e.g. {@code SET spark.kplex.delivery=at_least_once});</li>
 *   <li>kplex's defaults (exactly_once, fail on NULL key and NULL order).</li>
 * </ol>
 * Kafka client settings ({@code kafka.*}) follow the same precedence.
 */
public final class WriteConf implements Serializable {
  public final String table;
  public final String topic;
  public final int virtualPartitions;
  public final int physicalPartitions;
  public final String delivery;
  public final String nullKey;
  public final String nullOrder;
  public final KafkaConf kafka;
  public final FaultInjection faults;
  /** Streaming writes: how far behind the largest order value seen a record may arrive. */
  public final long maxDelayMs;
  /** Streaming writes: what a record later than that meets (fail, drop, side_topic). */
  public final String latePolicy;
  public final String lateTopic;
  /** How long another writer's claim may go unrenewed before this write takes it over. */
  public final long claimTimeoutMs;

  public WriteConf(TableDefinition def, Map<String, String> catalogOptions, Map<String, String> writeOptions) {
    this(def, catalogOptions, writeOptions, Map.of());
  }

  /** {@code session}: the session's {@code spark.kplex.*} settings as {@code kplex.*} keys. */
  public WriteConf(TableDefinition def, Map<String, String> catalogOptions, Map<String, String> writeOptions,
      Map<String, String> session) {
    Map<String, String> merged = new HashMap<>();
    putLower(merged, session);
    putLower(merged, catalogOptions);
    putLower(merged, def.properties());
    putLower(merged, writeOptions);
    TableProperties.oneOf(merged, KplexOptions.DELIVERY, KplexOptions.DELIVERIES);
    TableProperties.oneOf(merged, KplexOptions.NULL_KEY, KplexOptions.NULL_KEY_POLICIES);
    TableProperties.oneOf(merged, KplexOptions.NULL_ORDER, KplexOptions.NULL_ORDER_POLICIES);
    this.table = def.name();
    this.topic = def.topic();
    this.virtualPartitions = def.virtualPartitions();
    this.physicalPartitions = def.physicalPartitions();
    this.delivery = merged.getOrDefault(KplexOptions.DELIVERY, KplexOptions.EXACTLY_ONCE);
    this.nullKey = merged.getOrDefault(KplexOptions.NULL_KEY, "fail");
    this.nullOrder = merged.getOrDefault(KplexOptions.NULL_ORDER, "fail");
    this.kafka = KafkaConf.from(catalogOptions, writeOptions);
    this.faults = new FaultInjection(merged);
    TableProperties.oneOf(merged, KplexOptions.LATE_POLICY, KplexOptions.LATE_POLICIES);
    this.maxDelayMs = TableProperties.maxDelayMs(merged.getOrDefault(KplexOptions.MAX_DELAY_MS, "0"));
    this.latePolicy = merged.getOrDefault(KplexOptions.LATE_POLICY, "fail");
    this.lateTopic = merged.get(KplexOptions.LATE_TOPIC);
    this.claimTimeoutMs = claimTimeoutMs(merged);
    if ("side_topic".equals(latePolicy) && (lateTopic == null || lateTopic.isBlank())) {
      throw Errors.badOption(KplexOptions.LATE_POLICY, latePolicy, "'side_topic' needs '"
          + KplexOptions.LATE_TOPIC + "', the topic that receives late records");
    }
  }

  /** The writer claim timeout of these settings ({@link KplexOptions#WRITER_CLAIM_TIMEOUT_MS}). */
  public static long claimTimeoutMs(Map<String, String> settings) {
    String set = settings.get(KplexOptions.WRITER_CLAIM_TIMEOUT_MS);
    if (set == null) return KplexOptions.DEFAULT_WRITER_CLAIM_TIMEOUT_MS;
    try {
      long ms = Long.parseLong(set.trim());
      if (ms >= MIN_CLAIM_TIMEOUT_MS) return ms;
    } catch (NumberFormatException e) {
      // named below
    }
    throw Errors.badOption(KplexOptions.WRITER_CLAIM_TIMEOUT_MS, set, "milliseconds >= " + MIN_CLAIM_TIMEOUT_MS
        + " (a claim is renewed every second)");
  }

  static final long MIN_CLAIM_TIMEOUT_MS = 2_000;

  /** The active session's {@code spark.kplex.*} settings, as {@code kplex.*} keys. */
  public static Map<String, String> sessionSettings() {
    Map<String, String> settings = new HashMap<>();
    org.apache.spark.sql.SparkSession.getActiveSession().foreach(session -> {
      scala.jdk.javaapi.CollectionConverters.asJava(session.conf().getAll()).forEach((k, v) -> {
        if (k.startsWith("spark.kplex.")) settings.put(k.substring("spark.".length()), v);
      });
      return null;
    });
    return settings;
  }

  private static void putLower(Map<String, String> into, Map<String, String> from) {
    for (Map.Entry<String, String> e : from.entrySet()) {
      String k = e.getKey().toLowerCase(Locale.ROOT);
      into.put(k.startsWith(KplexOptions.KAFKA_PREFIX) ? e.getKey() : k, e.getValue());
    }
  }

  public boolean exactlyOnce() {
    return KplexOptions.EXACTLY_ONCE.equals(delivery);
  }

  @Override
  public String toString() {
    return table + " (topic " + topic + ", V=" + virtualPartitions + ", P=" + physicalPartitions
        + ", " + delivery + ", null key: " + nullKey + ", null order: " + nullOrder + ", " + kafka + ")";
  }
}
