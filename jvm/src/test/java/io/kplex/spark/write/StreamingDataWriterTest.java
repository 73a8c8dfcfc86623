package io.kplex.spark.write;

import static io.kplex.spark.write.WriterFixture.conf;
import static io.kplex.spark.write.WriterFixture.row;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.time.ManualClock;
import java.nio.file.Files;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.junit.Test;

/**
 * The streaming writer on top of the batch one, on a clock the test moves: rows the NULL
 * policies decide go straight to the batch writer, the rest through the event-time gate;
 * where the task's time went is measured on the injected clock.
 */
public class StreamingDataWriterTest {
  private final WriterFixture.Clients clients = new WriterFixture.Clients();
  private final ManualClock clock = new ManualClock(0);

  private StreamingDataWriter writer(String... options) throws Exception {
    WriteConf conf = conf(options);
    RowCodec codec = WriterFixture.codec(conf);
    KplexDataWriter out = KplexDataWriter.open(conf, codec, 0, 0, 0, null, clients);
    EpochStart start = new EpochStart(0, EventTime.Marks.NONE, new int[] {0}, null, true, List.of());
    HeldRows held = new HeldRows(new Configuration(false), Files.createTempDirectory("kplex-held").toString());
    return new StreamingDataWriter(out, conf, WriterFixture.COLUMNS, codec, start, 0, 1, held,
        held.path(1, 0, 1, 0), clock);
  }

  @Test
  public void aNullKeyGoesStraightToTheBatchWritersPolicy() throws Exception {
    StreamingDataWriter w = writer("kplex.delivery", "at_least_once", "kplex.null_key", "drop");
    w.write(row(null, 1L, "v"));
    w.write(row("a", 2L, "v"));
    EpochCommitMessage m = (EpochCommitMessage) w.commit();
    assertEquals(1, m.written.dropped);
    assertEquals(1, clients.producer.history().size());
    assertNull("released everything: nothing held", m.heldFile);
  }

  @Test
  public void theTasksTimesAreMeasuredOnTheInjectedClock() throws Exception {
    StreamingDataWriter w = writer("kplex.delivery", "at_least_once");
    clock.advance(50);
    w.write(row("a", 1L, "v"));
    clock.advance(20);
    EpochCommitMessage m = (EpochCommitMessage) w.commit();
    long[] times = new long[TaskTimes.NAMES.length];
    times[TaskTimes.SORT] = 50;
    times[TaskTimes.WRITE] = 20;
    assertArrayEquals(times, m.times);
  }
}
