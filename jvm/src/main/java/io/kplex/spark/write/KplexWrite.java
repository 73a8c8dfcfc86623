package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import java.util.Map;
import java.util.function.Consumer;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.apache.spark.sql.connector.distributions.Distribution;
import org.apache.spark.sql.connector.expressions.SortOrder;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering;
import org.apache.spark.sql.types.BinaryType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/** A planned kplex write: its requirements on Spark, and the batch write that runs it. */
final class KplexWrite implements RequiresDistributionAndOrdering {
  private final WriteConf conf;
  private final WriteSchema schema;
  private final String queryId;
  private final WriteRequirements requirements;
  /** Where a streaming write keeps its held-back records (null: none given). */
  private final String checkpoint;
  private final Consumer<Map<String, String>> progress;
  /** Writer tasks asked of Spark (0: Spark's choice, spark.sql.shuffle.partitions). */
  private final int writerTasks;
  /** The shuffled bytes a batch write asks of each writer task: see advisoryPartitionSizeInBytes. */
  static final long BATCH_TASK_BYTES = 16L << 20;

  /**
   * {@code writerTasks}: a streaming micro-batch's, min(V, Spark's default parallelism),
   * so that each micro-batch's writers run in one wave and no task is empty for want of
   * a virtual partition, whatever spark.sql.shuffle.partitions is (and adaptive execution
   * does not merge a small micro-batch into one writer); 0 for a batch write.
   */
  KplexWrite(WriteConf conf, WriteSchema schema, String queryId, String checkpoint,
      Consumer<Map<String, String>> progress, int writerTasks) {
    this.conf = conf;
    this.writerTasks = writerTasks;
    this.schema = schema;
    this.queryId = queryId;
    this.checkpoint = checkpoint;
    this.progress = progress;
    DataType order = schema.type(schema.order);
    this.requirements = WriteRequirements.of(schema.name(schema.key),
        schema.type(schema.key) instanceof BinaryType, schema.name(schema.order),
        order instanceof TimestampType || order instanceof TimestampNTZType,
        schema.name(schema.value), conf.virtualPartitions, conf.nullKey.wire(), conf.nullOrder.wire());
  }

  @Override public Distribution requiredDistribution() { return requirements.distribution; }
  @Override public boolean distributionStrictlyRequired() { return true; }
  @Override public SortOrder[] requiredOrdering() { return requirements.ordering; }
  @Override public int requiredNumPartitions() { return writerTasks; }

  /**
   * A batch write asks adaptive execution for writer tasks of about {@link #BATCH_TASK_BYTES}
   * of shuffled rows, where Spark would otherwise merge its shuffle partitions up to
   * {@code spark.sql.adaptive.advisoryPartitionSizeInBytes} (64 MiB). Each writer task sorts
   * all its rows: at 64 MiB two tasks on a 1 GiB driver spilled a third of a 3M-record write
   * to disk; at 16 MiB none did, and the INSERT was 4-8% faster (docs/performance.md). Merging
   * only joins whole shuffle partitions, so a virtual partition stays in one task. A streaming
   * write asks for its task count instead (Spark takes one of the two, never both).
   */
  @Override
  public long advisoryPartitionSizeInBytes() {
    return writerTasks > 0 ? 0 : BATCH_TASK_BYTES;
  }

  @Override
  public BatchWrite toBatch() {
    return new KplexBatchWrite(conf, schema, queryId);
  }

  @Override
  public StreamingWrite toStreaming() {
    if (checkpoint == null) {
      throw Errors.noCheckpoint(conf.table);
    }
    HeldRows held = new HeldRows(SparkContext.getOrCreate().hadoopConfiguration(), heldFolder(checkpoint));
    return new KplexStreamingWrite(conf, schema, queryId, held, progress);
  }

  /**
   * Where the query keeps its held records (and its expiry markers): {@code kplex.held_location}
   * /&lt;table&gt;/&lt;query id&gt; when set (the query id is kept in the checkpoint, so a restart
   * finds the same folder, and the files outlive a deleted checkpoint: a query resuming from
   * the table reads them by the full path its epoch marks record), else the checkpoint's
   * {@code kplex} folder.
   */
  private String heldFolder(String checkpoint) {
    if (conf.heldLocation != null) return conf.heldLocation + "/" + conf.table + "/" + queryId;
    return checkpoint.replaceAll("/+$", "") + "/kplex";
  }

  @Override
  public String description() {
    return "kplex " + conf + " [" + schema + "]";
  }

  @Override
  public String toString() {
    return description();
  }
}
