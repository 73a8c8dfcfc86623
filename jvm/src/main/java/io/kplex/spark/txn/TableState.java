package io.kplex.spark.txn;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

/**
 * What the broker and {@link CommitLog#TOPIC} say about one table's writes, gathered in one
 * place for an operator ({@code kplex status}): per physical partition its offsets, per
 * virtual partition the highest order value written, who holds the writer claim and since
 * when, a pending commit and what recovery would do with it, commits Kafka cut short, the
 * table's open transactions, and per streaming query its last epoch, its held records and
 * its lag (the offsets it committed to its monitoring consumer group, {@code kplex.<table>.*}).
 * Read only: nothing is claimed, fenced or changed.
 */
public final class TableState {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final long TIMEOUT_MS = KafkaConf.ADMIN_TIMEOUT_MS;

  private TableState() {}

  /** The monitoring consumer group of a streaming query writing {@code table}. */
  public static String monitorGroup(String table, String query) {
    return monitorGroupPrefix(table) + query;
  }

  static String monitorGroupPrefix(String table) {
    return "kplex." + table + ".";
  }

  /** The table's state as JSON; {@code claimTimeoutMs}: when a claim counts as stale. */
  public static String json(KafkaTopics kafka, String table, String topic, int virtualPartitions,
      long claimTimeoutMs, long nowMs) {
    ObjectNode out = JSON.createObjectNode();
    out.put("table", table).put("topic", topic).put("virtual_partitions", virtualPartitions);
    CommitLog log = new CommitLog(kafka);
    CompactedTopic commits = log.topic();
    Map<String, byte[]> all = commits.readScope(table);
    partitions(kafka, topic, out.putArray("partitions"));
    // The topic's id now, and the one the table's writes went to: they differ once the topic was
    // deleted and created again outside kplex.
    kafka.describe(topic).map(KafkaTopics::topicId).ifPresent(id -> out.put("topic_id", id));
    byte[] wrote = all.get(CommitLog.topicIdKey(table));
    if (wrote != null) out.put("written_topic_id", CommitLog.topicIdOf(wrote));
    ObjectNode highs = out.putObject("high_order_per_virtual_partition");
    Map<Integer, Long> written = new TreeMap<>(CommitLog.writtenHighs(all, table, null));
    Long floor = written.remove(io.kplex.spark.time.EventTime.Marks.EVERY_VP);
    written.forEach((vp, h) -> highs.put(Integer.toString(vp), h));
    if (floor != null) out.put("floor_every_virtual_partition", floor);  // a strict stream's published watermark
    claim(commits, table, claimTimeoutMs, nowMs, out);
    log.pending(table).ifPresentOrElse(p -> {
      ObjectNode pending = out.putObject("pending_commit");
      pending.put("query", p.query).put("transactions", p.transactions.size())
          .put("recovery", "the next write or `kplex recover` commits its " + p.transactions.size()
              + " transactions (rolls the commit forward), under the writer claim, then fences any other open"
              + " transaction of the table");
    }, () -> out.putNull("pending_commit"));
    ArrayNode partials = out.putArray("partial_commits");
    for (PartialCommit p : CommitLog.partials(all, table)) partials.add(p.describe(virtualPartitions));
    transactions(kafka.admin(), table, nowMs, out);
    streams(kafka, all, table, out.putArray("streams"));
    controlPlane(kafka, commits.where(table), out.putObject("control_plane"));
    return out.toString();
  }

  /**
   * The table's part of the control plane: over how many partitions {@code _kplex_commits}
   * spreads tables, the one that holds this table's records, its offsets (records ever
   * appended, the oldest one kept) and its live keys, what this JVM's view of it holds after
   * compaction (kafka/LogView: a read costs what was appended since the last one, not this
   * history, and only this partition's).
   */
  private static void controlPlane(KafkaTopics kafka, CompactedTopic.Where where, ObjectNode out) {
    out.put("topic", CommitLog.TOPIC).put("partitions", where.partitions()).put("partition", where.partition())
        .put("live_keys", where.liveKeys());
    if (kafka.partitionCount(CommitLog.TOPIC).isEmpty()) return;
    List<TopicPartition> tp = List.of(new TopicPartition(CommitLog.TOPIC, where.partition()));
    out.put("start_offset", offsets(kafka, tp, OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED).get(tp.get(0)))
        .put("end_offset", offsets(kafka, tp, OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED).get(tp.get(0)));
  }

