package io.kplex.spark.read;

import java.util.Arrays;
import org.apache.spark.sql.connector.read.InputPartition;

/**
 * One virtual partition as a Spark input partition: where to read it. For a
 * kplex-written table one range (its physical partition vp % P); for a read-time table
 * every partition of the source, merged.
 */
final class VirtualRange implements InputPartition {
  /** Every virtual partition of a kplex-written range (a streaming read by physical partition). */
  static final int ALL = -2;
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
