package io.kplex.spark.txn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import io.kplex.spark.time.EventTime;

/**
 * The last micro-batch (epoch) of a streaming query that a kplex table committed, kept in
 * {@link CommitLog#TOPIC} under {@code epoch/<table>/<query id>} (Delta's txnAppId/txnVersion,
 * Iceberg's queryId/epochId). An epoch at or below it that Spark runs again (a retried
 * commit, a driver restarted from its checkpoint) writes nothing. It also carries what the
 * next epoch needs to keep every virtual partition in order across batches:
 * <ul>
 *   <li>{@code marks}: per source partition, the largest order value read; per virtual
 *       partition, the largest written ({@link EventTime.Marks});</li>
 *   <li>{@code held}: the files (in the query's checkpoint, relative to its {@code kplex}
 *       folder) of the records held back;</li>
 *   <li>{@code lineage} (null in an older kplex's marks): the source topic and the offsets the
 *       epoch read up to, where its held files live, and the query it resumed from, so that a
 *       new query can resume from the table ({@link Lineage});</li>
 *   <li>{@code reads} (the {@link #INSERTS} mark's; empty in others and in an older kplex's):
 *       per source topic, the offsets the table's batch INSERTs read from it, so that a stream
 *       over the same records knows them as written ({@link OffsetRanges});</li>
 *   <li>{@code readIds} (the {@link #INSERTS} mark's; empty in an older kplex's): per source
 *       topic, its id when the INSERTs last read it, so that what they read of a topic since
 *       deleted and created again counts for no one.</li>
 * </ul>
 */
