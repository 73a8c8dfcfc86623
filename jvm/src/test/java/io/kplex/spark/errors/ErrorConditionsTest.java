package io.kplex.spark.errors;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertNotNull;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.txn.CommitFailure;
import java.io.IOException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.SparkThrowable;
import org.junit.Test;

/** Errors as data: every code the plugin can throw is declared in error_conditions.json. */
public class ErrorConditionsTest {
  /** A condition the sources raise: {@code new KplexException("CODE...} or Errors' {@code error("CODE...}. */
  private static final Pattern THROWN =
      Pattern.compile("(?:new (?:io\\.kplex\\.spark\\.errors\\.)?KplexException|\\berror)\\(\\s*\"([A-Z_]+(?:\\.[A-Z_]+)?)");

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
      if (ErrorConditions.of(code.replaceFirst("\\..*", "")) == null) undeclared.add(code);
      if (code.contains(".") && ErrorConditions.template(code) == null) undeclared.add(code);
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
  public void everyConditionHasATemplateOrSubClassesEachWithOne() {
    ErrorConditions.all().values().forEach(c -> {
      String code = c.name().substring("KPLEX_".length());
      if (c.subClasses().isEmpty()) {
        assertFalse(c.name(), ErrorConditions.template(code).isBlank());
      } else {
        assertEquals(c.name() + " has sub-classes: it is raised by one", null, ErrorConditions.template(code));
        c.subClasses().keySet().forEach(sub -> {
          assertTrue(c.name() + "." + sub, sub.matches("[A-Z][A-Z0-9_]*"));
          assertFalse(c.name() + "." + sub, ErrorConditions.template(code + "." + sub).isBlank());
        });
      }
    });
  }

  @Test
  public void aTemplateFilledWithItsParametersIsTheMessage() {
    assertEquals("table t is being written by another query (Spark query id q); kplex lets one write at a time"
        + " into a table. Nothing was written: run this write again once that one has finished.",
        ErrorConditions.render("TABLE_BUSY", Map.of("table", "t", "query", "q")));
    assertEquals(List.of("table", "query"), List.copyOf(ErrorConditions.parameters(ErrorConditions.template("TABLE_BUSY"))));
    Map<String, String> nullValue = new HashMap<>();
    nullValue.put("option", "o");
    nullValue.put("value", null);
    nullValue.put("expected", "e");
    assertEquals("option 'o' = 'null' is invalid: e.", ErrorConditions.render("BAD_OPTION.VALUE", nullValue));
    assertTrue(ErrorConditions.render("STREAM", Map.of("table", "t")).contains("kplex.<source>"));
  }

  @Test
  public void aTemplateWithoutOneOfItsParametersOrAConditionNotDeclaredFailsLoudly() {
    IllegalStateException missing = assertThrows(IllegalStateException.class,
        () -> ErrorConditions.render("TABLE_BUSY", Map.of("table", "t")));
    assertTrue(missing.getMessage(), missing.getMessage().contains("<query>"));
    assertThrows(IllegalStateException.class, () -> ErrorConditions.render("NO_SUCH", Map.of()));
    assertThrows(IllegalStateException.class, () -> ErrorConditions.render("BAD_OPTION", Map.of()));
    assertThrows(IllegalStateException.class, () -> ErrorConditions.render("BAD_OPTION.NO_SUCH", Map.of()));
  }

