package io.kplex.spark.read;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.junit.Test;

/**
 * Where a bounded read starts and ends ({@link ReadBounds#ranges}), as Spark's Kafka source names
 * the options: topic "views", partition 0 holds offsets [10, 100), partition 1 [0, 50); a
 * record's timestamp is 1000 + its offset.
 */
public class ReadBoundsTest {
  private static final TopicPartition P0 = new TopicPartition("views", 0);
  private static final TopicPartition P1 = new TopicPartition("views", 1);
  private static final Map<TopicPartition, Long> BEGIN = Map.of(P0, 10L, P1, 0L);
  private static final Map<TopicPartition, Long> END = Map.of(P0, 100L, P1, 50L);

  private static Map<TopicPartition, long[]> ranges(String... options) {
    Map<String, String> map = new HashMap<>();
    for (int i = 0; i < options.length; i += 2) map.put(options[i], options[i + 1]);
    return ReadBounds.ranges(List.of("views"), List.of(P0, P1), new CaseInsensitiveStringMap(map), BEGIN, END,
        query -> {
          Map<TopicPartition, Long> found = new HashMap<>();
          query.forEach((tp, ts) -> {
            long offset = Math.max(BEGIN.get(tp), ts - 1000);
            if (offset < END.get(tp)) found.put(tp, offset);
          });
          return found;
        });
  }

  private static void assertRange(long from, long until, long[] range) {
    assertArrayEquals(new long[] {from, until}, range);
  }

  @Test
  public void byDefaultEverythingTheTopicHolds() {
    Map<TopicPartition, long[]> r = ranges();
    assertRange(10, 100, r.get(P0));
    assertRange(0, 50, r.get(P1));
    assertRange(100, 100, ranges("startingOffsets", "latest").get(P0));
    assertRange(10, 10, ranges("endingOffsets", "earliest").get(P0));
  }

  @Test
  public void offsetsAsJsonWithMinusTwoForEarliestAndMinusOneForLatestPartitionsLeftOutAtTheirDefault() {
    Map<TopicPartition, long[]> r = ranges("startingOffsets", "{\"views\":{\"0\":20,\"1\":-1}}",
        "endingOffsets", "{\"views\":{\"0\":-1}}");
    assertRange(20, 100, r.get(P0));
    assertRange(50, 50, r.get(P1));
    r = ranges("startingOffsets", "{\"views\":{\"1\":-2}}", "endingOffsets", "{\"views\":{\"1\":30}}");
    assertRange(10, 100, r.get(P0));
    assertRange(0, 30, r.get(P1));
  }

  @Test
  public void clampedToWhatThePartitionHoldsAndNeverEndingBeforeItStarts() {
    Map<TopicPartition, long[]> r = ranges("startingOffsets", "{\"views\":{\"0\":5,\"1\":70}}",
        "endingOffsets", "{\"views\":{\"0\":500,\"1\":20}}");
    assertRange(10, 100, r.get(P0));
    assertRange(50, 50, r.get(P1));
    Map<TopicPartition, long[]> kept = ReadBounds.ranges(List.of("views"), List.of(P0, P1), new CaseInsensitiveStringMap(
        Map.of("startingOffsets", "{\"views\":{\"0\":5,\"1\":-2}}")), BEGIN, END, true, query -> Map.of());
    assertRange(5, 100, kept.get(P0));  // a stream's start below what the partition holds stays: its loss is reported
    assertRange(BEGIN.get(P1), 50, kept.get(P1));
  }

  @Test
  public void timestampsGiveTheFirstOffsetAtOrAfterThemOrTheEnd() {
    Map<TopicPartition, long[]> r = ranges("startingTimestamp", "1030", "endingTimestamp", "1045");
    assertRange(30, 45, r.get(P0));
    assertRange(30, 45, r.get(P1));
    r = ranges("startingTimestamp", "1075");
    assertRange(75, 100, r.get(P0));
    assertRange(50, 50, r.get(P1));
  }

