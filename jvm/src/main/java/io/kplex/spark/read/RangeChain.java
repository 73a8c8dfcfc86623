package io.kplex.spark.read;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * A micro-batch's share of its source for one task: offset ranges of one topic, read one
 * after another ({@link ChainedReader}). A stream plans as many as Spark runs at once
 * ({@link #cut}), not one per partition: a live micro-batch holds few records, so each
 * task is mostly fixed cost, and 3 partitions on 2 cores would run in two waves.
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
   * The non-empty {@code ranges}, in their order, cut into {@code tasks} chains of equal
   * offsets (to one), fewer if there are fewer offsets: a chain ends inside a range where
   * its share ends, and the next chain reads the rest. Each offset is in exactly one chain.
   */
  static List<OffsetRange[]> cut(List<OffsetRange> ranges, int tasks) {
    long total = 0;
    for (OffsetRange r : ranges) total += Math.max(0, r.until - r.from);
    List<OffsetRange[]> out = new ArrayList<>();
    if (total == 0) return out;
    long chains = Math.max(1, Math.min(tasks, total));
    List<OffsetRange> chain = new ArrayList<>();
    long done = 0;
    for (OffsetRange r : ranges) {
      long from = r.from;
      while (from < r.until) {
        long chainEnd = total * (out.size() + 1) / chains;
        long take = Math.min(r.until - from, chainEnd - done);
        chain.add(new OffsetRange(r.topic, r.partition, from, from + take));
        from += take;
        done += take;
        if (done == chainEnd) {
          out.add(chain.toArray(new OffsetRange[0]));
          chain.clear();
        }
      }
    }
    return out;
  }

  @Override
  public String toString() {
    return (vp == VirtualRange.ALL ? "every vp of " : "") + Arrays.toString(ranges);
  }
}