public record EpochMark(String table, String query, long epoch, EventTime.Marks marks, List<String> held,
    long heldRecords, Lineage lineage, Map<String, OffsetRanges> reads, Map<String, String> readIds)
    implements Serializable {
  public EpochMark {
    reads = Map.copyOf(reads);
    readIds = Map.copyOf(readIds);
  }

  public EpochMark(String table, String query, long epoch, EventTime.Marks marks, List<String> held,
      long heldRecords, Lineage lineage, Map<String, OffsetRanges> reads) {
    this(table, query, epoch, marks, held, heldRecords, lineage, reads, Map.of());
  }

  public EpochMark(String table, String query, long epoch, EventTime.Marks marks, List<String> held,
      long heldRecords, Lineage lineage) {
    this(table, query, epoch, marks, held, heldRecords, lineage, Map.of());
  }

  /**
   * Where a stream's epoch stands on its source: {@code topic} and, per partition, the offset
   * the next epoch reads from ({@code ends}); {@code heldBase}: the folder its held files are
   * named relative to (the query's checkpoint's {@code kplex}, qualified); {@code resumedFrom}:
   * {@code <query>@<epoch>} of the mark the query took over when it started (startingOffsets
   * = 'table'), carried in all its marks; {@code atMs}: when the epoch was committed;
   * {@code heldSchema}: the columns of its held rows (Spark DDL), which a query taking them over
   * must match (null: not recorded); {@code floors}: a strict stream's published watermarks
   * ({@link Floor}), oldest first, the last {@link #FLOORS_KEPT}.
   */
  public record Lineage(String topic, Map<Integer, Long> ends, String heldBase, String resumedFrom, long atMs,
      String heldSchema, List<Floor> floors, String topicId, String rows) implements Serializable {
    public Lineage {
      floors = List.copyOf(floors);
    }

    /**
     * Without the source topic's id (null: an older kplex's mark, or not known) nor the digest of
     * the filters its rows went through ({@code rows}; null: none, every row read was written).
     */
    public Lineage(String topic, Map<Integer, Long> ends, String heldBase, String resumedFrom, long atMs,
        String heldSchema, List<Floor> floors) {
      this(topic, ends, heldBase, resumedFrom, atMs, heldSchema, floors, null, null);
    }

    public Lineage(String topic, Map<Integer, Long> ends, String heldBase, String resumedFrom, long atMs,
        String heldSchema) {
      this(topic, ends, heldBase, resumedFrom, atMs, heldSchema, List.of());
    }

    public Lineage(String topic, Map<Integer, Long> ends, String heldBase, String resumedFrom, long atMs) {
      this(topic, ends, heldBase, resumedFrom, atMs, null);
    }

    /** The query a mark's {@code resumedFrom} names. */
    public String resumedQuery() {
      return resumedFrom == null ? null : resumedFrom.substring(0, resumedFrom.lastIndexOf('@'));
    }
  }

  /**
   * A strict stream's watermark, published for the streams that read its table as a source
   * (docs/contract.md, "A strict stream's watermark"): from offsets {@code from} of the table's
   * topic on (per physical partition; absent: 0), no record in any virtual partition has an
   * order value below {@code order}. A stream over the table that has read up to {@code from}
   * need not wait on quiet or empty virtual partitions below {@code order}.
   */
  public record Floor(long order, Map<Integer, Long> from) implements Serializable {
    public Floor {
      from = Map.copyOf(from);
    }

    /** Whether a reader starting at {@code starts} (per physical partition) read everything before {@code from}. */
    public boolean readBy(Map<Integer, Long> starts) {
      for (Map.Entry<Integer, Long> e : from.entrySet()) {
        if (starts.getOrDefault(e.getKey(), 0L) < e.getValue()) return false;
      }
      return true;
    }
  }

  /** How many of its last floors a strict stream's marks keep (a reader a few epochs behind still finds one). */
  public static final int FLOORS_KEPT = 8;

  /** A mark without lineage (an INSERT's, or a stream's without a kplex source). */
  public EpochMark(String table, String query, long epoch, EventTime.Marks marks, List<String> held,
      long heldRecords) {
    this(table, query, epoch, marks, held, heldRecords, null);
  }

  public EpochMark withLineage(Lineage with) {
    return new EpochMark(table, query, epoch, marks, held, heldRecords, with, reads, readIds);
  }

  /** This mark with {@code more} of {@code topic} read too (an INSERT's, joined to the INSERTs' before it). */
  public EpochMark withReads(String topic, OffsetRanges more) {
    if (topic == null || more.isEmpty()) return this;
    Map<String, OffsetRanges> out = new HashMap<>(reads);
    out.merge(topic, more, OffsetRanges::union);
    return new EpochMark(table, query, epoch, marks, held, heldRecords, lineage, out, readIds);
  }

  /**
   * This mark with what was read of {@code topic} before it was deleted and created again left
   * out: its reads (through any filter) if the id they were read under is not {@code id}, which
   * is kept as the topic's from now on. A null {@code id} (not known) forgets the one kept: what
   * is read now may be of another topic than it names.
   */
  public EpochMark readingId(String topic, String id) {
    if (topic == null || java.util.Objects.equals(id, readIds.get(topic))) return this;
    if (id == null) {
      Map<String, String> ids = new HashMap<>(readIds);
      ids.remove(topic);
      return new EpochMark(table, query, epoch, marks, held, heldRecords, lineage, reads, ids);
    }
    Map<String, OffsetRanges> kept = new HashMap<>(reads);
    if (readIds.containsKey(topic)) kept.keySet().removeIf(k -> k.equals(topic) || k.startsWith(readsKey(topic, "")));
    Map<String, String> ids = new HashMap<>(readIds);
    ids.put(topic, id);
    return new EpochMark(table, query, epoch, marks, held, heldRecords, lineage, kept, ids);
  }

  /** Whether what this mark's INSERTs read of {@code topic} was read of the topic {@code id} names (null: not known, yes). */
  public boolean readOf(String topic, String id) {
    String was = readIds.get(topic);
    return id == null || was == null || was.equals(id);
  }

  /** What the table's INSERTs read of {@code topic} ({@link OffsetRanges#NONE}: nothing recorded). */
  public OffsetRanges reads(String topic) {
    return reads.getOrDefault(topic, OffsetRanges.NONE);
  }

  /**
   * The key of {@link #reads} for what was read of {@code topic} through filters of digest
   * {@code rows}: the topic's name alone without a filter (as a kplex before filters counted had
   * it), else the name and the digest (a space is in no topic's name).
   */
  public static String readsKey(String topic, String rows) {
    return rows == null ? topic : topic + " where " + rows;
  }
  private static final ObjectMapper JSON = new ObjectMapper();
  /** The "query" of a table's batch INSERTs: their mark holds only what they wrote per virtual partition. */
  public static final String INSERTS = "_inserts";

  /** A mark whose held records were not counted (-1: unknown, as in an older kplex's marks). */
  public EpochMark(String table, String query, long epoch, EventTime.Marks marks, List<String> held) {
    this(table, query, epoch, marks, held, held.isEmpty() ? 0 : -1);
  }

  /** Before a query's first epoch: nothing read, nothing written, nothing held. */
  public static EpochMark start(String table, String query) {
    return new EpochMark(table, query, -1, EventTime.Marks.NONE, List.of());
  }

  public static String key(String table, String query) {
    return "epoch/" + table + "/" + query;
  }

  public String key() {
    return key(table, query);
  }

  ObjectNode toJsonNode() {
    ObjectNode node = JSON.createObjectNode();
    node.put("table", table).put("query", query).put("epoch", epoch);
    ObjectNode highs = node.putObject("highs");
    marks.highs().forEach((p, h) -> highs.put(Integer.toString(p), h));
    ObjectNode written = node.putObject("written");
    marks.written().forEach((vp, w) -> written.put(Integer.toString(vp), w));
    held.forEach(node.putArray("held")::add);
    if (heldRecords >= 0) node.put("held_records", heldRecords);
    if (!marks.idle().isEmpty()) marks.idle().forEach(node.putArray("idle")::add);
    if (!marks.moved().isEmpty()) {
      ObjectNode moved = node.putObject("moved");
      marks.moved().forEach((p, at) -> moved.put(Integer.toString(p), at));
    }
    if (lineage != null) {
      ObjectNode source = node.putObject("source");
      source.put("topic", lineage.topic());
      if (lineage.topicId() != null) source.put("topic_id", lineage.topicId());
      if (lineage.rows() != null) source.put("rows", lineage.rows());
      ObjectNode ends = source.putObject("ends");
      new java.util.TreeMap<>(lineage.ends()).forEach((p, o) -> ends.put(Integer.toString(p), o));
      if (lineage.heldBase() != null) node.put("held_base", lineage.heldBase());
      if (lineage.resumedFrom() != null) node.put("resumed_from", lineage.resumedFrom());
      node.put("at_ms", lineage.atMs());
      if (lineage.heldSchema() != null) node.put("held_schema", lineage.heldSchema());
      if (!lineage.floors().isEmpty()) {
        var floors = node.putArray("floors");
        for (Floor f : lineage.floors()) {
          ObjectNode one = floors.addObject().put("order", f.order());
          ObjectNode from = one.putObject("from");
          new java.util.TreeMap<>(f.from()).forEach((p, o) -> from.put(Integer.toString(p), o));
        }
      }
    }
    if (!reads.isEmpty()) {
      ObjectNode byTopic = node.putObject("reads");
      new java.util.TreeMap<>(reads).forEach((t, r) -> r.writeTo(byTopic.putObject(t)));
    }
    if (!readIds.isEmpty()) {
      ObjectNode ids = node.putObject("read_topic_ids");
      new java.util.TreeMap<>(readIds).forEach(ids::put);
    }
    return node;
  }

  public byte[] toJson() {
    return toJsonNode().toString().getBytes(StandardCharsets.UTF_8);
  }

  /**
   * The suffix of the key that holds the base of a mark written as changes ({@link #toDeltaJson}):
   * {@code epoch/<table>/<query>#base}, in the table's scope of the log.
   */
  public static final String BASE = "#base";

  /** Marks with fewer entries (source partitions and virtual partitions) than this are written whole. */
  static final int DELTA_MIN_ENTRIES = 64;

  /**
   * A JVM system property ({@code -Dkplex.controlPlane.wholeMarks=true}) that writes every mark
   * whole, as kplex did before: for the control plane's benchmark (bench/control_plane.py) to
   * compare both in one run. A SQL session cannot set it.
   */
  static final String WHOLE_MARKS_PROPERTY = "kplex.controlPlane.wholeMarks";

  /**
   * This mark as the changes from {@code base}, an earlier committed mark of the same query, or
   * null if it should be written whole: it is small, or an INSERTs' mark (whose epoch does not
   * grow), or not later than the base, or drops an entry of the base, or the changes are more
   * than half of it. Only the per-partition maps ({@code highs}, {@code written}) are cut to
   * their changes; the rest is written whole. With V in the thousands and a few virtual
   * partitions written per epoch, this is most of what an epoch writes to the log.
   */
  byte[] toDeltaJson(EpochMark base) {
    int entries = marks.highs().size() + marks.written().size();
    if (base == null || entries < DELTA_MIN_ENTRIES || Boolean.getBoolean(WHOLE_MARKS_PROPERTY) || INSERTS.equals(query) || !base.query.equals(query)
        || base.epoch >= epoch) {
      return null;
    }
    Map<Integer, Long> highs = changes(base.marks.highs(), marks.highs());
    Map<Integer, Long> written = changes(base.marks.written(), marks.written());
    long changed = highs == null || written == null ? entries : highs.size() + written.size();
    // Whole again once the changes are half of it, or once the changes written since the base
    // (about changed x epochs / 2) reach two whole marks: the base's two records (the whole
    // mark, then its copy as the base) then cost no more than the changes repeated since. With
    // k of E entries changing per epoch, a base lasts about 2 sqrt(E / k) epochs, and an epoch
    // writes about 2 sqrt(E k) entries instead of E.
    if (2 * changed > entries || changed * (epoch - base.epoch) > 4L * entries) return null;
    ObjectNode node = toJsonNode();
    node.put("base_epoch", base.epoch);
    ObjectNode h = node.putObject("highs");
    new java.util.TreeMap<>(highs).forEach((p, v) -> h.put(Integer.toString(p), v));
    ObjectNode w = node.putObject("written");
    new java.util.TreeMap<>(written).forEach((vp, v) -> w.put(Integer.toString(vp), v));
    return node.toString().getBytes(StandardCharsets.UTF_8);
  }

  /** The entries of {@code now} that differ from {@code before}; null if one of {@code before} is gone. */
  private static Map<Integer, Long> changes(Map<Integer, Long> before, Map<Integer, Long> now) {
    if (!now.keySet().containsAll(before.keySet())) return null;
    Map<Integer, Long> out = new HashMap<>();
    now.forEach((k, v) -> {
      if (!v.equals(before.get(k))) out.put(k, v);
    });
    return out;
  }

  /** Whether this JSON is a mark written as changes to a base ({@link #toDeltaJson}). */
  static boolean isDelta(JsonNode node) {
    return node.has("base_epoch");
  }

  /**
   * A mark from its JSON, whole or as changes to {@code base} (the record under its key's
   * {@link #BASE}; null if there is none). The base may be later than the one the changes were
   * taken from, up to the mark's own epoch: an entry that changed since is among the changes, one
   * that did not has the same value in both.
   */
  static EpochMark fromJson(JsonNode node, byte[] base) {
    EpochMark read = fromJson(node);
    if (!isDelta(node)) return read;
    long from = node.path("base_epoch").asLong();
    JsonNode baseNode = base == null ? null : tree(base);
    EpochMark b = baseNode == null || isDelta(baseNode) ? null : fromJson(baseNode);
    if (b == null || b.epoch < from || b.epoch > read.epoch || !b.query.equals(read.query)) {
      throw b == null
          ? io.kplex.spark.errors.Errors.epochBaseMissing(CommitLog.TOPIC, key(read.table, read.query), from,
              key(read.table, read.query) + BASE)
          : io.kplex.spark.errors.Errors.epochBaseOther(CommitLog.TOPIC, key(read.table, read.query), from,
              key(read.table, read.query) + BASE, b.epoch);
    }
    Map<Integer, Long> highs = new HashMap<>(b.marks.highs());
    highs.putAll(read.marks.highs());
    Map<Integer, Long> written = new HashMap<>(b.marks.written());
    written.putAll(read.marks.written());
    return new EpochMark(read.table, read.query, read.epoch,
        new EventTime.Marks(highs, written, read.marks.idle(), read.marks.moved()), read.held, read.heldRecords,
        read.lineage, read.reads, read.readIds);
  }

  /** A mark from its JSON and the base it may be written against ({@link #fromJson(JsonNode, byte[])}). */
  public static EpochMark fromJson(byte[] json, byte[] base) {
    return fromJson(tree(json), base);
  }

  static JsonNode tree(byte[] json) {
    try {
      return JSON.readTree(json);
    } catch (java.io.IOException e) {
      throw io.kplex.spark.errors.Errors.unreadableMetadata(
          io.kplex.spark.errors.Errors.MetadataRecord.EPOCH_RECORD, CommitLog.TOPIC, e);
    }
  }

  /**
   * The marks among records of the log ({@code epoch/..} keys, with their bases), each read
   * whole, by key, in the order of {@code log}; other records are left out.
   */
  public static Map<String, EpochMark> all(Map<String, byte[]> log) {
    Map<String, EpochMark> out = new java.util.LinkedHashMap<>();
    log.forEach((key, json) -> {
      if (json == null || !key.startsWith("epoch/") || key.endsWith(BASE)) return;
      out.put(key, fromJson(json, log.get(key + BASE)));
    });
    return out;
  }

  static EpochMark fromJson(JsonNode node) {
    List<String> held = new ArrayList<>();
    node.path("held").forEach(h -> held.add(h.asText()));
    Map<Integer, Long> highs = new HashMap<>();
    node.path("highs").fields().forEachRemaining(e -> highs.put(Integer.parseInt(e.getKey()), e.getValue().asLong()));
    Map<Integer, Long> written = new HashMap<>();
    node.path("written").fields().forEachRemaining(e -> written.put(Integer.parseInt(e.getKey()), e.getValue().asLong()));
    if (node.has("late_bound") && !node.has("written")) {
      // A mark of kplex before per-partition marks: its bound holds for every virtual partition.
      written.put(EventTime.Marks.EVERY_VP, node.path("late_bound").asLong());
    }
    java.util.Set<Integer> idle = new java.util.TreeSet<>();
    node.path("idle").forEach(p -> idle.add(p.asInt()));
    Map<Integer, Long> moved = new HashMap<>();
    node.path("moved").fields().forEachRemaining(e -> moved.put(Integer.parseInt(e.getKey()), e.getValue().asLong()));
    Lineage lineage = null;
    if (node.has("source")) {
      Map<Integer, Long> ends = new HashMap<>();
      node.path("source").path("ends").fields()
          .forEachRemaining(e -> ends.put(Integer.parseInt(e.getKey()), e.getValue().asLong()));
      List<Floor> floors = new ArrayList<>();
      for (JsonNode f : node.path("floors")) {
        Map<Integer, Long> from = new HashMap<>();
        f.path("from").fields().forEachRemaining(e -> from.put(Integer.parseInt(e.getKey()), e.getValue().asLong()));
        floors.add(new Floor(f.path("order").asLong(), from));
      }
      lineage = new Lineage(node.path("source").path("topic").asText(), ends,
          node.has("held_base") ? node.path("held_base").asText() : null,
          node.has("resumed_from") ? node.path("resumed_from").asText() : null, node.path("at_ms").asLong(),
          node.has("held_schema") ? node.path("held_schema").asText() : null, floors,
          node.path("source").has("topic_id") ? node.path("source").path("topic_id").asText() : null,
          node.path("source").has("rows") ? node.path("source").path("rows").asText() : null);
    }
    Map<String, OffsetRanges> reads = new HashMap<>();
    node.path("reads").fields().forEachRemaining(e -> reads.put(e.getKey(), OffsetRanges.from(e.getValue())));
    Map<String, String> readIds = new HashMap<>();
    node.path("read_topic_ids").fields().forEachRemaining(e -> readIds.put(e.getKey(), e.getValue().asText()));
    return new EpochMark(node.path("table").asText(), node.path("query").asText(), node.path("epoch").asLong(),
        new EventTime.Marks(highs, written, idle, moved), held,
        node.has("held_records") ? node.path("held_records").asLong() : held.isEmpty() ? 0 : -1, lineage, reads,
        readIds);
  }

  /** A mark written whole (a mark written as changes needs its base: {@link #fromJson(byte[], byte[])}). */
  public static EpochMark fromJson(byte[] json) {
    return fromJson(json, null);
  }
}
