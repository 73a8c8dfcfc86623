package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.time.ManualClock;
import org.junit.Test;

/**
 * A topic kplex creates is used only once the cluster describes it: on a cluster of several
 * brokers, the one asked next may learn of a new topic a moment after the controller created it
 * (the control plane's first write failed as KPLEX_UNKNOWN_TOPIC on a fresh 3-broker cluster).
 */
public class NewTopicTest {
  @Test
  public void theControlPlanesFirstWriteWaitsUntilItsNewTopicIsDescribed() {
    FakeKafka kafka = new FakeKafka();
    kafka.describeLagAfterCreate = 3;
    ManualClock clock = new ManualClock(1_700_000_000_000L);
    CommitLog log = new CommitLog(kafka.topics(clock));
    log.mark(EpochMark.start("t", "q"));
    assertEquals(-1, log.lastEpoch("t", "q").orElseThrow().epoch());
    assertTrue("it waited on its clock", clock.millis() > 1_700_000_000_000L);
  }

  @Test
  public void aTopicNeverDescribedFailsNamingItOnceTheAdminTimeoutIsOver() {
    FakeKafka kafka = new FakeKafka();
    kafka.describeLagAfterCreate = Integer.MAX_VALUE;
    ManualClock clock = new ManualClock(1_700_000_000_000L);
    KplexException e = assertThrows(KplexException.class,
        () -> new CommitLog(kafka.topics(clock)).mark(EpochMark.start("t", "q")));
    assertTrue(e.getMessage(), e.getMessage().contains("_kplex_commits"));
    assertEquals("KPLEX_UNKNOWN_TOPIC.BROKER", e.getErrorClass());
  }
}
