package io.kplex.spark.txn;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaTopics;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The journal of commits in progress: the compacted topic {@code _kplex_commits}, one
 * record per table while its driver commits, keyed by table name. Written before the
 * first transaction is committed and deleted after the last, so a driver that dies in
 * between leaves a record from which the next session rolls the commit forward.
 *
 * <pre>
 * {"table":"pageviews_by_user","query":"&lt;Spark query id&gt;","claim":"writer/pageviews_by_user/&lt;uuid&gt;",
 *  "transactions":[{"id":"kplex.pageviews_by_user.0.0.0","producer_id":17,"epoch":0,"highs":{"3":1565...}}, ...],
 *  "epoch_mark":{...}, "completes":"partial/pageviews_by_user/&lt;query&gt;/&lt;epoch&gt;"}
 * </pre>
 * The same topic holds each streaming query's last epoch ({@link EpochMark}), the writer
 * claims ({@link WriterLease}) and the commits Kafka cut short ({@link PartialCommit}).
 */
public final class CommitLog {
  public static final String TOPIC = io.kplex.spark.kafka.KafkaTopics.COMMITS_TOPIC;
  private static final ObjectMapper JSON = new ObjectMapper();

  private final CompactedTopic topic;
  /** The mark of the commit this object began ({@link #begin}), and its JSON as written then. */
  private EpochMark begun;
  private byte[] begunJson;

  public CommitLog(KafkaTopics kafka) {
    this.topic = topic(kafka);
  }

  /**
   * The commit log's topic, its records scoped by table ({@link #scope}): a table's records
   * live in one partition of it, so a commit reads its own table's history, not every table's.
   */
  public static CompactedTopic topic(KafkaTopics kafka) {
    return new CompactedTopic(kafka, TOPIC, CommitLog::scope);
  }

  /**
   * Spreads a commit log written before scopes (every table in partition 0) over
   * {@link CompactedTopic#SCOPED_PARTITIONS} partitions by table ({@link CompactedTopic#spread}),
   * so that a commit reads its own table's records only. Refused, naming the table, while a
   * writer's claim is live (renewed within {@code staleMs} of {@code nowMs}) or a commit is
   * pending ({@code kplex recover} finishes it): it must run with no writer at work. Returns what
   * it did, for people.
   */
  public String spread(long staleMs, long nowMs) {
    for (Map.Entry<String, CompactedTopic.Lived> claim : topic.readPrefixLived("writer/").entrySet()) {
      if (nowMs - claim.getValue().latestMs() < WriterLease.staleAfter(claim.getValue().value(), staleMs)) {
        throw Errors.controlPlaneWriter(scope(claim.getKey()), claim.getKey(), nowMs - claim.getValue().latestMs());
      }
    }
    for (String key : topic.readAll().keySet()) {
      if (key.indexOf('/') < 0 || key.startsWith("pending/")) {
        throw Errors.controlPlaneCommitUnderWay(scope(key));
      }
    }
    int moved = topic.spread(CompactedTopic.SCOPED_PARTITIONS);
    return moved < 0 ? "nothing to do: " + TOPIC + " is spread by table already, or does not exist yet (kplex creates it"
        + " spread)" : "spread " + TOPIC + " over " + CompactedTopic.SCOPED_PARTITIONS + " partitions by table (" + moved
        + " records moved out of partition 0)";
  }

  /**
   * The table a commit log key (or key prefix) belongs to: {@code epoch/<t>/..},
   * {@code partial/<t>/..}, {@code writer/<t>/..}, {@code writer-taken/<t>/..},
   * {@code pending/<t>/..}, or {@code <t>} itself (a pending commit an older kplex recorded);
   * null for a prefix of every table's keys ({@code epoch/}).
   */
  static String scope(String keyOrPrefix) {
    int slash = keyOrPrefix.indexOf('/');
    if (slash < 0) return keyOrPrefix;
    int next = keyOrPrefix.indexOf('/', slash + 1);
    return next < 0 ? null : keyOrPrefix.substring(slash + 1, next);
  }

