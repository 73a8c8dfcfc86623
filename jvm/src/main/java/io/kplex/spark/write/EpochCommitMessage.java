package io.kplex.spark.write;

import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What a task of a streaming epoch reports: the batch write's message, and its event-time figures. */
final class EpochCommitMessage implements WriterCommitMessage {
  /** The batch write's message, or null for a task of an epoch that was already committed. */
  final KplexCommitMessage written;
  /**
   * The files of the records the task holds back (relative to the checkpoint's kplex folder,
   * as {@link HeldRows.Ref}s: those left in place, oldest first, then the one it wrote), or none.
   */
  final List<String> heldFiles;
  final long held;
  /** Per source partition, the largest order value the task read. */
  final Map<Integer, Long> read;
  /** Per virtual partition, the largest order value the task wrote. */
  final Map<Integer, Long> writtenHighs;
  /** Late records: behind their own source partition by more than max_delay_ms, and below what was written. */
  final long lateBehind;
  final long lateBelow;
  /** Late records below what was written, on a partition that had been idle. */
  final long lateAfterIdle;
  /**
   * Where the task's time went, in ms ({@link TaskTimes}): reading the held-back records,
   * waiting for its first row (Spark's shuffle read and sort), taking its rows in (and
   * sending those released at once), and its commit (releasing, holding back, flushing).
   */
  final long[] times;
  /**
   * Per source partition, the smallest offset among the records the task holds back: the
   * query's monitoring group is not committed past it, so lag tools count held records.
   */
  final Map<Integer, Long> heldFrom;
  /** When the task began, on its clock (ms; 0: unknown): its transaction is no older. */
  final long openedAtMs;
  /** Records the task spilled to its local disk while they waited for its commit. */
  final long spilled;
  /** Records skipped as written by another query's stream into the table ({@link EpochStart#readBefore}). */
  final long alreadyWritten;

  EpochCommitMessage(KplexCommitMessage written, String heldFile, long held, Map<Integer, Long> read,
      Map<Integer, Long> writtenHighs, long lateBehind, long lateBelow, long lateAfterIdle, long[] times) {
    this(written, heldFile == null ? List.of() : List.of(heldFile), held, read, writtenHighs, lateBehind, lateBelow,
        lateAfterIdle, times, Map.of(), 0, 0);
  }

  EpochCommitMessage(KplexCommitMessage written, List<String> heldFiles, long held, Map<Integer, Long> read,
      Map<Integer, Long> writtenHighs, long lateBehind, long lateBelow, long lateAfterIdle, long[] times,
      Map<Integer, Long> heldFrom, long openedAtMs, long spilled) {
    this(written, heldFiles, held, read, writtenHighs, lateBehind, lateBelow, lateAfterIdle, times, heldFrom,
        openedAtMs, spilled, 0);
  }

  EpochCommitMessage(KplexCommitMessage written, List<String> heldFiles, long held, Map<Integer, Long> read,
      Map<Integer, Long> writtenHighs, long lateBehind, long lateBelow, long lateAfterIdle, long[] times,
      Map<Integer, Long> heldFrom, long openedAtMs, long spilled, long alreadyWritten) {
    this.alreadyWritten = alreadyWritten;
    this.heldFrom = heldFrom;
    this.spilled = spilled;
    this.openedAtMs = openedAtMs;
    this.lateAfterIdle = lateAfterIdle;
    this.written = written;
    this.heldFiles = heldFiles;
    this.held = held;
    this.read = read;
    this.writtenHighs = writtenHighs;
    this.lateBehind = lateBehind;
    this.lateBelow = lateBelow;
    this.times = times;
  }
}
