package io.kplex.spark;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;

final class KplexReaderFactory implements PartitionReaderFactory {
  private final KafkaConf kafka;
  private final boolean derived;

  KplexReaderFactory(KafkaConf kafka, boolean derived) {
    this.kafka = kafka;
    this.derived = derived;
  }

  @Override
  public PartitionReader<InternalRow> createReader(InputPartition partition) {
    return new KplexPartitionReader(kafka, (OffsetRange) partition, derived);
  }
}
