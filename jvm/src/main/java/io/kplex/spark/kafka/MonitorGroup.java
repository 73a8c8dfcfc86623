package io.kplex.spark.kafka;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/**
 * The offsets a streaming query has committed exactly once, committed again to a consumer
 * group for monitoring only ({@code kafka-consumer-groups.sh --describe}, Burrow,
 * kafka-lag-exporter): kplex never reads them back, a restart resumes from the checkpoint.
 * A failure (no READ ACL on the group, a broker away) never fails the query: the caller
 * gets it back, to log once.
 */
public final class MonitorGroup {
  /** The option of a streaming read that names the group, or turns it off ({@code false}). */
  public static final String OPTION = "monitorGroup";

  private MonitorGroup() {}

  /**
   * The group a query's offsets go to: {@code option} if set (null when it says
   * {@code false} or {@code none}), else {@code kplex.<table>.<query>} for a query writing a
   * kplex table, else {@code kplex.stream.<query>}.
   */
  public static String name(String option, String sinkTable, String query) {
    if (option != null && !option.isBlank()) {
      String o = option.trim();
      return o.equalsIgnoreCase("false") || o.equalsIgnoreCase("none") ? null : o;
    }
    if (query == null) return null;
    return sinkTable != null ? "kplex." + sinkTable + "." + query : "kplex.stream." + query;
  }

  /**
   * Commits {@code next} (partition -> next offset to read) of {@code topic} to {@code group};
   * returns why it failed, or null.
   */
  public static Exception commit(KafkaTopics kafka, String group, String topic, Map<Integer, Long> next) {
    if (group == null || next.isEmpty()) return null;
    try {
      send(kafka, group, topic, next).get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      return null;
    } catch (Exception e) {
      if (e instanceof InterruptedException) Thread.currentThread().interrupt();
      return e;
    }
  }

  /**
   * As {@link #commit}, without waiting: the returned future completes when the group has the
   * offsets, and {@code failed} is called with why it could not (a bad request too).
   */
  public static java.util.concurrent.Future<Void> commitLater(KafkaTopics kafka, String group, String topic,
      Map<Integer, Long> next, java.util.function.Consumer<Throwable> failed) {
    java.util.concurrent.CompletableFuture<Void> done = new java.util.concurrent.CompletableFuture<>();
    try {
      send(kafka, group, topic, next).whenComplete((ok, e) -> {
        if (e != null) failed.accept(e);
        done.complete(null);
      });
    } catch (RuntimeException e) {
      failed.accept(e);
      done.complete(null);
    }
    return done;
  }

  private static org.apache.kafka.common.KafkaFuture<Void> send(KafkaTopics kafka, String group, String topic,
      Map<Integer, Long> next) {
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    next.forEach((p, o) -> offsets.put(new TopicPartition(topic, p), new OffsetAndMetadata(o, "kplex: monitoring only")));
    return kafka.admin().alterConsumerGroupOffsets(group, offsets).all();
  }
}
