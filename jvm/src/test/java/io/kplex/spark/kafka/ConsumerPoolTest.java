package io.kplex.spark.kafka;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.Test;

/**
 * The executors' kept consumers: the same settings and partition only, bounded. Making a
 * consumer connects to nothing, so no broker is needed; each test has settings of its own
 * (the pool is one per JVM) and takes back what it left.
 */
public class ConsumerPoolTest {
  private static KafkaConf conf(String name) {
    return KafkaConf.from(Map.of("kafka.bootstrap.servers", "127.0.0.1:1", "kafka.client.id", name));
  }

  private static final TopicPartition VIEWS_0 = new TopicPartition("views", 0);

  @Test
  public void aConsumerThatReadItsRangeServesTheNextTaskOfTheSamePartition() {
    KafkaConf kafka = conf("same");
    Consumer<byte[], byte[]> first = ConsumerPool.borrow(KafkaClients.REAL, kafka, VIEWS_0);
    assertEquals(Set.of(VIEWS_0), first.assignment());
    ConsumerPool.giveBack(KafkaClients.REAL, conf("same"), VIEWS_0, first);  // equal settings, another instance
    Consumer<byte[], byte[]> next = ConsumerPool.borrow(KafkaClients.REAL, kafka, VIEWS_0);
    assertSame(first, next);
    next.close();
  }

  @Test
  public void anotherPartitionOrOtherSettingsNeverGetAKeptConsumer() {
    Consumer<byte[], byte[]> kept = ConsumerPool.borrow(KafkaClients.REAL, conf("mine"), VIEWS_0);
    ConsumerPool.giveBack(KafkaClients.REAL, conf("mine"), VIEWS_0, kept);
    Consumer<byte[], byte[]> otherPartition = ConsumerPool.borrow(KafkaClients.REAL, conf("mine"), new TopicPartition("views", 1));
    Consumer<byte[], byte[]> otherSettings = ConsumerPool.borrow(KafkaClients.REAL, conf("theirs"), VIEWS_0);
    assertNotSame(kept, otherPartition);
    assertNotSame(kept, otherSettings);
    assertEquals(Set.of(new TopicPartition("views", 1)), otherPartition.assignment());
    otherPartition.close();
    otherSettings.close();
    assertSame(kept, ConsumerPool.borrow(KafkaClients.REAL, conf("mine"), VIEWS_0));
    kept.close();
  }

  @Test
  public void atMostMaxIdleAreKeptAndTheLongestIdleIsClosedFirst() throws InterruptedException {
    KafkaConf kafka = conf("many");
    List<Consumer<byte[], byte[]>> given = new ArrayList<>();
    for (int p = 0; p <= ConsumerPool.MAX_IDLE; p++) {
      Consumer<byte[], byte[]> c = ConsumerPool.borrow(KafkaClients.REAL, kafka, new TopicPartition("views", p));
      given.add(c);
    }
    for (int p = 0; p <= ConsumerPool.MAX_IDLE; p++) {
      ConsumerPool.giveBack(KafkaClients.REAL, kafka, new TopicPartition("views", p), given.get(p));
      if (p == 0) Thread.sleep(5);  // partition 0's is the longest idle
    }
    assertEquals(ConsumerPool.MAX_IDLE, ConsumerPool.idle());
    // Closed: a closed consumer refuses every call.
    assertThrows(IllegalStateException.class, () -> given.get(0).assignment());
    Consumer<byte[], byte[]> fresh = ConsumerPool.borrow(KafkaClients.REAL, kafka, new TopicPartition("views", 0));
    assertNotSame(given.get(0), fresh);
    fresh.close();
    for (int p = 1; p <= ConsumerPool.MAX_IDLE; p++) {
      assertSame(given.get(p), ConsumerPool.borrow(KafkaClients.REAL, kafka, new TopicPartition("views", p)));
      given.get(p).close();
    }
    assertEquals(0, ConsumerPool.idle());
  }
}
