package io.kplex.spark.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The Admin clients and the plain producer kplex's own requests go through (topic checks,
 * the catalog, claims, commit records), shared by every {@link KafkaTopics} of the JVM with
 * the same settings and client factory, as Spark's Kafka sink keeps its producers. A SQL
 * statement used to connect about fifteen times on the driver (each table lookup, each check,
 * the claim, the commit); on a SASL_SSL listener every connection is a TLS handshake and a
 * login, and on a remote broker several round trips.
 *
 * <p>A {@link KafkaTopics} leases what it uses and gives it back when it is closed; a client no
 * one leases is closed after {@link #IDLE_MS} unused. One that failed in a way a new connection
 * could mend (a refused login, a producer's failed send) is {@linkplain Lease#discard discarded}:
 * closed once its last lease ends, and the next lease makes a new one. Settings are compared
 * whole, so two catalogs with other credentials never share a client.
 */
public final class SharedClients {
  /** A client no one leases is closed after this long unused. */
  static final long IDLE_MS = 60_000;

  /**
   * A JVM system property ({@code -Dkplex.sharedClients=false}) that gives every use clients of
   * its own, closed when it is done, as kplex did before it shared them: for
   * bench/statement_cost.py to compare both in one run. A SQL session cannot set it.
   */
  static final String PROPERTY = "kplex.sharedClients";

  /** What a client is for: Admin clients for quick and for slow requests get a connection each. */
  public enum Kind { ADMIN, SLOW_ADMIN, PRODUCER }

  private record Key(KafkaConf conf, KafkaClients clients, Kind kind) {}

  private static final class Shared {
    final AutoCloseable client;
    int leases;
    long idleSinceMs;
    boolean discarded;

    Shared(AutoCloseable client) {
      this.client = client;
    }
  }

  private static final Map<Key, Shared> SHARED = new HashMap<>();
  private static ScheduledExecutorService evictor;

  private SharedClients() {}

  /** One lease of a shared client; {@link #release} once, when done with it. */
  public static final class Lease<T> {
    private final Key key;
    private final Shared shared;
    private boolean released;

    private Lease(Key key, Shared shared) {
      this.key = key;
      this.shared = shared;
    }

    @SuppressWarnings("unchecked")
    public T client() {
      return (T) shared.client;
    }

    /** Gives the client back; it stays open for the next lease unless it was discarded. */
    public void release() {
      AutoCloseable closing = null;
      synchronized (SharedClients.class) {
        if (released) return;
        released = true;
        shared.leases--;
        shared.idleSinceMs = System.currentTimeMillis();
        if (shared.leases == 0 && shared.discarded) closing = shared.client;
      }
      if (closing != null) close(closing);
    }

    /** No later lease gets this client: it is closed when its last lease is released. */
    public void discard() {
      AutoCloseable closing = null;
      synchronized (SharedClients.class) {
        if (shared.discarded) return;
        shared.discarded = true;
        if (SHARED.get(key) == shared) SHARED.remove(key);
        if (shared.leases == 0) closing = shared.client;
      }
      if (closing != null) close(closing);
    }
  }

  /** A lease of the client of this kind for these settings and factory, made by {@code make} if there is none. */
  public static <T extends AutoCloseable> Lease<T> lease(KafkaConf conf, KafkaClients clients, Kind kind,
      Supplier<T> make) {
    Key key = new Key(conf, clients, kind);
    if ("false".equals(System.getProperty(PROPERTY))) {
      Shared own = new Shared(make.get());
      own.leases = 1;
      own.discarded = true;  // never kept: closed when released
      return new Lease<>(key, own);
    }
    synchronized (SharedClients.class) {
      Shared shared = SHARED.get(key);
      if (shared != null) {
        shared.leases++;
        return new Lease<>(key, shared);
      }
    }
    // Made outside the lock (it may resolve names and start a thread); two leases made at once
    // keep the first made, and the other is closed.
    T made = make.get();
    Shared mine = new Shared(made);
    Lease<T> lease;
    synchronized (SharedClients.class) {
      startEvictor();
      Shared shared = SHARED.putIfAbsent(key, mine);
      if (shared == null) {
        mine.leases = 1;
        return new Lease<>(key, mine);
      }
      shared.leases++;
      lease = new Lease<>(key, shared);
    }
    close(made);  // outside the lock: closing may wait for the client's thread
    return lease;
  }

  private static void startEvictor() {
    if (evictor != null) return;
    evictor = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "kplex-shared-clients-evictor");
      t.setDaemon(true);
      return t;
    });
    evictor.scheduleWithFixedDelay(SharedClients::evictIdle, IDLE_MS / 4, IDLE_MS / 4, TimeUnit.MILLISECONDS);
  }

  /** Closes every client no one has leased for {@link #IDLE_MS}. */
  static void evictIdle() {
    evictIdleSince(System.currentTimeMillis() - IDLE_MS);
  }

  /** Closes every client no one has leased since {@code beforeMs} (a test passes the future: all idle ones). */
  static void evictIdleSince(long beforeMs) {
    List<AutoCloseable> closing = new ArrayList<>();
    synchronized (SharedClients.class) {
      for (Iterator<Shared> it = SHARED.values().iterator(); it.hasNext(); ) {
        Shared s = it.next();
        if (s.leases == 0 && s.idleSinceMs < beforeMs) {
          it.remove();
          closing.add(s.client);
        }
      }
    }
    closing.forEach(SharedClients::close);
  }

  private static void close(AutoCloseable client) {
    try {
      if (client instanceof org.apache.kafka.clients.admin.Admin admin) {
        admin.close(Duration.ofSeconds(5));
      } else if (client instanceof org.apache.kafka.clients.producer.Producer<?, ?> producer) {
        producer.close(Duration.ofSeconds(5));
      } else {
        client.close();
      }
    } catch (Exception e) {
      // Closing a client whose broker is gone: nothing to keep, nothing to report.
    }
  }
}
