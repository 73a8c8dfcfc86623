package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.time.Clock;
import io.kplex.spark.time.ManualClock;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
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
 * held for a thread that ends within 2 s         waited for, released: claimed at once
 * being removed by its renewer (run ended)      its removal waited for: claimed at once
 * held for a thread still running after 2 s     [KPLEX_TABLE_BUSY] as any live claim; left held
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
  public void aWatcherWaitsTheHoldersOwnTimeoutWhenLongerThanItsOwn() {
    // A stream with kplex.writer_claim_timeout_ms 60 s renews every 15 s; a write with 6 s
    // must not take its claim over between two beats.
    kafka.commitLog(clock).put(WriterLease.prefix(TABLE) + "slow",
        json("{\"query\":\"query-0\",\"beat\":0,\"timeout_ms\":60000}"));
    long started = clock.millis();
    AtomicInteger beats = new AtomicInteger();
    Clock renewing = clock.whenSleeping(ms -> {
      if (clock.millis() - started >= 15_000 * (beats.get() + 1L)) {
        kafka.commitLog(clock).put(WriterLease.prefix(TABLE) + "slow",
            json("{\"query\":\"query-0\",\"beat\":" + beats.incrementAndGet() + ",\"timeout_ms\":60000}"));
      }
    });
    KplexException e = assertThrows(KplexException.class,
        () -> new WriterClaims(kafka, renewing).acquire(FakeKafka.CONF, TABLE, "query-1", null, 6_000));
    assertEquals("TABLE_BUSY", e.code());
    assertEquals(1, beats.get());
    assertEquals(List.of("writer/views/slow"), List.copyOf(log().keySet()));
    // Unchanged, it is waited for 60 s, not 6, before it is taken over.
    long before = clock.millis();
    try (WriterLease lease = claims.acquire(FakeKafka.CONF, TABLE, "query-2", null, 6_000)) {
      assertTrue(clock.millis() - before >= 60_000);
      assertTrue(log().get(lease.key()).contains("\"timeout_ms\":6000"));
    }
  }

  @Test
  public void aClaimFoundTakenOverIsRenewedNoMoreAndNoLongerHeld() throws Exception {
    // A writer's driver stood still past the timeout; another took the table over.
    try (WriterLease lease = claims.acquire(FakeKafka.CONF, TABLE, "query-1", null, 4_000)) {
      kafka.commitLog(clock).putAll(new java.util.LinkedHashMap<>(Map.of(
          WriterLease.takenKey(TABLE, lease.key()), json("{\"query\":\"query-2\",\"at\":1}"))));
      kafka.commitLog(clock).put(lease.key(), null);
      long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
      while (lease.takenOverBy() == null && System.nanoTime() < deadline) Thread.sleep(50);
      assertEquals("query-2", lease.takenOverBy());
      assertFalse(lease.held());
      Thread.sleep(2_500);  // two beats' time
      assertFalse("the removed claim is not brought back", log().containsKey(lease.key()));
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

  /** A query's thread that ends {@code finishMs} after its run was declared over ({@code runEnded}). */
  private static Thread queryThread(CountDownLatch runEnded, long finishMs) {
    Thread t = new Thread(() -> {
      try {
        runEnded.await();
        Thread.sleep(finishMs);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    t.start();
    return t;
  }

  /** The clock, its waits taking real time (the renewer of a claim of this JVM acts meanwhile). */
  private Clock realWaits() {
    return clock.whenSleeping(ms -> {
      try {
        Thread.sleep(ms);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
  }

  @Test
  public void theNextRunOfAQueryWhoseLastRunsThreadStillFinishesFindsTheTableFree() throws InterruptedException {
    // Spark's awaitTermination returns before the run's thread has ended: the next run (same
    // query id, new thread) claims while the old claim is still held for a live thread. It used
    // to watch that claim, see the renewer remove it, and fail [KPLEX_TABLE_BUSY] naming itself.
    WriterClaims jvm = new WriterClaims(kafka, realWaits());
    try {
      CountDownLatch runEnded = new CountDownLatch(1);
      Thread firstRun = queryThread(runEnded, 300);
      WriterLease first = jvm.acquire(FakeKafka.CONF, TABLE, "query-1", firstRun, STALE_MS);
      runEnded.countDown();
      long before = clock.millis();
      WriterLease next = jvm.acquire(FakeKafka.CONF, TABLE, "query-1", Thread.currentThread(), STALE_MS);
      assertFalse(firstRun.isAlive());
      assertFalse(first.held());
      assertEquals("no watch of the old claim", before, clock.millis());
      assertEquals("the old claim released, not taken over", List.of(next.key()), List.copyOf(log().keySet()));
      assertEquals(1, jvm.held());
    } finally {
      jvm.close();
    }
  }

  @Test
  public void aClaimMadeWhileTheRenewerStillRemovesAnEndedRunsClaimWaitsForTheRemoval() throws InterruptedException {
    // The renewer sees the run's thread gone and removes its claim; a slow broker holds the
    // removal. The next run claims meanwhile: it used to no longer find the old claim among
    // this JVM's, watch it in the log, see it go, and fail [KPLEX_TABLE_BUSY] naming itself.
    CountDownLatch removing = new CountDownLatch(1);
    java.util.concurrent.atomic.AtomicBoolean slowNext = new java.util.concurrent.atomic.AtomicBoolean();
    KafkaClients slowRelease = new KafkaClients() {
      @Override
      @SuppressWarnings("unchecked")
      public org.apache.kafka.clients.producer.Producer<byte[], byte[]> producer(Map<String, Object> props) {
        // The JVM's one producer for kplex's own records (SharedClients): its next send is slow.
        org.apache.kafka.clients.producer.Producer<byte[], byte[]> base = kafka.producer(props);
        return (org.apache.kafka.clients.producer.Producer<byte[], byte[]>) java.lang.reflect.Proxy.newProxyInstance(
            getClass().getClassLoader(), new Class<?>[] {org.apache.kafka.clients.producer.Producer.class},
            (proxy, method, args) -> {
              if (method.getName().equals("send") && slowNext.getAndSet(false)) {
                removing.countDown();
                Thread.sleep(1_000);
              }
              try {
                return method.invoke(base, args);
              } catch (java.lang.reflect.InvocationTargetException e) {
                throw e.getCause();
              }
            });
      }

      @Override
      public org.apache.kafka.clients.consumer.Consumer<byte[], byte[]> consumer(Map<String, Object> props) {
        return kafka.consumer(props);
      }

      @Override
      public org.apache.kafka.clients.admin.Admin admin(Map<String, Object> props) {
        return kafka.admin(props);
      }
    };
    WriterClaims jvm = new WriterClaims(slowRelease, realWaits());
    try {
      CountDownLatch runEnded = new CountDownLatch(1);
      Thread firstRun = queryThread(runEnded, 0);
      WriterLease first = jvm.acquire(FakeKafka.CONF, TABLE, "query-1", firstRun, STALE_MS);
      slowNext.set(true);
      runEnded.countDown();
      firstRun.join();
      assertTrue("the renewer removes the claim", removing.await(5, TimeUnit.SECONDS));
      long before = clock.millis();
      WriterLease next = jvm.acquire(FakeKafka.CONF, TABLE, "query-1", Thread.currentThread(), STALE_MS);
      assertFalse(first.held());
      assertEquals("no watch of the old claim", before, clock.millis());
      assertEquals(List.of(next.key()), List.copyOf(log().keySet()));
    } finally {
      jvm.close();
    }
  }

  @Test
  public void aLiveQuerysClaimInThisJvmIsWaitedForBrieflyThenRefusesTheNewcomerAndStaysHeld()
      throws InterruptedException {
    CountDownLatch stop = new CountDownLatch(1);
    Thread live = queryThread(stop, 0);
    AtomicReference<WriterLease> streaming = new AtomicReference<>();
    AtomicInteger beats = new AtomicInteger();
    // The live query's renewer beats while the newcomer watches.
    WriterClaims same = new WriterClaims(kafka, clock.whenSleeping(ms -> kafka.commitLog(clock).put(
        streaming.get().key(), json("{\"query\":\"streaming-query\",\"beat\":" + beats.incrementAndGet() + "}"))));
    streaming.set(same.acquire(FakeKafka.CONF, TABLE, "streaming-query", live, STALE_MS));
    long started = System.nanoTime();
    KplexException e = assertThrows(KplexException.class,
        () -> same.acquire(FakeKafka.CONF, TABLE, "insert", null, STALE_MS));
    long waitedMs = (System.nanoTime() - started) / 1_000_000;
    assertEquals("TABLE_BUSY", e.code());
    assertTrue(e.getMessage(), e.getMessage().contains("streaming-query"));
    assertTrue("still held", streaming.get().held());
    assertEquals(List.of(streaming.get().key()), List.copyOf(log().keySet()));
    assertTrue(waitedMs + " ms", waitedMs >= WriterClaims.ENDING_WAIT_MS);
    assertTrue(waitedMs + " ms", waitedMs < WriterClaims.ENDING_WAIT_MS + 2_000);
    stop.countDown();
    live.join();
    same.close();
  }

  @Test
  public void aSecondCloseReturnsOnceTheFirstHasRemovedTheClaimAndRunItsEnd() throws InterruptedException {
    WriterLease lease = claims.acquire(FakeKafka.CONF, TABLE, "query-1", null, STALE_MS);
    CountDownLatch ending = new CountDownLatch(1);
    AtomicInteger ended = new AtomicInteger();
    lease.whenEnded(() -> {
      ending.countDown();
      try {
        Thread.sleep(300);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      ended.incrementAndGet();
    });
    Thread first = new Thread(lease::close);
    first.start();
    ending.await();
    lease.close();
    assertEquals("the first close had finished", 1, ended.get());
    assertEquals(Map.of(), log());
    first.join();
    assertEquals(1, ended.get());
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
