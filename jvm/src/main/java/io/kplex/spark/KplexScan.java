package io.kplex.spark;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A bounded read (read_committed) between the offsets {@link ReadBounds} resolves when
 * the scan is planned, by default from the earliest offset to the last stable one.
 * <ul>
 *   <li>Plain topic: one Spark input partition per physical partition.</li>
 *   <li>kplex-written table: one input partition per virtual partition, reading its
 *       physical partition vp % P and keeping its records, in their stored order (G2).</li>
 *   <li>Read-time table: one input partition per virtual partition, merging every source
 *       partition in event-time order ({@link VirtualPartitionReader}); each task reads
 *       the whole source range, so the source is read V times.</li>
 * </ul>
 */
final class KplexScan implements Scan, Batch {
  private final KplexTable table;
  private final ReadConf conf;
  private final CaseInsensitiveStringMap options;
  private final Set<Integer> vps;

  KplexScan(KplexTable table, ReadConf conf, CaseInsensitiveStringMap options, Set<Integer> vps) {
    this.table = table;
    this.conf = conf;
    this.options = options;
    this.vps = vps;
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
    List<InputPartition> parts = new ArrayList<>();
    try (TableStore store = new TableStore(conf.kafka, table.metadataTopic());
         KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(conf.kafka.consumer())) {
      List<TopicPartition> tps = store.call(() -> {
        List<TopicPartition> list = new ArrayList<>();
        List<PartitionInfo> infos = consumer.partitionsFor(conf.topic);
        if (infos == null || infos.isEmpty()) {
          throw Errors.unknownTopic(conf.topic);
        }
        for (PartitionInfo p : infos) list.add(new TopicPartition(p.topic(), p.partition()));
        return list;
      });
      tps.sort(Comparator.comparingInt(TopicPartition::partition));
      Map<TopicPartition, long[]> bounds = ReadBounds.resolve(consumer, store, conf.topic, tps, options);
      List<OffsetRange> ranges = new ArrayList<>();
      for (TopicPartition tp : tps) {
        long[] b = bounds.get(tp);
        ranges.add(new OffsetRange(tp.topic(), tp.partition(), b[0], b[1]));
      }
      switch (conf.kind) {
        case TOPIC:
          for (OffsetRange r : ranges) {
            if (r.until > r.from) parts.add(r);
          }
          break;
        case DERIVED:
          if (ranges.size() != conf.physicalPartitions) {
            throw Errors.partitionMismatch(conf.topic, ranges.size(), conf.physicalPartitions);
          }
          for (int vp = 0; vp < conf.virtualPartitions; vp++) {
            if (vps == null || vps.contains(vp)) {
              parts.add(new VirtualRange(vp, new OffsetRange[] {ranges.get(vp % conf.physicalPartitions)}));
            }
          }
          break;
        default:
          if ("side_topic".equals(conf.latePolicy)) {
            VirtualTables.ensureLateTopic(store, conf.lateTopic);
          }
          OffsetRange[] all = ranges.toArray(new OffsetRange[0]);
          for (int vp = 0; vp < conf.virtualPartitions; vp++) {
            if (vps == null || vps.contains(vp)) parts.add(new VirtualRange(vp, all));
          }
      }
    }
    return parts.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new KplexReaderFactory(conf);
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return ReadMetrics.supported();
  }

  @Override
  public String description() {
    return "kplex scan of " + conf + (vps == null ? "" : ", virtual partitions " + vps);
  }

  @Override
  public String toString() {
    return description();
  }
}
