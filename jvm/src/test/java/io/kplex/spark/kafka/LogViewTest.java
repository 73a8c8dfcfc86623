package io.kplex.spark.kafka;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.junit.Test;

/**
 * The JVM's view of a compacted topic reads the history once, then only what was appended:
 * every read is current, a key's life (created, last written, deleted) is as a full read
 * would find it. Against the in-memory broker of the txn tests, through its public face.
 */
public class LogViewTest {
  private static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  @Test
  public void aReadAfterAnAppendReadsOnlyTheAppendedRecords() {
    io.kplex.spark.txn.FakeKafkaAccess kafka = new io.kplex.spark.txn.FakeKafkaAccess();
    CompactedTopic log = new CompactedTopic(kafka.topics(), "_view_test");
    for (int i = 0; i < 1_000; i++) log.put("old/" + (i % 50), b("v" + i));
    assertEquals(50, log.readAll().size());
    int consumers = kafka.consumers();
    int recordsRead = kafka.recordsRead();
    assertEquals("the history, read once", 1_000, recordsRead);

    log.put("new/a", b("1"));
    log.put("old/3", null);
    Map<String, byte[]> now = log.readAll();
    assertEquals(50, now.size());
    assertFalse("deleted", now.containsKey("old/3"));
    assertEquals("1", new String(now.get("new/a"), StandardCharsets.UTF_8));
    assertEquals("only the two appended records", recordsRead + 2, kafka.recordsRead());
    assertEquals("the same consumer", consumers, kafka.consumers());

    // Another CompactedTopic (another KafkaTopics) of the same settings shares the view.
    CompactedTopic again = new CompactedTopic(kafka.topics(), "_view_test");
    assertEquals(1_000L, (long) again.latest("new/a").get().getKey());
    assertEquals("v999", new String(again.latest("old/49").get().getValue(), StandardCharsets.UTF_8));
    assertEquals("(re)created at its first record", 49L, (long) again.readPrefix("old/4").get("old/49").getKey());
    assertEquals(recordsRead + 2, kafka.recordsRead());
  }

  @Test
  public void aKeyDeletedAndWrittenAgainLivesFromItsNewFirstRecord() {
    io.kplex.spark.txn.FakeKafkaAccess kafka = new io.kplex.spark.txn.FakeKafkaAccess();
    CompactedTopic log = new CompactedTopic(kafka.topics(), "_view_test2");
    log.put("claim/t", b("a"));
    assertEquals(0L, log.readPrefixLived("claim/").get("claim/t").offset());
    log.put("claim/t", null);
    assertFalse(log.latest("claim/t").isPresent());
    log.put("claim/t", b("b"));
    log.put("claim/t", b("c"));
    CompactedTopic.Lived lived = log.readPrefixLived("claim/").get("claim/t");
    assertEquals(2L, lived.offset());
    assertEquals("c", new String(lived.value(), StandardCharsets.UTF_8));
    assertEquals(3L, (long) log.latest("claim/t").get().getKey());
  }

  /** A key's scope, as the commit log's: the second path segment, or the key itself. */
  private static String scope(String key) {
    String[] parts = key.split("/", -1);
    return parts.length < 2 ? key : parts.length == 2 ? null : parts[1];
  }

  @Test
  public void aScopedTopicKeepsEachScopeInOnePartitionAndAReadOfOneScopeReadsOnlyIt() {
    io.kplex.spark.txn.FakeKafkaAccess kafka = new io.kplex.spark.txn.FakeKafkaAccess();
    CompactedTopic log = new CompactedTopic(kafka.topics(), "_scoped", LogViewTest::scope);
    String a = "alpha";
    String b = "beta";
    org.junit.Assert.assertNotEquals(CompactedTopic.ofScope(a, 16), CompactedTopic.ofScope(b, 16));
    for (int i = 0; i < 500; i++) log.put("epoch/" + b + "/q" + (i % 5), b("v" + i));
    log.put("epoch/" + a + "/q", b("mine"));
    log.put(a, b("pending"));
    assertEquals(16, kafka.topics().partitionCount("_scoped").get().intValue());
    assertEquals(CompactedTopic.ofScope(a, 16), log.partitionOf(a));
    int before = kafka.recordsRead();
    Map<String, byte[]> mine = log.readPrefixes("epoch/" + a + "/");
    assertEquals(Map.of("epoch/alpha/q", "mine"), text(mine));
    assertEquals("the pending record of the same scope", "pending", new String(log.latest(a).get().getValue(),
        StandardCharsets.UTF_8));
    assertEquals("the layout record and alpha's two, not beta's 500", before + 2, kafka.recordsRead());
    assertEquals(Map.of("epoch/alpha/q", "mine", "alpha", "pending"), text(log.readScope(a)));
    assertEquals("every scope, without the layout record", 7, log.readAll().size());
    assertEquals(5, log.readPrefixes("epoch/").size() - 1);
  }

