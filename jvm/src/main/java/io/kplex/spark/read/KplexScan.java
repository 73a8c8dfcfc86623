package io.kplex.spark.read;

import io.kplex.spark.conf.ConfParser;
import io.kplex.spark.conf.LatePolicy;
import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.catalog.TableStore;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.spec.KplexOptions;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.connector.metric.CustomMetric;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * A bounded read (read_committed) between the offsets {@link ReadBounds} resolves when
 * the scan is planned, by default from the earliest offset to the last stable one.
 * <ul>
 *   <li>Plain topic: one Spark input partition per physical partition, or per piece of
 *       one ({@link #split}), with only the columns the query uses.</li>
 *   <li>kplex-written table: one input partition per virtual partition, reading its
 *       physical partition vp % P and keeping its records, in their stored order (G2).</li>
 *   <li>Read-time table, as planned by {@link ReadTimePlan} (kplex's session extension):
 *       one input partition per source partition, each read once, whole, by
 *       {@link SourcePartitionReader}, which computes key, order and virtual partition and
 *       applies the late-record policy; the plan's shuffle by virtual partition and sort
 *       put each virtual partition in order. The cost does not grow with V.</li>
 *   <li>Read-time table without the extension: one input partition per virtual partition,
 *       merging every source partition in event-time order ({@link VirtualPartitionReader});
 *       each task reads the whole source range, so the source is read V times.</li>
 * </ul>
 */
final class KplexScan implements Scan, Batch {
  private final KplexTable table;
  private final ReadConf conf;
  private final CaseInsensitiveStringMap options;
  private final Set<Integer> vps;
  /** The columns a plain topic's read builds, as indexes into TOPIC_SCHEMA. */
  private final int[] columns;
  /** A read-time table under {@link ReadTimePlan}'s shuffle: read each source partition once. */
  private final boolean readOnce;

  /** Offsets of a piece a plain topic's partition is split into by default, at least. */
  static final long MIN_SPLIT_OFFSETS = 50_000;

  KplexScan(KplexTable table, ReadConf conf, CaseInsensitiveStringMap options, Set<Integer> vps,
      StructType required) {
    this.table = table;
    this.conf = conf;
    this.options = options;
    this.vps = vps;
    this.columns = conf.kind == ReadConf.Kind.TOPIC ? RecordRows.columns(required) : null;
    this.readOnce = conf.kind == ReadConf.Kind.READ_TIME && options.getBoolean(ReadTimePlan.READ_ONCE, false);
  }

  @Override
  public StructType readSchema() {
    return columns == null ? table.schema() : RecordRows.schema(columns);
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  /**
   * The input partitions, planned once per scan: Spark asks each copy of its scan node (the
   * planner's, then adaptive execution's), and each would ask the broker for the topics,
   * the ACLs and the offsets again, and could see other end offsets than the one run.
   */
  private InputPartition[] planned;

  @Override
  public synchronized InputPartition[] planInputPartitions() {
    if (planned == null) planned = plan();
    return planned.clone();
  }

  private InputPartition[] plan() {
    List<InputPartition> parts = new ArrayList<>();
    // On the catalog's Admin client, which the JVM's statements share: no connection of the
    // scan's own (on a secured listener each is a TLS handshake and a login).
    try (TableStore store = new TableStore(conf.kafka, conf.clients, conf.clock, table.metadataTopic())) {
      List<TopicPartition> tps = new ArrayList<>();
      for (String topic : conf.sources) {
        try {
          tps.addAll(store.partitionsToRead(topic));
        } catch (io.kplex.spark.errors.KplexException e) {
          throw conf.topicError(topic, e);
        }
      }
      // By topic name, then partition: the tie-break of records equal in order, key and value.
      tps.sort(Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition));
      Map<TopicPartition, long[]> bounds = ReadBounds.resolve(store, conf.sources, tps, options);
      List<OffsetRange> ranges = new ArrayList<>();
      for (TopicPartition tp : tps) {
        long[] b = bounds.get(tp);
        ranges.add(new OffsetRange(tp.topic(), tp.partition(), b[0], b[1]));
      }
      switch (conf.kind) {
        case TOPIC:
          parts.addAll(split(ranges, minPartitions(), options.containsKey(MIN_PARTITIONS) ? 1 : MIN_SPLIT_OFFSETS));
          break;
        case DERIVED:
          if (ranges.size() != conf.physicalPartitions) {
            throw Errors.partitionMismatchOnRead(conf.topic, ranges.size(), conf.table, conf.physicalPartitions);
          }
          for (int vp = 0; vp < conf.virtualPartitions; vp++) {
            if (vps == null || vps.contains(vp)) {
              parts.add(new VirtualRange(vp, new OffsetRange[] {ranges.get(vp % conf.physicalPartitions)}));
            }
          }
          break;
        default:
          if (conf.latePolicy == LatePolicy.SIDE_TOPIC) {
            io.kplex.spark.catalog.LateTopics.prepare(store, conf.table, conf.lateTopic);
          }
          if (readOnce) {
            // Each source partition whole in one task: lateness is judged along its sequence.
            for (OffsetRange r : ranges) {
              if (r.until > r.from) parts.add(r);
            }
            break;
          }
          OffsetRange[] all = ranges.toArray(new OffsetRange[0]);
          for (int vp = 0; vp < conf.virtualPartitions; vp++) {
            if (vps == null || vps.contains(vp)) parts.add(new VirtualRange(vp, all));
          }
      }
    }
    return parts.toArray(new InputPartition[0]);
  }

  /** Spark's Kafka source's name for the same read option. */
  static final String MIN_PARTITIONS = KplexOptions.MIN_PARTITIONS;

  /**
   * The read option {@code minPartitions}, else twice Spark's default parallelism: with
   * one task per partition, 3 partitions on 2 cores would leave a core idle for a third
   * of the read.
   */
  private int minPartitions() {
    ConfParser settings = ConfParser.of(options.asCaseSensitiveMap());
    if (!settings.isSet(MIN_PARTITIONS)) {
      return 2 * org.apache.spark.SparkContext.getOrCreate().defaultParallelism();
    }
    return settings.intConf(MIN_PARTITIONS);
  }


  /**
   * The non-empty ranges, each cut into equal pieces of at most total / {@code want}
   * offsets (at least {@code minOffsets}), so that there are about {@code want} of them.
   */
  static List<OffsetRange> split(List<OffsetRange> ranges, int want, long minOffsets) {
    long total = 0;
    for (OffsetRange r : ranges) total += Math.max(0, r.until - r.from);
    long most = Math.max(minOffsets, Math.max(1, (total + want - 1) / want));
    List<OffsetRange> out = new ArrayList<>();
    for (OffsetRange r : ranges) {
      long length = r.until - r.from;
      if (length <= 0) continue;
      long pieces = (length + most - 1) / most;
      for (long i = 0; i < pieces; i++) {
        out.add(new OffsetRange(r.topic, r.partition, r.from + length * i / pieces, r.from + length * (i + 1) / pieces));
      }
    }
    return out;
  }

  @Override
  public MicroBatchStream toMicroBatchStream(String checkpointLocation) {
    if (conf.kind == ReadConf.Kind.READ_TIME) {
      throw Errors.virtualStream(table.name());
    }
    return new KplexMicroBatchStream(table, conf, options, columns, checkpointLocation);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new KplexReaderFactory(conf, columns, vps);
  }

  @Override
  public CustomMetric[] supportedCustomMetrics() {
    return ReadMetrics.supported();
  }

  @Override
  public String description() {
    return "kplex scan of " + conf + (vps == null ? "" : ", virtual partitions " + vps)
        + (readOnce ? ", each source partition read once" : "");
  }

  @Override
  public String toString() {
    return description();
  }
}
