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
}
