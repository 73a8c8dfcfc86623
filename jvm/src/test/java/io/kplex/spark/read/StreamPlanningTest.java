package io.kplex.spark.read;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.ManualClock;
import io.kplex.spark.txn.FakeKafkaAccess;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.Before;
import org.junit.Test;

/**
 * The stream's planning through the read side's seam (its consumer and admin from
 * {@code KafkaClients}, its time from {@code Clock}), against the in-memory Kafka: what a
 * micro-batch reads (the rate limit, partitions added), what it plans (its ranges cut
 * evenly over its tasks), data loss, the release at the end of the input, idleness.
 */
public class StreamPlanningTest {
  private static final String TOPIC = "views";
  private FakeKafkaAccess kafka;
  private KafkaTopics topics;
  private final ManualClock clock = new ManualClock(1_700_000_000_000L);

  @Before
  public void topicOfThreePartitions() {
    kafka = new FakeKafkaAccess();
    topics = kafka.topics();
    topics.createTopic(TOPIC, 3, (short) 1, Map.of());
  }

  private void produce(int partition, int records) {
    for (int i = 0; i < records; i++) {
      topics.producer().send(new ProducerRecord<>(TOPIC, partition, new byte[] {1},
          ("r" + i).getBytes(StandardCharsets.UTF_8)));
    }
  }

  private KplexMicroBatchStream stream(String... options) {
    Map<String, String> opts = new HashMap<>();
    for (int i = 0; i < options.length; i += 2) opts.put(options[i], options[i + 1]);
    KplexTable table = new KplexTable(TOPIC, TOPIC, Optional.empty(), Map.of("kafka.bootstrap.servers", "fake:9092"),
        "_kplex_tables", null);
    ReadConf conf = ReadConf.resolve(table, opts).with(kafka.clients(), clock);
    return new KplexMicroBatchStream(table, conf, new CaseInsensitiveStringMap(opts), null, "/nonexistent");
  }

  private static SourceOffset at(long... offsets) {
    Map<Integer, Long> next = new TreeMap<>();
    for (int p = 0; p < offsets.length; p++) next.put(p, offsets[p]);
    return new SourceOffset(TOPIC, next);
  }

  private static long[] offsets(SourceOffset o) {
    return o.next.values().stream().mapToLong(Long::longValue).toArray();
  }

  @Test
  public void aMicroBatchReadsUpToEachPartitionsEndWithEachPartitionsRangeWholeInOneTask() {
    produce(0, 20);
    produce(1, 5);
    KplexMicroBatchStream s = stream("minPartitions", "2");
    SourceOffset end = (SourceOffset) s.latestOffset(at(0, 0, 0), ReadLimit.allAvailable());
    assertArrayEquals(new long[] {20, 5, 0}, offsets(end));
    InputPartition[] planned = s.planInputPartitions(at(2, 0, 0), end);
    assertEquals("2 tasks, each partition's range whole in one; partition 2 holds nothing to read", List.of(
        "[views-0[2, 20)]", "[views-1[0, 5)]"), chains(planned));
    assertSame("planned once per (start, end)", planned[0], s.planInputPartitions(at(2, 0, 0), end)[0]);
    assertEquals("more tasks than partitions: a task per partition", 3,
        stream("minPartitions", "8").planInputPartitions(at(0, 0, 0), at(1, 1, 1)).length);
  }

  private static List<String> chains(InputPartition[] planned) {
    List<String> out = new ArrayList<>();
    for (InputPartition p : planned) out.add(p.toString());
    return out;
  }

  @Test
  public void theRateLimitIsSharedByThePartitionsAndAddedPartitionsAreReadFromTheirBeginning() {
    produce(0, 100);
    produce(1, 100);
    produce(2, 100);
    KplexMicroBatchStream s = stream("maxOffsetsPerTrigger", "30");
    SourceOffset end = (SourceOffset) s.latestOffset(at(0, 0), s.getDefaultReadLimit());
    assertEquals("a partition the start did not know (added since) is read too", 3, end.next.size());
    assertEquals(30, Arrays.stream(offsets(end)).sum());
    assertTrue("each partition gets a share: " + end.next, end.next.values().stream().allMatch(o -> o == 10));
  }

