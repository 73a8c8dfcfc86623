"""One global event-time order across partitions, and records later than the bound.

The source is like consistent_read.toml's ``clickstream``: one rising clock spread over 6
partitions, each record lagging it by up to a second. A read-time table with V = 1 and
``max_delay_ms`` = 1000 must give one timeline, checked as the seed article does:
``diff times <(sort -n times)`` prints nothing.
"""
from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from read_support import clickstream, create_virtual, produce

from kplex.definitions import read_table_definition
from kplex.errors import LateRecordError, OptionError, translated
from kplex.placement import virtual_partition
from kplex.reader import TableReader
from kplex.session import read_metrics
from kplex.testing import verify

TIME = """CAST(get_json_object(CAST(value AS STRING), "$._time") AS BIGINT)"""
USER = """get_json_object(CAST(value AS STRING), "$.userid")"""


def unsorted_lines(times: list[int], tmp_path: Path) -> str:
    """What ``diff times <(sort -n times)`` prints."""
    path = tmp_path / "times"
    path.write_text("".join(f"{t}\n" for t in times))
    done = subprocess.run(["bash", "-c", f"diff {path} <(sort -n {path})"], capture_output=True,
                          text=True, timeout=60)
    return done.stdout


@pytest.fixture(scope="module")
def clicks(bootstrap: str) -> str:
    topic = "read_clickstream_" + uuid.uuid4().hex[:8]
    produce(bootstrap, topic, clickstream(6, 900, max_lag_ms=1_000))
    return topic


def test_a_plain_read_of_the_partitions_is_not_one_timeline(bootstrap, clicks, tmp_path):
    times = [json.loads(r.value)["_time"] for r in verify.read_topic(bootstrap, clicks)]
    assert unsorted_lines(times, tmp_path) != ""  # the check below has teeth


def test_v_1_over_all_partitions_is_one_global_event_time_order(spark, bootstrap, clicks, fresh_name, tmp_path):
    timeline = fresh_name("timeline")
    create_virtual(spark, timeline, clicks, 1, key="key", order=TIME, max_delay_ms="1000")
    rows = spark.table(f"kplex.{timeline}").collect()
    times = [json.loads(bytes(r.value))["_time"] for r in rows]
    assert len(times) == 900
    assert [r.order_value for r in rows] == times
    assert unsorted_lines(times, tmp_path) == ""
    python = [r.order for r in TableReader(bootstrap, timeline)]
    assert python == times


def test_the_python_reader_orders_a_plain_topic_ad_hoc_by_a_json_pointer(bootstrap, clicks, tmp_path):
    reader = TableReader(bootstrap, clicks, order="/_time", max_delay_ms=1_000)
    times = [json.loads(r.value)["_time"] for r in reader]
    assert len(times) == 900 and unsorted_lines(times, tmp_path) == ""


# A record later than the bound: partition 0 has seen 4000 when 2500 arrives (1500 ms
# behind, bound 1000). Nothing else is late: 3600 on partition 1 is 900 ms behind 4500.
LATE = {"_time": 2_500, "userid": 7, "n": "late"}
SOURCE = {
    0: [{"_time": t, "userid": u, "n": f"a{t}"} for t, u in [(1_000, 1), (2_000, 2), (4_000, 3)]]
       + [LATE] + [{"_time": 5_000, "userid": 4, "n": "a5000"}],
    1: [{"_time": t, "userid": u, "n": f"b{t}"} for t, u in [(1_500, 5), (4_500, 6), (3_600, 7), (6_000, 8)]],
}


@pytest.fixture(scope="module")
def with_late(bootstrap: str) -> str:
    topic = "read_late_" + uuid.uuid4().hex[:8]
    produce(bootstrap, topic, SOURCE)
    return topic


def test_a_record_beyond_the_bound_fails_the_read_by_default(spark, bootstrap, with_late, fresh_name):
    table = fresh_name("strict")
    create_virtual(spark, table, with_late, 3, key=USER, order=TIME, max_delay_ms="1000")
    with pytest.raises(LateRecordError, match=r"offset 3 has order value 2500, 1500 ms behind"), translated():
        spark.table(f"kplex.{table}").collect()
    with pytest.raises(LateRecordError, match=r"offset 3 has order value 2500"):
        list(TableReader(bootstrap, table))


