package io.kplex.spark;

import io.kplex.spark.catalog.TableStore;
import io.kplex.spark.kafka.KafkaConf;
import io.kplex.spark.spec.KplexOptions;
import io.kplex.spark.txn.CommitLog;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;
import org.slf4j.LoggerFactory;
import scala.Tuple2;

/**
 * {@code spark.plugins=io.kplex.spark.KplexPlugin}: while Spark builds its context and
 * session, a daemon thread on the driver makes kplex's first contact with each kplex
 * catalog's brokers ({@link #warmUp}), so that the session's first statement finds the
 * classes loaded, the JVM's shared Admin client connected and the table definitions read.
 * It only reads, and keeps no answer: the statement still reads the definitions and the
 * commit log up to their end offsets of its own moment. A failure (no broker yet, a principal
 * that may not describe) is left for the statement to report, naming what it names.
 * The environment variable {@code KPLEX_WARM_UP=off} of the driver's process turns it off (for
 * bench/session_start.py to compare; a JVM option would change which class archive the JVM maps).
 */
public final class KplexPlugin implements SparkPlugin {
  /** The environment variable that turns the warm-up off, with the value {@code off}. */
  static final String ENV = "KPLEX_WARM_UP";
  private static final String CATALOG_PREFIX = "spark.sql.catalog.";

  @Override
  public DriverPlugin driverPlugin() {
    return new DriverPlugin() {
      @Override
      public Map<String, String> init(SparkContext sc, PluginContext context) {
        List<Map<String, String>> catalogs = catalogs(sc.conf());
        if (!catalogs.isEmpty() && !"off".equals(System.getenv(ENV))) {
          Thread t = new Thread(() -> catalogs.forEach(KplexPlugin::warmUp), "kplex-warm-up");
          t.setDaemon(true);
          t.start();
        }
        return Map.of();
      }
    };
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return null;
  }

  /** The options of every catalog of class {@link KplexCatalog} that names a bootstrap server. */
  static List<Map<String, String>> catalogs(SparkConf conf) {
    Map<String, String> all = new HashMap<>();
    for (Tuple2<String, String> e : conf.getAll()) {
      all.put(e._1(), e._2());
    }
    List<Map<String, String>> found = new ArrayList<>();
    all.forEach((key, value) -> {
      boolean catalog = key.startsWith(CATALOG_PREFIX) && key.indexOf('.', CATALOG_PREFIX.length()) < 0;
      if (catalog && KplexCatalog.class.getName().equals(value)) {
        String prefix = key + ".";
        Map<String, String> options = new HashMap<>();
        all.forEach((k, v) -> {
          if (k.startsWith(prefix)) options.put(k.substring(prefix.length()), v);
        });
        if (options.containsKey(KplexOptions.KAFKA_PREFIX + "bootstrap.servers")) found.add(options);
      }
    });
    return found;
  }

  /** Reads a catalog's table definitions and describes the commit log, as a first statement would. */
  static void warmUp(Map<String, String> options) {
    try (TableStore store = new TableStore(KafkaConf.from(options), KplexOptions.metadataTopic(options))) {
      store.definitions();
      store.describe(CommitLog.TOPIC);
    } catch (RuntimeException | LinkageError e) {
      LoggerFactory.getLogger(KplexPlugin.class).debug("kplex: warming up the catalog failed: {}", e.toString());
    }
  }
}
