package io.kplex.spark.kafka;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import io.kplex.spark.time.Clock;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.errors.TopicDeletionDisabledException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.TransactionalIdNotFoundException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;

/**
 * kplex's Kafka clients for its own requests (leased from the JVM's {@link SharedClients}, given
 * back by {@link #close}) and the topic operations kplex needs. Every call goes
 * through {@link #call}, which turns a broker that does not answer into an
 * "unreachable" error within {@link KafkaConf#ADMIN_TIMEOUT_MS}, not a hang. Its clients come
 * from a {@link KafkaClients} and its time from a {@link Clock} (the real ones unless a test
 * injects others); what is built on it ({@link CompactedTopic}, the commit log, the writer
 * claims) uses the same.
 */
public class KafkaTopics implements AutoCloseable {
  private static final long TIMEOUT_MS = KafkaConf.ADMIN_TIMEOUT_MS;

  private final KafkaConf kafka;
  private final KafkaClients clients;
  private final Clock clock;
  private SharedClients.Lease<Admin> admin;
  private SharedClients.Lease<Admin> slowAdmin;
  private SharedClients.Lease<Producer<byte[], byte[]>> producer;
  /**
   * Transactional producers that committed a task's transaction for the driver, kept by
   * transactional id for the next commit of that id (a streaming run's clients live as long as
   * its claim), with the settings they were made with.
   */
  private final Map<String, Map.Entry<Map<String, Object>, Producer<byte[], byte[]>>> committers = new HashMap<>();
  /** Topics {@link #ensureTopic} has seen exist: not asked again. */
  private final Set<String> ensured = java.util.concurrent.ConcurrentHashMap.newKeySet();

  public KafkaTopics(KafkaConf kafka) {
    this(kafka, KafkaClients.REAL, Clock.SYSTEM);
  }

  public KafkaTopics(KafkaConf kafka, KafkaClients clients, Clock clock) {
    this.kafka = kafka;
    this.clients = clients;
    this.clock = clock;
  }

  public KafkaConf conf() {
    return kafka;
  }

  /** Where this object's clients come from (and those of what is built on it). */
  public KafkaClients clients() {
    return clients;
  }

  /** The time this object and what is built on it read. */
  public Clock clock() {
    return clock;
  }

  /** The Admin client for quick requests, shared with the JVM's other users of these settings ({@link SharedClients}). */
  public synchronized Admin admin() {
    if (admin == null) {
      admin = SharedClients.lease(kafka, clients, SharedClients.Kind.ADMIN, () -> clients.admin(kafka.admin()));
    }
    return admin.client();
  }

  /**
   * The Admin client for a request the broker takes long to answer (the list of every open
   * transaction). A broker answers one request of a connection at a time, so on
   * {@link #admin}'s connection, which every statement of the JVM shares, it would hold up the
   * quick requests sent meanwhile (a topic's description, a streaming run's claim check): the
   * slow requests share a second Admin client of their own.
   */
  public synchronized Admin slowAdmin() {
    if (slowAdmin == null) {
      slowAdmin = SharedClients.lease(kafka, clients, SharedClients.Kind.SLOW_ADMIN, () -> clients.admin(kafka.admin()));
    }
    return slowAdmin.client();
  }

  /**
   * A plain (non-transactional) producer for kplex's own records, shared with the JVM's other
   * users of these settings ({@link SharedClients}). They are sent one at a time and waited
   * for: no linger.
   */
  public synchronized Producer<byte[], byte[]> producer() {
    if (producer == null) {
      producer = SharedClients.lease(kafka, clients, SharedClients.Kind.PRODUCER, () -> {
        Map<String, Object> props = kafka.producer();
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        return clients.producer(props);
      });
    }
    return producer.client();
  }

  /** After a failed send: the next {@link #producer} of the JVM is a new one (this one may be in a failed state). */
  public synchronized void discardProducer() {
    if (producer != null) producer.discard();
  }

