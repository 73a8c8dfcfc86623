package io.kplex.spark.time;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertThrows;
import static org.junit.Assert.assertTrue;

import io.kplex.spark.time.EventTime.Late;
import io.kplex.spark.time.EventTime.Marks;
import io.kplex.spark.time.EventTimeGate.Item;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.IntBinaryOperator;
import org.junit.Test;

/*
 * The rule of event time (EventTime) and one writer task's gate (EventTimeGate), max delay 10.
 *
 * | situation               | what the rule does                                  | expected                          |
 * |-------------------------|-----------------------------------------------------|-----------------------------------|
 * | pacing                  | a record is judged against its own partition's high  | every cut of the same partitions  |
 * | (all at once, 1 per     | before it; written once below the watermark, the    | writes the same sequence per vp   |
 * | batch, one read ahead)  | minimum of (high - delay) over the partitions       | and finds the same late records   |
 * | a partition with no     | it holds the watermark at Long.MIN_VALUE (strict,   | nothing written until the end of  |
 * | record, not idle        | idleTimeoutMs = -1, or not yet read to its end)     | the input, then the same sequence |
 * | idle partitions         | read to its end and empty, or quiet for the timeout:| the others' watermark releases    |
 * |                         | it holds nothing; all idle: those with a record do  | (none with a record: MIN)         |
 * | a record after idleness | below what its vp holds: late AFTER_IDLE, counted   | late AFTER_IDLE; not below: on    |
 * |                         | apart from BELOW_WRITTEN                            | time, written in order            |
 * | run boundary            | a run stops without releasing; the next starts from | the same as one run               |
 * |                         | the same Marks and held records                     |                                   |
 * | transaction visibility  | a partition whose records become visible late held  | the same as all at once           |
 * |                         | the watermark at MIN meanwhile                      |                                   |
 * | new query / written     | a record below what its vp already has (a flush at  | late BELOW_WRITTEN, bound = the   |
 * | marks                   | the end, another writer, EVERY_VP) cannot be placed | written mark; other vps on time   |
 */
public class EventTimeTest {
  private static final long MIN = Long.MIN_VALUE;
  private static final long DELAY = 10;

  // ---- EventTime.judge and mark

  @Test
  public void aRecordNotBehindItsPartitionIsOnTime() {
    assertEquals(Late.ON_TIME, EventTime.judge(100, 90, MIN, DELAY));
    assertEquals(Late.ON_TIME, EventTime.judge(95, 100, MIN, DELAY));
    assertEquals(Late.ON_TIME, EventTime.judge(5, MIN, MIN, DELAY));
  }

  @Test
  public void aRecordMoreThanTheDelayBehindItsPartitionIsLate() {
    assertEquals(Late.BEHIND_PARTITION, EventTime.judge(89, 100, MIN, DELAY));
    assertEquals(Late.BEHIND_PARTITION, EventTime.judge(80, 100, 96, DELAY));  // before BELOW_WRITTEN
  }

  @Test
  public void aRecordExactlyAtTheBoundIsOnTime() {
    assertEquals(Late.ON_TIME, EventTime.judge(90, 100, MIN, DELAY));
    assertEquals(Late.ON_TIME, EventTime.judge(100, 100, 100, 0));
    assertEquals(Late.BEHIND_PARTITION, EventTime.judge(99, 100, MIN, 0));
  }

  @Test
  public void idlePartitionsDoNotHoldTheWatermarkUntilEveryOneIsIdle() {
    Marks m = new Marks(Map.of(0, 100L, 1, 50L), Map.of());
    int[] all = {0, 1, 2};
    assertEquals("partition 2 has no record: it holds the watermark", MIN, m.watermark(all, DELAY));
    assertEquals("partition 2 idle: the slowest of the others", 40, m.watermark(all, new int[] {2}, DELAY));
    assertArrayEquals(new int[] {1}, m.holding(all, new int[] {2}, DELAY));
    assertEquals(90, m.watermark(all, new int[] {1, 2}, DELAY));
    assertEquals("all idle: those with a record", 40, m.watermark(all, all, DELAY));
    assertEquals("all idle, none with a record", MIN, Marks.NONE.watermark(all, all, DELAY));
  }

