package io.kplex.spark.txn;

import io.kplex.spark.kafka.CompactedTopic;
import io.kplex.spark.kafka.KafkaClients;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.time.Clock;
import java.lang.reflect.Constructor;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.FenceProducersOptions;
import org.apache.kafka.clients.admin.FenceProducersResult;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.ListTransactionsResult;
import org.apache.kafka.clients.admin.MockAdminClient;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.admin.internals.CoordinatorKey;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.MockProducer;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.internals.KafkaFutureImpl;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.utils.ProducerIdAndEpoch;

/**
 * An in-memory Kafka for the transaction layer's JUnit tests, behind {@link KafkaClients}:
 * topics as lists of records per partition (what kplex's compacted topics need), written
 * by {@link MockProducer}s and read back by {@link MockConsumer}s, and a
 * {@link MockAdminClient} that also lists and fences open transactions (which the mock
 * does not). A test opens transactions ({@link #open}), reads what was fenced
 * ({@link #fenced}), and can act right after a key is written ({@link #afterWriting}), as
 * another writer would.
 */
final class FakeKafka implements KafkaClients {
  static final KafkaConf CONF = KafkaConf.from(Map.of("kafka.bootstrap.servers", "fake:9092"));
  private static final Node NODE = new Node(0, "fake", 9092);

  /** Topic partition -> its records, in offset order. */
  private final Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> topics = new HashMap<>();
  /** Open transactional ids, and those fenced, in order. */
  final Set<String> open = ConcurrentHashMap.newKeySet();
  final List<String> fenced = new java.util.concurrent.CopyOnWriteArrayList<>();
  /** How many times a topic was read (a consumer asked for its end offsets, as every read does first). */
  final AtomicInteger reads = new AtomicInteger();
  /** How many consumers were made. */
  final AtomicInteger consumers = new AtomicInteger();
  /** How many records consumers were handed. */
  final AtomicInteger recordsRead = new AtomicInteger();
  /** Topic descriptions asked of the admin client. */
  final AtomicInteger descriptions = new AtomicInteger();
  /** How many times a consumer was asked for partitions' beginning offsets. */
  final AtomicInteger beginnings = new AtomicInteger();
  /** The topics the admin client was asked offsets of, one entry per topic a request named. */
  final List<String> offsetsAsked = new java.util.concurrent.CopyOnWriteArrayList<>();
  /**
   * The topic ids descriptions give, by topic; a topic not here has none (as a broker before
   * KIP-516). A new id for a name is that topic deleted and created again.
   */
  final Map<String, org.apache.kafka.common.Uuid> topicIds = new ConcurrentHashMap<>();
  private final FakeAdmin admin = new FakeAdmin();
  private final Map<String, Runnable> hooks = new ConcurrentHashMap<>();

  /** Runs {@code then} once, right after {@code key} is next written (before the writer goes on). */
  void afterWriting(String key, Runnable then) {
    hooks.put(key, then);
  }

  /** Per partition, its first offset still held (0 unless {@link #deleteBefore} moved it). */
  private final Map<TopicPartition, Long> logStart = new ConcurrentHashMap<>();

  /** Records below {@code offset} are gone, as the broker's retention deletes them. */
  void deleteBefore(TopicPartition tp, long offset) {
    logStart.put(tp, offset);
  }

  /** Transactions a task left open (ONGOING), for the fencer to find. */
  void open(String... ids) {
    open.addAll(List.of(ids));
  }

  /** A connection to this Kafka, reading {@code clock}. */
  KafkaTopics topics(Clock clock) {
    return new KafkaTopics(CONF, this, clock);
  }

  /** The commit log as kplex keeps it, for a test to read or write directly. */
  CompactedTopic commitLog(Clock clock) {
    return CommitLog.topic(topics(clock));
  }

