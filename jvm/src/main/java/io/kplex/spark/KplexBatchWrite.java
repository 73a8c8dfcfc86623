package io.kplex.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** The driver side of a kplex write: hands out writers, then commits or aborts the job. */
final class KplexBatchWrite implements BatchWrite {
  private final WriteConf conf;
  private final WriteSchema schema;
  private final String queryId;

  KplexBatchWrite(WriteConf conf, WriteSchema schema, String queryId) {
    this.conf = conf;
    this.schema = schema;
    this.queryId = queryId;
  }

  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    // Before any task writes: finish or fence what an earlier, crashed write left open.
    Transactions.recover(conf);
    return new KplexWriterFactory(conf, schema);
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    if (conf.exactlyOnce()) {
      List<Transactions.Txn> txns = new ArrayList<>();
      long[] last = new long[conf.physicalPartitions];
      java.util.Arrays.fill(last, -1L);
      for (WriterCommitMessage m : messages) {
        KplexCommitMessage k = (KplexCommitMessage) m;
        if (k.txn != null) txns.add(k.txn);
        for (int p = 0; p < last.length; p++) last[p] = Math.max(last[p], k.lastOffsets[p]);
      }
      Transactions.commit(conf, queryId, txns);
      // Kafka acknowledges a commit before its markers are on the partitions: wait for
      // them, so that a read_committed consumer started after the INSERT sees its rows.
      Transactions.awaitVisible(conf, last);
    }
    WriteSummary.record(conf, messages);
  }

  @Override
  public void abort(WriterCommitMessage[] messages) {
    if (conf.exactlyOnce()) {
      Transactions.abort(conf);
    }
    // At least once: what tasks sent stays; a rerun writes it again.
  }

  @Override
  public String toString() {
    return "KplexBatchWrite(" + conf + ")";
  }
}
