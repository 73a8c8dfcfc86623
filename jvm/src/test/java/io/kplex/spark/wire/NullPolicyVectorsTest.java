package io.kplex.spark.wire;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import io.kplex.spark.errors.KplexException;
import java.nio.charset.StandardCharsets;
import org.junit.Test;

/**
 * {@link NullPolicy} against the shared vectors {@code tests/vectors/null_policy.json},
 * which pin the Python package's {@code kplex.nulls} too: each NULL key or order is kept,
 * dropped or refused with the vectors' error condition, under each pair of policies.
 */
public class NullPolicyVectorsTest {
  private static NullPolicy policy(JsonNode c) {
    return NullPolicy.of(c.get("null_key").asText(), c.get("null_order").asText(), "k", "o");
  }

  private static String verdict(JsonNode c) {
    NullPolicy policy = policy(c);
    byte[] key = c.get("key").isNull() ? null : "a".getBytes(StandardCharsets.UTF_8);
    boolean nullOrder = c.get("order").isNull();
    try {
      return policy.admits(key, nullOrder, nullOrder ? Long.MIN_VALUE : 7L) ? "kept" : "dropped";
    } catch (KplexException e) {
      return "KPLEX_" + e.code();  // the vectors name the condition, not its sub-class
    }
  }

  @Test
  public void aNullKeyOrOrderIsKeptDroppedOrRefusedAsTheVectorsSay() {
    JsonNode cases = Vectors.load("null_policy.json").get("cases");
    assertTrue(cases.size() > 0);
    for (JsonNode c : cases) {
      assertEquals(c.toString(), c.get("row").asText(), verdict(c));
    }
  }

  @Test
  public void thePolicyDecidesExactlyTheRowsItDoesNotKeepAsTheyAre() {
    for (JsonNode c : Vectors.load("null_policy.json").get("cases")) {
      NullPolicy policy = policy(c);
      boolean nullKey = c.get("key").isNull();
      boolean nullOrder = c.get("order").isNull();
      boolean orderedFirst = !nullKey && nullOrder && c.get("null_order").asText().equals("first");
      assertEquals(c.toString(), (nullKey || nullOrder) && !orderedFirst, policy.decides(nullKey, nullOrder));
    }
  }
}
