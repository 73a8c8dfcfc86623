package io.kplex.spark.txn;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.time.EventTime;
import java.util.List;
import java.util.Map;
import org.junit.Test;

/** A streaming epoch's record in the commit log, alone and inside a pending commit. */
public class EpochMarkTest {
  private static final EpochMark MARK = new EpochMark("by_user", "query-1", 7,
      new EventTime.Marks(Map.of(0, 9_000L, 2, 4_000L), Map.of(5, 3_000L)), List.of("held/7/part-0-of-3-12"));

  @Test
  public void anEpochMarkReadsBackAsWritten() {
    assertEquals(MARK, EpochMark.fromJson(MARK.toJson()));
    assertEquals("epoch/by_user/query-1", MARK.key());
  }

  @Test
  public void idlePartitionsAndWhenHighsMovedReadBack() {
    EpochMark mark = new EpochMark("t", "q", 3, new EventTime.Marks(Map.of(0, 9L, 4, 2L), Map.of(1, 3L),
        java.util.Set.of(4), Map.of(0, 1_700_000_000_000L, 4, 1_700_000_001_000L)), List.of());
    assertEquals(mark, EpochMark.fromJson(mark.toJson()));
  }

  @Test
  public void aStreamsLineageReadsBackAndTheLastStreamOnASourceIsTheLatestCommitted() {
    EpochMark a = MARK.withLineage(new EpochMark.Lineage("views", Map.of(0, 120L, 1, 80L), "file:/chk/a/kplex", null,
        1_000L));
    EpochMark b = new EpochMark("by_user", "query-2", 0, MARK.marks(), List.of(), 0,
        new EpochMark.Lineage("views", Map.of(0, 150L, 1, 90L), "file:/chk/b/kplex", "query-1@7", 2_000L,
            "key BINARY,order_value BIGINT,value BINARY"));
    EpochMark other = new EpochMark("by_user", "query-3", 4, MARK.marks(), List.of(), 0,
        new EpochMark.Lineage("clicks", Map.of(0, 5L), "file:/chk/c/kplex", null, 3_000L));
    assertEquals(a, EpochMark.fromJson(a.toJson()));
    assertEquals(b, EpochMark.fromJson(b.toJson()));
    assertEquals("query-1", b.lineage().resumedQuery());
    assertNull("a mark of an earlier kplex has none", MARK.lineage());
    assertNull(EpochMark.fromJson(MARK.toJson()).lineage());

    Map<String, byte[]> log = new java.util.LinkedHashMap<>();
    EpochMark older = new EpochMark("by_user", "query-0", 9, MARK.marks(), List.of());  // no lineage
    for (EpochMark m : List.of(b, a, other, older)) log.put(m.key(), m.toJson());
    assertEquals(4, log.size());
    assertEquals("the latest commit from that source", "query-2",
        CommitLog.lastOnSource(log, "views").orElseThrow().query());
    assertEquals("query-3", CommitLog.lastOnSource(log, "clicks").orElseThrow().query());
    assertEquals(java.util.Optional.empty(), CommitLog.lastOnSource(log, "orders"));
    assertEquals("how far the other queries' streams read a source, per partition",
        OffsetRanges.below(Map.of(0, 150L, 1, 90L)), CommitLog.readByOthers(log, "views", "query-9", null).ranges());
    assertEquals("a query's own marks do not count", OffsetRanges.below(Map.of(0, 150L, 1, 90L)),
        CommitLog.readByOthers(log, "views", "query-1", null).ranges());
    assertEquals("nor those of the query it resumed from (its held records are the resuming query's now)",
        OffsetRanges.NONE, CommitLog.readByOthers(log, "views", "query-2", null).ranges());
    assertEquals("named before the resuming query's first mark too", OffsetRanges.below(Map.of(0, 150L, 1, 90L)),
        CommitLog.readByOthers(log, "views", "query-9", "query-1").ranges());
    assertEquals(OffsetRanges.NONE, CommitLog.readByOthers(log, "orders", "query-9", null).ranges());
    EpochMark inserts = new EpochMark("by_user", EpochMark.INSERTS, 0, MARK.marks(), List.of())
        .withReads("views", OffsetRanges.NONE.with(0, 300, 400).with(2, 0, 10))
        .withReads("orders", OffsetRanges.NONE.with(0, 0, 5));
    assertEquals(inserts, EpochMark.fromJson(inserts.toJson()));
    log.put(inserts.key(), inserts.toJson());
    ReadByOthers views = CommitLog.readByOthers(log, "views", "query-2", null);
    assertEquals("and the INSERTs' ranges of that source", "0:[300,400) 2:[0,10)", views.toString());
    assertEquals("0:[0,5)", CommitLog.readByOthers(log, "orders", "query-2", null).toString());
    assertEquals("query-2 streamed from views into the table after query-1's last commit", "query-2",
        CommitLog.overtaken(log, a).orElseThrow().query());
    assertEquals("nothing committed from views after query-2", java.util.Optional.empty(),
        CommitLog.overtaken(log, b));
    EpochMark later = a.withLineage(new EpochMark.Lineage("views", Map.of(0, 120L, 1, 80L), null, null, 5_000L));
    assertEquals("what others read before this query's last commit does not count", java.util.Optional.empty(),
        CommitLog.overtaken(log, later));
  }

