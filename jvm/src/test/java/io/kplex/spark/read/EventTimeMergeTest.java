package io.kplex.spark.read;

import static org.junit.Assert.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import io.kplex.spark.Vectors;
import java.util.ArrayList;
import java.util.List;
import org.junit.Test;

/**
 * The event-time merge against tests/vectors/event_time_merge.json: the same released
 * sequence and late records however the partitions' polls interleave.
 */
public class EventTimeMergeTest {
  private static final JsonNode CASES = Vectors.load("event_time_merge.json").get("cases");

  /** Feeds the partitions' records in the given order of partitions (one record per entry). */
  private static void check(JsonNode c, List<Integer> schedule, String how) {
    JsonNode partitions = c.get("partitions");
    EventTimeMerge<String> merge = new EventTimeMerge<>(partitions.size(), c.get("max_delay_ms").asLong());
    int[] next = new int[partitions.size()];
    List<String> released = new ArrayList<>();
    List<String> late = new ArrayList<>();
    for (int p = 0; p < partitions.size(); p++) {
      if (partitions.get(p).get("records").size() == 0) merge.end(p);
    }
    for (int p : schedule) {
      JsonNode records = partitions.get(p).get("records");
      JsonNode r = records.get(next[p]++);
      long order = r.get("order").asLong();
      String id = "[" + p + ", " + r.get("offset").asLong() + "]";
      if (merge.isLate(p, order)) {
        late.add(id);
      } else {
        merge.accept(p, order);
        merge.add(new EventTimeMerge.Entry<>(order, Vectors.bytes(r, "key"), Vectors.bytes(r, "value"), p,
            r.get("offset").asLong(), id));
      }
      if (next[p] == records.size()) merge.end(p);
      for (EventTimeMerge.Entry<String> e = merge.poll(); e != null; e = merge.poll()) released.add(e.payload);
    }
    for (EventTimeMerge.Entry<String> e = merge.poll(); e != null; e = merge.poll()) released.add(e.payload);
    String name = c.get("name").asText() + " (" + how + ")";
    assertEquals(name, pairs(c.get("released")), released);
    late.sort(null);
    assertEquals(name, pairs(c.get("late")), late);
  }

  private static List<String> pairs(JsonNode list) {
    List<String> out = new ArrayList<>();
    for (JsonNode p : list) out.add("[" + p.get(0).asInt() + ", " + p.get(1).asLong() + "]");
    return out;
  }

  @Test
  public void partitionsPolledInTurnGiveTheVectorsSequence() {
    for (JsonNode c : CASES) {
      List<Integer> schedule = new ArrayList<>();
      int longest = 0;
      for (JsonNode p : c.get("partitions")) longest = Math.max(longest, p.get("records").size());
      for (int i = 0; i < longest; i++) {
        for (int p = 0; p < c.get("partitions").size(); p++) {
          if (i < c.get("partitions").get(p).get("records").size()) schedule.add(p);
        }
      }
      check(c, schedule, "round robin");
    }
  }

  @Test
  public void partitionsReadOneAfterAnotherGiveTheSameSequence() {
    for (JsonNode c : CASES) {
      for (boolean backwards : new boolean[] {false, true}) {
        List<Integer> schedule = new ArrayList<>();
        int n = c.get("partitions").size();
        for (int k = 0; k < n; k++) {
          int p = backwards ? n - 1 - k : k;
          for (int i = 0; i < c.get("partitions").get(p).get("records").size(); i++) schedule.add(p);
        }
        check(c, schedule, backwards ? "last partition first" : "first partition first");
      }
    }
  }
}
