package io.kplex.spark;

import io.kplex.spark.conf.TableDefinition;
import io.kplex.spark.catalog.TableStore;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.conf.WriteConf;
import io.kplex.spark.functions.KplexFunctions;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.read.ReadMetrics;
import io.kplex.spark.txn.ExactlyOnceCommitter;
import io.kplex.spark.txn.WriterLease;
import io.kplex.spark.txn.TransactionResumer;
import io.kplex.spark.write.WriteSummary;
import java.util.HashMap;
import java.util.Map;

/**
 * What the Python package calls through py4j, in one place: operator commands that need
 * no Spark job (the {@code kplex} CLI's), and the session helpers of {@code kplex}
 * ({@code register_functions}, {@code last_write_summary}, {@code read_metrics}).
 */
public final class KplexAdmin {
  private KplexAdmin() {}

  /**
   * Finishes a commit a dead driver left half done and fences (Kafka aborts) every open
   * transaction of the table, so nothing pins its topic's last stable offset. The Kafka
   * settings (credentials too) are those of the session's catalog {@code catalog}.
   */
  public static String recover(org.apache.spark.sql.SparkSession session, String catalog, String table) {
    return recover(session, catalog, table, -1);
  }

  /**
   * As {@link #recover(org.apache.spark.sql.SparkSession, String, String)}, taking over a
   * writer's claim left unrenewed for {@code claimTimeoutMs} (-1: the session's setting).
   * A cut-short INSERT is reported (and then forgotten); a cut-short epoch stays until its
   * query writes it again.
   */
  public static String recover(org.apache.spark.sql.SparkSession session, String catalog, String table,
      long claimTimeoutMs) {
    return recover(catalogOptions(session, catalog), table, claimTimeoutMs);
  }

  /** As {@link #recover(org.apache.spark.sql.SparkSession, String, String, long)}, with the catalog's options. */
  public static String recover(Map<String, String> options, String table, long claimTimeoutMs) {
    KafkaConf kafka = KafkaConf.from(options);
    String metadataTopic = KplexOptions.metadataTopic(options);
    try (TableStore store = new TableStore(kafka, metadataTopic)) {
      TableDefinition def = store.requireDefinition(table);
      WriteConf conf = new WriteConf(def, options, Map.of(), WriteConf.sessionSettings());
      // Under the table's writer claim: a live write is never fenced (its error names it).
      long staleMs = claimTimeoutMs > 0 ? claimTimeoutMs : conf.claimTimeoutMs;
      try (WriterLease lease = WriterLease.acquire(conf.kafka, conf.table, "kplex recover", null, staleMs)) {
        return new ExactlyOnceCommitter(conf.kafka, conf.table, conf.topic, conf.virtualPartitions, null)
            .recover(lease, true);
      }
    }
  }

  /**
   * Spreads a control plane written by a kplex before scopes (every table's records in
   * partition 0 of {@code _kplex_commits}) over its partitions by table, so that a commit reads
   * its own table's records only ({@code kplex control-plane spread}). Refused while a writer's
   * claim is live (unrenewed for less than {@code claimTimeoutMs}; -1: the session's setting) or
   * a commit is pending. The Kafka settings are those of the session's catalog {@code catalog}.
   */
  public static String spreadControlPlane(org.apache.spark.sql.SparkSession session, String catalog,
      long claimTimeoutMs) {
    return spreadControlPlane(catalogOptions(session, catalog), claimTimeoutMs);
  }

  /** As {@link #spreadControlPlane(org.apache.spark.sql.SparkSession, String, long)}, with the catalog's options. */
  public static String spreadControlPlane(Map<String, String> options, long claimTimeoutMs) {
    long staleMs = claimTimeoutMs > 0 ? claimTimeoutMs : io.kplex.spark.conf.ConfParser.builder().catalog(options)
        .session(WriteConf.sessionSettings()).build().longConf(KplexOptions.WRITER_CLAIM_TIMEOUT_MS);
    try (io.kplex.spark.kafka.KafkaTopics kafka = new io.kplex.spark.kafka.KafkaTopics(KafkaConf.from(options))) {
      return new io.kplex.spark.txn.CommitLog(kafka).spread(staleMs, System.currentTimeMillis());
    }
  }

  /**
   * The state of a kplex table as JSON ({@code kplex status}): its definition, then what
   * {@link io.kplex.spark.txn.TableState} gathers (offsets, high order values per virtual
   * partition, the writer claim, a pending commit and what recovery would do with it, open
   * transactions, streaming queries and their lag). Reads only.
   */
  public static String status(org.apache.spark.sql.SparkSession session, String catalog, String table) {
    return status(catalogOptions(session, catalog), table);
  }

