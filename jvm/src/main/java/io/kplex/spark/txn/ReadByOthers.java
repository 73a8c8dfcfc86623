package io.kplex.spark.txn;

import io.kplex.spark.time.EventTime;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What other writers of a table read of a source, and which of those records that makes theirs
 * to have written ({@link CommitLog#readByOthers}). The table's INSERTs wrote (or judged late)
 * every record they read ({@code inserts}), as a stream that held nothing back when it stopped. A stream read everything below where its last epoch
 * stopped, but wrote only what it released: a record it held back is at or above the bound it
 * released below, so above what it had written to the record's virtual partition. So a record
 * a stream that stopped holding records read counts as its only where its order value is not
 * above what that stream's last mark says it wrote there ({@link Stream#written}). (A record it
 * judged late behind its partition above that counts as not read by it: another writer may
 * write it, in order.)
 */
public final class ReadByOthers implements Serializable {
  /** Nothing read by another writer. */
  public static final ReadByOthers NONE = new ReadByOthers(OffsetRanges.NONE, List.of());

  /** What a stream read ({@code ranges}), and per virtual partition what it had written ({@link EventTime.Marks#EVERY_VP}: all). */
  private record Stream(OffsetRanges ranges, Map<Integer, Long> written) implements Serializable {
    boolean wrote(int partition, long offset, int vp, long order) {
      long cap = Math.max(written.getOrDefault(vp, Long.MIN_VALUE), written.getOrDefault(EventTime.Marks.EVERY_VP, Long.MIN_VALUE));
      return order <= cap && ranges.contains(partition, offset);
    }
  }

  private final OffsetRanges inserts;
  private final List<Stream> streams;

  private ReadByOthers(OffsetRanges inserts, List<Stream> streams) {
    this.inserts = inserts;
    this.streams = List.copyOf(streams);
  }

  /** These reads and what the table's INSERTs read ({@code ranges}). */
  public ReadByOthers withInserts(OffsetRanges ranges) {
    return ranges.isEmpty() ? this : new ReadByOthers(inserts.union(ranges), streams);
  }

  /**
   * These reads and what a stream whose last mark's marks are {@code marks} read ({@code ranges});
   * null {@code marks}: a stream that held nothing back when it stopped, which wrote (or judged
   * late) all it read.
   */
  public ReadByOthers withStream(OffsetRanges ranges, EventTime.Marks marks) {
    if (marks == null) return withInserts(ranges);
    if (ranges.isEmpty()) return this;
    List<Stream> more = new ArrayList<>(streams);
    more.add(new Stream(ranges, new HashMap<>(marks.written())));
    return new ReadByOthers(inserts, more);
  }

  public boolean isEmpty() {
    return inserts.isEmpty() && streams.isEmpty();
  }

  /**
   * Whether another writer read the record at {@code offset} of source partition
   * {@code partition} and it was theirs to write: one of order value {@code order} for virtual
   * partition {@code vp} (the caller checks it is not above what the virtual partition holds).
   */
  public boolean wrote(int partition, long offset, int vp, long order) {
    if (inserts.contains(partition, offset)) return true;
    for (Stream s : streams) {
      if (s.wrote(partition, offset, vp, order)) return true;
    }
    return false;
  }

  /** Every offset read by another writer, whatever its order value (for logs and tests). */
  public OffsetRanges ranges() {
    OffsetRanges out = inserts;
    for (Stream s : streams) out = out.union(s.ranges);
    return out;
  }

  @Override
  public String toString() {
    return ranges().toString();
  }
}
