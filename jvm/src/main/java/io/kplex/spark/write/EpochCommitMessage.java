package io.kplex.spark.write;

import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** What a task of a streaming epoch reports: the batch write's message, and its hold-back figures. */
final class EpochCommitMessage implements WriterCommitMessage {
  /** The batch write's message, or null for a task of an epoch that was already committed. */
  final KplexCommitMessage written;
  /** The file of the records the task holds back, or null. */
  final String heldFile;
  final long held;
  final long maxSeen;
  final long maxReleased;
  /** Every record below this order value that the task had was released (written or late). */
  final long releasedBelow;
  final long late;
  /**
   * Where the task's time went, in ms ({@link TaskTimes}): reading the held-back records,
   * waiting for its first row (Spark's shuffle read and sort), taking its rows in (and
   * sending those released at once), and its commit (releasing, holding back, flushing).
   */
  final long[] times;

  EpochCommitMessage(KplexCommitMessage written, String heldFile, long held, long maxSeen, long maxReleased,
      long releasedBelow, long late, long[] times) {
    this.written = written;
    this.heldFile = heldFile;
    this.held = held;
    this.maxSeen = maxSeen;
    this.maxReleased = maxReleased;
    this.releasedBelow = releasedBelow;
    this.late = late;
    this.times = times;
  }
}