  /**
   * The key of the commit {@code table}'s writer under {@code claim} records: one per claim,
   * {@code pending/<table>/<claim id>}, so that a writer whose claim was taken over, waking up
   * and recording its commit, leaves the taker's record as it is (the order of its record and
   * the take-over marker tells recovery which to finish); {@code <table>} without a claim (as an
   * older kplex recorded every commit).
   */
  static String pendingKey(String table, String claim) {
    return claim == null ? table : pendingPrefix(table) + claim.substring(claim.lastIndexOf('/') + 1);
  }

  static String pendingPrefix(String table) {
    return "pending/" + table + "/";
  }

  /** A commit that was started and not finished. */
  public static final class Pending {
    /** Its key in the log ({@link #pendingKey}). */
    public final String key;
    public final String table;
    public final String query;
    public final List<TaskTransaction> transactions;
    /** The mark to record once its transactions are committed (an epoch's, or the INSERTs'); else null. */
    public final EpochMark mark;
    /** The key of the {@link PartialCommit} this commit completes (a rerun epoch's), or null. */
    public final String completes;
    /** Whether each transaction carries its virtual partitions (false: recorded by an older kplex). */
    final boolean vpsKnown;
    /** The writer claim ({@link WriterLease}) under which it was recorded, or null (an older kplex). */
    public final String claim;
    /** Its offset in the log (-1: not read from the log). */
    public final long offset;
    /**
     * How many writer tasks the write ran (a streaming epoch's: its rerun runs as many, so
     * that each task holds the virtual partitions it held, {@link PartialCommit#toCommit});
     * 0: not recorded (an INSERT, or an older kplex).
     */
    public final int tasks;

    Pending(String table, String query, List<TaskTransaction> transactions, EpochMark mark, String completes,
        boolean vpsKnown, String claim, long offset) {
      this(table, query, transactions, mark, completes, vpsKnown, claim, offset, 0);
    }

    Pending(String table, String query, List<TaskTransaction> transactions, EpochMark mark, String completes,
        boolean vpsKnown, String claim, long offset, int tasks) {
      this(pendingKey(table, claim), table, query, transactions, mark, completes, vpsKnown, claim, offset, tasks);
    }

    private Pending(String key, String table, String query, List<TaskTransaction> transactions, EpochMark mark,
        String completes, boolean vpsKnown, String claim, long offset, int tasks) {
      this.key = key;
      this.tasks = tasks;
      this.claim = claim;
      this.offset = offset;
      this.table = table;
      this.query = query;
      this.transactions = List.copyOf(transactions);
      this.mark = mark;
      this.completes = completes;
      this.vpsKnown = vpsKnown;
    }
  }

  public void begin(String table, String queryId, List<TaskTransaction> txns) {
    begin(table, queryId, txns, null);
  }

  /** {@code mark}: a streaming epoch's, recorded by {@link #end(Pending)} whoever finishes the commit. */
  public void begin(String table, String queryId, List<TaskTransaction> txns, EpochMark mark) {
    begin(table, queryId, txns, mark, null, null);
  }

  /**
   * {@code completes}: the key of the partial commit this one completes (a rerun epoch's), or
   * null; {@code claim}: the writer claim it is recorded under. Returns the record's offset.
   */
  public long begin(String table, String queryId, List<TaskTransaction> txns, EpochMark mark, String completes,
      String claim) {
    return begin(table, queryId, txns, mark, completes, claim, 0);
  }

