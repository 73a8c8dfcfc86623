package io.kplex.spark.errors;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.junit.Test;

/**
 * Errors name their culprits: every factory of {@link Errors} gives each thing it is told
 * about (a table, a topic, an option and its value...) as a message parameter, under one
 * snake_case name per kind of culprit. A failure's cause is chained, not a parameter.
 */
public class ErrorParametersTest {
  /** Factories told nothing to name (no argument but a cause): they may carry no parameter. */
  private static final Set<String> NOTHING_TO_NAME = Set.of(
      "cannotAlter()", "cannotRename()", "noBootstrap()", "noTableOption()", "vpartitionArguments()",
      "writeVPartitionArguments()", "resumeWithTimestamp()",
      "definitionUnreadable(Exception)", "kafka(Throwable)");

  /**
   * Arguments that are not culprits but choose the sub-class: commitFailed's condition code,
   * how a value is not framed or data was lost, whether a cut-short commit was an INSERT and
   * whether its record says which virtual partitions were lost.
   */
  private static final Set<String> NOT_A_CULPRIT = Set.of("commitFailed(String,String,String,int,Throwable)#0",
      "notConfluentFramed(int,String,Framing,long)#2", "dataLoss(DataLoss,String,int,long,long,String)#0",
      "commitAllAborted(String,String,boolean,long,int)#2",
      "commitCutShort(String,String,boolean,long,Set,Set,Set,boolean,int)#2",
      "commitCutShort(String,String,boolean,long,Set,Set,Set,boolean,int)#7",
      "unreadableMetadata(MetadataRecord,String,Exception)#0", "functionArgumentCount(Arity,String,int)#0",
      "functionArgumentType(Argument,String,String,String)#0", "missingColumn(WrittenColumn,List)#0");

  /** Factories whose arguments this test cannot make (none today: keep it so, or name them). */
  private static final Set<String> SKIPPED = Set.of();

  @Test
  public void aNullKeyNamesItsColumnAndOrderValue() {
    assertParameters(Errors.nullKey("kplex_key(userid)", 42), "column", "kplex_key(userid)", "order_value", "42");
  }

  @Test
  public void aBadOptionNamesTheOptionItsValueAndWhatIsExpected() {
    assertParameters(Errors.badOption("kplex.late_policy", "later", "one of fail, drop"),
        "option", "kplex.late_policy", "value", "later", "expected", "one of fail, drop");
  }

  @Test
  public void aCulpritThatIsNullIsLeftOut() {
    assertParameters(Errors.badOption("kplex.max_delay_ms", null, "an integer"),
        "option", "kplex.max_delay_ms", "expected", "an integer");
    assertParameters(Errors.unknownProperty("kplex.virtual_partiton", null), "option", "kplex.virtual_partiton",
        "known", String.valueOf(io.kplex.spark.spec.KplexOptions.TABLE_PROPERTIES));
  }

  @Test
  public void anUnknownTopicNamesTheTopic() {
    assertParameters(Errors.unknownTopic("views"), "topic", "views");
  }

  @Test
  public void aLateRecordNamesItsTableAndSourcePosition() {
    assertParameters(Errors.lateRecord("by_user", "views", 3, 1207, 1000, 9000, 5000), "table", "by_user",
        "topic", "views", "partition", "3", "offset", "1207", "order_value", "1000", "max_order_value", "9000",
        "max_delay_ms", "5000", "lateness", "8000 ms");
  }

  @Test
  public void aNullReadTimeKeyNamesTheTableAndTheSourceRecord() {
    assertParameters(Errors.nullReadTimeKey("t", "key", "views", 2, 17), "table", "t",
        "expression", "key", "topic", "views", "partition", "2", "offset", "17");
  }

  @Test
  public void aTableErrorNamesTheTable() {
    assertParameters(Errors.tableBusy("by_user", "q-1"), "table", "by_user", "query", "q-1");
    assertParameters(Errors.virtualStream("by_user"), "table", "by_user");
  }

  @Test
  public void anAccessErrorUsesThePythonSidesNames() {
    assertParameters(Errors.notAuthorized("User:app", "WRITE", Errors.Resource.topic("views"), "b:9092",
        new RuntimeException("no")),
        "principal", "User:app", "operation", "WRITE", "resource", "views", "bootstrap", "b:9092", "cause", "no");
    assertParameters(Errors.notAuthorized("User:app", "WRITE", Errors.Resource.cluster(), "b:9092",
        new RuntimeException("no")), "principal", "User:app", "operation", "WRITE", "bootstrap", "b:9092",
        "cause", "no");
    assertParameters(Errors.unreachable("b:9092", new RuntimeException("down")), "bootstrap", "b:9092",
        "cause", "RuntimeException: down");
  }

  @Test
  public void aStreamCommitTooLateKeepsTheParametersOfTheWriteAndAddsTheRerunTimeout() {
    KplexException tooLate = Errors.commitTooLate("t", 50_000, 60_000, 15_000);
    assertParameters(Errors.streamCommitTooLate(tooLate, 120_000),
        "table", "t", "open_ms", "50000", "timeout_ms", "60000", "margin_ms", "15000", "rerun_ms", "120000");
  }

