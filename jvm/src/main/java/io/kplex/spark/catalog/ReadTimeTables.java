package io.kplex.spark.catalog;

import io.kplex.spark.conf.ConfParser;
import io.kplex.spark.conf.LatePolicy;
import io.kplex.spark.conf.NullOrderPolicy;
import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.errors.Errors;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * Read-time tables ({@code kplex.source} set): a definition over an existing topic that
 * computes key, order and virtual partition while it is read, with no topic of its own.
 * The original kplex's "derive" jobs, as a table:
 *
 * <pre>
 * CREATE TABLE kplex.pageviews_by_user TBLPROPERTIES (
 *   'kplex.source' = 'pageviews', 'kplex.virtual_partitions' = '9',
 *   'kplex.key' = 'get_json_object(CAST(value AS STRING), "$.userid")',
 *   'kplex.order' = 'CAST(get_json_object(CAST(value AS STRING), "$.viewtime") AS BIGINT)',
 *   'kplex.max_delay_ms' = '30000', 'kplex.late_policy' = 'drop')
 * </pre>
 *
 * Key and order are Spark SQL expressions over the source's columns (defaults: the
 * record's {@code key} and {@code timestamp}); {@code read.ReadExpressions} evaluates them.
 * The stored definition carries every default explicitly, and P is the source's
 * partition count, so a plain consumer can redo the computation (docs/contract.md, G5).
 *
 * <p>{@code kplex.source} may list several topics ({@code 'clicks, views'}): their
 * partitions are merged into one event-time order per virtual partition, P is their
 * partition count added up, and ties (same order, key and value) go by topic name, then
 * partition and offset. Key and order are then computed alike for every source.
 */
public final class ReadTimeTables {
  private ReadTimeTables() {}

  public static boolean isReadTime(Map<String, String> tableProperties) {
    return tableProperties.keySet().stream().anyMatch(k -> k.equalsIgnoreCase(KplexOptions.SOURCE));
  }

  /** Checks that only a read-time table needs, after the common ones ({@code conf.TableProperties}). */
  public static void validate(Map<String, String> props, String table) {
    String source = props.get(KplexOptions.SOURCE);
    List<String> sources = TableDefinition.sourceList(source);
    if (sources.isEmpty()) {
      throw Errors.virtualNoSource(table);
    }
    if (new HashSet<>(sources).size() != sources.size()) {
      throw Errors.virtualSourceTwice(table, source);
    }
    String topic = props.get(KplexOptions.TOPIC);
    if (topic != null && !topic.equals(source)) {
      throw Errors.virtualOwnTopic(table, source);
    }
    ConfParser settings = ConfParser.of(props);
    if (settings.enumConf(KplexOptions.NULL_ORDER, NullOrderPolicy.class) == NullOrderPolicy.FIRST) {
      throw Errors.virtualNullOrderFirst(table);
    }
    if (settings.enumConf(KplexOptions.LATE_POLICY, LatePolicy.class) == LatePolicy.SIDE_TOPIC) {
      String late = props.get(KplexOptions.LATE_TOPIC);
      if (late == null || late.isBlank()) {
        throw Errors.virtualNoLateTopic(table);
      }
      if (sources.contains(late.trim())) {
        throw Errors.virtualLateTopicIsSource(table, late.trim());
      }
    }
  }

  /**
   * A read-time table's key and order expressions, checked by {@code read.ReadExpressions}:
   * read/ sits above this package, so the catalog hands the check in.
   */
  public interface Expressions {
    /** Whether they can be checked now (a Spark session is active). */
    boolean checkable();

    /** Resolves both; throws naming the bad property. */
    void check(String table, String key, String order);
  }

  /**
   * Validates and stores the definition of a read-time table; creates no topic except
   * the late-record topic of {@code late_policy = side_topic} when it is missing.
   */
  public static TableDefinition create(String table, Map<String, String> given, TableStore store,
      Expressions expressions, Map<String, String> catalog, Map<String, String> session) {
    TableDefinition def = definition(table, given, store, expressions, null, catalog, session);
    if (ConfParser.of(def.properties()).enumConf(KplexOptions.LATE_POLICY, LatePolicy.class) == LatePolicy.SIDE_TOPIC) {
      store.ensureTopic(ConfParser.of(def.properties()).text(KplexOptions.LATE_TOPIC), 1, Map.of());  // checked above
    }
    store.putDefinition(def);
    return def;
  }

