package io.kplex.spark.txn;

import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.kafka.KafkaConf;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.Producer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The producers a batch write's driver will resume its tasks' transactions in, made while the
 * tasks write, so that the commit after the last task spends no time making producers and
 * connecting them to the broker: per expected transactional id, a producer made with the
 * committer's settings ({@link ResumedCommit#settings}) that has fetched the target topic's
 * metadata and looked up its transaction coordinator ({@link TransactionResumer#findCoordinator}).
 * Best effort: a producer still being made is waited for (up to {@link #WAIT_MS}); one that could
 * not be made, or whose lookup failed, is closed and the commit makes its own; one whose id no
 * task used is closed with the rest.
 *
 * <p>Making a producer with a transactional id, and finding its coordinator, changes nothing
 * on the broker for that id; only {@code initTransactions} would, and these are resumed instead
 * ({@link TransactionResumer}), so they never fence the tasks that write under the same ids.
 * Producers that committed, and those left over, are closed in the background: the commit is on
 * the broker once {@code commitTransaction} returned.
 */
public final class PreparedCommitters implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PreparedCommitters.class);
  private static final AtomicInteger THREADS = new AtomicInteger();
  /** How long the commit waits for a producer still being made (connecting) before it makes its own. */
  static final long WAIT_MS = 5_000;

  private final ExecutorService pool;
  private final Map<String, CompletableFuture<Producer<byte[], byte[]>>> made = new HashMap<>();

  private PreparedCommitters(int threads) {
    this.pool = Executors.newFixedThreadPool(threads, r -> {
      Thread t = new Thread(r, "kplex-prepared-committer-" + THREADS.incrementAndGet());
      t.setDaemon(true);
      return t;
    });
  }

  /** Starts making a producer for each of {@code ids}, each connected for {@code topic}. */
  public static PreparedCommitters start(KafkaConf kafka, KafkaClients clients, List<String> ids, String topic) {
    PreparedCommitters prepared = new PreparedCommitters(Math.max(1, Math.min(2, ids.size())));
    for (String id : ids) {
      Map<String, Object> settings = ResumedCommit.settings(kafka, id);
      prepared.put(id, CompletableFuture.supplyAsync(() -> {
        Producer<byte[], byte[]> producer = clients.producer(settings);
        try {
          producer.partitionsFor(topic);  // a connection to the broker, and the topic's leaders
          if (producer instanceof KafkaProducer<?, ?> k) TransactionResumer.findCoordinator(k, id);
        } catch (RuntimeException e) {
          LOG.debug("kplex: a prepared committer for {} could not connect ({})", id, e.toString());
        }
        return producer;
      }, prepared.pool));
    }
    return prepared;
  }

  private synchronized void put(String id, CompletableFuture<Producer<byte[], byte[]>> producer) {
    made.put(id, producer);
  }

  /**
   * The producer made for {@code id}, taken out, or null (none, or not usable). It was made with
   * the write's settings, the ones its commit uses ({@link ResumedCommit#settings}).
   */
  Producer<byte[], byte[]> take(String id) {
    CompletableFuture<Producer<byte[], byte[]>> future;
    synchronized (this) {
      future = made.remove(id);
    }
    if (future == null) return null;
    Producer<byte[], byte[]> producer;
    try {
      producer = future.get(WAIT_MS, TimeUnit.MILLISECONDS);
    } catch (TimeoutException e) {
      closeWhenMade(future);  // still connecting: the commit makes its own
      return null;
    } catch (ExecutionException e) {
      LOG.debug("kplex: no prepared committer for {} ({})", id, e.getCause().toString());
      return null;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();  // the commit goes on (it is not cut off); its caller sees this
      closeWhenMade(future);
      return null;
    }
    if (producer instanceof KafkaProducer<?, ?> k && TransactionResumer.failed(k)) {  // its lookup failed
      closeLater(producer, Duration.ZERO);
      return null;
    }
    return producer;
  }

  /** Closes {@code producer} on this object's threads, off the commit's path. */
  void closeLater(Producer<byte[], byte[]> producer, Duration timeout) {
    try {
      pool.execute(() -> producer.close(timeout));
    } catch (java.util.concurrent.RejectedExecutionException e) {
      producer.close(timeout);  // closed already: close it here
    }
  }

  /** Closes, in the background, every producer not taken; then its threads end. */
  @Override
  public void close() {
    List<CompletableFuture<Producer<byte[], byte[]>>> left;
    synchronized (this) {
      left = List.copyOf(made.values());
      made.clear();
    }
    left.forEach(this::closeWhenMade);
    pool.shutdown();  // what is queued still runs
  }

  /** Closes the producer {@code future} makes once it is made (at once if it is), in the background. */
  private void closeWhenMade(CompletableFuture<Producer<byte[], byte[]>> future) {
    future.thenAccept(p -> closeLater(p, Duration.ZERO));
  }
}
