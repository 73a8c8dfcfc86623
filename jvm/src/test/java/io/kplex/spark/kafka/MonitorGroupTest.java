package io.kplex.spark.kafka;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

import io.kplex.spark.stream.QuerySinks;
import org.junit.Test;

/** The monitoring group's name, and the registry that tells the source its query's table. */
public class MonitorGroupTest {
  @Test
  public void theGroupIsNamedAfterTheTableAndQueryUnlessTheOptionSaysOtherwise() {
    assertEquals("kplex.pageviews_by_user.q1", MonitorGroup.name(null, "pageviews_by_user", "q1"));
    assertEquals("kplex.stream.q1", MonitorGroup.name(null, null, "q1"));
    assertEquals("ops-lag", MonitorGroup.name(" ops-lag ", "t", "q1"));
    assertNull(MonitorGroup.name("false", "t", "q1"));
    assertNull(MonitorGroup.name("NONE", "t", "q1"));
    assertNull(MonitorGroup.name(null, "t", null));
  }

  @Test
  public void theSinkTellsTheSourceItsTableAndOldQueriesAreForgotten() {
    QuerySinks sinks = new QuerySinks(2);
    sinks.writes("q1", "a");
    sinks.writes("q2", "b");
    assertEquals("a", sinks.table("q1"));
    sinks.writes("q3", "c");  // q2 is the least recently used now
    assertNull(sinks.table("q2"));
    assertEquals("a", sinks.table("q1"));
    assertEquals("c", sinks.table("q3"));
  }
}
