package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One writer per table at a time. A write (a batch INSERT, or one epoch of a streaming
 * query) claims its table in the commit log ({@code writer/<table>/<id>} in
 * {@link CommitLog#TOPIC}) and renews the claim every second while it runs; it removes the
 * claim when it commits or aborts. Of two live claims the older one (lower offset in the
 * log, so a total order even when both are made in the same millisecond) wins: the newer
 * write watches the older claim and fails as soon as it is renewed or released (its writer
 * is alive), before a task starts, naming the other query. A claim left unchanged for
 * {@link #STALE_MS} belongs to a driver that died: it is removed, and the new write
 * recovers what that one left (see {@link ExactlyOnceCommitter#recover}).
 *
 * <p>So a write never fences the transactions of a live writer, and two concurrent
 * INSERTs never both become partly visible: one succeeds, the other fails having written
 * nothing.
 */
public final class WriterLease implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(WriterLease.class);
  static final long RENEW_MS = 1_000;
  /** No renewal for this long: the claim's driver is dead. */
  static final long STALE_MS = 6_000;

  private final KafkaConf kafka;
  private final String key;
  private final Thread renewer;
  private volatile boolean closed;

  private WriterLease(KafkaConf kafka, String key, String query) {
    this.kafka = kafka;
    this.key = key;
    this.renewer = new Thread(() -> renew(query), "kplex-writer-lease " + key);
    renewer.setDaemon(true);
  }

  static String prefix(String table) {
    return "writer/" + table + "/";
  }

  /** Claims {@code table} for the write of {@code query}, or fails naming the live writer. */
  public static WriterLease acquire(KafkaConf kafka, String table, String query) {
    String key = prefix(table) + UUID.randomUUID();
    WriterLease lease = new WriterLease(kafka, key, query);
    try (KafkaTopics admin = new KafkaTopics(kafka)) {
      CompactedTopic log = new CompactedTopic(admin, CommitLog.TOPIC);
      log.put(key, value(query, 0));
      Map<String, Map.Entry<Long, byte[]>> claims = log.readPrefix(prefix(table));
      long mine = claims.get(key).getKey();
      Map<String, Map.Entry<Long, byte[]>> older = new HashMap<>();
      claims.forEach((k, v) -> {
        if (v.getKey() < mine) older.put(k, v);
      });
      if (!older.isEmpty()) {
        // Older claims: alive if renewed or released while we watch (fail at once), a dead
        // driver's if unchanged for STALE_MS (remove them and go on).
        long deadline = System.currentTimeMillis() + STALE_MS;
        while (System.currentTimeMillis() < deadline) {
          sleep(RENEW_MS / 2);
          Map<String, Map.Entry<Long, byte[]>> now = log.readPrefix(prefix(table));
          for (Map.Entry<String, Map.Entry<Long, byte[]>> o : older.entrySet()) {
            Map.Entry<Long, byte[]> later = now.get(o.getKey());
            if (later == null || !java.util.Arrays.equals(later.getValue(), o.getValue().getValue())) {
              log.put(key, null);
              throw Errors.tableBusy(table, queryOf(o.getValue().getValue()));
            }
          }
        }
        for (String dead : older.keySet()) {
          LOG.info("kplex: removing the claim {} on table {} of a writer that stopped renewing it", dead, table);
          log.put(dead, null);
        }
      }
    }
    lease.renewer.start();
    return lease;
  }

  private void renew(String query) {
    long beat = 0;
    try (KafkaTopics admin = new KafkaTopics(kafka)) {
      CompactedTopic log = new CompactedTopic(admin, CommitLog.TOPIC);
      while (!closed) {
        sleep(RENEW_MS);
        if (closed) return;
        try {
          log.put(key, value(query, ++beat));
        } catch (RuntimeException e) {
          LOG.warn("kplex: could not renew the writer claim {}: {}", key, e.toString());
        }
      }
    }
  }

  @Override
  public void close() {
    closed = true;
    renewer.interrupt();
    try {
      renewer.join(5_000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try (KafkaTopics admin = new KafkaTopics(kafka)) {
      new CompactedTopic(admin, CommitLog.TOPIC).put(key, null);
    } catch (RuntimeException e) {
      LOG.warn("kplex: could not remove the writer claim {} (it goes stale in {} ms): {}", key, STALE_MS, e.toString());
    }
  }

  private static byte[] value(String query, long beat) {
    return ("{\"query\":\"" + query + "\",\"beat\":" + beat + "}").getBytes(StandardCharsets.UTF_8);
  }

  private static String queryOf(byte[] value) {
    String text = new String(value, StandardCharsets.UTF_8);
    int i = text.indexOf("\"query\":\"");
    return i < 0 ? "?" : text.substring(i + 9, text.indexOf('"', i + 9));
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