  /**
   * As {@link #status(org.apache.spark.sql.SparkSession, String, String)}, with the catalog's
   * options ({@code DESCRIBE TABLE EXTENDED}, {@link io.kplex.spark.describe.DescribeKplexTable}).
   */
  public static String status(Map<String, String> options, String table) {
    KafkaConf kafka = KafkaConf.from(options);
    String metadataTopic = KplexOptions.metadataTopic(options);
    try (TableStore store = new TableStore(kafka, metadataTopic)) {
      TableDefinition def = store.requireDefinition(table);
      if (def.isReadTime()) {
        return "{\"definition\":" + definitionJson(def) + ",\"table\":\"" + table + "\",\"kind\":\"read-time\"}";
      }
      WriteConf conf = new WriteConf(def, options, Map.of(), WriteConf.sessionSettings());
      String state = io.kplex.spark.txn.TableState.json(store, conf.table, conf.topic, conf.virtualPartitions,
          conf.claimTimeoutMs, System.currentTimeMillis());
      return "{\"definition\":" + definitionJson(def) + ",\"kind\":\"kplex-written\"," + state.substring(1);
    }
  }

  private static String definitionJson(TableDefinition def) {
    com.fasterxml.jackson.databind.node.ObjectNode node = new com.fasterxml.jackson.databind.ObjectMapper()
        .createObjectNode();
    new java.util.TreeMap<>(def.properties()).forEach(node::put);
    return node.toString();
  }

  private static Map<String, String> catalogOptions(org.apache.spark.sql.SparkSession session, String catalog) {
    Map<String, String> options = new HashMap<>();
    String prefix = "spark.sql.catalog." + catalog + ".";
    io.kplex.spark.compat.Scala.asJava(session.conf().getAll()).forEach((k, v) -> {
      if (k.startsWith(prefix)) options.put(k.substring(prefix.length()), v);
    });
    return options;
  }

  /** Registers kplex's SQL functions in a session built without {@code spark.sql.extensions}. */
  public static void registerFunctions(org.apache.spark.sql.SparkSession session) {
    KplexFunctions.register(session);
  }

  /** JSON of the last kplex write committed in this driver JVM, or null. */
  public static String lastWriteJson() {
    return WriteSummary.lastJson();
  }

  /** JSON of the kplex read metrics of an executed DataFrame's scans. */
  public static String readMetricsJson(org.apache.spark.sql.Dataset<?> df) {
    return ReadMetrics.json(df);
  }

  /**
   * The operator commands without Spark ({@code kplex status}, {@code recover} and
   * {@code control-plane spread} run this in a JVM of their own, a second or two instead of a
   * Spark session's several): {@code status TABLE}, {@code recover TABLE CLAIM_TIMEOUT_MS} or
   * {@code spread CLAIM_TIMEOUT_MS} (-1: the default). The catalog's options (its {@code kafka.*}
   * settings, credentials among them, and the metadata topic) arrive as one JSON object on
   * standard input, so no secret is on a command line. Standard output gets one JSON object:
   * {@code {"result": "..."}}, or {@code {"error": {"condition", "message", "parameters"}}} for
   * kplex's errors, which the Python package raises as its own.
   */
  public static void main(String[] args) throws java.io.IOException {
    Map<String, String> options = new HashMap<>();
    new com.fasterxml.jackson.databind.ObjectMapper().readTree(System.in).fields()
        .forEachRemaining(e -> options.put(e.getKey(), e.getValue().asText()));
    com.fasterxml.jackson.databind.node.ObjectNode out = answer(args, options);
    System.out.println(out);
    System.out.flush();
    // 1 for an error that is not kplex's; and the JVM's shared Kafka clients would otherwise
    // keep it up until they time out.
    System.exit(out.has("error") && !out.get("error").has("condition") ? 1 : 0);
  }

  /**
   * One operator command, answered as {@link #main} prints it: {@code {"result": "..."}}, or
   * {@code {"error": {...}}} (with {@code condition} and {@code parameters} for kplex's own).
   * The Python package calls this through py4j when a kplex session's JVM runs in its process
   * already (a notebook, a test), instead of starting a JVM of its own.
   */
  public static String run(String[] args, Map<String, String> options) {
    return answer(args, options).toString();
  }

  private static com.fasterxml.jackson.databind.node.ObjectNode answer(String[] args, Map<String, String> options) {
    com.fasterxml.jackson.databind.node.ObjectNode out = new com.fasterxml.jackson.databind.ObjectMapper()
        .createObjectNode();
    try {
      String command = args.length > 0 ? args[0] : "";
      switch (command) {
        case "status":
          out.put("result", status(options, args[1]));
          break;
        case "recover":
          out.put("result", recover(options, args[1], Long.parseLong(args[2])));
          break;
        case "spread":
          out.put("result", spreadControlPlane(options, Long.parseLong(args[1])));
          break;
        default:
          throw new IllegalArgumentException("unknown command '" + command + "': status, recover or spread");
      }
    } catch (io.kplex.spark.errors.KplexException e) {
      com.fasterxml.jackson.databind.node.ObjectNode error = out.putObject("error");
      error.put("condition", e.getCondition()).put("message", e.getMessage());
      e.getMessageParameters().forEach(error.putObject("parameters")::put);
    } catch (RuntimeException e) {
      out.putObject("error").put("message", e.toString());
    }
    return out;
  }

  /** Throws if the kafka-clients internals that exactly-once needs are missing. */
  public static void checkTransactionSupport() {
    TransactionResumer.selfCheck();
  }
}
