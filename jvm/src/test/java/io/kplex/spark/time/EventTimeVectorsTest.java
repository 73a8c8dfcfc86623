package io.kplex.spark.time;

import static org.junit.Assert.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntBinaryOperator;
import org.junit.Test;

/**
 * The streaming gate against the read-time merge's vectors (tests/vectors/event_time_merge.json,
 * which the read-time reader in Java and the Python reader are pinned to as well): every
 * pacing of a case's partitions through micro-batches, ended by the end of the input,
 * writes the vectors' sequence and finds the vectors' late records. One rule, three readers.
 */
public class EventTimeVectorsTest {
  private static final JsonNode CASES = Vectors.load("event_time_merge.json").get("cases");

  /** A pacing: how many more records of partition p batch b reads. */
  private static final Map<String, IntBinaryOperator> PACINGS = Map.of(
      "all in one micro-batch", (batch, p) -> Integer.MAX_VALUE,
      "one record per partition per micro-batch", (batch, p) -> 1,
      "partition 0 read far ahead", (batch, p) -> p == 0 ? 3 : 1,
      "partition 0 visible only from the third micro-batch", (batch, p) -> p == 0 && batch < 2 ? 0 : 2,
      "the last partition first", (batch, p) -> batch < 2 ? (p == 0 ? 0 : Integer.MAX_VALUE) : Integer.MAX_VALUE);

  /** A source record (a class, not a record: Gradle 4.4's test scanner cannot read records). */
  private static final class Rec {
    final int partition;
    final long offset;
    final long order;
    final byte[] key;
    final byte[] value;

    Rec(int partition, long offset, long order, byte[] key, byte[] value) {
      this.partition = partition;
      this.offset = offset;
      this.order = order;
      this.key = key;
      this.value = value;
    }

    long order() {
      return order;
    }

    byte[] key() {
      return key;
    }

    byte[] value() {
      return value;
    }

    String id() {
      return "[" + partition + ", " + offset + "]";
    }

    /** What the written sequence shows of a record: equal triples are indistinguishable. */
    String shown() {
      return order + "/" + (key == null ? "null" : new String(key, java.nio.charset.StandardCharsets.ISO_8859_1)) + "/"
          + (value == null ? "null" : new String(value, java.nio.charset.StandardCharsets.ISO_8859_1));
    }
  }

  @Test
  public void everyPacingOfEveryCaseWritesTheVectorsSequenceAndFindsItsLateRecords() {
    for (JsonNode c : CASES) {
      Map<String, Rec> byId = new HashMap<>();
      List<List<Rec>> partitions = new ArrayList<>();
      for (JsonNode p : c.get("partitions")) {
        List<Rec> records = new ArrayList<>();
        for (JsonNode r : p.get("records")) {
          Rec rec = new Rec(partitions.size(), r.get("offset").asLong(), r.get("order").asLong(),
              Vectors.bytes(r, "key"), Vectors.bytes(r, "value"));
          records.add(rec);
          byId.put(rec.id(), rec);
        }
        partitions.add(records);
      }
      List<String> expected = new ArrayList<>();
      for (JsonNode id : c.get("released")) expected.add(byId.get(pair(id)).shown());
      List<String> expectedLate = new ArrayList<>();
      for (JsonNode id : c.get("late")) expectedLate.add(pair(id));
      expectedLate.sort(null);
      for (Map.Entry<String, IntBinaryOperator> pacing : PACINGS.entrySet()) {
        String name = c.get("name").asText() + " (" + pacing.getKey() + ")";
        List<String> written = new ArrayList<>();
        List<String> late = new ArrayList<>();
        stream(partitions, c.get("max_delay_ms").asLong(), pacing.getValue(), written, late);
        late.sort(null);
        assertEquals(name, expected, written);
        assertEquals(name, expectedLate, late);
      }
    }
  }

  private static String pair(JsonNode id) {
    return "[" + id.get(0).asInt() + ", " + id.get(1).asLong() + "]";
  }

  /** Micro-batches as the pacing cuts them, one writer task, then the end of the input. */
  private static void stream(List<List<Rec>> partitions, long maxDelayMs, IntBinaryOperator pacing,
      List<String> written, List<String> late) {
    int[] ids = new int[partitions.size()];
    for (int p = 0; p < ids.length; p++) ids[p] = p;
    int[] next = new int[partitions.size()];
    EventTime.Marks marks = EventTime.Marks.NONE;
    List<EventTimeGate.Item<Rec>> held = List.of();
    EventTimeGate.Out<Rec> out = new EventTimeGate.Out<>() {
      @Override public void write(EventTimeGate.Item<Rec> item) { written.add(item.payload().shown()); }
      @Override public void late(EventTimeGate.Item<Rec> item, EventTime.Late why, long bound) {
        late.add(item.payload().id());
      }
    };
    for (int batch = 0; ; batch++) {
      boolean more = false;
      for (int p = 0; p < next.length; p++) more |= next[p] < partitions.get(p).size();
      EventTimeGate<Rec> gate = new EventTimeGate<>(marks, ids, maxDelayMs, !more, held, out);
      List<EventTimeGate.Item<Rec>> items = new ArrayList<>();
      Map<EventTimeGate.Item<Rec>, long[]> position = new HashMap<>();
      for (int p = 0; p < next.length; p++) {
        List<Rec> records = partitions.get(p);
        long take = Math.min(records.size() - next[p], (long) pacing.applyAsInt(batch, p));
        long high = Long.MIN_VALUE;
        for (int i = 0; i < take; i++) {
          Rec r = records.get(next[p]++);
          EventTimeGate.Item<Rec> item = new EventTimeGate.Item<>(r, r.order(), r.key(), r.value(), 0);
          items.add(item);
          position.put(item, new long[] {p, high});
          high = Math.max(high, r.order());
        }
      }
      items.sort(EventTimeGate.ORDER);  // as Spark's sort hands them to the task
      for (EventTimeGate.Item<Rec> item : items) {
        long[] at = position.get(item);
        gate.add(item, (int) at[0], at[1]);
      }
      held = gate.commit();
      marks = marks.after(gate.read(), gate.written());
      if (!more) return;
    }
  }
}