  /**
   * The definition of a read-time table {@link #create} would store, checked in full, with
   * nothing changed. {@code goingAway}: a topic that is about to be deleted (the topic of the
   * table a REPLACE drops), which does not take the table's name; null for none. Its
   * {@code max_delay_ms} and {@code late_policy} are stored as given, else as the catalog's
   * options ({@code catalog}) or the session's settings ({@code session}, {@code kplex.*} keys)
   * set them when it is created, else their defaults: a read resolves them from the stored
   * definition alone, as {@code kplex read} outside Spark does.
   */
  public static TableDefinition definition(String table, Map<String, String> given, TableStore store,
      Expressions expressions, String goingAway, Map<String, String> catalog, Map<String, String> session) {
    Map<String, String> props = new TreeMap<>();
    given.forEach((k, v) -> {
      String key = k.toLowerCase(Locale.ROOT).startsWith("kplex.") ? k.toLowerCase(Locale.ROOT) : k;
      String before = props.put(key, v);
      if (before != null && !before.trim().equals(v.trim())) {
        throw Errors.propertyTwice(key, List.of(before.trim(), v.trim()));
      }
    });
    List<String> sources = TableDefinition.sourceList(props.get(KplexOptions.SOURCE));
    if (sources.contains(table) || (!sources.isEmpty() && !table.equals(goingAway) && store.visible(table))) {
      throw Errors.virtualNameTaken(table);
    }
    if (goingAway != null && sources.contains(goingAway)) {
      throw Errors.virtualSourceReplaced(table, goingAway);
    }
    if (!sources.isEmpty()) {
      props.put(KplexOptions.SOURCE, String.join(", ", sources));
    }
    int partitions = sources.isEmpty() ? 1 : 0;
    for (String source : sources) {
      partitions += store.partitionCount(source).orElseThrow(() -> Errors.unknownTopic(source));
    }
    String p = props.get(KplexOptions.PHYSICAL_PARTITIONS);
    if (p != null && !p.trim().equals(Integer.toString(partitions))) {
      throw Errors.virtualPartitions(table, sources, partitions, p);
    }
    props.put(KplexOptions.PHYSICAL_PARTITIONS, Integer.toString(partitions));
    props.putIfAbsent(KplexOptions.KEY, KplexOptions.DEFAULT_VIRTUAL_KEY);
    props.putIfAbsent(KplexOptions.ORDER, KplexOptions.DEFAULT_VIRTUAL_ORDER);
    ConfParser defaults = ConfParser.builder().catalog(catalog).session(session).build();
    // Stored as the table is created, so that Spark and a reader outside it (kplex read, the
    // Python reader: the definition alone) read it by the same rule whatever the catalog says later.
    for (String stored : List.of(KplexOptions.MAX_DELAY_MS, KplexOptions.LATE_POLICY, KplexOptions.NULL_KEY,
        KplexOptions.NULL_ORDER)) {
      props.putIfAbsent(stored, defaults.text(stored));
    }
    // A side_topic policy brings the late topic the catalog or the session names, if not given.
    if (LatePolicy.SIDE_TOPIC.wire().equals(props.get(KplexOptions.LATE_POLICY).trim().toLowerCase(Locale.ROOT))
        && defaults.text(KplexOptions.LATE_TOPIC) != null) {
      props.putIfAbsent(KplexOptions.LATE_TOPIC, defaults.text(KplexOptions.LATE_TOPIC));
    }
    TableDefinition def = TableDefinition.create(table, props);
    validate(def.properties(), table);
    ConfParser stored = ConfParser.of(def.properties());
    if (stored.enumConf(KplexOptions.LATE_POLICY, LatePolicy.class) == LatePolicy.SIDE_TOPIC) {
      LateTopics.check(store, table, stored.text(KplexOptions.LATE_TOPIC));
    }
    if (expressions.checkable()) {
      expressions.check(table, def.property(KplexOptions.KEY, null), def.property(KplexOptions.ORDER, null));
    }
    return def;
  }
}