  private static void partitions(KafkaTopics kafka, String topic, ArrayNode out) {
    List<TopicPartition> tps = new ArrayList<>();
    int count = kafka.partitionCount(topic).orElse(0);
    for (int p = 0; p < count; p++) tps.add(new TopicPartition(topic, p));
    Map<TopicPartition, Long> start = offsets(kafka, tps, OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED);
    Map<TopicPartition, Long> end = offsets(kafka, tps, OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED);
    Map<TopicPartition, Long> stable = offsets(kafka, tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED);
    for (TopicPartition tp : tps) {
      out.addObject().put("partition", tp.partition()).put("start_offset", start.get(tp))
          .put("end_offset", end.get(tp)).put("last_stable_offset", stable.get(tp));
    }
  }

  private static Map<TopicPartition, Long> offsets(KafkaTopics kafka, List<TopicPartition> tps, OffsetSpec spec,
      IsolationLevel isolation) {
    Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
    tps.forEach(tp -> ask.put(tp, spec));
    return kafka.offsets("DESCRIBE", Errors.Resource.offsets(tps), isolation, List.of(ask)).get(0);
  }

  /**
   * The live claim: the oldest unremoved {@code writer/<table>/...} record. Its value names
   * the query; when it was claimed and last renewed are its records' timestamps (a renewal
   * rewrites it every second).
   */
  private static void claim(CompactedTopic commits, String table, long claimTimeoutMs, long nowMs, ObjectNode out) {
    CompactedTopic.Lived holder = null;
    for (CompactedTopic.Lived e : commits.readPrefixLived(WriterLease.prefix(table)).values()) {
      if (holder == null || e.offset() < holder.offset()) holder = e;
    }
    if (holder == null) {
      out.putNull("writer_claim");
      return;
    }
    ObjectNode claim = out.putObject("writer_claim");
    claim.put("claimed_at_ms", holder.sinceMs()).put("renewed_at_ms", holder.latestMs())
        .put("age_ms", nowMs - holder.latestMs())
        .put("stale", nowMs - holder.latestMs() > WriterLease.staleAfter(holder.value(), claimTimeoutMs));
    try {
      claim.put("query", JSON.readTree(new String(holder.value(), StandardCharsets.UTF_8)).path("query").asText());
    } catch (java.io.IOException e) {
      claim.put("unreadable", e.getMessage());
    }
  }

  private static void transactions(Admin admin, String table, long nowMs, ObjectNode out) {
    ArrayNode open = out.putArray("open_transactions");
    try {
      List<String> ids = new ArrayList<>();
      for (TransactionListing t : admin.listTransactions().all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
        if (TransactionalIds.belongsTo(table, t.transactionalId()) && t.state() != TransactionState.COMPLETE_COMMIT
            && t.state() != TransactionState.COMPLETE_ABORT && t.state() != TransactionState.EMPTY) {
          ids.add(t.transactionalId());
        }
      }
      if (ids.isEmpty()) return;
      Map<String, TransactionDescription> described =
          admin.describeTransactions(ids).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      new TreeMap<>(described).forEach((id, d) -> {
        ObjectNode t = open.addObject().put("transactional_id", id).put("state", d.state().toString())
            .put("producer_id", d.producerId()).put("epoch", d.producerEpoch());
        d.transactionStartTimeMs().ifPresent(ms -> t.put("open_ms", nowMs - ms));
      });
    } catch (Exception e) {
      out.put("open_transactions_error", "cannot list transactions (" + rootMessage(e)
          + "); the principal needs DESCRIBE on the table's transactional ids");
    }
  }

