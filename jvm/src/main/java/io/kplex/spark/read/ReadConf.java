package io.kplex.spark.read;

import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.conf.ConfParser;
import io.kplex.spark.conf.LatePolicy;
import io.kplex.spark.conf.NullKeyPolicy;
import io.kplex.spark.conf.NullOrderPolicy;
import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.conf.TableProperties;
import io.kplex.spark.catalog.ReadTimeTables;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.spec.OptionSpec;
import io.kplex.spark.spec.OptionSpecs;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Function;

/**
 * The settings of one read, resolved once on the driver. Three kinds of table:
 * <ul>
 *   <li>{@code TOPIC}: a plain topic, read as its physical partitions;</li>
 *   <li>{@code DERIVED}: a kplex-written table, read as its V virtual partitions, each
 *       from its physical partition (headers {@code kplex.vp}, {@code kplex.order});</li>
 *   <li>{@code READ_TIME}: a read-time table ({@code kplex.source}), its V virtual
 *       partitions computed from the source while reading ({@link VirtualPartitionReader}).</li>
 * </ul>
 * The read-time settings (max_delay_ms, late_policy, late_topic, null_key, null_order) are
 * resolved by {@link ConfParser}, highest first: options of the read; the table's properties;
 * the catalog's options; defaults (0 ms, fail, fail, fail). No session settings: those are
 * for writes. Kafka client settings ({@code kafka.*}): options of the read over the catalog's.
 */
public final class ReadConf implements Serializable {
  public enum Kind { TOPIC, DERIVED, READ_TIME }

  public final Kind kind;
  public final String table;
  public final String topic;
  /** The topics read: a read-time table's sources (kplex.source), else the table's topic. */
  public final java.util.List<String> sources;
  public final int virtualPartitions;
  public final int physicalPartitions;
  public final long maxDelayMs;
  public final LatePolicy latePolicy;
  public final String lateTopic;
  public final NullKeyPolicy nullKey;
  public final NullOrderPolicy nullOrder;
  public final KafkaConf kafka;
  public final ReadExpressions expressions;
  /** Where the read's Kafka consumers come from ({@link KafkaClients#REAL}; a JUnit test injects its own). */
  public final io.kplex.spark.kafka.KafkaClients clients;
  /** The time the read reads (stalls, idle partitions, release timing): {@link io.kplex.spark.time.Clock#SYSTEM}. */
  public final io.kplex.spark.time.Clock clock;
  /**
   * Offsets the broker deleted after the read planned them are skipped with a warning in the
   * log, not a failure: a stream's {@code failOnDataLoss = false} ({@link DeletedOffsets}).
   */
  public final boolean skipDeleted;

  private ReadConf(KplexTable t, ConfParser settings, KafkaConf kafka) {
    this.clients = io.kplex.spark.kafka.KafkaClients.REAL;
    this.clock = io.kplex.spark.time.Clock.SYSTEM;
    this.skipDeleted = false;
    TableDefinition def = t.definition().orElse(null);
    this.kind = def == null ? Kind.TOPIC : def.isReadTime() ? Kind.READ_TIME : Kind.DERIVED;
    this.table = t.name();
    this.topic = t.topic();
    this.sources = kind == Kind.READ_TIME ? def.sources() : java.util.List.of(t.topic());
    this.virtualPartitions = def == null ? 0 : def.virtualPartitions();
    this.physicalPartitions = def == null ? 0 : def.physicalPartitions();
    this.kafka = kafka;
    if (kind != Kind.READ_TIME) {
      this.maxDelayMs = 0;
      this.latePolicy = null;
      this.lateTopic = null;
      this.nullKey = null;
      this.nullOrder = null;
      this.expressions = null;
      return;
    }
    this.latePolicy = settings.enumConf(KplexOptions.LATE_POLICY, LatePolicy.class);
    this.nullKey = settings.enumConf(KplexOptions.NULL_KEY, NullKeyPolicy.class);
    this.nullOrder = settings.enumConf(KplexOptions.NULL_ORDER, NullOrderPolicy.class);
    this.maxDelayMs = settings.longConf(KplexOptions.MAX_DELAY_MS);
    this.lateTopic = settings.text(KplexOptions.LATE_TOPIC);
    Map<String, String> check = settings.merged();
    check.put(KplexOptions.SOURCE, def.source());
    ReadTimeTables.validate(check, table);
    this.expressions = ReadExpressions.compile(table,
        def.property(KplexOptions.KEY, KplexOptions.DEFAULT_VIRTUAL_KEY),
        def.property(KplexOptions.ORDER, KplexOptions.DEFAULT_VIRTUAL_ORDER));
  }

  private ReadConf(ReadConf o, io.kplex.spark.kafka.KafkaClients clients, io.kplex.spark.time.Clock clock,
      boolean skipDeleted) {
    this.kind = o.kind;
    this.table = o.table;
    this.topic = o.topic;
    this.sources = o.sources;
    this.virtualPartitions = o.virtualPartitions;
    this.physicalPartitions = o.physicalPartitions;
    this.maxDelayMs = o.maxDelayMs;
    this.latePolicy = o.latePolicy;
    this.lateTopic = o.lateTopic;
    this.nullKey = o.nullKey;
    this.nullOrder = o.nullOrder;
    this.kafka = o.kafka;
    this.expressions = o.expressions;
    this.clients = clients;
    this.clock = clock;
    this.skipDeleted = skipDeleted;
  }

