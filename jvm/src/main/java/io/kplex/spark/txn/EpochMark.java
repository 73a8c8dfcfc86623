package io.kplex.spark.txn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The last micro-batch (epoch) of a streaming query that a kplex table committed, kept in
 * {@link CommitLog#TOPIC} under {@code epoch/<table>/<query id>} (Delta's txnAppId/txnVersion,
 * Iceberg's queryId/epochId). An epoch at or below it that Spark runs again (a retried
 * commit, a driver restarted from its checkpoint) writes nothing. It also carries what the
 * next epoch needs to keep every virtual partition in order across batches:
 * <ul>
 *   <li>{@code lateBound}: every record below it has been released; a new one is late;</li>
 *   <li>{@code releaseBound}: the next epoch releases records below it (the event-time
 *       watermark: the largest order value seen, minus {@code kplex.max_delay_ms});</li>
 *   <li>{@code held}: the files (in the query's checkpoint) of the records held back.</li>
 * </ul>
 */
public record EpochMark(String table, String query, long epoch, long lateBound, long releaseBound,
    long maxSeen, List<String> held) implements Serializable {
  private static final ObjectMapper JSON = new ObjectMapper();

  /** Before a query's first epoch: nothing released, nothing held. */
  public static EpochMark start(String table, String query) {
    return new EpochMark(table, query, -1, Long.MIN_VALUE, Long.MIN_VALUE, Long.MIN_VALUE, List.of());
  }

  public static String key(String table, String query) {
    return "epoch/" + table + "/" + query;
  }

  public String key() {
    return key(table, query);
  }

  ObjectNode toJsonNode() {
    ObjectNode node = JSON.createObjectNode();
    node.put("table", table).put("query", query).put("epoch", epoch).put("late_bound", lateBound)
        .put("release_bound", releaseBound).put("max_seen", maxSeen);
    held.forEach(node.putArray("held")::add);
    return node;
  }

  public byte[] toJson() {
    return toJsonNode().toString().getBytes(StandardCharsets.UTF_8);
  }

  static EpochMark fromJson(JsonNode node) {
    List<String> held = new ArrayList<>();
    node.path("held").forEach(h -> held.add(h.asText()));
    return new EpochMark(node.path("table").asText(), node.path("query").asText(), node.path("epoch").asLong(),
        node.path("late_bound").asLong(), node.path("release_bound").asLong(), node.path("max_seen").asLong(), held);
  }

  public static EpochMark fromJson(byte[] json) {
    try {
      return fromJson(JSON.readTree(json));
    } catch (java.io.IOException e) {
      throw new io.kplex.spark.errors.KplexException("METADATA", "unreadable epoch record in "
          + CommitLog.TOPIC + ": " + e.getMessage(), e);
    }
  }
}
