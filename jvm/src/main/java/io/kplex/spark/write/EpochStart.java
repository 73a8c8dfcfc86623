package io.kplex.spark.write;

import io.kplex.spark.time.EventTime;
import java.io.Serializable;
import java.util.List;

/**
 * What a streaming epoch's tasks start from, shipped to the executors: the marks of the
 * epochs before ({@link EventTime.Marks}), the source's partitions whose watermark releases
 * (and its topic, for late records' headers), whether the epoch releases everything (a
 * flush requested at the end of the input), and the files held back by the last epoch.
 */
record EpochStart(long lastEpoch, EventTime.Marks marks, int[] partitions, String sourceTopic, boolean releaseAll,
    List<String> held) implements Serializable {}
