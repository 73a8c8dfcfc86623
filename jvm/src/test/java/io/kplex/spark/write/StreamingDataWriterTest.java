package io.kplex.spark.write;

import static io.kplex.spark.write.WriterFixture.conf;
import static io.kplex.spark.write.WriterFixture.row;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.time.ManualClock;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.types.UTF8String;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * The streaming writer on top of the batch one, on a clock the test moves: rows the NULL
 * policies decide go straight to the batch writer, the rest through the event-time gate;
 * where the task's time went is measured on the injected clock.
 */
public class StreamingDataWriterTest {
  /** The tasks' held files, removed after each test. */
  @Rule
  public TemporaryFolder tmp = new TemporaryFolder();

  private final WriterFixture.Clients clients = new WriterFixture.Clients();
  private final ManualClock clock = new ManualClock(0);

  private StreamingDataWriter writer(String... options) throws Exception {
    WriteConf conf = conf(options);
    RowCodec codec = WriterFixture.codec(conf);
    KplexDataWriter out = KplexDataWriter.open(conf, codec, 0, 0, 0, null, clients);
    EpochStart start = new EpochStart(0, EventTime.Marks.NONE, new int[] {0}, null, true, List.of());
    HeldRows held = new HeldRows(new Configuration(false), tmp.newFolder().toString());
    return new StreamingDataWriter(out, conf, WriterFixture.COLUMNS, codec, start, 0, 1, held,
        held.path(1, 0, 1, 0), clock);
  }

  @Test
  public void aHeldFileThatCannotBeReadFailsTheTaskNamingItAndClosesItsProducer() throws Exception {
    WriteConf conf = conf();
    RowCodec codec = WriterFixture.codec(conf);
    KplexDataWriter out = KplexDataWriter.open(conf, codec, 0, 0, 0, null, clients);
    EpochStart start = new EpochStart(0, EventTime.Marks.NONE, new int[] {0}, null, false,
        List.of("held/0/part-0-of-1-5"));
    HeldRows held = new HeldRows(new Configuration(false), tmp.newFolder().toString());
    KplexException gone = assertThrows(KplexException.class, () -> new StreamingDataWriter(out, conf,
        WriterFixture.COLUMNS, codec, start, 0, 1, held, held.path(1, 0, 1, 0), clock));
    assertTrue(gone.getMessage(), gone.getMessage().contains("part-0-of-1-5"));
    assertEquals("Spark gets no writer to close: the failed one closed its producer", 1,
        clients.producer.closes.size());
  }

  /** The columns of a stream from kplex's source: the written ones, then the source positions. */
  private static final StructType POSITIONED = positioned();

  private static StructType positioned() {
    StructType s = new StructType().add("key", DataTypes.StringType).add("order_value", DataTypes.LongType)
        .add("value", DataTypes.StringType);
    List<String> hidden = WriteSchema.POSITION_COLUMNS;
    return s.add(hidden.get(0), DataTypes.IntegerType).add(hidden.get(1), DataTypes.LongType)
        .add(hidden.get(2), DataTypes.TimestampType).add(hidden.get(3), DataTypes.IntegerType)
        .add(hidden.get(4), DataTypes.LongType);
  }

  /** A writer of epoch 4 whose source reads offsets [100, 200) of partition 0 and [50, 60) of partition 1. */
  private StreamingDataWriter positionedWriter() throws Exception {
    WriteConf conf = conf("kplex.delivery", "at_least_once");
    WriteSchema schema = WriteSchema.resolve(POSITIONED);
    RowCodec codec = RowCodec.of(schema, conf);
    KplexDataWriter out = KplexDataWriter.open(conf, codec, 0, 0, 0, null, clients);
    EpochStart start = new EpochStart(3, EventTime.Marks.NONE, new int[] {0, 1}, "src", true, List.of(),
        Map.of(0, 100L, 1, 50L), Map.of(0, 200L, 1, 60L), new int[0]);
    HeldRows held = new HeldRows(new Configuration(false), tmp.newFolder().toString());
    return new StreamingDataWriter(out, conf, schema, codec, start, 0, 1, held, held.path(1, 0, 1, 0), clock);
  }

  private static InternalRow at(String key, long order, int partition, long offset) {
    return new GenericInternalRow(new Object[] {UTF8String.fromString(key), order, UTF8String.fromString("v"),
        partition, offset, null, partition, null});
  }

  @Test
  public void rowsFromTheOffsetsTheBatchReadAreWrittenAndTheirHighsRecorded() throws Exception {
    StreamingDataWriter w = positionedWriter();
    w.write(at("a", 10L, 0, 100));
    w.write(at("b", 20L, 0, 199));
    w.write(at("c", 5L, 1, 59));
    EpochCommitMessage m = (EpochCommitMessage) w.commit();
    assertEquals(Map.of(0, 20L, 1, 5L), m.read);
    assertEquals(3, clients.producer.history().size());
  }

