package io.kplex.spark.write;

import io.kplex.spark.time.EventTime;
import io.kplex.spark.txn.ReadByOthers;
import java.io.Serializable;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What a streaming epoch's tasks start from, shipped to the executors: the marks of the
 * epochs before ({@link EventTime.Marks}), the source's partitions whose watermark releases
 * (and its topic, for late records' headers), whether the epoch releases everything (a
 * flush requested at the end of the input), the files held back by the last epoch, and
 * the range of offsets the epoch reads per source partition ({@code starts} to {@code ends};
 * empty: unknown), which every row a task gets must lie in ({@link #outside}), and which of
 * the partitions are idle (they do not hold the watermark: {@link EventTime.Marks#watermark}).
 * {@code readBefore}: the offsets of the source that other writers of the table read (a record
 * there at or below what its virtual partition holds was already written: {@link #readBefore}).
 */
record EpochStart(long lastEpoch, EventTime.Marks marks, int[] partitions, String sourceTopic, boolean releaseAll,
    List<String> held, Map<Integer, Long> starts, Map<Integer, Long> ends, int[] idle,
    ReadByOthers readBefore) implements Serializable {
  EpochStart {
    starts = new TreeMap<>(starts);
    ends = new TreeMap<>(ends);
  }

  EpochStart(long lastEpoch, EventTime.Marks marks, int[] partitions, String sourceTopic, boolean releaseAll,
      List<String> held, Map<Integer, Long> starts, Map<Integer, Long> ends, int[] idle) {
    this(lastEpoch, marks, partitions, sourceTopic, releaseAll, held, starts, ends, idle, ReadByOthers.NONE);
  }

  /** An epoch whose source gave no ranges: its rows are not checked. */
  EpochStart(long lastEpoch, EventTime.Marks marks, int[] partitions, String sourceTopic, boolean releaseAll,
      List<String> held) {
    this(lastEpoch, marks, partitions, sourceTopic, releaseAll, held, Map.of(), Map.of(), new int[0]);
  }

  /**
   * Whether a row from offset {@code offset} of source partition {@code partition} lies
   * outside what the epoch reads (false when the ranges are unknown). A row outside would
   * move its partition's high past what was read, and the watermark with it.
   */
  boolean outside(int partition, long offset) {
    if (starts.isEmpty()) return false;
    Long from = starts.get(partition);
    Long until = ends.get(partition);
    return from == null || until == null || offset < from || offset >= until;
  }

  /**
   * Whether another writer of the table (another query's stream, or an INSERT) read the record
   * at {@code offset} of source partition {@code partition} (of the same topic), of order value
   * {@code order} for virtual partition {@code vp}, and it was that writer's to write (not one a
   * stream held back: {@link ReadByOthers}): then, if its order value is not above what its
   * virtual partition holds, it was written already (or was late then), and is skipped, not
   * written twice nor counted late (docs/contract.md, G3 across writers).
   */
  boolean readBefore(int partition, long offset, int vp, long order) {
    return readBefore.wrote(partition, offset, vp, order);
  }

  /** The range epoch reads of {@code partition}, for an error: "[from, until)", or "none". */
  String range(int partition) {
    Long from = starts.get(partition);
    Long until = ends.get(partition);
    return from == null || until == null ? "none" : "[" + from + ", " + until + ")";
  }
}
