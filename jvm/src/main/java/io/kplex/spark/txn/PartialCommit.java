package io.kplex.spark.txn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A commit that Kafka cut short: the driver died (or was stopped) after recording it in
 * {@link CommitLog} and before committing every transaction, nothing finished it within
 * {@code transaction.timeout.ms}, and the broker aborted the rest. Kept in
 * {@link CommitLog#TOPIC} under {@code partial/<table>/<query>/<epoch>} in place of the
 * pending record, so the table stays writable and nothing is lost without a word:
 * <ul>
 *   <li>{@code committed}: per virtual partition, the largest order value the committed
 *       transactions wrote (later writes stay above it);</li>
 *   <li>{@code lostPartitions} / {@code lostVps}: the Spark partitions (tasks) whose
 *       transactions Kafka aborted, and the virtual partitions they held;</li>
 *   <li>{@code tasks}: how many writer tasks the epoch ran (0: not recorded, an older kplex's).</li>
 * </ul>
 * A streaming epoch is completed when its query restarts: Spark runs the epoch again from
 * its checkpoint (same offsets, same held records), kplex with as many writer tasks as
 * {@code tasks} whatever Spark's parallelism is now (so the same rows per task, and each task
 * releases what it did: what a task releases depends on what else it read), and only the
 * rerun's transactions of the lost tasks are committed ({@link #toCommit}). An INSERT has no
 * rerun: {@code kplex recover} names the missing virtual partitions and the predicate that
 * rewrites just them ({@link #describe}).
 */
public record PartialCommit(String table, String query, long epoch, boolean insert,
    Set<Integer> lostPartitions, Set<Integer> lostVps, Map<Integer, Long> committed, boolean vpsKnown, int tasks) {
  private static final ObjectMapper JSON = new ObjectMapper();

  public PartialCommit {
    lostPartitions = Set.copyOf(lostPartitions);
    lostVps = Set.copyOf(lostVps);
    committed = Map.copyOf(committed);
  }

  static String prefix(String table) {
    return "partial/" + table + "/";
  }

  public String key() {
    return prefix(table) + query + "/" + epoch;
  }

  /** What {@code pending} left once {@code lost} (some of its transactions) were aborted by Kafka. */
  static PartialCommit of(CommitLog.Pending pending, List<TaskTransaction> lost) {
    Set<String> lostIds = new java.util.HashSet<>();
    for (TaskTransaction t : lost) lostIds.add(t.id());
    Set<Integer> partitions = new TreeSet<>();
    Set<Integer> vps = new TreeSet<>();
    Map<Integer, Long> committed = new HashMap<>();
    for (TaskTransaction t : pending.transactions) {
      if (lostIds.contains(t.id())) {
        partitions.add(t.partition());
        vps.addAll(t.highs().keySet());
      } else {
        t.highs().forEach((vp, h) -> committed.merge(vp, h, Math::max));
      }
    }
    boolean insert = pending.mark == null || EpochMark.INSERTS.equals(pending.mark.query());
    long epoch = pending.mark == null || insert ? 0 : pending.mark.epoch();
    return new PartialCommit(pending.table, pending.query, epoch, insert, partitions, vps, committed,
        pending.vpsKnown, pending.tasks);
  }

  /**
   * Of a streaming epoch's rerun, the transactions to commit: those of the lost tasks. The
   * rerun must hold the same virtual partitions per task as the first run (it does when the
   * query restarts from its checkpoint: it runs {@code tasks} writer tasks); otherwise nothing
   * is committed and the error says what differs.
   */
  public List<TaskTransaction> toCommit(List<TaskTransaction> rerun) {
    List<TaskTransaction> keep = new ArrayList<>();
    for (TaskTransaction t : rerun) {
      boolean lost = lostPartitions.contains(t.partition());
      for (int vp : t.highs().keySet()) {
        if (lost ? committed.containsKey(vp) : lostVps.contains(vp)) {
          throw Errors.partialRerunDiffers(table, query, epoch, lostVps, lost, t.partition(), vp);
        }
      }
      if (lost) keep.add(t);
    }
    return keep;
  }

  /**
   * For an operator: what was committed, what is missing, and how it gets written (the
   * text of its {@code KPLEX_COMMIT_CUT_SHORT}, of {@code error_conditions.json}).
   */
  public String describe(int virtualPartitions) {
    return cutShort(virtualPartitions).text();
  }

  /** The error a commit cut short like this fails with, once settled. */
  public KplexException cutShort(int virtualPartitions) {
    return Errors.commitCutShort(table, query, insert, epoch, lostPartitions, committed.keySet(), lostVps, vpsKnown,
        virtualPartitions);
  }

  byte[] toJson() {
    ObjectNode node = JSON.createObjectNode();
    node.put("table", table).put("query", query).put("epoch", epoch).put("insert", insert)
        .put("vps_known", vpsKnown);
    if (tasks > 0) node.put("tasks", tasks);
    lostPartitions.stream().sorted().forEach(node.putArray("lost_partitions")::add);
    lostVps.stream().sorted().forEach(node.putArray("lost_vps")::add);
    ObjectNode written = node.putObject("committed");
    committed.forEach((vp, h) -> written.put(Integer.toString(vp), h));
    return node.toString().getBytes(StandardCharsets.UTF_8);
  }

  static PartialCommit fromJson(byte[] json) {
    try {
      JsonNode node = JSON.readTree(json);
      Set<Integer> partitions = new TreeSet<>();
      node.path("lost_partitions").forEach(p -> partitions.add(p.asInt()));
      Set<Integer> vps = new TreeSet<>();
      node.path("lost_vps").forEach(v -> vps.add(v.asInt()));
      Map<Integer, Long> committed = new HashMap<>();
      node.path("committed").fields().forEachRemaining(e -> committed.put(Integer.parseInt(e.getKey()),
          e.getValue().asLong()));
      return new PartialCommit(node.path("table").asText(), node.path("query").asText(), node.path("epoch").asLong(),
          node.path("insert").asBoolean(), partitions, vps, committed, node.path("vps_known").asBoolean(true),
          node.path("tasks").asInt(0));
    } catch (IOException e) {
      throw Errors.unreadableMetadata(Errors.MetadataRecord.PARTIAL_COMMIT, CommitLog.TOPIC, e);
    }
  }
}