  /** The latest value of every key of {@code topic}, as text (deleted keys and the layout record left out). */
  synchronized Map<String, String> latest(String topic) {
    Map<String, String> out = new LinkedHashMap<>();
    List<ConsumerRecord<byte[], byte[]>> all = new ArrayList<>();
    topics.forEach((tp, log) -> {
      if (tp.topic().equals(topic)) all.addAll(log);
    });
    for (ConsumerRecord<byte[], byte[]> r : all) {
      String key = new String(r.key(), StandardCharsets.UTF_8);
      if (r.value() == null) {
        out.remove(key);
      } else {
        out.put(key, new String(r.value(), StandardCharsets.UTF_8));
      }
    }
    out.remove(io.kplex.spark.kafka.CompactedTopic.LAYOUT_KEY);
    return out;
  }

  /** The records of one partition of {@code topic}, in offset order (a copy). */
  synchronized List<ConsumerRecord<byte[], byte[]>> records(String topic, int partition) {
    return List.copyOf(topics.getOrDefault(new TopicPartition(topic, partition), List.of()));
  }

  private long append(String topic, int partition, byte[] key, byte[] value, long timestamp) {
    long offset;
    synchronized (this) {
      List<ConsumerRecord<byte[], byte[]>> log = topics.computeIfAbsent(new TopicPartition(topic, partition),
          t -> new ArrayList<>());
      offset = log.size();
      log.add(new ConsumerRecord<>(topic, partition, offset, timestamp,
          org.apache.kafka.common.record.TimestampType.CREATE_TIME, 0, 0, key, value,
          new org.apache.kafka.common.header.internals.RecordHeaders(), java.util.Optional.empty()));
    }
    Runnable hook = hooks.remove(new String(key, StandardCharsets.UTF_8));
    if (hook != null) hook.run();
    return offset;
  }

  private synchronized Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> snapshot() {
    Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> copy = new HashMap<>();
    topics.forEach((tp, log) -> copy.put(tp, List.copyOf(log)));
    return copy;
  }

  @Override
  public Producer<byte[], byte[]> producer(Map<String, Object> props) {
    return new MockProducer<>(true, new ByteArraySerializer(), new ByteArraySerializer()) {
      @Override
      public synchronized Future<RecordMetadata> send(ProducerRecord<byte[], byte[]> r, Callback callback) {
        int partition = r.partition() == null ? 0 : r.partition();
        long offset = append(r.topic(), partition, r.key(), r.value(),
            r.timestamp() == null ? System.currentTimeMillis() : r.timestamp());
        return CompletableFuture.completedFuture(new RecordMetadata(new TopicPartition(r.topic(), partition), offset,
            0, 0L, 0, 0));
      }
    };
  }

  /**
   * A consumer of the live logs, as a broker's: its offsets and records are those of the
   * moment it is asked (a consumer that stays assigned sees what is appended later).
   */
  @Override
  public org.apache.kafka.clients.consumer.Consumer<byte[], byte[]> consumer(Map<String, Object> props) {
    consumers.incrementAndGet();
    return new LiveConsumer();
  }

  private final class LiveConsumer extends MockConsumer<byte[], byte[]> {
    /** Per partition, how many of its records were handed to the mock so far. */
    private final Map<TopicPartition, Integer> added = new HashMap<>();

    LiveConsumer() {
      super(OffsetResetStrategy.EARLIEST);
      refresh();
    }

    private Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> refresh() {
      Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> now = snapshot();
      Map<TopicPartition, Long> begin = new HashMap<>();
      Map<TopicPartition, Long> end = new HashMap<>();
      now.forEach((tp, log) -> {
        begin.put(tp, Math.min(logStart.getOrDefault(tp, 0L), log.size()));
        end.put(tp, (long) log.size());
      });
      for (TopicPartition tp : assignment()) {  // a partition nothing was written to yet
        begin.putIfAbsent(tp, 0L);
        end.putIfAbsent(tp, 0L);
      }
      updateBeginningOffsets(begin);
      updateEndOffsets(end);
      return now;
    }

