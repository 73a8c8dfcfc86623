package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotEquals;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.ManualClock;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.After;
import org.junit.Before;
import org.junit.Test;

/**
 * The catalog's roll-forward of a commit a dead driver left half done, and what it keeps
 * for its own life (one per catalog instance): where it last found each table clean, so
 * that loading a table reads {@code _kplex_commits} only when the log has moved.
 */
public class PendingCommitsTest {
  private static final String TABLE = "views";

  private FakeKafka kafka;
  private ManualClock clock;
  private WriterClaims claims;
  private KafkaTopics topics;

  @Before
  public void kafka() {
    kafka = new FakeKafka();
    clock = new ManualClock(1_700_000_000_000L);
    claims = new WriterClaims(kafka, clock);
    topics = kafka.topics(clock);
    new CommitLog(topics).mark(EpochMark.start("another_table", "q"));  // the log exists
  }

  @After
  public void endClaims() {
    claims.close();
  }

  private String finish(PendingCommits pending) {
    return pending.finish(topics, TABLE, TABLE, 4, 30_000);
  }

  @Test
  public void aTableFoundCleanIsReadAgainOnlyWhenTheLogMovesOrTheCatalogForgets() {
    PendingCommits pending = new PendingCommits(claims);
    int reads = kafka.reads.get();
    assertEquals("", finish(pending));
    assertEquals("read once", reads + 1, kafka.reads.get());
    assertEquals("", finish(pending));
    assertEquals("not again", reads + 1, kafka.reads.get());

    assertNotEquals("the two tables' records live in two partitions of the log",
        CompactedTopic.ofScope("another_table", CompactedTopic.SCOPED_PARTITIONS),
        CompactedTopic.ofScope(TABLE, CompactedTopic.SCOPED_PARTITIONS));
    new CommitLog(topics).mark(EpochMark.start("another_table", "q2"));  // (reads the mark's key first)
    reads = kafka.reads.get();
    finish(pending);
    assertEquals("another table's part of the log moved: not again", reads, kafka.reads.get());
    new CommitLog(topics).mark(EpochMark.start(TABLE, "q2"));
    reads = kafka.reads.get();
    finish(pending);
    assertEquals("the table's part of the log moved", reads + 1, kafka.reads.get());

    pending.clear();
    finish(pending);
    assertEquals("forgotten", reads + 2, kafka.reads.get());

    finish(new PendingCommits(claims));
    assertEquals("another catalog keeps its own", reads + 3, kafka.reads.get());
  }

  @Test
  public void aCommitADeadDriverLeftIsRolledForwardUnderTheClaimThenTheTableIsClean() {
    EpochMark mark = new EpochMark(TABLE, "q", 3, io.kplex.spark.time.EventTime.Marks.NONE, List.of());
    new CommitLog(topics).begin(TABLE, "q", List.of(), mark);
    PendingCommits pending = new PendingCommits(claims);
    AtomicBoolean claimed = new AtomicBoolean();
    kafka.afterWriting(TABLE, () -> claimed.set(kafka.latest(CommitLog.TOPIC).keySet().stream()
        .anyMatch(k -> k.startsWith(WriterLease.prefix(TABLE)))));
    String report = finish(pending);
    assertTrue(report, report.startsWith("committed the 0 transactions of an interrupted commit (query q)"));
    assertTrue("the record was ended under the table's writer claim", claimed.get());
    assertFalse(new CommitLog(topics).pending(TABLE).isPresent());
    assertEquals(3, new CommitLog(topics).lastEpoch(TABLE, "q").get().epoch());
    assertFalse("the claim it took is gone", kafka.latest(CommitLog.TOPIC).keySet().stream()
        .anyMatch(k -> k.startsWith(WriterLease.prefix(TABLE))));
    int reads = kafka.reads.get();
    assertEquals("", finish(pending));
    assertEquals("clean now", reads, kafka.reads.get());
  }
}
