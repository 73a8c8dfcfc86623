package io.kplex.spark.read;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.List;
import org.junit.Test;

/** How a plain topic's partitions are cut into read tasks (KplexScan.split). */
public class OffsetSplitTest {
  private static OffsetRange r(int partition, long from, long until) {
    return new OffsetRange("t", partition, from, until);
  }

  @Test
  public void rangesAreCutIntoAboutWantPiecesThatCoverEveryOffsetOnce() {
    List<OffsetRange> in = List.of(r(0, 0, 1000), r(1, 500, 1500), r(2, 0, 1000));
    List<OffsetRange> out = KplexScan.split(in, 6, 1);
    assertEquals(6, out.size());
    for (OffsetRange source : in) {
      long next = source.from;
      for (OffsetRange piece : out) {
        if (piece.partition != source.partition) continue;
        assertEquals("contiguous", next, piece.from);
        assertTrue("not empty", piece.until > piece.from);
        next = piece.until;
      }
      assertEquals("covered to the end", source.until, next);
    }
  }

  @Test
  public void emptyRangesAreLeftOutAndSmallOnesAreNotCut() {
    List<OffsetRange> out = KplexScan.split(List.of(r(0, 5, 5), r(1, 0, 10), r(2, 7, 3)), 8, 100);
    assertEquals(1, out.size());
    assertEquals("t-1[0, 10)", out.get(0).toString());
  }

  @Test
  public void unevenPartitionsGetPiecesInProportion() {
    List<OffsetRange> out = KplexScan.split(List.of(r(0, 0, 900), r(1, 0, 100)), 10, 1);
    long zero = out.stream().filter(p -> p.partition == 0).count();
    long one = out.stream().filter(p -> p.partition == 1).count();
    assertEquals(9, zero);
    assertEquals(1, one);
  }
}
