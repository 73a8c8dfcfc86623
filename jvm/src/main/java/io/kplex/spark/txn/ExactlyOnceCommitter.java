package io.kplex.spark.txn;

import io.kplex.spark.conf.ConfParser;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.testing.FaultInjection;
import io.kplex.spark.time.Clock;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Exactly once across a whole Spark write (G3), on the driver. Each task writes inside
 * its own Kafka transaction ({@link TransactionalIds}) and leaves it open, reporting a
 * {@link TaskTransaction}; the driver then:
 * <ol>
 *   <li>records the transactions to commit in the {@link CommitLog} (so that a driver that
 *       dies while committing is rolled forward later);</li>
 *   <li>fences every other open transaction of the table (failed, lost and speculative
 *       attempts): Kafka aborts them ({@link TransactionFencer}; the list of open
 *       transactions is asked for while the record is written and the claim checked);</li>
 *   <li>commits each task's transaction by resuming it ({@link TransactionFinisher});</li>
 *   <li>deletes the log record, then waits until read_committed consumers see the commit
 *       ({@link CommitVisibility}).</li>
 * </ol>
 * An aborted job fences all open transactions of the table. Every write first runs
 * {@link #recover} under its writer claim: it finishes a commit that a dead driver left
 * half done and fences whatever a crashed run left open, so no transaction pins the
 * topic's last stable offset. One writer per table at a time ({@link WriterLease}): a
 * write fences only the open transactions of writers that hold no claim (a write that
 * failed or ended, or one whose claim it took over: dead, or standing still past the claim
 * timeout), never those of a writer that holds its claim.
 *
 * <p>A commit Kafka cut short (some transactions aborted by the broker's timeout before
 * anything finished the commit) never locks the table: it is settled into a
 * {@link PartialCommit} that says which virtual partitions are missing; a streaming
 * epoch's rerun commits just those. The steps from the record to its end run to their
 * end even if the committing thread is interrupted ({@code query.stop()}).
 */
public final class ExactlyOnceCommitter {
  private static final Logger LOG = LoggerFactory.getLogger(ExactlyOnceCommitter.class);
  /** kplex's transaction.timeout.ms: the broker's default transaction.max.timeout.ms (15 min), options.json's. */
  public static final int DEFAULT_TRANSACTION_TIMEOUT_MS =
      ConfParser.of(Map.of()).intConf(KplexOptions.TRANSACTION_TIMEOUT_MS);

  private final KafkaConf kafka;
  private final String table;
  private final String topic;
  private final int virtualPartitions;
  /** Test-only faults of the driver's commit (null: none). */
  private final FaultInjection faults;
  /** Clients kept across commits (a streaming run's), or null: each call makes its own. */
  private final Supplier<KafkaTopics> shared;
  private final KafkaClients clients;
  private final Clock clock;
  /** How one task's transaction is resumed and committed. */
  private final ResumedCommit resumed;

  public ExactlyOnceCommitter(KafkaConf kafka, String table, String topic, int virtualPartitions,
      FaultInjection faults) {
    this(kafka, table, topic, virtualPartitions, faults, null);
  }

  public ExactlyOnceCommitter(KafkaConf kafka, String table, String topic, int virtualPartitions,
      FaultInjection faults, Supplier<KafkaTopics> shared) {
    this(kafka, table, topic, virtualPartitions, faults, shared, KafkaClients.REAL, Clock.SYSTEM);
  }

  /** With the clients and the clock it uses ({@code shared}'s, if not null, should be the same). */
  public ExactlyOnceCommitter(KafkaConf kafka, String table, String topic, int virtualPartitions,
      FaultInjection faults, Supplier<KafkaTopics> shared, KafkaClients clients, Clock clock) {
    this(kafka, table, topic, virtualPartitions, faults, shared, clients, clock,
        ResumedCommit.withProducers(kafka, clients, shared, null));
  }

  /**
   * A batch write's: its tasks' transactions are resumed in the producers {@code prepared}
   * made for them while the tasks wrote (those it has not made are made at the commit).
   */
  public static ExactlyOnceCommitter withPrepared(KafkaConf kafka, String table, String topic,
      int virtualPartitions, FaultInjection faults, PreparedCommitters prepared) {
    return new ExactlyOnceCommitter(kafka, table, topic, virtualPartitions, faults, null, KafkaClients.REAL,
        Clock.SYSTEM, ResumedCommit.withProducers(kafka, KafkaClients.REAL, null, prepared));
  }

  ExactlyOnceCommitter(KafkaConf kafka, String table, String topic, int virtualPartitions,
      FaultInjection faults, Supplier<KafkaTopics> shared, KafkaClients clients, Clock clock,
      ResumedCommit resumed) {
    this.kafka = kafka;
    this.table = table;
    this.topic = topic;
    this.virtualPartitions = virtualPartitions;
    this.faults = faults;
    this.shared = shared;
    this.clients = clients;
    this.clock = clock;
    this.resumed = resumed;
  }

  private KafkaTopics connect() {
    return new KafkaTopics(kafka, clients, clock);
  }

  private <T> T withKafka(Function<KafkaTopics, T> body) {
    if (shared != null) return body.apply(shared.get());
    try (KafkaTopics admin = connect()) {
      return body.apply(admin);
    }
  }

  /**
   * Commits the tasks' transactions, then waits until read_committed consumers see them.
   * {@code mark}: recorded in the commit log once they are committed (a streaming epoch's,
   * or the INSERTs'), by this driver or by whoever rolls an interrupted commit forward.
   * {@code startedMs}: on the driver's clock, a time no task's transaction is older than (when
   * the driver started the write, or, for a streaming epoch, when its first writer task began,
   * less an allowance for clock skew). {@code lease}: the writer claim it commits under (checked once the commit is
   * recorded). {@code completing}: the partial commit a rerun epoch completes, or null.
   */
  public void commit(String queryId, List<TaskTransaction> txns, long[] lastOffsets, EpochMark mark,
      long startedMs, WriterLease lease, PartialCommit completing) {
    commit(queryId, txns, lastOffsets, mark, startedMs, lease, completing, 0);
  }

  /**
   * As above; {@code tasks}: how many writer tasks the write ran, recorded with the commit
   * (a streaming epoch's, for its rerun should Kafka cut the commit short: {@link #rerunTasks}).
   */
  public void commit(String queryId, List<TaskTransaction> txns, long[] lastOffsets, EpochMark mark,
      long startedMs, WriterLease lease, PartialCommit completing, int tasks) {
    if (!txns.isEmpty()) {
      try {
        requireTimeLeft(startedMs);
      } catch (KplexException tooLate) {
        // Nothing committed, nothing in the commit log: fence the write's transactions now,
        // so that none pins the topic until Kafka's own timeout. (After the log record, a
        // failure leaves them to recover(), which rolls the commit forward.)
        try {
          abort(lease);
        } catch (RuntimeException e) {
          tooLate.addSuppressed(e);
        }
        throw tooLate;
      }
    }
    String completes = completing == null ? null : completing.key();
    Uninterruptibly.call(table, () -> withKafka(admin -> {
      // The open transactions to fence, asked while the commit is recorded and the claim
      // checked (read only; fenced once the claim is known to hold).
      long t0 = System.nanoTime();
      var open = TransactionFencer.listOpen(admin);
      CommitLog log = new CommitLog(admin);
      String claim = lease == null ? null : lease.key();
      long recorded = log.begin(table, queryId, txns, mark, completes, claim, tasks);
      long t1 = System.nanoTime();
      if (lease != null) {
        long takenAt = lease.takenAt(log.topic());
        if (takenAt >= 0) {
          // recorded before the marker: the taker finishes this commit; after: nobody does, and
          // the record (under this claim's key: the taker's stands) goes now, not at the next
          // recovery, so that nothing takes it for a commit under way meanwhile.
          KplexException taken = Errors.claimTaken(table, lease.takenBy(log.topic()), recorded < takenAt);
          if (recorded >= takenAt) {
            try {
              log.drop(new CommitLog.Pending(table, queryId, txns, mark, completes, true, claim, recorded, tasks));
            } catch (RuntimeException e) {
              taken.addSuppressed(e);  // recovery removes it
            }
          }
          throw taken;
        }
      }
      long t2 = System.nanoTime();
      List<TaskTransaction> lost = finish(admin, txns, open);
      long t3 = System.nanoTime();
      if (!lost.isEmpty()) {
        CommitLog.Pending pending = new CommitLog.Pending(table, queryId, txns, mark, completes, true, claim, recorded, tasks);
        throw settle(log, pending, lost);
      }
      // The log's end first: by its answer the commit markers are usually on the partitions,
      // so the wait below asks once (asked at once, it mostly found them not there yet).
      log.end(new CommitLog.Pending(table, queryId, txns, mark, completes, true, claim, recorded, tasks));
      long t4 = System.nanoTime();
      CommitVisibility.await(admin, table, topic, lastOffsets);
      if (LOG.isDebugEnabled()) {
        LOG.debug("kplex: committed {} transactions of table {} (ms): record {}, claim {}, transactions {},"
            + " log end {}, visible {}", txns.size(), table, ms(t1 - t0), ms(t2 - t1), ms(t3 - t2), ms(t4 - t3),
            ms(System.nanoTime() - t4));
      }
      return null;
    }));
  }

  private static long ms(long nanos) {
    return nanos / 1_000_000;
  }

  /** The time this committer reads: a write's start is measured on it, so that its age is one clock's. */
  public Clock clock() {
    return clock;
  }

  /**
   * Kafka aborts a transaction open longer than transaction.timeout.ms, and commits one
   * transaction at a time: a write whose oldest transaction has expired would become
   * visible in part. So a write that ran for nearly the timeout commits nothing and fails.
   * Its age is measured from {@code startedMs}, which no task's transaction precedes.
   */
  void requireTimeLeft(long startedMs) {
    long timeoutMs = transactionTimeoutMs(kafka);
    long marginMs = Math.min(timeoutMs / 2, COMMIT_MARGIN_MS);
    long openMs = clock.millis() - startedMs;
    if (openMs > timeoutMs - marginMs) {
      throw Errors.commitTooLate(table, openMs, timeoutMs, marginMs);
    }
  }

  /** Time a commit keeps in hand before transaction.timeout.ms (at most half of it). */
  static final long COMMIT_MARGIN_MS = 30_000;

  /** How long a write may run before its commit: transaction.timeout.ms less the margin. */
  public static long commitBudgetMs(KafkaConf kafka) {
    long timeoutMs = transactionTimeoutMs(kafka);
    return timeoutMs - Math.min(timeoutMs / 2, COMMIT_MARGIN_MS);
  }

  /**
   * The transaction.timeout.ms the tasks' producers use: the user's, else kplex's default, as
   * the settings layer reads it (a bad value is a KPLEX_BAD_OPTION naming it).
   */
  public static long transactionTimeoutMs(KafkaConf kafka) {
    return ConfParser.of(kafka.options()).longConf(KplexOptions.TRANSACTION_TIMEOUT_MS);
  }

  /**
   * The last epoch {@code query} committed to this table, its written marks raised to what
   * every writer wrote to the table (the committed part of another query's cut-short epoch
   * included): a new query (or one restarted after another wrote) never puts a virtual
   * partition below what is already there.
   */
  public EpochMark lastEpoch(String query) {
    return withKafka(admin -> {
      CommitLog log = new CommitLog(admin);
      EpochMark last = log.lastEpoch(table, query).orElse(EpochMark.start(table, query));
      return new EpochMark(table, query, last.epoch(),
          last.marks().withWrittenAtLeast(log.writtenHighs(table, query)), last.held(), last.heldRecords(),
          last.lineage());
    });
  }

  /**
   * The mark a new query resumes from: the last epoch any stream committed to this table from
   * {@code topic}, with every writer's floor per virtual partition, or empty.
   */
  public java.util.Optional<EpochMark> lastOnSource(String topic) {
    return withKafka(admin -> {
      CommitLog log = new CommitLog(admin);
      return log.lastOnSource(table, topic).map(m -> new EpochMark(table, m.query(), m.epoch(),
          m.marks().withWrittenAtLeast(log.writtenHighs(table, null)), m.held(), m.heldRecords(), m.lineage()));
    });
  }

  /** What other writers of this table read of {@code topic}, whose id is {@code topicId} ({@link CommitLog#readByOthers}). */
  public ReadByOthers readByOthers(String topic, String topicId, String rows, String query, String resumedFrom) {
    return withKafka(admin -> new CommitLog(admin).readByOthers(table, topic, topicId, rows, query, resumedFrom));
  }

  /**
   * What the strict streams into kplex table {@code source} published for a reader of its topic
   * at {@code starts} ({@link CommitLog#carriedFloor}).
   */
  public long carriedFloor(String source, Map<Integer, Long> starts) {
    return withKafka(admin -> new CommitLog(admin).carriedFloor(source, starts));
  }

  /**
   * Refuses to write under marks of a topic that is no longer there: kplex committed records to
   * this table ({@code written}: the largest order value per virtual partition, every writer's
   * marks, as {@link #lastEpoch} and the INSERTs' start give them) in a topic that
   * was deleted since and created again outside kplex. The marks would otherwise judge every
   * record late against records that are gone. Told by the topic's id (KIP-516), which the
   * commit log records at the table's first write ({@link CommitLog#topicIdKey}); for a table
   * first written by a kplex before that record, or a cluster without topic ids, by the topic
   * holding no record and never having held any (every partition ending at offset 0). A topic
   * replaced before kplex committed anything to the table is taken as the table's from then on.
   * (Marks for every virtual partition at once, a stream's published watermark, are left out:
   * they need no record in the topic.) Returns the topic's id (null: none known).
   */
  public String requireTopicHoldsWritten(Map<Integer, Long> written) {
    return withKafka(admin -> {
      org.apache.kafka.clients.admin.TopicDescription described = admin.describe(topic).orElse(null);
      if (described == null) return null;  // the write's own check names a topic deleted outside kplex
      String id = KafkaTopics.topicId(described);
      CommitLog log = new CommitLog(admin);
      String wrote = log.writtenTopicId(table).filter(w -> !w.isEmpty()).orElse(null);
      if (id != null && id.equals(wrote)) return id;
      Map.Entry<Integer, Long> highest = highestWritten(written);
      if (highest != null && id != null && wrote != null) {
        throw Errors.tableTopicReplaced(table, topic, highest.getKey(), highest.getValue(), wrote, id);
      }
      if (highest != null) {  // no id to compare with: an emptied topic is what tells
        Map<Integer, Long> ends = admin.endOffsets(topic, described.partitions().size());
        if (!ends.isEmpty() && ends.values().stream().allMatch(end -> end == 0)) {
          throw Errors.tableTopicRecreated(table, topic, highest.getKey(), highest.getValue());
        }
      }
      if (id != null) log.recordTopicId(table, topic, id, clock.millis());
      return id;
    });
  }

  /**
   * Before a streaming run's next epoch: the table's topic is still the one of id {@code id}
   * that {@link #requireTopicHoldsWritten} found at the run's start (null: none known, only its
   * being there is checked). A topic deleted since fails naming it; one created again is
   * judged as at a run's start, under {@code written}. One description of the topic. Returns
   * the topic's id.
   */
  public String requireSameTopic(String id, Map<Integer, Long> written) {
    return requireSameTopic(id, written, null);
  }

  /**
   * As {@link #requireSameTopic(String, Map)}, with the description {@link #describeTopicSoon}
   * asked for already (null: described now).
   */
  public String requireSameTopic(String id, Map<Integer, Long> written,
      java.util.function.Supplier<java.util.Optional<org.apache.kafka.clients.admin.TopicDescription>> asked) {
    org.apache.kafka.clients.admin.TopicDescription described = asked != null ? asked.get().orElse(null)
        : withKafka(admin -> admin.describe(topic).orElse(null));
    if (described == null) throw Errors.tableTopicDeleted(table, topic);
    String now = KafkaTopics.topicId(described);
    return now == null || now.equals(id) ? now : requireTopicHoldsWritten(written);
  }

  /**
   * The table's topic described by the run's shared clients, asked now for {@link
   * #requireSameTopic(String, Map, java.util.function.Supplier)} to take later; null without
   * shared clients (each call connects: nothing to ask ahead with).
   */
  public java.util.function.Supplier<java.util.Optional<org.apache.kafka.clients.admin.TopicDescription>>
      describeTopicSoon() {
    return shared == null ? null : shared.get().describeSoon(topic);
  }

  /** The virtual partition with the largest mark, and that mark (the every-partition floor left out); null if none. */
  private static Map.Entry<Integer, Long> highestWritten(Map<Integer, Long> written) {
    Map.Entry<Integer, Long> highest = null;
    for (Map.Entry<Integer, Long> e : written.entrySet()) {
      if (e.getKey() >= 0 && (highest == null || e.getValue() > highest.getValue())) highest = e;
    }
    return highest;
  }

  /**
   * Where INSERT {@code query} from {@code source} (null: unknown) starts ({@link CommitLog#insertsStart}),
   * the source's id asked for where it is a topic of this cluster ({@code sameCluster}).
   */
  public CommitLog.InsertStart insertsStart(String source, boolean sameCluster, String rows, String query) {
    return withKafka(admin -> {
      String id = null;
      try {
        if (source != null && sameCluster) id = admin.describe(source).map(KafkaTopics::topicId).orElse(null);
      } catch (RuntimeException e) {
        // (Not allowed to describe it with the table's settings: its id is not known, as for another cluster's.)
        LOG.debug("kplex: the id of source topic {} of table {} is not known", source, table, e);
      }
      return new CommitLog(admin).insertsStart(table, source, id, rows, query);
    });
  }

  /** Another query's stream that read this query's source past {@code mine} after it ({@link CommitLog#overtaken}). */
  public java.util.Optional<EpochMark> overtaken(EpochMark mine) {
    return withKafka(admin -> new CommitLog(admin).overtaken(table, mine));
  }

  /** A query that resumed from {@code query}'s marks on this table (it took over), or null. */
  public String resumedBy(String query) {
    return withKafka(admin -> new CommitLog(admin).resumedBy(table, query));
  }

  /**
   * How many writer tasks epoch {@code epoch} of {@code query} ran, if its commit was recorded
   * and not finished (Kafka may have cut it short): its rerun runs as many. 0 if none is on
   * record (then Spark's parallelism decides).
   */
  public int rerunTasks(String query, long epoch) {
    return withKafka(admin -> new CommitLog(admin).rerunTasks(table, query, epoch));
  }

  /** The epochs of {@code query} that Kafka cut short, by epoch: its rerun completes them. */
  public Map<Long, PartialCommit> partialEpochs(String query) {
    return withKafka(admin -> {
      Map<Long, PartialCommit> out = new java.util.HashMap<>();
      for (PartialCommit p : new CommitLog(admin).partials(table)) {
        if (!p.insert() && p.query().equals(query)) out.put(p.epoch(), p);
      }
      return out;
    });
  }

  /** Records an at-least-once epoch: its rows are flushed, there is no transaction to commit. */
  public void mark(EpochMark mark) {
    mark(mark, null);
  }

  /**
   * As {@link #mark(EpochMark)}, for a write under {@code lease} (null: none): not if its claim
   * was taken over meanwhile (the writer stood still past its timeout). Its mark, made from
   * what the table held when it started, would put back what the taker recorded since.
   */
  public void mark(EpochMark mark, WriterLease lease) {
    withKafka(admin -> {
      CommitLog log = new CommitLog(admin);
      if (lease != null && lease.takenAt(log.topic()) >= 0) {
        throw Errors.claimTakenAtLeastOnce(table, lease.takenBy(log.topic()));
      }
      log.mark(mark);
      return null;
    });
  }

  /**
   * Aborts a failed write that held {@code lease}: every open transaction of the table is
   * fenced, unless the claim was taken over (the writer stood still past its timeout, and its
   * tasks failed fenced). Then the open transactions may be the taker's, live and waiting
   * for its commit, and settling what this write left is the taker's to do.
   */
  public void abort(WriterLease lease) {
    try (KafkaTopics admin = connect()) {
      if (lease != null && lease.takenAt(CommitLog.topic(admin)) >= 0) {
        LOG.warn("kplex: the write into table {} failed after {} took its claim over: its open transactions are"
            + " left to that writer", table, lease.takenBy(CommitLog.topic(admin)));
        return;
      }
      TransactionFencer.fenceOpen(admin, table, Set.of());
    }
  }

  /**
   * Under the writer claim {@code lease}: rolls a half-done commit forward (settling what
   * Kafka aborted of it), then fences what is left open. Returns what it found and did.
   */
  public String recover(WriterLease lease) {
    return recover(lease, false);
  }

  /** {@code forgetReported}: an operator's recover, after which a cut-short INSERT's report is forgotten. */
  public String recover(WriterLease lease, boolean forgetReported) {
    List<String> report = new java.util.ArrayList<>();
    try (KafkaTopics admin = connect()) {
      CommitLog log = new CommitLog(admin);
      // One at most, but for that of a writer that recorded its commit after its claim was
      // taken over (each claim records under a key of its own: the taker's record stands).
      for (CommitLog.Pending pending : log.pendings(table)) {
        if (recordedAfterTakeOver(log, pending)) {
          // Its writer lost its claim before recording it: it fails and commits nothing.
          log.drop(pending);
          report.add("removed the commit record of query " + pending.query + ", made after its writer's claim"
              + " was taken over (that write failed; none of its transactions is committed)");
        } else {
          LOG.warn("kplex: finishing the commit of {} transactions (query {}) that a previous driver of table {}"
              + " left half done", pending.transactions.size(), pending.query, table);
          List<TaskTransaction> lost = finish(admin, pending.transactions);
          if (lost.isEmpty()) {
            log.end(pending);
            report.add("committed the " + pending.transactions.size() + " transactions of an interrupted commit"
                + " (query " + pending.query + ")");
          } else {
            report.add(settle(log, pending, lost).text());
          }
        }
      }
      int fenced = TransactionFencer.fenceOpen(admin, table, Set.of());
      report.add("fenced " + fenced + " open transactions");
      for (PartialCommit p : log.partials(table)) {
        if (!report.contains(p.describe(virtualPartitions))) report.add(p.describe(virtualPartitions));
        if (forgetReported && p.insert()) log.forget(p);
      }
    }
    return String.join("; ", report);
  }

  /** Whether {@code pending} was recorded after its writer's claim was taken over. */
  private boolean recordedAfterTakeOver(CommitLog log, CommitLog.Pending pending) {
    if (pending.claim == null || pending.offset < 0) return false;
    var marker = log.topic().readPrefix(WriterLease.takenPrefix(table)).get(WriterLease.takenKey(table, pending.claim));
    return marker != null && marker.getKey() < pending.offset;
  }

  /**
   * Settles a commit of which Kafka aborted {@code lost}: nothing committed, the record
   * goes; else a {@link PartialCommit} takes its place. Returns the error that says what
   * happened (its {@code text()} is the report for people).
   */
  private KplexException settle(CommitLog log, CommitLog.Pending pending, List<TaskTransaction> lost) {
    boolean insert = pending.mark == null || EpochMark.INSERTS.equals(pending.mark.query());
    if (lost.size() == pending.transactions.size()) {
      log.drop(pending);
      KplexException allAborted = Errors.commitAllAborted(table, pending.query, insert,
          insert ? 0 : pending.mark.epoch(), lost.size());
      LOG.warn("kplex: {}", allAborted.text());
      return allAborted;
    }
    PartialCommit partial = PartialCommit.of(pending, lost);
    if (pending.completes != null) {
      // A rerun that was cut short again: what the first run committed still is.
      for (PartialCommit before : log.partials(table)) {
        if (before.key().equals(pending.completes)) {
          Map<Integer, Long> committed = new java.util.HashMap<>(before.committed());
          partial.committed().forEach((vp, h) -> committed.merge(vp, h, Math::max));
          partial = new PartialCommit(partial.table(), partial.query(), partial.epoch(), false,
              partial.lostPartitions(), partial.lostVps(), committed, partial.vpsKnown(), partial.tasks());
        }
      }
    }
    EpochMark inserts = null;
    if (partial.insert()) {
      EpochMark before = log.lastEpoch(table, EpochMark.INSERTS).orElse(EpochMark.start(table, EpochMark.INSERTS));
      Map<Integer, Long> written = new java.util.HashMap<>(before.marks().written());
      partial.committed().forEach((vp, h) -> written.merge(vp, h, Math::max));
      // What this INSERT read is not recorded: part of it is not in the table (run it again).
      inserts = new EpochMark(table, EpochMark.INSERTS, 0, io.kplex.spark.time.EventTime.Marks.of(written), List.of(),
          0, null, before.reads(), before.readIds());
    }
    log.settle(pending, partial, inserts);
    KplexException cutShort = partial.cutShort(virtualPartitions);
    LOG.warn("kplex: {}", cutShort.text());
    return cutShort;
  }

  /** Fences every other open transaction of the table, then commits these; returns those Kafka had aborted. */
  private List<TaskTransaction> finish(KafkaTopics admin, List<TaskTransaction> txns) {
    return finish(admin, txns, TransactionFencer.listOpen(admin));
  }

  /** As {@link #finish(KafkaTopics, List)}, the open transactions already asked for ({@code open}). */
  private List<TaskTransaction> finish(KafkaTopics admin, List<TaskTransaction> txns,
      org.apache.kafka.common.KafkaFuture<java.util.Collection<org.apache.kafka.clients.admin.TransactionListing>> open) {
    Set<String> keep = new HashSet<>();
    for (TaskTransaction t : txns) keep.add(t.id());
    TransactionFencer.fence(admin, table, keep, open);
    return new TransactionFinisher(kafka, table, faults, resumed, clock).commitAll(txns);
  }
}
