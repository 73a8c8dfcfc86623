package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.Map;
import org.junit.Test;

/** What writers of a table read of a source: ranges joined, looked up, written and read back. */
public class OffsetRangesTest {
  @Test
  public void overlappingAndAdjacentRangesJoinAndGapsStay() {
    OffsetRanges r = OffsetRanges.NONE.with(0, 100, 200).with(0, 300, 400).with(0, 200, 250).with(1, 5, 6);
    assertEquals("0:[100,250) [300,400) 1:[5,6)", r.toString());
    assertEquals("0:[50,400) 1:[5,6)", r.with(0, 50, 310).toString());
    assertEquals("an empty range adds nothing", r, r.with(3, 7, 7));
    assertEquals(r, OffsetRanges.NONE.union(r));
    assertEquals(r, r.union(OffsetRanges.NONE));
    assertEquals("0:[100,250) [300,400) 1:[0,10)", r.union(OffsetRanges.below(Map.of(1, 10L))).toString());
  }

  @Test
  public void anOffsetIsInsideARangeFromItsStartUpToItsEndExcluded() {
    OffsetRanges r = OffsetRanges.NONE.with(0, 100, 200).with(0, 300, 400);
    assertFalse(r.contains(0, 99));
    assertTrue(r.contains(0, 100));
    assertTrue(r.contains(0, 199));
    assertFalse("the gap", r.contains(0, 200));
    assertFalse(r.contains(0, 299));
    assertTrue(r.contains(0, 300));
    assertFalse(r.contains(0, 400));
    assertFalse("another partition", r.contains(1, 150));
    assertFalse(OffsetRanges.NONE.contains(0, 0));
    assertTrue(OffsetRanges.below(Map.of(2, 1L)).contains(2, 0));
  }

  @Test
  public void rangesReadBackAsWritten() throws Exception {
    OffsetRanges r = OffsetRanges.NONE.with(0, 100, 200).with(0, 300, 400).with(7, 0, 1);
    ObjectNode node = new ObjectMapper().createObjectNode();
    r.writeTo(node);
    assertEquals("{\"0\":[[100,200],[300,400]],\"7\":[[0,1]]}", node.toString());
    assertEquals(r, OffsetRanges.from(new ObjectMapper().readTree(node.toString())));
  }

  @Test
  public void rangesOutOfOrderOrOverlappingInJsonReadBackJoined() throws Exception {
    String json = "{\"0\":[[300,400],[100,200],[150,310],[500,500]],\"1\":[[9,9]]}";
    assertEquals("0:[100,400)", OffsetRanges.from(new ObjectMapper().readTree(json)).toString());
  }

  @Test
  public void theGapsBesideWhatWasJustReadAreTheOnesNextToItsRange() {
    OffsetRanges before = OffsetRanges.NONE.with(0, 0, 99).with(0, 500, 600).with(1, 0, 40);
    OffsetRanges fresh = OffsetRanges.NONE.with(0, 100, 199).with(1, 40, 80).with(2, 0, 5);
    OffsetRanges all = before.union(fresh);
    assertEquals("0:[0,99) [100,199) [500,600) 1:[0,80) 2:[0,5)", all.toString());
    assertEquals(java.util.List.of(new OffsetRanges.Gap(0, 99, 100), new OffsetRanges.Gap(0, 199, 500)),
        all.gapsBeside(fresh, 1_000));
    assertEquals("a wider gap is not one to check", java.util.List.of(new OffsetRanges.Gap(0, 99, 100)),
        all.gapsBeside(fresh, 300));
    assertEquals("no gap beside a range read before only", java.util.List.of(),
        all.gapsBeside(OffsetRanges.NONE.with(1, 0, 10), 1_000));
  }
}
