package io.kplex.spark.read;

import io.kplex.spark.errors.Errors;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.SortedSet;
import java.util.TreeSet;
import java.util.TreeMap;
import org.apache.spark.sql.connector.read.streaming.Offset;

/**
 * Where a streaming read of one topic stands: the next offset to read per partition, as
 * Spark's Kafka source writes it into the checkpoint ({@code {"topic":{"0":42,"1":17}}}).
 */
public final class SourceOffset extends Offset {
  private static final ObjectMapper JSON = new ObjectMapper();

  final String topic;
  /** Partition -> next offset (exclusive end of what was read). */
  final Map<Integer, Long> next;
  /**
   * How many times the input went idle with records held back: a micro-batch whose end
   * has more than its start releases them ({@link io.kplex.spark.stream.HeldRelease}).
   */
  final long flushes;
  private static final String FLUSHES = "kplex.flushes";
  /**
   * The partitions idle at this offset: read to their end, and empty or without a new record
   * for {@code kplex.idle_timeout_ms}; they do not hold a kplex sink's watermark. Kept in the
   * offset, so a micro-batch Spark runs again after a restart gives the same release.
   */
  final SortedSet<Integer> idle;
  private static final String IDLE = "kplex.idle";
  /**
   * A kplex table's virtual partitions whose physical partition this offset reads to its
   * end, not idle by that partition alone: the sink makes one idle when it has had no record,
   * or none with a higher order value for {@code idleTimeoutMs} before {@link #at}
   * ({@link io.kplex.spark.time.EventTime.Marks#idleOf}), as only the sink sees records.
   */
  final SortedSet<Integer> drained;
  private static final String DRAINED = "kplex.drained";
  /** When the source planned this offset (ms; 0: not recorded), what quietness is measured against. */
  final long at;
  private static final String AT = "kplex.at";
  /**
   * The id of the topic these offsets are of, or null (not known: a checkpoint of an older
   * kplex, a broker before topic ids): a topic deleted and created again under its name has
   * another, and its offsets start again, so no offset of it continues one of the old topic.
   */
  final String topicId;
  private static final String TOPIC_ID = "kplex.topic_id";
  /**
   * The partitions in {@link #next} that the topic no longer has: kept in this one offset, so
   * that planning the micro-batch that ends here reports their loss (once), and left out of the
   * next offset (a partition of that number created again is then read from its beginning).
   */
  final SortedSet<Integer> gone;
  private static final String GONE = "kplex.gone";

  SourceOffset(String topic, Map<Integer, Long> next, long flushes, Set<Integer> idle, Set<Integer> drained,
      long at) {
    this(topic, next, flushes, idle, drained, at, null, Set.of());
  }

  private SourceOffset(String topic, Map<Integer, Long> next, long flushes, Set<Integer> idle, Set<Integer> drained,
      long at, String topicId, Set<Integer> gone) {
    this.topic = topic;
    this.topicId = topicId;
    this.gone = Collections.unmodifiableSortedSet(new TreeSet<>(gone));
    this.next = Collections.unmodifiableMap(new TreeMap<>(next));
    this.flushes = flushes;
    this.idle = Collections.unmodifiableSortedSet(new TreeSet<>(idle));
    this.drained = Collections.unmodifiableSortedSet(new TreeSet<>(drained));
    this.at = at;
  }

  SourceOffset(String topic, Map<Integer, Long> next, long flushes, Set<Integer> idle) {
    this(topic, next, flushes, idle, Set.of(), 0);
  }

  SourceOffset(String topic, Map<Integer, Long> next, long flushes) {
    this(topic, next, flushes, Set.of());
  }

  SourceOffset(String topic, Map<Integer, Long> next) {
    this(topic, next, 0);
  }

  SourceOffset flushed() {
    return new SourceOffset(topic, next, flushes + 1, idle, drained, at, topicId, gone);
  }

  /** The same offsets, with other idle and drained partitions, planned at {@code atMs}. */
  SourceOffset withIdle(Set<Integer> partitions, Set<Integer> drainedVps, long atMs) {
    return new SourceOffset(topic, next, flushes, partitions, drainedVps, atMs, topicId, gone);
  }

  /** The same offsets, of the topic of id {@code id} (null: not known). */
  SourceOffset withTopicId(String id) {
    return new SourceOffset(topic, next, flushes, idle, drained, at, id, gone);
  }

  /** The same offsets, {@code partitions} among them the topic no longer has ({@link #gone}). */
  SourceOffset withGone(Set<Integer> partitions) {
    return new SourceOffset(topic, next, flushes, idle, drained, at, topicId, partitions);
  }

  /** Whether {@code later}'s offsets are of another topic of this name than these (both ids known). */
  boolean recreatedBy(SourceOffset later) {
    return topicId != null && later.topicId != null && !topicId.equals(later.topicId);
  }

  @Override
  public String json() {
    ObjectNode root = JSON.createObjectNode();
    ObjectNode parts = root.putObject(topic);
    next.forEach((p, o) -> parts.put(Integer.toString(p), o));
    if (flushes > 0) root.put(FLUSHES, flushes);
    if (!idle.isEmpty()) idle.forEach(root.putArray(IDLE)::add);
    if (!drained.isEmpty()) drained.forEach(root.putArray(DRAINED)::add);
    if (at > 0) root.put(AT, at);
    if (topicId != null) root.put(TOPIC_ID, topicId);
    if (!gone.isEmpty()) gone.forEach(root.putArray(GONE)::add);
    return root.toString();
  }

  static SourceOffset parse(String topic, String json) {
    try {
      JsonNode root = JSON.readTree(json);
      JsonNode node = root.path(topic);
      if (!node.isObject()) {
        throw Errors.checkpointOfAnotherTopic(json, topic);
      }
      Map<Integer, Long> next = new TreeMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        next.put(Integer.parseInt(e.getKey()), e.getValue().asLong());
      }
      // (An older kplex also wrote "kplex.caught_up"; the event-time rule no longer needs it.)
      Set<Integer> idle = new TreeSet<>();
      root.path(IDLE).forEach(p -> idle.add(p.asInt()));
      Set<Integer> drained = new TreeSet<>();
      root.path(DRAINED).forEach(p -> drained.add(p.asInt()));
      Set<Integer> gone = new TreeSet<>();
      root.path(GONE).forEach(p -> gone.add(p.asInt()));
      return new SourceOffset(topic, next, root.path(FLUSHES).asLong(0), idle, drained, root.path(AT).asLong(0),
          root.path(TOPIC_ID).asText(null), gone);
    } catch (IOException | NumberFormatException e) {
      throw Errors.checkpointUnreadable(json, e);
    }
  }
}