def test_the_drop_policy_leaves_the_late_record_out_and_counts_it_once(spark, bootstrap, with_late, fresh_name):
    table = fresh_name("dropping")
    create_virtual(spark, table, with_late, 3, key=USER, order=TIME, max_delay_ms="1000",
                   late_policy="drop")
    df = spark.table(f"kplex.{table}")
    rows = df.collect()
    expected = sorted(r["n"] for recs in SOURCE.values() for r in recs if r is not LATE)
    assert sorted(json.loads(bytes(r.value))["n"] for r in rows) == expected
    for vp in range(3):
        orders = [r.order_value for r in rows if r.vpartition == vp]
        assert orders == sorted(orders)
    assert read_metrics(df)["kplexLateDropped"] == 1
    reader = TableReader(bootstrap, table)
    assert sorted(json.loads(r.value)["n"] for r in reader) == expected
    assert reader.stats.late_dropped == 1


def test_the_side_topic_policy_sends_the_late_record_there_with_its_placement(
        spark, bootstrap, with_late, fresh_name):
    table, late_topic, python_late = fresh_name("siding"), fresh_name("late"), fresh_name("late_py")
    create_virtual(spark, table, with_late, 3, key=USER, order=TIME, max_delay_ms="1000",
                   late_policy="side_topic", late_topic=late_topic)
    df = spark.table(f"kplex.{table}")
    assert len(df.collect()) == 8
    assert read_metrics(df)["kplexLateToSideTopic"] == 1
    reader = TableReader(bootstrap, table, late_topic=python_late)  # a read may redirect them
    assert len(list(reader)) == 8 and reader.stats.late_to_side_topic == 1
    for topic in (late_topic, python_late):
        [record] = verify.read_topic(bootstrap, topic)
        assert json.loads(record.value) == LATE
        assert record.headers["kplex.order"] == b"2500"
        assert record.headers["kplex.vp"] == str(virtual_partition(b"7", 3)).encode()  # user 7's, by Python's placement
        assert (record.headers["kplex.source_partition"], record.headers["kplex.source_offset"]) == (b"0", b"3")


def test_a_late_records_own_headers_named_as_kplexs_are_replaced_on_the_side_topic(spark, bootstrap, fresh_name):
    """The late record of SOURCE carries headers named as kplex's (as a record read from a kplex
    table would: a stale kplex.vp) and one of its own. On the side topic, from Spark and from the
    Python reader alike, its own is kept and each of kplex's five is there once, kplex's value."""
    stale = [("kplex.vp", b"99"), ("trace", b"t-1"), ("kplex.source_offset", b"999"), ("kplex.order", b"1")]
    source = {p: [dict(r, headers=stale) if r is LATE else r for r in records] for p, records in SOURCE.items()}
    topic, table = fresh_name("late_headed"), fresh_name("siding_headed")
    late_topic, python_late = fresh_name("late_headed_spark"), fresh_name("late_headed_py")
    produce(bootstrap, topic, source)
    create_virtual(spark, table, topic, 3, key=USER, order=TIME, max_delay_ms="1000",
                   late_policy="side_topic", late_topic=late_topic)
    assert len(spark.table(f"kplex.{table}").collect()) == 8
    reader = TableReader(bootstrap, table, late_topic=python_late)
    assert len(list(reader)) == 8
    for side in (late_topic, python_late):
        [record] = verify.read_topic(bootstrap, side)
        assert list(record.header_list) == [
            ("trace", b"t-1"), ("kplex.vp", str(virtual_partition(b"7", 3)).encode()), ("kplex.order", b"2500"),
            ("kplex.source_topic", topic.encode()), ("kplex.source_partition", b"0"),
            ("kplex.source_offset", b"3")], side