  @Test
  public void aStrictStreamsFloorsReadBackAndAReaderUsesTheNewestItHasReadPast() {
    EpochMark.Floor older = new EpochMark.Floor(1_000, Map.of(0, 10L, 1, 20L));
    EpochMark.Floor newer = new EpochMark.Floor(2_000, Map.of(0, 30L, 1, 40L));
    EpochMark a = new EpochMark("up", "query-a", 5, MARK.marks(), List.of(), 0,
        new EpochMark.Lineage("views", Map.of(0, 9L), null, null, 1L, null, List.of(older, newer)));
    assertEquals(a, EpochMark.fromJson(a.toJson()));
    Map<String, byte[]> log = Map.of(a.key(), a.toJson());
    assertEquals("read past neither", Long.MIN_VALUE, CommitLog.carriedFloor(log, Map.of(0, 10L, 1, 19L)));
    assertEquals("past the older only", 1_000, CommitLog.carriedFloor(log, Map.of(0, 29L, 1, 40L)));
    assertEquals(2_000, CommitLog.carriedFloor(log, Map.of(0, 30L, 1, 40L)));
    assertEquals("a partition the reader has not started on counts as offset 0", Long.MIN_VALUE,
        CommitLog.carriedFloor(log, Map.of(0, 30L)));
    EpochMark b = new EpochMark("up", "query-b", 2, MARK.marks(), List.of(), 0,
        new EpochMark.Lineage("views", Map.of(0, 9L), null, null, 1L, null, List.of(new EpochMark.Floor(1_500, Map.of()))));
    assertEquals("the largest over the table's streams", 1_500,
        CommitLog.carriedFloor(Map.of(a.key(), a.toJson(), b.key(), b.toJson()), Map.of(0, 29L, 1, 40L)));
  }

  @Test
  public void aQueryStartsWithNothingReleasedAndNothingHeld() {
    EpochMark start = EpochMark.start("t", "q");
    assertEquals(-1, start.epoch());
    assertEquals(Long.MIN_VALUE, start.marks().written(0));
    assertEquals(Long.MIN_VALUE, start.marks().high(0));
    assertEquals(List.of(), start.held());
  }

  @Test
  public void aMarkOfAnEarlierKplexKeepsItsBoundForEveryVirtualPartition() {
    EpochMark old = EpochMark.fromJson(("{\"table\":\"t\",\"query\":\"q\",\"epoch\":3,\"late_bound\":500,"
        + "\"release_bound\":900,\"max_seen\":1900,\"held\":[]}").getBytes(java.nio.charset.StandardCharsets.UTF_8));
    assertEquals(3, old.epoch());
    assertEquals(500L, old.marks().written(0));
    assertEquals(500L, old.marks().written(7));
  }