  @Test
  public void aDrainedPartitionIsIdleWhenItHasNoRecordOrItsHighHasNotRisenForTheTimeout() {
    // Partition 0 moved at 1,000 ms, partition 1 at 5,000 ms, partition 3 has a high and no time: timeout 3,000.
    Marks m = new Marks(Map.of(0, 100L, 1, 50L, 3, 70L), Map.of(), Set.of(), Map.of(0, 1_000L, 1, 5_000L));
    int[] drained = {0, 1, 2, 3};
    assertArrayEquals("2 empty; 0 quiet since 1,000", new int[] {0, 2}, m.idleOf(drained, 4_000, 3_000));
    assertArrayEquals("1 reaches the timeout exactly", new int[] {0, 1, 2}, m.idleOf(drained, 8_000, 3_000));
    assertArrayEquals("planning time unknown: only the empty one", new int[] {2}, m.idleOf(drained, 0, 3_000));
    assertArrayEquals("strict waiting", new int[0], m.idleOf(drained, 8_000, -1));
    assertArrayEquals("only drained partitions", new int[] {2}, m.idleOf(new int[] {1, 2}, 4_000, 3_000));
  }

  @Test
  public void afterRecordsWhenEachPartitionsHighLastRose() {
    Marks m = new Marks(Map.of(0, 100L, 1, 50L, 3, 70L), Map.of(), Set.of(), Map.of(0, 1_000L, 1, 1_000L));
    Marks next = m.after(Map.of(0, 90L, 1, 60L, 2, 5L), Map.of(), 9_000);
    assertEquals(Map.of(0, 100L, 1, 60L, 2, 5L, 3, 70L), next.highs());
    assertEquals("0 did not rise; 1 rose; 2 is new; 3 had no time",
        Map.of(0, 1_000L, 1, 9_000L, 2, 9_000L, 3, 9_000L), next.moved());
    assertEquals("an unknown planning time records nothing", m.moved(), m.after(Map.of(1, 60L), Map.of(), 0).moved());
    assertEquals(m.moved(), m.after(Map.of(1, 60L), Map.of()).moved());
  }

  @Test
  public void aRecordOnAPartitionThatWasIdleBelowWhatItsVirtualPartitionHoldsIsLateAfterIdle() {
    // Partition 1 was idle when vp 0 was written up to 200; it comes back with 150 (vp 0) and 210 (vp 0).
    Marks before = new Marks(Map.of(0, 195L, 1, 50L), Map.of(0, 200L), Set.of(1));
    List<String> late = new ArrayList<>();
    List<String> written = new ArrayList<>();
    EventTimeGate<String> gate = new EventTimeGate<>(before, new int[] {0, 1}, new int[0], DELAY, true, List.of(),
        new EventTimeGate.Out<>() {
          @Override public void write(Item<String> item) {
            written.add(item.payload());
          }

          @Override public void late(Item<String> item, Late why, long bound) {
            late.add(item.payload() + ":" + why + "@" + bound);
          }
        });
    gate.add(new Item<>("150", 150, "k".getBytes(UTF_8), "v".getBytes(UTF_8), 0), 1, MIN);
    gate.add(new Item<>("210", 210, "k".getBytes(UTF_8), "v".getBytes(UTF_8), 0), 1, 150);
    gate.add(new Item<>("190", 190, "k".getBytes(UTF_8), "v".getBytes(UTF_8), 0), 0, MIN);
    gate.commit();
    assertEquals(List.of("150:AFTER_IDLE@200", "190:BELOW_WRITTEN@200"), late);
    assertEquals(List.of("210"), written);
    assertEquals(1, gate.late(Late.AFTER_IDLE));
    assertEquals(1, gate.late(Late.BELOW_WRITTEN));
  }

