package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.Clock;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One writer per table at a time. A write (a batch INSERT, or one epoch of a streaming
 * query) claims its table in the commit log ({@code writer/<table>/<id>} in
 * {@link CommitLog#TOPIC}) and renews it while it runs (every quarter of the claim timeout,
 * {@link #beatEvery}); it removes the
 * claim when it commits or aborts. Of two live claims the older one (lower offset in the
 * log, so a total order even when both are made in the same millisecond) wins: the newer
 * write watches the older claim and fails as soon as it is renewed or released (its writer
 * is alive), before a task starts, naming the other query. A claim left unchanged for
 * the claim timeout ({@code kplex.writer_claim_timeout_ms}, {@link #DEFAULT_STALE_MS}) belongs
 * to a driver that died, or stood still for that long (a GC pause, a stopped process): it
 * is taken over (a {@code writer-taken/<table>/<id>} marker, then its removal), and the new
 * write recovers what that one left (see {@link ExactlyOnceCommitter#recover}).
 *
 * <p>A claim is a fencing token, checked where it matters: a writer records its commit
 * ({@link CommitLog#begin}) and then reads whether its claim was taken
 * ({@link #takenAt}). The log's order decides who finishes the commit: recorded before the
 * taker's marker, the taker finishes it (it reads the log after its marker); recorded
 * after, neither does (the taker fences it, the writer fails). So a writer that was paused
 * past the timeout never commits next to the one that took over.
 *
 * <p>So a write fences only the open transactions of writers that hold no claim: a write
 * that failed or ended, or one whose claim it took over (dead, or standing still past the
 * claim timeout); never those of a writer that holds its claim. Two concurrent INSERTs
 * never both become partly visible: one succeeds, the other fails having written nothing.
 *
 * <p>A streaming query holds one claim for its whole run ({@link #acquire(KafkaConf, String,
 * String, Thread, long)} with its thread as owner): the claim belongs to the query's thread,
 * and is removed once that thread has ended, by the renewer within {@link #RENEW_MS}, and at
 * once by any claim made after it through the same {@link WriterClaims} (this JVM's, so a
 * write that follows {@code query.stop()}, or the end of an available-now run, finds the
 * table free: it waits a little for a finishing run's thread, see
 * {@link WriterClaims#acquire}). The renewer waits real time
 * (a second between beats); everything else reads the claims' {@link Clock}.
 */
public final class WriterLease implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(WriterLease.class);
  static final long RENEW_MS = 1_000;
  /** No renewal for this long: the claim's driver is dead (kplex.writer_claim_timeout_ms). */
  public static final long DEFAULT_STALE_MS = io.kplex.spark.spec.KplexOptions.DEFAULT_WRITER_CLAIM_TIMEOUT_MS;
  /** Taken-over markers older than this are removed (their writers have long failed). */
  static final long MARKER_KEEP_MS = 24 * 3_600_000L;
  /** How long a second {@link #close} waits for the first to have removed the claim. */
  static final long CLOSE_WAIT_MS = 10_000;

  /** Where it was claimed: its clients, its clock, and the claims of this JVM held for a thread. */
  private final WriterClaims claims;
  private final KafkaConf kafka;
  private final String table;
  private final String key;
  private final Thread renewer;
  /** The thread whose end ends the claim (null: ended by {@link #close} only). */
  private final Thread owner;
  private volatile boolean closed;
  /** Who took this claim over, as its renewer found before a beat (null: not taken). */
  private volatile String takenBy;
  /** The thread that closes the claim (null: open). */
  private Thread closer;
  /** Counted down by {@link #close}: wakes the renewer (no interrupt, which would break its Kafka calls). */
  private final CountDownLatch ending = new CountDownLatch(1);
  /** Counted down once the claim is removed from the log and {@link #whenEnded} ran: a second {@link #close} waits for it. */
  private final CountDownLatch ended = new CountDownLatch(1);
  private final List<Runnable> onEnd = new CopyOnWriteArrayList<>();

  /** How often the claim is written again: {@link #beatEvery} of the claim timeout. */
  private final long beatMs;

  private WriterLease(WriterClaims claims, KafkaConf kafka, String table, String key, String query, Thread owner,
      long staleMs) {
    this.beatMs = beatEvery(staleMs);
    this.claims = claims;
    this.kafka = kafka;
    this.table = table;
    this.key = key;
    this.owner = owner;
    this.renewer = new Thread(() -> renew(query, staleMs), "kplex-writer-lease " + key);
    renewer.setDaemon(true);
  }

  static String prefix(String table) {
    return "writer/" + table + "/";
  }

  static String takenPrefix(String table) {
    return "writer-taken/" + table + "/";
  }

  /** The marker that says the claim {@code claimKey} of {@code table} was taken over. */
  static String takenKey(String table, String claimKey) {
    return takenPrefix(table) + claimKey.substring(prefix(table).length());
  }

  /** This claim's key in the log ({@code writer/<table>/<id>}). */
  public String key() {
    return key;
  }

  /** Claims {@code table} for the write of {@code query}, or fails naming the live writer. */
  public static WriterLease acquire(KafkaConf kafka, String table, String query) {
    return acquire(kafka, table, query, null, DEFAULT_STALE_MS);
  }

  /**
   * As {@link #acquire(KafkaConf, String, String)}, for as long as {@code owner} runs (a
   * streaming query's thread; null: until {@link #close}); a claim of another writer not
   * renewed for {@code staleMs} is taken over. Claimed in this JVM's {@link WriterClaims#JVM}.
   */
  public static WriterLease acquire(KafkaConf kafka, String table, String query, Thread owner, long staleMs) {
    return WriterClaims.JVM.acquire(kafka, table, query, owner, staleMs);
  }

  /** Makes the claim in the log (see the class comment); {@link #start} then renews it. */
  static WriterLease claim(WriterClaims claims, KafkaConf kafka, String table, String query, Thread owner,
      long staleMs) {
    Clock clock = claims.clock();
    String key = prefix(table) + UUID.randomUUID();
    WriterLease lease = new WriterLease(claims, kafka, table, key, query, owner, staleMs);
    try (KafkaTopics admin = claims.kafka(kafka)) {
      CompactedTopic log = CommitLog.topic(admin);
      log.put(key, value(query, 0, staleMs));
      Map<String, Map.Entry<Long, byte[]>> claimed = log.readPrefix(prefix(table));
      long mine = claimed.get(key).getKey();
      Map<String, Map.Entry<Long, byte[]>> older = new HashMap<>();
      claimed.forEach((k, v) -> {
        if (v.getKey() < mine) older.put(k, v);
      });
      if (!older.isEmpty()) {
        // Older claims: alive if renewed or released while we watch (fail at once), a dead
        // (or paused) driver's if unchanged for the timeout: taken over, marked, then removed.
        // The timeout is the longest of this write's and each holder's own (it renews at its
        // pace: a watcher with a shorter timeout would take a live claim over).
        long waitMs = staleMs;
        for (Map.Entry<Long, byte[]> o : older.values()) waitMs = staleAfter(o.getValue(), waitMs);
        long deadline = clock.millis() + waitMs;
        while (clock.millis() < deadline) {
          sleep(clock, RENEW_MS / 2);
          Map<String, Map.Entry<Long, byte[]>> now = log.readPrefix(prefix(table));
          for (Map.Entry<String, Map.Entry<Long, byte[]>> o : older.entrySet()) {
            Map.Entry<Long, byte[]> later = now.get(o.getKey());
            if (later == null || !java.util.Arrays.equals(later.getValue(), o.getValue().getValue())) {
              log.put(key, null);
              throw Errors.tableBusy(table, queryOf(o.getValue().getValue()));
            }
          }
        }
        Map<String, byte[]> takeOver = new java.util.LinkedHashMap<>();
        for (String dead : older.keySet()) {
          LOG.warn("kplex: taking over the claim {} on table {}: its writer did not renew it for {} ms", dead,
              table, waitMs);
          takeOver.put(takenKey(table, dead), taken(query, clock));
          takeOver.put(dead, null);
        }
        log.putAll(takeOver);
      }
      forgetOldMarkers(log, table, clock);
    }
    return lease;
  }

  /** Starts renewing the claim. */
  void start() {
    renewer.start();
  }

  /** The thread whose end ends this claim, or null. */
  Thread owner() {
    return owner;
  }

  /** The table claimed. */
  String table() {
    return table;
  }

  /**
   * The offset of the marker that says this claim was taken over, or -1 if it was not: read
   * after recording a commit, whose offset it is compared with (see the class comment).
   */
  public long takenAt(CompactedTopic log) {
    Map.Entry<Long, byte[]> marker = log.readPrefix(takenPrefix(table)).get(takenKey(table, key));
    return marker == null ? -1 : marker.getKey();
  }

  /** Who took this claim over (from its marker), for the error. */
  public String takenBy(CompactedTopic log) {
    Map.Entry<Long, byte[]> marker = log.readPrefix(takenPrefix(table)).get(takenKey(table, key));
    return marker == null ? "?" : queryOf(marker.getValue());
  }

  private static void forgetOldMarkers(CompactedTopic log, String table, Clock clock) {
    Map<String, byte[]> old = new java.util.LinkedHashMap<>();
    long before = clock.millis() - MARKER_KEEP_MS;
    log.readPrefix(takenPrefix(table)).forEach((k, v) -> {
      String text = new String(v.getValue(), StandardCharsets.UTF_8);
      int at = text.indexOf("\"at\":");
      if (at >= 0 && Long.parseLong(text.substring(at + 5, text.indexOf('}', at)).trim()) < before) old.put(k, null);
    });
    if (!old.isEmpty()) log.putAll(old);
  }

  private static byte[] taken(String query, Clock clock) {
    return ("{\"query\":\"" + query + "\",\"at\":" + clock.millis() + "}").getBytes(StandardCharsets.UTF_8);
  }

  /** Runs {@code ended} when the claim ends (closed, or its owning thread gone). */
  public void whenEnded(Runnable ended) {
    onEnd.add(ended);
  }

  /**
   * Whether this claim is still held: not closed, not found taken over, and its owning thread
   * (if any) runs.
   */
  public boolean held() {
    return !closed && takenBy == null && (owner == null || owner.isAlive());
  }

  /**
   * Who took this claim over, as its renewer found before a beat (it renews it no more), or
   * null: a writer that holds it for a run asks before each write, so that none of its tasks
   * opens a transaction next to the taker's.
   */
  public String takenOverBy() {
    return takenBy;
  }

  /**
   * How often a claim with timeout {@code staleMs} is written again: a quarter of the
   * timeout (a watcher sees about four beats before it would take the claim over), no more often
   * than every {@link #RENEW_MS} and no less often than every 15 s. Each beat is a record in the commit log,
   * so a query's claim costs the log what its timeout asks, not a record a second.
   */
  static long beatEvery(long staleMs) {
    return Math.max(RENEW_MS, Math.min(staleMs / 4, 15_000));
  }

  private void renew(String query, long staleMs) {
    long beat = 0;
    long lastBeat = System.nanoTime();
    try (KafkaTopics admin = claims.kafka(kafka)) {
      CompactedTopic log = CommitLog.topic(admin);
      // Awake at least every RENEW_MS to see the owner end, and when the next beat is due.
      while (!ending.await(Math.min(RENEW_MS, Math.max(1, beatMs - (System.nanoTime() - lastBeat) / 1_000_000)),
          TimeUnit.MILLISECONDS)) {
        if (owner != null && !owner.isAlive()) {
          close();  // the query's run ended between micro-batches
          return;
        }
        if (takenBy != null || System.nanoTime() - lastBeat < TimeUnit.MILLISECONDS.toNanos(beatMs)) continue;
        // Taken over (this driver stood still past the timeout): renewing would bring the
        // removed claim back, and a later writer would take it for a live one. A marker that
        // cannot be read: no renewal yet, tried again at the next wake-up (a second on; a
        // claim goes stale only after about four beats).
        Map.Entry<Long, byte[]> marker;
        try {
          marker = log.readPrefix(takenPrefix(table)).get(takenKey(table, key));
        } catch (RuntimeException e) {
          LOG.warn("kplex: could not read whether the writer claim {} was taken over: {}", key, e.toString());
          continue;
        }
        lastBeat = System.nanoTime();
        if (marker != null) {
          takenBy = queryOf(marker.getValue());
          LOG.warn("kplex: the writer claim {} on table {} was taken over by {}: no longer renewed", key, table,
              takenBy);
          continue;
        }
        try {
          log.put(key, value(query, ++beat, staleMs));
        } catch (RuntimeException e) {
          LOG.warn("kplex: could not renew the writer claim {}: {}", key, e.toString());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * Removes the claim from the log and runs what waits for its end. A second call, from
   * another thread than the renewer, returns once the first one has removed it (within
   * {@link #CLOSE_WAIT_MS}), so a caller that ends a claim finds the table free after it.
   */
  @Override
  public void close() {
    Thread first;
    synchronized (this) {
      first = closer;
      if (first == null) {
        closed = true;
        closer = Thread.currentThread();
      }
    }
    if (first != null) {
      // The renewer is joined by the first closer: it must not wait for it.
      if (Thread.currentThread() != renewer && Thread.currentThread() != first) awaitEnded();
      return;
    }
    try {
      ending.countDown();
      if (Thread.currentThread() != renewer) {
        try {
          renewer.join(5_000);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      }
      try (KafkaTopics admin = claims.kafka(kafka)) {
        CommitLog.topic(admin).put(key, null);
      } catch (RuntimeException e) {
        LOG.warn("kplex: could not remove the writer claim {} (it goes stale): {}", key, e.toString());
      }
      for (Runnable r : onEnd) {
        try {
          r.run();
        } catch (RuntimeException e) {
          LOG.warn("kplex: after the writer claim {} ended: {}", key, e.toString());
        }
      }
    } finally {
      // Forgotten only once removed: a claim made meanwhile in this JVM finds this one among
      // the held, and waits for its removal (a second close) instead of taking it for a live
      // writer's.
      claims.forget(this);
      ended.countDown();
    }
  }

  private void awaitEnded() {
    try {
      ended.await(CLOSE_WAIT_MS, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A claim's value: the query, its beat, and the claim timeout its writer renews it by. */
  private static byte[] value(String query, long beat, long staleMs) {
    return ("{\"query\":\"" + query + "\",\"beat\":" + beat + ",\"timeout_ms\":" + staleMs + "}")
        .getBytes(StandardCharsets.UTF_8);
  }

  /**
   * How long a claim with value {@code claimValue} may stand unchanged before it is stale, to
   * a watcher whose own timeout is {@code watcherMs}: the longer of that and the timeout its
   * holder renews it by (recorded in the claim; a claim of a kplex that did not record it:
   * the watcher's).
   */
  public static long staleAfter(byte[] claimValue, long watcherMs) {
    String text = new String(claimValue, StandardCharsets.UTF_8);
    int i = text.indexOf("\"timeout_ms\":");
    if (i < 0) return watcherMs;
    int from = i + "\"timeout_ms\":".length();
    int to = from;
    while (to < text.length() && Character.isDigit(text.charAt(to))) to++;
    try {
      return Math.max(watcherMs, Long.parseLong(text.substring(from, to)));
    } catch (NumberFormatException e) {
      return watcherMs;
    }
  }

  private static String queryOf(byte[] value) {
    String text = new String(value, StandardCharsets.UTF_8);
    int i = text.indexOf("\"query\":\"");
    return i < 0 ? "?" : text.substring(i + 9, text.indexOf('"', i + 9));
  }

  private static void sleep(Clock clock, long ms) {
    try {
      clock.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
