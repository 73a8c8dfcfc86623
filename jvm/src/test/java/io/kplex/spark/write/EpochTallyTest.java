package io.kplex.spark.write;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;

import io.kplex.spark.time.EventTime;
import io.kplex.spark.txn.EpochMark;
import io.kplex.spark.txn.TaskTransaction;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.junit.Test;

/**
 * A streaming epoch's task messages folded into its commit and its progress: the
 * transactions and last offsets it commits, the bounds its mark moves on to, the figures
 * (names, order and values) the query's progress shows.
 */
public class EpochTallyTest {
  private static EpochCommitMessage task(int partition, long[] rowsPerVp, long[] lastOffsets, String heldFile,
      long held, Map<Integer, Long> read, Map<Integer, Long> written, long lateBehind, long lateBelow,
      long lateAfterIdle, long[] times) {
    TaskTransaction txn = new TaskTransaction("t-" + partition, partition, (short) 0);
    KplexCommitMessage batch = new KplexCommitMessage(partition, rowsPerVp, 0, txn, lastOffsets, new long[0],
        io.kplex.spark.txn.OffsetRanges.NONE, 0, 0);
    return new EpochCommitMessage(batch, heldFile, held, read, written, lateBehind, lateBelow, lateAfterIdle, times);
  }

  private static final WriterCommitMessage[] EPOCH = {
      task(0, new long[] {2, 0, 1}, new long[] {7, -1}, "held/5/part-0-of-2-11", 3, Map.of(0, 100L, 1, 50L),
          Map.of(0, 90L), 1, 0, 0, new long[] {1, 20, 30, 4}),
      task(1, new long[] {0, 0, 4}, new long[] {5, 9}, null, 0, Map.of(0, 120L), Map.of(2, 70L, 0, 80L), 0, 2, 4,
          new long[] {3, 10, 40, 2}),
      // a task of an epoch already committed before a rerun: no batch message
      new EpochCommitMessage(null, null, 0, Map.of(), Map.of(), 0, 0, 0, null),
  };

  @Test
  public void theEpochCommitsEveryTasksTransactionUpToItsLastOffsets() {
    EpochTally tally = EpochTally.of(2, EPOCH);
    assertEquals(List.of("t-0", "t-1"), tally.txns.stream().map(TaskTransaction::id).toList());
    assertArrayEquals(new long[] {7, 9}, tally.lastOffsets);
    assertEquals(2, tally.written().size());
  }

  @Test
  public void theMarkMovesTheLastEpochsBoundsOnByWhatWasReadAndWrittenAndRecordsTheIdlePartitions() {
    EventTime.Marks before = new EventTime.Marks(Map.of(0, 110L, 3, 5L), Map.of(2, 75L), java.util.Set.of(1));
    EpochMark mark = EpochTally.of(2, EPOCH).mark("t", "q", 5, before, new int[] {3}, 0);
    assertEquals(new EpochMark("t", "q", 5, new EventTime.Marks(Map.of(0, 120L, 1, 50L, 3, 5L),
        Map.of(0, 90L, 2, 75L), java.util.Set.of(3)), List.of("held/5/part-0-of-2-11"), 3), mark);
    assertEquals("the mark's JSON keeps them", mark, EpochMark.fromJson(mark.toJson()));
  }

  @Test
  public void theProgressShowsTheEpochsFiguresInOrder() {
    Map<String, String> figures = EpochTally.of(2, EPOCH).figures(5, 3, 42, new int[] {0, 1}, new int[] {2}, 17);
    assertEquals(List.of("epoch", "rowsPerVirtualPartition", "lateRecords", "lateBehindPartition",
        "lateBelowWritten", "lateAfterIdle", "alreadyWritten", "heldRecords", "spilledRecords", "watermark",
        "watermarkHeldBy", "idlePartitions", "taskHeldReadMs", "taskSortMs", "taskWriteMs", "taskCommitMs", "commitMs"), List.copyOf(figures.keySet()));
    assertEquals(List.of("5", "{\"0\":2,\"2\":5}", "7", "1", "2", "4", "0", "3", "0", "42", "[0, 1]", "[2]", "3", "20", "40",
        "4", "17"), List.copyOf(figures.values()));
  }

