package io.kplex.spark;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;

import java.util.List;
import java.util.Map;
import org.apache.spark.SparkConf;
import org.junit.Test;

/**
 * Which catalogs the driver plugin warms up: every catalog of kplex's class that names a
 * bootstrap server, with its own options, and nothing else. (That the warm-up connects before
 * the first statement and writes nothing is tested against the broker: tests/test_warm_up.py.)
 */
public class KplexPluginTest {
  @Test
  public void everyKplexCatalogWithABootstrapIsWarmedUpWithItsOwnOptions() {
    SparkConf conf = new SparkConf(false)
        .set("spark.sql.catalog.kplex", KplexCatalog.class.getName())
        .set("spark.sql.catalog.kplex.kafka.bootstrap.servers", "a:9092")
        .set("spark.sql.catalog.kplex.metadata_topic", "_defs")
        .set("spark.sql.catalog.other", KplexCatalog.class.getName())
        .set("spark.sql.catalog.other.kafka.bootstrap.servers", "b:9092")
        .set("spark.sql.catalog.other.kafka.security.protocol", "SASL_SSL");
    List<Map<String, String>> found = KplexPlugin.catalogs(conf);
    assertEquals(2, found.size());
    assertTrue(found.contains(Map.of("kafka.bootstrap.servers", "a:9092", "metadata_topic", "_defs")));
    assertTrue(found.contains(Map.of("kafka.bootstrap.servers", "b:9092", "kafka.security.protocol", "SASL_SSL")));
  }

  @Test
  public void otherCatalogsAndAKplexCatalogWithoutABootstrapAreLeftAlone() {
    SparkConf conf = new SparkConf(false)
        .set("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .set("spark.sql.catalog.spark_catalog.kafka.bootstrap.servers", "a:9092")
        .set("spark.sql.catalog.kplex", KplexCatalog.class.getName())  // bootstrap given per statement
        .set("spark.sql.catalog.kplex.x", KplexCatalog.class.getName())  // an option, not a catalog
        .set("spark.sql.catalog.kplex.x.kafka.bootstrap.servers", "c:9092");
    assertEquals(List.of(), KplexPlugin.catalogs(conf));
  }
}
