package io.kplex.spark.conf;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.errors.KplexException;
import java.util.HashMap;
import java.util.Map;
import org.junit.Test;

/** A restricted server's limits on a statement's Kafka settings and on catalogs, from its start-up configuration. */
public class ServerPolicyTest {
  private static final String CATALOG = "io.kplex.spark.KplexCatalog";

  private static Map<String, String> startup(String... more) {
    Map<String, String> conf = new HashMap<>(Map.of("spark.kplex.server.restricted", "true",
        "spark.sql.catalog.kplex", CATALOG, "spark.sql.catalog.kplex.kafka.bootstrap.servers", "broker:9093",
        "spark.sql.catalog.kplex.kafka.sasl.jaas.config", "secret"));
    for (int i = 0; i < more.length; i += 2) conf.put(more[i], more[i + 1]);
    return conf;
  }

  @Test
  public void aRestrictedServerTakesOnlyTheListedKafkaSettingsFromAStatementAndNamesTheOneItRefuses() {
    ServerPolicy policy = ServerPolicy.of(startup());
    assertTrue(policy.restricted());
    policy.checkStatement(Map.of("kafka.fetch.max.bytes", "1048576", "kafka.isolation.level", "read_committed",
        "kplex.max_delay_ms", "10", "table", "t"));
    for (String refused : new String[] {"kafka.bootstrap.servers", "kafka.sasl.jaas.config", "kafka.interceptor.classes",
        "kafka.ssl.keystore.location", "kafka.config.providers", "KAFKA.Bootstrap.Servers"}) {
      KplexException e = assertThrows(refused, KplexException.class,
          () -> policy.checkStatement(Map.of(refused, "x", "kafka.linger.ms", "5")));
      assertEquals("KPLEX_SERVER_RESTRICTED.KAFKA_OPTION", e.getCondition());
      assertTrue(e.getMessage(), e.getMessage().contains("'" + refused + "'"));
      assertTrue(e.getMessage(), e.getMessage().contains("kafka.fetch.max.bytes"));
      assertFalse("the value is not shown", e.getMessage().contains("'x'"));
    }
    KplexException variable = assertThrows(KplexException.class,
        () -> policy.checkStatement(Map.of("kafka.linger.ms", "${file:/etc/secret:ms}")));
    assertEquals("KPLEX_SERVER_RESTRICTED.KAFKA_VARIABLE", variable.getCondition());
  }

  @Test
  public void theOperatorsListReplacesTheDefaultAndAnOpenServerTakesAnything() {
    ServerPolicy narrow = ServerPolicy.of(startup("spark.kplex.server.kafka_options", " Linger.ms , "));
    narrow.checkStatement(Map.of("kafka.linger.ms", "5"));
    assertThrows(KplexException.class, () -> narrow.checkStatement(Map.of("kafka.fetch.max.bytes", "1")));
    ServerPolicy open = ServerPolicy.of(Map.of("spark.sql.catalog.kplex", CATALOG));
    assertFalse(open.restricted());
    open.checkStatement(Map.of("kafka.bootstrap.servers", "elsewhere:9092", "kafka.sasl.jaas.config", "x"));
    open.checkCatalog("mine", Map.of("kafka.bootstrap.servers", "elsewhere:9092"), CATALOG);
    assertThrows(KplexException.class, () -> ServerPolicy.of(Map.of("spark.kplex.server.restricted", "yes")));
  }

  @Test
  public void aRestrictedServerTakesOnlyTheCatalogsItStartedWithAsItStartedThem() {
    ServerPolicy policy = ServerPolicy.of(startup());
    policy.checkCatalog("kplex", Map.of("kafka.bootstrap.servers", "broker:9093", "kafka.sasl.jaas.config", "secret"), CATALOG);
    KplexException other = assertThrows(KplexException.class,
        () -> policy.checkCatalog("mine", Map.of("kafka.bootstrap.servers", "elsewhere:9092"), CATALOG));
    assertEquals("KPLEX_SERVER_RESTRICTED.CATALOG", other.getCondition());
    assertTrue(other.getMessage(), other.getMessage().contains("'mine'") && other.getMessage().contains("(kplex)"));
    KplexException moved = assertThrows(KplexException.class, () -> policy.checkCatalog("kplex",
        Map.of("kafka.bootstrap.servers", "elsewhere:9092", "kafka.sasl.jaas.config", "secret"), CATALOG));
    assertEquals("KPLEX_SERVER_RESTRICTED.CATALOG_SETTING", moved.getCondition());
    assertTrue(moved.getMessage(), moved.getMessage().contains("spark.sql.catalog.kplex.kafka.bootstrap.servers"));
    KplexException added = assertThrows(KplexException.class, () -> policy.checkCatalog("kplex",
        Map.of("kafka.bootstrap.servers", "broker:9093", "kafka.sasl.jaas.config", "secret", "kafka.interceptor.classes", "x"),
        CATALOG));
    assertTrue(added.getMessage(), added.getMessage().contains("spark.sql.catalog.kplex.kafka.interceptor.classes"));
  }
}
