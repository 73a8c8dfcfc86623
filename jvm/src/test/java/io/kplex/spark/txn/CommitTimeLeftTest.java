package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.time.ManualClock;
import java.util.HashMap;
import java.util.Map;
import org.junit.Test;

/**
 * A write commits only with time left before transaction.timeout.ms: the margin is
 * min(timeout / 2, 30 s), measured from the write's start on the driver.
 *
 * <pre>
 * timeout        margin   commits after running   refused after running
 * 900,000 (kplex) 30,000   869,000                 871,000
 * 10,000          5,000    4,000                   6,000
 * </pre>
 */
public class CommitTimeLeftTest {
  /** The driver's clock: the write started {@code ago(ms)}, and no time passes meanwhile. */
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);

  private ExactlyOnceCommitter committer(String timeoutMs) {
    Map<String, String> options = new HashMap<>(Map.of("kafka.bootstrap.servers", "127.0.0.1:1"));
    if (timeoutMs != null) options.put("kafka.transaction.timeout.ms", timeoutMs);
    return new ExactlyOnceCommitter(KafkaConf.from(options), "views_by_user", "views_by_user", 9, null, null,
        KafkaClients.REAL, clock);
  }

  private long ago(long ms) {
    return clock.millis() - ms;
  }

  @Test
  public void kplexsDefaultTimeoutKeepsThirtySecondsInHand() {
    ExactlyOnceCommitter c = committer(null);
    c.requireTimeLeft(ago(869_000));
    KplexException e = assertThrows(KplexException.class, () -> c.requireTimeLeft(ago(871_000)));
    assertTrue(e.getMessage(), e.getMessage().contains("[KPLEX_COMMIT_EXPIRED]"));
    assertTrue(e.getMessage(), e.getMessage().contains("views_by_user"));
    assertTrue(e.getMessage(), e.getMessage().contains("kafka.transaction.timeout.ms (900000 ms)"));
  }

  @Test
  public void aShortTimeoutKeepsHalfOfItInHand() {
    ExactlyOnceCommitter c = committer("10000");
    assertEquals(10_000, ExactlyOnceCommitter.transactionTimeoutMs(KafkaConf.from(
        Map.of("kafka.bootstrap.servers", "x:1", "kafka.transaction.timeout.ms", "10000"))));
    c.requireTimeLeft(ago(4_000));
    assertThrows(KplexException.class, () -> c.requireTimeLeft(ago(6_000)));
  }

  @Test
  public void theTimeoutIsReadAsOptionsJsonDeclaresIt() {
    assertEquals(Long.parseLong(io.kplex.spark.spec.OptionSpecs.of("kafka.transaction.timeout.ms").defaultValue()),
        ExactlyOnceCommitter.transactionTimeoutMs(KafkaConf.from(Map.of("kafka.bootstrap.servers", "x:1"))));
    for (String bad : new String[] {"0", "soon", "2147483648"}) {
      KplexException e = assertThrows(KplexException.class, () -> ExactlyOnceCommitter.transactionTimeoutMs(KafkaConf.from(
          Map.of("kafka.bootstrap.servers", "x:1", "kafka.transaction.timeout.ms", bad))));
      assertTrue(e.getMessage(), e.getMessage().contains("option 'kafka.transaction.timeout.ms' = '" + bad
          + "' is invalid: milliseconds > 0"));
    }
  }
}