  @Test
  public void theParametersAreFixedWhenTheErrorIsMade() {
    Map<String, String> given = new LinkedHashMap<>(Map.of("topic", "views"));
    KplexException e = new KplexException("UNKNOWN_TOPIC.BROKER", given);
    given.put("topic", "other");
    assertEquals(Map.of("topic", "views"), e.getMessageParameters());
    try {
      e.getMessageParameters().put("topic", "other");
      fail("the parameters can be changed");
    } catch (UnsupportedOperationException expected) {
      // as it should be
    }
    assertEquals(Map.of(), new KplexException("UNSUPPORTED.RENAME", Map.of()).getMessageParameters());
  }

  @Test
  public void everyFactoryGivesEveryCulpritItIsToldAboutAsAParameter() throws Exception {
    List<Method> factories = new ArrayList<>();
    for (Method m : Errors.class.getDeclaredMethods()) {
      if (Modifier.isPublic(m.getModifiers()) && Modifier.isStatic(m.getModifiers())
          && m.getReturnType() == KplexException.class) {
        factories.add(m);
      }
    }
    factories.sort(Comparator.comparing(ErrorParametersTest::signature));
    assertTrue("found the factories: " + factories.size(), factories.size() > 60);

    Set<String> skipped = new TreeSet<>();
    Set<String> toldNothing = new TreeSet<>();
    List<String> problems = new ArrayList<>();
    for (Method m : factories) {
      String signature = signature(m);
      Object[] args = samples(m.getParameterTypes());
      if (args != null && signature.startsWith("commitFailed(String,String,")) args[0] = "COMMIT_FENCED";  // a condition
      if (args == null) {
        skipped.add(signature);
        continue;
      }
      Map<String, String> parameters = ((KplexException) m.invoke(null, args)).getMessageParameters();
      parameters.keySet().stream().filter(n -> !n.matches("[a-z][a-z0-9]*(_[a-z0-9]+)*"))
          .forEach(n -> problems.add(signature + ": parameter name '" + n + "' is not snake_case"));
      int culprits = 0;
      for (int i = 0; i < args.length; i++) {
        if (args[i] instanceof Throwable || NOT_A_CULPRIT.contains(signature + "#" + i)) continue;
        culprits++;
        boolean listed = args[i] instanceof Collection<?> c
            && parameters.containsValue(String.join(", ", c.stream().map(String::valueOf).toList()));
        if (!parameters.containsValue(String.valueOf(args[i])) && !listed) {
          problems.add(signature + ": argument " + i + " (" + args[i] + ") is not among its parameters " + parameters);
        }
      }
      if (culprits == 0) toldNothing.add(signature);
    }
    assertEquals("factories whose arguments this test cannot make", SKIPPED, skipped);
    assertEquals("factories told nothing to name: name a culprit, or list it in NOTHING_TO_NAME",
        new TreeSet<>(NOTHING_TO_NAME), toldNothing);
    assertEquals(List.of(), problems);
  }

  /** A distinct sample per argument (so each can be found among the parameters), or null if one cannot be made. */
  private static Object[] samples(Class<?>[] types) {
    Object[] out = new Object[types.length];
    for (int i = 0; i < types.length; i++) {
      Class<?> t = types[i];
      if (t == String.class) {
        out[i] = "s" + i;
      } else if (t == int.class) {
        out[i] = 100 + i;
      } else if (t == long.class) {
        out[i] = 1000L + i;
      } else if (t == boolean.class) {
        out[i] = true;
      } else if (t == List.class || t == Collection.class) {
        out[i] = List.of("l" + i);
      } else if (t == Set.class) {
        out[i] = Set.of(200 + i);
      } else if (t == java.util.Map.class) {
        out[i] = java.util.Map.of(300 + i, 400L + i);
      } else if (t == KplexException.class) {
        out[i] = Errors.commitTooLate("t" + i, 1, 2, 3);
      } else if (t == Errors.Resource.class) {
        out[i] = Errors.Resource.topic("r" + i);
      } else if (t.isEnum()) {
        out[i] = t.getEnumConstants()[0];
      } else if (t == Object.class) {
        out[i] = "o" + i;
      } else if (Throwable.class.isAssignableFrom(t) && t.isAssignableFrom(RuntimeException.class)) {
        out[i] = new RuntimeException("the cause");
      } else {
        return null;
      }
    }
    return out;
  }

  private static String signature(Method m) {
    return m.getName() + "(" + String.join(",", Arrays.stream(m.getParameterTypes()).map(Class::getSimpleName)
        .toArray(String[]::new)) + ")";
  }

  /** The parameters of {@code e} are these, in this order. */
  private static void assertParameters(KplexException e, String... namesAndValues) {
    List<Map.Entry<String, String>> expected = new ArrayList<>();
    for (int i = 0; i < namesAndValues.length; i += 2) expected.add(Map.entry(namesAndValues[i], namesAndValues[i + 1]));
    assertEquals(e.getMessage(), expected, new ArrayList<>(e.getMessageParameters().entrySet()));
  }

  @Test
  public void aKafkaErrorSaysWhatCausedItWithoutASecretItsCauseEchoes() {
    Exception cause = new IllegalArgumentException("Login module not allowed: org.example.Module",
        new SecurityException("bad JAAS line: username=\"u\" password=\"hunter2\"; token: abc123"));
    String said = Errors.kafka(new RuntimeException("Failed to create new KafkaAdminClient", cause)).getMessage();
    org.junit.Assert.assertTrue(said, said.contains("Failed to create new KafkaAdminClient")
        && said.contains("Login module not allowed: org.example.Module") && said.contains("username=\"u\""));
    org.junit.Assert.assertFalse(said, said.contains("hunter2") || said.contains("abc123"));
  }
}