  /** As above; {@code tasks}: how many writer tasks the write ran ({@link Pending#tasks}; 0: not recorded). */
  public long begin(String table, String queryId, List<TaskTransaction> txns, EpochMark mark, String completes,
      String claim, int tasks) {
    Map<String, byte[]> entries = mark == null ? new LinkedHashMap<>() : marking(mark);
    byte[] markJson = mark == null ? null : entries.remove(mark.key());
    begun = mark;
    begunJson = markJson;
    entries.put(pendingKey(table, claim), toJson(table, queryId, txns, markJson == null ? null
        : EpochMark.tree(markJson), completes, claim, tasks));
    return topic.putAll(entries);
  }

  /**
   * The records that write {@code mark}: under its key, whole or as its changes from the base
   * under the key's {@link EpochMark#BASE} ({@link EpochMark#toDeltaJson}), after a new base when
   * the key holds a whole mark now (that mark becomes the base). So a base is only ever a mark
   * its key held, committed; a key holding changes is never given a base older than the one
   * they were taken from; and a base is written before the key, in the same partition (the
   * table's): a reader finds every mark whole, or with its base.
   */
  private Map<String, byte[]> marking(EpochMark mark) {
    String key = mark.key();
    if (mark.equals(begun)) {
      // Its commit's end: written as at its beginning, against the base written then (this
      // object's; nothing else writes the key while its commit is under way).
      Map<String, byte[]> out = new LinkedHashMap<>();
      out.put(key, begunJson);
      return out;
    }
    Map<String, byte[]> stored = topic.readPrefixes(key);
    byte[] now = stored.get(key);
    byte[] base = stored.get(key + EpochMark.BASE);
    Map<String, byte[]> out = new LinkedHashMap<>();
    byte[] json = null;
    if (now != null && !EpochMark.isDelta(EpochMark.tree(now))) {
      json = mark.toDeltaJson(EpochMark.fromJson(now));
      if (json != null && !java.util.Arrays.equals(now, base)) out.put(key + EpochMark.BASE, now);
    } else if (now != null && base != null) {
      json = mark.toDeltaJson(EpochMark.fromJson(base));
    }
    out.put(key, json != null ? json : mark.toJson());
    return out;
  }

  /** Ends a commit whose transactions are all committed: its epoch mark first, if any. */
  public void end(Pending pending) {
    topic.putAll(ending(pending.key, pending.mark, pending.completes));
  }

  /** Ends {@code table}'s commit without a claim, recording {@code mark} (if not null) before, in one round trip. */
  public void end(String table, EpochMark mark) {
    topic.putAll(ending(pendingKey(table, null), mark, null));
  }

  private Map<String, byte[]> ending(String key, EpochMark mark, String completes) {
    Map<String, byte[]> entries = new LinkedHashMap<>();
    if (mark != null) entries.putAll(marking(mark));
    if (completes != null) entries.put(completes, null);
    entries.put(key, null);
    return entries;
  }

  /**
   * Ends a commit that Kafka cut short: the {@link PartialCommit} takes the pending record's
   * place (with {@code mark}, the INSERTs' mark raised by what was committed, if not null),
   * in one round trip, so the table is writable again and the loss is on record.
   */
  void settle(Pending pending, PartialCommit partial, EpochMark mark) {
    Map<String, byte[]> entries = new LinkedHashMap<>();
    if (mark != null) entries.putAll(marking(mark));
    entries.put(partial.key(), partial.toJson());
    entries.put(pending.key, null);
    topic.putAll(entries);
  }

  /** The commits of {@code table} that Kafka cut short and nothing completed yet. */
  public List<PartialCommit> partials(String table) {
    return partials(topic.readPrefixes(PartialCommit.prefix(table)), table);
  }

  /** As {@link #partials(String)}, from a snapshot of the log ({@link CompactedTopic#readAll}). */
  static List<PartialCommit> partials(Map<String, byte[]> log, String table) {
    List<PartialCommit> out = new ArrayList<>();
    log.forEach((key, json) -> {
      if (json != null && key.startsWith(PartialCommit.prefix(table))) out.add(PartialCommit.fromJson(json));
    });
    return out;
  }

