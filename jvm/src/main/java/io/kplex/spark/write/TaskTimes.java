package io.kplex.spark.write;

/**
 * Where a streaming write task's time goes, in ms, reported per micro-batch as the largest
 * over its tasks (the tasks run side by side, so the slowest one sets the batch's pace).
 */
final class TaskTimes {
  private TaskTimes() {}

  /** The figures' names in the query's progress (sink metrics), in the order of the array. */
  static final String[] NAMES = {"taskHeldReadMs", "taskSortMs", "taskWriteMs", "taskCommitMs"};
  static final int HELD_READ = 0;
  static final int SORT = 1;
  static final int WRITE = 2;
  static final int COMMIT = 3;

  static long[] none() {
    return new long[NAMES.length];
  }

  static long ms(long fromNanos, long toNanos) {
    return Math.max(0, (toNanos - fromNanos) / 1_000_000);
  }

  /** Each figure's largest value over the tasks. */
  static void max(long[] into, long[] task) {
    if (task == null) return;
    for (int i = 0; i < into.length; i++) into[i] = Math.max(into[i], task[i]);
  }
}
