package io.kplex.spark.txn;

import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.InvalidPidMappingException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.UnknownProducerIdException;

/**
 * Why committing a task's transaction failed, each kind handled on purpose (as Flink's
 * {@code KafkaCommitter} does): what the driver does about it, and what the error says.
 */
public enum CommitFailure {
  /** A broker was briefly unable (leader moving, coordinator loading): try again. */
  RETRIABLE("COMMIT_RETRIABLE"),
  /** No answer in time: try again until the commit's deadline. */
  TIMED_OUT("COMMIT_TIMED_OUT"),
  /**
   * Kafka bumped the producer epoch and aborted the transaction: its writer's claim was taken
   * over (see {@link WriterLease}), `kplex recover` fenced it, or it outlived its timeout.
   */
  FENCED("COMMIT_FENCED"),
  /** The broker no longer knows the transaction: it outlived transaction.timeout.ms and was aborted. */
  UNKNOWN_PRODUCER("COMMIT_EXPIRED"),
  /** The principal may not write with this transactional id. */
  NOT_AUTHORIZED("NOT_AUTHORIZED"),
  /** Anything else. */
  OTHER("COMMIT_FAILED");

  /**
   * The error code ({@code [KPLEX_<code>]}) the write fails with: its condition's
   * {@code TRANSACTION} templates say what happened.
   */
  public final String code;

  CommitFailure(String code) {
    this.code = code;
  }

  /** Whether the transaction is gone for good: Kafka aborted it, nobody can commit it any more. */
  public boolean aborted() {
    return this == FENCED || this == UNKNOWN_PRODUCER;
  }

  /** Whether the driver tries again with a fresh producer: only for transient failures. */
  public boolean retry() {
    return this == RETRIABLE || this == TIMED_OUT;
  }

  /** The kind of a failure thrown by resuming and committing a transaction. */
  public static CommitFailure of(Throwable e) {
    if (e instanceof ProducerFencedException || e instanceof InvalidProducerEpochException) return FENCED;
    if (e instanceof UnknownProducerIdException || e instanceof InvalidPidMappingException
        || e instanceof InvalidTxnStateException) return UNKNOWN_PRODUCER;
    if (e instanceof AuthorizationException) return NOT_AUTHORIZED;
    if (e instanceof TimeoutException) return TIMED_OUT;
    if (e instanceof RetriableException) return RETRIABLE;
    return OTHER;
  }
}
