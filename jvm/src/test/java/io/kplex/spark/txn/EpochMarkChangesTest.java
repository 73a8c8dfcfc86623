package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.time.EventTime;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/**
 * A streaming query's epoch mark over many virtual partitions is written as what changed since
 * a base (issue #34: "epoch marks that do not repeat what has not changed"), and every reader
 * of the log finds it whole: the committer, a new driver, the recovery of a commit left half
 * done. Against the in-memory Kafka, through the commit log's public face.
 */
public class EpochMarkChangesTest {
  private static final String TABLE = "by_user";
  private static final String QUERY = "q-1";
  private static final int V = 1_000;

  /** Epoch {@code epoch}'s mark when every virtual partition in {@code moved} got new records. */
  private static EpochMark mark(long epoch, Map<Integer, Long> written) {
    return new EpochMark(TABLE, QUERY, epoch, new EventTime.Marks(Map.of(0, epoch * 10, 1, epoch * 10 + 1),
        written), List.of("held/" + epoch + "/part-0"), 3);
  }

  private static Map<Integer, Long> firstWritten() {
    Map<Integer, Long> w = new HashMap<>();
    for (int vp = 0; vp < V; vp++) w.put(vp, 1_000L + vp);
    return w;
  }

  /** A commit as the committer makes it: the pending record with the mark, then the end. */
  private static void commit(CommitLog log, EpochMark mark) {
    log.begin(TABLE, QUERY, List.of(), mark, null, null);
    log.end(TABLE, mark);
  }

  private static int size(CompactedTopic topic, String key) {
    return topic.latest(key).map(e -> e.getValue().length).orElse(0);
  }

  @Test
  public void aMarkThatChangesAFewVirtualPartitionsIsWrittenAsItsChangesAndReadWhole() {
    FakeKafkaAccess kafka = new FakeKafkaAccess();
    CommitLog log = new CommitLog(kafka.topics());
    Map<Integer, Long> written = firstWritten();
    EpochMark first = mark(0, written);
    commit(log, first);
    int whole = size(log.topic(), first.key());
    assertFalse("the first mark is whole", EpochMark.isDelta(EpochMark.tree(log.topic().latest(first.key()).get()
        .getValue())));
    assertEquals(first, log.lastEpoch(TABLE, QUERY).orElseThrow());

    long bytes = 0;
    int bases = 0;
    byte[] base = null;
    for (long epoch = 1; epoch <= 100; epoch++) {
      for (int i = 0; i < 5; i++) written.merge((int) ((epoch * 37 + i * 101) % V), 100_000L * epoch, Math::max);
      EpochMark next = mark(epoch, written);
      commit(log, next);
      assertEquals("epoch " + epoch + " reads back whole", next, log.lastEpoch(TABLE, QUERY).orElseThrow());
      bytes += size(log.topic(), next.key());
      byte[] now = log.topic().latest(first.key() + EpochMark.BASE).get().getValue();
      if (!java.util.Arrays.equals(now, base)) {
        bytes += now.length;
        bases++;
        base = now;
      }
    }
    assertTrue("the first base is the first mark, whole", bases >= 1);
    assertTrue("a base lasts many epochs: " + bases + " bases in 100 epochs", bases <= 10);
    assertTrue("an epoch writes its changes, not every virtual partition: " + bytes / 100 + " bytes an epoch, the"
        + " bases included, for a whole mark of " + whole, bytes / 100 * 4 < whole);

    // Every reader of the table's marks reads them whole: the floor a new query starts from.
    Map<Integer, Long> highs = log.writtenHighs(TABLE);
    assertEquals(V, highs.size());
    assertEquals(written, highs);
    // A new JVM's first read (no view in common) reads the same: the view is per JVM, the log is what counts.
    assertEquals(written, EpochMark.all(log.topic().readAll()).get(first.key()).marks().written());
  }

