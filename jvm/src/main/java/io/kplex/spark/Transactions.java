package io.kplex.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly once across a whole Spark write (G3). Each task writes inside its own Kafka
 * transaction, id {@code kplex.<table>.<partition>.<stage attempt>.<attempt>}, and leaves it open;
 * the driver finishes them all:
 * <ol>
 *   <li>records the transactions to commit in the compacted {@code _kplex_commits} topic
 *       (so that a driver that dies while committing is rolled forward later);</li>
 *   <li>fences every other open transaction of the table (failed, lost and speculative
 *       attempts): Kafka aborts them;</li>
 *   <li>commits each task's transaction by resuming it ({@link TransactionResumer});</li>
 *   <li>deletes the record.</li>
 * </ol>
 * An aborted job fences all open transactions of the table. Every write first runs
 * {@link #recover}: it finishes a commit that a dead driver left half done and fences
 * whatever a crashed run left open, so no transaction pins the topic's last stable
 * offset. One writer per table at a time: a new write fences a running one.
 */
final class Transactions {
  private static final Logger LOG = LoggerFactory.getLogger(Transactions.class);
  static final String COMMITS_TOPIC = "_kplex_commits";
  static final int DEFAULT_TIMEOUT_MS = 900_000;
  private static final ObjectMapper JSON = new ObjectMapper();

  private Transactions() {}

  /** One task's open transaction, reported to the driver in its commit message. */
  static final class Txn implements Serializable {
    final String id;
    final long producerId;
    final short epoch;

    Txn(String id, long producerId, short epoch) {
      this.id = id;
      this.producerId = producerId;
      this.epoch = epoch;
    }

    @Override
    public String toString() {
      return id + "(pid " + producerId + ", epoch " + epoch + ")";
    }
  }

  static String prefix(String table) {
    return "kplex." + table + ".";
  }

  /** Bounded (partitions x attempts) and distinct for every attempt of a task, stage retries included. */
  static String transactionalId(String table, int partitionId, int stageAttempt, int attempt) {
    return prefix(table) + partitionId + "." + stageAttempt + "." + attempt;
  }

  static void commit(WriteConf conf, String queryId, List<Txn> txns) {
    try (TableStore store = new TableStore(conf.kafka, COMMITS_TOPIC)) {
      store.publish(COMMITS_TOPIC, conf.table, toJson(conf.table, queryId, txns));
      Set<String> keep = new HashSet<>();
      for (Txn t : txns) keep.add(t.id);
      fenceOpen(store, conf.table, keep);
      finish(conf, txns, true);
      store.publish(COMMITS_TOPIC, conf.table, null);
    }
  }

  /** How long a commit waits for its markers before it returns anyway (with a warning). */
  static final long VISIBLE_WAIT_MS = 30_000;

  /**
   * Waits until every partition's last stable offset is past {@code lastOffsets[p]} (-1:
   * nothing written there): the commit markers are written, read_committed consumers see
   * the records.
   */
  static void awaitVisible(WriteConf conf, long[] lastOffsets) {
    Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> specs = new HashMap<>();
    for (int p = 0; p < lastOffsets.length; p++) {
      if (lastOffsets[p] >= 0) {
        specs.put(new org.apache.kafka.common.TopicPartition(conf.topic, p),
            org.apache.kafka.clients.admin.OffsetSpec.latest());
      }
    }
    if (specs.isEmpty()) return;
    long deadline = System.currentTimeMillis() + VISIBLE_WAIT_MS;
    try (TableStore store = new TableStore(conf.kafka, COMMITS_TOPIC)) {
      while (true) {
        var stable = store.call(() -> store.admin().listOffsets(specs,
            new org.apache.kafka.clients.admin.ListOffsetsOptions(org.apache.kafka.common.IsolationLevel.READ_COMMITTED))
            .all().get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS));
        specs.keySet().removeIf(tp -> stable.get(tp).offset() > lastOffsets[tp.partition()]);
        if (specs.isEmpty()) return;
        if (System.currentTimeMillis() > deadline) {
          LOG.warn("kplex: table {} is committed, but after {} s the commit markers of {} are not"
              + " visible yet; read_committed consumers will see the records once they are",
              conf.table, VISIBLE_WAIT_MS / 1000, specs.keySet());
          return;
        }
        Thread.sleep(10);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  static void abort(WriteConf conf) {
    try (TableStore store = new TableStore(conf.kafka, COMMITS_TOPIC)) {
      fenceOpen(store, conf.table, Set.of());
    }
  }

  /** Rolls a half-done commit forward, then fences what is left open. Returns a report. */
  static String recover(WriteConf conf) {
    StringBuilder report = new StringBuilder();
    try (TableStore store = new TableStore(conf.kafka, COMMITS_TOPIC)) {
      byte[] pending = store.readCompacted(COMMITS_TOPIC).get(conf.table);
      if (pending != null) {
        List<Txn> txns = fromJson(pending);
        LOG.warn("kplex: finishing the commit of {} transactions that a previous driver of table {}"
            + " left half done", txns.size(), conf.table);
        Set<String> keep = new HashSet<>();
        for (Txn t : txns) keep.add(t.id);
        fenceOpen(store, conf.table, keep);
        finish(conf, txns, true);
        store.publish(COMMITS_TOPIC, conf.table, null);
        report.append("committed ").append(txns.size()).append(" transactions of an interrupted commit; ");
      }
      int fenced = fenceOpen(store, conf.table, Set.of());
      report.append("fenced ").append(fenced).append(" open transactions");
    }
    return report.toString();
  }

  /** Fences (so Kafka aborts) every open transaction of the table not in {@code keep}. */
  private static int fenceOpen(TableStore store, String table, Set<String> keep) {
    List<String> stale = new ArrayList<>();
    for (TransactionListing t : store.call(() -> store.admin().listTransactions(
        new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING,
            TransactionState.PREPARE_ABORT, TransactionState.PREPARE_COMMIT)))
        .all().get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS))) {
      if (t.transactionalId().startsWith(prefix(table)) && !keep.contains(t.transactionalId())) {
        stale.add(t.transactionalId());
      }
    }
    if (!stale.isEmpty()) {
      LOG.info("kplex: fencing {} open transactions of table {}: {}", stale.size(), table, stale);
      store.call(() -> store.admin().fenceProducers(stale).all()
          .get(KafkaConf.ADMIN_TIMEOUT_MS * 4L, TimeUnit.MILLISECONDS));
    }
    return stale.size();
  }

  /** Commits (or aborts) each transaction by resuming it in a new producer, in parallel. */
  private static void finish(WriteConf conf, List<Txn> txns, boolean commit) {
    ExecutorService pool = Executors.newFixedThreadPool(Math.max(1, Math.min(16, txns.size())));
    try {
      List<Future<?>> done = new ArrayList<>();
      for (Txn t : txns) {
        done.add(pool.submit(() -> {
          Map<String, Object> props = conf.kafka.producer();
          props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, t.id);
          try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            TransactionResumer.resume(producer, t.producerId, t.epoch);
            if (commit) {
              producer.commitTransaction();
            } else {
              producer.abortTransaction();
            }
          }
          return null;
        }));
      }
      for (int i = 0; i < done.size(); i++) {
        try {
          done.get(i).get();
        } catch (java.util.concurrent.ExecutionException e) {
          throw new KplexException("COMMIT_FAILED", (commit ? "committing" : "aborting")
              + " transaction " + txns.get(i) + " of table " + conf.table + " failed: "
              + e.getCause() + ". If it outlived transaction.timeout.ms, Kafka aborted it.",
              e.getCause());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new KplexException("INTERRUPTED", "interrupted while finishing transactions", e);
    } finally {
      pool.shutdownNow();
    }
  }

  private static byte[] toJson(String table, String queryId, List<Txn> txns) {
    ObjectNode node = JSON.createObjectNode();
    node.put("table", table);
    node.put("query", queryId);
    ArrayNode list = node.putArray("transactions");
    for (Txn t : txns) {
      list.addObject().put("id", t.id).put("producer_id", t.producerId).put("epoch", t.epoch);
    }
    return node.toString().getBytes(StandardCharsets.UTF_8);
  }

  private static List<Txn> fromJson(byte[] json) {
    try {
      List<Txn> txns = new ArrayList<>();
      for (JsonNode t : JSON.readTree(json).path("transactions")) {
        txns.add(new Txn(t.path("id").asText(), t.path("producer_id").asLong(),
            (short) t.path("epoch").asInt()));
      }
      return txns;
    } catch (IOException e) {
      throw new KplexException("METADATA", "unreadable pending commit: " + e.getMessage(), e);
    }
  }
}
