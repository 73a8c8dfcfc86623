package io.kplex.spark.wire;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.junit.Test;

public class KplexHeadersTest {
  /** The header names are those of tests/vectors/headers.json, which kplex.placement is held to as well. */
  @Test
  public void theHeaderNamesAreTheVectors() {
    JsonNode names = Vectors.load("headers.json").get("headers");
    assertEquals(names.get("vp").asText(), KplexHeaders.VP);
    assertEquals(names.get("order").asText(), KplexHeaders.ORDER);
    assertEquals(names.get("source_topic").asText(), KplexHeaders.SOURCE_TOPIC);
    assertEquals(names.get("source_partition").asText(), KplexHeaders.SOURCE_PARTITION);
    assertEquals(names.get("source_offset").asText(), KplexHeaders.SOURCE_OFFSET);
    assertEquals(5, names.size());
  }

  @Test
  public void orderDigitsSpellTheNumberAsLongToStringDoes() {
    long[] values = {0, 1, -1, 9, 10, 99, 100, 101, 1_000_000_007L, -1_700_000_000_000L,
        999_999_999_999_999_999L, 1_000_000_000_000_000_000L, Long.MAX_VALUE, Long.MIN_VALUE, Long.MIN_VALUE + 1};
    for (long v : values) {
      assertEquals(Long.toString(v), new String(KplexHeaders.ascii(v), StandardCharsets.US_ASCII));
    }
  }

  @Test
  public void headersReadBackAsWrittenAndGarbageReadsAsAbsent() {
    RecordHeaders h = new RecordHeaders();
    h.add(KplexHeaders.VP, KplexHeaders.ascii(17));
    h.add(KplexHeaders.ORDER, KplexHeaders.ascii(-5));
    assertEquals(Integer.valueOf(17), KplexHeaders.vp(h));
    assertEquals(Long.valueOf(-5), KplexHeaders.order(h));
    RecordHeaders bad = new RecordHeaders();
    bad.add(KplexHeaders.VP, "x".getBytes(StandardCharsets.US_ASCII));
    bad.add(KplexHeaders.ORDER, null);
    assertNull(KplexHeaders.vp(bad));
    assertNull(KplexHeaders.order(bad));
    assertNull(KplexHeaders.vp(new RecordHeaders()));
  }
}
