package io.kplex.spark.write;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.time.ManualClock;
import java.util.Map;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.Test;

/**
 * An executor's kept producers: a task takes the one the last epoch kept only when that
 * epoch is the table's last committed one, of the same run, with the same settings; any
 * other kept producer is closed, and so is one not taken for a minute.
 */
public class KeptProducersTest {
  private static final Map<String, Object> SETTINGS = Map.of("bootstrap.servers", "b:9092", "transactional.id", "t");

  private static MockProducer<byte[], byte[]> producer() {
    return new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer());
  }

  @Test
  public void theNextEpochTakesTheProducerOfTheEpochJustCommitted() {
    KeptProducers kept = new KeptProducers(new ManualClock(0));
    MockProducer<byte[], byte[]> p = producer();
    kept.keep("kplex.t.0.0.0", p, "run-1", 7, SETTINGS);
    assertNull(kept.take("kplex.t.1.0.0", "run-1", 7, SETTINGS));
    assertSame(p, kept.take("kplex.t.0.0.0", "run-1", 7, SETTINGS));
    assertFalse(p.closed());
    assertNull("taken once", kept.take("kplex.t.0.0.0", "run-1", 7, SETTINGS));
  }

  @Test
  public void aProducerWhoseEpochIsNotTheLastCommittedIsClosedNotTaken() {
    // Not committed (the epoch failed or was aborted: lastCommitted stays behind), another
    // run of the query, or other settings: the kept transaction may be fenced or open.
    Object[][] cases = {{"run-1", 6L, SETTINGS}, {"run-1", 8L, SETTINGS}, {"run-2", 7L, SETTINGS},
        {"run-1", 7L, Map.of("bootstrap.servers", "other:9092")}};
    for (Object[] c : cases) {
      KeptProducers kept = new KeptProducers(new ManualClock(0));
      MockProducer<byte[], byte[]> p = producer();
      kept.keep("kplex.t.0.0.0", p, "run-1", 7, SETTINGS);
      @SuppressWarnings("unchecked")
      Map<String, Object> settings = (Map<String, Object>) c[2];
      assertNull(kept.take("kplex.t.0.0.0", (String) c[0], (Long) c[1], settings));
      assertTrue(p.closed());
      assertEquals(0, kept.size());
    }
  }

  @Test
  public void keepingAgainClosesTheOneBeforeAndIdleOnesAreClosedAfterAMinute() {
    ManualClock clock = new ManualClock(0);
    KeptProducers kept = new KeptProducers(clock);
    MockProducer<byte[], byte[]> first = producer();
    MockProducer<byte[], byte[]> second = producer();
    kept.keep("kplex.t.0.0.0", first, "run-1", 1, SETTINGS);
    kept.keep("kplex.t.0.0.0", second, "run-1", 2, SETTINGS);
    assertTrue(first.closed());
    clock.advance(KeptProducers.IDLE.toMillis() - 1);
    kept.closeIdle();
    assertFalse(second.closed());
    clock.advance(1);
    kept.closeIdle();
    assertTrue(second.closed());
    assertEquals(0, kept.size());
  }
}