  /** Forgets a partial INSERT an operator has been told of (a partial epoch is forgotten by its rerun). */
  public void forget(PartialCommit partial) {
    topic.put(partial.key(), null);
  }

  /** Records that a streaming query's epoch is committed (and what its next epoch needs). */
  public void mark(EpochMark mark) {
    topic.putAll(marking(mark));
  }

  /** The last epoch that {@code query} committed to {@code table}, if any. */
  public Optional<EpochMark> lastEpoch(String table, String query) {
    String key = EpochMark.key(table, query);
    Map<String, byte[]> stored = topic.readPrefixes(key);
    return Optional.ofNullable(stored.get(key)).map(json -> EpochMark.fromJson(json, stored.get(key + EpochMark.BASE)));
  }

  /**
   * Per virtual partition, the largest order value any streaming query has written to
   * {@code table} (every query's last epoch mark): where a new query's records must not go
   * below.
   */
  public Map<Integer, Long> writtenHighs(String table) {
    return writtenHighs(table, null);
  }

  /**
   * As {@link #writtenHighs(String)}, with what the committed part of a cut-short commit
   * holds, except for the partial epochs of {@code rerunning} (a query about to write them
   * again: its own rows are not below themselves).
   */
  public Map<Integer, Long> writtenHighs(String table, String rerunning) {
    return writtenHighs(topic.readPrefixes(EpochMark.key(table, ""), PartialCommit.prefix(table)), table, rerunning);
  }

  /**
   * The mark of the table's INSERTs ({@link EpochMark#INSERTS}) a new INSERT starts from, from
   * one read of the log: its written marks raised to what every writer wrote (the committed
   * part of a cut-short commit included), and what the INSERTs before it read ({@code reads}),
   * but for what they read of {@code source} under another id than {@code sourceId} (the topic
   * deleted and created again since; null: not known).
   */
  public InsertStart insertsStart(String table, String source, String sourceId, String rows, String query) {
    Map<String, byte[]> log = topic.readPrefixes(EpochMark.key(table, ""), PartialCommit.prefix(table));
    EpochMark inserts = EpochMark.all(log).get(EpochMark.key(table, EpochMark.INSERTS));
    if (inserts == null) inserts = EpochMark.start(table, EpochMark.INSERTS);
    EpochMark mark = new EpochMark(table, EpochMark.INSERTS, 0, io.kplex.spark.time.EventTime.Marks.of(
        writtenHighs(log, table, null)), List.of(), 0, null, inserts.reads(), inserts.readIds()).readingId(source, sourceId);
    Map<String, byte[]> marks = new java.util.HashMap<>(log);
    marks.keySet().removeIf(k -> !k.startsWith(EpochMark.key(table, "")));
    return new InsertStart(mark, source == null ? ReadByOthers.NONE : readByOthers(marks, source, sourceId, rows, query, null));
  }

  /**
   * Where an INSERT ({@code query}) starts: the INSERTs' mark ({@link #insertsStart}), and what
   * the table's other writers (streams, the INSERTs before) read of its source.
   */
  public record InsertStart(EpochMark mark, ReadByOthers readBefore) {}

  /** As {@link #writtenHighs(String, String)}, from a snapshot of the log. */
  static Map<Integer, Long> writtenHighs(Map<String, byte[]> log, String table, String rerunning) {
    Map<Integer, Long> out = new java.util.HashMap<>();
    String prefix = EpochMark.key(table, "");
    EpochMark.all(log).forEach((key, mark) -> {
      if (key.startsWith(prefix)) mark.marks().written().forEach((vp, w) -> out.merge(vp, w, Math::max));
    });
    log.forEach((key, json) -> {
      if (json != null && key.startsWith(PartialCommit.prefix(table))) {
        PartialCommit partial = PartialCommit.fromJson(json);
        if (!partial.query().equals(rerunning)) partial.committed().forEach((vp, w) -> out.merge(vp, w, Math::max));
      }
    });
    return out;
  }

