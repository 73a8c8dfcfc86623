package io.kplex.spark;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;

/**
 * A bounded read of a topic: each physical partition from its earliest offset to its
 * last stable offset when the scan is planned (read_committed), one Spark input
 * partition each.
 */
final class KplexScan implements Scan, Batch {
  private final KplexTable table;
  private final KafkaConf kafka;

  KplexScan(KplexTable table, KafkaConf kafka) {
    this.table = table;
    this.kafka = kafka;
  }

  @Override
  public StructType readSchema() {
    return table.schema();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  @Override
  public InputPartition[] planInputPartitions() {
    List<InputPartition> ranges = new ArrayList<>();
    try (TableStore store = new TableStore(kafka, table.metadataTopic());
         KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(kafka.consumer())) {
      List<TopicPartition> tps = store.call(() -> {
        List<TopicPartition> list = new ArrayList<>();
        List<PartitionInfo> infos = consumer.partitionsFor(table.topic());
        if (infos == null || infos.isEmpty()) {
          throw Errors.unknownTopic(table.topic());
        }
        for (PartitionInfo p : infos) list.add(new TopicPartition(p.topic(), p.partition()));
        return list;
      });
      Map<TopicPartition, Long> start = store.call(() -> consumer.beginningOffsets(tps));
      Map<TopicPartition, Long> end = store.call(() -> consumer.endOffsets(tps));
      tps.sort(java.util.Comparator.comparingInt(TopicPartition::partition));
      for (TopicPartition tp : tps) {
        if (end.get(tp) > start.get(tp)) {
          ranges.add(new OffsetRange(tp.topic(), tp.partition(), start.get(tp), end.get(tp)));
        }
      }
    }
    return ranges.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new KplexReaderFactory(kafka, table.definition().isPresent());
  }

  @Override
  public String description() {
    return "kplex scan of " + table;
  }
}
