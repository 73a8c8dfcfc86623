package io.kplex.spark;

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
final class WriteConf implements Serializable {
  final String table;
  final String topic;
  final int virtualPartitions;
  final int physicalPartitions;
  final String delivery;
  final String nullKey;
  final String nullOrder;
  final KafkaConf kafka;
  final FaultInjection faults;

  WriteConf(TableDefinition def, Map<String, String> catalogOptions, Map<String, String> writeOptions) {
    this(def, catalogOptions, writeOptions, Map.of());
  }

  /** {@code session}: the session's {@code spark.kplex.*} settings as {@code kplex.*} keys. */
  WriteConf(TableDefinition def, Map<String, String> catalogOptions, Map<String, String> writeOptions,
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
  }

  private static void putLower(Map<String, String> into, Map<String, String> from) {
    for (Map.Entry<String, String> e : from.entrySet()) {
      String k = e.getKey().toLowerCase(Locale.ROOT);
      into.put(k.startsWith(KplexOptions.KAFKA_PREFIX) ? e.getKey() : k, e.getValue());
    }
  }

  boolean exactlyOnce() {
    return KplexOptions.EXACTLY_ONCE.equals(delivery);
  }

  @Override
  public String toString() {
    return table + " (topic " + topic + ", V=" + virtualPartitions + ", P=" + physicalPartitions
        + ", " + delivery + ", null key: " + nullKey + ", null order: " + nullOrder + ", " + kafka + ")";
  }
}
