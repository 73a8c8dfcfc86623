package io.kplex.spark.read;

import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.conf.TableProperties;
import io.kplex.spark.catalog.VirtualTables;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.KafkaConf;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The settings of one read, resolved once on the driver. Three kinds of table:
 * <ul>
 *   <li>{@code TOPIC}: a plain topic, read as its physical partitions;</li>
 *   <li>{@code DERIVED}: a kplex-written table, read as its V virtual partitions, each
 *       from its physical partition (headers {@code kplex.vp}, {@code kplex.order});</li>
 *   <li>{@code VIRTUAL}: a read-time table ({@code kplex.source}), its V virtual
 *       partitions computed from the source while reading ({@link VirtualPartitionReader}).</li>
 * </ul>
 * Precedence of the read-time settings (max_delay_ms, late_policy, late_topic, null_key,
 * null_order), highest first: options of the read; the table's properties; the catalog's
 * options; defaults (0 ms, fail, fail, fail). Kafka client settings ({@code kafka.*}):
 * options of the read over the catalog's.
 */
public final class ReadConf implements Serializable {
  public enum Kind { TOPIC, DERIVED, VIRTUAL }

  public final Kind kind;
  public final String table;
  public final String topic;
  /** The topics read: a read-time table's sources (kplex.source), else the table's topic. */
  public final java.util.List<String> sources;
  public final int virtualPartitions;
  public final int physicalPartitions;
  public final long maxDelayMs;
  public final String latePolicy;
  public final String lateTopic;
  public final String nullKey;
  public final String nullOrder;
  public final KafkaConf kafka;
  public final ReadExpressions expressions;

  private ReadConf(KplexTable t, Map<String, String> merged, KafkaConf kafka) {
    TableDefinition def = t.definition().orElse(null);
    this.kind = def == null ? Kind.TOPIC : def.isVirtual() ? Kind.VIRTUAL : Kind.DERIVED;
    this.table = t.name();
    this.topic = t.topic();
    this.sources = kind == Kind.VIRTUAL ? def.sources() : java.util.List.of(t.topic());
    this.virtualPartitions = def == null ? 0 : def.virtualPartitions();
    this.physicalPartitions = def == null ? 0 : def.physicalPartitions();
    this.kafka = kafka;
    if (kind != Kind.VIRTUAL) {
      this.maxDelayMs = 0;
      this.latePolicy = this.lateTopic = this.nullKey = this.nullOrder = null;
      this.expressions = null;
      return;
    }
    TableProperties.oneOf(merged, KplexOptions.LATE_POLICY, KplexOptions.LATE_POLICIES);
    TableProperties.oneOf(merged, KplexOptions.NULL_KEY, KplexOptions.NULL_KEY_POLICIES);
    TableProperties.oneOf(merged, KplexOptions.NULL_ORDER, KplexOptions.NULL_ORDER_POLICIES);
    this.maxDelayMs = TableProperties.maxDelayMs(merged.getOrDefault(KplexOptions.MAX_DELAY_MS, "0"));
    this.latePolicy = merged.getOrDefault(KplexOptions.LATE_POLICY, "fail");
    this.lateTopic = merged.get(KplexOptions.LATE_TOPIC);
    this.nullKey = merged.getOrDefault(KplexOptions.NULL_KEY, "fail");
    this.nullOrder = merged.getOrDefault(KplexOptions.NULL_ORDER, "fail");
    Map<String, String> check = new HashMap<>(merged);
    check.put(KplexOptions.SOURCE, def.source());
    VirtualTables.validate(check, table);
    this.expressions = ReadExpressions.compile(table,
        def.property(KplexOptions.KEY, KplexOptions.DEFAULT_VIRTUAL_KEY),
        def.property(KplexOptions.ORDER, KplexOptions.DEFAULT_VIRTUAL_ORDER));
  }

  public static ReadConf resolve(KplexTable t, Map<String, String> readOptions) {
    boolean virtual = t.definition().map(TableDefinition::isVirtual).orElse(false);
    Map<String, String> merged = new HashMap<>();
    putKplex(merged, t.catalogOptions());
    t.definition().ifPresent(d -> putKplex(merged, d.properties()));
    for (Map.Entry<String, String> e : readOptions.entrySet()) {
      String k = e.getKey().toLowerCase(Locale.ROOT);
      if (!k.startsWith("kplex.")) continue;
      if (!KplexOptions.TABLE_PROPERTIES.contains(k)) {
        throw Errors.unknownProperty(e.getKey(), TableProperties.closest(k));
      }
      if (!virtual || !KplexOptions.READ_OVERRIDES.contains(k)) {
        throw Errors.fixedByDefinition(e.getKey(), t.name(), virtual);
      }
      merged.put(k, e.getValue().trim());
    }
    return new ReadConf(t, merged, KafkaConf.from(t.catalogOptions(), readOptions));
  }

  private static void putKplex(Map<String, String> into, Map<String, String> from) {
    from.forEach((k, v) -> {
      String key = k.toLowerCase(Locale.ROOT);
      if (key.startsWith("kplex.")) into.put(key, v);
    });
  }

  @Override
  public String toString() {
    switch (kind) {
      case TOPIC:
        return "topic " + topic;
      case DERIVED:
        return table + " (topic " + topic + ", V=" + virtualPartitions + ", P=" + physicalPartitions + ")";
      default:
        return table + " (read-time view of topic " + topic + ", V=" + virtualPartitions + ", "
            + expressions + ", max delay " + maxDelayMs + " ms, late records: " + latePolicy
            + (lateTopic != null && latePolicy.equals("side_topic") ? " to " + lateTopic : "") + ")";
    }
  }
}