  @Test
  public void aRecordAnotherQueryReadAtOrBelowWhatItsVirtualPartitionHoldsIsSkippedNotLateNorWrittenTwice() {
    // Vp 0 holds 200 (written by another query, which read these records before): 150 and 200
    // were written then and are skipped; 210 was not (held back then): it is written. A record
    // this query reads anew (not read before) at 190 is late, as ever.
    Marks before = new Marks(Map.of(0, 195L), Map.of(0, 200L), Set.of());
    List<String> late = new ArrayList<>();
    List<String> written = new ArrayList<>();
    EventTimeGate<String> gate = new EventTimeGate<>(before, new int[] {0}, new int[0], DELAY, true, List.of(),
        new EventTimeGate.Out<>() {
          @Override public void write(Item<String> item) {
            written.add(item.payload());
          }

          @Override public void late(Item<String> item, Late why, long bound) {
            late.add(item.payload() + ":" + why);
          }
        });
    gate.add(new Item<>("150", 150, "k".getBytes(UTF_8), "v".getBytes(UTF_8), 0), 0, MIN, true);
    gate.add(new Item<>("200", 200, "k".getBytes(UTF_8), "v".getBytes(UTF_8), 0), 0, 150, true);
    gate.add(new Item<>("210", 210, "k".getBytes(UTF_8), "v".getBytes(UTF_8), 0), 0, 200, true);
    gate.add(new Item<>("190", 190, "k".getBytes(UTF_8), "v".getBytes(UTF_8), 0), 0, MIN, false);
    gate.commit();
    assertEquals(List.of("210"), written);
    assertEquals(List.of("190:BELOW_WRITTEN"), late);
    assertEquals(2, gate.alreadyWritten());
    assertEquals("skipped records still count for their partition's high", Long.valueOf(210), gate.read().get(0));
  }

  @Test
  public void aHeldRecordIsJudgedAgainWhenReleasedAfterAnotherWriterRaisedItsVirtualPartition() {
    // This query held 150..205 on vp 0 and stopped; an INSERT then wrote vp 0 up to 200, and
    // read 150 from the same source. Released: 150 was written by the INSERT (skipped), 180 is
    // below 200 (late), 200 ties (written), 205 is above (written). Both ways held records come
    // back (placed again, and left in place in a file) are judged alike.
    Marks before = new Marks(Map.of(0, 100L), Map.of(0, 200L), Set.of());
    for (boolean inPlace : new boolean[] {false, true}) {
      List<String> late = new ArrayList<>();
      List<String> written = new ArrayList<>();
      EventTimeGate.Out<String> out = new EventTimeGate.Out<>() {
        @Override public void write(Item<String> item) {
          written.add(item.payload());
        }

        @Override public void late(Item<String> item, Late why, long bound) {
          late.add(item.payload() + ":" + why + "<" + bound);
        }
      };
      List<Item<String>> held = new ArrayList<>();
      for (long o : new long[] {150, 180, 200, 205}) held.add(new Item<>(Long.toString(o), o, k(o), k(o), 0));
      EventTimeGate<String> gate = gate(before, held, inPlace, out).judgingHeld(payload -> payload.equals("150"));
      gate.commit();
      assertEquals(List.of("200", "205"), written);
      assertEquals(List.of("180:BELOW_WRITTEN<200"), late);
      assertEquals(1, gate.alreadyWritten());
      assertEquals(1, gate.late(Late.BELOW_WRITTEN));
    }
  }

  private static byte[] k(long o) {
    return Long.toString(o).getBytes(UTF_8);
  }

  @Test
  public void heldRecordsOfOneOrderValueInAnotherKeyOrderAreReleasedButAnOrderValueGoingBackIsABug() {
    // Files a kplex before millisecond sorting held: ties of one order value by microsecond,
    // so their keys in any order. They are released, whether placed again or left in place.
    Marks before = new Marks(Map.of(0, 100L), Map.of(), Set.of());
    for (boolean inPlace : new boolean[] {false, true}) {
      List<String> written = new ArrayList<>();
      EventTimeGate.Out<String> out = new EventTimeGate.Out<>() {
        @Override public void write(Item<String> item) {
          written.add(item.payload());
        }

        @Override public void late(Item<String> item, Late why, long bound) {
          throw new AssertionError(item.payload());
        }
      };
      List<Item<String>> ties = List.of(new Item<>("z", 150, "z".getBytes(UTF_8), k(1), 0),
          new Item<>("a", 150, "a".getBytes(UTF_8), k(2), 0), new Item<>("b", 160, "b".getBytes(UTF_8), k(3), 0));
      gate(before, ties, inPlace, out).commit();
      assertEquals(List.of("z", "a", "b"), written);
    }
    List<Item<String>> back = List.of(new Item<>("160", 160, k(1), k(1), 0), new Item<>("150", 150, k(2), k(2), 0));
    for (boolean inPlace : new boolean[] {false, true}) {
      EventTimeGate.Out<String> ignore = new EventTimeGate.Out<>() {
        @Override public void write(Item<String> item) {}

        @Override public void late(Item<String> item, Late why, long bound) {}
      };
      IllegalStateException e = assertThrows(IllegalStateException.class,
          () -> gate(before, back, inPlace, ignore).commit());
      assertTrue(e.getMessage(), e.getMessage().contains("order value 150 after 160"));
    }
  }

