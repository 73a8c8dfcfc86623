package io.kplex.spark.kafka;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.KafkaConsumer;
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

  private record Key(KafkaConf conf, TopicPartition tp) {}

  private record Idle(KafkaConsumer<byte[], byte[]> consumer, long since) {}

  private static final Map<Key, Deque<Idle>> IDLE = new HashMap<>();
  private static int idleCount;
  private static ScheduledExecutorService evictor;

  private ConsumerPool() {}

  /** A consumer assigned to {@code tp} alone: a kept one if there is one; the caller seeks. */
  public static KafkaConsumer<byte[], byte[]> borrow(KafkaConf conf, TopicPartition tp) {
    synchronized (ConsumerPool.class) {
      Deque<Idle> kept = IDLE.get(new Key(conf, tp));
      if (kept != null) {
        Idle idle = kept.pollLast();
        if (kept.isEmpty()) IDLE.remove(new Key(conf, tp));
        idleCount--;
        return idle.consumer;
      }
    }
    KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(conf.consumer());
    consumer.assign(List.of(tp));
    return consumer;
  }

  /** Keeps a consumer whose reader read its whole range of {@code tp}, for the next task. */
  public static void giveBack(KafkaConf conf, TopicPartition tp, KafkaConsumer<byte[], byte[]> consumer) {
    List<KafkaConsumer<byte[], byte[]>> closing = new ArrayList<>();
    synchronized (ConsumerPool.class) {
      IDLE.computeIfAbsent(new Key(conf, tp), k -> new ArrayDeque<>())
          .addLast(new Idle(consumer, System.currentTimeMillis()));
      idleCount++;
      while (idleCount > MAX_IDLE) closing.add(removeOldest());
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
    return idleCount;
  }

  /** Closes every consumer idle for longer than {@link #IDLE_MS}. */
  static void evictIdle() {
    long before = System.currentTimeMillis() - IDLE_MS;
    List<KafkaConsumer<byte[], byte[]>> closing = new ArrayList<>();
    synchronized (ConsumerPool.class) {
      for (Iterator<Deque<Idle>> it = IDLE.values().iterator(); it.hasNext(); ) {
        Deque<Idle> kept = it.next();
        while (!kept.isEmpty() && kept.peekFirst().since < before) {
          closing.add(kept.pollFirst().consumer);
          idleCount--;
        }
        if (kept.isEmpty()) it.remove();
      }
    }
    closing.forEach(ConsumerPool::close);
  }

  private static KafkaConsumer<byte[], byte[]> removeOldest() {
    Key oldest = null;
    for (Map.Entry<Key, Deque<Idle>> e : IDLE.entrySet()) {
      if (oldest == null || e.getValue().peekFirst().since < IDLE.get(oldest).peekFirst().since) oldest = e.getKey();
    }
    Deque<Idle> kept = IDLE.get(oldest);
    KafkaConsumer<byte[], byte[]> consumer = kept.pollFirst().consumer;
    if (kept.isEmpty()) IDLE.remove(oldest);
    idleCount--;
    return consumer;
  }

  private static void close(KafkaConsumer<byte[], byte[]> consumer) {
    // Nothing to commit: do not wait for a fetch still parked at the broker.
    consumer.close(Duration.ZERO);
  }
}
