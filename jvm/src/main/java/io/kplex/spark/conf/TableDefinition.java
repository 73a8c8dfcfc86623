package io.kplex.spark.conf;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.TopicNames;
import io.kplex.spark.spec.KplexOptions;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;

/**
 * The durable definition of a kplex table, stored as JSON in the compacted metadata
 * topic (docs/contract.md, G5). Immutable; {@link #properties()} keeps every kplex.*
 * table property as given, the named fields are the parsed, validated view of them, read
 * through {@link ConfParser} (a property not set: options.json's default).
 *
 * <pre>
 * {"format":"kplex-table","version":1,"name":"pageviews_by_user","topic":"pageviews_by_user",
 *  "virtual_partitions":9,"physical_partitions":3,"delivery":"exactly_once","key":null,
 *  "order":null,"null_key":"fail","null_order":"fail","created_ms":1700000000000,
 *  "properties":{"kplex.virtual_partitions":"9", ...}}
 * </pre>
 * A read-time table also has {@code "source"}: the topic it is computed from, or several,
 * comma-separated ({@code "clicks, views"}); its P is their partition count added up.
 */
public final class TableDefinition implements Serializable {
  public static final int FORMAT_VERSION = 1;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final String name;
  private final String topic;
  private final int virtualPartitions;
  private final int physicalPartitions;
  private final long createdMs;
  private final Map<String, String> properties;

  private TableDefinition(String name, Map<String, String> properties, long createdMs) {
    this.name = name;
    this.properties = Map.copyOf(properties);
    String source = properties.get(KplexOptions.SOURCE);
    String topic = ConfParser.of(properties).text(KplexOptions.TOPIC);
    this.topic = topic != null ? topic : source != null ? source : name;
    this.virtualPartitions = TableProperties.requirePositive(properties, KplexOptions.VIRTUAL_PARTITIONS, name);
    // A read-time table (kplex.source) has no topic of its own: P is the source's partition
    // count, recorded by the catalog when it creates the table (0 if unknown).
    this.physicalPartitions = source != null && !properties.containsKey(KplexOptions.PHYSICAL_PARTITIONS)
        ? 0 : TableProperties.requirePositive(properties, KplexOptions.PHYSICAL_PARTITIONS, name);
    this.createdMs = createdMs;
  }

  /** Validates the kplex.* entries of {@code tableProperties} (others are ignored). */
  public static TableDefinition create(String name, Map<String, String> tableProperties) {
    String unkept = controlPlaneProblem(name);
    if (unkept != null) {
      throw Errors.badTableName(name, unkept);
    }
    Map<String, String> props = TableProperties.validate(tableProperties, name);
    TableDefinition def = new TableDefinition(name, props, System.currentTimeMillis());
    // Its topic named after it (kplex.topic and kplex.late_topic are checked as topics by their
    // spec): Kafka's own refusal of a bad name names neither it nor the table.
    String problem = def.isReadTime() || !def.topic.equals(name) ? null : TopicNames.problem(name);
    if (problem != null) {
      throw Errors.badTableTopicName(name, problem);
    }
    return def;
  }

  /**
   * Why {@code name} cannot be a table's in kplex's control plane, or null: its records are
   * keyed {@code <table>} and {@code <kind>/<table>/...}, so a '/' in the name would make one
   * table's keys another's, and {@link io.kplex.spark.kafka.CompactedTopic#LAYOUT_KEY} is the
   * key of the control plane's own layout record.
   */
  static String controlPlaneProblem(String name) {
    if (name.indexOf('/') >= 0) {
      return "it holds '/', which kplex's control plane keys its records of a table by";
    }
    if (name.equals(io.kplex.spark.kafka.CompactedTopic.LAYOUT_KEY)) {
      return "'" + name + "' is the key of the control plane's layout record";
    }
    return null;
  }

  public String name() { return name; }
  public String topic() { return topic; }
  public int virtualPartitions() { return virtualPartitions; }
  public int physicalPartitions() { return physicalPartitions; }
  public Map<String, String> properties() { return properties; }
  /** A read-time table: virtual partitions computed from topic {@link #source()} when read. */
  public boolean isReadTime() { return properties.containsKey(KplexOptions.SOURCE); }
  public String source() { return properties.get(KplexOptions.SOURCE); }
  /** The topics of a read-time table's {@code kplex.source}, a comma-separated list, in order. */
  public java.util.List<String> sources() { return sourceList(source()); }

  /** {@code "clicks, views"} as [clicks, views]: names trimmed, empty entries left out. */
  public static java.util.List<String> sourceList(String text) {
    java.util.List<String> out = new java.util.ArrayList<>();
    if (text == null) return out;
    for (String t : text.split(",")) {
      if (!t.isBlank()) out.add(t.trim());
    }
    return out;
  }
  /** A property as stored, else {@code orElse} (a read-time table stores every default it has). */
  public String property(String key, String orElse) {
    String set = properties.get(key);
    return set != null ? set : orElse;
  }
  public short replicationFactor() {
    return (short) ConfParser.of(properties).intConf(KplexOptions.REPLICATION_FACTOR);
  }

  public byte[] toJson() {
    ObjectNode node = JSON.createObjectNode();
    node.put("format", "kplex-table");
    node.put("version", FORMAT_VERSION);
    node.put("name", name);
    node.put("topic", topic);
    if (isReadTime()) {
      node.put("source", source());
    }
    node.put("virtual_partitions", virtualPartitions);
    node.put("physical_partitions", physicalPartitions);
    ConfParser settings = ConfParser.of(properties);
    node.put("delivery", settings.text(KplexOptions.DELIVERY));
    node.put("key", properties.get(KplexOptions.KEY));
    node.put("order", properties.get(KplexOptions.ORDER));
    node.put("null_key", settings.text(KplexOptions.NULL_KEY));
    node.put("null_order", settings.text(KplexOptions.NULL_ORDER));
    node.put("created_ms", createdMs);
    ObjectNode props = node.putObject("properties");
    new TreeMap<>(properties).forEach(props::put);
    return node.toString().getBytes(StandardCharsets.UTF_8);
  }

  public static TableDefinition fromJson(byte[] bytes) {
    try {
      JsonNode node = JSON.readTree(bytes);
      int version = node.path("version").asInt(-1);
      if (!"kplex-table".equals(node.path("format").asText()) || version > FORMAT_VERSION) {
        throw Errors.definitionTooNew(node.path("format").asText(), version, FORMAT_VERSION);
      }
      Map<String, String> props = new TreeMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.path("properties").fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        props.put(e.getKey(), e.getValue().asText());
      }
      return new TableDefinition(node.path("name").asText(), props, node.path("created_ms").asLong());
    } catch (java.io.IOException e) {
      throw Errors.definitionUnreadable(e);
    }
  }

  @Override
  public String toString() {
    return "kplex table " + name + " (" + (isReadTime() ? "read-time view of topic " : "topic ") + topic
        + ", V=" + virtualPartitions + ", P=" + physicalPartitions + ")";
  }
}
