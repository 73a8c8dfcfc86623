package io.kplex.spark.kafka;

import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.errors.Errors;
import java.io.Serializable;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka client settings of one catalog or write: every {@code kafka.*} option with
 * the prefix removed, plus kplex's defaults for each client role. Small and serializable:
 * it travels to the executors inside the writer and reader factories.
 *
 * <p>kafka-clients is relocated inside kplex's jar (to {@code io.kplex.shaded.org.apache.kafka},
 * by build.gradle), so a setting that names a Kafka class the way users write it
 * ({@code org.apache.kafka.common.security.plain.PlainLoginModule} in
 * {@code sasl.jaas.config}, a {@code *.class} or {@code *.classes} setting, a serializer,
 * a config provider) is rewritten to the relocated name ({@link #relocated}); users' own
 * classes are left as they are.
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
    return new KafkaConf(relocated(props, KAFKA_PACKAGE));
  }

  /** These settings with client setting {@code key} (a Kafka name, no prefix) set to {@code value}. */
  public KafkaConf with(String key, String value) {
    Map<String, String> props = new HashMap<>(clientProps);
    props.put(key, value);
    return new KafkaConf(props);
  }

  /**
   * The package prefix users write for Kafka's classes. Joined at run time: the build
   * relocates string constants that start with it, and this one must stay as written.
   */
  static final String UNRELOCATED = String.join(".", "org", "apache", "kafka", "");

  /**
   * Where this jar's kafka-clients classes are: {@code io.kplex.shaded.org.apache.kafka.}
   * in the built jar, {@link #UNRELOCATED} in the classes the JVM unit tests run.
   */
  static final String KAFKA_PACKAGE = kafkaPackage();

  private static String kafkaPackage() {
    String name = ProducerConfig.class.getName();
    return name.substring(0, name.length() - "clients.producer.ProducerConfig".length());
  }

  /**
   * The JVM's system properties that Kafka's clients read ({@code org.apache.kafka.disallowed.login.modules},
   * {@code org.apache.kafka.automatic.config.providers}, {@code org.apache.kafka.sasl.oauthbearer.allowed.urls}:
   * an operator's limits on what a client setting may load or reach) under the names the
   * relocated clients read them by ({@code kafkaPackage}...), unless set under those already:
   * the build relocates the names in Kafka's classes too, so without this an operator's
   * {@code -Dorg.apache.kafka.*} would bind every Kafka client in the JVM but kplex's.
   */
  static void mirror(java.util.Properties system, String kafkaPackage) {
    if (kafkaPackage.equals(UNRELOCATED)) return;
    for (String name : system.stringPropertyNames()) {
      if (!name.startsWith(UNRELOCATED)) continue;
      String relocatedName = kafkaPackage + name.substring(UNRELOCATED.length());
      if (system.getProperty(relocatedName) != null) continue;
      String value = system.getProperty(name);
      // A list of classes (login modules, config providers) names Kafka's own as users write them.
      if (name.endsWith(".modules") || name.endsWith(".providers")) {
        value = KAFKA_CLASS.matcher(value).replaceAll(Matcher.quoteReplacement(kafkaPackage));
      }
      system.setProperty(relocatedName, value);
    }
  }

  /** Settings whose value is a class name or a list of them, beyond {@code *.class(es)}. */
  private static final Set<String> CLASS_SETTINGS = Set.of(SaslConfigs.SASL_JAAS_CONFIG,
      CommonClientConfigs.METRIC_REPORTER_CLASSES_CONFIG, ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
      ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG,
      ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG);

  /** {@code org.apache.kafka.} not already inside a longer name (the relocated one). */
  private static final Pattern KAFKA_CLASS = Pattern.compile("(?<![\\w.$])" + Pattern.quote(UNRELOCATED));

  static {
    mirror(System.getProperties(), KAFKA_PACKAGE);
  }

  /**
   * The settings with every Kafka class named in a class-valued setting (and the JAAS
   * line) moved to {@code kafkaPackage}; the others as they are.
   */
  static Map<String, String> relocated(Map<String, String> props, String kafkaPackage) {
    if (kafkaPackage.equals(UNRELOCATED)) {
      return props;
    }
    Map<String, String> out = new HashMap<>(props);
    out.replaceAll((key, value) -> value != null && namesClasses(key)
        ? KAFKA_CLASS.matcher(value).replaceAll(Matcher.quoteReplacement(kafkaPackage)) : value);
    return out;
  }

  private static boolean namesClasses(String key) {
    return CLASS_SETTINGS.contains(key) || key.endsWith(".class") || key.endsWith(".classes");
  }

  /**
   * The client settings as the options that gave them ({@code kafka.} prefixed): for {@code
   * conf/ConfParser} to read the one kplex itself depends on (kafka.transaction.timeout.ms),
   * as options.json declares it.
   */
  public Map<String, String> options() {
    Map<String, String> out = new HashMap<>();
    clientProps.forEach((k, v) -> out.put(KplexOptions.KAFKA_PREFIX + k, v));
    return out;
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
    // kplex's consumers read offset ranges that exist already; a fetch at a range's end (past
    // a derived topic's last transaction marker) would wait at the broker for records to come,
    // and the next task given that consumer (ConsumerPool: the same partition, another virtual
    // partition) waited for it too. Kafka's 500 ms made every such task 500 ms longer (measured).
    p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 10);
    p.putAll(clientProps);
    // kplex's consumers read offset ranges it planned: a reset (a shared consumer settings
    // file's auto.offset.reset = earliest, say) would move one past records that retention
    // deleted meanwhile, silently, where kplex reports the loss. So kplex keeps "none".
    p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
    p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    return p;
  }

  /**
   * What kplex's consumers see of a log ({@link #consumer}'s {@code isolation.level}: read_committed
   * unless a {@code kafka.isolation.level} option says otherwise), for offsets asked of the Admin
   * client, which would otherwise answer for read_uncommitted.
   */
  public IsolationLevel isolation() {
    String level = String.valueOf(consumer().get(ConsumerConfig.ISOLATION_LEVEL_CONFIG)).trim();
    for (IsolationLevel l : IsolationLevel.values()) {
      if (l.toString().equalsIgnoreCase(level)) return l;
    }
    throw Errors.badChoice(KplexOptions.KAFKA_PREFIX + ConsumerConfig.ISOLATION_LEVEL_CONFIG, level,
        java.util.Arrays.stream(IsolationLevel.values()).map(IsolationLevel::toString).toList());
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