  @Test
  public void recordsTheBrokerDeletedOrAPartitionsEndGoneBackAreDataLossNamingTopicAndPartition() {
    produce(0, 20);
    produce(1, 20);
    kafka.deleteBefore(TOPIC, 1, 15);
    KplexMicroBatchStream s = stream();
    KplexException deleted = assertThrows(KplexException.class,
        () -> s.planInputPartitions(at(0, 5, 0), at(20, 20, 0)));
    assertTrue(deleted.getMessage(), deleted.getMessage().contains("[KPLEX_DATA_LOSS]"));
    assertTrue(deleted.getMessage(), deleted.getMessage().contains("topic 'views' partition 1: offsets [5, 15)"));
    assertTrue(deleted.getMessage(), deleted.getMessage().contains("failOnDataLoss"));
    KplexException back = assertThrows(KplexException.class,
        () -> s.planInputPartitions(at(50, 0, 0), at(20, 20, 0)));
    assertTrue(back.getMessage(), back.getMessage().contains("partition 0")
        && back.getMessage().contains("went back from offset 50 to 20"));
  }

  @Test
  public void withoutFailOnDataLossWhatIsLeftIsRead() {
    produce(1, 20);
    kafka.deleteBefore(TOPIC, 1, 15);
    KplexMicroBatchStream s = stream("failOnDataLoss", "false", "minPartitions", "2");
    InputPartition[] planned = s.planInputPartitions(at(0, 5, 0), at(0, 20, 0));
    assertEquals(List.of("[views-1[15, 20)]"), chains(planned));
    assertEquals("1", s.metrics(Optional.empty()).get("dataLossEvents"));
    assertEquals("10", s.metrics(Optional.empty()).get("offsetsLost"));
  }

  /** The rows a task of {@code s} reads of {@code partition}, planned before. */
  private static int rowsRead(KplexMicroBatchStream s, InputPartition partition) throws java.io.IOException {
    int rows = 0;
    try (var reader = s.createReaderFactory().createReader(partition)) {
      while (reader.next()) rows++;
    }
    return rows;
  }

  @Test
  public void recordsTheBrokerDeletesAfterPlanningAreDataLossInTheTaskOrSkippedWithoutFailOnDataLoss()
      throws Exception {
    produce(1, 20);
    KplexMicroBatchStream failing = stream("minPartitions", "1");
    InputPartition[] planned = failing.planInputPartitions(at(0, 5, 0), at(0, 20, 0));
    kafka.deleteBefore(TOPIC, 1, 15);  // retention, between the planning and the task's fetch
    KplexException lost = assertThrows(KplexException.class, () -> rowsRead(failing, planned[0]));
    assertTrue(lost.getMessage(), lost.getMessage().startsWith("[KPLEX_DATA_LOSS] topic 'views' partition 1:"
        + " offsets [5, 15) were not read because the broker deleted them (retention or truncation) after the read"
        + " planned them"));
    KplexTable table = new KplexTable(TOPIC, TOPIC, Optional.empty(), Map.of("kafka.bootstrap.servers", "fake:9092"),
        "_kplex_tables", null);
    Map<String, String> opts = Map.of("failOnDataLoss", "false", "minPartitions", "1");
    KplexMicroBatchStream skipping = new KplexMicroBatchStream(table,
        ReadConf.resolve(table, opts).with(kafka.clients(), clock), new CaseInsensitiveStringMap(opts),
        new int[] {0}, "/nonexistent");
    InputPartition[] again = skipping.planInputPartitions(at(0, 0, 0), at(0, 20, 0));
    kafka.deleteBefore(TOPIC, 1, 17);
    assertEquals("what the partition holds now", 3, rowsRead(skipping, again[0]));
  }

  @Test
  public void onceTheInputIsQuietForIdleReleaseMsOneMicroBatchReleasesWhatIsHeldAndThenNoneUntilNewRecords() {
    produce(0, 10);
    produce(1, 10);
    produce(2, 10);
    KplexMicroBatchStream s = stream("idleReleaseMs", "5000", "idleTimeoutMs", "-1");
    SourceOffset first = (SourceOffset) s.latestOffset(at(0, 0, 0), ReadLimit.allAvailable());
    assertEquals(0, first.flushes);
    clock.advance(4_999);
    assertSame("not quiet long enough", first, s.latestOffset(first, ReadLimit.allAvailable()));
    clock.advance(1);
    SourceOffset flush = (SourceOffset) s.latestOffset(first, ReadLimit.allAvailable());
    assertEquals("one micro-batch without records tells the sink to release", 1, flush.flushes);
    assertEquals(first.next, flush.next);
    clock.advance(60_000);
    assertSame("released once", flush, s.latestOffset(flush, ReadLimit.allAvailable()));
    produce(2, 1);
    SourceOffset more = (SourceOffset) s.latestOffset(flush, ReadLimit.allAvailable());
    assertEquals(11L, (long) more.next.get(2));
    assertEquals(1, more.flushes);
  }