  @Test
  public void badBoundsNameTheOptionAndWhatIsWrong() {
    assertBad("not both", "startingOffsets", "earliest", "startingTimestamp", "5");
    assertBad("'endingTimestamp' = 'soon' is not a number", "endingTimestamp", "soon");
    assertBad("is not 'earliest', 'latest' or JSON", "startingOffsets", "{oops");
    assertBad("is not a JSON object", "startingOffsets", "[1]");
    assertBad("names topic 'clicks'; this read is of 'views'", "startingOffsets", "{\"clicks\":{\"0\":1}}");
    assertBad("topic 'views' has no partition 7", "endingOffsets", "{\"views\":{\"7\":1}}");
    assertBad("partition 'x' is not a number", "startingOffsets", "{\"views\":{\"x\":1}}");
    assertBad("'\"ten\"' is not an offset: a whole number >= 0, or -2 (earliest) or -1 (latest)", "startingOffsets",
        "{\"views\":{\"0\":\"ten\"}}");
    assertBad("'-7' is not an offset", "startingOffsets", "{\"views\":{\"0\":-7}}");
    assertBad("'1.5' is not an offset", "endingOffsets", "{\"views\":{\"0\":1.5}}");
    assertBad("'{\"views\":5}' is not a JSON object", "startingOffsets", "{\"views\":5}");
    KplexException table = assertThrows(KplexException.class, () -> ranges("startingOffsets", "table"));
    assertEquals("KPLEX_RESUME_FROM_TABLE.BATCH_READ", table.getCondition());
  }

  /** The timestamps are read as options.json declares them (a long >= 0, any case, trimmed). */
  @Test
  public void timestampsAreReadByTheSettingsLayer() {
    assertRange(30, 100, ranges("STARTINGTIMESTAMP", " 1030 ").get(P0));
    assertBad("'startingTimestamp' = '-5' is not a number (epoch milliseconds >= 0)", "startingTimestamp", "-5");
    assertBad("not both", "endingOffsets", "latest", "EndingTimestamp", "5");
  }

  private static void assertBad(String says, String... options) {
    KplexException e = assertThrows(KplexException.class, () -> ranges(options));
    assertTrue(e.getMessage(), e.getMessage().contains(says));
  }

  /**
   * Through the read side's seam (the Admin client of its {@code KafkaClients}), against the
   * in-memory Kafka: the partitions' offsets are asked of the Admin client, no consumer is
   * made for them, and the options are applied.
   */
  @Test
  public void aReadAsksTheAdminClientForThePartitionsOffsetsAndMakesNoConsumer() {
    io.kplex.spark.txn.FakeKafkaAccess kafka = new io.kplex.spark.txn.FakeKafkaAccess();
    io.kplex.spark.kafka.KafkaTopics topics = kafka.topics();
    topics.createTopic("views", 2, (short) 1, Map.of());
    for (int i = 0; i < 30; i++) {
      topics.producer().send(new org.apache.kafka.clients.producer.ProducerRecord<>("views", i % 2, new byte[] {1},
          ("r" + i).getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }
    int consumers = kafka.consumers();
    try (io.kplex.spark.catalog.TableStore store = new io.kplex.spark.catalog.TableStore(topics.conf(),
        kafka.clients(), io.kplex.spark.time.Clock.SYSTEM, "_t")) {
      Map<TopicPartition, long[]> all = ReadBounds.resolve(store, List.of("views"), List.of(P0, P1),
          new CaseInsensitiveStringMap(Map.of()));
      assertRange(0, 15, all.get(P0));
      assertRange(0, 15, all.get(P1));
      Map<TopicPartition, long[]> some = ReadBounds.resolve(store, List.of("views"), List.of(P0, P1),
          new CaseInsensitiveStringMap(Map.of("startingOffsets", "{\"views\":{\"0\":4}}",
              "endingOffsets", "{\"views\":{\"1\":9}}")));
      assertRange(4, 15, some.get(P0));
      assertRange(0, 9, some.get(P1));
      assertEquals("consumers made", consumers, kafka.consumers());
    }
  }
}
