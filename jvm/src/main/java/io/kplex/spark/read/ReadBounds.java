package io.kplex.spark.read;

import io.kplex.spark.conf.ConfParser;
import io.kplex.spark.errors.Errors;
import io.kplex.spark.errors.KplexException;
import io.kplex.spark.kafka.KafkaTopics;
import io.kplex.spark.spec.KplexOptions;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Where a bounded read starts and ends on each partition, from the read's options (named
 * as in Spark's Kafka source):
 * <ul>
 *   <li>{@code startingOffsets}: {@code earliest} (default), {@code latest}, or
 *       {@code {"topic":{"0":23,"1":-2}}} (-2 earliest, -1 latest; partitions left out
 *       start at the earliest);</li>
 *   <li>{@code endingOffsets} (exclusive): {@code latest} (default: the last stable
 *       offset when the read is planned), {@code earliest}, or the same JSON (partitions
 *       left out end at the latest);</li>
 *   <li>{@code startingTimestamp} / {@code endingTimestamp}: epoch ms; on every partition
 *       the first offset whose record timestamp is at or after it (the end if none), so
 *       the read covers [start, end) by Kafka timestamp when timestamps rise.</li>
 * </ul>
 * Offsets of a read-time table are those of its source topics (the JSON may name each). The result is clamped to
 * what the partition holds. The options are read through {@code conf/ConfParser}, as
 * options.json declares them (a timestamp is a long >= 0); only the offsets JSON, which
 * needs the partitions, is read here.
 */
final class ReadBounds {
  private ReadBounds() {}

  private static final ObjectMapper JSON = new ObjectMapper();

  /**
   * {@code startingOffsets = 'table'}: a stream resumes where the table's last stream stopped
   * (options.json declares the value: kplex.settings.RESUME_FROM_TABLE reads it too).
   */
  static final String FROM_TABLE = io.kplex.spark.spec.OptionSpecs.of(KplexOptions.STARTING_OFFSETS)
      .specialValue("resume_from_table");

  /**
   * [from, until) per partition. The offsets are asked of the broker through {@code kafka}'s
   * Admin client (shared by the JVM's statements), as a consumer of kplex's isolation level
   * sees the log (by default read_committed: the end is the last stable offset); the earliest
   * and the latest in one round trip.
   */
  static Map<TopicPartition, long[]> resolve(KafkaTopics kafka, List<String> topics, List<TopicPartition> tps,
      CaseInsensitiveStringMap options) {
    return resolve(kafka, topics, tps, options, false);
  }

  /**
   * As {@link #resolve(KafkaTopics, List, List, CaseInsensitiveStringMap)}; {@code keepDeleted}:
   * a start given below what the partition holds stays (a stream's first micro-batch reports the
   * offsets the broker deleted, as a data loss, rather than skip them unsaid).
   */
  static Map<TopicPartition, long[]> resolve(KafkaTopics kafka, List<String> topics, List<TopicPartition> tps,
      CaseInsensitiveStringMap options, boolean keepDeleted) {
    Errors.Resource on = Errors.Resource.topics(topics);
    IsolationLevel isolation = kafka.conf().isolation();
    Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
    Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
    for (TopicPartition tp : tps) {
      earliest.put(tp, OffsetSpec.earliest());
      latest.put(tp, OffsetSpec.latest());
    }
    List<Map<TopicPartition, Long>> both = kafka.offsets("READ", on, isolation, List.of(earliest, latest));
    return ranges(topics, tps, options, both.get(0), both.get(1), keepDeleted, query -> {
      Map<TopicPartition, OffsetSpec> at = new HashMap<>();
      query.forEach((tp, ts) -> at.put(tp, OffsetSpec.forTimestamp(ts)));
      Map<TopicPartition, Long> found = new HashMap<>();
      kafka.offsets("READ", on, isolation, List.of(at)).get(0).forEach((tp, offset) -> {
        if (offset >= 0) found.put(tp, offset);
      });
      return found;
    });
  }

  /**
   * {@link #resolve} once the partitions' {@code begin} and {@code end} offsets are known;
   * {@code byTime}: the first offset at or after a timestamp, per partition (none where there
   * is none).
   */
  static Map<TopicPartition, long[]> ranges(List<String> topics, List<TopicPartition> tps,
      CaseInsensitiveStringMap options, Map<TopicPartition, Long> begin, Map<TopicPartition, Long> end,
      Function<Map<TopicPartition, Long>, Map<TopicPartition, Long>> byTime) {
    return ranges(topics, tps, options, begin, end, false, byTime);
  }

