package io.kplex.spark.write;

import java.util.Map;
import io.kplex.spark.conf.WriteConf;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.DataWriterFactory;

/** Shipped to the executors: the resolved settings, column roles and where each virtual partition stands. */
final class KplexWriterFactory implements DataWriterFactory {
  private final WriteConf conf;
  private final WriteSchema schema;
  /** Per virtual partition, the largest order value the table already holds. */
  private final Map<Integer, Long> floor;

  KplexWriterFactory(WriteConf conf, WriteSchema schema, Map<Integer, Long> floor) {
    this.conf = conf;
    this.schema = schema;
    this.floor = floor;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId) {
    TaskContext task = TaskContext.get();
    return new KplexDataWriter(conf, schema, partitionId,
        task == null ? 0 : task.stageAttemptNumber(), task == null ? 0 : task.attemptNumber(), floor);
  }

  @Override
  public String toString() {
    return "KplexWriterFactory(" + conf + ", " + schema + ")";
  }
}
