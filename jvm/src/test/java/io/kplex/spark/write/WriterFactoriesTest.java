package io.kplex.spark.write;

import static io.kplex.spark.write.WriterFixture.conf;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.time.EventTime;
import io.kplex.spark.time.ManualClock;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.write.DataWriter;
import org.junit.Test;

/**
 * The writer factories: shipped to the executors (serializable, with the real Kafka clients
 * and clock by default), and each task's writer of the write's delivery, made from the
 * clients they carry.
 */
public class WriterFactoriesTest {
  private static Object roundTrip(Object o) throws Exception {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
      out.writeObject(o);
    }
    try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
      return in.readObject();
    }
  }

  private static EpochStart start() {
    return new EpochStart(2, EventTime.Marks.NONE, new int[] {0}, null, false, List.of());
  }

  @Test
  public void bothFactoriesTravelToTheExecutors() throws Exception {
    KplexWriterFactory batch = new KplexWriterFactory(conf(), WriterFixture.COLUMNS, Map.of(0, 5L),
        io.kplex.spark.txn.ReadByOthers.NONE);
    assertEquals(batch.toString(), roundTrip(batch).toString());
    HeldRows held = new HeldRows(new Configuration(false), "/tmp/kplex-unused");
    StreamingWriterFactory stream = new StreamingWriterFactory(conf(), WriterFixture.COLUMNS, start(), held, 2);
    assertEquals(stream.toString(), roundTrip(stream).toString());
  }

  @Test
  public void aBatchTaskGetsTheWritersOfItsDelivery() throws Exception {
    WriterFixture.Clients clients = new WriterFixture.Clients();
    KplexWriterFactory f = new KplexWriterFactory(conf("kplex.delivery", "at_least_once"), WriterFixture.COLUMNS,
        null, clients);
    assertTrue(f.createWriter(0, 1) instanceof AtLeastOnceDataWriter);
  }

  @Test
  public void aStreamingTaskOfACommittedEpochWritesNothing() throws Exception {
    WriterFixture.Clients clients = new WriterFixture.Clients();
    HeldRows held = new HeldRows(new Configuration(false), "/tmp/kplex-unused");
    StreamingWriterFactory f = new StreamingWriterFactory(conf("kplex.delivery", "at_least_once"),
        WriterFixture.COLUMNS, start(), held, 1, clients, new ManualClock(0));
    DataWriter<InternalRow> again = f.createWriter(0, 1, 2);
    again.write(WriterFixture.row("a", 1L, "v"));
    EpochCommitMessage m = (EpochCommitMessage) again.commit();
    assertEquals(null, m.written);
    assertNull("no producer for a committed epoch's task", clients.settings);
    assertTrue(clients.producer.history().isEmpty());
    assertTrue(f.createWriter(0, 1, 3) instanceof StreamingDataWriter);
  }
}
