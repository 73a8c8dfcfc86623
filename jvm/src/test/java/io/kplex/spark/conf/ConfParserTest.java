package io.kplex.spark.conf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.spec.KplexOptions;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/**
 * Which layer a setting comes from, and how each type is parsed. The precedence as a truth
 * table: the layers that set {@code kplex.null_key} (x: set, -: not), and whose value wins.
 *
 * <pre>
 *   option  table  catalog  session | value
 *   x       x      x        x       | option
 *   -       x      x        x       | table
 *   x       -      x        x       | option
 *   -       -      x        x       | catalog
 *   x       x      -        x       | option
 *   -       x      -        x       | table
 *   x       -      -        x       | option
 *   -       -      -        x       | session
 *   x       x      x        -       | option
 *   -       x      x        -       | table
 *   x       -      x        -       | option
 *   -       -      x        -       | catalog
 *   x       x      -        -       | option
 *   -       x      -        -       | table
 *   x       -      -        -       | option
 *   -       -      -        -       | default (fail)
 * </pre>
 * {@link #theHighestLayerThatSetsAKeyWins} checks every row.
 */
public class ConfParserTest {
  private static final String KEY = KplexOptions.NULL_KEY;

  private static Map<String, String> layer(boolean set, String value) {
    return set ? Map.of(KEY, value) : Map.of();
  }

  @Test
  public void theHighestLayerThatSetsAKeyWins() {
    String[] names = {"option", "table", "catalog", "session"};
    for (int mask = 0; mask < 16; mask++) {
      boolean[] set = new boolean[4];
      String expected = "default";
      for (int i = 3; i >= 0; i--) {
        set[i] = (mask & (1 << i)) != 0;
        if (set[i]) expected = names[i];
      }
      ConfParser settings = ConfParser.builder().options(layer(set[0], "option")).table(layer(set[1], "table"))
          .catalog(layer(set[2], "catalog")).session(layer(set[3], "session")).build();
      String row = "option " + set[0] + ", table " + set[1] + ", catalog " + set[2] + ", session " + set[3];
      assertEquals(row, expected.equals("default") ? "fail" : expected, settings.text(KEY));
      assertEquals(row, !expected.equals("default"), settings.isSet(KEY));
    }
  }

  @Test
  public void theLayersResolveInTheirOrderWhateverOrderTheyAreGivenIn() {
    ConfParser settings = ConfParser.builder().session(Map.of(KEY, "fail")).catalog(Map.of(KEY, "fail"))
        .options(Map.of(KEY, "drop")).table(Map.of(KEY, "fail")).build();
    assertEquals(NullKeyPolicy.DROP, settings.enumConf(KEY, NullKeyPolicy.class));
  }

  @Test
  public void namesCompareInAnyCase() {
    ConfParser settings = ConfParser.of(Map.of("KPLEX.Null_Key", "DROP", "MAXOFFSETSPERTRIGGER", "5"));
    assertEquals(NullKeyPolicy.DROP, settings.enumConf(KEY, NullKeyPolicy.class));
    assertEquals(5, settings.longConf(KplexOptions.MAX_OFFSETS_PER_TRIGGER));
  }

  @Test
  public void anUnsetSettingHasItsSpecsDefault() {
    ConfParser none = ConfParser.of(Map.of());
    assertEquals(Delivery.EXACTLY_ONCE, none.enumConf(KplexOptions.DELIVERY, Delivery.class));
    assertEquals(NullOrderPolicy.FAIL, none.enumConf(KplexOptions.NULL_ORDER, NullOrderPolicy.class));
    assertEquals(LatePolicy.FAIL, none.enumConf(KplexOptions.LATE_POLICY, LatePolicy.class));
    assertEquals(0, none.longConf(KplexOptions.MAX_DELAY_MS));
    assertEquals(6_000, none.longConf(KplexOptions.WRITER_CLAIM_TIMEOUT_MS));
    assertEquals(0, none.longConf(KplexOptions.IDLE_RELEASE_MS));
    assertTrue(none.booleanConf(KplexOptions.FAIL_ON_DATA_LOSS));
    assertFalse(none.booleanConf(KplexOptions.RELEASE_AT_END));
    assertEquals(null, none.text(KplexOptions.LATE_TOPIC));
    assertFalse(none.isSet(KplexOptions.MAX_OFFSETS_PER_TRIGGER));
  }

  @Test
  public void maxDelayMsIsALongWherever() {
    assertEquals(3_000_000_000L, ConfParser.of(Map.of(KplexOptions.MAX_DELAY_MS, " 3000000000 "))
        .longConf(KplexOptions.MAX_DELAY_MS));
  }

  @Test
  public void flagsAreTrueOrFalseInAnyCase() {
    assertTrue(ConfParser.of(Map.of("releaseAtEnd", " TRUE")).booleanConf(KplexOptions.RELEASE_AT_END));
    assertFalse(ConfParser.of(Map.of("failOnDataLoss", "False")).booleanConf(KplexOptions.FAIL_ON_DATA_LOSS));
  }

