package io.kplex.spark.read;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.ManualClock;
import io.kplex.spark.txn.FakeKafkaAccess;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.Before;
import org.junit.Test;

/**
 * A bounded read's planning through the read side's seam, against the in-memory Kafka: a
 * plain topic's ranges cut into pieces that cover each partition once; a kplex table's one
 * range per virtual partition, on its physical partition; what a wrong layout or an unknown
 * topic is told.
 */
public class ScanPlanningTest {
  private FakeKafkaAccess kafka;
  private KafkaTopics topics;

  @Before
  public void kafka() {
    kafka = new FakeKafkaAccess();
    topics = kafka.topics();
  }

  private void produce(String topic, int partition, int records) {
    for (int i = 0; i < records; i++) {
      topics.producer().send(new ProducerRecord<>(topic, partition, new byte[] {1},
          ("r" + i).getBytes(StandardCharsets.UTF_8)));
    }
  }

  private InputPartition[] plan(String topic, Optional<TableDefinition> definition, Set<Integer> vps,
      String... options) {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i < options.length; i += 2) opts.put(options[i], options[i + 1]);
    KplexTable table = new KplexTable(topic, topic, definition, Map.of("kafka.bootstrap.servers", "fake:9092"),
        "_kplex_tables", null);
    ReadConf conf = ReadConf.resolve(table, opts).with(kafka.clients(), new ManualClock(0));
    return new KplexScan(table, conf, new CaseInsensitiveStringMap(opts), vps, null).planInputPartitions();
  }

  @Test
  public void aTopicsPartitionsAreCutIntoPiecesThatCoverEachOffsetOnce() {
    topics.createTopic("views", 3, (short) 1, Map.of());
    produce("views", 0, 30);
    produce("views", 1, 10);
    InputPartition[] planned = plan("views", Optional.empty(), null, "minPartitions", "4");
    long[] covered = new long[3];
    Map<Integer, Long> next = new HashMap<>(Map.of(0, 0L, 1, 0L));
    for (InputPartition p : planned) {
      OffsetRange r = (OffsetRange) p;
      assertEquals("pieces follow each other: " + r, (long) next.get(r.partition), r.from);
      next.put(r.partition, r.until);
      covered[r.partition] += r.until - r.from;
    }
    assertArrayEquals("partition 2 holds nothing: no task", new long[] {30, 10, 0}, covered);
    assertTrue("cut into about minPartitions pieces: " + planned.length, planned.length >= 4);
  }

  @Test
  public void aKplexTableReadsEachVirtualPartitionOnItsPhysicalPartitionAndOnlyThoseAskedFor() {
    topics.createTopic("by_user", 2, (short) 1, Map.of());
    produce("by_user", 0, 6);
    produce("by_user", 1, 4);
    Optional<TableDefinition> def = Optional.of(TableDefinition.create("by_user",
        Map.of("kplex.virtual_partitions", "4", "kplex.physical_partitions", "2")));
    List<String> all = new ArrayList<>();
    for (InputPartition p : plan("by_user", def, null)) {
      VirtualRange v = (VirtualRange) p;
      all.add(v.vp + "@" + v.sources[0].partition + "[" + v.sources[0].from + "," + v.sources[0].until + ")");
    }
    assertEquals(List.of("0@0[0,6)", "1@1[0,4)", "2@0[0,6)", "3@1[0,4)"), all);
    InputPartition[] some = plan("by_user", def, Set.of(3));
    assertEquals(1, some.length);
    assertEquals(3, ((VirtualRange) some[0]).vp);
  }

  @Test
  public void aTableWhoseTopicHasAnotherPartitionCountOrAnUnknownTopicIsRefusedNamingIt() {
    topics.createTopic("by_user", 3, (short) 1, Map.of());
    Optional<TableDefinition> def = Optional.of(TableDefinition.create("by_user",
        Map.of("kplex.virtual_partitions", "4", "kplex.physical_partitions", "2")));
    KplexException mismatch = assertThrows(KplexException.class, () -> plan("by_user", def, null));
    assertEquals("KPLEX_PARTITION_MISMATCH.READ", mismatch.getCondition());
    assertEquals(Map.of("topic", "by_user", "partition_count", "3", "table", "by_user", "expected", "2"),
        mismatch.getMessageParameters());
    KplexException unknown = assertThrows(KplexException.class,
        () -> plan("nowhere", Optional.empty(), null, "minPartitions", "1"));
    assertTrue(unknown.getMessage(), unknown.getMessage().contains("[KPLEX_UNKNOWN_TOPIC]")
        && unknown.getMessage().contains("nowhere"));
  }
}