  @Test
  public void aRowFromAnOffsetTheBatchDidNotReadFailsTheTaskNamingBoth() throws Exception {
    // The shape of issue #38: offset 1081 of partition 1 in a batch that read [50, 60) there.
    for (Object[] c : new Object[][] {{1, 1081L, "[50, 60)"}, {0, 99L, "[100, 200)"}, {0, 200L, "[100, 200)"},
        {2, 0L, "none"}}) {
      StreamingDataWriter w = positionedWriter();
      w.write(at("a", 10L, 0, 150));
      KplexException e = assertThrows(KplexException.class, () -> w.write(at("b", 108_100L, (int) c[0], (long) c[1])));
      assertEquals("SOURCE_RANGE", e.code());
      assertTrue(e.getMessage(), e.getMessage().contains("offset " + c[1] + " of source partition src-" + c[0]));
      assertTrue(e.getMessage(), e.getMessage().contains("reads offsets " + c[2]));
      assertTrue(e.getMessage(), e.getMessage().contains("micro-batch 4 of the stream into table t"));
    }
  }

  @Test
  public void aNullKeyGoesStraightToTheBatchWritersPolicy() throws Exception {
    StreamingDataWriter w = writer("kplex.delivery", "at_least_once", "kplex.null_key", "drop");
    w.write(row(null, 1L, "v"));
    w.write(row("a", 2L, "v"));
    EpochCommitMessage m = (EpochCommitMessage) w.commit();
    assertEquals(1, m.written.dropped);
    assertEquals(1, clients.producer.history().size());
    assertEquals("released everything: nothing held", List.of(), m.heldFiles);
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

  /** A writer of epoch {@code lastEpoch + 1} over held files {@code held}, partition 0 its only source partition. */
  private StreamingDataWriter epoch(WriteConf conf, HeldRows held, long lastEpoch, EventTime.Marks marks,
      boolean releaseAll, List<String> heldFiles) {
    RowCodec codec = WriterFixture.codec(conf);
    KplexDataWriter out = KplexDataWriter.open(conf, codec, 0, 0, 0, null, clients);
    EpochStart start = new EpochStart(lastEpoch, marks, new int[] {0}, null, releaseAll, heldFiles);
    return new StreamingDataWriter(out, conf, WriterFixture.COLUMNS, codec, start, 0, 1, held,
        held.path(lastEpoch + 1, 0, 1, lastEpoch), clock);
  }

  @Test
  public void heldRecordsAreStreamedFromTheirFileAndWaitingOnesSpillToDiskYetAllComeOutInOrder() throws Exception {
    System.setProperty(io.kplex.spark.testing.FaultInjection.ARMED_PROPERTY, "true");
    try {
      WriteConf conf = conf("kplex.delivery", "at_least_once", "kplex.max_delay_ms", "1000000",
          "kplex.testing.pending_memory_bytes", "2000");
      HeldRows held = new HeldRows(new Configuration(false), tmp.newFolder().toString());
      StreamingDataWriter first = epoch(conf, held, 0, EventTime.Marks.NONE, false, List.of());
      for (long order = 1; order <= 500; order++) first.write(row("k" + order % 7, order, Long.toString(order)));
      EpochCommitMessage one = (EpochCommitMessage) first.commit();
      assertEquals("nothing passes a watermark a million ms back", 0, clients.producer.history().size());
      assertEquals(500, one.held);
      assertTrue("500 rows outgrow 2,000 bytes: " + one.spilled, one.spilled == 500);
      assertEquals(List.of(held.relative(held.path(1, 0, 1, 0)) + "#12+500"), one.heldFiles);

      EventTime.Marks after = new EventTime.Marks(Map.of(0, 500L), Map.of());
      StreamingDataWriter second = epoch(conf, held, 1, after, true, one.heldFiles);
      for (long order = 501; order <= 600; order++) second.write(row("k" + order % 7, order, Long.toString(order)));
      EpochCommitMessage two = (EpochCommitMessage) second.commit();
      assertEquals("released at the end: nothing held", 0, two.held);
      List<Long> orders = clients.producer.history().stream()
          .map(r -> Long.parseLong(new String(r.value(), java.nio.charset.StandardCharsets.UTF_8))).toList();
      assertEquals(600, orders.size());
      assertEquals("every record once, in order", java.util.stream.LongStream.rangeClosed(1, 600).boxed().toList(),
          orders);
    } finally {
      System.clearProperty(io.kplex.spark.testing.FaultInjection.ARMED_PROPERTY);
    }
  }

  private List<Long> sent() {
    return clients.producer.history().stream()
        .map(r -> Long.parseLong(new String(r.value(), java.nio.charset.StandardCharsets.UTF_8))).toList();
  }

  private static List<Long> range(long from, long to) {
    return java.util.stream.LongStream.rangeClosed(from, to).boxed().toList();
  }

  @Test
  public void heldFilesStayInPlaceAcrossMicroBatchesAndOnlyWhatIsReleasedIsReadOfThem() throws Exception {
    WriteConf conf = conf("kplex.delivery", "at_least_once", "kplex.max_delay_ms", "1000");
    HeldRows held = new HeldRows(new Configuration(false), tmp.newFolder().toString());
    StreamingDataWriter first = epoch(conf, held, 0, EventTime.Marks.NONE, false, List.of());
    for (long order = 1; order <= 500; order++) first.write(row("k" + order % 7, order, Long.toString(order)));
    EpochCommitMessage one = (EpochCommitMessage) first.commit();
    String a = held.relative(held.path(1, 0, 1, 0));
    assertEquals(List.of(a + "#12+500"), one.heldFiles);

    // Nothing released: the first file stays as it is, the new records go to a second one.
    StreamingDataWriter second = epoch(conf, held, 1, new EventTime.Marks(Map.of(0, 500L), Map.of()), false,
        one.heldFiles);
    for (long order = 501; order <= 600; order++) second.write(row("k" + order % 7, order, Long.toString(order)));
    EpochCommitMessage two = (EpochCommitMessage) second.commit();
    String b = held.relative(held.path(2, 0, 1, 1));
    assertEquals(List.of(a + "#12+500", b + "#12+100"), two.heldFiles);
    assertEquals(600, two.held);
    assertEquals(List.of(), sent());

    // The watermark reaches 350: the first file is read up to it and named from there on;
    // the second is not touched (500 > 2 x 100: neither is merged).
    StreamingDataWriter third = epoch(conf, held, 2, new EventTime.Marks(Map.of(0, 600L), Map.of()), false,
        two.heldFiles);
    for (long order = 1251; order <= 1350; order++) third.write(row("k" + order % 7, order, Long.toString(order)));
    EpochCommitMessage three = (EpochCommitMessage) third.commit();
    assertEquals(range(1, 349), sent());
    HeldRows.Ref left = HeldRows.Ref.parse(three.heldFiles.get(0));
    assertEquals(a, left.file());
    assertEquals(151, left.rows());
    try (HeldRows.Reader rest = held.open(held.resolve(a), WriterFixture.COLUMNS.schema.length(), left.position())) {
      assertEquals("read on from where it stopped", "350", rest.next().getUTF8String(2).toString());
    }
    assertEquals(List.of(left.toString(), b + "#12+100", held.relative(held.path(3, 0, 1, 2)) + "#12+100"),
        three.heldFiles);
    assertEquals(351, three.held);

    // Three files of 151, 100 and 100 rows: merged again, and all released at the end, in order, once.
    StreamingDataWriter fourth = epoch(conf, held, 3, new EventTime.Marks(Map.of(0, 1350L), Map.of()), true,
        three.heldFiles);
    for (long order = 1351; order <= 1400; order++) fourth.write(row("k" + order % 7, order, Long.toString(order)));
    EpochCommitMessage four = (EpochCommitMessage) fourth.commit();
    assertEquals(0, four.held);
    List<Long> all = new java.util.ArrayList<>(range(1, 600));
    all.addAll(range(1251, 1400));
    assertEquals("every record once, in order", all, sent());
  }

  @Test
  public void heldFilesAreMergedSoThatTheyGrowGeometrically() {
    assertEquals("one file stays", 1, StreamingDataWriter.mergedFrom(new long[] {500}, 12));
    assertEquals("an older file over twice the newer stays", 2,
        StreamingDataWriter.mergedFrom(new long[] {500, 100}, 12));
    assertEquals("two of a size merge", 0, StreamingDataWriter.mergedFrom(new long[] {100, 100}, 12));
    assertEquals(1, StreamingDataWriter.mergedFrom(new long[] {1000, 100, 100}, 12));
    assertEquals(0, StreamingDataWriter.mergedFrom(new long[] {300, 100, 100}, 12));
    assertEquals("past the most files, all merge", 0, StreamingDataWriter.mergedFrom(new long[13], 12));
    // A stall that holds 1,000 more records in each of 5,000 micro-batches: few files, and a
    // micro-batch rewrites a few thousand records on average, not everything held.
    List<Long> files = new java.util.ArrayList<>();
    long rewritten = 0;
    for (int batch = 0; batch < 5_000; batch++) {
      int from = StreamingDataWriter.mergedFrom(files.stream().mapToLong(Long::longValue).toArray(), 12);
      long merged = 1_000;
      while (files.size() > from) merged += files.remove(files.size() - 1);
      files.add(merged);
      rewritten += merged;
    }
    assertEquals(5_000_000L, files.stream().mapToLong(Long::longValue).sum());
    assertTrue("files: " + files, files.size() <= 12);
    assertTrue("rewritten per micro-batch: " + rewritten / 5_000, rewritten / 5_000 < 10_000);
  }

  @Test
  public void oldHeldFilesAreRemovedButThoseTheLastMarkNamesStay() throws Exception {
    String dir = tmp.newFolder().toString();
    HeldRows held = new HeldRows(new Configuration(false), dir);
    for (long epoch = 1; epoch <= 4; epoch++) {
      for (int task = 0; task < 2; task++) held.write(held.path(epoch, task, 2, epoch * 10 + task), 4, List.of());
    }
    // The mark of epoch 4 names a file of epoch 1 left in place, and its own.
    List<String> named = List.of(held.relative(held.path(1, 1, 2, 11)) + "#12+5",
        held.relative(held.path(4, 0, 2, 40)) + "#12+3");
    held.cleanNow(4, named);
    List<String> left = new java.util.ArrayList<>();
    try (java.util.stream.Stream<java.nio.file.Path> files = java.nio.file.Files.walk(java.nio.file.Path.of(dir))) {
      files.filter(java.nio.file.Files::isRegularFile).filter(f -> !f.getFileName().toString().endsWith(".crc"))
          .forEach(f -> left.add(java.nio.file.Path.of(dir).relativize(f).toString()));
    }
    java.util.Collections.sort(left);
    assertEquals(List.of("held/1/part-1-of-2-11", "held/4/part-0-of-2-40", "held/4/part-1-of-2-41"), left);
  }

  @Test
  public void aHeldFilesFooterKeepsTheSmallestSourceOffsetPerPartition() throws Exception {
    HeldRows held = new HeldRows(new Configuration(false), tmp.newFolder().toString());
    String file = held.path(1, 0, 1, 0);
    try (HeldRows.Writer w = held.writer(file, 4)) {
      org.apache.spark.sql.catalyst.expressions.UnsafeRow row =
          org.apache.spark.sql.catalyst.expressions.UnsafeProjection.create(WriterFixture.SCHEMA).apply(row("a", 1L, "v"));
      w.add(row, 0, 40);
      w.add(row, 1, 7);
      w.add(row, 0, 12);
    }
    assertEquals(Map.of(0, 12L, 1, 7L), held.heldFrom(file));
    assertEquals(3, held.read(file, 4).size());
  }

  @Test
  public void aMicroBatchThatExpiredIsRecordedInTheCheckpointAndRerunWithALongerTimeout() throws Exception {
    HeldRows held = new HeldRows(new Configuration(false), tmp.newFolder().toString());
    assertEquals(-1, held.expiredAfter(7));
    held.expired(7, 20_000);
    assertEquals(20_000, held.expiredAfter(7));
    assertEquals(-1, held.expiredAfter(8));
    assertEquals("four times", 80_000, KplexStreamingWrite.rerunTimeoutMs(20_000));
    assertEquals("at least a minute more", 65_000, KplexStreamingWrite.rerunTimeoutMs(5_000));
    assertEquals("at most the broker's default maximum", 900_000, KplexStreamingWrite.rerunTimeoutMs(600_000));
    assertEquals("never less", 1_000_000, KplexStreamingWrite.rerunTimeoutMs(1_000_000));
  }

  @Test
  public void heldRowsTakenOverMustKeepTheirColumnsInNumberAndTypeNotTheirNames() {
    org.apache.spark.sql.types.StructType held = org.apache.spark.sql.types.StructType.fromDDL(
        "key BINARY, order_value BIGINT, value BINARY");
    assertEquals(null, KplexStreamingWrite.changedColumns(held.toDDL(), held));
    assertEquals("renamed columns are read by position", null, KplexStreamingWrite.changedColumns(held.toDDL(),
        org.apache.spark.sql.types.StructType.fromDDL("k BINARY, t BIGINT, v BINARY")));
    assertEquals("not recorded (an older kplex)", null, KplexStreamingWrite.changedColumns(null, held));
    assertEquals("column 3: value binary -> value string", KplexStreamingWrite.changedColumns(held.toDDL(),
        org.apache.spark.sql.types.StructType.fromDDL("key BINARY, order_value BIGINT, value STRING")));
    assertEquals("column 4: none -> page string", KplexStreamingWrite.changedColumns(held.toDDL(),
        org.apache.spark.sql.types.StructType.fromDDL("key BINARY, order_value BIGINT, value BINARY, page STRING")));
  }
}
