package io.kplex.spark.write;

import static io.kplex.spark.write.WriterFixture.conf;
import static io.kplex.spark.write.WriterFixture.row;
import static io.kplex.spark.write.WriterFixture.text;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.wire.KplexHeaders;
import io.kplex.spark.wire.Placement;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.NetworkException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.header.Header;
import org.junit.Test;

/**
 * The at-least-once writer against Kafka's MockProducer: what it sends, and how a failed
 * send ends the task (the callback records the first failure, write fails fast on it,
 * commit checks, flushes and checks again). It never opens a transaction.
 */
public class AtLeastOnceDataWriterTest {
  private final WriterFixture.Clients clients = new WriterFixture.Clients();
  private final WriterFixture.Producing producer = clients.producer;

  private KplexDataWriter writer(String... options) {
    WriteConf conf = conf(options);
    return KplexDataWriter.open(conf, WriterFixture.codec(conf), 1, 0, 0, null, clients);
  }

  private KplexDataWriter writer() {
    return writer("kplex.delivery", "at_least_once");
  }

  private static KplexDataWriter writerOf(String... options) {
    WriteConf conf = conf(options);
    return KplexDataWriter.open(conf, WriterFixture.codec(conf), 1, 0, 0, null, new WriterFixture.Clients());
  }

  @Test
  public void theDeliveryChoosesTheWritersType() {
    assertTrue(writerOf("kplex.delivery", "at_least_once") instanceof AtLeastOnceDataWriter);
    assertTrue(writerOf("kplex.delivery", "exactly_once") instanceof ExactlyOnceDataWriter);
    assertTrue("the default", writerOf() instanceof ExactlyOnceDataWriter);
  }

  @Test
  public void aRowIsSentToItsPhysicalPartitionWithKplexHeadersAndItsOwn() {
    KplexDataWriter w = writer();
    w.write(row("alice", 42L, "v1", "trace", "x", "kplex.vp", "99", null, "nameless"));
    ProducerRecord<byte[], byte[]> sent = producer.history().get(0);
    byte[] key = "alice".getBytes(StandardCharsets.UTF_8);
    int vp = Placement.virtualPartition(key, 4);
    assertEquals(WriterFixture.TOPIC, sent.topic());
    assertEquals(Integer.valueOf(Placement.physicalPartition(vp, 2)), sent.partition());
    assertArrayEquals(key, sent.key());
    assertEquals("v1", text(sent.value()));
    assertNull("a BIGINT order is no timestamp", sent.timestamp());
    List<String> headers = new ArrayList<>();
    for (Header h : sent.headers()) headers.add(h.key() + "=" + text(h.value()));
    assertEquals(List.of("trace=x", "kplex.vp=" + vp, "kplex.order=42"), headers);
    assertEquals(Integer.valueOf(vp), KplexHeaders.vp(sent.headers()));
  }

  @Test
  public void itNeverOpensATransaction() throws Exception {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    KplexCommitMessage m = (KplexCommitMessage) w.commit();
    w.abort();
    w.close();
    assertFalse(producer.transactionInitialized());
    assertFalse(producer.transactionInFlight());
    assertFalse(clients.settings.containsKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG));
    assertNull(m.txn);
  }

  @Test
  public void commitFlushesAndReportsWhatWasWrittenWhere() throws Exception {
    KplexDataWriter w = writer();
    w.write(row("a", 5L, "v"));
    w.write(row("a", 7L, "v"));
    KplexCommitMessage m = (KplexCommitMessage) w.commit();
    int vp = Placement.virtualPartition("a".getBytes(StandardCharsets.UTF_8), 4);
    int p = Placement.physicalPartition(vp, 2);
    assertEquals(1, producer.flushes);
    assertEquals(1, m.partitionId);
    assertEquals(2, m.rowsPerVp[vp]);
    assertEquals(7L, m.highs[vp]);
    assertEquals("offsets 0 and 1 acknowledged on its physical partition", 1L, m.lastOffsets[p]);
    assertEquals(-1L, m.lastOffsets[1 - p]);
    w.close();
    assertEquals(List.of(KplexDataWriter.CLOSE_GRACE), producer.closes);
  }

  @Test
  public void theFirstFailedSendFailsTheNextWriteAtOnce() {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    w.write(row("b", 2L, "v"));
    producer.errorNext(new RecordTooLargeException("first"));
    producer.errorNext(new NetworkException("second"));
    KplexException e = assertThrows(KplexException.class, () -> w.write(row("c", 3L, "v")));
    assertEquals("SEND_FAILED", e.code());
    assertEquals("first", e.getCause().getMessage());
    assertEquals("the failing write sent nothing", 2, producer.history().size());
  }

  @Test
  public void commitChecksBeforeFlushing() {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    producer.errorNext(new NetworkException("lost"));
    KplexException e = assertThrows(KplexException.class, w::commit);
    assertEquals("SEND_FAILED", e.code());
    assertEquals(0, producer.flushes);
  }

  @Test
  public void commitChecksAgainAfterFlushing() {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    producer.failOnFlush = new NetworkException("lost while flushing");
    KplexException e = assertThrows(KplexException.class, w::commit);
    assertEquals("SEND_FAILED", e.code());
    assertEquals(1, producer.flushes);
  }

  @Test
  public void aFencedSendIsJustAFailedSendWithoutATransaction() {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    producer.errorNext(new ProducerFencedException("fenced"));
    assertEquals("SEND_FAILED", assertThrows(KplexException.class, w::commit).code());
  }

  @Test
  public void aRefusedTopicNamesTheAccessItLacks() {
    KplexDataWriter w = writer();
    w.write(row("a", 1L, "v"));
    producer.errorNext(new TopicAuthorizationException(java.util.Set.of(WriterFixture.TOPIC)));
    KplexException e = assertThrows(KplexException.class, () -> w.write(row("b", 1L, "v")));
    assertEquals("NOT_AUTHORIZED", e.code());
    assertEquals("WRITE", e.getMessageParameters().get("operation"));
    assertEquals(WriterFixture.TOPIC, e.getMessageParameters().get("resource"));
    assertTrue(e.getMessageParameters().toString(), e.getMessageParameters().containsKey("principal"));
  }
}