  /** After a refused login or a broker that did not answer: the JVM's next clients connect afresh. */
  private synchronized void discardShared() {
    if (admin != null) admin.discard();
    if (slowAdmin != null) slowAdmin.discard();
    if (producer != null) producer.discard();
  }

  /** Kafka's own topics (its offsets, transactions, metadata, share groups, tiered storage). */
  public static final Set<String> KAFKA_INTERNAL = Set.of("__consumer_offsets", "__transaction_state",
      "__cluster_metadata", "__share_group_state", "__remote_log_metadata");

  /** kplex's commit log, one for every catalog of a cluster ({@code txn.CommitLog}). */
  public static final String COMMITS_TOPIC = "_kplex_commits";

  /** Every topic name, internal ones included. */
  public Set<String> topics() {
    return call(() -> new TreeSet<>(admin().listTopics().names().get(TIMEOUT_MS, TimeUnit.MILLISECONDS)));
  }

  /** The partition count of a topic, or empty if the topic does not exist. */
  public Optional<Integer> partitionCount(String topic) {
    return describe(topic).map(d -> d.partitions().size());
  }

  /**
   * Whether a topic of that name exists as far as this principal can tell: one it may not
   * DESCRIBE counts as absent (Kafka answers alike for both, so as not to tell), and so does a
   * name no topic can have (a read-time table's may be one).
   */
  public boolean visible(String topic) {
    if (TopicNames.problem(topic) != null) {
      return false;
    }
    try {
      return partitionCount(topic).isPresent();
    } catch (KplexException e) {
      if (e.code().equals("NOT_AUTHORIZED")) return false;
      throw e;
    }
  }

  public Optional<TopicDescription> describe(String topic) {
    return call("DESCRIBE", Errors.Resource.topic(topic), () -> {
      try {
        return Optional.of(admin().describeTopics(List.of(topic)).allTopicNames()
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(topic));
      } catch (ExecutionException e) {
        if (e.getCause() instanceof UnknownTopicOrPartitionException) {
          return Optional.empty();
        }
        throw e;
      }
    });
  }

  /**
   * As {@link #describe}, asked of the broker now and answered by the returned call, which
   * waits for the answer (the error handling is {@link #describe}'s, at that call).
   */
  public java.util.function.Supplier<Optional<TopicDescription>> describeSoon(String topic) {
    org.apache.kafka.common.KafkaFuture<Map<String, TopicDescription>> asked =
        admin().describeTopics(List.of(topic)).allTopicNames();
    return () -> call("DESCRIBE", Errors.Resource.topic(topic), () -> {
      try {
        return Optional.of(asked.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(topic));
      } catch (ExecutionException e) {
        if (e.getCause() instanceof UnknownTopicOrPartitionException) {
          return Optional.empty();
        }
        throw e;
      }
    });
  }

  /**
   * The topic's id as text, or null where the cluster gives none (a broker before topic ids,
   * KIP-516). A topic deleted and created again under its name gets a new one.
   */
  public static String topicId(TopicDescription described) {
    org.apache.kafka.common.Uuid id = described.topicId();
    return id == null || org.apache.kafka.common.Uuid.ZERO_UUID.equals(id) ? null : id.toString();
  }

  /** The end offset (the offset the next record gets) of each partition of {@code topic}. */
  public Map<Integer, Long> endOffsets(String topic) {
    return endOffsets(topic, partitionCount(topic).orElse(0));
  }

  /** As {@link #endOffsets(String)}, for a topic of {@code partitions} partitions, as described already. */
  public Map<Integer, Long> endOffsets(String topic, int partitions) {
    Map<TopicPartition, OffsetSpec> ask = new HashMap<>();
    for (int p = 0; p < partitions; p++) ask.put(new TopicPartition(topic, p), OffsetSpec.latest());
    Map<Integer, Long> out = new TreeMap<>();
    offsets("DESCRIBE", Errors.Resource.topic(topic), IsolationLevel.READ_UNCOMMITTED, List.of(ask)).get(0)
        .forEach((tp, offset) -> out.put(tp.partition(), offset));
    return out;
  }

