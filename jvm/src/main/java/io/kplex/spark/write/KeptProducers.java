package io.kplex.spark.write;

import io.kplex.spark.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.producer.Producer;

/**
 * The transactional producers an executor keeps from one epoch of a streaming write to the
 * next, so that a task does not make a new producer and wait for {@code initTransactions}
 * every micro-batch (a new producer, the coordinator's round trips and the topic's metadata:
 * about a fifth of a small epoch's write stage).
 *
 * <p>A task's producer is kept once the task handed its flushed transaction over to the
 * driver. The next epoch's task with the same transactional id takes it only when that
 * transaction is known to be committed: same run of the same query, the epoch it wrote is
 * the table's last committed one ({@link EpochStart#lastEpoch}) and this run's driver
 * committed every task transaction of it (not so for an epoch Kafka cut short, whose rerun
 * commits only the lost tasks' transactions and fences the others), and the same producer
 * settings. Anything else (an epoch that failed or was aborted, a restarted query, a task
 * that moved to another executor and back, changed settings) closes the kept producer and
 * the task makes a new one, as before. One not taken within {@link #IDLE} is closed.
 */
final class KeptProducers {
  /** How long a kept producer waits for the next epoch. */
  static final Duration IDLE = Duration.ofSeconds(60);

  /** The executor's producers, kept by transactional id. */
  static final KeptProducers EXECUTOR = new KeptProducers(Clock.SYSTEM);

  /** A kept producer: what it last wrote (run, epoch) and with which settings. */
  private record Kept(Producer<byte[], byte[]> producer, String run, long epoch, Map<String, Object> settings,
      long sinceMs) {}

  private final Clock clock;
  private final Map<String, Kept> kept = new HashMap<>();
  private ScheduledExecutorService sweeper;

  KeptProducers(Clock clock) {
    this.clock = clock;
  }

  /**
   * The producer kept for {@code transactionalId} whose transaction (of epoch
   * {@code lastCommitted} of {@code run}, with {@code settings}) is committed; null if none.
   * A kept producer that does not match is closed.
   */
  Producer<byte[], byte[]> take(String transactionalId, String run, long lastCommitted, Map<String, Object> settings) {
    Kept k;
    synchronized (this) {
      k = kept.remove(transactionalId);
    }
    if (k == null) return null;
    if (k.run.equals(run) && k.epoch == lastCommitted && k.settings.equals(settings)) return k.producer;
    close(k);
    return null;
  }

  /** Keeps {@code producer}, whose transaction of epoch {@code epoch} of {@code run} the driver now commits. */
  void keep(String transactionalId, Producer<byte[], byte[]> producer, String run, long epoch,
      Map<String, Object> settings) {
    Kept before;
    synchronized (this) {
      before = kept.put(transactionalId, new Kept(producer, run, epoch, settings, clock.millis()));
      if (sweeper == null) {
        sweeper = Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "kplex-kept-producers");
          t.setDaemon(true);
          return t;
        });
        long every = IDLE.toMillis() / 2;
        sweeper.scheduleWithFixedDelay(this::closeIdle, every, every, TimeUnit.MILLISECONDS);
      }
    }
    if (before != null) close(before);
  }

  /** Closes the producers kept longer than {@link #IDLE}. */
  void closeIdle() {
    java.util.List<Kept> idle = new java.util.ArrayList<>();
    synchronized (this) {
      for (Iterator<Kept> it = kept.values().iterator(); it.hasNext(); ) {
        Kept k = it.next();
        if (clock.millis() - k.sinceMs >= IDLE.toMillis()) {
          idle.add(k);
          it.remove();
        }
      }
    }
    idle.forEach(KeptProducers::close);
  }

  /** How many producers are kept. */
  synchronized int size() {
    return kept.size();
  }

  /** Closed at once: its transaction is the driver's to finish (a graceful close would abort it). */
  private static void close(Kept k) {
    try {
      k.producer.close(Duration.ZERO);
    } catch (RuntimeException e) {
      // Closing is all that is left to do with it.
    }
  }
}
