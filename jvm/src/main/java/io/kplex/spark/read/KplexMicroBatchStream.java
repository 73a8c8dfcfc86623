package io.kplex.spark.read;

import io.kplex.spark.catalog.KplexTable;
import io.kplex.spark.catalog.TableStore;
import io.kplex.spark.conf.ConfParser;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.MonitorGroup;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.stream.HeldRelease;
import io.kplex.spark.stream.QuerySinks;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream;
import org.apache.spark.sql.connector.read.streaming.Offset;
import org.apache.spark.sql.connector.read.streaming.ReadAllAvailable;
import org.apache.spark.sql.connector.read.streaming.ReadLimit;
import org.apache.spark.sql.connector.read.streaming.ReadMaxRows;
import org.apache.spark.sql.connector.read.streaming.ReportsSourceMetrics;
import org.apache.spark.sql.connector.read.streaming.SupportsTriggerAvailableNow;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A streaming read of a topic (a plain topic, or a kplex-written table read by physical
 * partition), offsets per partition as Spark's Kafka source keeps them, read_committed:
 * a micro-batch sees only committed transactions, so a kplex table written exactly once
 * streams exactly once into the next query.
 * <ul>
 *   <li>{@code startingOffsets}: {@code earliest} (default, as a batch read: a derived
 *       topic holds its whole source; Spark's Kafka source starts at the latest),
 *       {@code latest} or offsets JSON; {@code startingTimestamp} in epoch ms;</li>
 *   <li>{@code maxOffsetsPerTrigger}: at most this many offsets per micro-batch. From a plain
 *       topic into a kplex sink, shared in event time: each partition with a backlog reads up
 *       to about the same event time, by the event time its offsets carried in the last
 *       micro-batches, so the sink releases about all a micro-batch reads in that micro-batch
 *       ({@link #aligned}). Otherwise, and until that is known, shared fairly over the
 *       partitions with a backlog (a small backlog is read whole, the rest share what is
 *       left), but into a kplex sink the partitions ahead in event time wait while one behind
 *       has a backlog ({@link #capped}). Unset, a cap that fits the commit's time budget
 *       ({@link #getDefaultReadLimit});</li>
 *   <li>{@code Trigger.AvailableNow}: reads up to the last stable offsets of its start;
 *       what a kplex sink holds back stays held for the next run (N runs write what one
 *       would), unless {@code releaseAtEnd} is true: then one more micro-batch, without
 *       records, releases everything held (the input has ended);</li>
 *   <li>partitions added to the topic are read from their beginning;</li>
 *   <li>{@code minPartitions}: the tasks a micro-batch reads in, its ranges cut evenly over
 *       them (default: Spark's default parallelism; Spark's Kafka source reads one task per
 *       partition, which on fewer cores than partitions runs in waves);</li>
 *   <li>{@code idleTimeoutMs} (default 30 s; -1: never): a partition of a plain topic
 *       read to its end that is empty, or has had no new record for this long, is idle: it
 *       stops holding a kplex sink's watermark until its next record (the idle partitions are
 *       kept in the offsets, so a rerun batch releases the same);</li>
 *   <li>{@code idleReleaseMs} (default 0: never): after this long without a new record,
 *       such a micro-batch releases everything held too;</li>
 *   <li>{@code failOnDataLoss} (default true): offsets removed before they were read
 *       (retention, a deleted topic or partition) fail the query, naming the partition and
 *       offsets; {@code false} skips to what is left, logged.</li>
 * </ul>
 */
final class KplexMicroBatchStream implements MicroBatchStream, SupportsTriggerAvailableNow, ReportsSourceMetrics {
  private static final Logger LOG = LoggerFactory.getLogger(KplexMicroBatchStream.class);
  static final String MAX_OFFSETS_PER_TRIGGER = KplexOptions.MAX_OFFSETS_PER_TRIGGER;
  static final String FAIL_ON_DATA_LOSS = KplexOptions.FAIL_ON_DATA_LOSS;
  static final String IDLE_RELEASE_MS = KplexOptions.IDLE_RELEASE_MS;
  static final String RELEASE_AT_END = KplexOptions.RELEASE_AT_END;
  /** maxOffsetsPerTrigger not set: no limit. */
  private static final long NO_LIMIT = -1;

  private final KplexTable table;
  private final ReadConf conf;
  private final CaseInsensitiveStringMap options;
  private final int[] columns;
  private final boolean failOnDataLoss;
  private final long maxOffsetsPerTrigger;
  private Consumer<byte[], byte[]> consumer;
  private TableStore store;
  /** Trigger.AvailableNow: the offsets to stop at, taken when the query starts. */
  private SourceOffset availableNow;
  private SourceOffset latestSeen;
  private final long idleReleaseMs;
  /**
   * How far the clock of the driver that planned a start offset may be behind this one's: a
   * partition unmoved since then counts as quiet from that long after (a restart on another
   * driver must not find a partition idle early).
   */
  static final long PLANNER_CLOCK_SKEW_MS = 5_000;
  private final long idleTimeoutMs;
  /** Per partition: its last end offset seen, and when it moved there (ms); what idleness is measured from. */
  private final Map<Integer, long[]> lastMoved = new HashMap<>();
  private final boolean releaseAtEnd;
  /** The monitoring group option (null: the default name). */
  private final String monitorGroup;
  private boolean monitorWarned;
  /** When the offsets last moved, and whether records came since the last release. */
  private long lastDataAt;
  private boolean dataSinceFlush = true;

  /** The source's folder in the query's checkpoint ({@code <checkpoint>/sources/<n>}). */
  private final String checkpointLocation;

  KplexMicroBatchStream(KplexTable table, ReadConf conf, CaseInsensitiveStringMap options, int[] columns,
      String checkpointLocation) {
    this.checkpointLocation = checkpointLocation;
    this.table = table;
    this.conf = conf;
    this.lastDataAt = conf.clock.millis();
    this.options = options;
    this.columns = columns;
    ReadConf.checkStreamSession(io.kplex.spark.compat.Scala.asJava(
        org.apache.spark.sql.internal.SQLConf.get().getAllConfs()).keySet());
    ConfParser settings = settings(options);
    for (String end : List.of(KplexOptions.ENDING_OFFSETS, KplexOptions.ENDING_TIMESTAMP)) {
      if (settings.isSet(end)) throw Errors.boundsStreamEnd(end);
    }
    this.failOnDataLoss = settings.booleanConf(FAIL_ON_DATA_LOSS);
    this.releaseAtEnd = settings.booleanConf(RELEASE_AT_END);
    this.maxOffsetsPerTrigger = settings.isSet(MAX_OFFSETS_PER_TRIGGER)
        ? settings.longConf(MAX_OFFSETS_PER_TRIGGER) : NO_LIMIT;
    this.idleReleaseMs = settings.longConf(IDLE_RELEASE_MS);
    this.idleTimeoutMs = settings.longConf(KplexOptions.IDLE_TIMEOUT_MS);
    this.monitorGroup = settings.text(KplexOptions.MONITOR_GROUP);
    // Spark makes a query's sources on its stream thread, which knows the query: its kplex sink
    // refuses a late topic this source reads before it writes anything.
    String query = io.kplex.spark.stream.StreamingBatch.queryIdOfThread();
    if (query != null) QuerySinks.DRIVER.reads(query, conf.sources);
  }

  /**
   * The read's options over the session's {@code kplex.stream.*} settings ({@link
   * ReadConf#streamSettings}), the session as it is now.
   */
  private static ConfParser settings(CaseInsensitiveStringMap options) {
    org.apache.spark.sql.internal.SQLConf session = org.apache.spark.sql.internal.SQLConf.get();
    return ReadConf.streamSettings(options, key -> session.getConfString(key, null));
  }

  private synchronized Consumer<byte[], byte[]> consumer() {
    if (consumer == null) {
      store = new TableStore(conf.kafka, conf.clients, conf.clock, table.metadataTopic());
      consumer = conf.clients.consumer(conf.kafka.consumer());
      try {
        store.requireAllowed(conf.topic, AclOperation.READ);
      } catch (io.kplex.spark.errors.KplexException e) {
        throw conf.topicError(conf.topic, e);
      }
    }
    return consumer;
  }

  /**
   * The topic's partitions as the broker has them now (Admin, as Spark's Kafka source asks):
   * a consumer's {@code partitionsFor} answers from metadata up to metadata.max.age.ms old,
   * so partitions added meanwhile would wait minutes to be read. A kplex table's topic must
   * still have the table's P, as for a batch read ({@code KplexScan}).
   */
  private List<TopicPartition> partitions() {
    consumer();
    TopicDescription described = store.describe(conf.topic).orElseThrow(() -> conf.topicError(conf.topic, null));
    knownTopicId = io.kplex.spark.kafka.KafkaTopics.topicId(described);
    if (conf.kind == ReadConf.Kind.DERIVED && described.partitions().size() != conf.physicalPartitions) {
      throw Errors.partitionMismatchOnRead(conf.topic, described.partitions().size(), conf.table,
          conf.physicalPartitions);
    }
    List<TopicPartition> tps = new ArrayList<>();
    for (TopicPartitionInfo p : described.partitions()) tps.add(new TopicPartition(conf.topic, p.partition()));
    tps.sort(java.util.Comparator.comparingInt(TopicPartition::partition));
    return tps;
  }

  /**
   * The partitions {@link #latest} last found, until the next plan takes them: planning the
   * micro-batch that latestOffset cut reads them instead of describing the topic again
   * (milliseconds later; a partition gone meanwhile is found by the next micro-batch's
   * description). A plan with none (a micro-batch Spark runs again after a restart) describes.
   */
  private List<TopicPartition> described;
  /**
   * Their earliest offsets, asked of the broker (Admin) once {@link #latest} found new records,
   * for the plan to take with them: answered while Spark writes the micro-batch's offsets, so
   * the plan waits for no round trip of its own (null: not asked).
   */
  private KafkaFuture<Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo>> describedEarliest;
  /** The query this stream last cut a micro-batch for (null: none yet). */
  private String queryId;

  /**
   * The earliest offset of each partition of the batch being planned: of the partitions
   * {@link #latest} last found if no plan took them yet (as asked for then, if it did), else
   * of the partitions now.
   */
  private Map<Integer, Long> earliestOfThisBatch() {
    List<TopicPartition> found = described;
    var asked = describedEarliest;
    described = null;
    describedEarliest = null;
    if (found == null) return earliest(partitions());
    if (asked == null) return earliest(found);
    Map<Integer, Long> out = new HashMap<>();
    store.call("READ", Errors.Resource.topic(conf.topic), () -> asked.get(KafkaConf.ADMIN_TIMEOUT_MS,
        java.util.concurrent.TimeUnit.MILLISECONDS)).forEach((tp, o) -> out.put(tp.partition(), o.offset()));
    return out;
  }

  /**
   * How often a running stream describes its topic again: partitions added meanwhile are read
   * at most this late. A live stream's calls come a few hundred milliseconds apart, and the
   * description (a round trip through the Admin client's thread) cost more than the end offsets.
   */
  static final long DESCRIBE_EVERY_MS = 1_000;
  /** The partitions {@link #latest} last described, and when (driver clock, ms). */
  private List<TopicPartition> knownPartitions;
  private long knownAt;

  /** The last stable offset of every partition now. */
  private SourceOffset latest() {
    Consumer<byte[], byte[]> c = consumer();
    long now = conf.clock.millis();
    boolean reused = knownPartitions != null && now - knownAt < DESCRIBE_EVERY_MS;
    if (!reused) {
      knownPartitions = partitions();
      knownAt = now;
    }
    List<TopicPartition> known = knownPartitions;
    io.kplex.spark.stream.StreamingBatch batch = io.kplex.spark.stream.StreamingBatch.current();
    if (batch != null) {
      queryId = batch.queryId();
      QuerySinks.DRIVER.reads(queryId, conf.sources);
    }
    Map<TopicPartition, Long> end;
    try {
      end = store.call("READ", Errors.Resource.topic(conf.topic), () -> c.endOffsets(known));
    } catch (RuntimeException e) {
      if (!reused) throw e;
      // The topic may have changed since it was described (deleted: the description says so).
      knownPartitions = partitions();
      knownAt = conf.clock.millis();
      end = store.call("READ", Errors.Resource.topic(conf.topic), () -> c.endOffsets(knownPartitions));
    }
    List<TopicPartition> tps = knownPartitions;
    described = tps;
    describedEarliest = null;
    Map<Integer, Long> next = new TreeMap<>();
    end.forEach((tp, o) -> next.put(tp.partition(), o));
    if (!next.equals(lastEnds)) {
      // Records arrived, so a micro-batch is likely planned next: its earliest offsets are asked
      // for now and answered while Spark writes its offsets (an idle query does not ask).
      Map<TopicPartition, OffsetSpec> earliestOf = new HashMap<>();
      for (TopicPartition tp : tps) earliestOf.put(tp, OffsetSpec.earliest());
      describedEarliest = store.admin().listOffsets(earliestOf).all();
    }
    lastEnds = next;
    return new SourceOffset(conf.topic, next).withTopicId(knownTopicId);
  }

  /** The id of the topic as {@link #partitions} last described it (null: the broker gives none). */
  private volatile String knownTopicId;

  /** The ends {@link #latest} last found. */
  private Map<Integer, Long> lastEnds;

  private Map<Integer, Long> earliest(List<TopicPartition> tps) {
    Consumer<byte[], byte[]> c = consumer();
    Map<TopicPartition, Long> begin = store.call("READ", Errors.Resource.topic(conf.topic), () -> c.beginningOffsets(tps));
    Map<Integer, Long> out = new HashMap<>();
    begin.forEach((tp, o) -> out.put(tp.partition(), o));
    return out;
  }

  /**
   * Where the query starts, resolved once and kept in its checkpoint before batch 0 runs (as
   * Spark's Kafka source keeps it): a batch 0 that Spark runs again after a restart reads the
   * same offsets, not {@code latest} or {@code earliest} of the moment of the restart.
   */
  @Override
  public Offset initialOffset() {
    org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path(checkpointLocation, INITIAL_OFFSETS);
    try {
      org.apache.hadoop.fs.FileSystem fs = path.getFileSystem(
          org.apache.spark.SparkContext.getOrCreate().hadoopConfiguration());
      if (fs.exists(path)) {
        try (java.io.InputStream in = fs.open(path)) {
          initial = SourceOffset.parse(conf.topic, new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
          return initial;
        }
      }
      SourceOffset start = resolveInitialOffset();
      try (java.io.OutputStream out = fs.create(path, false)) {
        out.write(start.json().getBytes(java.nio.charset.StandardCharsets.UTF_8));
      }
      initial = start;
      return start;
    } catch (java.io.IOException e) {
      throw Errors.startingOffsetsWrite(path, e);
    }
  }

  /** Where the query started (its checkpoint's), once known; null before. */
  private volatile SourceOffset initial;
  private volatile boolean startedAsked;

  /**
   * Where the query started, as its checkpoint keeps it ({@link #initialOffset}, which Spark
   * asks only of a query without committed offsets: a restarted one reads the file here);
   * null where there is none (a checkpoint of a kplex before it kept one).
   */
  private SourceOffset started() {
    if (initial != null || startedAsked || checkpointLocation == null) return initial;
    startedAsked = true;  // once per run: a checkpoint without the file does not get one
    org.apache.hadoop.fs.Path path = new org.apache.hadoop.fs.Path(checkpointLocation, INITIAL_OFFSETS);
    try {
      org.apache.hadoop.fs.FileSystem fs = path.getFileSystem(
          org.apache.spark.SparkContext.getOrCreate().hadoopConfiguration());
      if (!fs.exists(path)) return null;
      try (java.io.InputStream in = fs.open(path)) {
        initial = SourceOffset.parse(conf.topic, new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8));
        return initial;
      }
    } catch (Exception e) {  // no Spark (SparkException), no file system: not known
      LOG.warn("kplex: the starting offsets in {} cannot be read: {}", path, e.toString());
      return null;
    }
  }

  /** The file of the starting offsets in the source's checkpoint folder. */
  static final String INITIAL_OFFSETS = "kplex-initial-offsets.json";

  /**
   * Whether the read asks to resume from a table ({@code startingOffsets = 'table'}, or, for
   * a stream in SQL, which has no read options, the session's
   * {@code kplex.stream.startingOffsets}, as {@code kplex stream --resume} sets it).
   */
  private boolean resumes() {
    String starting = settings(options).text(KplexOptions.STARTING_OFFSETS);
    return starting != null && starting.trim().equalsIgnoreCase(ReadBounds.FROM_TABLE);
  }

  /** The read's {@code startingTable}, or the session's {@code kplex.stream.startingTable}. */
  private String startingTable() {
    return settings(options).text(KplexOptions.STARTING_TABLE);
  }

  /** The table this query resumes from (resolved once per run), or null when it does not. */
  private String resumeTable;

  private synchronized String resumeTable() {
    if (!resumes()) return null;
    if (resumeTable == null) {
      consumer();
      String named = startingTable();
      if (named != null && !named.isBlank()) {
        String name = named.trim();
        resumeTable = name.regionMatches(true, 0, "kplex.", 0, 6) ? name.substring(6) : name;
      } else {
        java.util.SortedSet<String> tables = new io.kplex.spark.txn.CommitLog(store).tablesStreamedFrom(conf.topic);
        if (tables.isEmpty()) throw Errors.nothingToResume(conf.topic, null);
        if (tables.size() > 1) throw Errors.whichTableToResume(conf.topic, tables);
        resumeTable = tables.first();
      }
    }
    return resumeTable;
  }

  /**
   * {@code startingOffsets = 'table'}: where the table's last stream from this topic stopped
   * (the offsets its last epoch mark records); a partition it did not know (added since)
   * from its beginning. The sink then takes over that stream's held records and marks.
   */
  private SourceOffset resumedOffset(List<TopicPartition> tps) {
    if (settings(options).isSet(KplexOptions.STARTING_TIMESTAMP)) {
      throw Errors.resumeWithTimestamp();
    }
    String from = resumeTable();
    io.kplex.spark.txn.EpochMark last = new io.kplex.spark.txn.CommitLog(store).lastOnSource(from, conf.topic)
        .orElseThrow(() -> Errors.nothingToResume(conf.topic, from));
    Map<TopicPartition, Long> begin = store.call("READ", Errors.Resource.topic(conf.topic),
        () -> consumer().beginningOffsets(tps));
    Map<Integer, Long> next = new TreeMap<>();
    for (TopicPartition tp : tps) next.put(tp.partition(), last.lineage().ends().getOrDefault(tp.partition(), begin.get(tp)));
    // A partition the last stream read that the topic no longer has starts where that stream
    // stopped: the first micro-batch finds it gone and reports the loss, once.
    last.lineage().ends().forEach(next::putIfAbsent);
    LOG.info("kplex: the stream from topic '{}' resumes table {} where query {} stopped (epoch {}): offsets {}",
        conf.topic, from, last.query(), last.epoch(), next);
    // Offsets of a topic deleted and created again since: the first micro-batch's planning sees
    // the topic's id change and reports it (with failOnDataLoss = false, reads the new topic from
    // its start), as a query restarting from its checkpoint would.
    String readFrom = last.lineage().topicId();
    return new SourceOffset(conf.topic, next).withTopicId(readFrom != null ? readFrom : knownTopicId);
  }

  private SourceOffset resolveInitialOffset() {
    List<TopicPartition> tps = partitions();
    if (resumes()) return resumedOffset(tps);
    // The read's options over the session's kplex.stream.* settings (SET kplex.stream.startingOffsets = latest).
    Map<TopicPartition, long[]> bounds = ReadBounds.resolve(store, List.of(conf.topic), tps,
        new CaseInsensitiveStringMap(settings(options).merged()), true);
    Map<Integer, Long> next = new TreeMap<>();
    bounds.forEach((tp, b) -> next.put(tp.partition(), b[0]));
    return new SourceOffset(conf.topic, next).withTopicId(knownTopicId);
  }

  /**
   * Without {@code maxOffsetsPerTrigger}, a micro-batch (but Trigger.Once's, which reads all)
   * reads at most what fits a quarter of the commit's time budget (transaction.timeout.ms
   * less its margin) at the pace of the query's last micro-batch ({@link QuerySinks#pace}),
   * or at {@link #FIRST_PACE} before it has one, and at least {@link #MIN_DEFAULT_CAP}: a
   * backlog of any size drains in micro-batches that each commit in time.
   */
  @Override
  public ReadLimit getDefaultReadLimit() {
    return ReadLimit.maxRows(maxOffsetsPerTrigger > 0 ? maxOffsetsPerTrigger : Long.MAX_VALUE);
  }

  /** Offsets per ms assumed for a query's first micro-batch (5,000 a second: a slow machine's pace). */
  static final double FIRST_PACE = 5;
  static final long MIN_DEFAULT_CAP = 10_000;

  /** The default cap of a micro-batch; see {@link #getDefaultReadLimit}. */
  private long defaultCap() {
    io.kplex.spark.stream.StreamingBatch batch = io.kplex.spark.stream.StreamingBatch.current();
    double pace = batch == null ? -1 : QuerySinks.DRIVER.pace(batch.queryId());
    return defaultCap(io.kplex.spark.txn.ExactlyOnceCommitter.commitBudgetMs(conf.kafka), pace);
  }

  static long defaultCap(long budgetMs, double pace) {
    double perMs = pace > 0 ? pace : FIRST_PACE;
    return Math.max(MIN_DEFAULT_CAP, (long) Math.min(Long.MAX_VALUE / 2.0, perMs * budgetMs / 4));
  }

  @Override
  public void prepareForTriggerAvailableNow() {
    availableNow = latest();
  }

  @Override
  public Offset latestOffset() {
    throw new UnsupportedOperationException("latestOffset(Offset, ReadLimit) is used");
  }

  @Override
  public Offset latestOffset(Offset startOffset, ReadLimit limit) {
    SourceOffset start = (SourceOffset) startOffset;
    SourceOffset now = latest();
    // Trigger.AvailableNow reads up to what there was when it started (which Spark takes
    // before it resolves a starting offset of `latest`: a start past it reads nothing).
    SourceOffset end = availableNow != null ? availableNow : now;
    latestSeen = now;
    Map<Integer, Long> from = new TreeMap<>(start.next);
    List<Integer> added = new ArrayList<>();
    // (A partition whose loss was reported and that exists again is a new one: read from its beginning.)
    for (Integer p : end.next.keySet()) {
      if ((!from.containsKey(p) || start.gone.contains(p)) && now.next.containsKey(p)) added.add(p);
    }
    if (!added.isEmpty()) {
      List<TopicPartition> tps = new ArrayList<>();
      for (Integer p : added) tps.add(new TopicPartition(conf.topic, p));
      LOG.info("kplex: topic {} has new partitions {}: reading them from their beginning", conf.topic, added);
      from.putAll(earliest(tps));
    }
    Map<Integer, Long> until = new TreeMap<>();
    for (Map.Entry<Integer, Long> e : end.next.entrySet()) {
      Long fromOffset = from.get(e.getKey());
      if (fromOffset == null) continue;  // in Trigger.AvailableNow's end, gone since, its loss reported
      long at = fromOffset;
      long current = now.next.getOrDefault(e.getKey(), e.getValue());
      if (start.gone.contains(e.getKey())) {
        // Gone and made again since Trigger.AvailableNow's end was taken: that end is the old
        // partition's, so the new one is read up to where it stands now.
        until.put(e.getKey(), Math.max(at, current));
        continue;
      }
      // A partition whose end now lies below where the query stands (a topic deleted and
      // recreated, a truncated partition) keeps that end: planning reports it as data loss.
      until.put(e.getKey(), current < at ? current : Math.max(at, e.getValue()));
    }
    QuerySinks.Stand stand = alignmentStand();
    if (stand != null) densities.observe(from, stand.highs());
    // At the cap on held records, only the partitions holding the watermark are read (then
    // they share the limit alone).
    until = withinHeldCap(from, until);
    if (limit instanceof ReadMaxRows) {
      long max = ((ReadMaxRows) limit).maxRows();
      until = shared(from, until, max == Long.MAX_VALUE ? defaultCap() : max, stand);
    } else if (!(limit instanceof ReadAllAvailable) && maxOffsetsPerTrigger > 0) {
      until = shared(from, until, maxOffsetsPerTrigger, stand);
    }
    // A partition the topic no longer has stays in the offset of one micro-batch, whose planning
    // reports the loss (with failOnDataLoss, the query fails there), and is left out after it.
    java.util.Set<Integer> gone = new java.util.TreeSet<>();
    for (Map.Entry<Integer, Long> e : start.next.entrySet()) {
      if (now.next.containsKey(e.getKey())) continue;
      if (start.gone.contains(e.getKey())) {
        until.remove(e.getKey());
      } else {
        until.putIfAbsent(e.getKey(), e.getValue());
        gone.add(e.getKey());
      }
    }
    Idleness idleness = idle(until, now, start);
    long at = conf.clock.millis();
    // A graceful stop asked for (QuerySinks.askRelease): this micro-batch reads what there is
    // and releases everything held, as at the end of the input.
    io.kplex.spark.stream.StreamingBatch batch = io.kplex.spark.stream.StreamingBatch.current();
    boolean stopping = batch != null && QuerySinks.DRIVER.release(batch.queryId()) == QuerySinks.Release.ASKED;
    if (stopping) {
      QuerySinks.DRIVER.released(batch.queryId(), QuerySinks.Release.PLANNED);
      dataSinceFlush = false;
      return new SourceOffset(conf.topic, until, start.flushes + 1, idleness.idle, idleness.drained, at)
          .withTopicId(now.topicId).withGone(gone);
    }
    // (A partition found gone makes a micro-batch even on a quiet topic: its planning reports the loss.)
    if (!until.equals(start.next) || !gone.isEmpty()) {
      lastDataAt = conf.clock.millis();
      dataSinceFlush = true;
      return new SourceOffset(conf.topic, until, start.flushes, idleness.idle, idleness.drained, at)
          .withTopicId(now.topicId).withGone(gone);
    }
    // (A topic's drained partitions alone make no micro-batch: they travel with the next one
    // that has records, which is what the sink can release past a partition it never saw.)
    boolean drainedMatters = conf.kind == ReadConf.Kind.DERIVED && !idleness.drained.equals(start.drained);
    if (!idleness.idle.equals(start.idle) || drainedMatters) {
      // No new record, but a partition went idle (or came back): a micro-batch without
      // records moves the watermark on.
      return start.withIdle(idleness.idle, idleness.drained, at).withTopicId(now.topicId).withGone(gone);
    }
    // No new record: once the input is idle (AvailableNow at its end, or nothing for
    // idleReleaseMs), one more micro-batch tells a kplex sink to release what it holds.
    // Records the held cap left unread are not quiet: released past them, they would be late.
    boolean quiet = (availableNow != null && releaseAtEnd)
        || (idleReleaseMs > 0 && conf.clock.millis() - lastDataAt >= idleReleaseMs && !unread(until, end));
    if (quiet && dataSinceFlush) {
      dataSinceFlush = false;
      return start.flushed();
    }
    return start;
  }

  /** Whether a partition has records at or past {@code until} that {@code end} already holds. */
  private static boolean unread(Map<Integer, Long> until, SourceOffset end) {
    for (Map.Entry<Integer, Long> e : end.next.entrySet()) {
      if (until.getOrDefault(e.getKey(), e.getValue()) < e.getValue()) return true;
    }
    return false;
  }

  /**
   * The ordered partitions idle once a batch has read up to {@code until}, and those the
   * sink decides ({@link SourceOffset#drained}); see {@link #idle}.
   */
  private record Idleness(java.util.Set<Integer> idle, java.util.Set<Integer> drained) {
    static final Idleness NONE = new Idleness(java.util.Set.of(), java.util.Set.of());
  }

  /**
   * Idleness once the batch has read up to {@code until}. A physical partition read to its
   * end as of {@code now} is idle when it is empty (nothing to read from its beginning) or
   * unmoved for {@code idleTimeoutMs} on the driver's clock. A partition's quiet is measured
   * from when this run saw its end move or, when this run first sees it where {@code start}
   * stands, from when {@code start} was planned ({@link SourceOffset#at}, on the clock of the
   * driver that planned it, allowed {@link #PLANNER_CLOCK_SKEW_MS} of skew): its end was at
   * least there then and is no further now, so it has had no record since, and a scheduled
   * run finds a partition quiet since the last run idle at once. A plain topic's ordered
   * partitions are its physical ones. A kplex table's are its virtual partitions: those of an
   * idle physical partition are idle; those of one read to its end are drained, for the
   * sink to make idle when it saw no record of them, or none newer for the timeout.
   */
  private Idleness idle(Map<Integer, Long> until, SourceOffset now, SourceOffset start) {
    long at = conf.clock.millis();
    java.util.Set<Integer> moved = new java.util.HashSet<>();
    now.next.forEach((p, end) -> {
      long[] seen = lastMoved.get(p);
      if (seen != null && seen[0] != end) moved.add(p);
      if (seen == null) {
        long since = start.at + PLANNER_CLOCK_SKEW_MS;
        boolean unmoved = start.at > 0 && since <= at && start.next.getOrDefault(p, -1L) == (long) end;
        lastMoved.put(p, new long[] {end, unmoved ? since : at});
      } else if (seen[0] != end) {
        lastMoved.put(p, new long[] {end, at});
      }
    });
    java.util.Set<Integer> idle = new java.util.TreeSet<>();
    // A partition the topic no longer has (kept in the offsets so that planning reports the
    // loss; with failOnDataLoss = false the query goes on) gets no record again: idle, even
    // under strict waiting, or its last high would hold the watermark for good.
    for (int p : until.keySet()) if (!now.next.containsKey(p)) idle.add(p);
    Idleness gone = idle.isEmpty() || conf.kind == ReadConf.Kind.DERIVED ? Idleness.NONE
        : new Idleness(java.util.Set.copyOf(idle), java.util.Set.of());
    if (idleTimeoutMs < 0) return gone;
    List<Integer> atEnd = new ArrayList<>();
    for (Map.Entry<Integer, Long> e : now.next.entrySet()) {
      if (until.getOrDefault(e.getKey(), -1L) >= e.getValue()) atEnd.add(e.getKey());
    }
    if (atEnd.isEmpty()) return gone;
    // Whether a partition is empty is asked only where it decides: not for one idle by the
    // timeout, nor for one whose end moved since the last call (records came, so it holds
    // some; one the broker emptied meanwhile is found by the next call). A live stream asks
    // nothing here.
    List<TopicPartition> tps = new ArrayList<>();
    for (int p : atEnd) {
      if (at - lastMoved.get(p)[1] >= idleTimeoutMs) {
        idle.add(p);
      } else if (!moved.contains(p)) {
        tps.add(new TopicPartition(conf.topic, p));
      }
    }
    Map<Integer, Long> begin = tps.isEmpty() ? Map.of() : earliest(tps);
    begin.forEach((p, first) -> {
      if (first >= now.next.get(p)) idle.add(p);
    });
    if (conf.kind != ReadConf.Kind.DERIVED) {
      // Read to its end, yet maybe with no row that reaches the sink (a WHERE, null_key or
      // null_order = drop removed them all): the sink makes it idle when no row of it has
      // reached it yet (HeldRelease.Signal#idleBy), once an earlier micro-batch of the query
      // read some of its records (the sink's marks hold earlier micro-batches' rows only).
      java.util.Set<Integer> drained = new java.util.TreeSet<>();
      SourceOffset first = started();
      for (int p : atEnd) {
        if (!idle.contains(p) && first != null && start.next.getOrDefault(p, 0L) > first.next.getOrDefault(p, 0L)) {
          drained.add(p);
        }
      }
      return new Idleness(idle, drained);
    }
    java.util.Set<Integer> idleVps = new java.util.TreeSet<>();
    java.util.Set<Integer> drained = new java.util.TreeSet<>();
    int physical = conf.physicalPartitions > 0 ? conf.physicalPartitions : now.next.size();
    for (int vp = 0; vp < conf.virtualPartitions; vp++) {
      int p = io.kplex.spark.wire.Placement.physicalPartition(vp, physical);
      if (idle.contains(p)) {
        idleVps.add(vp);
      } else if (atEnd.contains(p)) {
        drained.add(vp);
      }
    }
    return new Idleness(idleVps, drained);
  }

  /**
   * Where the query's kplex sink stands ({@link QuerySinks#stand}), for sharing a plain
   * topic's micro-batch in event time; null when the sink is not kplex's, has committed
   * nothing in this run, or the source is a kplex table (the sink stands by its virtual
   * partitions, not by the physical ones this source reads).
   */
  private QuerySinks.Stand alignmentStand() {
    io.kplex.spark.stream.StreamingBatch batch = io.kplex.spark.stream.StreamingBatch.current();
    return batch == null || conf.kind == ReadConf.Kind.DERIVED ? null : QuerySinks.DRIVER.stand(batch.queryId());
  }

  /** The event time an offset carries per partition, as this run has seen it (see {@link Densities}). */
  private final Densities densities = new Densities();

  /**
   * At most {@code max} offsets: in event time by where the sink stands ({@link #aligned}), or,
   * without a stand, fairly ({@link #capped}).
   */
  private Map<Integer, Long> shared(Map<Integer, Long> from, Map<Integer, Long> until, long max,
      QuerySinks.Stand stand) {
    return stand == null ? capped(from, until, max) : aligned(from, until, max, stand, densities.perOffset());
  }

  /**
   * Per partition, the event time (ms of order value) one offset carries, estimated from two
   * observations (offset, high): where a micro-batch starts and the sink's high after the
   * micro-batch that ended there. The latest estimate is kept. An observation whose offset or
   * high did not move on gives none (the one before stays the base, so the next estimate spans
   * both); one whose offset or high went back (a topic deleted and recreated) becomes the new
   * base. Offsets count what the partition holds: transaction markers and aborted records too.
   */
  static final class Densities {
    private final Map<Integer, long[]> base = new HashMap<>();
    private final Map<Integer, Double> perOffset = new HashMap<>();

    /** {@code offsets}: where the micro-batch being planned starts; {@code highs}: the sink's stand after the last one. */
    void observe(Map<Integer, Long> offsets, Map<Integer, Long> highs) {
      highs.forEach((p, high) -> {
        Long offset = offsets.get(p);
        if (offset == null) return;
        long[] was = base.get(p);
        if (was == null || offset < was[0] || high < was[1]) {
          base.put(p, new long[] {offset, high});
        } else if (offset > was[0] && high > was[1]) {
          perOffset.put(p, (double) (high - was[1]) / (offset - was[0]));
          base.put(p, new long[] {offset, high});
        }
      });
    }

    /** Event-time ms per offset, by partition (those with an estimate). */
    Map<Integer, Double> perOffset() {
      return java.util.Collections.unmodifiableMap(perOffset);
    }
  }

  /**
   * The partitions of a plain topic that are ahead in event time by where the query's kplex
   * sink stands: those whose largest order value read lies more than max_delay_ms above the
   * smallest of the partitions that hold the watermark (a partition with none read yet is the
   * furthest behind; an idle one holds nothing back).
   */
  static java.util.Set<Integer> ahead(Map<Integer, Long> highs, java.util.Set<Integer> idle,
      java.util.Collection<Integer> partitions, long maxDelayMs) {
    long slowest = Long.MAX_VALUE;
    for (int p : partitions) {
      if (!idle.contains(p)) slowest = Math.min(slowest, highs.getOrDefault(p, Long.MIN_VALUE));
    }
    java.util.Set<Integer> out = new java.util.TreeSet<>();
    if (slowest == Long.MAX_VALUE) return out;
    for (int p : partitions) {
      Long high = highs.get(p);
      if (high != null && (slowest == Long.MIN_VALUE || high - slowest > maxDelayMs)) out.add(p);
    }
    return out;
  }

  /**
   * The cap on held records ({@code kplex.max_held_records}), as the query's kplex sink last
   * stood ({@link QuerySinks#stand}): once the sink holds as many as its cap, only the
   * partitions that hold the watermark are read (what the others would add could only be held
   * too); see {@link #heldCapped}. For a kplex table read as a source the watermark is held by
   * virtual partitions: the physical partitions that carry them are read. Logged once per time
   * the cap is reached.
   */
  private Map<Integer, Long> withinHeldCap(Map<Integer, Long> from, Map<Integer, Long> until) {
    io.kplex.spark.stream.StreamingBatch batch = io.kplex.spark.stream.StreamingBatch.current();
    QuerySinks.Stand stand = batch == null ? null : QuerySinks.DRIVER.stand(batch.queryId());
    if (stand == null || !stand.full()) {
      heldCapWarned = false;
      return until;
    }
    java.util.Set<Integer> holding = holdingPartitions(stand, until.keySet());
    // Strict waiting fails; with an idle timeout a silent partition stops holding in time; an
    // AvailableNow run's end releases everything: there, reading on is the way out.
    boolean noWayOut = idleTimeoutMs < 0 && availableNow == null;
    Map<Integer, Long> out = heldCapped(from, until, holding, stand, availableNow == null, noWayOut, conf.topic,
        QuerySinks.DRIVER.table(batch.queryId()));
    if (!out.equals(until) && !heldCapWarned) {
      heldCapWarned = true;
      LOG.warn("kplex: the stream into table {} holds {} records, its cap {} = {}: reading only the partitions"
          + " of topic {} that hold the watermark ({}) until it moves", QuerySinks.DRIVER.table(batch.queryId()),
          stand.heldRecords(), KplexOptions.MAX_HELD_RECORDS, stand.maxHeldRecords(), conf.topic, holding);
    }
    return out;
  }

  /**
   * The source partitions to read while the cap holds: those that hold the watermark
   * ({@link #holding}); of a kplex table, the physical partitions of the virtual partitions
   * that hold it.
   */
  private java.util.Set<Integer> holdingPartitions(QuerySinks.Stand stand, java.util.Set<Integer> partitions) {
    if (conf.kind != ReadConf.Kind.DERIVED || conf.virtualPartitions <= 0) return holding(stand, partitions);
    int physical = conf.physicalPartitions > 0 ? conf.physicalPartitions : partitions.size();
    java.util.Set<Integer> out = new java.util.TreeSet<>();
    for (int vp : holding(stand, java.util.stream.IntStream.range(0, conf.virtualPartitions).boxed().toList())) {
      out.add(io.kplex.spark.wire.Placement.physicalPartition(vp, physical));
    }
    return out;
  }

  private boolean heldCapWarned;

  /**
   * The partitions that hold the watermark by {@code stand}: not idle, with the smallest high
   * (none read yet counts as the smallest of all).
   */
  static java.util.Set<Integer> holding(QuerySinks.Stand stand, java.util.Collection<Integer> partitions) {
    long slowest = Long.MAX_VALUE;
    for (int p : partitions) {
      if (!stand.idle().contains(p)) slowest = Math.min(slowest, stand.highs().getOrDefault(p, Long.MIN_VALUE));
    }
    java.util.Set<Integer> out = new java.util.TreeSet<>();
    for (int p : partitions) {
      if (!stand.idle().contains(p) && stand.highs().getOrDefault(p, Long.MIN_VALUE) == slowest) out.add(p);
    }
    return out;
  }

  /**
   * What a micro-batch may read once the sink is {@link QuerySinks.Stand#full}: only the
   * partitions that hold the watermark ({@link #holding}) advance; the others stay at
   * {@code from}. If none of those has a record to read, reading cannot move the watermark:
   * with {@code noWayOut} (strict waiting, no end of input to release at) that is
   * {@code [KPLEX_HELD_LIMIT]}, naming them; otherwise the batch reads nothing while it waits
   * ({@code waitWhenStuck}; an idle timeout will let them go), or, when {@code waitWhenStuck}
   * is false (an AvailableNow run, whose end releases everything), reads on.
   */
  static Map<Integer, Long> heldCapped(Map<Integer, Long> from, Map<Integer, Long> until, QuerySinks.Stand stand,
      boolean waitWhenStuck, boolean noWayOut, String topic, String table) {
    return heldCapped(from, until, holding(stand, until.keySet()), stand, waitWhenStuck, noWayOut, topic, table);
  }

  /** {@link #heldCapped}, with the partitions to read ({@code holding}) given. */
  static Map<Integer, Long> heldCapped(Map<Integer, Long> from, Map<Integer, Long> until,
      java.util.Set<Integer> holding, QuerySinks.Stand stand, boolean waitWhenStuck, boolean noWayOut, String topic,
      String table) {
    if (!stand.full()) return until;
    boolean canMove = false;
    for (int p : holding) canMove |= until.get(p) > from.getOrDefault(p, until.get(p));
    if (!canMove) {
      if (noWayOut) throw Errors.heldLimit(table, stand.heldRecords(), stand.maxHeldRecords(), topic, holding);
      if (!waitWhenStuck) return until;
    }
    Map<Integer, Long> out = new TreeMap<>(until);
    for (int p : until.keySet()) {
      if (!holding.contains(p) && from.containsKey(p)) out.put(p, Math.min(until.get(p), from.get(p)));
    }
    return out;
  }

  static Map<Integer, Long> capped(Map<Integer, Long> from, Map<Integer, Long> until, long max) {
    return capped(from, until, max, java.util.Set.of());
  }

  /**
   * At most {@code max} offsets in all, shared fairly (max-min): partitions in order of
   * backlog, smallest first, each takes its whole backlog or an equal share of what is left,
   * at least one offset while any is left. A small backlog beside a huge one drains at once.
   * Watermark alignment, while the event time an offset carries is not known ({@link
   * #aligned}): while a partition not {@code ahead} has a backlog, the partitions ahead in
   * event time get nothing (what they would add would only be held back until the others
   * catch up); the others share the limit.
   */
  static Map<Integer, Long> capped(Map<Integer, Long> from, Map<Integer, Long> until, long max,
      java.util.Set<Integer> ahead) {
    long total = 0;
    List<Integer> byBacklog = new ArrayList<>();
    boolean behindWithBacklog = false;
    for (Map.Entry<Integer, Long> e : until.entrySet()) {
      long backlog = Math.max(0, e.getValue() - from.get(e.getKey()));
      total += backlog;
      if (backlog > 0) byBacklog.add(e.getKey());
      if (backlog > 0 && !ahead.contains(e.getKey())) behindWithBacklog = true;
    }
    if (total <= max) return until;
    if (behindWithBacklog && !ahead.isEmpty()) {
      Map<Integer, Long> held = new TreeMap<>(until);
      for (int p : ahead) if (held.containsKey(p)) held.put(p, Math.min(held.get(p), from.get(p)));
      return capped(from, held, max, java.util.Set.of());
    }
    byBacklog.sort(java.util.Comparator.comparingLong((Integer p) -> until.get(p) - from.get(p)).thenComparing(p -> p));
    Map<Integer, Long> out = new TreeMap<>(until);
    long left = max;
    int partitionsLeft = byBacklog.size();
    for (int p : byBacklog) {
      long backlog = until.get(p) - from.get(p);
      long share = left <= 0 ? 0 : Math.min(backlog, Math.max(1, left / partitionsLeft));
      out.put(p, from.get(p) + share);
      left -= share;
      partitionsLeft--;
    }
    return out;
  }

  /**
   * At most {@code max} offsets in all, shared in event time (watermark alignment): every
   * partition with a backlog reads up to about the same event time T, as many offsets as
   * {@code ceil((T - high) / density)} (none while its high is past T, at most its backlog),
   * T the latest that fits {@code max}. What is left under {@code max} (one ms more would not
   * fit) goes fairly to the partitions that ms would move. So a micro-batch reads every
   * partition with a backlog that is not ahead, they end about level, and what the sink
   * releases after it is about all it read: a partition behind catches up first, one ahead
   * gets nothing until T passes its high, one denser in event time reads more offsets. The
   * partitions with a backlog and the smallest high each get at least one offset while
   * {@code max} lasts, so the watermark moves. {@code stand}: the sink's highs and idle
   * partitions after the last micro-batch; {@code densities}: event-time ms per offset
   * ({@link Densities}). Until every partition with a backlog has a high and a density, and
   * while one with a backlog is idle (its high says nothing of the records that woke it), the
   * micro-batch is shared as before: {@link #capped}, the partitions {@link #ahead} waiting.
   */
  static Map<Integer, Long> aligned(Map<Integer, Long> from, Map<Integer, Long> until, long max,
      QuerySinks.Stand stand, Map<Integer, Double> densities) {
    long total = 0;
    Map<Integer, Reach> reaches = new TreeMap<>();
    boolean known = true;
    for (Map.Entry<Integer, Long> e : until.entrySet()) {
      int p = e.getKey();
      long backlog = Math.max(0, e.getValue() - from.get(p));
      if (backlog == 0) continue;
      total += backlog;
      Long high = stand.highs().get(p);
      Double density = densities.get(p);
      if (high == null || density == null || !(density > 0) || density.isInfinite() || stand.idle().contains(p)) {
        known = false;
      } else {
        reaches.put(p, new Reach(high, density, backlog));
      }
    }
    if (total <= max) return until;
    if (!known) return capped(from, until, max, ahead(stand.highs(), stand.idle(), until.keySet(), stand.maxDelayMs()));
    // Binary search for the latest T that fits: none reads at the smallest high (lo); all read
    // their whole backlog, more than max, once T passes every high + density * backlog (hi).
    long lo = Long.MAX_VALUE;
    double reachAll = -Double.MAX_VALUE;
    for (Reach r : reaches.values()) {
      lo = Math.min(lo, r.high);
      reachAll = Math.max(reachAll, r.high + r.density * r.backlog);
    }
    long hi = (long) Math.min(Math.ceil(reachAll) + 1, lo + 4e18);
    while (hi - lo > 1) {
      long mid = lo + (hi - lo) / 2;
      long offsets = 0;
      for (Reach r : reaches.values()) offsets += r.offsetsTo(mid);
      if (offsets <= max) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    Map<Integer, Long> out = new TreeMap<>(until);
    long left = max;
    for (Map.Entry<Integer, Reach> e : reaches.entrySet()) {
      long share = e.getValue().offsetsTo(lo);
      out.put(e.getKey(), from.get(e.getKey()) + share);
      left -= share;
    }
    // What is left, fairly (max-min) over the partitions one ms more would move, fewest first.
    Map<Integer, Long> more = new TreeMap<>();
    for (Map.Entry<Integer, Reach> e : reaches.entrySet()) {
      long step = e.getValue().offsetsTo(lo + 1) - e.getValue().offsetsTo(lo);
      if (step > 0) more.put(e.getKey(), step);
    }
    List<Integer> moved = new ArrayList<>(more.keySet());
    moved.sort(java.util.Comparator.comparingLong((Integer p) -> more.get(p)).thenComparing(p -> p));
    int movedLeft = moved.size();
    for (int p : moved) {
      long share = left <= 0 ? 0 : Math.min(more.get(p), Math.max(1, left / movedLeft));
      out.put(p, out.get(p) + share);
      left -= share;
      movedLeft--;
    }
    return out;
  }

  /** A partition with a backlog, in event time: its high, event-time ms per offset, its backlog. */
  private record Reach(long high, double density, long backlog) {
    /** The offsets it reads to reach event time {@code t}: none below its high, at most its backlog. */
    long offsetsTo(long t) {
      return (long) Math.max(0, Math.min(backlog, Math.ceil(((double) t - high) / density)));
    }
  }

  @Override
  public InputPartition[] planInputPartitions(Offset startOffset, Offset endOffset) {
    SourceOffset start = (SourceOffset) startOffset;
    SourceOffset end = (SourceOffset) endOffset;
    // Spark asks several times per micro-batch (each copy of the plan): plan once.
    Planned planned = lastPlanned;
    if (planned == null || !planned.start.equals(start) || !planned.end.equals(end)) {
      planned = plan(start, end);
      lastPlanned = planned;
    }
    // (The ends of the partitions it reads: one found gone has none, in the table's lineage or
    // the monitoring group.)
    Map<Integer, Long> ends = end.next;
    if (!end.gone.isEmpty()) {
      ends = new TreeMap<>(end.next);
      ends.keySet().removeAll(end.gone);
    }
    String resumeFrom = firstOfQuery(start) ? resumeTable() : null;
    HeldRelease.signal(new HeldRelease.Signal(conf.topic, orderedPartitions(end), ints(end.idle),
        end.flushes > start.flushes, planned.starts, ends, monitorGroup, ints(end.drained), end.at,
        idleTimeoutMs, resumeFrom, conf.kind == ReadConf.Kind.DERIVED ? conf.table : null,
        end.topicId, resumeFrom == null ? null : start.next));
    return planned.partitions.clone();
  }

  /**
   * Whether a micro-batch from {@code start} is the query's first (where it started: only then
   * does the sink take a resumed stream over; not known, as for a checkpoint of a kplex before
   * it kept its start, counts as first). A query that resumed a table and restarts from its
   * checkpoint later does not resolve that table again: another table streamed from the same
   * topic since must not make its restart fail as ambiguous.
   */
  private boolean firstOfQuery(SourceOffset start) {
    // (A query's first micro-batch is Spark's batch 0: a flush or an idle batch later starts
    // at the same offsets too.)
    io.kplex.spark.stream.StreamingBatch batch = io.kplex.spark.stream.StreamingBatch.current();
    if (batch != null && batch.batchId() > 0) return false;
    SourceOffset first = started();
    return first == null || first.next.equals(start.next);
  }

  private static int[] ints(java.util.Set<Integer> set) {
    return set.stream().mapToInt(Integer::intValue).toArray();
  }

  /**
   * The input partitions of the batch (start, end): its ranges, one per partition, cut into
   * {@link #readTasks} chains ({@link RangeChain}), and where each partition's range starts
   * (what the sink checks its rows against).
   */
  private Planned plan(SourceOffset start, SourceOffset end) {
    Map<Integer, Long> starts = new TreeMap<>();
    Map<Integer, Long> begin = earliestOfThisBatch();
    // Deleted and created again: its offsets start again, and none continues the old topic's.
    boolean recreated = start.recreatedBy(end);
    List<OffsetRange> ranges = new ArrayList<>();
    for (Map.Entry<Integer, Long> e : end.next.entrySet()) {
      int p = e.getKey();
      // (A partition whose loss the micro-batch before reported is new if it exists again.)
      boolean continued = start.next.containsKey(p) && !start.gone.contains(p);
      long from = continued ? start.next.get(p) : begin.getOrDefault(p, 0L);
      long until = e.getValue();
      // The offset that found a partition gone decides, not what the topic holds now: a rerun
      // of this micro-batch after the partition was made again plans what the first run did
      // (nothing of it; the next micro-batch reads the new partition from its beginning).
      if (end.gone.contains(p) || !begin.containsKey(p)) {
        if (!start.gone.contains(p)) lost(Errors.DataLoss.PARTITION_GONE, p, from, until);
        continue;
      }
      if (recreated && continued) {
        lost(Errors.DataLoss.TOPIC_RECREATED, p, from, until);
        from = begin.get(p);  // failOnDataLoss = false: read what the new topic holds
      } else if (until < from) {
        lost(Errors.DataLoss.END_WENT_BACK, p, until, from);
        from = begin.get(p);  // failOnDataLoss = false: read what the partition holds now
      }
      if (begin.get(p) > from) {
        lost(Errors.DataLoss.BROKER_DELETED, p, from, Math.min(until, begin.get(p)));
        from = Math.min(until, begin.get(p));
      }
      starts.put(p, from);
      ranges.add(new OffsetRange(conf.topic, p, from, until));
    }
    int vp = conf.kind == ReadConf.Kind.DERIVED ? VirtualRange.ALL : -1;
    List<InputPartition> parts = new ArrayList<>();
    for (OffsetRange[] chain : RangeChain.cut(ranges, readTasks())) parts.add(new RangeChain(vp, chain));
    return new Planned(start, end, parts.toArray(new InputPartition[0]), starts);
  }

  /**
   * The tasks a micro-batch reads in: the read option {@code minPartitions}, else Spark's
   * default parallelism (what runs at once; more would only add fixed cost per micro-batch).
   */
  private int readTasks() {
    ConfParser settings = settings(options);
    if (settings.isSet(KplexOptions.MIN_PARTITIONS)) return settings.intConf(KplexOptions.MIN_PARTITIONS);
    return org.apache.spark.SparkContext.getOrCreate().defaultParallelism();
  }

  /**
   * The partitions each of which is in event-time order but for bounded disorder, whose
   * watermark releases a kplex sink's held records: a plain topic's partitions; a kplex
   * table's virtual partitions (each in order: its physical partitions interleave them).
   */
  private int[] orderedPartitions(SourceOffset end) {
    if (conf.kind == ReadConf.Kind.DERIVED && conf.virtualPartitions > 0) {
      return java.util.stream.IntStream.range(0, conf.virtualPartitions).toArray();
    }
    return end.next.keySet().stream().mapToInt(Integer::intValue).sorted().toArray();
  }

  /** The partitions planned for one (start, end), and where each source partition's range starts. */
  private record Planned(SourceOffset start, SourceOffset end, InputPartition[] partitions,
      Map<Integer, Long> starts) {}

  private volatile Planned lastPlanned;

  /** With failOnDataLoss = false: how often data was lost in this run, and how many offsets were skipped. */
  private final java.util.concurrent.atomic.AtomicLong dataLossEvents = new java.util.concurrent.atomic.AtomicLong();
  private final java.util.concurrent.atomic.AtomicLong offsetsLost = new java.util.concurrent.atomic.AtomicLong();

  private void lost(Errors.DataLoss how, int partition, long from, long until) {
    KplexException lost = Errors.dataLoss(how, conf.topic, partition, from, until, FAIL_ON_DATA_LOSS);
    if (failOnDataLoss) {
      throw lost;
    }
    dataLossEvents.incrementAndGet();
    // (What the old topic held past the query's position of a recreated one is not known.)
    if (how != Errors.DataLoss.TOPIC_RECREATED) offsetsLost.addAndGet(Math.max(0, until - from));
    LOG.warn("kplex: {} Skipped ({} = false).", lost.text(), FAIL_ON_DATA_LOSS);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new KplexReaderFactory(failOnDataLoss ? conf : conf.skippingDeleted(), columns, null);
  }

  @Override
  public Offset deserializeOffset(String json) {
    return SourceOffset.parse(conf.topic, json);
  }

  @Override
  public Map<String, String> metrics(java.util.Optional<Offset> latestConsumed) {
    Map<String, String> m = new HashMap<>();
    if (latestConsumed.isPresent() && latestSeen != null) {
      Map<Integer, Long> done = ((SourceOffset) latestConsumed.get()).next;
      long behind = 0;
      for (Map.Entry<Integer, Long> e : latestSeen.next.entrySet()) {
        behind += Math.max(0, e.getValue() - done.getOrDefault(e.getKey(), 0L));
      }
      m.put("offsetsBehindLatest", Long.toString(behind));
    }
    m.put("dataLossEvents", Long.toString(dataLossEvents.get()));
    m.put("offsetsLost", Long.toString(offsetsLost.get()));
    return m;
  }

  /**
   * Spark is done with the micro-batches up to {@code end} (it says so when it plans the next
   * one). For a query whose sink is not kplex's, the offsets go to its monitoring group
   * ({@link MonitorGroup}), for lag tools only; a kplex sink commits them itself, at once,
   * with the batch's exactly-once commit. Nothing reads them back: the checkpoint holds the
   * offsets a restart resumes from.
   */
  @Override
  public void commit(Offset end) {
    io.kplex.spark.stream.StreamingBatch batch = io.kplex.spark.stream.StreamingBatch.current();
    String query = batch == null ? null : batch.queryId();
    if (query == null || QuerySinks.DRIVER.table(query) != null) return;
    String group = MonitorGroup.name(monitorGroup, null, query);
    if (group == null || store == null || !(end instanceof SourceOffset)) return;
    Exception failed = MonitorGroup.commit(store, group, conf.topic, ((SourceOffset) end).next);
    if (failed != null && !monitorWarned) {
      monitorWarned = true;
      LOG.warn("kplex: cannot commit the offsets of query {} to its monitoring group {} ({}); the query goes on,"
          + " its lag is only not shown there (it needs READ on the group)", query, group, failed.toString());
    }
  }

  /** How long a stopping source waits for its query's last monitoring-group commit. */
  static final long STOP_MONITOR_WAIT_MS = 5_000;

  @Override
  public synchronized void stop() {
    // Lag tools see the last epoch once the query has ended: its sink's group commit is answered.
    if (queryId != null) QuerySinks.DRIVER.awaitMonitoring(queryId, STOP_MONITOR_WAIT_MS);
    if (consumer != null) {
      consumer.close(java.time.Duration.ZERO);
      store.close();
      consumer = null;
    }
  }

  @Override
  public String toString() {
    return "KplexMicroBatchStream(" + conf + ")";
  }
}
