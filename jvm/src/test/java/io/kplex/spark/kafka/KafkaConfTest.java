package io.kplex.spark.kafka;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertSame;

import java.util.Map;
import org.junit.Test;

/**
 * Users name Kafka's classes unrelocated; the built jar has them under
 * {@code io.kplex.shaded.org.apache.kafka}. Which settings are rewritten:
 *
 * <pre>
 * setting                                  rewritten
 * sasl.jaas.config                         yes (the login module)
 * *.class, *.classes                       yes (callback handlers, config providers, interceptors)
 * serializers, assignors, metric.reporters yes
 * anything else (client.id, ...)           no
 * a user's own class (com.acme...)         no
 * an already relocated name                no (not twice)
 * </pre>
 */
public class KafkaConfTest {
  private static final String SHADED = "io.kplex.shaded." + KafkaConf.UNRELOCATED;

  private static String relocated(String key, String value) {
    return KafkaConf.relocated(Map.of(key, value), SHADED).get(key);
  }

  @Test
  public void theLoginModuleOfAJaasLineIsRelocatedAndTheRestKept() {
    String jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"u\" password=\"p\";";
    assertEquals("io.kplex.shaded." + jaas, relocated("sasl.jaas.config", jaas));
  }

  @Test
  public void classValuedSettingsAreRelocatedEveryNameOfAList() {
    assertEquals(SHADED + "common.config.provider.FileConfigProvider",
        relocated("config.providers.file.class", "org.apache.kafka.common.config.provider.FileConfigProvider"));
    assertEquals("com.acme.Tracing, " + SHADED + "clients.producer.Interceptor",
        relocated("interceptor.classes", "com.acme.Tracing, org.apache.kafka.clients.producer.Interceptor"));
    assertEquals(SHADED + "common.metrics.JmxReporter",
        relocated("metric.reporters", "org.apache.kafka.common.metrics.JmxReporter"));
  }

  @Test
  public void otherSettingsUsersOwnClassesAndRelocatedNamesAreKept() {
    assertEquals("org.apache.kafka.client", relocated("client.id", "org.apache.kafka.client"));
    assertEquals("com.acme.Login", relocated("sasl.login.callback.handler.class", "com.acme.Login"));
    assertEquals(SHADED + "common.security.plain.PlainLoginModule required;",
        relocated("sasl.jaas.config", SHADED + "common.security.plain.PlainLoginModule required;"));
  }

  /**
   * A consumer's offset reset would skip what retention deleted, silently: kplex's consumers
   * keep "none" whatever a (shared) settings file says, so the loss is reported.
   */
  @Test
  public void kplexsConsumersNeverResetTheirOffsets() {
    assertEquals("none", KafkaConf.from(Map.of("kafka.bootstrap.servers", "b:9092", "kafka.auto.offset.reset",
        "earliest")).consumer().get("auto.offset.reset"));
  }

  @Test
  public void unrelocatedClassesAsInTheseTestsLeaveTheSettingsAlone() {
    Map<String, String> props = Map.of("sasl.jaas.config", "org.apache.kafka.X required;");
    assertSame(props, KafkaConf.relocated(props, KafkaConf.UNRELOCATED));
    assertEquals(KafkaConf.UNRELOCATED, KafkaConf.KAFKA_PACKAGE);
  }

  @Test
  public void consumersWaitAtTheBrokerBrieflyForRecordsUnlessTheUserSaysOtherwise() {
    // A pooled consumer's fetch parked at a range's end held up the next task on its partition.
    assertEquals(10, KafkaConf.from(Map.of("kafka.bootstrap.servers", "b:9092")).consumer().get("fetch.max.wait.ms"));
    assertEquals("300", KafkaConf.from(Map.of("kafka.bootstrap.servers", "b:9092", "kafka.fetch.max.wait.ms", "300"))
        .consumer().get("fetch.max.wait.ms"));
  }

  @Test
  public void offsetsAreAskedAsKplexsConsumersReadTheLogAndABadIsolationLevelIsNamed() {
    assertEquals(org.apache.kafka.common.IsolationLevel.READ_COMMITTED,
        KafkaConf.from(Map.of("kafka.bootstrap.servers", "b:9092")).isolation());
    assertEquals(org.apache.kafka.common.IsolationLevel.READ_UNCOMMITTED,
        KafkaConf.from(Map.of("kafka.bootstrap.servers", "b:9092", "kafka.isolation.level", "read_uncommitted"))
            .isolation());
    io.kplex.spark.errors.KplexException e = org.junit.Assert.assertThrows(io.kplex.spark.errors.KplexException.class,
        () -> KafkaConf.from(Map.of("kafka.bootstrap.servers", "b:9092", "kafka.isolation.level", "sometimes"))
            .isolation());
    org.junit.Assert.assertTrue(e.getMessage(), e.getMessage().contains("kafka.isolation.level")
        && e.getMessage().contains("sometimes") && e.getMessage().contains("read_committed"));
  }

  @Test
  public void anOperatorsKafkaSystemPropertiesReachTheRelocatedClientsUnlessSetForThemAlready() {
    java.util.Properties system = new java.util.Properties();
    system.setProperty("org.apache.kafka.disallowed.login.modules",
        "com.sun.security.auth.module.JndiLoginModule,org.apache.kafka.common.security.plain.PlainLoginModule");
    system.setProperty("org.apache.kafka.automatic.config.providers", "none");
    system.setProperty(SHADED + "automatic.config.providers", "file");
    system.setProperty("java.io.tmpdir", "/tmp");
    KafkaConf.mirror(system, SHADED);
    assertEquals("Kafka's own classes as the relocated clients name them",
        "com.sun.security.auth.module.JndiLoginModule," + SHADED + "common.security.plain.PlainLoginModule",
        system.getProperty(SHADED + "disallowed.login.modules"));
    assertEquals("set for them already: kept", "file", system.getProperty(SHADED + "automatic.config.providers"));
    assertEquals(5, system.size());
    java.util.Properties unrelocated = new java.util.Properties();
    unrelocated.setProperty("org.apache.kafka.disallowed.login.modules", "x");
    KafkaConf.mirror(unrelocated, KafkaConf.UNRELOCATED);
    assertEquals(1, unrelocated.size());
  }
}
