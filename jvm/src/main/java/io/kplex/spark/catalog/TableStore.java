package io.kplex.spark.catalog;

import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Kafka as the catalog's storage: topics are tables, and kplex table definitions live
 * in a compacted topic (one record per table, keyed by name; a tombstone drops it).
 */
public final class TableStore extends KafkaTopics {
  private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(TableStore.class);
  private final CompactedTopic definitions;

  public TableStore(KafkaConf kafka, String metadataTopic) {
    this(kafka, io.kplex.spark.kafka.KafkaClients.REAL, io.kplex.spark.time.Clock.SYSTEM, metadataTopic);
  }

  /** With the clients and the clock a read or write was given (a JUnit test's in-memory Kafka). */
  public TableStore(KafkaConf kafka, io.kplex.spark.kafka.KafkaClients clients, io.kplex.spark.time.Clock clock,
      String metadataTopic) {
    super(kafka, clients, clock);
    this.definitions = new CompactedTopic(this, metadataTopic);
  }

  public String metadataTopic() {
    return definitions.name();
  }

  /**
   * All live table definitions, by table name; one this kplex cannot read (written by a newer
   * kplex, or damaged) is left out with a warning that names it, so that it takes no other
   * table down with it: its own table's statements fail naming it ({@link #definition}).
   */
  public Map<String, TableDefinition> definitions() {
    Map<String, TableDefinition> defs = new HashMap<>();
    definitions.readAll().forEach((name, json) -> {
      try {
        defs.put(name, TableDefinition.fromJson(json));
      } catch (io.kplex.spark.errors.KplexException e) {
        LOG.warn("kplex: the definition of table {} in {} is left out: {}", name, metadataTopic(), e.getMessage());
      }
    });
    return defs;
  }

  /**
   * The topic each kplex-written table writes, by table name (a read-time table has none); of a
   * definition {@link #definitions} leaves out, as far as its JSON gives one ({@code topic},
   * else the name): a topic a table of a newer kplex writes is taken, for a new table as for
   * late records.
   */
  public Map<String, String> writtenTopics() {
    Map<String, String> out = new HashMap<>();
    definitions.readAll().forEach((name, json) -> {
      try {
        TableDefinition def = TableDefinition.fromJson(json);
        if (!def.isReadTime()) out.put(name, def.topic());
      } catch (io.kplex.spark.errors.KplexException e) {
        try {
          com.fasterxml.jackson.databind.JsonNode node = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json);
          if (node != null && node.isObject() && !node.has("source")) out.put(name, node.path("topic").asText(name));
        } catch (java.io.IOException | RuntimeException unreadable) {
          out.put(name, name);
        }
      }
    });
    return out;
  }

  /** The definition of table {@code name}, if it has one; one this kplex cannot read is an error naming the table. */
  public Optional<TableDefinition> definition(String name) {
    Optional<byte[]> json = definitions.latest(name).map(Map.Entry::getValue);
    try {
      return json.map(TableDefinition::fromJson);
    } catch (io.kplex.spark.errors.KplexException e) {
      throw Errors.definitionOfTable(name, metadataTopic(), e);
    }
  }

  /**
   * The table's definition; a name with none is an error naming it as what it is: a topic that
   * does not exist, or a plain Kafka topic.
   */
  public TableDefinition requireDefinition(String name) {
    return definition(name).orElseThrow(() -> partitionCount(name).isPresent()
        ? Errors.notAKplexTable(name) : Errors.unknownTopic(name));
  }

  public void putDefinition(TableDefinition def) {
    definitions.put(def.name(), def.toJson());
  }

  public void removeDefinition(String name) {
    definitions.put(name, null);
  }

  /** Topic names, internal ones (starting with '_') left out. */
  public List<String> tableNames() {
    List<String> names = new ArrayList<>();
    for (String t : topics()) {
      if (!t.startsWith("_")) {
        names.add(t);
      }
    }
    return names;
  }
}
