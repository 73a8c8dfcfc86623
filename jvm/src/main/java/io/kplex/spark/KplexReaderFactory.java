package io.kplex.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;

/** Picks the reader of an input partition: a physical range, or one virtual partition. */
final class KplexReaderFactory implements PartitionReaderFactory {
  private final ReadConf conf;

  KplexReaderFactory(ReadConf conf) {
    this.conf = conf;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    if (partition instanceof OffsetRange) {
      return new KplexPartitionReader(conf.kafka, (OffsetRange) partition, -1);
    }
    VirtualRange range = (VirtualRange) partition;
    if (conf.kind == ReadConf.Kind.VIRTUAL) {
      return new VirtualPartitionReader(conf, range);
    }
    return new KplexPartitionReader(conf.kafka, range.sources[0], range.vp);
  }
}