  /** A gate releasing everything, its held records {@code held} as they come, placed again or left in place. */
  private static EventTimeGate<String> gate(Marks before, List<Item<String>> held, boolean inPlace,
      EventTimeGate.Out<String> out) {
    if (!inPlace) {
      return new EventTimeGate<>(before, new int[] {0}, new int[0], DELAY, true, held.iterator(),
          EventTimeGate.inMemory(), out);
    }
    java.util.Iterator<Item<String>> cursor = held.iterator();
    var head = new java.util.concurrent.atomic.AtomicReference<>(cursor.next());
    EventTimeGate.Run<String> run = new EventTimeGate.Run<>() {
      @Override public Item<String> head() {
        return head.get();
      }

      @Override public void advance() {
        head.set(cursor.hasNext() ? cursor.next() : null);
      }
    };
    return new EventTimeGate<>(before, new int[] {0}, new int[0], DELAY, true, java.util.Collections.emptyIterator(),
        List.of(run), EventTimeGate.inMemory(), out);
  }

  @Test
  public void aRecordBelowWhatItsVirtualPartitionWroteIsLate() {
    assertEquals(Late.BELOW_WRITTEN, EventTime.judge(95, 100, 96, DELAY));
    assertEquals(Late.ON_TIME, EventTime.judge(96, 100, 96, DELAY));
  }

  @Test
  public void theMarkSaturatesAtLongMinValue() {
    assertEquals(MIN, EventTime.mark(MIN, DELAY));
    assertEquals(MIN, EventTime.mark(MIN + DELAY - 1, DELAY));
    assertEquals(MIN, EventTime.mark(MIN + DELAY, DELAY));
    assertEquals(MIN + 1, EventTime.mark(MIN + DELAY + 1, DELAY));
    assertEquals(MIN, EventTime.mark(MIN, Long.MAX_VALUE));
    assertEquals(Late.ON_TIME, EventTime.judge(MIN, MIN, MIN, DELAY));
  }

  // ---- Marks

  @Test
  public void theWatermarkIsTheSmallestMarkAndAPartitionWithNoRecordHoldsItAtMin() {
    Marks m = new Marks(Map.of(0, 100L, 1, 50L), Map.of());
    assertEquals(40, m.watermark(new int[] {0, 1}, DELAY));
    assertEquals(90, m.watermark(new int[] {0}, DELAY));
    assertEquals(MIN, m.watermark(new int[] {0, 1, 2}, DELAY));
    assertEquals(MIN, m.watermark(new int[] {}, DELAY));
    assertEquals(MIN, Marks.NONE.watermark(new int[] {0}, DELAY));
  }

  @Test
  public void aPublishedFloorRaisesEveryPartitionsHighSoNoneHoldsTheWatermarkBelowIt() {
    Marks m = new Marks(Map.of(0, 100L, 1, 50L), Map.of());
    assertEquals("partition 2 has no record", MIN, m.watermark(new int[] {0, 1, 2}, DELAY));
    Marks floored = m.withFloor(new int[] {0, 1, 2}, 70, DELAY);
    assertEquals(Map.of(0, 100L, 1, 80L, 2, 80L), floored.highs());
    assertEquals(70, floored.watermark(new int[] {0, 1, 2}, DELAY));
    assertEquals(m, m.withFloor(new int[] {0, 1, 2}, MIN, DELAY));
    assertEquals(Long.MAX_VALUE, m.withFloor(new int[] {0}, Long.MAX_VALUE - 1, DELAY).high(0));
  }

  @Test
  public void holdingNamesThePartitionsAtTheWatermark() {
    Marks m = new Marks(Map.of(0, 100L, 1, 50L, 2, 50L), Map.of());
    assertArrayEquals(new int[] {1}, m.holding(new int[] {0, 1}, DELAY));
    assertArrayEquals(new int[] {1, 2}, m.holding(new int[] {0, 1, 2}, DELAY));
    assertArrayEquals(new int[] {3}, m.holding(new int[] {0, 1, 3}, DELAY));
  }