  /** A gate that writes into {@code written} and counts nothing else. */
  private static io.kplex.spark.time.EventTimeGate<Integer> gate(EventTime.Marks before, List<
      io.kplex.spark.time.EventTimeGate.Item<Integer>> held, List<Long> written) {
    return new io.kplex.spark.time.EventTimeGate<>(before, new int[] {0, 1}, new int[0], 0, false, held.iterator(),
        io.kplex.spark.time.EventTimeGate.inMemory(), new io.kplex.spark.time.EventTimeGate.Out<>() {
          @Override
          public void write(io.kplex.spark.time.EventTimeGate.Item<Integer> item) {
            written.add(item.order());
          }

          @Override
          public void late(io.kplex.spark.time.EventTimeGate.Item<Integer> item, EventTime.Late why, long bound) {}
        });
  }

  private static io.kplex.spark.time.EventTimeGate.Item<Integer> item(long order, int vp) {
    return new io.kplex.spark.time.EventTimeGate.Item<>(0, order, new byte[] {(byte) vp}, new byte[0], vp);
  }

  @Test
  public void aStrictStreamPublishesTheLowestBoundItsTasksReleasedBelowSoNoneOfItsHeldRecordsFallsUnderIt() {
    // Two source partitions, both at 100, max_delay_ms 0. Task A (virtual partition 0) reads
    // partition 0 up to 200 and partition 1 up to 150; task B (virtual partition 1) reads
    // partition 1 from 151 to 250. The epoch's watermark over both is 200, but A released
    // only below 150 and B, which saw nothing of partition 0, below 100.
    EventTime.Marks before = new EventTime.Marks(Map.of(0, 100L, 1, 100L), Map.of());
    List<Long> writtenA = new java.util.ArrayList<>();
    List<Long> writtenB = new java.util.ArrayList<>();
    io.kplex.spark.time.EventTimeGate<Integer> a = gate(before, List.of(), writtenA);
    for (long o = 101; o <= 200; o++) a.add(item(o, 0), o <= 150 ? 1 : 0, o - 1);
    io.kplex.spark.time.EventTimeGate<Integer> b = gate(before, List.of(), writtenB);
    for (long o = 151; o <= 250; o++) b.add(item(o, 1), 1, o - 1);
    List<io.kplex.spark.time.EventTimeGate.Item<Integer>> heldA = a.commit();
    List<io.kplex.spark.time.EventTimeGate.Item<Integer>> heldB = b.commit();
    assertEquals(150, a.commitBound());
    assertEquals(100, b.commitBound());
    long[] none = TaskTimes.none();
    EpochTally tally = EpochTally.of(2, new WriterCommitMessage[] {
        new EpochCommitMessage(null, (String) null, heldA.size(), a.read(), a.written(), 0, 0, 0, none),
        new EpochCommitMessage(null, (String) null, heldB.size(), b.read(), b.written(), 0, 0, 0, none)});
    long bound = tally.lowestHoldingBound(before, new int[] {0, 1}, new int[0], 0);
    assertEquals(100, bound);
    assertEquals("a task that holds nothing bounds nothing", Long.MAX_VALUE, EpochTally.of(2, new WriterCommitMessage[] {
        new EpochCommitMessage(null, (String) null, 0, Map.of(1, 250L), Map.of(), 0, 0, 0, none)})
        .lowestHoldingBound(before, new int[] {0, 1}, new int[0], 0));
    // The next epoch starts from the marks the epoch moved on, with the table's floor at the
    // published bound less one: every held record is written, none late.
    EventTime.Marks next = before.after(tally.read, tally.written)
        .withWrittenAtLeast(Map.of(EventTime.Marks.EVERY_VP, bound - 1));
    io.kplex.spark.time.EventTimeGate<Integer> a2 = gate(next, heldA, writtenA);
    io.kplex.spark.time.EventTimeGate<Integer> b2 = gate(next, heldB, writtenB);
    int stillHeld = a2.commit().size() + b2.commit().size();
    assertEquals(0, a2.late() + b2.late());
    assertEquals("every record written or still held", 200, writtenA.size() + writtenB.size() + stillHeld);
    // What the epoch's watermark over all reads (200) less one would have published: B's
    // held 151..198 fall below it and are late.
    EventTime.Marks wrong = before.after(tally.read, tally.written)
        .withWrittenAtLeast(Map.of(EventTime.Marks.EVERY_VP, 199L));
    io.kplex.spark.time.EventTimeGate<Integer> b3 = gate(wrong, heldB, new java.util.ArrayList<>());
    b3.commit();
    assertEquals(48, b3.late());
  }

