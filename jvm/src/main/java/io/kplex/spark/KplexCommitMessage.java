package io.kplex.spark;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What a task reports once its records are flushed: how many per virtual partition, and its transaction. */
final class KplexCommitMessage implements WriterCommitMessage {
  final int partitionId;
  final long[] rowsPerVp;
  final long dropped;
  /** The task's open transaction (exactly once), or null (at least once). */
  final Transactions.Txn txn;

  KplexCommitMessage(int partitionId, long[] rowsPerVp, long dropped, Transactions.Txn txn) {
    this.partitionId = partitionId;
    this.rowsPerVp = rowsPerVp;
    this.dropped = dropped;
    this.txn = txn;
  }
}
