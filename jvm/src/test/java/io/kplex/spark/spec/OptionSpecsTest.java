package io.kplex.spark.spec;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertNull;
import static org.junit.Assert.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.Test;

/** options.json as the JVM reads it, and KplexOptions' names kept to it. */
public class OptionSpecsTest {
  @Test
  public void theTablePropertiesAreThoseTheSpecAllowsAsSuch() {
    assertEquals(new HashSet<>(OptionSpecs.names(OptionSpec.Scope.TABLE)), new HashSet<>(KplexOptions.TABLE_PROPERTIES));
    assertEquals(KplexOptions.TABLE_PROPERTIES.size(), OptionSpecs.names(OptionSpec.Scope.TABLE).size());
  }

  @Test
  public void theReadOverridesAreTheKplexSettingsTheSpecAllowsAsReadOptions() {
    Set<String> read = new HashSet<>();
    for (String name : OptionSpecs.names(OptionSpec.Scope.READ)) {
      if (name.startsWith("kplex.")) read.add(name);
    }
    assertEquals(read, new HashSet<>(KplexOptions.READ_OVERRIDES));
  }

  @Test
  public void everySettingNamedInKplexOptionsIsInTheSpec() throws Exception {
    Set<String> notSettings = Set.of(KplexOptions.TABLE, KplexOptions.BOOTSTRAP, KplexOptions.KAFKA_PREFIX,
        KplexOptions.DEFAULT_METADATA_TOPIC, KplexOptions.DEFAULT_VIRTUAL_KEY,
        KplexOptions.DEFAULT_VIRTUAL_ORDER, KplexOptions.RELEASE_AT_END_CONF, KplexOptions.IDLE_TIMEOUT_MS_CONF,
        KplexOptions.STARTING_OFFSETS_CONF, KplexOptions.STARTING_TABLE_CONF, KplexOptions.STREAM_SETTING_PREFIX);
    List<String> missing = new ArrayList<>();
    for (Field f : KplexOptions.class.getFields()) {
      if (Modifier.isStatic(f.getModifiers()) && f.getType() == String.class) {
        String name = (String) f.get(null);
        if (!notSettings.contains(name) && OptionSpecs.find(name) == null) missing.add(f.getName());
      }
    }
    assertEquals(List.of(), missing);
  }

  @Test
  public void aSpecReadsAsDeclared() {
    OptionSpec rf = OptionSpecs.of("KPLEX.REPLICATION_FACTOR");
    assertEquals(OptionSpec.Type.INT, rf.type());
    assertEquals(Long.valueOf(1), rf.min());
    assertEquals(Long.valueOf(32767), rf.max());
    assertEquals(Long.valueOf(-1), rf.also());
    assertEquals("-1", rf.defaultValue());
    assertTrue(rf.settableAs(OptionSpec.Scope.TABLE));
    assertEquals("an integer >= 1, or -1 for the broker default", rf.expected());
    OptionSpec delivery = OptionSpecs.of(KplexOptions.DELIVERY);
    assertEquals("one of [exactly_once, at_least_once]", delivery.expected());
    assertEquals(Set.of(OptionSpec.Scope.TABLE, OptionSpec.Scope.WRITE, OptionSpec.Scope.CATALOG,
        OptionSpec.Scope.SESSION), delivery.setAs());
    assertEquals("an integer >= 1", OptionSpecs.of(KplexOptions.VIRTUAL_PARTITIONS).expected());
    assertTrue(OptionSpecs.of(KplexOptions.VIRTUAL_PARTITIONS).required());
    assertNull(OptionSpecs.find("kplex.colour"));
    assertEquals("kplex.stream.releaseAtEnd", OptionSpecs.of(KplexOptions.RELEASE_AT_END).sessionKey());
    assertNull(OptionSpecs.of(KplexOptions.FAIL_ON_DATA_LOSS).sessionKey());
    assertEquals("key", OptionSpecs.of(KplexOptions.KEY).readTimeDefault());
    assertEquals("timestamp", OptionSpecs.of(KplexOptions.ORDER).readTimeDefault());
  }

  @Test
  public void everyNumberHasALeastValueAndEveryChoiceItsChoices() {
    for (OptionSpec spec : OptionSpecs.all()) {
      if (spec.type() == OptionSpec.Type.INT || spec.type() == OptionSpec.Type.LONG) {
        assertNotNull(spec.name(), spec.min());
      }
      assertEquals(spec.name(), spec.type() == OptionSpec.Type.CHOICE, !spec.choices().isEmpty());
      assertTrue(spec.name(), !spec.setAs().isEmpty());
    }
  }

  @Test
  public void theClaimTimeoutDefaultIsTheSpecs() {
    assertEquals(6_000, KplexOptions.DEFAULT_WRITER_CLAIM_TIMEOUT_MS);
    assertEquals(6_000, OptionSpecs.of(KplexOptions.WRITER_CLAIM_TIMEOUT_MS).longDefault());
  }

  /** The value of startingOffsets that resumes from the table is declared once (kplex.settings reads it too). */
  @Test
  public void theStartingOffsetsThatResumeFromTheTableAreDeclared() {
    assertEquals("table", OptionSpecs.of(KplexOptions.STARTING_OFFSETS).specialValue("resume_from_table"));
  }
}