  @Test
  public void withoutFailOnDataLossAPartitionTheTopicNoLongerHasIsIdleSoItHoldsNoWatermark() {
    produce(0, 10);
    produce(1, 10);
    produce(2, 10);
    topics.deleteTopic(TOPIC);
    topics.createTopic(TOPIC, 2, (short) 1, Map.of());
    produce(0, 20);
    produce(1, 20);
    KplexMicroBatchStream s = stream("failOnDataLoss", "false", "idleTimeoutMs", "30000", "minPartitions", "2");
    SourceOffset end = (SourceOffset) s.latestOffset(at(5, 5, 5), ReadLimit.allAvailable());
    assertEquals("partition 2 stays in the offsets, for planning to count its loss", 3, end.next.size());
    assertEquals("and is idle; 0 and 1 moved", Set.of(2), end.idle);
    KplexMicroBatchStream strict = stream("failOnDataLoss", "false", "idleTimeoutMs", "-1", "minPartitions", "2");
    assertEquals("idle under strict waiting too", Set.of(2),
        ((SourceOffset) strict.latestOffset(at(5, 5, 5), ReadLimit.allAvailable())).idle);
    assertEquals("planning of this micro-batch reports its loss", Set.of(2), end.gone);
    s.planInputPartitions(at(5, 5, 5), end);
    assertEquals("1", s.metrics(Optional.empty()).get("dataLossEvents"));
    // Reported once: the next offset leaves it out (as read back from a checkpoint, too), and
    // planning the micro-batch up to it reports nothing more.
    SourceOffset checkpointed = SourceOffset.parse(TOPIC, end.json());
    assertEquals(Set.of(2), checkpointed.gone);
    produce(0, 1);
    SourceOffset next = (SourceOffset) s.latestOffset(checkpointed, ReadLimit.allAvailable());
    assertEquals(Set.of(0, 1), next.next.keySet());
    assertEquals(Set.of(), next.gone);
    s.planInputPartitions(checkpointed, next);
    SourceOffset after = (SourceOffset) s.latestOffset(next, ReadLimit.allAvailable());
    assertEquals(Set.of(0, 1), after.next.keySet());
    assertEquals("1", s.metrics(Optional.empty()).get("dataLossEvents"));
  }

  @Test
  public void aRerunOfTheMicroBatchThatFoundAPartitionGonePlansNothingOfItEvenOnceItIsMadeAgain() {
    produce(0, 10);
    produce(1, 10);  // and partition 2 empty: idle from the start
    KplexMicroBatchStream strict = stream("idleTimeoutMs", "30000", "minPartitions", "2");
    SourceOffset read = (SourceOffset) strict.latestOffset(at(0, 0, 0), ReadLimit.allAvailable());
    strict.planInputPartitions(at(0, 0, 0), read);
    // (The in-memory Kafka keeps a deleted topic's records: partitions 0 and 1 stand where they were.)
    topics.deleteTopic(TOPIC);
    topics.createTopic(TOPIC, 2, (short) 1, Map.of());
    clock.advance(2_000);  // past the stream's reuse of its topic's description
    // A quiet topic: nothing moved, no partition went idle, but partition 2 went, which alone
    // makes a micro-batch.
    assertEquals(Set.of(2), read.idle);
    SourceOffset gone = (SourceOffset) strict.latestOffset(read, ReadLimit.allAvailable());
    assertEquals("a micro-batch to report the loss", Set.of(2), gone.gone);
    assertThrows(KplexException.class, () -> strict.planInputPartitions(read, gone));
    // Spark wrote that offset, then planning failed (failOnDataLoss); meanwhile the topic is
    // made again with partition 2. The rerun plans what the first run did: no range of it.
    topics.deleteTopic(TOPIC);
    topics.createTopic(TOPIC, 3, (short) 1, Map.of());
    produce(2, 8);
    KplexMicroBatchStream rerun = stream("failOnDataLoss", "false", "idleTimeoutMs", "30000", "minPartitions", "2");
    SourceOffset checkpointed = SourceOffset.parse(TOPIC, gone.json());
    List<String> planned = chains(rerun.planInputPartitions(read, checkpointed));
    assertTrue("nothing of partition 2 in the rerun: " + planned, planned.stream().noneMatch(c -> c.contains("views-2")));
    assertEquals("its loss reported", "1", rerun.metrics(Optional.empty()).get("dataLossEvents"));
    // The next micro-batch reads the new partition 2 from its beginning, once.
    SourceOffset next = (SourceOffset) rerun.latestOffset(checkpointed, ReadLimit.allAvailable());
    assertEquals(Set.of(0, 1, 2), next.next.keySet());
    List<String> after = chains(rerun.planInputPartitions(checkpointed, next));
    assertTrue(after.toString(), after.stream().anyMatch(c -> c.contains("views-2[0, ")));
    assertEquals("1", rerun.metrics(Optional.empty()).get("dataLossEvents"));
  }

