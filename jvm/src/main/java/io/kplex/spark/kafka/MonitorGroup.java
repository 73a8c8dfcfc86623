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
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    next.forEach((p, o) -> offsets.put(new TopicPartition(topic, p), new OffsetAndMetadata(o, "kplex: monitoring only")));
    try {
      kafka.admin().alterConsumerGroupOffsets(group, offsets).all()
          .get(KafkaConf.ADMIN_TIMEOUT_MS, TimeUnit.MILLISECONDS);
      return null;
    } catch (Exception e) {
      if (e instanceof InterruptedException) Thread.currentThread().interrupt();
      return e;
    }
  }
}
