package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.txn.EpochMark;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;

/** Shipped to the executors for one epoch: the write's settings and where the last epoch left off. */
final class StreamingWriterFactory implements StreamingDataWriterFactory {
  private final WriteConf conf;
  private final WriteSchema schema;
  private final EpochMark last;
  private final long releaseBound;
  private final boolean releaseWithBatch;
  private final HeldRows held;
  private final int numPartitions;

  StreamingWriterFactory(WriteConf conf, WriteSchema schema, EpochMark last, long releaseBound,
      boolean releaseWithBatch, HeldRows held, int numPartitions) {
    this.conf = conf;
    this.schema = schema;
    this.last = last;
    this.releaseBound = releaseBound;
    this.releaseWithBatch = releaseWithBatch;
    this.held = held;
    this.numPartitions = numPartitions;
  }

  @Override
  public DataWriter<InternalRow> createWriter(int partitionId, long taskId, long epochId) {
    if (epochId <= last.epoch()) {
      return new Committed();
    }
    TaskContext task = TaskContext.get();
    KplexDataWriter out = new KplexDataWriter(conf, schema, partitionId,
        task == null ? 0 : task.stageAttemptNumber(), task == null ? 0 : task.attemptNumber());
    return new StreamingDataWriter(out, conf, schema, partitionId, numPartitions, last.lateBound(), releaseBound,
        releaseWithBatch, held, last.held(), held.path(epochId, partitionId, numPartitions, taskId));
  }

  /** A task of an epoch this table already committed (Spark runs it again): writes nothing. */
  private static final class Committed implements DataWriter<InternalRow> {
    @Override public void write(InternalRow row) {}
    @Override public WriterCommitMessage commit() { return new EpochCommitMessage(null, null, 0, Long.MIN_VALUE, Long.MIN_VALUE, Long.MIN_VALUE, 0, null); }
    @Override public void abort() {}
    @Override public void close() {}
  }

  @Override
  public String toString() {
    return "StreamingWriterFactory(" + conf + ", after epoch " + last.epoch() + ")";
  }
}