  /**
   * The last epoch a stream from {@code topic} committed to {@code table} (the latest commit
   * time among the queries' marks that name that source), if any.
   */
  public Optional<EpochMark> lastOnSource(String table, String source) {
    return lastOnSource(topic.readPrefixes(EpochMark.key(table, "")), source);
  }

  static Optional<EpochMark> lastOnSource(Map<String, byte[]> marks, String source) {
    EpochMark best = null;
    for (EpochMark m : EpochMark.all(marks).values()) {
      if (m.lineage() == null || !source.equals(m.lineage().topic())) continue;
      if (best == null || m.lineage().atMs() > best.lineage().atMs()) best = m;
    }
    return Optional.ofNullable(best);
  }

  /**
   * What other writers of {@code table} read of {@code source}: every other query's stream, up
   * to where its last epoch stopped ({@code source.ends}), of which, if it stopped holding
   * records, it wrote those not above what its last mark says it wrote to their virtual
   * partitions (the rest it held back: {@link ReadByOthers}), and the table's batch INSERTs
   * (their mark's {@code reads}). Not
   * counted: {@code query} itself and the queries it took over from
   * ({@code resumedFrom}, the query it resumes from, and whom that one resumed from): the
   * records they held back were read but not written, and are this query's to write now.
   */
  public ReadByOthers readByOthers(String table, String source, String sourceId, String rows, String query,
      String resumedFrom) {
    return readByOthers(topic.readPrefixes(EpochMark.key(table, "")), source, sourceId, rows, query, resumedFrom);
  }

  static ReadByOthers readByOthers(Map<String, byte[]> marks, String source, String query, String resumedFrom) {
    return readByOthers(marks, source, null, null, query, resumedFrom);
  }

  /**
   * {@code rows}: the digest of the filters the reader's rows go through (null: none). A record
   * another writer read counts as read only where that writer kept what this one keeps: it read
   * it through no filter (it wrote it, or judged it late), or through the same filters. One it
   * read through other filters may not have been written: it is judged by the order rule instead.
   * {@code sourceId}: the source topic's id (null: not known); what was read of a topic of that
   * name under another id (deleted and created again since) is not counted.
   */
  static ReadByOthers readByOthers(Map<String, byte[]> marks, String source, String sourceId, String rows,
      String query, String resumedFrom) {
    Map<String, EpochMark> byQuery = new java.util.HashMap<>();
    for (EpochMark m : EpochMark.all(marks).values()) byQuery.put(m.query(), m);
    java.util.Set<String> own = new java.util.HashSet<>();
    for (String q = query; q != null && own.add(q); ) {
      EpochMark m = byQuery.get(q);
      String from = m == null || m.lineage() == null ? null : m.lineage().resumedQuery();
      q = from != null ? from : q.equals(query) && resumedFrom != null ? resumedFrom : null;
    }
    ReadByOthers out = ReadByOthers.NONE;
    for (EpochMark m : byQuery.values()) {
      if (own.contains(m.query())) continue;
      if (EpochMark.INSERTS.equals(m.query())) {
        if (!m.readOf(source, sourceId)) continue;
        out = out.withInserts(m.reads(source));
        if (rows != null) out = out.withInserts(m.reads(EpochMark.readsKey(source, rows)));
      } else if (m.lineage() != null && source.equals(m.lineage().topic())
          && (sourceId == null || m.lineage().topicId() == null || sourceId.equals(m.lineage().topicId()))
          && (m.lineage().rows() == null || m.lineage().rows().equals(rows))) {
        // (A stream that holds nothing wrote, or judged late, all it read.)
        boolean holds = m.heldRecords() > 0 || m.heldRecords() < 0 && !m.held().isEmpty();
        out = out.withStream(OffsetRanges.below(m.lineage().ends()), holds ? m.marks() : null);
      }
    }
    return out;
  }

