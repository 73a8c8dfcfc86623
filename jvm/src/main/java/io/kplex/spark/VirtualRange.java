package io.kplex.spark;

import java.util.Arrays;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One virtual partition as a Spark input partition: where to read it. For a
 * kplex-written table one range (its physical partition vp % P); for a read-time table
 * every partition of the source, merged.
 */
final class VirtualRange implements InputPartition {
  final int vp;
  final OffsetRange[] sources;

  VirtualRange(int vp, OffsetRange[] sources) {
    this.vp = vp;
    this.sources = sources;
  }

  @Override
  public String toString() {
    return "vp " + vp + " of " + Arrays.toString(sources);
  }
}