  @Test
  public void anAvailableNowRunReadsAPartitionMadeAgainUpToWhereItStandsNotToTheOldOnesEnd() {
    produce(0, 10);
    produce(1, 10);
    produce(2, 10);
    KplexMicroBatchStream s = stream("failOnDataLoss", "false", "idleTimeoutMs", "30000", "minPartitions", "2");
    s.prepareForTriggerAvailableNow();
    topics.deleteTopic(TOPIC);
    topics.createTopic(TOPIC, 2, (short) 1, Map.of());
    produce(0, 12);
    produce(1, 12);
    clock.advance(2_000);  // past the stream's reuse of its topic's description
    SourceOffset gone = (SourceOffset) s.latestOffset(at(0, 0, 10), ReadLimit.allAvailable());
    assertEquals(Set.of(2), gone.gone);
    s.planInputPartitions(at(0, 0, 10), gone);
    topics.deleteTopic(TOPIC);
    topics.createTopic(TOPIC, 3, (short) 1, Map.of());
    produce(2, 4);
    clock.advance(2_000);
    long newEnd = kafka.topics().endOffsets(TOPIC).get(2);
    SourceOffset next = (SourceOffset) s.latestOffset(gone, ReadLimit.allAvailable());
    assertEquals("the new partition 2 up to its own end, not the old one's (10)", Long.valueOf(newEnd), next.next.get(2));
  }

  @Test
  public void anEmptyPartitionIsIdleAtOnceAQuietOneAfterTheIdleTimeoutAndNeitherUnderStrictWaiting() {
    produce(0, 10);
    produce(1, 10);
    KplexMicroBatchStream s = stream("idleTimeoutMs", "30000");
    SourceOffset first = (SourceOffset) s.latestOffset(at(0, 0, 0), ReadLimit.allAvailable());
    assertEquals("partition 2 never held a record", Set.of(2), first.idle);
    produce(0, 5);
    clock.advance(30_000);
    SourceOffset later = (SourceOffset) s.latestOffset(first, ReadLimit.allAvailable());
    assertEquals("partition 1 unmoved for the timeout; 0 moved", Set.of(1, 2), later.idle);
    produce(1, 1);
    SourceOffset back = (SourceOffset) s.latestOffset(later, ReadLimit.allAvailable());
    assertEquals("a new record makes its partition hold the watermark again", Set.of(2), back.idle);
    KplexMicroBatchStream strict = stream("idleTimeoutMs", "-1");
    assertEquals(Set.of(), ((SourceOffset) strict.latestOffset(at(0, 0, 0), ReadLimit.allAvailable())).idle);
  }