  /**
   * A mark of another query's stream from the same source into {@code table} committed after
   * {@code mine} (a query's last mark), or empty: that query may have written what {@code mine}
   * holds back (it read the same records), or beyond it in their virtual partitions.
   */
  public Optional<EpochMark> overtaken(String table, EpochMark mine) {
    return overtaken(topic.readPrefixes(EpochMark.key(table, "")), mine);
  }

  static Optional<EpochMark> overtaken(Map<String, byte[]> marks, EpochMark mine) {
    EpochMark.Lineage own = mine.lineage();
    if (own == null) return Optional.empty();
    for (EpochMark m : EpochMark.all(marks).values()) {
      EpochMark.Lineage l = m.lineage();
      if (l != null && !m.query().equals(mine.query()) && own.topic().equals(l.topic()) && l.atMs() > own.atMs()) {
        return Optional.of(m);
      }
    }
    return Optional.empty();
  }

  /**
   * The largest watermark the strict streams into {@code table} published ({@link EpochMark.Floor})
   * that a reader of its topic starting at {@code starts} may use (it read everything before
   * it), or Long.MIN_VALUE.
   */
  public long carriedFloor(String table, Map<Integer, Long> starts) {
    return carriedFloor(topic.readPrefixes(EpochMark.key(table, "")), starts);
  }

  static long carriedFloor(Map<String, byte[]> marks, Map<Integer, Long> starts) {
    long out = Long.MIN_VALUE;
    for (EpochMark m : EpochMark.all(marks).values()) {
      if (m.lineage() == null) continue;
      List<EpochMark.Floor> floors = m.lineage().floors();
      for (int i = floors.size() - 1; i >= 0; i--) {
        if (floors.get(i).readBy(starts)) {
          out = Math.max(out, floors.get(i).order());
          break;
        }
      }
    }
    return out;
  }

  /** The tables a stream from {@code topic} committed epochs to (their marks name it). */
  public java.util.SortedSet<String> tablesStreamedFrom(String sourceTopic) {
    java.util.SortedSet<String> out = new java.util.TreeSet<>();
    EpochMark.all(topic.readPrefixes("epoch/")).values().forEach(m -> {
      if (m.lineage() != null && sourceTopic.equals(m.lineage().topic())) out.add(m.table());
    });
    return out;
  }

  /** The query whose marks on {@code table} say it resumed from {@code query}'s, or null. */
  public String resumedBy(String table, String query) {
    for (EpochMark m : EpochMark.all(topic.readPrefixes(EpochMark.key(table, ""))).values()) {
      if (m.lineage() != null && query.equals(m.lineage().resumedQuery()) && !m.query().equals(query)) {
        return m.query();
      }
    }
    return null;
  }

  /**
   * The key of the record that names, by its topic id, the topic {@code table}'s writes went to:
   * {@code topic/<table>/id}, in the table's scope. A topic deleted and created again keeps its
   * name and gets a new id, so marks of records written to the old one are told apart from the
   * topic that holds the table's name now ({@link ExactlyOnceCommitter#requireTopicHoldsWritten}).
   */
  static String topicIdKey(String table) {
    return "topic/" + table + "/id";
  }

  /** The id of the topic {@code table}'s writes went to, as the log recorded it; empty before its first write. */
  public Optional<String> writtenTopicId(String table) {
    return topic.latest(topicIdKey(table)).map(e -> topicIdOf(e.getValue()));
  }

  /** The topic id in a {@link #topicIdKey} record's JSON. */
  static String topicIdOf(byte[] json) {
    try {
      return JSON.readTree(json).path("topic_id").asText();
    } catch (IOException e) {
      throw Errors.unreadableMetadata(Errors.MetadataRecord.TOPIC_ID_RECORD, TOPIC, e);
    }
  }

