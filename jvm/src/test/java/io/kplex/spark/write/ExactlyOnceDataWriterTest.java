package io.kplex.spark.write;

import static io.kplex.spark.write.WriterFixture.conf;
import static io.kplex.spark.write.WriterFixture.row;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertSame;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.txn.TaskTransaction;
import io.kplex.spark.txn.TransactionalIds;
import io.kplex.spark.wire.Placement;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.junit.Test;

/**
 * The exactly-once writer against Kafka's MockProducer: the task's transaction opens in the
 * background, takes the task's records, and is flushed and left open for the driver; a
 * fenced producer, a failed send and an abort each end the task as they should.
 */
public class ExactlyOnceDataWriterTest {
  private final WriterFixture.Clients clients = new WriterFixture.Clients();
  private final WriterFixture.Producing producer = clients.producer;

  private KplexDataWriter writer(String... options) {
    WriteConf conf = conf(options);
    return new ExactlyOnceDataWriter(conf, WriterFixture.codec(conf), 3, 0, 1, null, clients, null);
  }

  @Test
  public void theTaskWritesIntoATransactionOfItsOwnLeftOpenForTheDriver() throws Exception {
    KplexDataWriter w = writer();
    w.write(row("a", 5L, "v"));
    w.write(row("a", 9L, "v"));
    KplexCommitMessage m = (KplexCommitMessage) w.commit();
    String id = TransactionalIds.of(WriterFixture.TOPIC, 3, 0, 1);
    assertEquals(id, clients.settings.get(ProducerConfig.TRANSACTIONAL_ID_CONFIG));
    assertTrue(clients.settings.containsKey(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG));
    TaskTransaction txn = m.txn;
    assertEquals(id, txn.id());
    int vp = Placement.virtualPartition("a".getBytes(StandardCharsets.UTF_8), 4);
    assertEquals(Map.of(vp, 9L), txn.highs());
    assertEquals(1, producer.flushes);
    assertTrue("left open", producer.transactionInFlight());
    assertFalse(producer.transactionCommitted());
    w.close();
    assertEquals("closed at once: a graceful close would abort it", List.of(Duration.ZERO), producer.closes);
    assertFalse(producer.transactionAborted());
  }

  @Test
  public void aVirtualPartitionOfOnlyTheLowestOrderIsInTheTransaction() throws Exception {
    KplexDataWriter w = writer("kplex.null_order", "first");
    w.write(row("a", null, "v"));
    TaskTransaction txn = ((KplexCommitMessage) w.commit()).txn;
    int vp = Placement.virtualPartition("a".getBytes(StandardCharsets.UTF_8), 4);
    assertEquals("a commit cut short names it among the virtual partitions to write again",
        Map.of(vp, Long.MIN_VALUE), txn.highs());
    w.close();
  }

  @Test
  public void aVirtualPartitionWhoseOnlyRowsWentToTheLateTopicIsInTheTransaction() throws Exception {
    WriteConf conf = conf("kplex.late_policy", "side_topic", "kplex.late_topic", "late");
    int vp = Placement.virtualPartition("a".getBytes(StandardCharsets.UTF_8), 4);
    KplexDataWriter w = new ExactlyOnceDataWriter(conf, WriterFixture.codec(conf), 3, 0, 1, Map.of(vp, 100L), clients, null);
    w.write(row("a", 5L, "late"));
    TaskTransaction txn = ((KplexCommitMessage) w.commit()).txn;
    assertEquals(Map.of(vp, Long.MIN_VALUE), txn.highs());
    w.close();
  }

  @Test
  public void aTaskThatSentNothingHandsTheDriverNoTransaction() throws Exception {
    KplexDataWriter w = writer("kplex.null_key", "drop");
    w.write(row(null, 1L, "dropped"));
    KplexCommitMessage m = (KplexCommitMessage) w.commit();
    assertNull(m.txn);
    assertEquals(1, m.dropped);
    w.close();
    assertEquals(List.of(Duration.ZERO), producer.closes);
  }

  @Test(timeout = 30_000)
  public void aTaskWithNoRowsCommitsWithoutWaitingForItsTransaction() throws Exception {
    producer.initGate = new CountDownLatch(1);  // the transaction is still opening throughout
    KplexDataWriter w = writer();
    assertNull(((KplexCommitMessage) w.commit()).txn);
    producer.initGate.countDown();
    w.close();
    assertEquals(List.of(Duration.ZERO), producer.closes);
  }

  @Test
  public void aProducerFencedAtBeginFailsTheFirstWriteAndEveryCallAfter() throws Exception {
    ProducerFencedException fenced = new ProducerFencedException("a newer producer took the id");
    producer.beginTransactionException = fenced;
    KplexDataWriter w = writer();
    assertSame(fenced, assertThrows(ProducerFencedException.class, () -> w.write(row("a", 1L, "v"))));
    assertSame(fenced, assertThrows(ProducerFencedException.class, () -> w.write(row("b", 1L, "v"))));
    assertSame(fenced, assertThrows(ProducerFencedException.class, w::commit));
    w.abort();
    w.close();
    assertTrue(producer.history().isEmpty());
    assertEquals("never opened: nothing to wait for", List.of(Duration.ZERO), producer.closes);
  }

  @Test
  public void aTransactionalIdThePrincipalMayNotUseIsNamed() {
    producer.initTransactionException = new TransactionalIdAuthorizationException("Transactional Id authorization failed.");
    KplexDataWriter w = writer();
    KplexException e = assertThrows(KplexException.class, () -> w.write(row("a", 1L, "v")));
    assertEquals("NOT_AUTHORIZED", e.code());
    assertTrue(e.getMessage(), e.getMessage().contains(TransactionalIds.of(WriterFixture.TOPIC, 3, 0, 1)));
  }

  @Test
  public void aSendFencedAtCommitFailsTheTaskAsFenced() throws Exception {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    producer.failOnFlush = new ProducerFencedException("fenced");
    KplexException e = assertThrows(KplexException.class, w::commit);
    assertEquals("TASK_FENCED", e.code());
    assertTrue(e.getMessage(), e.getMessage().contains(TransactionalIds.of(WriterFixture.TOPIC, 3, 0, 1)));
  }

  @Test
  public void aFailedSendFailsTheNextWriteAndAbortEndsTheTransaction() throws Exception {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    producer.errorNext(new NetworkException("first"));
    KplexException e = assertThrows(KplexException.class, () -> w.write(row("b", 2L, "v")));
    assertEquals("SEND_FAILED", e.code());
    w.abort();
    assertTrue(producer.transactionAborted());
    w.close();
    assertEquals("what was sent is waited for", List.of(KplexDataWriter.CLOSE_GRACE), producer.closes);
  }

  @Test
  public void anAbortKafkaRefusesIsLeftToTheDriver() throws Exception {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    producer.abortTransactionException = new ProducerFencedException("fenced");
    w.abort();
    assertEquals("asked once, refused, and not thrown", 1, producer.aborts);
    w.close();
    assertEquals(1, producer.closes.size());
  }
}
