package io.kplex.spark.kafka;

import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertNull;

import java.util.List;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.internals.Topic;
import org.junit.Test;

/** kplex's topic-name rule says what Kafka's own says, and in words a user can act on. */
public class TopicNamesTest {
  private static final List<String> NAMES = List.of("pageviews", "pageviews_by_user", "a.b", "A-1_b.c", "_kplex_commits",
      "x".repeat(249), "x".repeat(250), "", ".", "..", "...", "bad name!", "ünïcode", "tab\there", "a/b", "a,b", "a:b");

  @Test
  public void aNameIsLegalExactlyWhenKafkaSaysSo() {
    for (String name : NAMES) {
      boolean kafkaAllows;
      try {
        Topic.validate(name);
        kafkaAllows = true;
      } catch (InvalidTopicException e) {
        kafkaAllows = false;
      }
      assertEquals(name, kafkaAllows, TopicNames.problem(name) == null);
    }
  }

  @Test
  public void theProblemIsSaidInWords() {
    assertNull(TopicNames.problem("pageviews_by_user"));
    assertEquals("it contains ' ', '!'", TopicNames.problem("bad name!"));
    assertEquals("it is 250 characters long", TopicNames.problem("x".repeat(250)));
    assertEquals("'.' and '..' are not allowed", TopicNames.problem(".."));
    assertEquals("it is empty", TopicNames.problem(""));
    assertEquals("it contains 'ü', 'ï'", TopicNames.problem("ünïcode"));
  }
}
