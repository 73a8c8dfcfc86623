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
  final long late;

  EpochCommitMessage(KplexCommitMessage written, String heldFile, long held, long maxSeen, long maxReleased,
      long late) {
    this.written = written;
    this.heldFile = heldFile;
    this.held = held;
    this.maxSeen = maxSeen;
    this.maxReleased = maxReleased;
    this.late = late;
  }
}
