package io.kplex.spark.txn;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Offsets of one source topic that a writer of a table read, per partition, as sorted
 * disjoint ranges {@code [from, until)}: what a stream's epochs read up to (from 0 to where it
 * stopped), or what a table's batch INSERTs read (each one range per partition, adjacent ones
 * joined). A record another writer read is one a query need not write again
 * ({@link io.kplex.spark.time.EventTimeGate}, docs/contract.md, G3 across writers). Immutable.
 */
public final class OffsetRanges implements Serializable {
  public static final OffsetRanges NONE = new OffsetRanges(new TreeMap<>());

  /** Per partition, {@code from0, until0, from1, until1, ...}, sorted, disjoint and not adjacent. */
  private final TreeMap<Integer, long[]> ranges;

  private OffsetRanges(TreeMap<Integer, long[]> ranges) {
    this.ranges = ranges;
  }

  /** Per partition, every offset below {@code ends} (a stream that read from the start up to them). */
  public static OffsetRanges below(Map<Integer, Long> ends) {
    OffsetRanges out = NONE;
    for (Map.Entry<Integer, Long> e : ends.entrySet()) out = out.with(e.getKey(), 0, e.getValue());
    return out;
  }

  /** These ranges and {@code [from, until)} of {@code partition}. */
  public OffsetRanges with(int partition, long from, long until) {
    if (from >= until) return this;
    return union(new OffsetRanges(new TreeMap<>(Map.of(partition, new long[] {from, until}))));
  }

  /** Both sets of ranges, overlapping and adjacent ranges joined. */
  public OffsetRanges union(OffsetRanges other) {
    if (other.ranges.isEmpty()) return this;
    if (ranges.isEmpty()) return other;
    TreeMap<Integer, long[]> out = new TreeMap<>(ranges);
    other.ranges.forEach((p, r) -> out.merge(p, r, OffsetRanges::join));
    return new OffsetRanges(out);
  }

  private static long[] join(long[] a, long[] b) {
    List<long[]> all = new ArrayList<>();
    for (int i = 0; i < a.length; i += 2) all.add(new long[] {a[i], a[i + 1]});
    for (int i = 0; i < b.length; i += 2) all.add(new long[] {b[i], b[i + 1]});
    all.sort((x, y) -> Long.compare(x[0], y[0]));
    long[] out = new long[all.size() * 2];
    int n = 0;
    for (long[] r : all) {
      if (n > 0 && r[0] <= out[n - 1]) {
        out[n - 1] = Math.max(out[n - 1], r[1]);
      } else {
        out[n++] = r[0];
        out[n++] = r[1];
      }
    }
    return Arrays.copyOf(out, n);
  }

  /** Whether {@code offset} of {@code partition} lies in a range. */
  public boolean contains(int partition, long offset) {
    long[] r = ranges.get(partition);
    if (r == null) return false;
    int lo = 0;
    int hi = r.length / 2 - 1;
    while (lo <= hi) {  // the last range that starts at or below offset
      int mid = (lo + hi) >>> 1;
      if (r[2 * mid] <= offset) lo = mid + 1; else hi = mid - 1;
    }
    return hi >= 0 && offset < r[2 * hi + 1];
  }

  public boolean isEmpty() {
    return ranges.isEmpty();
  }

  /** As JSON: {@code {"0": [[from, until], ...], ...}}. */
  void writeTo(ObjectNode node) {
    ranges.forEach((p, r) -> {
      var list = node.putArray(Integer.toString(p));
      for (int i = 0; i < r.length; i += 2) list.addArray().add(r[i]).add(r[i + 1]);
    });
  }

  /** From {@link #writeTo}'s JSON: each partition's ranges sorted and joined once. */
  static OffsetRanges from(JsonNode node) {
    TreeMap<Integer, long[]> out = new TreeMap<>();
    var fields = node.fields();
    while (fields.hasNext()) {
      var e = fields.next();
      long[] read = new long[2 * e.getValue().size()];
      int n = 0;
      for (JsonNode r : e.getValue()) {
        if (r.get(0).asLong() >= r.get(1).asLong()) continue;
        read[n++] = r.get(0).asLong();
        read[n++] = r.get(1).asLong();
      }
      if (n > 0) out.put(Integer.parseInt(e.getKey()), join(Arrays.copyOf(read, n), new long[0]));
    }
    return new OffsetRanges(out);
  }

  /** A gap between two ranges of a partition: offsets {@code [from, until)} in neither. */
  public record Gap(int partition, long from, long until) {}

  /**
   * The gaps of these ranges next to a range that holds one of {@code fresh}'s (what was just
   * added to them), of at most {@code maxGap} offsets: those a new read may have left between
   * itself and the reads before it.
   */
  public List<Gap> gapsBeside(OffsetRanges fresh, long maxGap) {
    List<Gap> out = new ArrayList<>();
    fresh.ranges.forEach((p, added) -> {
      long[] r = ranges.get(p);
      if (r == null) return;
      java.util.Set<Long> seen = new java.util.HashSet<>();
      for (int a = 0; a < added.length; a += 2) {
        for (int i = 0; i < r.length; i += 2) {
          if (added[a] < r[i] || added[a] >= r[i + 1]) continue;  // the range that holds it
          if (i > 0 && r[i] - r[i - 1] <= maxGap && seen.add(r[i - 1])) out.add(new Gap(p, r[i - 1], r[i]));
          if (i + 2 < r.length && r[i + 2] - r[i + 1] <= maxGap && seen.add(r[i + 1])) {
            out.add(new Gap(p, r[i + 1], r[i + 2]));
          }
        }
      }
    });
    return out;
  }

  @Override
  public boolean equals(Object o) {
    if (!(o instanceof OffsetRanges other) || !ranges.keySet().equals(other.ranges.keySet())) return false;
    for (Map.Entry<Integer, long[]> e : ranges.entrySet()) {
      if (!Arrays.equals(e.getValue(), other.ranges.get(e.getKey()))) return false;
    }
    return true;
  }

  @Override
  public int hashCode() {
    int h = ranges.keySet().hashCode();
    for (long[] r : ranges.values()) h = 31 * h + Arrays.hashCode(r);
    return h;
  }

  /** E.g. {@code 0:[0,120) 1:[0,40) [90,200)}. */
  @Override
  public String toString() {
    if (ranges.isEmpty()) return "none";
    StringBuilder s = new StringBuilder();
    ranges.forEach((p, r) -> {
      if (s.length() > 0) s.append(' ');
      s.append(p).append(':');
      for (int i = 0; i < r.length; i += 2) s.append(i > 0 ? " [" : "[").append(r[i]).append(',').append(r[i + 1]).append(')');
    });
    return s.toString();
  }
}
