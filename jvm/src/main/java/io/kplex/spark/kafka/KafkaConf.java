package io.kplex.spark.kafka;

import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.errors.Errors;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka client settings of one catalog or write: every {@code kafka.*} option with
 * the prefix removed, plus kplex's defaults for each client role. Small and serializable:
 * it travels to the executors inside the writer and reader factories.
 */
public final class KafkaConf implements Serializable {
  /** A broker that does not answer is an error after this long, not a hang. */
  public static final int ADMIN_TIMEOUT_MS = 15_000;

  private final Map<String, String> clientProps;

  private KafkaConf(Map<String, String> clientProps) {
    this.clientProps = Map.copyOf(clientProps);
  }

  /** Collects {@code kafka.*} entries; later maps override earlier ones. */
  @SafeVarargs
  public static KafkaConf from(Map<String, String>... layers) {
    Map<String, String> props = new HashMap<>();
    for (Map<String, String> layer : layers) {
      for (Map.Entry<String, String> e : layer.entrySet()) {
        if (e.getKey().startsWith(KplexOptions.KAFKA_PREFIX)) {
          props.put(e.getKey().substring(KplexOptions.KAFKA_PREFIX.length()), e.getValue());
        }
      }
    }
    if (!props.containsKey(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG)) {
      throw Errors.noBootstrap();
    }
    return new KafkaConf(props);
  }

  public String bootstrap() {
    return clientProps.get(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG);
  }

  private static final Pattern JAAS_USER = Pattern.compile("\\busername\\s*=\\s*\"([^\"]*)\"");

  /** The SASL mechanism, if the clients use SASL. */
  public String saslMechanism() {
    return clientProps.getOrDefault(SaslConfigs.SASL_MECHANISM, SaslConfigs.DEFAULT_SASL_MECHANISM);
  }

  /** The security protocol the clients use (PLAINTEXT unless set). */
  public String securityProtocol() {
    return clientProps.getOrDefault(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "PLAINTEXT");
  }

  /**
   * The principal the clients authenticate as, for error messages: {@code User:<name>}
   * from the JAAS line of SASL/PLAIN or SCRAM, never the line itself (it holds the
   * password).
   */
  public String principal() {
    String protocol = securityProtocol().toUpperCase(java.util.Locale.ROOT);
    if (protocol.startsWith("SASL")) {
      String mechanism = clientProps.getOrDefault(SaslConfigs.SASL_MECHANISM, SaslConfigs.DEFAULT_SASL_MECHANISM);
      Matcher m = JAAS_USER.matcher(clientProps.getOrDefault(SaslConfigs.SASL_JAAS_CONFIG, ""));
      return m.find() ? "User:" + m.group(1) : "of the " + mechanism + " login";
    }
    if (protocol.equals("SSL")) {
      return "of the TLS client certificate"
          + (clientProps.containsKey("ssl.keystore.location") ? " in kafka.ssl.keystore.location" : "");
    }
    return "User:ANONYMOUS";
  }

  Map<String, Object> admin() {
    Map<String, Object> p = new HashMap<>();
    p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, ADMIN_TIMEOUT_MS);
    p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, ADMIN_TIMEOUT_MS);
    p.putAll(clientProps);
    return p;
  }

  public Map<String, Object> consumer() {
    Map<String, Object> p = new HashMap<>();
    p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
    p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, ADMIN_TIMEOUT_MS);
    p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, ADMIN_TIMEOUT_MS);
    p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 << 20);
    p.putAll(clientProps);
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return p;
  }

  /**
   * Producer settings. kplex's defaults, chosen by measurement (bench/), come first so
   * that a user's {@code kafka.*} option overrides them.
   */
  public Map<String, Object> producer() {
    Map<String, Object> p = new HashMap<>();
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    p.put(ProducerConfig.LINGER_MS_CONFIG, 10);
    p.put(ProducerConfig.BATCH_SIZE_CONFIG, 256 * 1024);
    p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, 64L << 20);
    // lz4: less CPU for the broker and the producer's I/O thread, which share the cores
    // with the tasks (bench/RESULTS.md, the "compression.type=none" rows).
    p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 60_000);
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
    // A transactional producer's first requests are often refused for a moment (the last
    // transaction of its id still completing, the coordinator's connection not ready yet),
    // and retried after this: Kafka's 100 ms made each micro-batch's open and commit wait
    // ~100 ms each (measured). Retries still back off exponentially, to retry.backoff.max.ms.
    p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 10);
    p.putAll(clientProps);
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
    return p;
  }

  /** Equal settings, equal clients: what lets executors share a kept consumer ({@link ConsumerPool}). */
  @Override
  public boolean equals(Object o) {
    return o instanceof KafkaConf && ((KafkaConf) o).clientProps.equals(clientProps);
  }

  @Override
  public int hashCode() {
    return clientProps.hashCode();
  }

  @Override
  public String toString() {
    return "kafka(" + bootstrap() + ")";
  }
}
