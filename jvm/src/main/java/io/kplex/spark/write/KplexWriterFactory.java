package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;

/** Shipped to the executors: the resolved settings and column roles, nothing more. */
final class KplexWriterFactory implements DataWriterFactory {
  private final WriteConf conf;
  private final WriteSchema schema;

  KplexWriterFactory(WriteConf conf, WriteSchema schema) {
    this.conf = conf;
    this.schema = schema;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    TaskContext task = TaskContext.get();
    return new KplexDataWriter(conf, schema, partitionId,
        task == null ? 0 : task.stageAttemptNumber(), task == null ? 0 : task.attemptNumber());
  }

  @Override
  public String toString() {
    return "KplexWriterFactory(" + conf + ", " + schema + ")";
  }
}
