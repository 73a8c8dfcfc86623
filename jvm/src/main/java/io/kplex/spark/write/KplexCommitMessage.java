package io.kplex.spark.write;

import io.kplex.spark.txn.OffsetRanges;
import io.kplex.spark.txn.TaskTransaction;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/**
 * What a task reports once its records are flushed: how many per virtual partition, its
 * transaction, and the offset of its last record on each physical partition.
 */
final class KplexCommitMessage implements WriterCommitMessage {
  final int partitionId;
  final long[] rowsPerVp;
  final long dropped;
  /** The task's open transaction (exactly once), or null (at least once). */
  final TaskTransaction txn;
  /** Per physical partition, the offset of the task's last record there, or -1. */
  final long[] lastOffsets;
  /** Per virtual partition, the largest order value the task wrote, or Long.MIN_VALUE. */
  final long[] highs;
  /** What the task read of the write's source topic (a batch write from a kplex table), or none. */
  final OffsetRanges reads;
  /** Rows skipped as written by another writer of the table before ({@code KplexDataWriter#skipping}). */
  final long alreadyWritten;
  /** A batch write's records below what their virtual partition held, dropped or sent to the side topic. */
  final long late;

  KplexCommitMessage(int partitionId, long[] rowsPerVp, long dropped, TaskTransaction txn, long[] lastOffsets,
      long[] highs, OffsetRanges reads, long alreadyWritten, long late) {
    this.reads = reads;
    this.alreadyWritten = alreadyWritten;
    this.late = late;
    this.partitionId = partitionId;
    this.rowsPerVp = rowsPerVp;
    this.dropped = dropped;
    this.txn = txn;
    this.lastOffsets = lastOffsets;
    this.highs = highs;
  }
}
