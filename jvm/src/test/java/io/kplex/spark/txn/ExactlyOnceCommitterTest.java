package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.time.ManualClock;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.apache.kafka.common.errors.CoordinatorLoadInProgressException;
import org.apache.kafka.common.errors.InvalidPidMappingException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnknownProducerIdException;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The driver's commit, each failure kind on purpose (Flink's {@code KafkaCommitterTest}):
 * Kafka is {@link FakeKafka}, the time a {@link ManualClock} (a deadline passes at once),
 * and each task's transaction is committed by a fake that throws what a broker would.
 *
 * <pre>
 * what Kafka says of a task's transaction            the commit
 * nothing (committed)                                record ended, epoch marked, strays fenced
 * fenced / unknown producer (aborted by Kafka)       settled: a partial commit names what is lost
 * retriable, then committed                          tried again every 200 ms, then committed
 * retriable until the 2-minute deadline              fails; the record stays for recovery
 * not authorized                                     fails at once
 * (the write ran too long)                           nothing recorded; its transactions fenced
 * (its claim was taken over)                         fails; the record is the taker's or nobody's
 * </pre>
 */
public class ExactlyOnceCommitterTest {
  private static final String TABLE = "views";
  private static final String QUERY = "query-1";
  private static final List<TaskTransaction> TASKS = List.of(
      new TaskTransaction(TransactionalIds.of(TABLE, 0, 0, 0), 100, (short) 0, Map.of(0, 10L, 2, 20L)),
      new TaskTransaction(TransactionalIds.of(TABLE, 1, 0, 0), 101, (short) 0, Map.of(1, 11L, 3, 31L)));
  private static final long[] NOTHING_TO_SEE = {-1, -1};

  private FakeKafka kafka;
  private ManualClock clock;
  private WriterClaims claims;
  /** The ids committed, in order. */
  private final List<String> committed = new java.util.concurrent.CopyOnWriteArrayList<>();

  @Before
  public void kafka() {
    kafka = new FakeKafka();
    clock = new ManualClock(1_700_000_000_000L);
    claims = new WriterClaims(kafka, clock);
    for (TaskTransaction t : TASKS) kafka.open(t.id());
  }

  @After
  public void endClaims() {
    claims.close();
  }

  private ExactlyOnceCommitter committer(ResumedCommit resumed) {
    return new ExactlyOnceCommitter(FakeKafka.CONF, TABLE, TABLE, 4, null, null, kafka, clock, resumed);
  }

  /** Commits every transaction, except that {@code failure} (if it gives one) is thrown for task 1. */
  private ResumedCommit task1Fails(Supplier<RuntimeException> failure) {
    return t -> {
      RuntimeException e = t.partition() == 1 ? failure.get() : null;
      if (e != null) throw e;
      committed.add(t.id());
    };
  }

  private static EpochMark epoch(long n) {
    return new EpochMark(TABLE, QUERY, n, EventTime.Marks.NONE, List.of());
  }

  private WriterLease claim() {
    return claims.acquire(FakeKafka.CONF, TABLE, QUERY, null, 30_000);
  }

  private CommitLog log() {
    return new CommitLog(kafka.topics(clock));
  }