  /** This read with other Kafka clients and another clock (a JUnit test's). */
  public ReadConf with(io.kplex.spark.kafka.KafkaClients clients, io.kplex.spark.time.Clock clock) {
    return new ReadConf(this, clients, clock, skipDeleted);
  }

  /** This read, skipping offsets deleted under it ({@link #skipDeleted}). */
  public ReadConf skippingDeleted() {
    return new ReadConf(this, clients, clock, true);
  }

  public static ReadConf resolve(KplexTable t, Map<String, String> readOptions) {
    io.kplex.spark.conf.ServerPolicy.current().checkStatement(readOptions);
    boolean virtual = t.definition().map(TableDefinition::isReadTime).orElse(false);
    Map<String, String> overrides = new HashMap<>();
    for (Map.Entry<String, String> e : readOptions.entrySet()) {
      String k = e.getKey().toLowerCase(Locale.ROOT);
      if (!k.startsWith("kplex.")) continue;
      if (!KplexOptions.TABLE_PROPERTIES.contains(k)) {
        throw Errors.unknownProperty(e.getKey(), TableProperties.closest(k));
      }
      if (!virtual || !KplexOptions.READ_OVERRIDES.contains(k)) {
        throw Errors.fixedByDefinition(e.getKey(), t.name(), virtual);
      }
      overrides.put(k, e.getValue().trim());
    }
    ConfParser settings = ConfParser.builder().options(overrides)
        .table(kplexOnly(t.definition().map(TableDefinition::properties).orElse(Map.of())))
        .catalog(kplexOnly(t.catalogOptions())).build();
    return new ReadConf(t, settings, KafkaConf.from(t.catalogOptions(), readOptions));
  }

  /**
   * A stream's read options over the session settings options.json gives them ({@code
   * session_key}: {@code kplex.stream.<option>}, since SQL's STREAM(...) takes no read
   * options); a read option wins. The session's startingOffsets applies only to a read that
   * gives no start of its own, neither startingOffsets nor startingTimestamp.
   *
   * @param session a session setting's value by its key, or null (the session's SQLConf)
   */
  static ConfParser streamSettings(Map<String, String> options, Function<String, String> session) {
    boolean startsByTime = ConfParser.of(options).isSet(KplexOptions.STARTING_TIMESTAMP);
    Map<String, String> fromSession = new HashMap<>();
    for (OptionSpec spec : OptionSpecs.all()) {
      if (spec.sessionKey() == null || !spec.settableAs(OptionSpec.Scope.READ)) continue;
      if (spec.name().equals(KplexOptions.STARTING_OFFSETS) && startsByTime) continue;
      String value = session.apply(spec.sessionKey());
      if (value != null) fromSession.put(spec.name(), value);
    }
    return ConfParser.builder().options(options).session(fromSession).build();
  }

  /**
   * What to raise for {@code found}, an error about {@code topic} (null: the topic was not
   * found): for a derived table's own topic that the broker does not know, that it was deleted
   * outside kplex and how the table starts over; else {@code found}, or that the topic does not
   * exist.
   */
  public KplexException topicError(String topic, KplexException found) {
    boolean unknown = found == null || "UNKNOWN_TOPIC".equals(found.code());
    if (unknown && kind == Kind.DERIVED && topic.equals(this.topic)) return Errors.tableTopicDeleted(table, topic);
    return found != null ? found : Errors.unknownTopic(topic);
  }

  /**
   * Refuses a session setting under {@code kplex.stream.} that no option has as its session key
   * ({@code SET kplex.stream.releaseAtend = true}): Spark keeps a setting it does not know, and
   * the stream would run with the default. Session keys are case-sensitive, as Spark's are, so a
   * key in another case is refused too, naming the one meant.
   *
   * @param sessionKeys the keys the session has set
   */
  static void checkStreamSession(Iterable<String> sessionKeys) {
    String prefix = KplexOptions.STREAM_SETTING_PREFIX;
    for (String key : sessionKeys) {
      if (!key.regionMatches(true, 0, prefix, 0, prefix.length())
          || KplexOptions.STREAM_SESSION_SETTINGS.contains(key)) {
        continue;
      }
      throw Errors.unknownStreamSetting(key, TableProperties.closest(key, KplexOptions.STREAM_SESSION_SETTINGS),
          KplexOptions.STREAM_SESSION_SETTINGS);
    }
  }

  private static Map<String, String> kplexOnly(Map<String, String> from) {
    Map<String, String> out = new HashMap<>();
    from.forEach((k, v) -> {
      if (k.toLowerCase(Locale.ROOT).startsWith("kplex.")) out.put(k, v);
    });
    return out;
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
            + (lateTopic != null && latePolicy == LatePolicy.SIDE_TOPIC ? " to " + lateTopic : "") + ")";
    }
  }
}
