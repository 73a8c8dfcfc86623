package io.kplex.spark.errors;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.txn.CommitFailure;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.SparkThrowable;
import org.junit.Test;

/** Errors as data: every code the plugin can throw is declared in error_conditions.json. */
public class ErrorConditionsTest {
  private static final Pattern THROWN = Pattern.compile("new (?:io\\.kplex\\.spark\\.errors\\.)?KplexException\\(\\s*\"([A-Z_]+)\"");

  @Test
  public void everyCodeTheSourcesThrowIsDeclared() throws IOException {
    Set<String> used = new TreeSet<>();
    try (Stream<Path> files = Files.walk(Paths.get("jvm/src/main/java"))) {
      for (Path f : (Iterable<Path>) files.filter(p -> p.toString().endsWith(".java"))::iterator) {
        Matcher m = THROWN.matcher(new String(Files.readAllBytes(f)));
        while (m.find()) used.add(m.group(1));
      }
    }
    for (CommitFailure kind : CommitFailure.values()) used.add(kind.code);
    assertTrue("found the sources", used.size() > 30);
    Set<String> undeclared = new TreeSet<>();
    for (String code : used) {
      if (ErrorConditions.of(code) == null) undeclared.add(code);
    }
    assertEquals("codes thrown but not in python/kplex/error_conditions.json", Set.of(), undeclared);
  }

  @Test
  public void everyConditionHasASqlStateAndAPythonClass() {
    assertFalse(ErrorConditions.all().isEmpty());
    ErrorConditions.all().values().forEach(c -> {
      assertTrue(c.name(), c.name().startsWith("KPLEX_"));
      assertTrue(c.name() + " sqlState " + c.sqlState(), c.sqlState().matches("[0-9A-Z]{5}"));
      assertTrue(c.name(), c.python().matches("[A-Z][A-Za-z]*(Error)?"));
      assertFalse(c.name(), c.description().isBlank());
    });
  }

  @Test
  public void aKplexExceptionIsASparkThrowableWithItsConditionAndSqlState() {
    KplexException e = Errors.tableBusy("t", "q-1");
    SparkThrowable t = e;
    assertEquals("KPLEX_TABLE_BUSY", t.getCondition());
    assertEquals("KPLEX_TABLE_BUSY", t.getErrorClass());
    assertEquals("40001", t.getSqlState());
    assertFalse(t.isInternalError());
    assertTrue(e.getMessage().startsWith("[KPLEX_TABLE_BUSY] table t"));
    assertNotNull(t.getMessageParameters());
  }
}
