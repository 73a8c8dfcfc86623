package io.kplex.spark.read;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.metric.CustomTaskMetric;
import org.apache.spark.sql.connector.read.PartitionReader;

/**
 * Reads a {@link RangeChain}'s ranges one after another, each with its own {@link
 * KplexPartitionReader}: one consumer borrowed at a time, given back as soon as its range
 * is read. Each range's records come in offset order, as from one task per range.
 */
final class ChainedReader implements PartitionReader<InternalRow> {
  private final ReadConf conf;
  private final RangeChain chain;
  private final int[] columns;
  /** The next range to open. */
  private int next;
  private KplexPartitionReader current;
  /** Records the readers already closed read. */
  private long readBefore;

  ChainedReader(ReadConf conf, RangeChain chain, int[] columns) {
    this.conf = conf;
    this.chain = chain;
    this.columns = columns;
  }

  @Override
  public boolean next() {
    while (true) {
      if (current != null) {
        if (current.next()) return true;
        readBefore += current.read();
        current.close();
        current = null;
      }
      if (next == chain.ranges.length) return false;
      current = new KplexPartitionReader(conf, chain.ranges[next++], chain.vp, columns);
    }
  }

  @Override
  public InternalRow get() {
    return current.get();
  }

  @Override
  public CustomTaskMetric[] currentMetricsValues() {
    return ReadMetrics.values(readBefore + (current == null ? 0 : current.read()), 0, 0);
  }

  @Override
  public void close() {
    if (current != null) {
      current.close();
      current = null;
    }
  }
}