    @Override
    public synchronized Map<TopicPartition, Long> endOffsets(java.util.Collection<TopicPartition> partitions) {
      reads.incrementAndGet();
      refresh();
      return super.endOffsets(partitions);
    }

    /** The topic's partitions as created (none: an unknown topic, as a broker answers). */
    @Override
    public synchronized List<org.apache.kafka.common.PartitionInfo> partitionsFor(String topic) {
      List<org.apache.kafka.common.PartitionInfo> out = new ArrayList<>();
      for (TopicPartition tp : snapshot().keySet()) {
        if (tp.topic().equals(topic)) out.add(new org.apache.kafka.common.PartitionInfo(topic, tp.partition(), NODE,
            new Node[] {NODE}, new Node[] {NODE}));
      }
      out.sort(java.util.Comparator.comparingInt(org.apache.kafka.common.PartitionInfo::partition));
      return out;
    }

    @Override
    public synchronized Map<TopicPartition, Long> beginningOffsets(java.util.Collection<TopicPartition> partitions) {
      beginnings.incrementAndGet();
      refresh();
      return super.beginningOffsets(partitions);
    }

    @Override
    public synchronized long position(TopicPartition partition) {
      refresh();
      return super.position(partition);
    }

    @Override
    public synchronized org.apache.kafka.clients.consumer.ConsumerRecords<byte[], byte[]> poll(
        java.time.Duration timeout) {
      Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> now = refresh();
      for (TopicPartition tp : assignment()) {
        // As a broker answers a fetch below the log's start, to a consumer that never resets.
        long start = logStart.getOrDefault(tp, 0L);
        if (!paused().contains(tp) && super.position(tp) < start) {
          throw new org.apache.kafka.clients.consumer.OffsetOutOfRangeException(Map.of(tp, super.position(tp)));
        }
      }
      for (TopicPartition tp : assignment()) {
        List<ConsumerRecord<byte[], byte[]>> log = now.getOrDefault(tp, List.of());
        for (int i = added.getOrDefault(tp, 0); i < log.size(); i++) {
          addRecord(log.get(i));
          recordsRead.incrementAndGet();
        }
        added.put(tp, log.size());
      }
      return super.poll(timeout);
    }
  }

  @Override
  public org.apache.kafka.clients.admin.Admin admin(Map<String, Object> props) {
    return admin;
  }

  /**
   * How many times a topic just created is described as unknown, as a broker of a cluster that
   * has not learned of it yet answers (0: known at once).
   */
  int describeLagAfterCreate;
  private final Map<String, Integer> lagging = new HashMap<>();

  /** MockAdminClient, with topics that hold records and transactions that can be listed and fenced. */
  private final class FakeAdmin extends MockAdminClient {
    FakeAdmin() {
      super(List.of(NODE), NODE);
    }

    @Override
    public synchronized org.apache.kafka.clients.admin.DescribeTopicsResult describeTopics(
        org.apache.kafka.common.TopicCollection topics, org.apache.kafka.clients.admin.DescribeTopicsOptions options) {
      descriptions.incrementAndGet();
      if (topics instanceof org.apache.kafka.common.TopicCollection.TopicNameCollection names) {
        for (String name : names.topicNames()) {
          int left = lagging.getOrDefault(name, 0);
          if (left > 0) {
            lagging.put(name, left - 1);
            KafkaFutureImpl<org.apache.kafka.clients.admin.TopicDescription> unknown = new KafkaFutureImpl<>();
            unknown.completeExceptionally(new org.apache.kafka.common.errors.UnknownTopicOrPartitionException(name));
            return new org.apache.kafka.clients.admin.DescribeTopicsResult(null, Map.of(name, unknown)) { };
          }
        }
      }
      // As a broker without an authorizer: no operations listed (kplex then checks none).
      org.apache.kafka.clients.admin.DescribeTopicsResult described = super.describeTopics(topics, options);
      if (described.topicNameValues() == null) return described;
      Map<String, KafkaFuture<org.apache.kafka.clients.admin.TopicDescription>> open = new HashMap<>();
      described.topicNameValues().forEach((name, f) -> open.put(name, f.thenApply(d ->
          new org.apache.kafka.clients.admin.TopicDescription(d.name(), d.isInternal(), d.partitions(), null,
              topicIds.getOrDefault(name, org.apache.kafka.common.Uuid.ZERO_UUID)))));
      return new org.apache.kafka.clients.admin.DescribeTopicsResult(null, open) { };
    }