  @Test
  public void committedTransactionsEndTheRecordMarkTheEpochAndEveryStrayAttemptIsFenced() {
    String speculative = TransactionalIds.of(TABLE, 1, 0, 1);
    kafka.open(speculative, TransactionalIds.of("other_table", 0, 0, 0));
    ExactlyOnceCommitter c = committer(task1Fails(() -> null));
    try (WriterLease lease = claim()) {
      c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), lease, null);
    }
    assertEquals(List.of(TASKS.get(0).id(), TASKS.get(1).id()), committed.stream().sorted().toList());
    assertEquals(List.of(speculative), kafka.fenced);
    assertFalse("the record is gone", log().pending(TABLE).isPresent());
    assertEquals(5, c.lastEpoch(QUERY).epoch());
  }

  @Test
  public void aTransactionKafkaAbortedIsLostAndTheCommitIsSettledIntoAPartialOne() {
    List<Supplier<RuntimeException>> aborted = List.of(() -> new ProducerFencedException("bumped"),
        () -> new InvalidProducerEpochException("bumped"), () -> new UnknownProducerIdException("expired"),
        () -> new InvalidPidMappingException("expired"), () -> new InvalidTxnStateException("expired"));
    for (Supplier<RuntimeException> kind : aborted) {
      kafka();
      committed.clear();
      ExactlyOnceCommitter c = committer(task1Fails(kind));
      String name = kind.get().getClass().getSimpleName();
      try (WriterLease lease = claim()) {
        KplexException e = assertThrows(name, KplexException.class,
            () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), lease, null));
        assertEquals(name, "COMMIT_CUT_SHORT", e.code());
        assertTrue(e.getMessage(), e.getMessage().contains("virtual partitions [0, 2] are in the table, [1, 3] are missing"));
      }
      assertEquals(name, List.of(TASKS.get(0).id()), committed);
      assertFalse(name, log().pending(TABLE).isPresent());
      PartialCommit partial = c.partialEpochs(QUERY).get(5L);
      assertEquals(name, java.util.Set.of(1), partial.lostPartitions());
      assertEquals(name, Map.of(0, 10L, 2, 20L), partial.committed());
      claims.close();
    }
  }

  @Test
  public void theWriterTaskCountOfACommitUnderWayOrCutShortIsKeptForItsRerun() {
    // Recorded, the driver dies before its commits: the rerun finds the count in the record.
    log().begin(TABLE, QUERY, TASKS, epoch(5), null, null, 4);
    ExactlyOnceCommitter c = committer(task1Fails(() -> new ProducerFencedException("bumped")));
    assertEquals(4, c.rerunTasks(QUERY, 5));
    assertEquals("another epoch", 0, c.rerunTasks(QUERY, 6));
    assertEquals("another query", 0, c.rerunTasks("query-2", 5));
    log().end(TABLE, null);

    // Cut short by Kafka: the partial commit keeps it, through its record.
    try (WriterLease lease = claim()) {
      assertThrows(KplexException.class,
          () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(7), clock.millis(), lease, null, 4));
    }
    assertEquals(4, c.partialEpochs(QUERY).get(7L).tasks());
    assertEquals(4, c.rerunTasks(QUERY, 7));
    assertEquals("none recorded (an INSERT, an older kplex)", 0, committer(null).rerunTasks(QUERY, 8));
  }

  @Test
  public void whenKafkaAbortedEveryTransactionNothingIsVisibleAndNothingIsLeftInTheWay() {
    ExactlyOnceCommitter c = committer(t -> {
      throw new ProducerFencedException("bumped");
    });
    try (WriterLease lease = claim()) {
      KplexException e = assertThrows(KplexException.class,
          () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), lease, null));
      assertTrue(e.getMessage(), e.getMessage().contains("Kafka aborted all 2 transactions of epoch 5"));
    }
    assertFalse(log().pending(TABLE).isPresent());
    assertEquals(Map.of(), c.partialEpochs(QUERY));
  }

  @Test
  public void aRetriableFailureIsTriedAgainAfterABackoffUntilItCommits() {
    AtomicInteger attempts = new AtomicInteger();
    ExactlyOnceCommitter c = committer(task1Fails(
        () -> attempts.incrementAndGet() <= 3 ? new CoordinatorLoadInProgressException("loading") : null));
    long before = clock.millis();
    try (WriterLease lease = claim()) {
      c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), lease, null);
    }
    assertEquals(4, attempts.get());
    assertEquals("three backoffs of 200 ms", 600, clock.millis() - before);
    assertEquals(2, committed.size());
  }

  @Test
  public void aTimeoutUntilTheDeadlineFailsTheCommitAndLeavesItToRecovery() {
    ExactlyOnceCommitter c = committer(task1Fails(() -> new TimeoutException("no answer")));
    long before = clock.millis();
    try (WriterLease lease = claim()) {
      KplexException e = assertThrows(KplexException.class,
          () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), lease, null));
      assertEquals("COMMIT_TIMED_OUT", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("after 601 attempts"));
      assertTrue("a user must not run it again: it will become visible",
          e.getMessage().contains("Its commit is recorded") && e.getMessage().contains("Do not run the write again."));
    }
    assertTrue(clock.millis() - before >= TransactionFinisher.DEADLINE_MS - 200);
    assertTrue("recorded: the next writer rolls it forward", log().pending(TABLE).isPresent());

    ExactlyOnceCommitter next = committer(t -> committed.add(t.id()));
    try (WriterLease lease = claim()) {
      String report = next.recover(lease);
      assertTrue(report, report.startsWith("committed the 2 transactions of an interrupted commit (query query-1)"));
    }
    assertFalse(log().pending(TABLE).isPresent());
    assertEquals(5, next.lastEpoch(QUERY).epoch());
  }

  @Test
  public void aMissingAclFailsAtOnceNamingTheTransactionalId() {
    AtomicInteger attempts = new AtomicInteger();
    ExactlyOnceCommitter c = committer(task1Fails(() -> {
      attempts.incrementAndGet();
      return new TransactionalIdAuthorizationException("denied");
    }));
    try (WriterLease lease = claim()) {
      KplexException e = assertThrows(KplexException.class,
          () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), lease, null));
      assertEquals("NOT_AUTHORIZED", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains(TASKS.get(1).id()));
    }
    assertEquals(1, attempts.get());
  }

  @Test
  public void aWriteThatRanTooLongCommitsNothingRecordsNothingAndFencesItsTransactions() {
    ExactlyOnceCommitter c = committer(task1Fails(() -> null));
    long started = clock.millis();
    clock.advance(ExactlyOnceCommitter.DEFAULT_TRANSACTION_TIMEOUT_MS - ExactlyOnceCommitter.COMMIT_MARGIN_MS + 1);
    try (WriterLease lease = claim()) {
      KplexException e = assertThrows(KplexException.class,
          () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), started, lease, null));
      assertEquals("COMMIT_EXPIRED", e.code());
    }
    assertEquals(List.of(), committed);
    assertEquals(List.of(TASKS.get(0).id(), TASKS.get(1).id()), kafka.fenced.stream().sorted().toList());
    assertFalse(log().pending(TABLE).isPresent());
  }

  @Test
  public void aClaimTakenOverBeforeTheRecordFailsTheWriteAndTheTakerFencesIt() {
    ExactlyOnceCommitter c = committer(task1Fails(() -> null));
    try (WriterLease lease = claim()) {
      takeOver(lease);
      KplexException e = assertThrows(KplexException.class,
          () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), lease, null));
      assertEquals("CLAIM_TAKEN", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("taken over by query-2")
          && e.getMessage().contains("Nothing of it was committed"));
    }
    assertEquals(List.of(), committed);
    assertEquals(List.of(), kafka.fenced);
    assertFalse("recorded after the take-over, the writer removed its record", log().pending(TABLE).isPresent());
    String report = committer(task1Fails(() -> null)).recover(taker());
    assertEquals("fenced 2 open transactions", report);
    assertEquals(List.of(TASKS.get(0).id(), TASKS.get(1).id()), kafka.fenced.stream().sorted().toList());
    assertEquals(List.of(), committed);
    assertFalse(log().pending(TABLE).isPresent());
  }

  @Test
  public void aClaimTakenOverAfterTheRecordHandsTheCommitToTheTaker() {
    ExactlyOnceCommitter c = committer(task1Fails(() -> null));
    try (WriterLease lease = claim()) {
      kafka.afterWriting(CommitLog.pendingKey(TABLE, lease.key()), () -> takeOver(lease));  // right after the commit record
      KplexException e = assertThrows(KplexException.class,
          () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), lease, null));
      assertEquals("CLAIM_TAKEN", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("the taker commits it"));
    }
    assertEquals(List.of(), committed);
    String report = committer(t -> committed.add(t.id())).recover(taker());
    assertTrue(report, report.startsWith("committed the 2 transactions"));
    assertEquals(2, committed.size());
    assertEquals(5, c.lastEpoch(QUERY).epoch());
  }

  @Test
  public void anAtLeastOnceWriteWhoseClaimWasTakenOverRecordsNoMark() {
    ExactlyOnceCommitter c = committer(task1Fails(() -> null));
    EpochMark stale = new EpochMark(TABLE, EpochMark.INSERTS, 0, EventTime.Marks.of(Map.of(0, 10L)), List.of());
    try (WriterLease lease = claim()) {
      takeOver(lease);
      KplexException e = assertThrows(KplexException.class, () -> c.mark(stale, lease));
      assertEquals("CLAIM_TAKEN", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("taken over by query-2") && e.getMessage().contains("at_least_once"));
    }
    assertEquals("the taker's record stands", -1, c.lastEpoch(EpochMark.INSERTS).epoch());
    try (WriterLease live = taker()) {
      c.mark(stale, live);
    }
    assertEquals(0, c.lastEpoch(EpochMark.INSERTS).epoch());
  }

  /**
   * A writer stands still; another takes its claim over, records its commit and dies before
   * committing any of its transactions; the first wakes up and records its own commit. The
   * taker's record stands (each claim records under a key of its own), so recovery commits the
   * taker's transactions and removes the stale writer's record, committing none of its.
   */
  @Test
  public void aStaleWritersRecordLeavesTheTakersPendingCommitToBeFinished() {
    List<TaskTransaction> takers = List.of(
        new TaskTransaction(TransactionalIds.of(TABLE, 0, 1, 0), 200, (short) 0, Map.of(0, 40L, 2, 50L)),
        new TaskTransaction(TransactionalIds.of(TABLE, 1, 1, 0), 201, (short) 0, Map.of(1, 41L, 3, 51L)));
    for (TaskTransaction t : takers) kafka.open(t.id());
    WriterLease stale = claim();
    takeOver(stale);
    try (WriterLease live = taker()) {
      log().begin(TABLE, "query-2", takers, null, null, live.key());  // and its driver dies here
    }
    ExactlyOnceCommitter c = committer(t -> committed.add(t.id()));
    KplexException e = assertThrows(KplexException.class,
        () -> c.commit(QUERY, TASKS, NOTHING_TO_SEE, epoch(5), clock.millis(), stale, null));
    assertEquals("CLAIM_TAKEN", e.code());
    assertEquals("the taker's record stands, the stale writer's is gone", List.of("query-2"),
        log().pendings(TABLE).stream().map(p -> p.query).toList());
    // A stale writer that died right after recording leaves its record to recovery.
    log().begin(TABLE, "query-3", TASKS, null, null, stale.key());
    stale.close();
    assertEquals(List.of(), committed);
    WriterLease next = claim();
    String report = committer(t -> committed.add(t.id())).recover(next);
    next.close();
    assertTrue(report, report.contains("committed the 2 transactions of an interrupted commit (query query-2)"));
    assertTrue(report, report.contains("removed the commit record of query query-3"));
    assertEquals(takers.stream().map(TaskTransaction::id).sorted().toList(), committed.stream().sorted().toList());
    assertTrue("the stale writer's transactions are fenced: " + kafka.fenced,
        kafka.fenced.containsAll(TASKS.stream().map(TaskTransaction::id).toList()));
    assertEquals(List.of(), log().pendings(TABLE));
  }

  /** A dropped table's commits under way go with it, both kinds of record, and no other table's. */
  @Test
  public void aDroppedTableForgetsItsCommitsUnderWay() {
    try (WriterLease lease = claim()) {
      log().begin(TABLE, QUERY, TASKS, null, null, lease.key());
    }
    log().begin(TABLE, "older", TASKS, null, null, null);  // as a kplex before claims' keys recorded it
    log().begin("views2", QUERY, TASKS, null, null, null);
    assertEquals(2, log().pendings(TABLE).size());
    log().forgetMarks(TABLE);
    assertEquals(List.of(), log().pendings(TABLE));
    assertEquals(1, log().pendings("views2").size());
  }

  @Test
  public void aWriteWhoseClaimWasTakenOverAbortsWithoutFencingTheTakersTransactions() {
    WriterLease stale = claim();
    takeOver(stale);
    try (WriterLease live = taker()) {
      // The taker's tasks hold their transactions open, waiting for its commit.
      committer(t -> committed.add(t.id())).abort(stale);
      assertEquals("the taker's transactions stand", List.of(), kafka.fenced);
      assertTrue(live.held());
    }
    stale.close();
    WriterLease own = claim();
    committer(t -> committed.add(t.id())).abort(own);
    assertEquals("a write that holds its claim fences what it left open",
        TASKS.stream().map(TaskTransaction::id).sorted().toList(), kafka.fenced.stream().sorted().toList());
    own.close();
  }

  /** What a writer that found {@code lease} stale writes: its marker, then the claim's removal. */
  private void takeOver(WriterLease lease) {
    Map<String, byte[]> marker = new java.util.LinkedHashMap<>();
    marker.put(WriterLease.takenKey(TABLE, lease.key()), ("{\"query\":\"query-2\",\"at\":" + clock.millis() + "}")
        .getBytes(java.nio.charset.StandardCharsets.UTF_8));
    marker.put(lease.key(), null);
    kafka.commitLog(clock).putAll(marker);
  }

  /** The taker's own claim (the taken one is gone from the log), held for this thread: the test's claims end it. */
  private WriterLease taker() {
    return claims.acquire(FakeKafka.CONF, TABLE, "query-2", Thread.currentThread(), 30_000);
  }

  /**
   * A table's topic deleted and created again outside kplex: told by its id once kplex recorded
   * the one its writes went to; by an emptied topic where there is no id to compare.
   */
  @Test
  public void aTopicCreatedAgainUnderTheTableIsToldByItsId() {
    KafkaTopics admin = new KafkaTopics(FakeKafka.CONF, kafka, clock);
    admin.createTopic(TABLE, 4, (short) 1, Map.of());
    ExactlyOnceCommitter committer = committer(t -> committed.add(t.id()));
    CommitLog log = new CommitLog(admin);
    org.apache.kafka.common.Uuid first = org.apache.kafka.common.Uuid.randomUuid();
    kafka.topicIds.put(TABLE, first);

    committer.requireTopicHoldsWritten(Map.of());  // the table's first write: the id is recorded
    assertEquals(first.toString(), log.writtenTopicId(TABLE).orElseThrow());
    kafka.offsetsAsked.clear();
    committer.requireTopicHoldsWritten(Map.of(2, 20L));  // the same topic: nothing more to ask
    assertFalse(kafka.offsetsAsked.contains(TABLE));

    org.apache.kafka.common.Uuid second = org.apache.kafka.common.Uuid.randomUuid();
    kafka.topicIds.put(TABLE, second);
    KplexException replaced = assertThrows(KplexException.class,
        () -> committer.requireTopicHoldsWritten(Map.of(EventTime.Marks.EVERY_VP, 90L, 1, 11L, 2, 20L)));
    assertEquals("KPLEX_DATA_LOSS.TABLE_TOPIC_REPLACED", replaced.getErrorClass());
    assertEquals(Map.of("table", TABLE, "topic", TABLE, "vp", "2", "order_value", "20",
        "written_topic_id", first.toString(), "topic_id", second.toString()), replaced.getMessageParameters());
    assertEquals("nothing recorded by a refused write", first.toString(), log.writtenTopicId(TABLE).orElseThrow());

    // Only a stream's published watermark (no record in the topic), or nothing: the new topic is the table's.
    committer.requireTopicHoldsWritten(Map.of(EventTime.Marks.EVERY_VP, 90L));
    assertEquals(second.toString(), log.writtenTopicId(TABLE).orElseThrow());
    committer.requireTopicHoldsWritten(Map.of(2, 20L));

    // Between a running stream's epochs: the same topic passes, another one under marks does not.
    assertEquals(second.toString(), committer.requireSameTopic(second.toString(), Map.of(2, 20L)));
    kafka.topicIds.put(TABLE, org.apache.kafka.common.Uuid.randomUuid());
    assertEquals("KPLEX_DATA_LOSS.TABLE_TOPIC_REPLACED", assertThrows(KplexException.class,
        () -> committer.requireSameTopic(second.toString(), Map.of(2, 20L))).getErrorClass());
    kafka.topicIds.put(TABLE, second);
    // The description asked for while Spark planned the micro-batch is the one checked.
    var asked = admin.describeSoon(TABLE);
    assertEquals(second.toString(), committer.requireSameTopic(second.toString(), Map.of(2, 20L), asked));
    kafka.topicIds.put(TABLE, org.apache.kafka.common.Uuid.randomUuid());
    var askedAfter = admin.describeSoon(TABLE);
    assertEquals("KPLEX_DATA_LOSS.TABLE_TOPIC_REPLACED", assertThrows(KplexException.class,
        () -> committer.requireSameTopic(second.toString(), Map.of(2, 20L), askedAfter)).getErrorClass());
    kafka.topicIds.put(TABLE, second);

    // No id to compare with (a cluster before topic ids): an empty topic under marks is one created again.
    kafka.topicIds.remove(TABLE);
    KplexException emptied = assertThrows(KplexException.class,
        () -> committer.requireTopicHoldsWritten(Map.of(2, 20L)));
    assertEquals("KPLEX_DATA_LOSS.TABLE_TOPIC_RECREATED", emptied.getErrorClass());
    assertTrue(kafka.offsetsAsked.contains(TABLE));
    assertEquals(null, committer.requireSameTopic(second.toString(), Map.of(2, 20L)));  // nothing to compare
  }
}