  /**
   * Creates {@code topic} ({@code replication} < 1: the broker's default). A name Kafka does not
   * allow fails here, naming what is wrong with it; a request the broker refuses (a policy, more
   * replicas than brokers, a name that collides with another's) fails naming what was asked.
   */
  public void createTopic(String topic, int partitions, short replication, Map<String, String> configs) {
    String problem = TopicNames.problem(topic);
    if (problem != null) {
      throw Errors.badTopicName(topic, problem);
    }
    call("CREATE", Errors.Resource.topic(topic), () -> {
      NewTopic t = new NewTopic(topic, Optional.of(partitions),
          replication < 1 ? Optional.empty() : Optional.of(replication)).configs(configs);
      try {
        admin().createTopics(List.of(t)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        if (refusal(e.getCause())) {
          throw Errors.createRefused(topic, partitions, replication, e.getCause());
        }
        throw e;
      }
      return null;
    });
  }

  /**
   * Creates the topic unless it exists (a concurrent creation is fine), and returns once the
   * cluster describes it: on a cluster of several brokers, the one the next call asks may learn
   * of a new topic a moment after the controller created it.
   */
  public void ensureTopic(String topic, int partitions, Map<String, String> configs) {
    if (ensured.contains(topic)) {
      return;
    }
    if (partitionCount(topic).isPresent()) {
      ensured.add(topic);
      return;
    }
    try {
      createTopic(topic, partitions, (short) -1, configs);
    } catch (KplexException e) {
      if (!(e.getCause() instanceof TopicExistsException)) {
        throw e;
      }
    }
    long deadline = clock.millis() + TIMEOUT_MS;
    while (partitionCount(topic).isEmpty()) {
      if (clock.millis() >= deadline) {
        throw io.kplex.spark.errors.Errors.unknownTopic(topic);
      }
      try {
        clock.sleep(100);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw io.kplex.spark.errors.Errors.unknownTopic(topic);
      }
    }
    ensured.add(topic);
  }

  /**
   * Deletes {@code topic} and returns once the cluster no longer describes it (or after the
   * admin timeout): a topic of the same name created right after (DROP TABLE, then CREATE
   * TABLE; a REPLACE) must not meet the one being deleted.
   */
  public void deleteTopic(String topic) {
    call("DELETE", Errors.Resource.topic(topic),
        () -> admin().deleteTopics(List.of(topic)).all().get(TIMEOUT_MS, TimeUnit.MILLISECONDS));
    ensured.remove(topic);
    long deadline = clock.millis() + TIMEOUT_MS;
    while (partitionCount(topic).isPresent() && clock.millis() < deadline) {
      try {
        clock.sleep(50);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return;
      }
    }
  }

  /** A Kafka call that may block or fail. */
  public interface KafkaCall<T> {
    T run() throws Exception;
  }

  /**
   * The operations this principal may perform on a topic (KIP-430), or empty if the
   * broker does not say. Lets a write or read fail before it starts, naming the ACL.
   */
  public Optional<Set<AclOperation>> authorizedOperations(String topic) {
    return call("DESCRIBE", Errors.Resource.topic(topic), () -> {
      TopicDescription d = admin().describeTopics(List.of(topic),
          new DescribeTopicsOptions().includeAuthorizedOperations(true)).allTopicNames()
          .get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(topic);
      return Optional.ofNullable(d.authorizedOperations());
    });
  }

  /** Fails naming the principal, the operation and the topic unless the ACLs allow it. */
  public void requireAllowed(String topic, AclOperation operation) {
    authorizedOperations(topic).ifPresent(allowed -> requireListed(topic, operation, allowed));
  }

  private void requireListed(String topic, AclOperation operation, Set<AclOperation> allowed) {
    if (!allowed.contains(operation) && !allowed.contains(AclOperation.ALL)) {
      throw AccessErrors.notListed(kafka, operation.name(), topic, allowed.stream().map(AclOperation::name).toList());
    }
  }

  /**
   * The partitions of a topic, in order, for a read: one description, which also says what
   * the principal may do (KIP-430). Fails naming the topic if it does not exist, and naming
   * the ACL if the principal may not READ it, in the driver rather than in every task.
   * Asked of the broker each time (Admin, on the JVM's shared connection): a kept consumer's
   * metadata can be minutes old and miss partitions added since.
   */
  public List<TopicPartition> partitionsToRead(String topic) {
    TopicDescription d = call("READ", Errors.Resource.topic(topic), () -> {
      try {
        return admin().describeTopics(List.of(topic), new DescribeTopicsOptions().includeAuthorizedOperations(true))
            .allTopicNames().get(TIMEOUT_MS, TimeUnit.MILLISECONDS).get(topic);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof UnknownTopicOrPartitionException) throw Errors.unknownTopic(topic);
        throw e;
      }
    });
    if (d.authorizedOperations() != null) requireListed(topic, AclOperation.READ, d.authorizedOperations());
    List<TopicPartition> tps = new ArrayList<>();
    for (var p : d.partitions()) tps.add(new TopicPartition(topic, p.partition()));
    tps.sort(Comparator.comparingInt(TopicPartition::partition));
    return tps;
  }

