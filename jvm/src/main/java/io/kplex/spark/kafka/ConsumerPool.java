package io.kplex.spark.kafka;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;

/**
 * Consumers kept on an executor between tasks, one kind per (client settings, partition),
 * as Spark's Kafka source keeps them. A streaming micro-batch reads each source partition
 * again a moment after the last one did: a kept consumer is connected, knows the
 * partition's leader, and often already holds the next fetch, where a new one costs a
 * connection, a metadata round trip and the leader's connection every micro-batch.
 *
 * <p>Only a consumer whose reader read its whole range comes back ({@link #giveBack});
 * one that failed or was interrupted is closed by its reader. At most {@link #MAX_IDLE}
 * are kept (the longest idle closed first), and none longer than {@link #IDLE_MS}.
 * Settings are compared whole, so two catalogs with other credentials never share one.
 */
public final class ConsumerPool {
  /** An idle consumer is closed after this long unused. */
  static final long IDLE_MS = 60_000;
  /** At most this many idle consumers per JVM (Spark's Kafka source keeps 64). */
  static final int MAX_IDLE = 64;

  private record Idle(KafkaClients clients, KafkaConf conf, TopicPartition tp, Consumer<byte[], byte[]> consumer,
      long since) {}

  /** The idle consumers, longest idle first (at most {@link #MAX_IDLE}: a scan is cheap). */
  private static final Deque<Idle> IDLE = new ArrayDeque<>();
  private static ScheduledExecutorService evictor;

  private ConsumerPool() {}

  /** A consumer assigned to {@code tp} alone: a kept one if there is one; the caller seeks. */
  public static Consumer<byte[], byte[]> borrow(KafkaClients clients, KafkaConf conf, TopicPartition tp) {
    synchronized (ConsumerPool.class) {
      for (Iterator<Idle> it = IDLE.descendingIterator(); it.hasNext(); ) {
        Idle idle = it.next();
        if (idle.tp.equals(tp) && idle.conf.equals(conf) && idle.clients.equals(clients)) {
          it.remove();
          return idle.consumer;
        }
      }
    }
    Consumer<byte[], byte[]> consumer = clients.consumer(conf.consumer());
    consumer.assign(List.of(tp));
    return consumer;
  }

  /** Keeps a consumer whose reader read its whole range of {@code tp}, for the next task. */
  public static void giveBack(KafkaClients clients, KafkaConf conf, TopicPartition tp,
      Consumer<byte[], byte[]> consumer) {
    List<Consumer<byte[], byte[]>> closing = new ArrayList<>();
    synchronized (ConsumerPool.class) {
      IDLE.addLast(new Idle(clients, conf, tp, consumer, System.currentTimeMillis()));
      while (IDLE.size() > MAX_IDLE) closing.add(IDLE.pollFirst().consumer);
      if (evictor == null) {
        evictor = Executors.newSingleThreadScheduledExecutor(r -> {
          Thread t = new Thread(r, "kplex-consumer-pool-evictor");
          t.setDaemon(true);
          return t;
        });
        evictor.scheduleWithFixedDelay(ConsumerPool::evictIdle, IDLE_MS / 4, IDLE_MS / 4, TimeUnit.MILLISECONDS);
      }
    }
    closing.forEach(ConsumerPool::close);
  }

  /** Idle consumers now kept (for tests). */
  public static synchronized int idle() {
    return IDLE.size();
  }

  /** Closes every consumer idle for longer than {@link #IDLE_MS}. */
  static void evictIdle() {
    long before = System.currentTimeMillis() - IDLE_MS;
    List<Consumer<byte[], byte[]>> closing = new ArrayList<>();
    synchronized (ConsumerPool.class) {
      while (!IDLE.isEmpty() && IDLE.peekFirst().since < before) closing.add(IDLE.pollFirst().consumer);
    }
    closing.forEach(ConsumerPool::close);
  }

  private static void close(Consumer<byte[], byte[]> consumer) {
    // Nothing to commit: do not wait for a fetch still parked at the broker.
    consumer.close(Duration.ZERO);
  }
}