    @Override
    public synchronized CreateTopicsResult createTopics(Collection<NewTopic> newTopics, CreateTopicsOptions options) {
      synchronized (FakeKafka.this) {
        for (NewTopic t : newTopics) {
          if (describeLagAfterCreate > 0) lagging.put(t.name(), describeLagAfterCreate);
          int partitions = t.numPartitions() > 0 ? t.numPartitions() : 1;
          for (int p = 0; p < partitions; p++) topics.putIfAbsent(new TopicPartition(t.name(), p), new ArrayList<>());
        }
      }
      return super.createTopics(newTopics, options);
    }

    @Override
    public synchronized ListOffsetsResult listOffsets(Map<TopicPartition, OffsetSpec> specs,
        ListOffsetsOptions options) {
      specs.keySet().stream().map(TopicPartition::topic).distinct().forEach(offsetsAsked::add);
      Map<TopicPartition, List<ConsumerRecord<byte[], byte[]>>> now = snapshot();
      Map<TopicPartition, KafkaFuture<ListOffsetsResult.ListOffsetsResultInfo>> out = new HashMap<>();
      for (Map.Entry<TopicPartition, OffsetSpec> e : specs.entrySet()) {
        TopicPartition tp = e.getKey();
        long end = now.getOrDefault(tp, List.of()).size();
        // The log's start for OffsetSpec.earliest(), as the broker answers; its end for any other.
        long offset = e.getValue() instanceof OffsetSpec.EarliestSpec ? Math.min(logStart.getOrDefault(tp, 0L), end) : end;
        out.put(tp, KafkaFuture.completedFuture(new ListOffsetsResult.ListOffsetsResultInfo(
            offset, -1, java.util.Optional.empty())));
      }
      return new ListOffsetsResult(out);
    }

    @Override
    public ListTransactionsResult listTransactions(ListTransactionsOptions options) {
      List<TransactionListing> listed = new ArrayList<>();
      for (String id : open) listed.add(new TransactionListing(id, 1, TransactionState.ONGOING));
      KafkaFutureImpl<Collection<TransactionListing>> byBroker = new KafkaFutureImpl<>();
      byBroker.complete(listed);
      return construct(ListTransactionsResult.class, KafkaFuture.completedFuture(Map.of(NODE.id(), byBroker)));
    }

    @Override
    public FenceProducersResult fenceProducers(Collection<String> ids, FenceProducersOptions options) {
      Map<CoordinatorKey, KafkaFuture<ProducerIdAndEpoch>> done = new HashMap<>();
      for (String id : ids) {
        open.remove(id);
        fenced.add(id);
        done.put(CoordinatorKey.byTransactionalId(id), KafkaFuture.completedFuture(new ProducerIdAndEpoch(1, (short) 1)));
      }
      return construct(FenceProducersResult.class, done);
    }
  }

  /** The admin results whose constructors Kafka keeps to its package. */
  private static <T> T construct(Class<T> type, Object arg) {
    try {
      Constructor<?> c = type.getDeclaredConstructors()[0];
      c.setAccessible(true);
      return type.cast(c.newInstance(arg));
    } catch (ReflectiveOperationException e) {
      throw new AssertionError(e);
    }
  }
}