def test_a_late_topic_that_is_another_kplex_tables_topic_is_refused_before_anything_is_sent(
        spark, bootstrap, with_late, fresh_name):
    """A late record goes to a partition of the producer's choosing with kplex's headers: in the
    topic of a kplex table it would land in that table's virtual partitions, out of their order
    and outside its commits. A write, a read-time table's CREATE, a read's override and the
    Python reader each refuse such a late topic, naming option, topic and both tables; the
    Python reader refuses a source of the read and kplex's own topics too, as Spark does."""
    other, writer, live = fresh_name("late_target"), fresh_name("late_writer"), fresh_name("late_reader")
    spark.sql(f"CREATE TABLE kplex.{other} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    spark.sql(f"INSERT INTO kplex.{other} SELECT kplex_key(CAST(id AS STRING)), kplex_order(id),"
              " CAST('v' AS BINARY) FROM range(6)")
    before = sorted((r.partition, r.offset) for r in verify.read_topic(bootstrap, other))
    assert len(before) == 6

    def refusal(table: str) -> str:
        return (f"[KPLEX_BAD_OPTION] option 'kplex.late_topic' = '{other}' of table {table} names the topic"
                f" of kplex table {other}: late records would land in its virtual partitions")

    spark.sql(f"CREATE TABLE kplex.{writer} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              f" 'kplex.physical_partitions' = '3', 'kplex.late_policy' = 'side_topic', 'kplex.late_topic' = '{other}')")
    with pytest.raises(OptionError) as raised, translated():
        spark.sql(f"INSERT INTO kplex.{writer} SELECT kplex_key(CAST(id AS STRING)), kplex_order(id),"
                  " CAST('v' AS BINARY) FROM range(6)")
    assert str(raised.value).startswith(refusal(writer)), raised.value
    assert verify.read_topic(bootstrap, writer, isolation="read_uncommitted") == []
    with pytest.raises(OptionError) as raised, translated():
        create_virtual(spark, live, with_late, 3, key=USER, order=TIME, max_delay_ms="1000",
                       late_policy="side_topic", late_topic=other)
    assert str(raised.value).startswith(refusal(live)), raised.value
    assert read_table_definition(bootstrap, live) is None
    create_virtual(spark, live, with_late, 3, key=USER, order=TIME, max_delay_ms="1000", late_policy="drop")
    with pytest.raises(OptionError) as raised, translated():
        (spark.read.format("kplex").option("table", live).option("kplex.late_policy", "side_topic")
         .option("kplex.late_topic", other).load().collect())
    assert str(raised.value).startswith(refusal(live)), raised.value
    with pytest.raises(OptionError) as raised:
        list(TableReader(bootstrap, live, late_policy="side_topic", late_topic=other))
    assert str(raised.value).startswith(refusal(live)), raised.value
    with pytest.raises(OptionError, match=f"the late topic must not be a source topic \\('{with_late}'\\)"):
        list(TableReader(bootstrap, live, late_policy="side_topic", late_topic=with_late))
    with pytest.raises(OptionError, match="names a topic of Kafka's or kplex's own"):
        list(TableReader(bootstrap, live, late_policy="side_topic", late_topic="_kplex_commits"))
    assert sorted((r.partition, r.offset) for r in verify.read_topic(bootstrap, other)) == before
    # The check does not refuse what it should let through: a fresh topic takes the late record.
    python_late = fresh_name("late_free")
    reader = TableReader(bootstrap, live, late_policy="side_topic", late_topic=python_late)
    assert len(list(reader)) == 8 and len(verify.read_topic(bootstrap, python_late)) == 1


def test_a_read_may_loosen_the_bound(spark, bootstrap, with_late, fresh_name):
    table = fresh_name("loosened")
    create_virtual(spark, table, with_late, 1, key=USER, order=TIME, max_delay_ms="1000")
    rows = spark.read.format("kplex").option("table", table).option("kplex.max_delay_ms", "2000").load().collect()
    assert [r.order_value for r in rows] == sorted(r["_time"] for recs in SOURCE.values() for r in recs)
    assert [r.order for r in TableReader(bootstrap, table, max_delay_ms=2_000)] == [r.order_value for r in rows]
