package io.kplex.spark.txn;

import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Where writer claims ({@link WriterLease}) are made: the Kafka clients and the clock they
 * use, and the claims held for a thread (a streaming query's run), which end when that
 * thread does.
 *
 * <p>Lifecycle: production code uses {@link #JVM}, which lives as long as the JVM, because a
 * claim held for a query's thread must be seen ended by any later write in this JVM, from
 * whichever session or catalog it comes (a write that follows {@code query.stop()} finds
 * the table free at once). Every {@link #acquire} first waits briefly for the threads of
 * claims on its table to end, then releases the claims whose thread has ended; {@link
 * #close} ends those still held. A JUnit test makes its own, with fake
 * clients and a manual clock, and closes it.
 */
public final class WriterClaims implements AutoCloseable {
  /** How long a write waits for this JVM's claims on its table to end with their thread (see {@link #awaitEnding}). */
  static final long ENDING_WAIT_MS = 2_000;

  /** This JVM's claims, with the real clients and clock. */
  public static final WriterClaims JVM = new WriterClaims(KafkaClients.REAL, Clock.SYSTEM);

  private final KafkaClients clients;
  private final Clock clock;
  /** The claims held for a thread, until it ends. */
  private final Set<WriterLease> owned = ConcurrentHashMap.newKeySet();

  public WriterClaims(KafkaClients clients, Clock clock) {
    this.clients = clients;
    this.clock = clock;
  }

  /**
   * Claims {@code table} for the write of {@code query}, for as long as {@code owner} runs
   * (a streaming query's thread; null: until the claim is closed); a claim of another writer
   * not renewed for {@code staleMs} is taken over; a live one is refused
   * ({@code [KPLEX_TABLE_BUSY]}, naming its query).
   */
  public WriterLease acquire(KafkaConf kafka, String table, String query, Thread owner, long staleMs) {
    awaitEnding(table);
    releaseEnded();
    WriterLease lease = WriterLease.claim(this, kafka, table, query, owner, staleMs);
    if (owner != null) owned.add(lease);
    lease.start();
    return lease;
  }

  /**
   * Waits, up to {@link #ENDING_WAIT_MS}, for the threads that hold this JVM's claims on
   * {@code table} to end. A streaming query's run is over before its thread is: Spark's
   * {@code awaitTermination} returns, and the next run of the query (or another write) may
   * start, while that thread still finishes. A claim made then would watch the old run's
   * claim, see its renewer remove it, and take that for a live writer ({@code
   * [KPLEX_TABLE_BUSY]}). A thread still running after the wait is a live writer's: its claim
   * is left, and the claim made next meets it as any other.
   */
  private void awaitEnding(String table) {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ENDING_WAIT_MS);
    for (WriterLease l : owned) {
      Thread thread = l.owner();
      if (!l.table().equals(table) || thread == Thread.currentThread()) continue;
      long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
      if (left <= 0) return;
      try {
        thread.join(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** Ends the claims whose owning thread has ended (a stopped query's); returns how many. */
  public int releaseEnded() {
    List<WriterLease> ended = new ArrayList<>();
    for (WriterLease l : owned) {
      if (!l.owner().isAlive()) ended.add(l);
    }
    for (WriterLease l : ended) l.close();
    return ended.size();
  }

  /** How many claims are held for a thread. */
  public int held() {
    return owned.size();
  }

  /** Ends every claim held for a thread. */
  @Override
  public void close() {
    for (WriterLease l : new ArrayList<>(owned)) l.close();
  }

  /** A connection of these clients and this clock. */
  KafkaTopics kafka(KafkaConf kafka) {
    return new KafkaTopics(kafka, clients, clock);
  }

  KafkaClients clients() {
    return clients;
  }

  Clock clock() {
    return clock;
  }

  /** A claim that ended. */
  void forget(WriterLease lease) {
    owned.remove(lease);
  }
}
