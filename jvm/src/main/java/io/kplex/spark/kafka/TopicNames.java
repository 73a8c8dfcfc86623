package io.kplex.spark.kafka;

import java.util.LinkedHashSet;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Kafka's rule for a topic's name, checked before kplex asks a broker to create or describe
 * one: the broker's own answer, {@code InvalidTopicException}, names neither the topic nor what
 * is wrong with it. The rule is Kafka's ({@code org.apache.kafka.common.internals.Topic}): 1 to
 * 249 characters, each an ASCII letter, digit, '.', '_' or '-', and not "." or "..".
 */
public final class TopicNames {
  /** The longest name Kafka allows (its partitions' directory names must fit 255 bytes). */
  public static final int MAX_LENGTH = 249;

  private TopicNames() {}

  /** What makes {@code topic} illegal as a Kafka topic's name, in words; null if it is legal. */
  public static String problem(String topic) {
    if (topic == null || topic.isEmpty()) {
      return "it is empty";
    }
    if (topic.equals(".") || topic.equals("..")) {
      return "'.' and '..' are not allowed";
    }
    if (topic.length() > MAX_LENGTH) {
      return "it is " + topic.length() + " characters long";
    }
    Set<String> illegal = new LinkedHashSet<>();
    topic.codePoints().filter(c -> !legal(c)).forEach(c -> illegal.add(new String(Character.toChars(c))));
    if (!illegal.isEmpty()) {
      return "it contains " + illegal.stream().map(c -> "'" + c + "'").collect(Collectors.joining(", "));
    }
    return null;
  }

  private static boolean legal(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_'
        || c == '-';
  }
}
