package io.kplex.spark.write;

import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.time.EventTime;
import io.kplex.spark.txn.CommitLog;
import io.kplex.spark.txn.EpochMark;
import io.kplex.spark.txn.ExactlyOnceCommitter;
import io.kplex.spark.txn.OffsetRanges;
import io.kplex.spark.txn.PreparedCommitters;
import io.kplex.spark.txn.TaskTransaction;
import io.kplex.spark.txn.TransactionalIds;
import io.kplex.spark.txn.WriterLease;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.connector.write.BatchWrite;
import org.apache.spark.sql.connector.write.DataWriterFactory;
import org.apache.spark.sql.connector.write.PhysicalWriteInfo;
import org.apache.spark.sql.connector.write.WriterCommitMessage;

/** The driver side of a kplex write: hands out writers, then commits or aborts the job. */
final class KplexBatchWrite implements BatchWrite {
  /** The most producers a write makes for its commit before the commit. */
  static final int PREPARED_MAX = 32;

  private final WriteConf conf;
  private final WriteSchema schema;
  private final String queryId;
  private WriterLease lease;
  /** When the write started, on the driver's clock: no task transaction is older. */
  private long startedMs;
  /** Per virtual partition, the largest order value the table held when the write started. */
  private Map<Integer, Long> floor = Map.of();
  /** The table's INSERTs' mark when the write started (what they read of their sources). */
  private EpochMark before;
  /** Exactly once: the producers the commit will resume the tasks' transactions in, made while they write. */
  private PreparedCommitters prepared;

  KplexBatchWrite(WriteConf conf, WriteSchema schema, String queryId) {
    this.conf = conf;
    this.schema = schema;
    this.queryId = queryId;
  }

  @Override
  public DataWriterFactory createBatchWriterFactory(PhysicalWriteInfo info) {
    // One writer per table: fail now, naming the other writer, if one is live.
    lease = WriterLease.acquire(conf.kafka, conf.table, queryId, null, conf.claimTimeoutMs);
    try {
      // Before any task writes: finish or fence what an earlier, crashed write left open.
      ExactlyOnceCommitter committer = committer();
      startedMs = committer.clock().millis();  // the clock requireTimeLeft measures the write's age on
      committer.recover(lease);
      // Under the claim: what the table holds per virtual partition (every writer's marks).
      CommitLog.InsertStart start = committer.insertsStart(schema.sourceTopic,
          schema.sourceCluster != null && schema.sourceCluster.equals(conf.kafka.bootstrap()), schema.sourceRows, queryId);
      before = start.mark();
      floor = before.marks().written();
      committer.requireTopicHoldsWritten(floor);
      KplexWriterFactory factory = new KplexWriterFactory(conf, schema, floor, start.readBefore());
      if (conf.exactlyOnce()) prepared = prepareCommitters(info.numPartitions());
      return factory;
    } catch (RuntimeException e) {
      release();  // Spark aborts only a write whose writer factory it got
      throw e;
    }
  }

  @Override
  public void commit(WriterCommitMessage[] messages) {
    try {
      commitTasks(messages);
    } finally {
      release();
    }
  }

  /**
   * The transactional ids of the tasks' first attempts, a producer made for each, for the first
   * {@link #PREPARED_MAX} tasks (a producer is a thread and a connection; the commit makes the
   * rest, as it makes those of retried tasks).
   */
  private PreparedCommitters prepareCommitters(int tasks) {
    List<String> ids = new ArrayList<>();
    for (int p = 0; p < Math.min(tasks, PREPARED_MAX); p++) ids.add(TransactionalIds.of(conf.table, p, 0, 0));
    return PreparedCommitters.start(conf.kafka, KafkaClients.REAL, ids, conf.topic);
  }

  private void release() {
    if (prepared != null) {
      prepared.close();
      prepared = null;
    }
    if (lease != null) {
      lease.close();
      lease = null;
    }
  }

  private void commitTasks(WriterCommitMessage[] messages) {
    if (conf.exactlyOnce()) {
      List<TaskTransaction> txns = new ArrayList<>();
      long[] last = new long[conf.physicalPartitions];
      java.util.Arrays.fill(last, -1L);
      for (WriterCommitMessage m : messages) {
        KplexCommitMessage k = (KplexCommitMessage) m;
        if (k.txn != null) txns.add(k.txn);
        for (int p = 0; p < last.length; p++) last[p] = Math.max(last[p], k.lastOffsets[p]);
      }
      ExactlyOnceCommitter.withPrepared(conf.kafka, conf.table, conf.topic, conf.virtualPartitions, conf.faults,
          prepared).commit(queryId, txns, last, writtenMark(messages), startedMs, lease, null);
    } else {
      committer().mark(writtenMark(messages), lease);
    }
    WriteSummary.record(conf, messages);
  }

  /**
   * The table's INSERTs' mark ({@link EpochMark#INSERTS}): per virtual partition, the largest
   * order value written, this write's raised over what the table held, recorded with the
   * commit, so a later INSERT or streaming query never goes below it; and what the INSERTs
   * read of their sources, this one's joined (when its rows carry their source position), so
   * a stream over the same records knows them as written.
   */
  private EpochMark writtenMark(WriterCommitMessage[] messages) {
    Map<Integer, Long> written = new HashMap<>(floor);
    OffsetRanges read = OffsetRanges.NONE;
    for (WriterCommitMessage m : messages) {
      KplexCommitMessage k = (KplexCommitMessage) m;
      for (int vp = 0; vp < k.highs.length; vp++) {
        if (k.highs[vp] != Long.MIN_VALUE) written.merge(vp, k.highs[vp], Math::max);
      }
      read = read.union(k.reads);
    }
    // (Read through filters, recorded apart: it counts as read for a writer through the same filters only.)
    String readsKey = schema.sourceTopic == null ? null : EpochMark.readsKey(schema.sourceTopic, schema.sourceRows);
    if (schema.sourceTopic != null && !read.isEmpty() && schema.sourceBootstrap != null
        && schema.sourceBootstrap.equals(conf.kafka.bootstrap())) {
      read = EmptyGaps.join(conf.kafka, KafkaClients.REAL, schema.sourceTopic,
          before.reads(readsKey).union(read), read);
    }
    return new EpochMark(conf.table, EpochMark.INSERTS, 0, EventTime.Marks.of(written), List.of(), 0, null,
        before.reads(), before.readIds()).withReads(readsKey, read);
  }

  @Override
  public void abort(WriterCommitMessage[] messages) {
    if (lease == null) {
      return;  // this write never started (another writer held the table): nothing to undo
    }
    try {
      if (conf.exactlyOnce()) {
        committer().abort(lease);
      }
    } finally {
      release();
    }
    // At least once: what tasks sent stays; a rerun writes it again.
  }

  private ExactlyOnceCommitter committer() {
    return new ExactlyOnceCommitter(conf.kafka, conf.table, conf.topic, conf.virtualPartitions, conf.faults);
  }

  @Override
  public String toString() {
    return "KplexBatchWrite(" + conf + ")";
  }
}
