package io.kplex.spark.kafka;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;

import io.kplex.spark.time.Clock;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.producer.Producer;
import org.junit.Test;

/** Which Admin client a slow request goes on: its own for clients kept for many calls, the one Admin for others. */
public class KafkaTopicsTest {
  /** The in-memory broker's clients, counting the Admin clients made. */
  private static final class Counting implements KafkaClients {
    private final KafkaClients base = new io.kplex.spark.txn.FakeKafkaAccess().clients();
    private final AtomicInteger admins = new AtomicInteger();

    @Override
    public Producer<byte[], byte[]> producer(Map<String, Object> props) {
      return base.producer(props);
    }

    @Override
    public Consumer<byte[], byte[]> consumer(Map<String, Object> props) {
      return base.consumer(props);
    }

    @Override
    public Admin admin(Map<String, Object> props) {
      admins.incrementAndGet();
      return base.admin(props);
    }
  }

  private static KafkaConf conf() {
    return KafkaConf.from(Map.of("kafka.bootstrap.servers", "fake:9092"));
  }

  @Test
  public void clientsForOneCallConnectOnceAndClientsKeptForManyGiveSlowRequestsAConnectionOfTheirOwn() {
    Counting once = new Counting();
    try (KafkaTopics kafka = new KafkaTopics(conf(), once, Clock.SYSTEM)) {
      assertSame("one Admin client for both", kafka.admin(), kafka.slowAdmin());
      assertEquals(1, once.admins.get());
    }
    Counting kept = new Counting();
    try (KafkaTopics kafka = new KafkaTopics(conf(), kept, Clock.SYSTEM).keptForMany()) {
      kafka.admin();
      kafka.slowAdmin();
      kafka.slowAdmin();
      assertEquals("a second Admin client, made once", 2, kept.admins.get());
    }
  }
}
