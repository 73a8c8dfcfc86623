package io.kplex.spark.describe;

import static org.junit.Assert.assertEquals;

import java.util.List;
import java.util.stream.Collectors;
import org.junit.Test;

/** {@code kplex status}'s JSON as the rows DESCRIBE TABLE EXTENDED appends. */
public class StateRowsTest {
  private static final String BUSY = """
      {"definition":{"kplex.virtual_partitions":"3"},"kind":"kplex-written","table":"t","topic":"t_topic",
       "topic_id":"k3pTDmxrQnmFvOGmLGTvyg","written_topic_id":"k3pTDmxrQnmFvOGmLGTvyg","virtual_partitions":3,
       "partitions":[{"partition":0,"start_offset":0,"end_offset":12,"last_stable_offset":10}],
       "high_order_per_virtual_partition":{"0":1700000000123,"2":-5},
       "writer_claim":{"claimed_at_ms":1700000000000,"renewed_at_ms":1700000001000,"age_ms":9000,"stale":true,"query":"q1"},
       "pending_commit":{"query":"q1","transactions":2,"recovery":"rolls it forward"},
       "partial_commits":["epoch 3 of streaming query q2 into table t was cut short"],
       "open_transactions":[{"transactional_id":"kplex.t.0.0.0","state":"Ongoing","producer_id":7,"epoch":1,"open_ms":50}],
       "streams":[{"query":"(inserts)","last_epoch":4,"held_files":0,"kind":"batch INSERTs"},
                  {"query":"q2","last_epoch":3,"held_files":1,"kind":"streaming query","monitor_group":"kplex.t.q2",
                   "lag":{"src-0":30},"total_lag":30},
                  {"query":"q3","last_epoch":1,"held_files":0,"kind":"streaming query","monitor_group":null}]}
      """;

  private static List<String> rows(List<StateRows.Row> rows) {
    return rows.stream().map(StateRows.Row::toString).collect(Collectors.toList());
  }

  @Test
  public void everyFactOfABusyTableIsARow() {
    assertEquals(List.of(
        " |  | ",
        "# kplex state |  | ",
        "kind | kplex-written | ",
        "topic | t_topic | ",
        "topic id | k3pTDmxrQnmFvOGmLGTvyg | the topic kplex's writes went to",
        "partition 0 offsets | 0..12 | last stable offset 10",
        "vp 0 high order | 1700000000123 | highest order value written",
        "vp 1 high order | none | nothing written",
        "vp 2 high order | -5 | highest order value written",
        "records per vp | not counted | kplex status t --count reads the topic to count them",
        "writer claim | q1 since 2023-11-14T22:13:20.000Z (stale: true) | renewed 2023-11-14T22:13:21.000Z, 9000 ms ago;"
            + " the next write takes it over",
        "pending commit | query q1, 2 transactions | rolls it forward",
        "cut short | epoch 3 of streaming query q2 into table t was cut short | ",
        "open transactions | 1 | ",
        "transaction kplex.t.0.0.0 | Ongoing | producer id 7, epoch 1, open 50 ms",
        "batch INSERTs | last epoch 4, 0 held files | ",
        "query q2 lag | 30 | monitoring group kplex.t.q2; last epoch 3, 1 held files",
        "query q3 lag | unknown | no monitoring group (monitorGroup = false, or no DESCRIBE on groups);"
            + " last epoch 1, 0 held files"), rows(StateRows.of(BUSY)));
  }

  @Test
  public void aQuietTableHasAFreeClaimAndNothingPending() {
    List<String> got = rows(StateRows.of("""
        {"kind":"kplex-written","table":"t","topic":"t","virtual_partitions":1,"partitions":[],
         "high_order_per_virtual_partition":{},"writer_claim":null,"pending_commit":null,"partial_commits":[],
         "open_transactions":[],"open_transactions_error":"cannot list transactions (no ACL)","streams":[]}
        """));
    assertEquals(List.of("writer claim | free | ", "pending commit | none | ",
        "open transactions | unknown | cannot list transactions (no ACL)"), got.subList(6, 9));
  }

  @Test
  public void aTopicCreatedAgainOutsideKplexIsNotTheOneWrittenTo() {
    String state = """
        {"kind":"kplex-written","table":"t","topic":"t","topic_id":"NEW","written_topic_id":"OLD",
         "virtual_partitions":1,"partitions":[],"high_order_per_virtual_partition":%s,"writer_claim":null,
         "pending_commit":null,"partial_commits":[],"open_transactions":[],"streams":[]}
        """;
    assertEquals("topic id | NEW | kplex wrote to topic id OLD, deleted since outside kplex: what it wrote is gone,"
        + " and the next write fails (DROP TABLE, then CREATE TABLE, starts the table over)",
        rows(StateRows.of(state.formatted("{\"0\":7}"))).get(4));
    assertEquals("topic id | NEW | kplex wrote to topic id OLD, deleted since outside kplex: nothing it committed is"
        + " marked, and the next write takes this topic as the table's",
        rows(StateRows.of(state.formatted("{}"))).get(4));
    assertEquals("topic id | NEW | ", rows(StateRows.of(state.replace(",\"written_topic_id\":\"OLD\"", "")
        .formatted("{}"))).get(4));
  }

  @Test
  public void aReadTimeTableHasNoWriterState() {
    assertEquals(List.of(" |  | ", "# kplex state |  | ", "kind | read-time | ",
        "writer state | none | a read-time table reads its source; nothing is written to it"),
        rows(StateRows.of("{\"definition\":{},\"table\":\"v\",\"kind\":\"read-time\"}")));
  }

  @Test
  public void anUnreadableStateSaysWhy() {
    assertEquals(List.of(" |  | ", "# kplex state |  | ", "state | unavailable | no broker"),
        rows(StateRows.unavailable("no broker")));
  }
}
