package io.kplex.spark.read;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * A micro-batch's share of its source for one task: offset ranges of one topic, read one
 * after another ({@link ChainedReader}). A stream plans as many as Spark runs at once
 * ({@link #cut}), not one per partition: a live micro-batch holds few records, so each
 * task is mostly fixed cost, and 3 partitions on 2 cores would run in two waves. A
 * partition's range is never cut: its task computes the largest order value before each
 * record on it.
 */
final class RangeChain implements InputPartition {
  /** -1: a plain topic's rows; {@link VirtualRange#ALL}: every virtual partition of a kplex-written topic. */
  final int vp;
  final OffsetRange[] ranges;

  RangeChain(int vp, OffsetRange[] ranges) {
    this.vp = vp;
    this.ranges = ranges;
  }

  /**
   * The non-empty {@code ranges} in at most {@code tasks} chains, each range whole in one
   * chain: a stream judges a record late against the largest order value before it on its
   * partition in the micro-batch, which the task reading it computes as it reads ({@code
   * kplex_high_before}), so one task reads all of a partition's range. A task reading the
   * second half of a partition would not know the first half's largest value, and would write
   * what the other halves' tasks and the batch read judge late. Ranges go largest first to the
   * chain holding the fewest offsets so far (ties: the earlier chain); a chain reads its ranges
   * in the order given, and the chains come in the order of their first range.
   */
  static List<OffsetRange[]> cut(List<OffsetRange> ranges, int tasks) {
    List<Integer> nonEmpty = new ArrayList<>();
    for (int i = 0; i < ranges.size(); i++) {
      if (ranges.get(i).until > ranges.get(i).from) nonEmpty.add(i);
    }
    List<OffsetRange[]> out = new ArrayList<>();
    if (nonEmpty.isEmpty()) return out;
    int chains = Math.max(1, Math.min(tasks, nonEmpty.size()));
    List<Integer> largestFirst = new ArrayList<>(nonEmpty);
    largestFirst.sort(Comparator.comparingLong((Integer i) -> ranges.get(i).from - ranges.get(i).until)
        .thenComparingInt(i -> i));
    long[] load = new long[chains];
    List<List<Integer>> members = new ArrayList<>();
    for (int c = 0; c < chains; c++) members.add(new ArrayList<>());
    for (int i : largestFirst) {
      int least = 0;
      for (int c = 1; c < chains; c++) if (load[c] < load[least]) least = c;
      members.get(least).add(i);
      load[least] += ranges.get(i).until - ranges.get(i).from;
    }
    for (List<Integer> chain : members) Collections.sort(chain);
    members.sort(Comparator.comparingInt(chain -> chain.get(0)));
    for (List<Integer> chain : members) {
      OffsetRange[] read = new OffsetRange[chain.size()];
      for (int k = 0; k < read.length; k++) read[k] = ranges.get(chain.get(k));
      out.add(read);
    }
    return out;
  }

  @Override
  public String toString() {
    return (vp == VirtualRange.ALL ? "every vp of " : "") + Arrays.toString(ranges);
  }
}