  /**
   * Each partition's offset for each of {@code asks} (ListOffsets, all sent at once), as a
   * consumer of {@code isolation} sees the log: the latest is the last stable offset under
   * read_committed; a timestamp's is -1 where no record is at or after it.
   */
  public List<Map<TopicPartition, Long>> offsets(String operation, Errors.Resource resource,
      IsolationLevel isolation, List<Map<TopicPartition, OffsetSpec>> asks) {
    return call(operation, resource, () -> {
      List<KafkaFuture<Map<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo>>> sent =
          new ArrayList<>();
      for (var ask : asks) {
        sent.add(ask.isEmpty() ? KafkaFuture.completedFuture(Map.of())
            : admin().listOffsets(ask, new ListOffsetsOptions(isolation)).all());
      }
      List<Map<TopicPartition, Long>> out = new ArrayList<>();
      for (var answer : sent) {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        answer.get(TIMEOUT_MS, TimeUnit.MILLISECONDS).forEach((tp, info) -> offsets.put(tp, info.offset()));
        out.add(offsets);
      }
      return out;
    });
  }

  /**
   * Fails naming the principal and the id prefix unless it may use transactional ids that
   * start with {@code prefix}: asks for a transaction that does not exist (DescribeTransactions,
   * which WRITE on the id allows), so that an exactly-once write fails before any task starts.
   */
  public void requireTransactionalIds(String prefix) {
    Errors.Resource ids = Errors.Resource.transactionalIdPrefix(prefix);
    call("WRITE", ids, () -> {
      try {
        return admin().describeTransactions(List.of(prefix + "kplex-acl-probe")).all()
            .get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
      } catch (ExecutionException e) {
        if (e.getCause() instanceof TransactionalIdNotFoundException) return null;
        throw e;
      }
    });
  }

  /** Runs a Kafka call, turning timeouts into an "unreachable broker" error. */
  public <T> T call(KafkaCall<T> body) {
    return call(null, null, body);
  }