  private static void streams(KafkaTopics kafka, Map<String, byte[]> all, String table, ArrayNode out) {
    Map<String, Map<TopicPartition, OffsetAndMetadata>> groups = monitorGroups(kafka.admin(), table);
    String prefix = EpochMark.key(table, "");
    EpochMark.all(new TreeMap<>(all).subMap(prefix, prefix + Character.MAX_VALUE)).forEach((key, mark) -> {
      ObjectNode q = out.addObject();
      q.put("query", mark.query()).put("last_epoch", mark.epoch()).put("held_files", mark.held().size());
      if (mark.heldRecords() >= 0) q.put("held_records", mark.heldRecords());
      mark.marks().idle().forEach(q.putArray("idle_partitions")::add);
      lineage(mark.lineage(), q);
      if (EpochMark.INSERTS.equals(mark.query())) {
        q.put("kind", "batch INSERTs");
        if (!mark.reads().isEmpty()) {
          ObjectNode reads = q.putObject("reads");  // what the INSERTs read, per source topic
          new TreeMap<>(mark.reads()).forEach((topic, ranges) -> reads.put(topic, ranges.toString()));
        }
        return;
      }
      q.put("kind", "streaming query");
      String group = monitorGroup(table, mark.query());
      Map<TopicPartition, OffsetAndMetadata> committed = groups.get(group);
      if (committed == null) {
        q.putNull("monitor_group");
        return;
      }
      q.put("monitor_group", group);
      lag(kafka, committed, q);
    });
  }

  /**
   * Where a stream's last epoch stopped on its source, where its held files live, and the query
   * it resumed from: what a query resuming from the table starts from ("Changing a query").
   */
  private static void lineage(EpochMark.Lineage lineage, ObjectNode q) {
    if (lineage == null) return;
    ObjectNode source = q.putObject("source").put("topic", lineage.topic());
    ObjectNode ends = source.putObject("ends");
    new TreeMap<>(lineage.ends()).forEach((p, o) -> ends.put(Integer.toString(p), o));
    if (lineage.heldBase() != null) q.put("held_base", lineage.heldBase());
    if (lineage.resumedFrom() != null) q.put("resumed_from", lineage.resumedFrom());
    if (lineage.atMs() > 0) q.put("committed_at_ms", lineage.atMs());
  }

  private static Map<String, Map<TopicPartition, OffsetAndMetadata>> monitorGroups(Admin admin, String table) {
    Map<String, Map<TopicPartition, OffsetAndMetadata>> out = new HashMap<>();
    try {
      for (ConsumerGroupListing g : admin.listConsumerGroups().all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
        if (g.groupId().startsWith(monitorGroupPrefix(table))) {
          out.put(g.groupId(), admin.listConsumerGroupOffsets(g.groupId()).partitionsToOffsetAndMetadata()
              .get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
        }
      }
    } catch (Exception e) {
      // Monitoring only: without DESCRIBE on groups, the lag is simply not shown.
    }
    return out;
  }

  private static void lag(KafkaTopics kafka, Map<TopicPartition, OffsetAndMetadata> committed, ObjectNode q) {
    List<TopicPartition> tps = new ArrayList<>(committed.keySet());
    Map<TopicPartition, Long> end = offsets(kafka, tps, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED);
    ObjectNode lag = q.putObject("lag");
    long total = 0;
    for (TopicPartition tp : new TreeMap<String, TopicPartition>(keyed(tps)).values()) {
      long behind = Math.max(0, end.getOrDefault(tp, 0L) - committed.get(tp).offset());
      lag.put(tp.topic() + "-" + tp.partition(), behind);
      total += behind;
    }
    q.put("total_lag", total);
  }

  private static Map<String, TopicPartition> keyed(List<TopicPartition> tps) {
    Map<String, TopicPartition> out = new HashMap<>();
    for (TopicPartition tp : tps) out.put(String.format("%s-%09d", tp.topic(), tp.partition()), tp);
    return out;
  }

  private static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null) t = t.getCause();
    return t.getClass().getSimpleName() + ": " + t.getMessage();
  }
}