  @Test
  public void whenMostVirtualPartitionsChangeTheMarkIsWholeAndTheNextTakesItAsItsBase() {
    FakeKafkaAccess kafka = new FakeKafkaAccess();
    CommitLog log = new CommitLog(kafka.topics());
    Map<Integer, Long> written = firstWritten();
    commit(log, mark(0, written));
    written.put(7, 50_000L);
    commit(log, mark(1, written));
    assertTrue(EpochMark.isDelta(EpochMark.tree(log.topic().latest(EpochMark.key(TABLE, QUERY)).get().getValue())));

    written.replaceAll((vp, w) -> w + 1);  // every virtual partition moved
    EpochMark busy = mark(2, written);
    commit(log, busy);
    assertFalse("more changes than half the mark: whole",
        EpochMark.isDelta(EpochMark.tree(log.topic().latest(busy.key()).get().getValue())));
    assertEquals(busy, log.lastEpoch(TABLE, QUERY).orElseThrow());

    written.put(9, 90_000L);
    EpochMark quiet = mark(3, written);
    commit(log, quiet);
    assertEquals("the whole mark became the base", busy,
        EpochMark.fromJson(log.topic().latest(busy.key() + EpochMark.BASE).get().getValue()));
    assertEquals(quiet, log.lastEpoch(TABLE, QUERY).orElseThrow());
  }

  @Test
  public void aCommitLeftHalfDoneIsFinishedWithItsMarkWhole() {
    FakeKafkaAccess kafka = new FakeKafkaAccess();
    CommitLog log = new CommitLog(kafka.topics());
    Map<Integer, Long> written = firstWritten();
    commit(log, mark(0, written));
    written.put(3, 70_000L);
    EpochMark next = mark(1, written);
    log.begin(TABLE, QUERY, List.of(), next, null, null);  // the driver dies here

    CommitLog.Pending pending = new CommitLog(kafka.topics()).pending(TABLE).orElseThrow();
    assertEquals("the pending record's mark, read whole", next, pending.mark);
    assertEquals("until the commit is finished, the last epoch is the one before", 0,
        log.lastEpoch(TABLE, QUERY).orElseThrow().epoch());
    new CommitLog(kafka.topics()).end(pending);
    assertEquals(next, log.lastEpoch(TABLE, QUERY).orElseThrow());
    assertFalse(log.pending(TABLE).isPresent());
  }

  @Test
  public void smallMarksAndTheInsertsMarkAreWrittenWhole() {
    FakeKafkaAccess kafka = new FakeKafkaAccess();
    CommitLog log = new CommitLog(kafka.topics());
    for (long epoch = 0; epoch < 3; epoch++) {
      commit(log, new EpochMark(TABLE, QUERY, epoch, new EventTime.Marks(Map.of(0, epoch), Map.of(1, epoch)),
          List.of()));
    }
    assertFalse(log.topic().latest(EpochMark.key(TABLE, QUERY) + EpochMark.BASE).isPresent());
    Map<Integer, Long> written = firstWritten();
    for (int i = 0; i < 3; i++) {
      written.put(i, 9_000_000L + i);
      log.end(TABLE, new EpochMark(TABLE, EpochMark.INSERTS, 0, EventTime.Marks.of(written), List.of()));
    }
    assertNull("an INSERTs' mark has no base",
        log.topic().latest(EpochMark.key(TABLE, EpochMark.INSERTS) + EpochMark.BASE).orElse(null));
    assertEquals(written, log.writtenHighs(TABLE));
  }

  @Test
  public void changesWithoutTheirBaseAreRefusedNamingTheRecords() {
    EpochMark base = mark(4, firstWritten());
    Map<Integer, Long> written = firstWritten();
    written.put(1, 77L);
    byte[] changes = mark(5, written).toDeltaJson(base);
    assertNotNull(changes);
    assertEquals(mark(5, written), EpochMark.fromJson(changes, base.toJson()));
    assertEquals("a later base (up to the mark's epoch) gives the same mark", mark(5, written),
        EpochMark.fromJson(changes, mark(5, written).toJson()));
    for (byte[] wrong : new byte[][] {null, mark(3, firstWritten()).toJson(), mark(6, firstWritten()).toJson()}) {
      try {
        EpochMark.fromJson(changes, wrong);
        fail("read without its base");
      } catch (KplexException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("epoch/by_user/q-1#base"));
      }
    }
    assertNull("a mark that drops an entry of its base is whole",
        new EpochMark(TABLE, QUERY, 5, EventTime.Marks.of(Map.of(1, 2L)), List.of()).toDeltaJson(base));
    assertTrue(new String(changes, StandardCharsets.UTF_8).contains("\"base_epoch\":4"));
  }
}
