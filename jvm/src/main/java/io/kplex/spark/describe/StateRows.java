package io.kplex.spark.describe;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;

/**
 * The state of a kplex table ({@code kplex status}'s JSON, {@code KplexAdmin.status}) as the
 * rows {@code DESCRIBE TABLE EXTENDED} appends below Spark's own: a blank row, a
 * {@code # kplex state} heading, then one fact a row in Spark's columns (col_name, data_type,
 * comment), the value in the middle one. The definition is not repeated: Spark shows it as
 * the table's properties. Records per virtual partition are not counted (that reads the whole
 * topic: {@code kplex status --count}).
 */
public final class StateRows {
  /** A row of DESCRIBE's output. */
  public record Row(String name, String value, String comment) {
    @Override
    public String toString() {
      return name + " | " + value + " | " + comment;
    }
  }

  public static final String HEADING = "# kplex state";
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final DateTimeFormatter UTC = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
      .withZone(ZoneOffset.UTC);

  private StateRows() {}

  /** The topic's id, and whether it is the topic kplex's writes went to. */
  private static Row topicId(JsonNode s) {
    String id = s.path("topic_id").asText();
    String wrote = s.path("written_topic_id").asText("");
    if (wrote.isEmpty() || wrote.equals(id)) {
      return new Row("topic id", id, wrote.isEmpty() ? "" : "the topic kplex's writes went to");
    }
    boolean written = s.path("high_order_per_virtual_partition").size() > 0;
    return new Row("topic id", id, "kplex wrote to topic id " + wrote + ", deleted since outside kplex: " + (written
        ? "what it wrote is gone, and the next write fails (DROP TABLE, then CREATE TABLE, starts the table over)"
        : "nothing it committed is marked, and the next write takes this topic as the table's"));
  }

