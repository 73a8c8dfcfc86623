package io.kplex.spark;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What a task reports when it has flushed its records: how many per virtual partition. */
final class KplexCommitMessage implements WriterCommitMessage {
  final int partitionId;
  final long[] rowsPerVp;
  final long dropped;

  KplexCommitMessage(int partitionId, long[] rowsPerVp, long dropped) {
    this.partitionId = partitionId;
    this.rowsPerVp = rowsPerVp;
    this.dropped = dropped;
  }
}
