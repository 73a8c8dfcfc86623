package io.kplex.spark.read;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.Test;

/** How a micro-batch's ranges are cut over its tasks (RangeChain.cut). */
public class RangeChainTest {
  private static OffsetRange r(int partition, long from, long until) {
    return new OffsetRange("t", partition, from, until);
  }

  private static long size(OffsetRange[] chain) {
    long n = 0;
    for (OffsetRange r : chain) n += r.until - r.from;
    return n;
  }

  @Test
  public void threePartitionsOnTwoCoresAreTwoChainsOfEqualSize() {
    List<OffsetRange[]> out = RangeChain.cut(List.of(r(0, 0, 900), r(1, 100, 1000), r(2, 0, 900)), 2);
    assertEquals(2, out.size());
    assertEquals("[t-0[0, 900), t-1[100, 550)]", new RangeChain(-1, out.get(0)).toString());
    assertEquals("[t-1[550, 1000), t-2[0, 900)]", new RangeChain(-1, out.get(1)).toString());
  }

  @Test
  public void emptyRangesAreLeftOutAndNoChainIsEmpty() {
    assertEquals(0, RangeChain.cut(List.of(r(0, 5, 5), r(1, 7, 3)), 2).size());
    List<OffsetRange[]> out = RangeChain.cut(List.of(r(0, 5, 5), r(1, 0, 3), r(2, 4, 4)), 8);
    assertEquals("fewer offsets than tasks: one chain per offset", 3, out.size());
    for (OffsetRange[] chain : out) assertEquals(1, size(chain));
  }

  /** Any ranges, any task count: every offset in exactly one chain, in order, chains within one offset of equal. */
  @Test
  public void everyOffsetIsInExactlyOneChainInOrderAndTheChainsDifferByAtMostOne() {
    Random random = new Random(37);
    for (int round = 0; round < 500; round++) {
      List<OffsetRange> in = new ArrayList<>();
      long total = 0;
      for (int p = 0; p < 1 + random.nextInt(6); p++) {
        long from = random.nextInt(100);
        long until = from + (random.nextInt(4) == 0 ? 0 : random.nextInt(1000));
        in.add(r(p, from, until));
        total += until - from;
      }
      int tasks = 1 + random.nextInt(8);
      List<OffsetRange[]> out = RangeChain.cut(in, tasks);
      assertEquals(total == 0 ? 0 : Math.min(tasks, total), out.size());
      List<OffsetRange> flat = new ArrayList<>();
      long least = Long.MAX_VALUE;
      long most = 0;
      for (OffsetRange[] chain : out) {
        least = Math.min(least, size(chain));
        most = Math.max(most, size(chain));
        for (OffsetRange piece : chain) {
          assertTrue("no empty piece", piece.until > piece.from);
          flat.add(piece);
        }
      }
      assertTrue("balanced: " + least + " against " + most, out.isEmpty() || most - least <= 1);
      int i = 0;
      for (OffsetRange source : in) {
        long next = source.from;
        while (next < source.until) {
          OffsetRange piece = flat.get(i++);
          assertEquals(source.partition, piece.partition);
          assertEquals("contiguous", next, piece.from);
          next = piece.until;
        }
        assertEquals("covered to its end", source.until, next);
      }
      assertEquals("nothing else", flat.size(), i);
    }
  }
}
