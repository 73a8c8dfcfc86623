package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.time.ManualClock;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.Test;

/**
 * The finisher alone, with a fake {@link ResumedCommit}: an interrupt (Spark's
 * {@code query.stop()}) does not cut a commit in half, and which transactions are lost. And
 * the wait for commit markers ({@link CommitVisibility}) on a {@link ManualClock}.
 */
public class TransactionFinisherTest {
  private static final List<TaskTransaction> TASKS = List.of(
      new TaskTransaction(TransactionalIds.of("t", 0, 0, 0), 1, (short) 0),
      new TaskTransaction(TransactionalIds.of("t", 1, 0, 0), 2, (short) 0),
      new TaskTransaction(TransactionalIds.of("t", 2, 0, 0), 3, (short) 0));

  @Test
  public void anInterruptedDriverStillFinishesEveryCommitAndKeepsItsInterrupt() {
    Set<String> committed = ConcurrentHashMap.newKeySet();
    TransactionFinisher finisher = new TransactionFinisher(FakeKafka.CONF, "t", null, t -> committed.add(t.id()),
        new ManualClock(0));
    Thread.currentThread().interrupt();  // query.stop() as the driver commits
    List<TaskTransaction> lost = finisher.commitAll(TASKS);
    assertTrue("the interrupt is kept", Thread.interrupted());
    assertEquals(List.of(), lost);
    assertEquals(3, committed.size());
  }

  @Test
  public void onlyTheTransactionsKafkaAbortedAreReportedLostInTheirOrder() {
    ResumedCommit fenced = t -> {
      if (t.partition() != 1) throw new ProducerFencedException("bumped");
    };
    List<TaskTransaction> lost = new TransactionFinisher(FakeKafka.CONF, "t", null, fenced, new ManualClock(0))
        .commitAll(TASKS);
    assertEquals(List.of(TASKS.get(0), TASKS.get(2)), lost);
  }

  @Test
  public void aCommitWhoseMarkersNeverShowReturnsAfterItsWait() {
    ManualClock clock = new ManualClock(0);
    FakeKafka kafka = new FakeKafka();
    CommitVisibility.await(kafka.topics(clock), "t", "t", new long[] {-1, 5});
    assertEquals(CommitVisibility.WAIT_MS + 10, clock.millis());
  }

  @Test
  public void aCommitWhoseMarkersShowReturnsAtOnce() {
    ManualClock clock = new ManualClock(0);
    FakeKafka kafka = new FakeKafka();
    io.kplex.spark.kafka.CompactedTopic topic = new io.kplex.spark.kafka.CompactedTopic(kafka.topics(clock), "t");
    topic.putAll(Map.of("a", new byte[0], "b", new byte[0]));
    CommitVisibility.await(kafka.topics(clock), "t", "t", new long[] {1});
    assertEquals(0, clock.millis());
  }
}
