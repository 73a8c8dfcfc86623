package io.kplex.spark.write;

import io.kplex.spark.txn.OffsetRanges;
import java.util.Arrays;

/**
 * What one task of a batch write read of its source, per source partition: the smallest and
 * the largest offset of its rows. A batch read covers one range of offsets per partition, so
 * the ranges of all tasks joined are what the write read (less what a filter took out before
 * the write, which the write then counts as read: it chose not to write it).
 */
final class SourceReads {
  private long[] from = new long[0];
  private long[] to = new long[0];

  void add(int partition, long offset) {
    if (partition < 0) return;
    if (partition >= from.length) {
      int was = from.length;
      from = Arrays.copyOf(from, partition + 1);
      to = Arrays.copyOf(to, partition + 1);
      Arrays.fill(from, was, from.length, Long.MAX_VALUE);
      Arrays.fill(to, was, to.length, Long.MIN_VALUE);
    }
    if (offset < from[partition]) from[partition] = offset;
    if (offset > to[partition]) to[partition] = offset;
  }

  /** The ranges read, {@code [smallest, largest + 1)} per partition. */
  OffsetRanges ranges() {
    OffsetRanges out = OffsetRanges.NONE;
    for (int p = 0; p < from.length; p++) {
      if (from[p] <= to[p]) out = out.with(p, from[p], to[p] + 1);
    }
    return out;
  }
}
