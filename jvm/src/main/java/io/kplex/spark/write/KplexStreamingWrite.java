package io.kplex.spark.write;

import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.kafka.MonitorGroup;
import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.stream.HeldRelease;
import io.kplex.spark.txn.EpochMark;
import io.kplex.spark.txn.ExactlyOnceCommitter;
import io.kplex.spark.txn.ReadByOthers;
import io.kplex.spark.txn.PartialCommit;
import io.kplex.spark.txn.TaskTransaction;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.txn.WriterLease;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory;
import org.apache.spark.sql.connector.write.streaming.StreamingWrite;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The driver side of a streaming query writing a kplex table: each micro-batch (epoch) is
 * written as a batch write is, and committed as one ({@link ExactlyOnceCommitter}), with
 * the epoch recorded in the commit log in the same step ({@link EpochMark}): Spark may call
 * {@link #commit} twice for an epoch, or run it again after a driver restart, and a
 * committed epoch writes nothing a second time. Order across epochs: see
 * {@link StreamingDataWriter}; what a batch may release comes from its source
 * ({@link HeldRelease}, addressed by query and batch); the bounds it uses come from the
 * last epoch's mark, read from {@code _kplex_commits} once per run and then kept in memory
 * ({@link StreamingRuns}).
 */
final class KplexStreamingWrite implements StreamingWrite {
  private static final Logger LOG = LoggerFactory.getLogger(KplexStreamingWrite.class);

  private final WriteConf conf;
  private final WriteSchema schema;
  private final String queryId;
  private final HeldRows held;
  private final Consumer<Map<String, String>> progress;
  private final ExactlyOnceCommitter committer;
  private final StreamingRuns.Run run;
  /** The last committed epoch's mark, as of this batch. */
  private EpochMark last;
  private WriterLease lease;
  /** Whether the epoch being planned is the first of this run of the query. */
  private boolean firstOfRun;
  /**
   * The table's topic as described when Spark planned this micro-batch's write, for the check
   * before its tasks (null: described then). Asked while Spark plans the rest of the write and
   * runs the map stage's set-up, so the check waits for no round trip of its own. Taken once:
   * a later epoch through this same write (none in the Spark versions kplex runs on) describes.
   */
  private java.util.function.Supplier<java.util.Optional<org.apache.kafka.clients.admin.TopicDescription>>
      topicAsked;
  /** Epoch -> how its write started (below); removed once it is committed or aborted. */
  private final Map<Long, Started> epochs = new ConcurrentHashMap<>();

  /**
   * An epoch as its writer factory was made: what its tasks started from, and when, on the
   * driver's clock (none of its transactions is older); the settings its tasks write with
   * (those of the write, or a rerun's longer transaction timeout, {@link #epochConf}).
   */
  private record Started(EpochStart start, long atMs, HeldRelease.Signal signal, WriteConf conf) {}

  KplexStreamingWrite(WriteConf conf, WriteSchema schema, String queryId, HeldRows held,
      Consumer<Map<String, String>> progress) {
    this.conf = conf;
    this.schema = schema;
    this.queryId = queryId;
    this.held = held;
    this.progress = progress;
    this.run = StreamingRuns.DRIVER.of(conf.table, queryId);
    io.kplex.spark.stream.QuerySinks.DRIVER.writes(queryId, conf.table);
    this.committer = new ExactlyOnceCommitter(conf.kafka, conf.table, conf.topic, conf.virtualPartitions, conf.faults,
        run.runId == null ? null : () -> run.clients(conf.kafka));
    boolean recovered;
    synchronized (run) {
      recovered = run.recovered;
    }
    this.topicAsked = recovered ? committer.describeTopicSoon() : null;
  }

  @Override
  public StreamingDataWriterFactory createStreamingWriterFactory(PhysicalWriteInfo info) {
    if (conf.latePolicy == io.kplex.spark.conf.LatePolicy.SIDE_TOPIC
        && io.kplex.spark.stream.QuerySinks.DRIVER.readsTopic(queryId, conf.lateTopic)) {
      // Late records sent to the stream's own source would be read again, late again, without
      // end. (Its source has planned this micro-batch, so it has said what it reads.)
      throw Errors.lateTopicIsSource(conf.table, conf.lateTopic);
    }
    synchronized (run) {
      // One writer per table (fail naming the other writer if one is live): claimed for the
      // whole run (renewed, and removed when the query's thread ends), or for this epoch
      // when Spark runs no stream thread.
      if (run.lease != null && run.lease.takenOverBy() != null) {
        // This run stood still past its claim timeout and another writer took the table:
        // planning on would open transactions next to the taker's (and fence them).
        throw Errors.claimTaken(conf.table, run.lease.takenOverBy(), false);
      }
      if (run.lease == null || !run.lease.held()) {
        run.lease = WriterLease.acquire(conf.kafka, conf.table, queryId, run.runId == null ? null : Thread.currentThread(),
            conf.claimTimeoutMs);
        run.lease.whenEnded(() -> StreamingRuns.DRIVER.claimEnded(run));
      }
      lease = run.lease;
      // Spark reruns a planned micro-batch only at a (re)start: the first epoch of a run (a
      // failed commit ends the run: failed()) is the only one that may have expired before.
      firstOfRun = !run.recovered;
      if (!run.recovered) {
        // Once per run of the query: finish what a killed driver left half committed, fence
        // what its tasks left open, so nothing pins the topic's last stable offset.
        committer.recover(run.lease);
        String by = committer.resumedBy(queryId);
        if (by != null) throw Errors.querySuperseded(conf.table, queryId, by);
        // Held records are released without a look at what others wrote since: if another
        // query's stream from the same source committed after this one stopped, it may have
        // written them already, or beyond them in their virtual partitions.
        EpochMark mine = committer.lastEpoch(queryId);
        run.topicId = committer.requireTopicHoldsWritten(mine.marks().written());
        if (mine.heldRecords() != 0 && mine.lineage() != null) {
          EpochMark other = committer.overtaken(mine).orElse(null);
          if (other != null) {
            throw Errors.heldOvertaken(conf.table, queryId, mine.heldRecords(), other.query(), mine.lineage().topic());
          }
        }
        run.partials(conf.exactlyOnce() ? committer.partialEpochs(queryId) : Map.of());
        run.recovered = true;
        run.last = mine;  // read once per run, after the recovery
      }
      if (run.last == null) run.last = committer.lastEpoch(queryId);
      // The topic the run's epochs went to is still the table's: one deleted, or deleted and
      // created again, outside kplex while the query ran fails it before its tasks send anything.
      var asked = topicAsked;
      topicAsked = null;
      if (!firstOfRun) run.topicId = committer.requireSameTopic(run.topicId, run.last.marks().written(), asked);
      last = run.last;
    }
    HeldRelease.Signal signal = HeldRelease.take();
    if (last.epoch() < 0 && signal.resumeFrom() != null && !signal.resumeFrom().equals(conf.table)) {
      throw Errors.resumeOtherTable(signal.resumeFrom(), conf.table);
    }
    if (last.epoch() < 0 && schema.positioned() && signal.topic() != null && !signal.starts().isEmpty()) {
      EpochMark from = resumed(signal);
      if (from == null && signal.resumeFrom() != null) {
        EpochMark now = committer.lastOnSource(signal.topic()).orElse(null);
        throw Errors.resumeStale(conf.table, signal.topic(), now == null ? Map.of() : now.lineage().ends(),
            signal.starts(), now == null ? null : now.query());
      }
      if (from != null) {
        synchronized (run) {
          run.last = from;
        }
        last = from;
      }
    }
    // Rows without their source position (another source, or a plan SourcePositions does
    // not follow, such as a join) count as one partition, whatever the source reads.
    HeldRelease.Signal source = schema.positioned() ? signal : HeldRelease.NONE;
    if (!schema.positioned() && run.warnPositionsOnce()) {
      LOG.warn("kplex: the rows of query {} into table {} come without their source position (another source than"
          + " kplex's, or a join, an aggregation or a union before the sink): its input counts as one partition,"
          + " judged late and released against earlier micro-batches, and a partition that runs behind others is"
          + " not waited for (see sourcePositions in the progress)", queryId, conf.table);
    }
    EpochStart start = new EpochStart(last.epoch(), carried(last.marks(), source), source.partitions(), source.topic(),
        signal.releaseAll(), last.held(), source.starts(), source.ends(), source.idleBy(last.marks()),
        readBefore(source, last.lineage() == null ? null : last.lineage().resumedQuery()));
    WriteConf writing = firstOfRun ? epochConf(last.epoch() + 1) : conf;
    epochs.put(last.epoch() + 1, new Started(start, committer.clock().millis(), signal, writing));
    held.clean(last.epoch(), last.held());
    return new StreamingWriterFactory(writing, schema, start, held, info.numPartitions(), run.runId,
        run.producersFrom(last.epoch()));
  }

  /**
   * The settings epoch {@code epoch} writes with: the write's; or, when the epoch failed
   * with {@code [KPLEX_COMMIT_EXPIRED]} in an earlier run ({@link HeldRows#expired}), a
   * longer transaction timeout, since Spark reruns a planned micro-batch with the same
   * offsets and the same work would expire again: four times the one it expired after (at
   * least one minute more), up to the broker's default transaction.max.timeout.ms (15 min).
   */
  private WriteConf epochConf(long epoch) {
    if (!conf.exactlyOnce()) return conf;
    long expiredAfter = held.expiredAfter(epoch);
    if (expiredAfter < 0) return conf;
    long now = ExactlyOnceCommitter.transactionTimeoutMs(conf.kafka);
    long longer = rerunTimeoutMs(Math.max(now, expiredAfter));
    if (longer <= now) return conf;
    LOG.warn("kplex: micro-batch {} of query {} into table {} expired in an earlier run after transaction.timeout.ms"
        + " {} ms: its rerun, with the same offsets, writes with transaction.timeout.ms {} ms", epoch, queryId,
        conf.table, expiredAfter, longer);
    return conf.withKafka(conf.kafka.with(org.apache.kafka.clients.producer.ProducerConfig.TRANSACTION_TIMEOUT_CONFIG,
        Long.toString(longer)));
  }

  /** A rerun's transaction timeout after one of {@code expiredMs}; see {@link #epochConf}. */
  static long rerunTimeoutMs(long expiredMs) {
    long longer = Math.max(expiredMs * 4, expiredMs + 60_000);
    return Math.max(expiredMs, Math.min(longer, ExactlyOnceCommitter.DEFAULT_TRANSACTION_TIMEOUT_MS));
  }

  /** The clocks of the executors may run this far ahead of the driver's (see {@link EpochTally#budgetFrom}). */
  static final long CLOCK_SKEW_MS = 5_000;

  /**
   * Before its first epoch, a query that starts on its source exactly where the table's last
   * stream from that source stopped (startingOffsets = 'table', or those offsets given) takes
   * over that stream's state: its marks, so lateness and order go on where they were, and its
   * held records, named by their full path (this query's first epoch merges them into its own
   * files), so the records it held back are written, in order, once. Null when it starts
   * elsewhere (a new stream: only the table's floor per virtual partition applies). Under the
   * table's writer claim, so two queries never take over the same state.
   */
  private EpochMark resumed(HeldRelease.Signal signal) {
    EpochMark from = committer.lastOnSource(signal.topic()).orElse(null);
    if (from == null || from.query().equals(queryId)) return null;
    Map<Integer, Long> ends = from.lineage().ends();
    // The source topic deleted and created again since that stream stopped: its offsets are the
    // old topic's, and the source reported the loss (or failed) as it planned from the new one's start.
    boolean recreated = signal.topicId() != null && from.lineage().topicId() != null
        && !signal.topicId().equals(from.lineage().topicId());
    // A query that did not ask to resume is a new stream over the new topic: the old stream's
    // marks (its partitions' event times) and held records are not its own.
    if (recreated && signal.resumeFrom() == null) {
      if (from.heldRecords() != 0) {
        LOG.warn("kplex: query {} of table {} starts on topic '{}', deleted and created again since query {} stopped"
            + " on it holding {} records: this query does not take them over (a query with startingOffsets = 'table'"
            + " and failOnDataLoss = false would)", queryId, conf.table, signal.topic(), from.query(),
            from.heldRecords() < 0 ? "some" : from.heldRecords());
      }
      return null;
    }
    for (Map.Entry<Integer, Long> e : recreated ? Map.<Integer, Long>of().entrySet() : ends.entrySet()) {
      // (A partition the source no longer has is not read on: its loss is the source's to report.)
      if (!signal.ends().containsKey(e.getKey())) continue;
      // (Where it resumed, not where the batch reads from: with failOnDataLoss = false, offsets the
      // broker deleted since that stream stopped moved the batch's start on, the loss reported.)
      if (!e.getValue().equals(signal.resumedStarts().get(e.getKey()))) return null;
    }
    String by = committer.resumedBy(from.query());
    if (by != null && !by.equals(queryId)) throw Errors.resumeTaken(conf.table, from.query(), by);
    // An epoch after the one resumed from that Kafka cut short: part of what it read is in the
    // table, and only its own query's rerun (from its checkpoint) completes it exactly once.
    for (io.kplex.spark.txn.PartialCommit partial : committer.partialEpochs(from.query()).values()) {
      if (partial.epoch() > from.epoch()) {
        throw Errors.resumeCutShort(conf.table, signal.topic(), ends, partial.query(), partial.epoch(),
            partial.committed().keySet(), partial.lostVps());
      }
    }
    String changed = from.heldRecords() == 0 ? null : changedColumns(from.lineage().heldSchema(), schema.schema);
    if (changed != null) throw Errors.heldColumnsChanged(conf.table, from.query(), from.heldRecords(), changed);
    String base = from.lineage().heldBase();
    List<String> heldFiles = new java.util.ArrayList<>();
    for (String named : from.held()) {
      HeldRows.Ref ref = HeldRows.Ref.parse(named);
      String file = base == null || HeldRows.absolute(ref.file()) ? ref.file() : base + "/" + ref.file();
      if (!held.exists(file)) throw Errors.resumeHeldGone(conf.table, from.query(), from.heldRecords(), file);
      heldFiles.add(new HeldRows.Ref(file, ref.position(), ref.rows()).toString());
    }
    LOG.info("kplex: query {} resumes table {} from epoch {} of query {} on topic '{}' (offsets {}), taking over"
        + " its {} held records", queryId, conf.table, from.epoch(), from.query(), signal.topic(), ends,
        Math.max(0, from.heldRecords()));
    return new EpochMark(conf.table, queryId, -1, from.marks(), heldFiles, from.heldRecords(),
        new EpochMark.Lineage(signal.topic(), ends, null, from.query() + "@" + from.epoch(), from.lineage().atMs()));
  }

  /**
   * The marks an epoch starts from, with the watermark the strict streams into its source
   * table published ({@link EpochMark.Floor}) when the epoch starts past where they published
   * it: every virtual partition of the source then stands at least there, quiet and empty ones
   * included, so none holds this query's watermark below it (no idleness needed between kplex
   * tables). A topic source, or none usable: the marks as they are.
   */
  private EventTime.Marks carried(EventTime.Marks marks, HeldRelease.Signal source) {
    if (source.sourceTable() == null || source.starts().isEmpty()) return marks;
    long floor = committer.carriedFloor(source.sourceTable(), source.starts());
    return marks.withFloor(source.partitions(), floor, conf.maxDelayMs);
  }

  /**
   * A strict stream's published watermarks ({@link EpochMark.Floor}) after this epoch: its
   * watermark, or the lowest bound a task that still holds records released below if lower,
   * less one (a record below the watermark arriving later is late, since no source partition
   * goes idle; each task holds only what is at or above its own bound, the watermark as of
   * what that task read, so the epoch's watermark over all tasks' reads alone would pass
   * records a task still holds), from the table topic's end offsets now (what any writer
   * wrote before is below them). Not strict (idleTimeoutMs &gt;= 0: an idle partition may
   * bring a record below the watermark later): none new, the earlier ones stay true (the
   * table's floor holds them, see {@link #commit}).
   */
  private java.util.List<EpochMark.Floor> floors(EpochMark mark, Started epoch, EpochTally tally) {
    java.util.List<EpochMark.Floor> before = last.lineage() == null ? List.of() : last.lineage().floors();
    HeldRelease.Signal s = epoch.signal();
    if (s.idleTimeoutMs() >= 0 || !schema.positioned()) return before;
    EpochStart start = epoch.start();
    long watermark = Math.min(mark.marks().watermark(start.partitions(), new int[0], conf.maxDelayMs),
        tally.lowestHoldingBound(start.marks(), start.partitions(), start.idle(), conf.maxDelayMs));
    if (watermark == Long.MIN_VALUE || !before.isEmpty() && before.get(before.size() - 1).order() >= watermark - 1) {
      return before;
    }
    java.util.List<EpochMark.Floor> out = new java.util.ArrayList<>(before);
    out.add(new EpochMark.Floor(watermark - 1, topicEnds()));
    return out.subList(Math.max(0, out.size() - EpochMark.FLOORS_KEPT), out.size());
  }

  /** The end offset of each partition of the table's topic. */
  private Map<Integer, Long> topicEnds() {
    if (run.runId != null) return run.clients(conf.kafka).endOffsets(conf.topic);
    try (KafkaTopics kafka = new KafkaTopics(conf.kafka)) {
      return kafka.endOffsets(conf.topic);
    }
  }

  /**
   * What other writers of the table read of this epoch's source ({@link EpochStart#readBefore}),
   * not counting the queries this one took over from ({@code resumedFrom}): looked up once per
   * run of the query (once per epoch for a write outside a run).
   */
  private ReadByOthers readBefore(HeldRelease.Signal source, String resumedFrom) {
    if (source.topic() == null || source.starts().isEmpty()) return ReadByOthers.NONE;
    return run.readByOthers(source.topic(), source.topicId(), resumedFrom,
        () -> committer.readByOthers(source.topic(), source.topicId(), schema.sourceRows, queryId, resumedFrom));
  }

  /**
   * How the columns of a query taking held rows over ({@code now}) differ from those the rows
   * were held as ({@code heldDdl}, as the old query's marks record them), or null if they match
   * in number and type, position by position (names may change: rows are read by position).
   */
  static String changedColumns(String heldDdl, org.apache.spark.sql.types.StructType now) {
    if (heldDdl == null) return null;  // not recorded (an older kplex): the held file's column count is checked
    org.apache.spark.sql.types.StructField[] was = org.apache.spark.sql.types.StructType.fromDDL(heldDdl).fields();
    org.apache.spark.sql.types.StructField[] is = now.fields();
    List<String> out = new java.util.ArrayList<>();
    for (int i = 0; i < Math.max(was.length, is.length); i++) {
      String before = i < was.length ? was[i].name() + " " + was[i].dataType().simpleString() : "none";
      String after = i < is.length ? is[i].name() + " " + is[i].dataType().simpleString() : "none";
      if (i >= was.length || i >= is.length || !was[i].dataType().equals(is[i].dataType())) {
        out.add("column " + (i + 1) + ": " + before + " -> " + after);
      }
    }
    return out.isEmpty() ? null : String.join("; ", out);
  }

  /**
   * The epoch's lineage: its source and where it stopped there, where its held files live, and
   * the query it resumed from (carried from the marks before it); none without a kplex source.
   */
  private EpochMark withLineage(EpochMark mark, Started epoch, EpochTally tally) {
    HeldRelease.Signal s = epoch == null ? null : epoch.signal();
    if (s == null || s.topic() == null || s.ends().isEmpty() || !schema.positioned()) return mark;
    String resumedFrom = last.lineage() == null ? null : last.lineage().resumedFrom();
    if (heldBase == null) heldBase = held.base();
    java.util.List<EpochMark.Floor> floors = floors(mark, epoch, tally);
    if (!floors.isEmpty()) {
      // The table's floor for every virtual partition: no writer (an INSERT, another query)
      // writes below the last published watermark, so it stays true whoever writes next.
      long published = floors.get(floors.size() - 1).order();
      mark = new EpochMark(mark.table(), mark.query(), mark.epoch(),
          mark.marks().withWrittenAtLeast(Map.of(EventTime.Marks.EVERY_VP, published)), mark.held(),
          mark.heldRecords(), mark.lineage(), mark.reads());
    }
    return mark.withLineage(new EpochMark.Lineage(s.topic(), new java.util.TreeMap<>(s.ends()), heldBase,
        resumedFrom, committer.clock().millis(), schema.schema.toDDL(), floors, s.topicId(), schema.sourceRows));
  }

  /** The held files' folder, qualified once per write (a FileSystem call), for the lineage. */
  private String heldBase;

  /**
   * Tells the query's source how many offsets the committed epoch read and how long it took
   * from its write's start, so that it sizes the next micro-batch within the commit's time
   * budget ({@link io.kplex.spark.stream.QuerySinks#pace}).
   */
  private void paced(Started epoch) {
    long offsets = 0;
    HeldRelease.Signal s = epoch.signal();
    for (Map.Entry<Integer, Long> e : s.ends().entrySet()) {
      offsets += Math.max(0, e.getValue() - s.starts().getOrDefault(e.getKey(), e.getValue()));
    }
    io.kplex.spark.stream.QuerySinks.DRIVER.paced(queryId, offsets, committer.clock().millis() - epoch.atMs());
  }

  /** Ends the claim: after a failed epoch, or after each epoch of a write with no run. */
  private void release() {
    if (lease != null) {
      lease.close();
      lease = null;
    }
  }

  /**
   * Commits epoch {@code epochId}, once: an epoch already committed (Spark calls again, or
   * reruns it after a restart) writes nothing; otherwise its task messages are tallied, its
   * bounds decided, its rows committed with its mark, and its figures published.
   */
  @Override
  public void commit(long epochId, WriterCommitMessage[] messages) {
    long started = committer.clock().nanos();
    try {
      if (!committed(epochId)) {
        Started epoch = epochs.get(epochId);
        EpochTally tally = EpochTally.of(conf.physicalPartitions, messages);
        int[] idle = epoch == null ? new int[0] : epoch.start().idle();
        EpochMark mark = withLineage(tally.mark(conf.table, queryId, epochId, last.marks(), idle,
            epoch == null ? 0 : epoch.signal().atMs()), epoch, tally);
        long writeStarted = epoch == null ? committer.clock().millis() : epoch.atMs();
        doCommit(tally, mark, tally.budgetFrom(writeStarted, CLOCK_SKEW_MS), epoch == null ? conf : epoch.conf());
        advance(mark);
        if (epoch != null) paced(epoch);
        if (epoch != null && epoch.signal().releaseAll()) {
          io.kplex.spark.stream.QuerySinks.DRIVER.released(queryId, io.kplex.spark.stream.QuerySinks.Release.DONE);
        }
        publish(tally, mark, epoch == null ? HeldRelease.NONE.partitions() : epoch.start().partitions(), idle, started);
        monitor(epoch == null ? HeldRelease.NONE : epoch.signal(), tally);
      }
      if (run.runId == null) release();
    } catch (RuntimeException | Error e) {
      failed();
      throw e;
    }
  }

  /** After a failed commit: the claim is given up, and what was left half done is recovered (and read) afresh. */
  private void failed() {
    synchronized (run) {
      run.recovered = false;
      run.last = null;
      run.lease = null;
      run.forgetReadByOthers();  // and the producers' epoch
    }
    release();
  }

  /** Whether epoch {@code epochId} is already committed (then there is nothing more to write). */
  private boolean committed(long epochId) {
    if (last == null) last = committer.lastEpoch(queryId);
    if (epochId > last.epoch()) return false;
    LOG.info("kplex: epoch {} of query {} is already committed to table {}: nothing more to write",
        epochId, queryId, conf.table);
    return true;
  }

  /**
   * Commits the epoch's transactions and its mark in one step (exactly once), or records
   * its mark once its rows are sent (at least once). {@code startedAtMs}: when its write
   * started, on the driver's clock (none of its transactions is older).
   */
  private void doCommit(EpochTally tally, EpochMark mark, long startedAtMs, WriteConf writing) {
    if (!conf.exactlyOnce()) {
      committer.mark(mark);
      return;
    }
    // An epoch Kafka cut short in an earlier run: commit only the lost tasks' rows.
    PartialCommit partial = run.partial(mark.epoch());
    List<TaskTransaction> txns = partial == null ? tally.txns : partial.toCommit(tally.txns);
    if (partial != null) {
      LOG.warn("kplex: epoch {} of query {} was cut short by Kafka in an earlier run: committing the {} of its {}"
          + " transactions that hold virtual partitions {}", mark.epoch(), queryId, txns.size(), tally.txns.size(),
          partial.lostVps());
    }
    ExactlyOnceCommitter committing = writing == conf ? committer : new ExactlyOnceCommitter(writing.kafka, conf.table,
        conf.topic, conf.virtualPartitions, conf.faults, run.runId == null ? null : () -> run.clients(conf.kafka));
    try {
      committing.commit(queryId, txns, tally.lastOffsets, mark, startedAtMs, lease, partial, tally.tasks);
    } catch (io.kplex.spark.errors.KplexException e) {
      // Nothing committed: the rerun of this micro-batch (same offsets) gets more time.
      if (!"COMMIT_EXPIRED".equals(e.code())) throw e;
      long expiredAfter = ExactlyOnceCommitter.transactionTimeoutMs(writing.kafka);
      if (rerunTimeoutMs(expiredAfter) <= expiredAfter) throw e;
      held.expired(mark.epoch(), expiredAfter);
      throw io.kplex.spark.errors.Errors.streamCommitTooLate(e, rerunTimeoutMs(expiredAfter));
    }
    if (partial != null) run.completed(mark.epoch());
    run.committed(mark.epoch(), partial == null);
  }

  /** The committed epoch's mark is what the next epoch starts from. */
  private void advance(EpochMark mark) {
    last = mark;
    synchronized (run) {
      run.last = mark;
    }
    epochs.remove(mark.epoch());
    io.kplex.spark.stream.QuerySinks.DRIVER.stands(queryId, new io.kplex.spark.stream.QuerySinks.Stand(
        mark.marks().highs(), mark.marks().idle(), conf.maxDelayMs, Math.max(0, mark.heldRecords()),
        conf.maxHeldRecords));
  }

  /** The epoch's figures: the write's summary, and the sink metrics of the query's progress. */
  private void publish(EpochTally tally, EpochMark mark, int[] partitions, int[] idle, long startedNanos) {
    WriteSummary.record(conf, tally.written().toArray(new WriterCommitMessage[0]));
    EventTime.Marks marks = mark.marks();
    Map<String, String> figures = new java.util.LinkedHashMap<>(tally.figures(mark.epoch(), conf.virtualPartitions,
        marks.watermark(partitions, idle, conf.maxDelayMs), marks.holding(partitions, idle, conf.maxDelayMs), idle,
        (committer.clock().nanos() - startedNanos) / 1_000_000));
    // Whether the rows carried their source position (kplex's source through projections and
    // filters): "lost" means the input counted as one partition (logged once per run).
    figures.put("sourcePositions", schema.positioned() ? "kept" : "lost");
    progress.accept(figures);
  }

  /**
   * The committed epoch's source offsets to the query's monitoring group
   * ({@code kplex.<table>.<query id>}, or the read's {@code monitorGroup}), for lag tools only:
   * never read back, and a failure only logged (once per run). In a run, sent without waiting
   * for the answer ({@link io.kplex.spark.stream.QuerySinks#awaitMonitoring}). Per partition, the end the
   * epoch read to, or the oldest record it still holds there: lag counts held records as
   * not yet delivered (a record is held until the watermark passes it).
   */
  private void monitor(HeldRelease.Signal signal, EpochTally tally) {
    String group = MonitorGroup.name(signal.monitorGroup(), conf.table, queryId);
    if (group == null || signal.topic() == null || signal.ends().isEmpty()) return;
    Map<Integer, Long> offsets = tally.monitored(signal.ends());
    if (run.runId != null) {
      // Off the micro-batch's path: the next epoch's commit (or the source's stop) waits for it.
      io.kplex.spark.stream.QuerySinks.DRIVER.awaitMonitoring(queryId, io.kplex.spark.kafka.KafkaConf.ADMIN_TIMEOUT_MS);
      io.kplex.spark.stream.QuerySinks.DRIVER.monitoring(queryId, MonitorGroup.commitLater(run.clients(conf.kafka),
          group, signal.topic(), offsets, failed -> warnMonitor(group, failed)));
      return;
    }
    Exception failed;
    try (KafkaTopics kafka = new KafkaTopics(conf.kafka)) {
      failed = MonitorGroup.commit(kafka, group, signal.topic(), offsets);
    }
    if (failed != null) warnMonitor(group, failed);
  }

  private void warnMonitor(String group, Throwable failed) {
    if (run.warnMonitorOnce()) {
      LOG.warn("kplex: cannot commit the offsets of query {} to its monitoring group {} ({}); the query goes on,"
          + " its lag is only not shown there (it needs READ on the group)", queryId, group, failed.toString());
    }
  }

  @Override
  public void abort(long epochId, WriterCommitMessage[] messages) {
    epochs.remove(epochId);
    if (lease == null) {
      return;  // never started (another writer held the table)
    }
    try {
      if (conf.exactlyOnce()) {
        committer.abort(lease);
      }
    } finally {
      synchronized (run) {
        run.lease = null;
      }
      release();
    }
  }

  @Override
  public String toString() {
    return "KplexStreamingWrite(" + conf + ", query " + queryId + ")";
  }
}