  @Test
  public void aPendingCommitCarriesItsEpochMarkSoWhoeverFinishesItRecordsTheEpoch() {
    List<TaskTransaction> txns = List.of(new TaskTransaction("kplex.by_user.0.0.0", 3, (short) 1));
    CommitLog.Pending pending = CommitLog.fromJson(CommitLog.toJson("by_user", "query-1", txns, MARK));
    assertEquals(MARK, pending.mark);
    assertEquals(txns, pending.transactions);
    assertNull("a batch write's has none", CommitLog.fromJson(CommitLog.toJson("t", "q", txns)).mark);
  }

  @Test
  public void aRecordReadThroughFiltersCountsAsReadOnlyForAWriterThroughTheSameFilters() {
    EpochMark filteredStream = new EpochMark("by_user", "query-1", 3, MARK.marks(), List.of(), 0,
        new EpochMark.Lineage("views", Map.of(0, 100L), null, null, 1_000L, null, List.of(), "id-1", "page1"));
    EpochMark plainStream = new EpochMark("by_user", "query-2", 3, MARK.marks(), List.of(), 0,
        new EpochMark.Lineage("views", Map.of(1, 50L), null, null, 2_000L, null, List.of(), "id-1", null));
    EpochMark inserts = new EpochMark("by_user", EpochMark.INSERTS, 0, MARK.marks(), List.of())
        .withReads(EpochMark.readsKey("views", "page1"), OffsetRanges.NONE.with(2, 0, 10))
        .withReads(EpochMark.readsKey("views", "page2"), OffsetRanges.NONE.with(2, 10, 20))
        .withReads(EpochMark.readsKey("views", null), OffsetRanges.NONE.with(3, 0, 5));
    assertEquals("views", EpochMark.readsKey("views", null));
    for (EpochMark m : List.of(filteredStream, plainStream, inserts)) assertEquals(m, EpochMark.fromJson(m.toJson()));
    Map<String, byte[]> log = new java.util.LinkedHashMap<>();
    for (EpochMark m : List.of(filteredStream, plainStream, inserts)) log.put(m.key(), m.toJson());
    assertEquals("through the same filters: the filtered ones' reads and the unfiltered ones'",
        "0:[0,100) 1:[0,50) 2:[0,10) 3:[0,5)", CommitLog.readByOthers(log, "views", null, "page1", "query-9", null).toString());
    assertEquals("through other filters: only what was read through none",
        "1:[0,50) 2:[10,20) 3:[0,5)", CommitLog.readByOthers(log, "views", null, "page2", "query-9", null).toString());
    assertEquals("through no filter: only what was read through none",
        "1:[0,50) 3:[0,5)", CommitLog.readByOthers(log, "views", null, null, "query-9", null).toString());
  }