  /** The rows of {@code kplex status}'s JSON. */
  public static List<Row> of(String statusJson) {
    JsonNode s;
    try {
      s = JSON.readTree(statusJson);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    List<Row> out = heading();
    out.add(new Row("kind", s.path("kind").asText(), ""));
    if (!"kplex-written".equals(s.path("kind").asText())) {
      out.add(new Row("writer state", "none", "a read-time table reads its source; nothing is written to it"));
      return out;
    }
    out.add(new Row("topic", s.path("topic").asText(), ""));
    if (s.has("topic_id")) out.add(topicId(s));
    for (JsonNode p : s.path("partitions")) {
      out.add(new Row("partition " + p.path("partition").asInt() + " offsets",
          p.path("start_offset").asLong() + ".." + p.path("end_offset").asLong(),
          "last stable offset " + p.path("last_stable_offset").asLong()));
    }
    JsonNode highs = s.path("high_order_per_virtual_partition");
    for (int vp = 0; vp < s.path("virtual_partitions").asInt(); vp++) {
      JsonNode high = highs.path(Integer.toString(vp));
      out.add(new Row("vp " + vp + " high order", high.isMissingNode() ? "none" : high.asText(),
          high.isMissingNode() ? "nothing written" : "highest order value written"));
    }
    if (s.has("floor_every_virtual_partition")) {
      out.add(new Row("floor", s.path("floor_every_virtual_partition").asText(),
          "no writer writes below it in any virtual partition (a strict stream's published watermark)"));
    }
    out.add(new Row("records per vp", "not counted", "kplex status " + s.path("table").asText()
        + " --count reads the topic to count them"));
    out.add(claim(s.path("writer_claim")));
    JsonNode pending = s.path("pending_commit");
    out.add(pending.isObject()
        ? new Row("pending commit", "query " + pending.path("query").asText() + ", "
            + pending.path("transactions").asInt() + " transactions", pending.path("recovery").asText())
        : new Row("pending commit", "none", ""));
    for (JsonNode p : s.path("partial_commits")) out.add(new Row("cut short", p.asText(), ""));
    transactions(s, out);
    streams(s.path("streams"), out);
    return out;
  }

  /** The rows when the state could not be read: DESCRIBE still shows the definition. */
  public static List<Row> unavailable(String why) {
    List<Row> out = heading();
    out.add(new Row("state", "unavailable", why));
    return out;
  }

  private static List<Row> heading() {
    List<Row> out = new ArrayList<>();
    out.add(new Row("", "", ""));
    out.add(new Row(HEADING, "", ""));
    return out;
  }

  private static Row claim(JsonNode c) {
    if (!c.isObject()) return new Row("writer claim", "free", "");
    if (c.has("unreadable")) return new Row("writer claim", "unreadable", c.path("unreadable").asText());
    boolean stale = c.path("stale").asBoolean();
    return new Row("writer claim", c.path("query").asText() + " since "
        + utc(c.path("claimed_at_ms").asLong()) + " (stale: " + stale + ")",
        "renewed " + utc(c.path("renewed_at_ms").asLong()) + ", " + c.path("age_ms").asLong()
        + " ms ago" + (stale ? "; the next write takes it over" : ""));
  }

  /** Epoch milliseconds as UTC ISO-8601, always to the millisecond. */
  static String utc(long ms) {
    return UTC.format(Instant.ofEpochMilli(ms));
  }

  private static void transactions(JsonNode s, List<Row> out) {
    if (s.has("open_transactions_error")) {
      out.add(new Row("open transactions", "unknown", s.path("open_transactions_error").asText()));
      return;
    }
    JsonNode open = s.path("open_transactions");
    out.add(new Row("open transactions", Integer.toString(open.size()), ""));
    for (JsonNode t : open) {
      out.add(new Row("transaction " + t.path("transactional_id").asText(), t.path("state").asText(),
          "producer id " + t.path("producer_id").asLong() + ", epoch " + t.path("epoch").asInt()
          + (t.has("open_ms") ? ", open " + t.path("open_ms").asLong() + " ms" : "")));
    }
  }

  /** "N held records in F files", or "F held files" when an older kplex did not count them. */
  private static String held(JsonNode q) {
    int files = q.path("held_files").asInt();
    return q.has("held_records") ? q.path("held_records").asLong() + " held records in " + files + " files"
        : files + " held files";
  }

  /** ", idle partitions [..]" (they do not hold the watermark), or nothing. */
  private static String idle(JsonNode q) {
    JsonNode idle = q.path("idle_partitions");
    if (!idle.isArray() || idle.isEmpty()) return "";
    List<String> ps = new java.util.ArrayList<>();
    idle.forEach(p -> ps.add(p.asText()));
    return ", idle partitions [" + String.join(", ", ps) + "]";
  }

  /**
   * ", from topic t at offsets {0=.., 1=..}, resumed from q@e" (a stream's), ", read t 0:[0,120)"
   * (the INSERTs'), or nothing (no lineage).
   */
  private static String lineage(JsonNode q) {
    JsonNode source = q.path("source");
    if (q.path("reads").isObject()) {  // the INSERTs': what they read of each source topic
      List<String> reads = new java.util.ArrayList<>();
      // (what was read through a WHERE is kept under the topic and its conditions' digest)
      q.path("reads").fields().forEachRemaining(e -> reads.add(e.getKey().replace(" where ", " through filter ")
          + " " + e.getValue().asText()));
      return ", read " + String.join("; ", reads);
    }
    if (!source.isObject()) return "";
    List<String> ends = new java.util.ArrayList<>();
    source.path("ends").fields().forEachRemaining(e -> ends.add(e.getKey() + "=" + e.getValue().asLong()));
    return ", from topic " + source.path("topic").asText() + " at offsets {" + String.join(", ", ends) + "}"
        + (q.has("resumed_from") ? ", resumed from " + q.path("resumed_from").asText() : "");
  }

  private static void streams(JsonNode streams, List<Row> out) {
    for (JsonNode q : streams) {
      String marks = "last epoch " + q.path("last_epoch").asLong() + ", " + held(q) + idle(q) + lineage(q);
      if (!"streaming query".equals(q.path("kind").asText())) {
        out.add(new Row(q.path("kind").asText(), marks, ""));
      } else if (q.path("monitor_group").isTextual()) {
        out.add(new Row("query " + q.path("query").asText() + " lag", q.path("total_lag").asText(),
            "monitoring group " + q.path("monitor_group").asText() + "; " + marks));
      } else {
        out.add(new Row("query " + q.path("query").asText() + " lag", "unknown",
            "no monitoring group (monitorGroup = false, or no DESCRIBE on groups); " + marks));
      }
    }
  }
}
