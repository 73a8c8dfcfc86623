package io.kplex.spark.conf;

import io.kplex.spark.errors.Errors;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.spec.OptionSpecs;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * What a statement may set on a shared server ({@code kplex server} starts its servers
 * restricted). With {@code spark.kplex.server.restricted = true} in the server's start-up
 * configuration (its SparkConf, which no statement changes: {@code SET} and a Connect
 * client's settings write a session's settings only), a read's or a write's {@code kafka.*}
 * options may be only the client settings {@code spark.kplex.server.kafka_options} lists
 * (tuning that reaches no further than the statement: fetch and batch sizes, timeouts), none
 * with a config provider's variable ({@code ${...}}); and a kplex catalog is one the server
 * started with, with the options it started with. The server's Kafka credentials, addresses
 * and files, and the classes a Kafka setting loads, stay the operator's.
 */
public final class ServerPolicy {
  public static final String RESTRICTED = "kplex.server.restricted";
  public static final String KAFKA_OPTIONS = "kplex.server.kafka_options";
  private static final String CATALOG_PREFIX = "spark.sql.catalog.";

  private static final ServerPolicy OPEN = new ServerPolicy(false, Set.of(), Map.of());

  private final boolean restricted;
  private final Set<String> allowed;
  /** The server's start-up configuration, by key. */
  private final Map<String, String> startup;

  ServerPolicy(boolean restricted, Set<String> allowed, Map<String, String> startup) {
    this.restricted = restricted;
    this.allowed = Set.copyOf(allowed);
    this.startup = Map.copyOf(startup);
  }

  /** The policy of this JVM's SparkContext (none without one: a unit test, kplex's own tools). */
  public static ServerPolicy current() {
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    if (env == null) return OPEN;
    Cached cached = last;
    if (cached != null && cached.env == env) return cached.policy;
    Map<String, String> conf = new TreeMap<>();
    for (scala.Tuple2<String, String> e : env.conf().getAll()) conf.put(e._1(), e._2());
    ServerPolicy policy = of(conf);
    last = new Cached(env, policy);
    return policy;
  }

  /** The policy of the SparkEnv it was read from (a SparkConf does not change once Spark started). */
  private record Cached(org.apache.spark.SparkEnv env, ServerPolicy policy) {}

  private static volatile Cached last;

  /** The policy a start-up configuration ({@code spark.*} keys) gives. */
  static ServerPolicy of(Map<String, String> conf) {
    String flag = conf.getOrDefault("spark." + RESTRICTED, "false").trim();
    if (!flag.equalsIgnoreCase("true") && !flag.equalsIgnoreCase("false")) {
      throw Errors.badOption("spark." + RESTRICTED, flag, OptionSpecs.of(RESTRICTED).expected());
    }
    if (!flag.equalsIgnoreCase("true")) return OPEN;
    String list = conf.getOrDefault("spark." + KAFKA_OPTIONS, OptionSpecs.of(KAFKA_OPTIONS).defaultValue());
    Set<String> allowed = Arrays.stream(list.split(",")).map(s -> s.trim().toLowerCase(Locale.ROOT))
        .filter(s -> !s.isEmpty()).collect(Collectors.toCollection(TreeSet::new));
    return new ServerPolicy(true, allowed, conf);
  }

  public boolean restricted() {
    return restricted;
  }

  /**
   * Refuses a read's or write's {@code kafka.*} option ({@code options}, as the statement gave
   * them) that a restricted server does not take from a statement, naming it.
   */
  public void checkStatement(Map<String, String> options) {
    if (!restricted) return;
    for (Map.Entry<String, String> e : new TreeMap<>(options).entrySet()) {
      String key = e.getKey();
      String lower = key.toLowerCase(Locale.ROOT);
      if (!lower.startsWith(KplexOptions.KAFKA_PREFIX)) continue;
      if (!allowed.contains(lower.substring(KplexOptions.KAFKA_PREFIX.length()))) {
        throw Errors.serverKafkaOption(key, allowedList());
      }
      if (e.getValue() != null && e.getValue().contains("${")) {
        throw Errors.serverKafkaVariable(key);
      }
    }
  }

  private String allowedList() {
    return allowed.isEmpty() ? "(none)" : allowed.stream().map(k -> KplexOptions.KAFKA_PREFIX + k)
        .collect(Collectors.joining(", "));
  }

  /**
   * Refuses a kplex catalog ({@code name}, of class {@code className}, with {@code options}) that
   * a restricted server did not start with, or whose options a session changed, naming it.
   */
  public void checkCatalog(String name, Map<String, String> options, String className) {
    if (!restricted) return;
    String prefix = CATALOG_PREFIX + name + ".";
    if (!className.equals(startup.get(CATALOG_PREFIX + name))) {
      String started = startup.entrySet().stream()
          .filter(e -> e.getKey().startsWith(CATALOG_PREFIX) && e.getKey().indexOf('.', CATALOG_PREFIX.length()) < 0
              && className.equals(e.getValue()))
          .map(e -> e.getKey().substring(CATALOG_PREFIX.length())).sorted().collect(Collectors.joining(", "));
      throw Errors.serverCatalog(name, started.isEmpty() ? "(none)" : started);
    }
    Map<String, String> fromStart = new TreeMap<>();
    startup.forEach((k, v) -> {
      if (k.startsWith(prefix)) fromStart.put(k.substring(prefix.length()), v);
    });
    Set<String> keys = new TreeSet<>(fromStart.keySet());
    keys.addAll(options.keySet());
    for (String key : keys) {
      if (!java.util.Objects.equals(fromStart.get(key), options.get(key))) {
        throw Errors.serverCatalogSetting(name, prefix + key);
      }
    }
  }
}
