package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.time.EventTime;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.Test;

/**
 * A commit Kafka cut short, settled: what was committed and what was lost per task and
 * virtual partition, how a rerun epoch picks the transactions to commit, and the record
 * read back as written (older records too).
 */
public class PartialCommitTest {
  private static TaskTransaction task(int partition, Map<Integer, Long> highs) {
    return new TaskTransaction(TransactionalIds.of("t", partition, 0, 0), 100 + partition, (short) 0, highs);
  }

  private static final List<TaskTransaction> EPOCH = List.of(
      task(0, Map.of(0, 10L, 4, 40L)), task(1, Map.of(1, 11L, 5, 50L)), task(2, Map.of(2, 12L)));

  private static CommitLog.Pending pending(List<TaskTransaction> txns, EpochMark mark) {
    byte[] json = CommitLog.toJson("t", "q", txns, mark, null, "writer/t/abc");
    return CommitLog.fromJson(json, 42);
  }

  private static EpochMark epoch(long n) {
    return new EpochMark("t", "q", n, EventTime.Marks.NONE, List.of());
  }

  @Test
  public void theLostTasksAndTheirVirtualPartitionsAreNamedAndTheCommittedPartKeepsItsHighs() {
    PartialCommit p = PartialCommit.of(pending(EPOCH, epoch(7)), List.of(EPOCH.get(1)));
    assertEquals(Set.of(1), p.lostPartitions());
    assertEquals(Set.of(1, 5), p.lostVps());
    assertEquals(Map.of(0, 10L, 4, 40L, 2, 12L), p.committed());
    assertEquals(7, p.epoch());
    assertFalse(p.insert());
    assertEquals("partial/t/q/7", p.key());
    assertEquals(p, PartialCommit.fromJson(p.toJson()));
  }

  @Test
  public void aRerunCommitsOnlyTheLostTasksAndRefusesADifferentPartitioning() {
    PartialCommit p = PartialCommit.of(pending(EPOCH, epoch(7)), List.of(EPOCH.get(1)));
    List<TaskTransaction> rerun = List.of(task(0, Map.of(0, 10L, 4, 40L)), task(1, Map.of(1, 11L, 5, 50L)),
        task(2, Map.of(2, 12L)), task(3, Map.of()));
    assertEquals(List.of(rerun.get(1)), p.toCommit(rerun));
    try {
      p.toCommit(List.of(task(1, Map.of(1, 11L, 4, 40L))));
      fail("a lost task holding a committed virtual partition");
    } catch (KplexException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("[KPLEX_COMMIT_CUT_SHORT]")
          && e.getMessage().contains("virtual partition 4"));
    }
    try {
      p.toCommit(List.of(task(0, Map.of(0, 10L, 5, 50L))));
      fail("a committed task holding a lost virtual partition");
    } catch (KplexException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("virtual partition 5"));
    }
  }

  @Test
  public void anInsertSaysWhichVirtualPartitionsToWriteAgainAndHow() {
    EpochMark inserts = new EpochMark("t", EpochMark.INSERTS, 0, EventTime.Marks.NONE, List.of());
    PartialCommit p = PartialCommit.of(pending(EPOCH, inserts), List.of(EPOCH.get(0), EPOCH.get(2)));
    assertTrue(p.insert());
    String said = p.describe(6);
    assertTrue(said, said.contains("virtual partitions [1, 5] are in the table, [0, 2, 4] are missing"));
    assertTrue(said, said.contains("kplex_vpartition(<key expression>, 6) IN (0, 2, 4)"));
    assertTrue(PartialCommit.of(pending(EPOCH, epoch(3)), List.of(EPOCH.get(0))).describe(6)
        .contains("restarts from its checkpoint"));
  }

  @Test
  public void aPendingRecordOfAnOlderKplexReadsWithUnknownVirtualPartitions() {
    String old = "{\"table\":\"t\",\"query\":\"q\",\"transactions\":[{\"id\":\"kplex.t.0.0.0\",\"producer_id\":1,"
        + "\"epoch\":0}]}";
    CommitLog.Pending p = CommitLog.fromJson(old.getBytes(StandardCharsets.UTF_8), 5);
    assertFalse(p.vpsKnown);
    assertEquals(null, p.claim);
    PartialCommit partial = PartialCommit.of(p, p.transactions);
    assertTrue(partial.describe(6), partial.describe(6).contains("not known"));
  }

  @Test
  public void aPendingRecordKeepsItsClaimOffsetAndWhatItCompletes() {
    byte[] json = CommitLog.toJson("t", "q", EPOCH, epoch(2), "partial/t/q/2", "writer/t/abc");
    CommitLog.Pending p = CommitLog.fromJson(json, 42);
    assertEquals("writer/t/abc", p.claim);
    assertEquals(42, p.offset);
    assertEquals("partial/t/q/2", p.completes);
    assertEquals(EPOCH, p.transactions);
    assertTrue(p.vpsKnown);
    assertEquals(2, TransactionalIds.partitionOf(EPOCH.get(2).id()));
  }

  @Test
  public void theWriterTaskCountGoesFromThePendingRecordIntoThePartialCommitAndBack() {
    byte[] json = CommitLog.toJson("t", "q", EPOCH, epoch(3).toJsonNode(), null, "writer/t/abc", 5);
    CommitLog.Pending p = CommitLog.fromJson(json, 42);
    assertEquals(5, p.tasks);
    PartialCommit partial = PartialCommit.of(p, List.of(EPOCH.get(1)));
    assertEquals(5, partial.tasks());
    assertEquals(partial, PartialCommit.fromJson(partial.toJson()));
    assertEquals("not recorded", 0, CommitLog.fromJson(CommitLog.toJson("t", "q", EPOCH, epoch(3)), 1).tasks);
  }

  @Test
  public void onlyAbortedTransactionsCountAsLost() {
    assertTrue(CommitFailure.FENCED.aborted());
    assertTrue(CommitFailure.UNKNOWN_PRODUCER.aborted());
    assertFalse(CommitFailure.TIMED_OUT.aborted());
    assertFalse(CommitFailure.NOT_AUTHORIZED.aborted());
    assertFalse(CommitFailure.OTHER.aborted());
  }
}
