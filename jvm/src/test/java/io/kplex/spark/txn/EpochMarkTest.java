package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

import java.util.List;
import org.junit.Test;

/** A streaming epoch's record in the commit log, alone and inside a pending commit. */
public class EpochMarkTest {
  private static final EpochMark MARK = new EpochMark("by_user", "query-1", 7, 1_000L, 4_000L, 9_000L,
      List.of("file:/chk/kplex/held/7/part-0-12"));

  @Test
  public void anEpochMarkReadsBackAsWritten() {
    assertEquals(MARK, EpochMark.fromJson(MARK.toJson()));
    assertEquals("epoch/by_user/query-1", MARK.key());
  }

  @Test
  public void aQueryStartsWithNothingReleasedAndNothingHeld() {
    EpochMark start = EpochMark.start("t", "q");
    assertEquals(-1, start.epoch());
    assertEquals(Long.MIN_VALUE, start.lateBound());
    assertEquals(List.of(), start.held());
  }

  @Test
  public void aPendingCommitCarriesItsEpochMarkSoWhoeverFinishesItRecordsTheEpoch() {
    List<TaskTransaction> txns = List.of(new TaskTransaction("kplex.by_user.0.0.0", 3, (short) 1));
    CommitLog.Pending pending = CommitLog.fromJson(CommitLog.toJson("by_user", "query-1", txns, MARK));
    assertEquals(MARK, pending.mark);
    assertEquals(txns, pending.transactions);
    assertNull("a batch write's has none", CommitLog.fromJson(CommitLog.toJson("t", "q", txns)).mark);
  }
}