  @Test
  public void whatWasReadOfASourceSinceCreatedAgainCountsForNoOne() {
    EpochMark stream = new EpochMark("by_user", "query-1", 3, MARK.marks(), List.of(), 0,
        new EpochMark.Lineage("views", Map.of(0, 100L), null, null, 1_000L, null, List.of(), "id-old", null));
    EpochMark inserts = new EpochMark("by_user", EpochMark.INSERTS, 0, MARK.marks(), List.of())
        .readingId("views", "id-old")
        .withReads(EpochMark.readsKey("views", null), OffsetRanges.NONE.with(1, 0, 40))
        .withReads(EpochMark.readsKey("views", "page1"), OffsetRanges.NONE.with(2, 0, 10))
        .withReads(EpochMark.readsKey("orders", null), OffsetRanges.NONE.with(0, 0, 5));
    assertEquals(inserts, EpochMark.fromJson(inserts.toJson()));
    Map<String, byte[]> log = new java.util.LinkedHashMap<>();
    for (EpochMark m : List.of(stream, inserts)) log.put(m.key(), m.toJson());
    assertEquals("the same topic", "0:[0,100) 1:[0,40)", CommitLog.readByOthers(log, "views", "id-old", null, "query-9", null).toString());
    assertEquals("not known: as before", "0:[0,100) 1:[0,40)", CommitLog.readByOthers(log, "views", null, null, "query-9", null).toString());
    assertEquals("created again", "none", CommitLog.readByOthers(log, "views", "id-new", null, "query-9", null).toString());
    EpochMark now = inserts.readingId("views", "id-new");
    assertEquals("the old topic's reads, filtered or not, go; another source's stay", java.util.Set.of("orders"), now.reads().keySet());
    assertEquals("id-new", now.readIds().get("views"));
    assertEquals(now, now.readingId("views", "id-new"));
    EpochMark unknown = now.readingId("views", null);
    assertEquals("an id not known forgets the one kept, reads stay", now.reads(), unknown.reads());
    assertNull(unknown.readIds().get("views"));
    EpochMark older = new EpochMark("by_user", EpochMark.INSERTS, 0, MARK.marks(), List.of())
        .withReads("views", OffsetRanges.NONE.with(1, 0, 40));
    assertEquals("reads recorded without an id are kept", older.reads(), older.readingId("views", "id-new").reads());
  }

  @Test
  public void aRecordAStreamReadIsItsToHaveWrittenOnlyIfNotAboveWhatItWroteToItsVirtualPartition() {
    EventTime.Marks wrote = EventTime.Marks.of(Map.of(3, 90L, 4, 200L));
    EpochMark stream = new EpochMark("by_user", "query-1", 3, wrote, List.of(), 1,
        new EpochMark.Lineage("views", Map.of(0, 100L), null, null, 1_000L, null, List.of(), "id-1", null));
    EpochMark inserts = new EpochMark("by_user", EpochMark.INSERTS, 0, MARK.marks(), List.of())
        .withReads("views", OffsetRanges.NONE.with(1, 0, 10));
    Map<String, byte[]> log = new java.util.LinkedHashMap<>();
    for (EpochMark m : List.of(stream, inserts)) log.put(m.key(), m.toJson());
    ReadByOthers read = CommitLog.readByOthers(log, "views", "query-9", null);
    assertTrue("written by the stream", read.wrote(0, 50, 3, 90));
    assertFalse("held back by it: above what it wrote to virtual partition 3", read.wrote(0, 50, 3, 100));
    assertTrue(read.wrote(0, 50, 4, 100));
    assertFalse("not read by it", read.wrote(0, 100, 4, 100));
    assertFalse("a virtual partition it wrote nothing to", read.wrote(0, 50, 5, Long.MIN_VALUE + 1));
    assertTrue("an INSERT wrote (or judged late) all it read", read.wrote(1, 5, 5, Long.MAX_VALUE));
    ReadByOthers strict = ReadByOthers.NONE.withStream(OffsetRanges.below(Map.of(0, 100L)),
        EventTime.Marks.of(Map.of(EventTime.Marks.EVERY_VP, 70L)));
    assertTrue("a floor for every virtual partition", strict.wrote(0, 1, 8, 70) && !strict.wrote(0, 1, 8, 71));
    assertTrue(ReadByOthers.NONE.isEmpty() && !strict.isEmpty());
    EpochMark holdingNothing = new EpochMark("by_user", "query-1", 3, wrote, List.of(), 0, stream.lineage());
    log.put(holdingNothing.key(), holdingNothing.toJson());
    assertTrue("a stream that held nothing back wrote all it read", CommitLog.readByOthers(log, "views", "query-9", null)
        .wrote(0, 50, 3, 100));
  }
}
