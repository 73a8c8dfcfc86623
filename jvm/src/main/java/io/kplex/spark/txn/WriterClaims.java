package io.kplex.spark.txn;

import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where writer claims ({@link WriterLease}) are made: the Kafka clients and the clock they
 * use, and the claims held for a thread (a streaming query's run), which end when that
 * thread does.
 *
 * <p>Lifecycle: production code uses {@link #JVM}, which lives as long as the JVM, because a
 * claim held for a query's thread must be seen ended by any later write in this JVM, from
 * whichever session or catalog it comes (a write that follows {@code query.stop()} finds
 * the table free at once). Every {@link #acquire} first releases the claims whose thread
 * has ended; {@link #close} ends those still held. A JUnit test makes its own, with fake
 * clients and a manual clock, and closes it.
 */
public final class WriterClaims implements AutoCloseable {
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
    releaseEnded();
    WriterLease lease = WriterLease.claim(this, kafka, table, query, owner, staleMs);
    if (owner != null) owned.add(lease);
    lease.start();
    return lease;
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