  @Test
  public void afterAndWithWrittenAtLeastTakeMaximaAndLeaveTheMarksUnchanged() {
    Marks m = new Marks(Map.of(0, 100L), Map.of(1, 7L));
    Marks next = m.after(Map.of(0, 90L, 1, 20L), Map.of(1, 9L, 2, 3L));
    assertEquals(Map.of(0, 100L, 1, 20L), next.highs());
    assertEquals(Map.of(1, 9L, 2, 3L), next.written());
    assertEquals(Map.of(0, 100L), m.highs());
    assertEquals(Map.of(1, 7L), m.written());
    Marks floored = next.withWrittenAtLeast(Map.of(1, 5L, 2, 4L));
    assertEquals(Map.of(1, 9L, 2, 4L), floored.written());
    assertEquals(next.highs(), floored.highs());
    assertThrows(UnsupportedOperationException.class, () -> m.highs().put(3, 1L));
  }

  @Test
  public void writtenHonoursTheEveryVpKey() {
    Marks m = Marks.of(Map.of(Marks.EVERY_VP, 50L, 1, 70L, 2, 30L));
    assertEquals(70, m.written(1));
    assertEquals(50, m.written(2));
    assertEquals(50, m.written(0));
    assertEquals(MIN, Marks.NONE.written(0));
  }

  // ---- the gate over micro-batches: every pacing writes the same

  /** Per-partition disorder within DELAY (110 after 120 is exactly at the bound); equal orders, other keys. */
  private static final String[] DATA = {
      "100:a 95:b 103:a 110:c 104:b 120:a 115:c 130:b",
      "98:c 101:b 99:a 103:b 112:a 108:c 125:b",
      "90:b 105:c 97:a 120:c 110:b 121:a 119:c 140:a"};

  /** Late: p0#2 (105 < 120-10), p0#4 (111 < 125-10), p1#2 (107 < 118-10). */
  private static final String[] LATE_DATA = {"100:a 120:b 105:c 125:a 111:b", "101:c 118:a 107:b 130:c"};

  /** A pacing: how many more records of partition p micro-batch b reads. */
  private static final Map<String, IntBinaryOperator> PACINGS = new LinkedHashMap<>();
  static {
    PACINGS.put("all at once", (b, p) -> Integer.MAX_VALUE);
    PACINGS.put("one record per partition per micro-batch", (b, p) -> 1);
    PACINGS.put("partition 0 read far ahead of partition 1", (b, p) -> p == 0 ? 4 : 1);
    PACINGS.put("partition 1 visible only from the fourth micro-batch", (b, p) -> p == 1 && b < 3 ? 0 : 2);
    PACINGS.put("the last partition first", (b, p) -> b < 2 ? (p == 2 ? Integer.MAX_VALUE : 0) : Integer.MAX_VALUE);
  }

  private static final IntBinaryOperator NOTHING = (b, p) -> 0;

  @Test
  public void everyPacingWritesEveryRecordInOrderPerVirtualPartitionAndNoneLate() {
    Map<Integer, List<String>> expected = sortedPerVp(parse(DATA), Set.of());
    for (Map.Entry<String, IntBinaryOperator> pacing : PACINGS.entrySet()) {
      Stream s = new Stream(parse(DATA), Marks.NONE).readAll(pacing.getValue());
      assertTrue(pacing.getKey() + ": writes before the end", count(s.written) > 0);
      s.end();
      assertEquals(pacing.getKey(), expected, s.written);
      assertEquals(pacing.getKey(), List.of(), s.late);
    }
  }

  @Test
  public void anIdlePartitionHoldsEverythingBackUntilTheEndOfTheInput() {
    String[] withIdle = {DATA[0], DATA[1], DATA[2], ""};
    Map<Integer, List<String>> expected = sortedPerVp(parse(withIdle), Set.of());
    for (Map.Entry<String, IntBinaryOperator> pacing : PACINGS.entrySet()) {
      Stream s = new Stream(parse(withIdle), Marks.NONE).readAll(pacing.getValue());
      assertEquals(pacing.getKey(), 0, count(s.written));
      assertEquals(pacing.getKey(), expected, s.end().written);
    }
  }