  /**
   * Runs a Kafka call, turning timeouts into an "unreachable broker" error, and a refused
   * login or a missing ACL into an error naming the principal, {@code operation} and
   * {@code resource} ({@link AccessErrors}).
   */
  public <T> T call(String operation, Errors.Resource resource, KafkaCall<T> body) {
    try {
      return body.run();
    } catch (TimeoutException | org.apache.kafka.common.errors.TimeoutException e) {
      discardShared();
      throw Errors.unreachable(kafka.bootstrap(), e);
    } catch (ExecutionException e) {
      Throwable cause = e.getCause();
      if (cause instanceof org.apache.kafka.common.errors.TimeoutException) {
        discardShared();
        throw Errors.unreachable(kafka.bootstrap(), cause);
      }
      throw failure(cause, operation, resource);
    } catch (KplexException e) {
      throw e;
    } catch (InterruptedException | org.apache.kafka.common.errors.InterruptException e) {
      // A stopped query, or a cancelled job: an interruption Spark recognises as such.
      Thread.currentThread().interrupt();
      throw interrupted(e);
    } catch (Exception e) {
      throw failure(e, operation, resource);
    }
  }

  /** An interruption as Spark's stream execution recognises one (a stop, not a failure). */
  public static java.io.UncheckedIOException interrupted(Throwable cause) {
    java.io.InterruptedIOException e = new java.io.InterruptedIOException("interrupted while talking to Kafka");
    e.initCause(cause);
    return new java.io.UncheckedIOException(e);
  }

  private KplexException failure(Throwable cause, String operation, Errors.Resource resource) {
    KplexException access = AccessErrors.of(kafka, cause, operation, resource);
    if (access != null && access.code().equals("NOT_AUTHENTICATED")) discardShared();
    if (access != null) {
      return access;
    }
    if (resource != null && resource.kind() == Errors.Resource.Kind.TOPIC && operation != null) {
      // The broker's InvalidTopicException says neither which topic nor what is wrong with it.
      String problem = cause instanceof InvalidTopicException ? TopicNames.problem(resource.name()) : null;
      if (problem != null) {
        return Errors.badTopicName(resource.name(), problem);
      }
      if (cause instanceof UnknownTopicOrPartitionException) {
        return Errors.unknownTopic(resource.name());  // the broker's message names no topic
      }
      if (refusal(cause)) {
        return Errors.kafkaRefused(operation, resource.name(), cause);
      }
    }
    return Errors.kafka(cause);
  }

  /** The broker understood the request and refused what it asked for; trying again changes nothing. */
  private static boolean refusal(Throwable cause) {
    return cause instanceof InvalidTopicException || cause instanceof PolicyViolationException
        || cause instanceof InvalidReplicationFactorException || cause instanceof InvalidPartitionsException
        || cause instanceof InvalidConfigurationException || cause instanceof InvalidRequestException
        || cause instanceof TopicDeletionDisabledException;
  }

  /**
   * The producer kept for {@code transactionalId} made with {@code settings}, taken out (null:
   * none); one made with other settings is closed.
   */
  public Producer<byte[], byte[]> takeCommitter(String transactionalId, Map<String, Object> settings) {
    Map.Entry<Map<String, Object>, Producer<byte[], byte[]>> kept;
    synchronized (this) {
      kept = committers.remove(transactionalId);
    }
    if (kept == null) return null;
    if (kept.getKey().equals(settings)) return kept.getValue();
    kept.getValue().close(Duration.ZERO);
    return null;
  }

  /** Keeps {@code producer}, which committed a transaction of {@code transactionalId}, until {@link #close}. */
  public void keepCommitter(String transactionalId, Map<String, Object> settings, Producer<byte[], byte[]> producer) {
    Map.Entry<Map<String, Object>, Producer<byte[], byte[]>> before;
    synchronized (this) {
      before = committers.put(transactionalId, Map.entry(settings, producer));
    }
    if (before != null) before.getValue().close(Duration.ZERO);
  }

  @Override
  public synchronized void close() {
    committers.values().forEach(kept -> kept.getValue().close(Duration.ZERO));
    committers.clear();
    // The shared clients stay open for the JVM's next statement (SharedClients closes idle ones).
    if (producer != null) {
      producer.release();
      producer = null;
    }
    if (admin != null) {
      admin.release();
      admin = null;
    }
    if (slowAdmin != null) {
      slowAdmin.release();
      slowAdmin = null;
    }
  }
}