  @Test
  public void anEmptyEpochHasNothingToCommit() {
    EpochTally tally = EpochTally.of(2, new WriterCommitMessage[0]);
    assertEquals(List.of(), tally.txns);
    assertArrayEquals(new long[] {-1, -1}, tally.lastOffsets);
    assertEquals("{}", tally.figures(0, 3, Long.MIN_VALUE, new int[] {0}, new int[0], 0).get("rowsPerVirtualPartition"));
  }

  @Test
  public void theMonitoringGroupIsCommittedUpToTheOldestHeldRecordOfEachPartition() {
    long[] none = TaskTimes.none();
    WriterCommitMessage[] epoch = {
        new EpochCommitMessage(null, List.of("a"), 2, Map.of(), Map.of(), 0, 0, 0, none, Map.of(0, 40L, 1, 75L), 0, 0),
        new EpochCommitMessage(null, List.of("b"), 1, Map.of(), Map.of(), 0, 0, 0, none, Map.of(0, 30L), 0, 0),
        new EpochCommitMessage(null, null, 0, Map.of(), Map.of(), 0, 0, 0, none)};
    EpochTally tally = EpochTally.of(2, epoch);
    assertEquals(Map.of(0, 30L, 1, 75L, 2, 90L), tally.monitored(Map.of(0, 100L, 1, 80L, 2, 90L)));
  }

  @Test
  public void theCommitsBudgetCountsFromTheFirstTaskWithATransactionLessTheClockSkew() {
    long[] none = TaskTimes.none();
    KplexCommitMessage batch = new KplexCommitMessage(0, new long[] {1}, 0, new TaskTransaction("t-0", 0, (short) 0),
        new long[] {3}, new long[0], io.kplex.spark.txn.OffsetRanges.NONE, 0, 0);
    KplexCommitMessage other = new KplexCommitMessage(1, new long[] {1}, 0, new TaskTransaction("t-1", 1, (short) 0),
        new long[] {4}, new long[0], io.kplex.spark.txn.OffsetRanges.NONE, 0, 0);
    WriterCommitMessage[] epoch = {
        new EpochCommitMessage(batch, List.of(), 0, Map.of(), Map.of(), 0, 0, 0, none, Map.of(), 90_000, 0),
        new EpochCommitMessage(other, List.of(), 0, Map.of(), Map.of(), 0, 0, 0, none, Map.of(), 70_000, 0),
        // a task with no transaction (an epoch already committed) does not count
        new EpochCommitMessage(null, List.of(), 0, Map.of(), Map.of(), 0, 0, 0, none, Map.of(), 1_000, 0)};
    EpochTally tally = EpochTally.of(1, epoch);
    assertEquals(65_000, tally.budgetFrom(10_000, 5_000));
    assertEquals("never before the write started", 68_000, tally.budgetFrom(68_000, 5_000));
    assertEquals("tasks that did not say: the write's start", 10_000,
        EpochTally.of(1, new WriterCommitMessage[] {EPOCH[0]}).budgetFrom(10_000, 5_000));
  }
}