  @Test
  public void aRunThatStopsAndAnotherThatContinuesWriteWhatOneRunWrites() {
    Map<Integer, List<String>> expected = sortedPerVp(parse(DATA), Set.of());
    for (Map.Entry<String, IntBinaryOperator> first : PACINGS.entrySet()) {
      for (Map.Entry<String, IntBinaryOperator> second : PACINGS.entrySet()) {
        for (int stop = 0; stop < 5; stop++) {
          String name = first.getKey() + " for " + stop + " micro-batches, then " + second.getKey();
          Stream s = new Stream(parse(DATA), Marks.NONE);
          for (int i = 0; i < stop && s.more(); i++) s.batch(first.getValue(), false);
          s.batch(NOTHING, false);  // the run's last micro-batch reads nothing and releases nothing extra
          s.restart().readAll(second.getValue()).end();
          assertEquals(name, expected, s.written);
          assertEquals(name, List.of(), s.late);
        }
      }
    }
  }

  @Test
  public void aRecordFarBehindItsPartitionIsLateUnderEveryPacing() {
    List<String> expectedLate = List.of(
        "p0#2 BEHIND_PARTITION 110", "p0#4 BEHIND_PARTITION 115", "p1#2 BEHIND_PARTITION 108");
    Map<Integer, List<String>> expected = sortedPerVp(parse(LATE_DATA), Set.of("p0#2", "p0#4", "p1#2"));
    for (Map.Entry<String, IntBinaryOperator> pacing : PACINGS.entrySet()) {
      Stream s = new Stream(parse(LATE_DATA), Marks.NONE).readAll(pacing.getValue()).end();
      s.late.sort(null);
      assertEquals(pacing.getKey(), expectedLate, s.late);
      assertEquals(pacing.getKey(), expected, s.written);
    }
  }

  @Test
  public void afterTheEndOfTheInputARecordBelowWhatItsVirtualPartitionWroteIsLate() {
    // vp("a") = 1, vp("b") = 2, vp("c") = 0
    Stream s = new Stream(parse("100:a 105:a", "100:b 104:b"), Marks.NONE).readAll(PACINGS.get("all at once")).end();
    assertEquals(105, s.marks.written(1));
    assertEquals(104, s.marks.written(2));
    append(s.partitions, 0, "101:a 101:b 101:c");  // not behind partition 0 (105 - 10), below what vp 1 and 2 wrote
    append(s.partitions, 1, "106:b");
    s.readAll(PACINGS.get("one record per partition per micro-batch")).end();
    assertEquals(List.of("p0#2 BELOW_WRITTEN 105", "p0#3 BELOW_WRITTEN 104"), s.late);
    assertEquals(List.of("101/c/p0#4"), s.written.get(0));
    assertEquals(List.of("100/b/p1#0", "104/b/p1#1", "106/b/p1#2"), s.written.get(2));
  }

  @Test
  public void aNewQueryFindsRecordsBelowAnotherWritersMarksLate() {
    Stream s = new Stream(parse("400:a 400:b 600:a"), Marks.of(Map.of(1, 500L))).readAll((b, p) -> 1).end();
    assertEquals(List.of("p0#0 BELOW_WRITTEN 500"), s.late);
    assertEquals(Map.of(1, List.of("600/a/p0#2"), 2, List.of("400/b/p0#1")), s.written);

    Marks everyVp = Marks.NONE.withWrittenAtLeast(Map.of(Marks.EVERY_VP, 500L));
    Stream t = new Stream(parse("400:a 400:b 600:a"), everyVp).readAll((b, p) -> 1).end();
    assertEquals(List.of("p0#0 BELOW_WRITTEN 500", "p0#1 BELOW_WRITTEN 500"), t.late);
    assertEquals(Map.of(1, List.of("600/a/p0#2")), t.written);
  }

  // ---- the simulator

  /** A source record; its value names it. A class, not a record: Gradle 4.4's test scanner cannot read records. */
  private static final class Rec {
    final int partition;
    final long order;
    final String key;
    final String value;

    Rec(int partition, long order, String key, String value) {
      this.partition = partition;
      this.order = order;
      this.key = key;
      this.value = value;
    }

    Item<Rec> item() {
      return new Item<>(this, order, key.getBytes(UTF_8), value.getBytes(UTF_8), Math.floorMod(key.hashCode(), 3));
    }

    String shown() {
      return order + "/" + key + "/" + value;
    }
  }