  @Test
  public void aNewRunCountsAPartitionsQuietFromWhenItsStartWasPlannedSoAScheduledRunFindsItIdleAtOnce() {
    produce(0, 10);
    produce(1, 10);
    produce(2, 10);
    // The last run planned its last offsets an hour ago; partition 2 was then still being read.
    SourceOffset lastRun = new SourceOffset(TOPIC, Map.of(0, 10L, 1, 10L, 2, 4L), 0, Set.of(), Set.of(),
        clock.millis());
    clock.advance(3_600_000);
    produce(0, 5);
    SourceOffset end = (SourceOffset) stream("idleTimeoutMs", "30000").latestOffset(lastRun, ReadLimit.allAvailable());
    assertEquals("1 has had no record since then; 0 has new ones; 2 had records past where it stood",
        Set.of(1), end.idle);
    SourceOffset recent = new SourceOffset(TOPIC, Map.of(0, 15L, 1, 10L, 2, 10L), 0, Set.of(), Set.of(),
        clock.millis() - 30_000 - KplexMicroBatchStream.PLANNER_CLOCK_SKEW_MS + 1);
    assertEquals("planned less than the timeout and the clock skew allowed ago: nothing idle yet", Set.of(),
        ((SourceOffset) stream("idleTimeoutMs", "30000").latestOffset(recent, ReadLimit.allAvailable())).idle);
    assertEquals("an offset that does not say when it was planned: measured from now", Set.of(),
        ((SourceOffset) stream("idleTimeoutMs", "30000").latestOffset(at(15, 10, 10), ReadLimit.allAvailable())).idle);
    assertEquals("strict waiting: never idle", Set.of(),
        ((SourceOffset) stream("idleTimeoutMs", "-1").latestOffset(lastRun, ReadLimit.allAvailable())).idle);
  }

  @Test
  public void aLiveStreamAsksNoBeginningsAndAPartitionEmptiedAsItMovedIsIdleByTheNextCall() {
    produce(0, 10);
    produce(1, 10);
    produce(2, 10);
    KplexMicroBatchStream s = stream("idleTimeoutMs", "30000");
    SourceOffset first = (SourceOffset) s.latestOffset(at(0, 0, 0), ReadLimit.allAvailable());
    assertEquals(Set.of(), first.idle);
    int asked = kafka.beginnings();
    SourceOffset current = first;
    for (int i = 0; i < 5; i++) {
      produce(0, 3);
      produce(1, 3);
      produce(2, 3);
      clock.advance(1_000);
      current = (SourceOffset) s.latestOffset(current, ReadLimit.allAvailable());
      assertEquals(Set.of(), current.idle);
    }
    assertEquals("every partition moved: none can be empty", asked, kafka.beginnings());
    // Partition 2 moves and the broker deletes all of it meanwhile: it holds no record, and is
    // idle once a call finds its end where it was (without waiting for the timeout).
    produce(0, 1);
    produce(2, 1);
    kafka.deleteBefore(TOPIC, 2, 26);
    current = (SourceOffset) s.latestOffset(current, ReadLimit.allAvailable());
    assertEquals(Set.of(), current.idle);
    produce(0, 1);
    current = (SourceOffset) s.latestOffset(current, ReadLimit.allAvailable());
    assertEquals("2 is empty; 1 holds records, within the timeout", Set.of(2), current.idle);
    assertEquals("asked only for the unmoved: 1, then 1 and 2", asked + 2, kafka.beginnings());
  }

  @Test
  public void aLiveStreamDescribesItsTopicOnceASecondAndStillReadsEveryPartitionsEnd() {
    produce(0, 10);
    KplexMicroBatchStream s = stream();
    SourceOffset current = (SourceOffset) s.latestOffset(at(0, 0, 0), ReadLimit.allAvailable());
    int described = kafka.descriptions();
    for (int i = 1; i <= 9; i++) {
      produce(i % 3, 2);
      clock.advance(100);
      current = (SourceOffset) s.latestOffset(current, ReadLimit.allAvailable());
    }
    assertEquals("nine calls within the second: no description", described, kafka.descriptions());
    assertArrayEquals("every partition's end, as produced", new long[] {16, 6, 6}, offsets(current));
    clock.advance(100);
    produce(2, 1);
    current = (SourceOffset) s.latestOffset(current, ReadLimit.allAvailable());
    assertEquals("a second after the last: described again", described + 1, kafka.descriptions());
    assertArrayEquals(new long[] {16, 6, 7}, offsets(current));
  }

  @Test
  public void availableNowStopsAtTheEndsTheQueryStartedWith() {
    produce(0, 10);
    KplexMicroBatchStream s = stream();
    s.prepareForTriggerAvailableNow();
    produce(0, 10);
    SourceOffset end = (SourceOffset) s.latestOffset(at(0, 0, 0), ReadLimit.allAvailable());
    assertEquals(10L, (long) end.next.get(0));
  }
}
