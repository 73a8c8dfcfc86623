package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import java.util.Map;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;

/** Shipped to the executors for one epoch: the write's settings and where the epochs before left off. */
final class StreamingWriterFactory implements StreamingDataWriterFactory {
  private final WriteConf conf;
  private final WriteSchema schema;
  private final EpochStart start;
  private final HeldRows held;
  private final int numPartitions;

  StreamingWriterFactory(WriteConf conf, WriteSchema schema, EpochStart start, HeldRows held, int numPartitions) {
    this.conf = conf;
    this.schema = schema;
    this.start = start;
    this.held = held;
    this.numPartitions = numPartitions;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
    if (epochId <= start.lastEpoch()) {
      return new Committed();
    }
    TaskContext task = TaskContext.get();
    KplexDataWriter out = new KplexDataWriter(conf, schema, partitionId,
        task == null ? 0 : task.stageAttemptNumber(), task == null ? 0 : task.attemptNumber());
    return new StreamingDataWriter(out, conf, schema, start, partitionId, numPartitions, held,
        held.path(epochId, partitionId, numPartitions, taskId));
  }

  /** A task of an epoch this table already committed (Spark runs it again): writes nothing. */
  private static final class Committed implements DataWriter<InternalRow> {
    @Override public void write(InternalRow row) {}
    @Override public WriterCommitMessage commit() { return new EpochCommitMessage(null, null, 0, Map.of(), Map.of(), 0, 0, null); }
    @Override public void abort() {}
    @Override public void close() {}
  }

  @Override
  public String toString() {
    return "StreamingWriterFactory(" + conf + ", after epoch " + start.lastEpoch() + ")";
  }
}
