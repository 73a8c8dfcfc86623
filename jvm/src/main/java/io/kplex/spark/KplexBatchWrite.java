package io.kplex.spark;

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
    return new KplexWriterFactory(conf, schema);
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    WriteSummary.record(conf, messages);
  }

  @Override
  public void abort(WriterCommitMessage[] messages) {
    // At least once: what tasks sent stays; a retry of the job may write it again.
  }

  @Override
  public String toString() {
    return "KplexBatchWrite(" + conf + ")";
  }
}