  /** One string per source partition, "order:key order:key ..."; values p<partition>#<index>. */
  private static List<List<Rec>> parse(String... partitions) {
    List<List<Rec>> out = new ArrayList<>();
    for (String p : partitions) {
      out.add(new ArrayList<>());
      append(out, out.size() - 1, p);
    }
    return out;
  }

  private static void append(List<List<Rec>> partitions, int p, String records) {
    List<Rec> list = partitions.get(p);
    for (String r : records.trim().split("\\s+")) {
      if (r.isEmpty()) continue;
      String[] ok = r.split(":");
      list.add(new Rec(p, Long.parseLong(ok[0]), ok[1], "p" + p + "#" + list.size()));
    }
  }

  /** All records but the named ones, sorted by ORDER, per virtual partition. */
  private static Map<Integer, List<String>> sortedPerVp(List<List<Rec>> partitions, Set<String> except) {
    List<Item<Rec>> items = new ArrayList<>();
    for (List<Rec> p : partitions) {
      for (Rec r : p) if (!except.contains(r.value)) items.add(r.item());
    }
    items.sort(EventTimeGate.ORDER);
    Map<Integer, List<String>> out = new TreeMap<>();
    for (Item<Rec> i : items) out.computeIfAbsent(i.vp(), vp -> new ArrayList<>()).add(i.payload().shown());
    return out;
  }

  private static int count(Map<Integer, List<String>> written) {
    return written.values().stream().mapToInt(List::size).sum();
  }

  /** A stream read by one writer task: what it carries between micro-batches, and what it wrote. */
  private static final class Stream implements EventTimeGate.Out<Rec> {
    final List<List<Rec>> partitions;
    final int[] next;
    Marks marks;
    List<Item<Rec>> held = List.of();
    int batch;  // within the current run
    final Map<Integer, List<String>> written = new TreeMap<>();
    final List<String> late = new ArrayList<>();

    Stream(List<List<Rec>> partitions, Marks marks) {
      this.partitions = partitions;
      this.next = new int[partitions.size()];
      this.marks = marks;
    }

    @Override
    public void write(Item<Rec> item) {
      written.computeIfAbsent(item.vp(), vp -> new ArrayList<>()).add(item.payload().shown());
    }

    @Override
    public void late(Item<Rec> item, Late why, long bound) {
      late.add(item.payload().value + " " + why + " " + bound);
    }

    boolean more() {
      for (int p = 0; p < next.length; p++) if (next[p] < partitions.get(p).size()) return true;
      return false;
    }

    /** One micro-batch reading pacing(batch, p) more records of each partition p. */
    void batch(IntBinaryOperator pacing, boolean releaseAll) {
      int[] ids = java.util.stream.IntStream.range(0, partitions.size()).toArray();
      EventTimeGate<Rec> gate = new EventTimeGate<>(marks, ids, DELAY, releaseAll, held, this);
      List<Item<Rec>> items = new ArrayList<>();
      Map<Item<Rec>, Long> highInBatch = new IdentityHashMap<>();
      for (int p = 0; p < next.length; p++) {
        List<Rec> records = partitions.get(p);
        long take = Math.min(records.size() - next[p], (long) pacing.applyAsInt(batch, p));
        long high = MIN;
        for (int i = 0; i < take; i++) {
          Item<Rec> item = records.get(next[p]++).item();
          items.add(item);
          highInBatch.put(item, high);
          high = Math.max(high, item.order());
        }
      }
      items.sort(EventTimeGate.ORDER);  // as Spark's sort hands them to the task
      for (Item<Rec> item : items) gate.add(item, item.payload().partition, highInBatch.get(item));
      held = new ArrayList<>(gate.commit());
      marks = marks.after(gate.read(), gate.written());
      batch++;
    }

    /** Micro-batches until every record is read; nothing released beyond the watermark. */
    Stream readAll(IntBinaryOperator pacing) {
      while (more()) {
        batch(pacing, false);
        assertTrue("the pacing makes progress", batch < 1000);
      }
      return this;
    }

    /** The end of the input: a micro-batch that reads nothing and releases everything. */
    Stream end() {
      batch(NOTHING, true);
      assertEquals(List.of(), held);
      return this;
    }

    /** A new run from where this one stopped: the same marks, held records and offsets. */
    Stream restart() {
      batch = 0;
      return this;
    }
  }
}
