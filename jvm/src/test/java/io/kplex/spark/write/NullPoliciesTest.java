package io.kplex.spark.write;

import static io.kplex.spark.write.WriterFixture.conf;
import static io.kplex.spark.write.WriterFixture.row;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.wire.KeyBytes;
import io.kplex.spark.wire.KplexHeaders;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.Test;

/**
 * A row with a NULL key or order, through the data writer, under each policy:
 *
 * <pre>
 * null_key | null_order | key  | order || the row
 * ---------+------------+------+-------++----------------------------------------------
 * fail     | fail       | NULL | 7     || NULL_KEY, naming column `key` and order 7
 * fail     | first      | NULL | NULL  || NULL_KEY, naming order Long.MIN_VALUE
 * drop     | fail       | NULL | NULL  || dropped: the key's policy comes first
 * drop     | first      | NULL | 7     || dropped
 * fail     | fail       | 'a'  | NULL  || NULL_ORDER, naming column `order_value` and key "a"
 * drop     | drop       | 'a'  | NULL  || dropped
 * fail     | first      | 'a'  | NULL  || sent, kplex.order = Long.MIN_VALUE, no timestamp
 * fail     | fail       | 'a'  | 7     || sent
 * </pre>
 * kplex_write_vpartition applies the same policy before the writers start (functions/
 * KplexFunctionsTest); both ask {@code wire.NullPolicy}.
 */
public class NullPoliciesTest {
  private static final Object[][] CASES = {
      {"fail", "fail", null, 7L, "NULL_KEY"},
      {"fail", "first", null, null, "NULL_KEY"},
      {"drop", "fail", null, null, "dropped"},
      {"drop", "first", null, 7L, "dropped"},
      {"fail", "fail", "a", null, "NULL_ORDER"},
      {"drop", "drop", "a", null, "dropped"},
      {"fail", "first", "a", null, "sent"},
      {"fail", "fail", "a", 7L, "sent"},
  };

  /** What the at-least-once writer made of the row: sent, dropped, or the error's code. */
  private static String outcome(WriterFixture.Clients clients, String nullKey, String nullOrder, String key, Long order)
      throws Exception {
    WriteConf conf = conf("kplex.delivery", "at_least_once", "kplex.null_key", nullKey, "kplex.null_order", nullOrder);
    KplexDataWriter w = KplexDataWriter.open(conf, WriterFixture.codec(conf), 0, 0, 0, null, clients);
    try {
      w.write(row(key, order, "v"));
    } catch (KplexException e) {
      return e.code();
    }
    KplexCommitMessage m = (KplexCommitMessage) w.commit();
    return m.dropped == 1 ? "dropped" : clients.producer.history().size() == 1 ? "sent" : "nothing";
  }

  @Test
  public void eachPolicyDoesWhatTheTableSays() throws Exception {
    for (Object[] c : CASES) {
      String name = c[0] + "/" + c[1] + " key " + c[2] + " order " + c[3];
      assertEquals(name, c[4], outcome(new WriterFixture.Clients(), (String) c[0], (String) c[1], (String) c[2],
          (Long) c[3]));
    }
  }

  @Test
  public void theErrorsNameTheColumnAndTheRow() {
    WriteConf conf = conf("kplex.delivery", "at_least_once");
    KplexDataWriter w = KplexDataWriter.open(conf, WriterFixture.codec(conf), 0, 0, 0, null,
        new WriterFixture.Clients());
    String nullKey = org.junit.Assert.assertThrows(KplexException.class, () -> w.write(row(null, 7L, "v"))).getMessage();
    assertTrue(nullKey, nullKey.contains("`key`") && nullKey.contains("order value 7"));
    String nullOrder = org.junit.Assert.assertThrows(KplexException.class, () -> w.write(row("a", null, "v"))).getMessage();
    assertTrue(nullOrder, nullOrder.contains("`order_value`") && nullOrder.contains(KeyBytes.printable("a".getBytes(StandardCharsets.UTF_8))));
  }

  @Test
  public void aNullOrderOrderedFirstIsSentWithTheSmallestOrderAndNoTimestamp() throws Exception {
    WriterFixture.Clients clients = new WriterFixture.Clients();
    WriteConf conf = conf("kplex.delivery", "at_least_once", "kplex.null_order", "first");
    KplexDataWriter w = KplexDataWriter.open(conf, WriterFixture.codec(conf), 0, 0, 0, null, clients);
    w.write(row("a", null, "v"));
    ProducerRecord<byte[], byte[]> sent = clients.producer.history().get(0);
    assertEquals(Long.valueOf(Long.MIN_VALUE), KplexHeaders.order(sent.headers()));
    assertNull(sent.timestamp());
  }
}
