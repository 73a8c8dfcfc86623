package io.kplex.spark.kafka;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotSame;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.time.Clock;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.Test;

/**
 * Which clients kplex's own requests go on: the JVM's shared ones ({@link SharedClients}), one
 * Admin client for quick requests and one for slow ones whatever the number of statements, a new
 * one after a refused login, and none left open once unused.
 */
public class KafkaTopicsTest {
  /** The in-memory broker's clients, counting the clients made and keeping the producers. */
  private static final class Counting implements KafkaClients {
    private final KafkaClients base = new io.kplex.spark.txn.FakeKafkaAccess().clients();
    private final AtomicInteger admins = new AtomicInteger();
    private final List<MockProducer<byte[], byte[]>> producers = new ArrayList<>();

    @Override
    public synchronized Producer<byte[], byte[]> producer(Map<String, Object> props) {
      MockProducer<byte[], byte[]> p = new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
      producers.add(p);
      return p;
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

  private static KafkaConf conf(String user) {
    return KafkaConf.from(Map.of("kafka.bootstrap.servers", "fake:9092", "kafka.sasl.jaas.config", user));
  }

  @Test
  public void everyStatementOfTheJvmSharesOneAdminClientForQuickRequestsAndOneForSlowOnes() {
    Counting clients = new Counting();
    try (KafkaTopics first = new KafkaTopics(conf("a"), clients, Clock.SYSTEM)) {
      first.admin();
      first.admin();
      assertEquals(1, clients.admins.get());
      first.slowAdmin();
      first.slowAdmin();
      assertEquals("slow requests on a connection of their own", 2, clients.admins.get());
    }
    for (int statement = 0; statement < 3; statement++) {
      try (KafkaTopics next = new KafkaTopics(conf("a"), clients, Clock.SYSTEM)) {
        next.admin();
        next.slowAdmin();
      }
    }
    assertEquals("made once each, for four statements", 2, clients.admins.get());
    try (KafkaTopics other = new KafkaTopics(conf("b"), clients, Clock.SYSTEM)) {
      other.admin();
      assertEquals("other credentials: a client of their own", 3, clients.admins.get());
    }
  }

  @Test
  public void aSharedProducerStaysOpenUntilUnusedForTheIdleTimeAndAFailedOneIsReplaced() {
    Counting clients = new Counting();
    try (KafkaTopics a = new KafkaTopics(conf("p"), clients, Clock.SYSTEM);
         KafkaTopics b = new KafkaTopics(conf("p"), clients, Clock.SYSTEM)) {
      assertSame(a.producer(), b.producer());
    }
    MockProducer<byte[], byte[]> first = clients.producers.get(0);
    assertFalse("kept for the next statement", first.closed());

    try (KafkaTopics a = new KafkaTopics(conf("p"), clients, Clock.SYSTEM);
         KafkaTopics b = new KafkaTopics(conf("p"), clients, Clock.SYSTEM)) {
      assertSame(first, a.producer());
      b.producer();
      a.discardProducer();
      assertFalse("still leased by b", first.closed());
      try (KafkaTopics c = new KafkaTopics(conf("p"), clients, Clock.SYSTEM)) {
        assertNotSame("a new one after a failed send", first, c.producer());
      }
      a.close();
      assertFalse("still leased by b", first.closed());
      b.close();
      assertTrue("closed with its last lease", first.closed());
    }
    MockProducer<byte[], byte[]> second = clients.producers.get(1);
    try (KafkaTopics e = new KafkaTopics(conf("p"), clients, Clock.SYSTEM)) {
      assertSame(second, e.producer());
      SharedClients.evictIdleSince(Long.MAX_VALUE);
      assertFalse("leased: never closed for idleness", second.closed());
    }
    SharedClients.evictIdleSince(System.currentTimeMillis() - SharedClients.IDLE_MS);
    assertFalse("unused for less than the idle time", second.closed());
    SharedClients.evictIdleSince(Long.MAX_VALUE);
    assertTrue("closed once unused", second.closed());
    try (KafkaTopics d = new KafkaTopics(conf("p"), clients, Clock.SYSTEM)) {
      d.producer();
    }
    assertEquals("made again after the idle close", 3, clients.producers.size());
  }

  @Test
  public void aRefusedLoginMakesTheNextStatementConnectAfresh() {
    Counting clients = new Counting();
    try (KafkaTopics kafka = new KafkaTopics(conf("login"), clients, Clock.SYSTEM)) {
      kafka.admin();
      KplexException e = assertThrows(KplexException.class, () -> kafka.call("DESCRIBE", null, () -> {
        throw new java.util.concurrent.ExecutionException(new SaslAuthenticationException("bad password"));
      }));
      assertEquals("NOT_AUTHENTICATED", e.code());
    }
    try (KafkaTopics kafka = new KafkaTopics(conf("login"), clients, Clock.SYSTEM)) {
      kafka.admin();
    }
    assertEquals(2, clients.admins.get());
  }

  @Test
  public void withSharingTurnedOffForTheBenchmarkEveryUseConnectsAndClosesOnItsOwnAsBefore() {
    Counting clients = new Counting();
    System.setProperty(SharedClients.PROPERTY, "false");
    try {
      for (int statement = 0; statement < 2; statement++) {
        try (KafkaTopics kafka = new KafkaTopics(conf("off"), clients, Clock.SYSTEM)) {
          kafka.admin();
          kafka.producer();
        }
      }
    } finally {
      System.clearProperty(SharedClients.PROPERTY);
    }
    assertEquals(2, clients.admins.get());
    assertEquals(2, clients.producers.size());
    assertTrue(clients.producers.get(0).closed() && clients.producers.get(1).closed());
  }
}
