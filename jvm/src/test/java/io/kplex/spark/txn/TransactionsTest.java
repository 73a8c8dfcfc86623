package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;

import java.util.List;
import org.apache.kafka.common.errors.CoordinatorLoadInProgressException;
import org.apache.kafka.common.errors.InvalidPidMappingException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.errors.UnknownProducerIdException;
import org.junit.Test;

/** The pure parts of the exactly-once committer: ids, the commit log record, failure kinds. */
public class TransactionsTest {
  @Test
  public void everyAttemptOfEveryTaskHasItsOwnIdUnderTheTablesPrefix() {
    assertEquals("kplex.pageviews_by_user.3.1.2", TransactionalIds.of("pageviews_by_user", 3, 1, 2));
    assertTrue(TransactionalIds.belongsTo("t", TransactionalIds.of("t", 0, 0, 0)));
    assertFalse("another table's", TransactionalIds.belongsTo("t", TransactionalIds.of("u", 0, 0, 0)));
    assertFalse("a table whose name starts like this one's",
        TransactionalIds.belongsTo("a", TransactionalIds.of("a.b", 0, 0, 0)));
    assertFalse(TransactionalIds.belongsTo("a", "kplex.a.x"));
  }

  @Test
  public void aPendingCommitReadsBackAsWritten() {
    List<TaskTransaction> txns = List.of(new TaskTransaction("kplex.t.0.0.0", 17, (short) 0),
        new TaskTransaction("kplex.t.1.0.1", 4_000_000_000L, Short.MAX_VALUE));
    CommitLog.Pending pending = CommitLog.fromJson(CommitLog.toJson("t", "query-1", txns));
    assertEquals("t", pending.table);
    assertEquals("query-1", pending.query);
    assertEquals(txns, pending.transactions);
  }

  @Test
  public void eachFailureKindIsTellApartAndOnlyTransientOnesAreRetried() {
    assertEquals(CommitFailure.FENCED, CommitFailure.of(new ProducerFencedException("x")));
    assertEquals(CommitFailure.FENCED, CommitFailure.of(new InvalidProducerEpochException("x")));
    assertEquals(CommitFailure.UNKNOWN_PRODUCER, CommitFailure.of(new UnknownProducerIdException("x")));
    assertEquals(CommitFailure.UNKNOWN_PRODUCER, CommitFailure.of(new InvalidPidMappingException("x")));
    assertEquals(CommitFailure.UNKNOWN_PRODUCER, CommitFailure.of(new InvalidTxnStateException("x")));
    assertEquals(CommitFailure.NOT_AUTHORIZED, CommitFailure.of(new TransactionalIdAuthorizationException("x")));
    assertEquals(CommitFailure.TIMED_OUT, CommitFailure.of(new TimeoutException("x")));
    assertEquals(CommitFailure.RETRIABLE, CommitFailure.of(new CoordinatorLoadInProgressException("x")));
    assertEquals(CommitFailure.RETRIABLE, CommitFailure.of(new NotEnoughReplicasException("x")));
    assertEquals(CommitFailure.OTHER, CommitFailure.of(new IllegalStateException("x")));
    for (CommitFailure kind : CommitFailure.values()) {
      assertEquals(kind.name(), kind == CommitFailure.RETRIABLE || kind == CommitFailure.TIMED_OUT, kind.retry());
    }
  }
}
