package io.kplex.spark.read;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.kplex.spark.errors.KplexException;
import java.io.IOException;
import java.util.Collections;
import java.util.Iterator;
import java.util.Map;
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
   * Whether the micro-batch ending here read every partition up to its last stable offset
   * of the moment it was planned (no {@code maxOffsetsPerTrigger} cut): all partitions are
   * then cut at one moment, and a kplex sink releases with this batch's own watermark
   * ({@link io.kplex.spark.stream.HeldRelease}).
   */
  final boolean caughtUp;
  private static final String CAUGHT_UP = "kplex.caught_up";

  SourceOffset(String topic, Map<Integer, Long> next, long flushes, boolean caughtUp) {
    this.topic = topic;
    this.next = Collections.unmodifiableMap(new TreeMap<>(next));
    this.flushes = flushes;
    this.caughtUp = caughtUp;
  }

  SourceOffset(String topic, Map<Integer, Long> next) {
    this(topic, next, 0, false);
  }

  SourceOffset flushed() {
    return new SourceOffset(topic, next, flushes + 1, caughtUp);
  }

  @Override
  public String json() {
    ObjectNode root = JSON.createObjectNode();
    ObjectNode parts = root.putObject(topic);
    next.forEach((p, o) -> parts.put(Integer.toString(p), o));
    if (flushes > 0) root.put(FLUSHES, flushes);
    if (caughtUp) root.put(CAUGHT_UP, true);
    return root.toString();
  }

  static SourceOffset parse(String topic, String json) {
    try {
      JsonNode root = JSON.readTree(json);
      JsonNode node = root.path(topic);
      if (!node.isObject()) {
        throw new KplexException("CHECKPOINT", "the checkpoint's offsets " + json + " are not of topic '"
            + topic + "': this checkpoint belongs to a query that read another topic.");
      }
      Map<Integer, Long> next = new TreeMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
        Map.Entry<String, JsonNode> e = it.next();
        next.put(Integer.parseInt(e.getKey()), e.getValue().asLong());
      }
      return new SourceOffset(topic, next, root.path(FLUSHES).asLong(0), root.path(CAUGHT_UP).asBoolean(false));
    } catch (IOException | NumberFormatException e) {
      throw new KplexException("CHECKPOINT", "unreadable offsets in the checkpoint: " + json, e);
    }
  }
}
