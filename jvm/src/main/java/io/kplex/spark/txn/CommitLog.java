package io.kplex.spark.txn;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaTopics;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The journal of commits in progress: the compacted topic {@code _kplex_commits}, one
 * record per table while its driver commits, keyed by table name. Written before the
 * first transaction is committed and deleted after the last, so a driver that dies in
 * between leaves a record from which the next session rolls the commit forward.
 *
 * <pre>
 * {"table":"pageviews_by_user","query":"&lt;Spark query id&gt;",
 *  "transactions":[{"id":"kplex.pageviews_by_user.0.0.0","producer_id":17,"epoch":0}, ...]}
 * </pre>
 */
public final class CommitLog {
  public static final String TOPIC = "_kplex_commits";
  private static final ObjectMapper JSON = new ObjectMapper();

  private final CompactedTopic topic;

  public CommitLog(KafkaTopics kafka) {
    this.topic = new CompactedTopic(kafka, TOPIC);
  }

  /** A commit that was started and not finished. */
  public static final class Pending {
    public final String table;
    public final String query;
    public final List<TaskTransaction> transactions;
    /** A streaming epoch's: the mark to record once its transactions are committed; else null. */
    public final EpochMark mark;

    Pending(String table, String query, List<TaskTransaction> transactions, EpochMark mark) {
      this.table = table;
      this.query = query;
      this.transactions = List.copyOf(transactions);
      this.mark = mark;
    }
  }

  public void begin(String table, String queryId, List<TaskTransaction> txns) {
    begin(table, queryId, txns, null);
  }

  /** {@code mark}: a streaming epoch's, recorded by {@link #end(Pending)} whoever finishes the commit. */
  public void begin(String table, String queryId, List<TaskTransaction> txns, EpochMark mark) {
    topic.put(table, toJson(table, queryId, txns, mark));
  }

  /** Ends a commit whose transactions are all committed: its epoch mark first, if any. */
  public void end(Pending pending) {
    end(pending.table, pending.mark);
  }

  /** Ends {@code table}'s commit, recording {@code mark} (if not null) before, in one round trip. */
  public void end(String table, EpochMark mark) {
    Map<String, byte[]> entries = new LinkedHashMap<>();
    if (mark != null) entries.put(mark.key(), mark.toJson());
    entries.put(table, null);
    topic.putAll(entries);
  }

  /** Records that a streaming query's epoch is committed (and what its next epoch needs). */
  public void mark(EpochMark mark) {
    topic.put(mark.key(), mark.toJson());
  }

  /** The last epoch that {@code query} committed to {@code table}, if any. */
  public Optional<EpochMark> lastEpoch(String table, String query) {
    return Optional.ofNullable(topic.readAll().get(EpochMark.key(table, query))).map(EpochMark::fromJson);
  }

  /**
   * Per virtual partition, the largest order value any streaming query has written to
   * {@code table} (every query's last epoch mark): where a new query's records must not go
   * below.
   */
  public Map<Integer, Long> writtenHighs(String table) {
    Map<Integer, Long> out = new java.util.HashMap<>();
    String prefix = EpochMark.key(table, "");
    topic.readAll().forEach((key, json) -> {
      if (json != null && key.startsWith(prefix)) {
        EpochMark.fromJson(json).marks().written().forEach((vp, w) -> out.merge(vp, w, Math::max));
      }
    });
    return out;
  }

  /** Removes every epoch mark of {@code table} (it was dropped). */
  public void forgetMarks(String table) {
    String prefix = EpochMark.key(table, "");
    Map<String, byte[]> gone = new LinkedHashMap<>();
    topic.readAll().forEach((key, json) -> {
      if (json != null && key.startsWith(prefix)) gone.put(key, null);
    });
    if (!gone.isEmpty()) topic.putAll(gone);
  }

  public Optional<Pending> pending(String table) {
    return Optional.ofNullable(topic.readAll().get(table)).map(CommitLog::fromJson);
  }

  public void end(String table) {
    topic.put(table, null);
  }

  static byte[] toJson(String table, String queryId, List<TaskTransaction> txns) {
    return toJson(table, queryId, txns, null);
  }

  static byte[] toJson(String table, String queryId, List<TaskTransaction> txns, EpochMark mark) {
    ObjectNode node = JSON.createObjectNode();
    node.put("table", table);
    node.put("query", queryId);
    ArrayNode list = node.putArray("transactions");
    for (TaskTransaction t : txns) {
      list.addObject().put("id", t.id()).put("producer_id", t.producerId()).put("epoch", t.epoch());
    }
    if (mark != null) node.set("epoch_mark", mark.toJsonNode());
    return node.toString().getBytes(StandardCharsets.UTF_8);
  }

  static Pending fromJson(byte[] json) {
    try {
      JsonNode node = JSON.readTree(json);
      List<TaskTransaction> txns = new ArrayList<>();
      for (JsonNode t : node.path("transactions")) {
        txns.add(new TaskTransaction(t.path("id").asText(), t.path("producer_id").asLong(),
            (short) t.path("epoch").asInt()));
      }
      EpochMark mark = node.has("epoch_mark") ? EpochMark.fromJson(node.get("epoch_mark")) : null;
      return new Pending(node.path("table").asText(), node.path("query").asText(null), txns, mark);
    } catch (IOException e) {
      throw new KplexException("METADATA", "unreadable pending commit in " + TOPIC + ": " + e.getMessage(), e);
    }
  }
}
