package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.time.Clock;
import io.kplex.spark.time.ManualClock;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * One writer per table: the claim in {@code _kplex_commits} against {@link FakeKafka}, its
 * waits on a {@link ManualClock} (a claim goes stale at once), and the claims a
 * {@link WriterClaims} holds for a thread, which end with it.
 *
 * <pre>
 * older claim in the log                        acquire
 * none                                          claimed at once, no wait
 * unchanged for the claim timeout (dead)        waits it out, marks it taken over, removes it
 * renewed or released while waiting (live)      [KPLEX_TABLE_BUSY] naming its query; own claim removed
 * held for a thread that has ended              released first: claimed at once
 * </pre>
 */
public class WriterLeaseTest {
  private static final String TABLE = "views";
  private static final long STALE_MS = 30_000;

  private FakeKafka kafka;
  private ManualClock clock;
  private WriterClaims claims;

  @Before
  public void kafka() {
    kafka = new FakeKafka();
    clock = new ManualClock(1_700_000_000_000L);
    claims = new WriterClaims(kafka, clock);
  }

  @After
  public void endClaims() {
    claims.close();
  }

  private Map<String, String> log() {
    return kafka.latest(CommitLog.TOPIC);
  }

  private static byte[] json(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  /** Another driver's claim, written as its writer would. */
  private void otherClaim(String id, String query, long beat) {
    kafka.commitLog(clock).put(WriterLease.prefix(TABLE) + id, json("{\"query\":\"" + query + "\",\"beat\":" + beat + "}"));
  }

  @Test
  public void aFreeTableIsClaimedAtOnceAndTheClaimGoesWhenClosed() {
    long before = clock.millis();
    AtomicInteger ended = new AtomicInteger();
    WriterLease lease = claims.acquire(FakeKafka.CONF, TABLE, "query-1", null, STALE_MS);
    lease.whenEnded(ended::incrementAndGet);
    assertEquals("no wait", before, clock.millis());
    assertTrue(lease.held());
    assertEquals(List.of(lease.key()), List.copyOf(log().keySet()));
    assertTrue(log().get(lease.key()).contains("\"query\":\"query-1\""));
    lease.close();
    assertFalse(lease.held());
    assertEquals(Map.of(), log());
    assertEquals(1, ended.get());
    lease.close();
    assertEquals("ended once", 1, ended.get());
  }

  @Test
  public void aClaimUnchangedForTheTimeoutIsWaitedForThenTakenOverAndMarked() {
    otherClaim("dead", "query-0", 7);
    long before = clock.millis();
    try (WriterLease lease = claims.acquire(FakeKafka.CONF, TABLE, "query-1", null, STALE_MS)) {
      assertTrue(clock.millis() - before >= STALE_MS);
      Map<String, String> log = log();
      assertFalse("removed", log.containsKey("writer/views/dead"));
      assertTrue(log.get("writer-taken/views/dead").startsWith("{\"query\":\"query-1\",\"at\":"));
      assertTrue(log.containsKey(lease.key()));
      assertEquals("its own claim was not taken", -1, lease.takenAt(kafka.commitLog(clock)));
    }
  }

  @Test
  public void aLiveClaimIsRefusedNamingItsQueryAndTheNewcomerLeavesNothing() {
    otherClaim("live", "query-0", 0);
    AtomicInteger beats = new AtomicInteger();
    // The other writer renews its claim while the newcomer watches it.
    Clock renewing = clock.whenSleeping(ms -> otherClaim("live", "query-0", beats.incrementAndGet()));
    WriterClaims watching = new WriterClaims(kafka, renewing);
    KplexException e = assertThrows(KplexException.class,
        () -> watching.acquire(FakeKafka.CONF, TABLE, "query-1", null, STALE_MS));
    assertEquals("TABLE_BUSY", e.code());
    assertTrue(e.getMessage(), e.getMessage().contains("[KPLEX_TABLE_BUSY]") && e.getMessage().contains("query-0"));
    assertEquals(1, beats.get());
    assertEquals(List.of("writer/views/live"), List.copyOf(log().keySet()));
  }

  @Test
  public void aClaimReleasedWhileWatchedWasLiveToo() {
    otherClaim("ending", "query-0", 3);
    Clock releasing = clock.whenSleeping(
        ms -> kafka.commitLog(clock).put(WriterLease.prefix(TABLE) + "ending", null));
    KplexException e = assertThrows(KplexException.class,
        () -> new WriterClaims(kafka, releasing).acquire(FakeKafka.CONF, TABLE, "query-1", null, STALE_MS));
    assertEquals("TABLE_BUSY", e.code());
    assertEquals(Map.of(), log());
  }

  @Test
  public void aClaimHeldForAThreadIsLostWhenItEndsAndTheNextClaimFindsTheTableFree() throws InterruptedException {
    CountDownLatch stop = new CountDownLatch(1);
    Thread query = new Thread(() -> {
      try {
        stop.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    query.start();
    WriterLease streaming = claims.acquire(FakeKafka.CONF, TABLE, "streaming-query", query, STALE_MS);
    AtomicInteger ended = new AtomicInteger();
    streaming.whenEnded(ended::incrementAndGet);
    assertEquals(1, claims.held());
    assertTrue(streaming.held());

    stop.countDown();  // query.stop()
    query.join();
    assertFalse("lost with its thread", streaming.held());

    long before = clock.millis();
    try (WriterLease insert = claims.acquire(FakeKafka.CONF, TABLE, "insert", null, STALE_MS)) {
      assertEquals("the ended claim was released first: no wait", before, clock.millis());
      assertEquals(List.of(insert.key()), List.copyOf(log().keySet()));
    }
    assertEquals(1, ended.get());
    assertEquals(0, claims.held());
  }

  @Test
  public void closingTheRegistryEndsTheClaimsItHoldsForThreads() {
    WriterLease lease = claims.acquire(FakeKafka.CONF, TABLE, "streaming-query", Thread.currentThread(), STALE_MS);
    assertEquals(0, claims.releaseEnded());
    claims.close();
    assertFalse(lease.held());
    assertEquals(0, claims.held());
    assertEquals(Map.of(), log());
  }

  @Test
  public void takenOverMarkersOlderThanADayAreForgotten() {
    CompactedTopic log = kafka.commitLog(clock);
    long dayAgo = clock.millis() - WriterLease.MARKER_KEEP_MS;
    log.put("writer-taken/views/old", json("{\"query\":\"q\",\"at\":" + (dayAgo - 1) + "}"));
    log.put("writer-taken/views/recent", json("{\"query\":\"q\",\"at\":" + (dayAgo + 1) + "}"));
    try (WriterLease lease = claims.acquire(FakeKafka.CONF, TABLE, "query-1", null, STALE_MS)) {
      assertEquals(List.of("writer-taken/views/recent", lease.key()), List.copyOf(log().keySet()));
    }
  }

  @Test
  public void aClaimIsWrittenAgainEveryQuarterOfItsTimeoutAtLeastEverySecondAtMostEvery15s() {
    assertEquals(1_500, WriterLease.beatEvery(6_000));
    assertEquals(1_000, WriterLease.beatEvery(2_000));
    assertEquals(15_000, WriterLease.beatEvery(600_000));
  }
}
