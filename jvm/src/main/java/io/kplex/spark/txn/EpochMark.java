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
 *       over the same records knows them as written ({@link OffsetRanges}).</li>
 * </ul>
 */
public record EpochMark(String table, String query, long epoch, EventTime.Marks marks, List<String> held,
    long heldRecords, Lineage lineage, Map<String, OffsetRanges> reads) implements Serializable {
  public EpochMark {
    reads = Map.copyOf(reads);
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
      String heldSchema, List<Floor> floors) implements Serializable {
    public Lineage {
      floors = List.copyOf(floors);
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
    return new EpochMark(table, query, epoch, marks, held, heldRecords, with, reads);
  }

  /** This mark with {@code more} of {@code topic} read too (an INSERT's, joined to the INSERTs' before it). */
  public EpochMark withReads(String topic, OffsetRanges more) {
    if (topic == null || more.isEmpty()) return this;
    Map<String, OffsetRanges> out = new HashMap<>(reads);
    out.merge(topic, more, OffsetRanges::union);
    return new EpochMark(table, query, epoch, marks, held, heldRecords, lineage, out);
  }

  /** What the table's INSERTs read of {@code topic} ({@link OffsetRanges#NONE}: nothing recorded). */
  public OffsetRanges reads(String topic) {
    return reads.getOrDefault(topic, OffsetRanges.NONE);
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
    return node;
  }

  public byte[] toJson() {
    return toJsonNode().toString().getBytes(StandardCharsets.UTF_8);
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
          node.has("held_schema") ? node.path("held_schema").asText() : null, floors);
    }
    Map<String, OffsetRanges> reads = new HashMap<>();
    node.path("reads").fields().forEachRemaining(e -> reads.put(e.getKey(), OffsetRanges.from(e.getValue())));
    return new EpochMark(node.path("table").asText(), node.path("query").asText(), node.path("epoch").asLong(),
        new EventTime.Marks(highs, written, idle, moved), held,
        node.has("held_records") ? node.path("held_records").asLong() : held.isEmpty() ? 0 : -1, lineage, reads);
  }

  public static EpochMark fromJson(byte[] json) {
    try {
      return fromJson(JSON.readTree(json));
    } catch (java.io.IOException e) {
      throw io.kplex.spark.errors.Errors.unreadableMetadata("epoch record", CommitLog.TOPIC, e);
    }
  }
}