  /** A wrong value of each type, and the error it has always had (texts unchanged). */
  @Test
  public void aWrongValueIsNamedWithWhatItShouldHaveBeen() {
    wrong(KplexOptions.MAX_DELAY_MS, "-1", "option 'kplex.max_delay_ms' = '-1' is invalid: an integer >= 0 (milliseconds).");
    wrong(KplexOptions.MAX_DELAY_MS, "lots", "option 'kplex.max_delay_ms' = 'lots' is invalid: an integer >= 0 (milliseconds).");
    wrong(KplexOptions.WRITER_CLAIM_TIMEOUT_MS, "1999", "option 'kplex.writer_claim_timeout_ms' = '1999' is invalid:"
        + " milliseconds >= 2000 (a claim is renewed every quarter of it: no more often than once a second,"
        + " at least every 15 s).");
    wrong(KplexOptions.MAX_OFFSETS_PER_TRIGGER, "0",
        "option 'maxOffsetsPerTrigger' = '0' is invalid: a number of offsets > 0 per micro-batch.");
    wrong(KplexOptions.IDLE_RELEASE_MS, "-5", "option 'idleReleaseMs' = '-5' is invalid: milliseconds > 0 (0: never).");
    wrong(KplexOptions.FAIL_ON_DATA_LOSS, "yes", "option 'failOnDataLoss' = 'yes' is invalid: true or false.");
    wrong(KplexOptions.MIN_PARTITIONS, "3000000000", "option 'minPartitions' = '3000000000' is invalid:"
        + " an integer >= 1 (the fewest read tasks of a plain topic).");
    wrong(KplexOptions.REPLICATION_FACTOR, "0", "option 'kplex.replication_factor' = '0' is invalid:"
        + " an integer >= 1, or -1 for the broker default.");
    wrong(KplexOptions.LATE_POLICY, "ignore", "option 'kplex.late_policy' = 'ignore' is invalid:"
        + " one of [fail, drop, side_topic].");
  }

  private static void wrong(String key, String value, String message) {
    ConfParser settings = ConfParser.of(Map.of(key, value));
    try {
      switch (io.kplex.spark.spec.OptionSpecs.of(key).type()) {
        case INT: settings.intConf(key); break;
        case LONG: settings.longConf(key); break;
        case BOOLEAN: settings.booleanConf(key); break;
        default: settings.enumConf(key, LatePolicy.class);
      }
      fail("accepted " + key + " = " + value);
    } catch (KplexException e) {
      assertEquals("[KPLEX_BAD_OPTION] " + message, e.getMessage());
    }
  }

  @Test
  public void aReplicationFactorIsOneToShortMaxOrMinusOne() {
    assertEquals(-1, ConfParser.of(Map.of()).intConf(KplexOptions.REPLICATION_FACTOR));
    assertEquals(32767, ConfParser.of(Map.of(KplexOptions.REPLICATION_FACTOR, "32767"))
        .intConf(KplexOptions.REPLICATION_FACTOR));
    try {
      ConfParser.of(Map.of(KplexOptions.REPLICATION_FACTOR, "32768")).intConf(KplexOptions.REPLICATION_FACTOR);
      fail("accepted 32768");
    } catch (KplexException e) {
      assertTrue(e.getMessage(), e.getMessage().contains("'32768'"));
    }
  }

  @Test
  public void canonicalLowerCasesAChoiceAndKeepsTheRest() {
    assertEquals("at_least_once", ConfParser.canonical(KplexOptions.DELIVERY, " AT_LEAST_ONCE"));
    assertEquals("+3", ConfParser.canonical(KplexOptions.PHYSICAL_PARTITIONS, "+3"));
    assertEquals("Some-Topic", ConfParser.canonical(KplexOptions.LATE_TOPIC, "Some-Topic"));
  }

  @Test
  public void aTopicSettingIsRefusedNamingItWhenKafkaWouldRefuseTheName() {
    for (java.util.function.Supplier<String> read : List.<java.util.function.Supplier<String>>of(
        () -> ConfParser.canonical(KplexOptions.LATE_TOPIC, "Some Topic"),
        () -> ConfParser.of(Map.of(KplexOptions.LATE_TOPIC, "Some Topic")).text(KplexOptions.LATE_TOPIC))) {
      KplexException e = assertThrows(KplexException.class, read::get);
      assertEquals("[KPLEX_BAD_TOPIC_NAME] option 'kplex.late_topic' = 'Some Topic' cannot name a Kafka topic: it"
          + " contains ' '. A topic's name is 1 to 249 ASCII letters, digits, '.', '_' and '-', and not '.' or '..'.",
          e.getMessage());
    }
  }

  @Test
  public void mergedResolvesEveryKeyOfEveryLayer() {
    Map<String, String> merged = ConfParser.builder().options(Map.of("kplex.testing.sleep_ms", "5"))
        .table(Map.of(KEY, "drop")).session(Map.of(KEY, "fail", "kplex.late_topic", "late")).build().merged();
    assertEquals(new HashMap<>(Map.of("kplex.testing.sleep_ms", "5", KEY, "drop", "kplex.late_topic", "late")),
        merged);
  }
}