  @Test
  public void aOnePartitionTopicWrittenBeforeScopesKeepsEverythingInItsPartition() {
    io.kplex.spark.txn.FakeKafkaAccess kafka = new io.kplex.spark.txn.FakeKafkaAccess();
    KafkaTopics topics = kafka.topics();
    CompactedTopic old = new CompactedTopic(topics, "_legacy");  // as a kplex before scopes wrote it
    old.put("epoch/alpha/q", b("1"));
    old.put("epoch/beta/q", b("2"));
    CompactedTopic log = new CompactedTopic(topics, "_legacy", LogViewTest::scope);
    assertEquals(0, log.partitionOf("beta"));
    log.put("epoch/beta/q", b("3"));
    assertEquals(Map.of("epoch/alpha/q", "1", "epoch/beta/q", "3"), text(log.readAll()));
    assertEquals(Map.of("epoch/beta/q", "3"), text(log.readScope("beta")));

    // A topic with more partitions whose partition 0 was written before it had a layout record
    // (partitions added by hand): still everything in partition 0.
    topics.createTopic("_added", 4, (short) -1, Map.of());
    new CompactedTopic(topics, "_added").put("epoch/alpha/q", b("1"));
    CompactedTopic added = new CompactedTopic(topics, "_added", LogViewTest::scope);
    assertEquals(0, added.partitionOf("beta"));
    added.put("epoch/beta/q", b("4"));
    assertEquals(Map.of("epoch/alpha/q", "1", "epoch/beta/q", "4"), text(added.readAll()));
  }

  @Test
  public void aTopicWrittenBeforeScopesIsSpreadEachScopeKeepingItsOrderAndReadersFollow() {
    io.kplex.spark.txn.FakeKafkaAccess kafka = new io.kplex.spark.txn.FakeKafkaAccess();
    KafkaTopics topics = kafka.topics();
    topics.createTopic("_spread", 16, (short) -1, Map.of());
    CompactedTopic old = new CompactedTopic(topics, "_spread");  // as a kplex before scopes wrote it: partition 0
    old.put("writer-taken/beta/c1", b("marker"));
    old.put("beta", b("pending"));
    old.put("epoch/alpha/q", b("1"));
    old.put("epoch/beta/q", b("2"));
    old.put("epoch/beta/q", b("3"));
    old.put("epoch/gone/q", b("4"));
    old.put("epoch/gone/q", null);
    CompactedTopic log = new CompactedTopic(topics, "_spread", LogViewTest::scope);
    assertEquals("before: one partition", 0, log.partitionOf("beta"));
    // What a spread cut short left: a copy of a key deleted since in partition 0.
    int gone = CompactedTopic.ofScope("gone", 16);
    org.junit.Assert.assertNotEquals(0, gone);
    topics.producer().send(new org.apache.kafka.clients.producer.ProducerRecord<>("_spread", gone,
        b("epoch/gone/q"), b("4")));
    Map<String, String> before = text(log.readAll());

    int moved = log.spread(16);
    int expected = 0;
    for (String key : before.keySet()) expected += CompactedTopic.ofScope(scope(key), 16) == 0 ? 0 : 1;
    assertEquals(expected, moved);
    assertEquals(CompactedTopic.ofScope("beta", 16), log.partitionOf("beta"));
    assertEquals("every live key, its latest value", before, text(log.readAll()));
    assertEquals(Map.of("epoch/beta/q", "3"), text(log.readPrefixes("epoch/beta/")));
    assertFalse("a deleted key stays deleted, its copy of a spread cut short too", log.latest("epoch/gone/q").isPresent());
    assertEquals("a scope's records keep their order", true,
        log.readPrefix("writer-taken/beta/").get("writer-taken/beta/c1").getKey() < log.latest("beta").get().getKey());
    assertEquals("spread already: nothing to do", -1, log.spread(16));
    log.put("epoch/beta/q", b("5"));
    assertEquals("5", new String(log.latest("epoch/beta/q").get().getValue(), StandardCharsets.UTF_8));
    assertEquals("new records go to the scope's partition", CompactedTopic.ofScope("beta", 16),
        log.where("beta").partition());
  }

  private static Map<String, String> text(Map<String, byte[]> values) {
    Map<String, String> out = new java.util.HashMap<>();
    values.forEach((k, v) -> out.put(k, new String(v, StandardCharsets.UTF_8)));
    return out;
  }

  @Test
  public void aScopedTopicsReadsWithinAQuarterSecondShareOneDescriptionAndStillSeeEveryRecordBeforeThem()
      throws InterruptedException {
    io.kplex.spark.txn.FakeKafkaAccess kafka = new io.kplex.spark.txn.FakeKafkaAccess();
    CompactedTopic log = new CompactedTopic(kafka.topics(), "_view_scoped", key -> key.split("/")[0]);
    log.put("t1/mark", b("1"));
    int before = kafka.descriptions();
    assertEquals("1", new String(log.latest("t1/mark").get().getValue(), StandardCharsets.UTF_8));
    log.put("t1/mark", b("2"));
    assertEquals("a record written after the first read is in the second",
        "2", new String(log.latest("t1/mark").get().getValue(), StandardCharsets.UTF_8));
    assertEquals("one description for both reads", before + 1, kafka.descriptions());
    Thread.sleep(CompactedTopic.DESCRIPTION_REUSE_MS + 50);
    log.latest("t1/mark");
    assertEquals("described again once it is older", before + 2, kafka.descriptions());

    CompactedTopic plain = new CompactedTopic(kafka.topics(), "_view_plain");
    plain.put("k", b("1"));
    int unscoped = kafka.descriptions();
    plain.latest("k");
    plain.latest("k");
    assertEquals("a topic without scopes is described every read", unscoped + 2, kafka.descriptions());
  }
}
