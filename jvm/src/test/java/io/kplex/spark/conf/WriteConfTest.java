package io.kplex.spark.conf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.spec.KplexOptions;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/** A write's settings from its four layers (ConfParserTest has the full precedence table). */
public class WriteConfTest {
  private static final Map<String, String> CATALOG = Map.of(KplexOptions.BOOTSTRAP, "localhost:9092");

  private static TableDefinition table(String... props) {
    Map<String, String> all = new HashMap<>(Map.of(KplexOptions.VIRTUAL_PARTITIONS, "9",
        KplexOptions.PHYSICAL_PARTITIONS, "3"));
    for (int i = 0; i < props.length; i += 2) all.put(props[i], props[i + 1]);
    return TableDefinition.create("t", all);
  }

  private static Map<String, String> with(Map<String, String> base, String key, String value) {
    Map<String, String> out = new HashMap<>(base);
    out.put(key, value);
    return out;
  }

  @Test
  public void withNothingSetAWriteIsExactlyOnceAndFailsOnNulls() {
    WriteConf conf = new WriteConf(table(), CATALOG, Map.of());
    assertTrue(conf.exactlyOnce());
    assertEquals(NullKeyPolicy.FAIL, conf.nullKey);
    assertEquals(NullOrderPolicy.FAIL, conf.nullOrder);
    assertEquals(LatePolicy.FAIL, conf.latePolicy);
    assertEquals(0, conf.maxDelayMs);
    assertEquals(KplexOptions.DEFAULT_WRITER_CLAIM_TIMEOUT_MS, conf.claimTimeoutMs);
    assertEquals("t (topic t, V=9, P=3, exactly_once, null key: fail, null order: fail, "
        + conf.kafka + ")", conf.toString());
  }

  @Test
  public void aWriteOptionBeatsTheTableWhichBeatsTheCatalogWhichBeatsTheSession() {
    Map<String, String> session = Map.of(KplexOptions.NULL_ORDER, "first", KplexOptions.NULL_KEY, "drop",
        KplexOptions.DELIVERY, "at_least_once", KplexOptions.MAX_DELAY_MS, "1");
    Map<String, String> catalog = with(with(CATALOG, KplexOptions.NULL_KEY, "fail"), KplexOptions.MAX_DELAY_MS, "2");
    WriteConf conf = new WriteConf(table(KplexOptions.DELIVERY, "exactly_once", KplexOptions.MAX_DELAY_MS, "3"),
        catalog, Map.of("KPLEX.MAX_DELAY_MS", "3000000000"), session);
    assertEquals(3_000_000_000L, conf.maxDelayMs);
    assertEquals(Delivery.EXACTLY_ONCE, conf.delivery);
    assertEquals(NullKeyPolicy.FAIL, conf.nullKey);
    assertEquals(NullOrderPolicy.FIRST, conf.nullOrder);
  }

  @Test
  public void aSideTopicPolicyNeedsALateTopic() {
    try {
      new WriteConf(table(), CATALOG, Map.of(KplexOptions.LATE_POLICY, "SIDE_TOPIC"));
      fail("accepted side_topic without a late topic");
    } catch (KplexException e) {
      assertEquals("[KPLEX_BAD_OPTION] option 'kplex.late_policy' = 'side_topic' is invalid: 'side_topic' needs"
          + " 'kplex.late_topic', the topic that receives late records.", e.getMessage());
    }
    WriteConf conf = new WriteConf(table(), CATALOG, Map.of(KplexOptions.LATE_POLICY, "side_topic",
        KplexOptions.LATE_TOPIC, "late"));
    assertEquals(LatePolicy.SIDE_TOPIC, conf.latePolicy);
    assertEquals("late", conf.lateTopic);
  }

  @Test
  public void aBadWriteOptionIsNamed() {
    try {
      new WriteConf(table(), CATALOG, Map.of(KplexOptions.DELIVERY, "twice"));
      fail("accepted delivery twice");
    } catch (KplexException e) {
      assertEquals("[KPLEX_BAD_OPTION] option 'kplex.delivery' = 'twice' is invalid: one of [exactly_once,"
          + " at_least_once].", e.getMessage());
    }
  }

  @Test
  public void theClaimTimeoutOfSettingsIsAtLeastTwoSeconds() {
    assertEquals(6_000, WriteConf.claimTimeoutMs(Map.of()));
    assertEquals(2_000, WriteConf.claimTimeoutMs(Map.of(KplexOptions.WRITER_CLAIM_TIMEOUT_MS, "2000")));
    try {
      WriteConf.claimTimeoutMs(Map.of(KplexOptions.WRITER_CLAIM_TIMEOUT_MS, "500"));
      fail("accepted 500 ms");
    } catch (KplexException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("milliseconds >= 2000"));
    }
  }

  @Test
  public void aWriteConfShipsToExecutors() throws Exception {
    WriteConf conf = new WriteConf(table(), CATALOG, Map.of(KplexOptions.NULL_KEY, "drop"));
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(conf);
    }
    WriteConf shipped;
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      shipped = (WriteConf) in.readObject();
    }
    assertEquals(NullKeyPolicy.DROP, shipped.nullKey);
    assertEquals(List.of(conf.table, conf.topic, conf.virtualPartitions, conf.physicalPartitions, conf.delivery,
            conf.nullOrder, conf.maxDelayMs, conf.latePolicy, String.valueOf(conf.lateTopic), conf.claimTimeoutMs,
            conf.maxHeldRecords, String.valueOf(conf.heldLocation), conf.kafka.producer()),
        List.of(shipped.table, shipped.topic, shipped.virtualPartitions, shipped.physicalPartitions, shipped.delivery,
            shipped.nullOrder, shipped.maxDelayMs, shipped.latePolicy, String.valueOf(shipped.lateTopic),
            shipped.claimTimeoutMs, shipped.maxHeldRecords, String.valueOf(shipped.heldLocation),
            shipped.kafka.producer()));
  }
}