  static Map<TopicPartition, long[]> ranges(List<String> topics, List<TopicPartition> tps,
      CaseInsensitiveStringMap options, Map<TopicPartition, Long> begin, Map<TopicPartition, Long> end,
      boolean keepDeleted, Function<Map<TopicPartition, Long>, Map<TopicPartition, Long>> byTime) {
    ConfParser settings = ConfParser.of(options);
    Map<TopicPartition, Long> from = bound(byTime, topics, tps, settings,
        KplexOptions.STARTING_OFFSETS, KplexOptions.STARTING_TIMESTAMP, begin, end, begin);
    Map<TopicPartition, Long> until = bound(byTime, topics, tps, settings,
        KplexOptions.ENDING_OFFSETS, KplexOptions.ENDING_TIMESTAMP, begin, end, end);
    Map<TopicPartition, long[]> ranges = new HashMap<>();
    for (TopicPartition tp : tps) {
      long lo = begin.get(tp);
      long hi = end.get(tp);
      long f = Math.min(hi, from.get(tp));
      if (!keepDeleted) f = Math.max(lo, f);
      long u = Math.max(f, Math.min(hi, until.get(tp)));
      ranges.put(tp, new long[] {f, u});
    }
    return ranges;
  }

  /** A timestamp option, as the settings layer reads it; a bad one named as a bad bound. */
  private static long timestamp(ConfParser settings, String key) {
    try {
      return settings.longConf(key);
    } catch (KplexException e) {
      throw Errors.boundsTimestamp(key, settings.text(key));
    }
  }

  private static Map<TopicPartition, Long> bound(
      Function<Map<TopicPartition, Long>, Map<TopicPartition, Long>> byTime,
      List<String> topics, List<TopicPartition> tps, ConfParser settings, String offsetsKey,
      String timestampKey, Map<TopicPartition, Long> begin, Map<TopicPartition, Long> end,
      Map<TopicPartition, Long> byDefault) {
    String offsets = settings.text(offsetsKey);
    if (offsets != null && settings.isSet(timestampKey)) {
      throw Errors.boundsBoth(offsetsKey, timestampKey);
    }
    if (settings.isSet(timestampKey)) {
      long ts = timestamp(settings, timestampKey);
      Map<TopicPartition, Long> query = new HashMap<>();
      for (TopicPartition tp : tps) query.put(tp, ts);
      Map<TopicPartition, Long> found = byTime.apply(query);
      Map<TopicPartition, Long> result = new HashMap<>();
      for (TopicPartition tp : tps) result.put(tp, found.getOrDefault(tp, end.get(tp)));
      return result;
    }
    if (offsets == null) {
      return byDefault;
    }
    String text = offsets.trim();
    if (text.equalsIgnoreCase("earliest")) return begin;
    if (text.equalsIgnoreCase("latest")) return end;
    if (text.equalsIgnoreCase(FROM_TABLE)) {
      throw Errors.resumeInBatch(offsetsKey);
    }
    JsonNode node;
    try {
      node = JSON.readTree(text);
    } catch (java.io.IOException e) {
      throw Errors.boundsNotJson(offsetsKey, text);
    }
    if (node == null || !node.isObject()) {
      throw Errors.boundsNotObject(offsetsKey, text);
    }
    Map<TopicPartition, Long> result = new HashMap<>(byDefault);
    for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> t = it.next();
      if (!topics.contains(t.getKey())) {
        throw Errors.boundsOtherTopic(offsetsKey, t.getKey(), topics);
      }
      String topic = t.getKey();
      if (!t.getValue().isObject()) {
        throw Errors.boundsNotObject(offsetsKey, text);
      }
      for (Iterator<Map.Entry<String, JsonNode>> ps = t.getValue().fields(); ps.hasNext(); ) {
        Map.Entry<String, JsonNode> p = ps.next();
        TopicPartition tp;
        try {
          tp = new TopicPartition(topic, Integer.parseInt(p.getKey()));
        } catch (NumberFormatException e) {
          throw Errors.boundsPartition(offsetsKey, p.getKey());
        }
        if (!begin.containsKey(tp)) {
          throw Errors.boundsNoPartition(offsetsKey, topic, tp.partition());
        }
        // A whole number: an offset, or -2 (earliest) or -1 (latest), as Spark's Kafka source.
        if (!p.getValue().isIntegralNumber() || !p.getValue().canConvertToLong() || p.getValue().asLong() < -2) {
          throw Errors.boundsOffset(offsetsKey, String.valueOf(p.getValue()));
        }
        long o = p.getValue().asLong();
        result.put(tp, o == -2 ? begin.get(tp) : o == -1 ? end.get(tp) : o);
      }
    }
    return result;
  }
}