  /** Records that {@code table}'s writes go to {@code topicName}, whose topic id is {@code id}. */
  public void recordTopicId(String table, String topicName, String id, long atMs) {
    ObjectNode node = JSON.createObjectNode();
    node.put("table", table).put("topic", topicName).put("topic_id", id).put("at_ms", atMs);
    topic.put(topicIdKey(table), node.toString().getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Removes every epoch mark of {@code table}, its partial and pending commits and the topic id
   * its writes went to (it was dropped: a table created again under its name starts afresh).
   */
  public void forgetMarks(String table) {
    String prefix = EpochMark.key(table, "");
    Map<String, byte[]> gone = new LinkedHashMap<>();
    topic.readPrefixes(prefix, PartialCommit.prefix(table), topicIdKey(table), pendingPrefix(table)).forEach((key, json) -> {
      if (json != null) gone.put(key, null);
    });
    // A commit under way, as an older kplex recorded it: its transactions wrote the topic deleted.
    if (topic.latest(table).isPresent()) gone.put(table, null);
    if (!gone.isEmpty()) topic.putAll(gone);
  }

  /** The first of {@code table}'s commits started and not finished ({@link #pendings}), if any. */
  public Optional<Pending> pending(String table) {
    return pendings(table).stream().findFirst();
  }

  /**
   * {@code table}'s commits started and not finished, in the order they were recorded: one
   * at most, but for the record of a writer whose claim was taken over (it woke up and
   * recorded its commit), which recovery tells by its offset and removes.
   */
  public List<Pending> pendings(String table) {
    List<Pending> out = new ArrayList<>();
    Map<String, Map.Entry<Long, byte[]>> found = topic.latest(table, pendingPrefix(table));
    found.forEach((key, e) -> {
      JsonNode mark = markOf(e.getValue());
      // An epoch's mark written as changes: its base was written before the pending record, and
      // is not written again before the pending record is gone.
      byte[] base = mark == null || !EpochMark.isDelta(mark) ? null : topic.latest(EpochMark.key(table,
          mark.path("query").asText()) + EpochMark.BASE).map(Map.Entry::getValue).orElse(null);
      out.add(fromJson(key, e.getValue(), e.getKey(), base));
    });
    out.sort(java.util.Comparator.comparingLong(p -> p.offset));
    return out;
  }

  /**
   * How many writer tasks epoch {@code epoch} of {@code query} ran, if a driver recorded its
   * commit and Kafka may have cut it short: its pending record (not settled yet) or its
   * {@link PartialCommit}; 0 if neither holds it recorded. A rerun of that epoch runs as many
   * tasks, so that each holds the virtual partitions it held ({@link PartialCommit#toCommit}).
   */
  public int rerunTasks(String table, String query, long epoch) {
    // The pending record first: a recovery that settles the commit meanwhile writes its partial
    // and removes the pending record in one write, so one of the two reads finds it.
    for (Map.Entry<Long, byte[]> e : topic.latest(table, pendingPrefix(table)).values()) {
      try {
        JsonNode node = JSON.readTree(e.getValue());
        JsonNode mark = node.path("epoch_mark");
        if (query.equals(node.path("query").asText(null)) && mark.path("epoch").asLong(-1) == epoch) {
          return node.path("tasks").asInt(0);
        }
      } catch (IOException bad) {
        throw Errors.unreadableMetadata(Errors.MetadataRecord.PENDING_COMMIT, TOPIC, bad);
      }
    }
    return topic.latest(PartialCommit.prefix(table) + query + "/" + epoch)
        .map(partial -> PartialCommit.fromJson(partial.getValue()).tasks()).orElse(0);
  }

  /** Writes these keys in their order in one round trip (the writer claims' bookkeeping). */
  void putAll(Map<String, byte[]> entries) {
    topic.putAll(entries);
  }

  CompactedTopic topic() {
    return topic;
  }

  /** Removes {@code pending}'s record, recording nothing else. */
  public void drop(Pending pending) {
    topic.put(pending.key, null);
  }

  static byte[] toJson(String table, String queryId, List<TaskTransaction> txns) {
    return toJson(table, queryId, txns, null);
  }

  static byte[] toJson(String table, String queryId, List<TaskTransaction> txns, EpochMark mark) {
    return toJson(table, queryId, txns, mark == null ? null : mark.toJsonNode(), null, null, 0);
  }

  static byte[] toJson(String table, String queryId, List<TaskTransaction> txns, EpochMark mark, String completes,
      String claim) {
    return toJson(table, queryId, txns, mark == null ? null : mark.toJsonNode(), completes, claim, 0);
  }

  /**
   * {@code mark}: the epoch mark's JSON, whole or as changes to its base ({@link #marking});
   * {@code tasks}: the write's writer-task count, recorded when known (&gt; 0).
   */
  static byte[] toJson(String table, String queryId, List<TaskTransaction> txns, JsonNode mark, String completes,
      String claim, int tasks) {
    ObjectNode node = JSON.createObjectNode();
    node.put("table", table);
    node.put("query", queryId);
    ArrayNode list = node.putArray("transactions");
    for (TaskTransaction t : txns) {
      ObjectNode o = list.addObject().put("id", t.id()).put("producer_id", t.producerId()).put("epoch", t.epoch());
      ObjectNode highs = o.putObject("highs");
      t.highs().forEach((vp, h) -> highs.put(Integer.toString(vp), h));
    }
    if (mark != null) node.set("epoch_mark", mark);
    if (completes != null) node.put("completes", completes);
    if (claim != null) node.put("claim", claim);
    if (tasks > 0) node.put("tasks", tasks);
    return node.toString().getBytes(StandardCharsets.UTF_8);
  }

  static Pending fromJson(byte[] json) {
    return fromJson(json, -1, null);
  }

  /** The epoch mark a pending record carries, as written (whole or as changes), or null. */
  private static JsonNode markOf(byte[] json) {
    try {
      return JSON.readTree(json).get("epoch_mark");
    } catch (IOException e) {
      throw Errors.unreadableMetadata(Errors.MetadataRecord.PENDING_COMMIT, TOPIC, e);
    }
  }

  static Pending fromJson(byte[] json, long offset) {
    return fromJson(json, offset, null);
  }

  /** {@code base}: the base of its epoch mark, if that is written as changes. */
  static Pending fromJson(byte[] json, long offset, byte[] base) {
    return fromJson(null, json, offset, base);
  }

  /** {@code key}: where it was read ({@link #pendingKey} of its table and claim if null). */
  static Pending fromJson(String key, byte[] json, long offset, byte[] base) {
    try {
      JsonNode node = JSON.readTree(json);
      List<TaskTransaction> txns = new ArrayList<>();
      boolean vpsKnown = true;
      for (JsonNode t : node.path("transactions")) {
        Map<Integer, Long> highs = new java.util.HashMap<>();
        t.path("highs").fields().forEachRemaining(e -> highs.put(Integer.parseInt(e.getKey()), e.getValue().asLong()));
        vpsKnown &= t.has("highs");
        txns.add(new TaskTransaction(t.path("id").asText(), t.path("producer_id").asLong(),
            (short) t.path("epoch").asInt(), highs));
      }
      EpochMark mark = node.has("epoch_mark") ? EpochMark.fromJson(node.get("epoch_mark"), base) : null;
      String table = node.path("table").asText();
      String claim = node.path("claim").asText(null);
      return new Pending(key != null ? key : pendingKey(table, claim), table, node.path("query").asText(null), txns,
          mark, node.path("completes").asText(null), vpsKnown, claim, offset, node.path("tasks").asInt(0));
    } catch (IOException e) {
      throw Errors.unreadableMetadata(Errors.MetadataRecord.PENDING_COMMIT, TOPIC, e);
    }
  }
}
