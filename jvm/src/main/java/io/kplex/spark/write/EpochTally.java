package io.kplex.spark.write;

import io.kplex.spark.time.EventTime;
import io.kplex.spark.txn.EpochMark;
import io.kplex.spark.txn.TaskTransaction;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * A streaming epoch's task messages folded into what its commit needs: the transactions,
 * the last offset per physical partition, the held-back files, the largest order value
 * read per source partition and written per virtual partition, and the progress figures.
 */
final class EpochTally {
  final List<TaskTransaction> txns = new ArrayList<>();
  final long[] lastOffsets;
  final List<String> heldFiles = new ArrayList<>();
  final Map<Integer, Long> read = new HashMap<>();
  /** Per task of the epoch that holds records back, the largest order value it read per source partition. */
  final List<Map<Integer, Long>> holdingTaskReads = new ArrayList<>();
  final Map<Integer, Long> written = new HashMap<>();
  /** Per source partition, the smallest offset of a record held back (what lag tools should count from). */
  final Map<Integer, Long> heldFrom = new HashMap<>();
  /** When the first of its tasks with a transaction began, on the tasks' clocks (ms; 0: unknown). */
  long openedAtMs;
  private final List<KplexCommitMessage> messages = new ArrayList<>();
  private long lateBehind;
  private long lateBelow;
  private long lateAfterIdle;
  private long alreadyWritten;
  private long held;
  private long spilled;
  private final long[] times = TaskTimes.none();
  /** How many writer tasks the epoch ran (one message each). */
  int tasks;

  private EpochTally(int physicalPartitions) {
    lastOffsets = new long[physicalPartitions];
    Arrays.fill(lastOffsets, -1L);
  }

  static EpochTally of(int physicalPartitions, WriterCommitMessage[] messages) {
    EpochTally t = new EpochTally(physicalPartitions);
    for (WriterCommitMessage m : messages) t.add((EpochCommitMessage) m);
    t.tasks = messages.length;
    return t;
  }

  private void add(EpochCommitMessage e) {
    if (e.written != null) {
      messages.add(e.written);
      if (e.written.txn != null) {
        txns.add(e.written.txn);
        if (e.openedAtMs > 0) openedAtMs = openedAtMs == 0 ? e.openedAtMs : Math.min(openedAtMs, e.openedAtMs);
      }
      for (int p = 0; p < lastOffsets.length; p++) lastOffsets[p] = Math.max(lastOffsets[p], e.written.lastOffsets[p]);
    }
    heldFiles.addAll(e.heldFiles);
    e.read.forEach((p, h) -> read.merge(p, h, Math::max));
    if (e.held > 0) holdingTaskReads.add(e.read);
    e.writtenHighs.forEach((vp, w) -> written.merge(vp, w, Math::max));
    e.heldFrom.forEach((p, o) -> heldFrom.merge(p, o, Math::min));
    lateBehind += e.lateBehind;
    lateBelow += e.lateBelow;
    lateAfterIdle += e.lateAfterIdle;
    alreadyWritten += e.alreadyWritten;
    held += e.held;
    spilled += e.spilled;
    TaskTimes.max(times, e.times);
  }

  /**
   * The lowest bound a task of the epoch that still holds records released below
   * ({@link io.kplex.spark.time.EventTimeGate#commitBound}): each task's is the watermark of
   * the marks it started from ({@code before}) moved on by what it alone read, and what it
   * holds is at or above it, to be written later. Long.MAX_VALUE: no task holds anything.
   */
  long lowestHoldingBound(EventTime.Marks before, int[] partitions, int[] idle, long maxDelayMs) {
    long lowest = Long.MAX_VALUE;
    for (Map<Integer, Long> r : holdingTaskReads) {
      lowest = Math.min(lowest, before.after(r, Map.of()).watermark(partitions, idle, maxDelayMs));
    }
    return lowest;
  }

  /**
   * The epoch's mark, its bounds decided: the marks of the epochs {@code before} it, moved
   * on by what it read and wrote, and the files it held back.
   */
  EpochMark mark(String table, String query, long epoch, EventTime.Marks before, int[] idle, long atMs) {
    return new EpochMark(table, query, epoch, before.after(read, written, atMs).withIdle(idle), heldFiles, held);
  }

  /**
   * The offsets to commit to the query's monitoring group: per source partition, the end the
   * epoch read to, or the oldest record still held there, whichever comes first.
   */
  Map<Integer, Long> monitored(Map<Integer, Long> ends) {
    Map<Integer, Long> out = new java.util.TreeMap<>(ends);
    heldFrom.forEach((p, o) -> {
      if (out.containsKey(p)) out.merge(p, o, Math::min);  // (not a partition the source no longer has)
    });
    return out;
  }

  /**
   * Where the commit's time budget (transaction.timeout.ms) is counted from: when the first
   * task with a transaction began (its transaction opened then or later, Kafka's timer later
   * still), less {@code skewMs} for the clocks of executors and driver, never before the
   * write started on the driver ({@code writeStartedMs}). A micro-batch's read of its source
   * and its shuffle, which open no transaction, do not count.
   */
  long budgetFrom(long writeStartedMs, long skewMs) {
    return openedAtMs == 0 ? writeStartedMs : Math.max(writeStartedMs, openedAtMs - skewMs);
  }

  List<KplexCommitMessage> written() {
    return messages;
  }

  /** The epoch's sink metrics in the query's progress. */
  Map<String, String> figures(long epoch, int virtualPartitions, long watermark, int[] holding, int[] idle,
      long commitMs) {
    Map<String, String> f = new LinkedHashMap<>();
    f.put("epoch", Long.toString(epoch));
    f.put("rowsPerVirtualPartition", rowsPerVp(virtualPartitions));
    f.put("lateRecords", Long.toString(lateBehind + lateBelow + lateAfterIdle));
    f.put("lateBehindPartition", Long.toString(lateBehind));
    f.put("lateBelowWritten", Long.toString(lateBelow));
    f.put("lateAfterIdle", Long.toString(lateAfterIdle));
    f.put("alreadyWritten", Long.toString(alreadyWritten));
    f.put("heldRecords", Long.toString(held));
    f.put("spilledRecords", Long.toString(spilled));
    f.put("watermark", Long.toString(watermark));
    f.put("watermarkHeldBy", Arrays.toString(holding));
    f.put("idlePartitions", Arrays.toString(idle));
    for (int i = 0; i < times.length; i++) f.put(TaskTimes.NAMES[i], Long.toString(times[i]));
    f.put("commitMs", Long.toString(commitMs));
    return f;
  }

  private String rowsPerVp(int virtualPartitions) {
    long[] perVp = new long[virtualPartitions];
    for (KplexCommitMessage m : messages) {
      for (int vp = 0; vp < perVp.length; vp++) perVp[vp] += m.rowsPerVp[vp];
    }
    StringBuilder out = new StringBuilder("{");
    for (int vp = 0; vp < perVp.length; vp++) {
      if (perVp[vp] == 0) continue;
      if (out.length() > 1) out.append(',');
      out.append('"').append(vp).append("\":").append(perVp[vp]);
    }
    return out.append('}').toString();
  }
}