  @Test
  public void everyFactoryRendersItsWholeTemplateFromItsParameters() throws Exception {
    int checked = 0;
    for (Method m : Errors.class.getDeclaredMethods()) {
      if (!Modifier.isPublic(m.getModifiers()) || m.getReturnType() != KplexException.class) continue;
      Object[] args = new Object[m.getParameterCount()];
      Class<?>[] types = m.getParameterTypes();
      for (int i = 0; i < args.length; i++) args[i] = sample(types[i], i);
      if (types.length == 5 && m.getName().equals("commitFailed")) args[0] = "COMMIT_FENCED";  // a condition
      KplexException e = (KplexException) m.invoke(null, args);
      String condition = e.getCondition().substring("KPLEX_".length());
      String template = ErrorConditions.template(condition);
      assertNotNull(m.getName() + ": " + condition + " is declared", template);
      assertEquals(m.getName(), template, e.getDefaultMessageTemplate());
      Set<String> missing = new TreeSet<>(ErrorConditions.parameters(template));
      missing.removeAll(e.getMessageParameters().keySet());
      assertEquals(m.getName() + ": template parameters it does not give", Set.of(), missing);
      assertEquals(m.getName(), "[KPLEX_" + e.code() + "] " + ErrorConditions.render(condition,
          e.getMessageParameters()), e.getMessage());
      Matcher left = Pattern.compile("<[a-z][a-z0-9_]*>").matcher(e.getMessage());
      assertTrue(m.getName() + ": " + e.getMessage(), !left.find() || template.contains("\\" + left.group()));
      checked++;
    }
    assertTrue("checked the factories: " + checked, checked > 70);
    for (Errors.Framing how : Errors.Framing.values()) {
      assertTrue(how.name(), Errors.notConfluentFramed(3, "00", how, 5).getMessage().contains("Confluent wire format"));
    }
    for (Errors.Resource.Kind kind : Errors.Resource.Kind.values()) {
      KplexException e = Errors.notAuthorized("User:u", "READ", new Errors.Resource(kind, "n"), "b:9092",
          new RuntimeException("x"));
      assertTrue(e.getMessage(), e.getMessage().startsWith("[KPLEX_NOT_AUTHORIZED] principal User:u is not allowed"
          + " to READ ") && e.getMessage().endsWith("Kafka said: x"));
    }
    for (Errors.DataLoss how : Errors.DataLoss.values()) {
      String said = Errors.dataLoss(how, "t", 1, 5, 9, "failOnDataLoss").getMessage();
      assertTrue(said, said.startsWith(how == Errors.DataLoss.TOPIC_RECREATED
          ? "[KPLEX_DATA_LOSS] topic 't' partition 1: the topic was deleted and created again (its id changed) after"
              + " the query read it up to offset 5"
          : "[KPLEX_DATA_LOSS] topic 't' partition 1: offsets [5, 9) were not read because"));
    }
    for (boolean insert : new boolean[] {true, false}) {
      for (boolean known : new boolean[] {true, false}) {
        String said = Errors.commitCutShort("t", "q", insert, 3, Set.of(0), Set.of(1), Set.of(2), known, 4).getMessage();
        assertTrue(said, said.contains(" into table t was cut short: Kafka aborted the transactions of tasks [0]")
            && said.endsWith("Table t stays writable."));
      }
      String said = Errors.commitAllAborted("t", "q", insert, 3, 2).getMessage();
      assertTrue(said, said.startsWith("[KPLEX_COMMIT_CUT_SHORT] Kafka aborted all 2 transactions of ")
          && said.endsWith("Table t stays writable."));
    }
    for (CommitFailure kind : CommitFailure.values()) {
      for (int attempts : new int[] {1, 3}) {
        KplexException e = Errors.commitFailed(kind.code, "txn", "t", attempts, new RuntimeException("x"));
        assertTrue(e.getMessage(), e.getMessage().startsWith("[KPLEX_" + kind.code + "] committing transaction txn"));
      }
    }
  }

  private static Object sample(Class<?> t, int i) {
    if (t == String.class || t == Object.class) return "s" + i;
    if (t == int.class) return 100 + i;
    if (t == long.class) return 1000L + i;
    if (t == boolean.class) return i % 2 == 0;
    if (t == List.class || t == Collection.class) return List.of("l" + i);
    if (t == Set.class) return Set.of(200 + i);
    if (t == Map.class) return Map.of(300 + i, 400L + i);
    if (t == KplexException.class) return Errors.commitTooLate("t", 1, 2, 3);
    if (t == Errors.Resource.class) return Errors.Resource.topic("r" + i);
    if (t == String[].class) return new String[] {"a" + i};
    if (t.isEnum()) return t.getEnumConstants()[0];
    if (Throwable.class.isAssignableFrom(t)) return new RuntimeException("the cause");
    throw new AssertionError("no sample of " + t);
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
