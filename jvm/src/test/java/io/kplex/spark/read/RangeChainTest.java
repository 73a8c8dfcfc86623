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
  public void threePartitionsOnTwoCoresAreTwoChainsOfWholeRanges() {
    List<OffsetRange[]> out = RangeChain.cut(List.of(r(0, 0, 900), r(1, 100, 1000), r(2, 0, 900)), 2);
    assertEquals(2, out.size());
    assertEquals("[t-0[0, 900), t-2[0, 900)]", new RangeChain(-1, out.get(0)).toString());
    assertEquals("[t-1[100, 1000)]", new RangeChain(-1, out.get(1)).toString());
  }

  @Test
  public void oneLargePartitionIsOneTasksAndTheSmallOnesShareTheOther() {
    List<OffsetRange[]> out = RangeChain.cut(List.of(r(0, 0, 100), r(1, 0, 5000), r(2, 0, 300), r(3, 0, 50)), 2);
    assertEquals("[t-0[0, 100), t-2[0, 300), t-3[0, 50)]", new RangeChain(-1, out.get(0)).toString());
    assertEquals("[t-1[0, 5000)]", new RangeChain(-1, out.get(1)).toString());
    assertEquals("more tasks than partitions: one chain a partition", 4,
        RangeChain.cut(List.of(r(0, 0, 100), r(1, 0, 5000), r(2, 0, 300), r(3, 0, 50)), 7).size());
  }

  @Test
  public void emptyRangesAreLeftOutAndNoChainIsEmpty() {
    assertEquals(0, RangeChain.cut(List.of(r(0, 5, 5), r(1, 7, 3)), 2).size());
    List<OffsetRange[]> out = RangeChain.cut(List.of(r(0, 5, 5), r(1, 0, 3), r(2, 4, 4)), 8);
    assertEquals("one non-empty range: one chain", 1, out.size());
    assertEquals("[t-1[0, 3)]", new RangeChain(-1, out.get(0)).toString());
  }

  /**
   * Any ranges, any task count: every non-empty range whole in exactly one chain, each chain's
   * ranges in the order given, min(tasks, non-empty ranges) chains, and no chain more than the
   * largest range above the smallest chain (greedy, largest first).
   */
  @Test
  public void everyRangeIsWholeInExactlyOneChainInOrderAndTheChainsAreBalanced() {
    Random random = new Random(37);
    for (int round = 0; round < 500; round++) {
      List<OffsetRange> in = new ArrayList<>();
      List<OffsetRange> nonEmpty = new ArrayList<>();
      long largest = 0;
      for (int p = 0; p < 1 + random.nextInt(6); p++) {
        long from = random.nextInt(100);
        long until = from + (random.nextInt(4) == 0 ? 0 : random.nextInt(1000));
        in.add(r(p, from, until));
        if (until > from) nonEmpty.add(in.get(p));
        largest = Math.max(largest, until - from);
      }
      int tasks = 1 + random.nextInt(8);
      List<OffsetRange[]> out = RangeChain.cut(in, tasks);
      assertEquals(Math.min(tasks, nonEmpty.size()), out.size());
      List<OffsetRange> seen = new ArrayList<>();
      long least = Long.MAX_VALUE;
      long most = 0;
      int firstOfLast = -1;
      for (OffsetRange[] chain : out) {
        least = Math.min(least, size(chain));
        most = Math.max(most, size(chain));
        assertTrue("chains in the order of their first range", chain[0].partition > firstOfLast);
        firstOfLast = chain[0].partition;
        for (int k = 0; k < chain.length; k++) {
          assertTrue("a range as given", nonEmpty.contains(chain[k]));
          assertTrue("in the order given", k == 0 || chain[k].partition > chain[k - 1].partition);
          seen.add(chain[k]);
        }
      }
      assertEquals("each non-empty range once", nonEmpty.size(), seen.size());
      assertTrue("every one", seen.containsAll(nonEmpty));
      assertTrue("balanced: " + least + " against " + most, out.isEmpty() || most - least <= largest);
    }
  }
}
