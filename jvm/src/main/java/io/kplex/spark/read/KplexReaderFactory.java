package io.kplex.spark.read;

import java.util.Set;
import java.util.TreeSet;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;

/**
 * Picks the reader of an input partition: a physical range, a source partition, one virtual
 * partition, or a stream task's chain of ranges.
 */
final class KplexReaderFactory implements PartitionReaderFactory {
  private final ReadConf conf;
  private final int[] columns;
  private final Set<Integer> vps;

  /**
   * {@code columns}: those a plain topic's rows hold (indexes into TOPIC_SCHEMA);
   * {@code vps}: the virtual partitions a read-time table's read keeps (null: all).
   */
  KplexReaderFactory(ReadConf conf, int[] columns, Set<Integer> vps) {
    this.conf = conf;
    this.columns = columns;
    this.vps = vps == null ? null : new TreeSet<>(vps);
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    if (partition instanceof RangeChain) {
      return new ChainedReader(conf, (RangeChain) partition, columns);
    }
    if (partition instanceof OffsetRange && conf.kind == ReadConf.Kind.READ_TIME) {
      return new SourcePartitionReader(conf, (OffsetRange) partition, vps);
    }
    if (partition instanceof OffsetRange) {
      return new KplexPartitionReader(conf, (OffsetRange) partition, -1, columns);
    }
    VirtualRange range = (VirtualRange) partition;
    if (conf.kind == ReadConf.Kind.READ_TIME) {
      return new VirtualPartitionReader(conf, range);
    }
    return new KplexPartitionReader(conf, range.sources[0], range.vp, null);
  }
}
