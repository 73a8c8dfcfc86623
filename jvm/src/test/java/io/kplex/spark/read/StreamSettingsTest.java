package io.kplex.spark.read;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.conf.ConfParser;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.spec.KplexOptions;
import java.util.Map;
import org.junit.Test;

/**
 * A stream's options over the session's {@code kplex.stream.*} settings ({@link ReadConf#streamSettings}),
 * the keys as options.json declares them:
 * <pre>
 *   read option          session setting                 resolves to
 *   -                    -                               the default (idleTimeoutMs 30000, releaseAtEnd false)
 *   -                    kplex.stream.idleTimeoutMs=-1   the session's
 *   idleTimeoutMs=5      kplex.stream.idleTimeoutMs=-1   the read's
 *   startingTimestamp    kplex.stream.startingOffsets    no startingOffsets (the read starts by time)
 *   -                    kplex.stream.releaseAtend=true  refused, naming kplex.stream.releaseAtEnd
 * </pre>
 */
public class StreamSettingsTest {
  private static final Map<String, String> SESSION = Map.of(
      "kplex.stream.idleTimeoutMs", "-1", "kplex.stream.releaseAtEnd", "TRUE",
      "kplex.stream.startingOffsets", "table", "kplex.stream.startingTable", "by_user", "kplex.max_delay_ms", "9");

  private static ConfParser settings(Map<String, String> options, Map<String, String> session) {
    return ReadConf.streamSettings(options, session::get);
  }

  @Test
  public void withoutEitherTheDefaults() {
    ConfParser s = settings(Map.of(), Map.of());
    assertEquals(30_000, s.longConf(KplexOptions.IDLE_TIMEOUT_MS));
    assertFalse(s.booleanConf(KplexOptions.RELEASE_AT_END));
    assertNull(s.text(KplexOptions.STARTING_OFFSETS));
  }

  @Test
  public void theSessionsStreamSettingsApplyAndNoOther() {
    ConfParser s = settings(Map.of(), SESSION);
    assertEquals(-1, s.longConf(KplexOptions.IDLE_TIMEOUT_MS));
    assertTrue(s.booleanConf(KplexOptions.RELEASE_AT_END));
    assertEquals("table", s.text(KplexOptions.STARTING_OFFSETS));
    assertEquals("by_user", s.text(KplexOptions.STARTING_TABLE));
    assertFalse("a read takes no other session setting", s.isSet(KplexOptions.MAX_DELAY_MS));
  }

  @Test
  public void aReadOptionWinsOverTheSession() {
    ConfParser s = settings(Map.of("IDLETIMEOUTMS", "5", "startingOffsets", "latest", "releaseAtEnd", "false"), SESSION);
    assertEquals(5, s.longConf(KplexOptions.IDLE_TIMEOUT_MS));
    assertEquals("latest", s.text(KplexOptions.STARTING_OFFSETS));
    assertFalse(s.booleanConf(KplexOptions.RELEASE_AT_END));
  }

  @Test
  public void theSessionsStartingOffsetsLeaveAReadThatStartsByTimeAlone() {
    ConfParser s = settings(Map.of("startingTimestamp", "1700000000000"), SESSION);
    assertNull(s.text(KplexOptions.STARTING_OFFSETS));
    assertEquals("by_user", s.text(KplexOptions.STARTING_TABLE));
  }

  @Test
  public void aStreamSettingNoOptionHasIsRefusedNamingTheOneMeant() {
    ReadConf.checkStreamSession(SESSION.keySet());
    ReadConf.checkStreamSession(java.util.List.of("kplex.streams.x", "spark.kplex.delivery", "kplex.stream"));
    for (String[] misspelt : new String[][] {
        {"kplex.stream.releaseAtend", "kplex.stream.releaseAtEnd"},
        {"kplex.stream.startingoffsets", "kplex.stream.startingOffsets"},
        {"KPLEX.STREAM.idleTimeoutMs", "kplex.stream.idleTimeoutMs"},
        {"kplex.stream.startingOffset", "kplex.stream.startingOffsets"}}) {
      KplexException e = assertThrows(KplexException.class,
          () -> ReadConf.checkStreamSession(java.util.List.of("kplex.stream.idleTimeoutMs", misspelt[0])));
      assertEquals("KPLEX_UNKNOWN_PROPERTY.STREAM_SETTING_SUGGESTION", e.getCondition());
      assertTrue(e.getMessage(), e.getMessage().contains("'" + misspelt[0] + "'; did you mean '" + misspelt[1] + "'?"));
    }
    KplexException e = assertThrows(KplexException.class,
        () -> ReadConf.checkStreamSession(java.util.List.of("kplex.stream.maxOffsetsPerTrigger")));
    assertEquals("KPLEX_UNKNOWN_PROPERTY.STREAM_SETTING", e.getCondition());
    assertTrue(e.getMessage(), e.getMessage().contains("kplex.stream.idleTimeoutMs, kplex.stream.releaseAtEnd, "
        + "kplex.stream.startingOffsets, kplex.stream.startingTable"));
  }
}
