"""Read-time tables ('kplex.source'): V ordered virtual partitions computed while reading.

The reference is what a materialized INSERT of the same definition wrote, read back
with a plain consumer: the on-the-fly partitions must hold the same rows in the same
order, through Spark and through the Python reader.
"""
from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Producer
from read_support import (
    INSERT,
    USERID,
    consumer_sequences,
    create_materialized,
    create_virtual,
    pageviews,
    produce,
    python_sequences,
    spark_sequences,
)

from kplex.errors import ExpressionError, NullKeyError, OptionError, ReadOnlyTableError, translated
from kplex.placement import virtual_partition
from kplex.reader import TableReader, read_table_definition
from kplex.session import read_metrics
from kplex.testing import datagen, verify

LAG_MS = 3_000


@pytest.fixture(scope="module")
def source(bootstrap: str) -> str:
    """3 partitions keyed by page; viewtime out of order by up to LAG_MS within and across them."""
    topic = f"read_virtual_{uuid.uuid4().hex[:8]}"
    pageviews(bootstrap, topic, 600, out_of_order_ms=LAG_MS)
    return topic


def _scan_tasks(spark, action) -> list[int]:
    """Runs ``action`` in a job group of its own; the task counts of the stages it ran."""
    sc = spark.sparkContext
    group = f"kplex-read-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, "read-time table")
    try:
        action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    tracker = sc.statusTracker()
    stages = {s for j in tracker.getJobIdsForGroup(group) for s in tracker.getJobInfo(j).stageIds}
    return sorted(tracker.getStageInfo(s).numTasks for s in stages if tracker.getStageInfo(s))


def _by_spark_partition(df) -> list[list]:
    """The rows of each Spark partition, in the order the partition yields them."""
    return df.rdd.mapPartitions(lambda rows: [list(rows)]).collect()


@pytest.mark.parametrize("v,p", [(9, 3), (1, 1), (1000, 3)],
                         ids=["V=9 over P=3", "V=1 one global order", "V=1000"])
def test_virtual_partitions_read_on_the_fly_match_a_materialized_insert(
        spark, bootstrap, source, fresh_name, v, p):
    live, stored = fresh_name("live"), fresh_name("stored")
    create_virtual(spark, live, source, v, max_delay_ms=str(LAG_MS))
    create_materialized(spark, stored, source, v, p)
    expected = consumer_sequences(bootstrap, stored)
    assert sum(map(len, expected.values())) == 600

    df = spark.table(f"kplex.{live}")
    partitions = _by_spark_partition(df)
    # Each virtual partition lies in one Spark partition, in one run, in order.
    runs = [r.vpartition for part in partitions for i, r in enumerate(part)
            if i == 0 or part[i - 1].vpartition != r.vpartition]
    assert sorted(runs) == sorted(expected)
    assert spark_sequences(r for part in partitions for r in part) == expected
    rows: list = []
    tasks = _scan_tasks(spark, lambda: rows.extend(df.collect()))
    assert spark_sequences(rows) == expected
    # The source is read once: one task per source partition, each record read once.
    assert 3 in tasks and read_metrics(df)["kplexRecordsRead"] == 600, tasks
    assert python_sequences(TableReader(bootstrap, live)) == expected


def test_selecting_one_virtual_partition_reads_the_source_once_and_returns_only_it(
        spark, bootstrap, source, fresh_name):
    live, stored = fresh_name("live"), fresh_name("stored")
    create_virtual(spark, live, source, 96, max_delay_ms=str(LAG_MS))
    create_materialized(spark, stored, source, 96, 3)
    expected = consumer_sequences(bootstrap, stored)
    vp = max(expected, key=lambda k: len(expected[k]))
    df = spark.table(f"kplex.{live}").where(f"vpartition = {vp}")
    assert "virtual partitions [" + str(vp) + "]" in df._jdf.queryExecution().executedPlan().toString()
    assert spark_sequences(df.collect()) == {vp: expected[vp]}
    assert read_metrics(df)["kplexRecordsRead"] == 600
    assert spark.table(f"kplex.{live}").count() == 600


def test_records_alike_in_two_sources_are_read_by_topic_name_whatever_order_the_source_lists(
        spark, bootstrap, fresh_name):
    """Ties after (order, key, value) go by topic name, then partition, then offset
    (docs/contract.md): in Spark's read as in the Python reader's, with the topics listed in
    'kplex.source' against their names' order."""
    first, second = fresh_name("tie_a"), fresh_name("tie_b")
    assert first < second
    alike = [{"userid": t % 3, "viewtime": 1_000 + 10 * t} for t in range(12)]
    produce(bootstrap, first, {0: alike})
    produce(bootstrap, second, {p: [r for t, r in enumerate(alike) if t % 2 == p] for p in range(2)})
    live = fresh_name("ties")
    create_virtual(spark, live, f"{second}, {first}", 2)
    expected = {}
    for r in alike:
        vp = virtual_partition(str(r["userid"]).encode(), 2)
        expected.setdefault(vp, []).extend([(first, 0, r["viewtime"]), (second, (r["viewtime"] // 10) % 2,
                                                                         r["viewtime"])])
    rows = spark.table(f"kplex.{live}").collect()
    assert {vp: [(r.topic, r.partition, r.order_value) for r in rows if r.vpartition == vp]
            for vp in expected} == expected
    assert {vp: [(r.topic, r.partition, r.order) for r in TableReader(bootstrap, live, vps=[vp])]
            for vp in expected} == expected


def test_several_source_topics_merge_into_one_order_per_virtual_partition(spark, bootstrap, fresh_name):
    """'kplex.source' = 'a, b' equals INSERT ... FROM a UNION ALL ... FROM b, per virtual partition."""
    clicks, views = fresh_name("clicks"), fresh_name("views")
    datagen.generate_pageviews(bootstrap, clicks, 300, partitions=2, users=12, seed=11, out_of_order_ms=LAG_MS)
    datagen.generate_pageviews(bootstrap, views, 300, partitions=3, users=12, seed=12, out_of_order_ms=LAG_MS)
    live, stored = fresh_name("merged"), fresh_name("stored")
    create_virtual(spark, live, f"{clicks}, {views}", 9, max_delay_ms=str(LAG_MS))
    spark.sql(f"CREATE TABLE kplex.{stored} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              f" 'kplex.physical_partitions' = '3')")
    select = INSERT.split("\n", 1)[1]
    spark.sql(f"INSERT INTO kplex.{stored} " + select.format(source=clicks) + " UNION ALL "
              + select.format(source=views))
    expected = consumer_sequences(bootstrap, stored)
    assert sum(map(len, expected.values())) == 600
    definition = read_table_definition(bootstrap, live)
    assert definition["physical_partitions"] == 5 and definition["source"] == f"{clicks}, {views}"
    df = spark.table(f"kplex.{live}")
    rows = df.collect()
    assert spark_sequences(rows) == expected
    assert {r.topic for r in rows} == {clicks, views}
    assert read_metrics(df)["kplexRecordsRead"] == 600
    assert python_sequences(TableReader(bootstrap, live)) == expected
    # One timeline per virtual partition across both topics: both topics within one vp.
    assert any(len({r.topic for r in rows if r.vpartition == vp}) == 2 for vp in expected)
    # Its rows come from two topics, so a (partition, offset) names none: an INSERT from it
    # records no reads (a stream over the same records judges them by the late rule).
    copy = fresh_name("copy")
    spark.sql(f"CREATE TABLE kplex.{copy} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              f" 'kplex.physical_partitions' = '3')")
    spark.sql(INSERT.format(target=copy, source=live))
    described = {row[0]: row[1] for row in spark.sql(f"DESCRIBE TABLE EXTENDED kplex.{copy}").collect()}
    assert ", read " not in described["batch INSERTs"], described
    plain = fresh_name("plain")
    spark.sql(f"CREATE TABLE kplex.{plain} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              f" 'kplex.physical_partitions' = '3')")
    spark.sql(INSERT.format(target=plain, source=clicks))
    described = {row[0]: row[1] for row in spark.sql(f"DESCRIBE TABLE EXTENDED kplex.{plain}").collect()}
    assert f", read {clicks} 0:[0," in described["batch INSERTs"], described


def test_a_source_whose_records_lack_the_key_is_named(spark, bootstrap, source, fresh_name):
    other = fresh_name("nokey")
    datagen.ensure_topic(bootstrap, other, 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(other, value=b'{"viewtime": 1, "page": "x"}', partition=0)  # no userid
    assert producer.flush(30) == 0
    live = fresh_name("mixed")
    create_virtual(spark, live, f"{source}, {other}", 4, max_delay_ms=str(LAG_MS))
    with pytest.raises(NullKeyError, match=f"source topic '{other}' at partition 0 offset 0"), translated():
        spark.table(f"kplex.{live}").collect()


def test_a_read_time_table_keeps_the_null_policy_it_was_created_under_for_spark_and_kplex_read(
        spark, bootstrap, source, fresh_name):
    """null_key and null_order not given are stored as the session (or catalog) sets them when the
    table is created, as max_delay_ms is: Spark and the Python reader, which reads the definition
    alone, then drop the same records, whatever the session says at read time."""
    other = fresh_name("somekeyless")
    datagen.ensure_topic(bootstrap, other, 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(other, value=b'{"viewtime": 1, "page": "x"}', partition=0)  # no userid
    producer.produce(other, value=b'{"viewtime": 2, "userid": "User_1", "page": "y"}', partition=0)
    assert producer.flush(30) == 0
    live = fresh_name("dropping")
    spark.conf.set("spark.kplex.null_key", "drop")
    try:
        create_virtual(spark, live, f"{source}, {other}", 4, max_delay_ms=str(LAG_MS))
    finally:
        spark.conf.unset("spark.kplex.null_key")
    assert read_table_definition(bootstrap, live)["properties"]["kplex.null_key"] == "drop"
    by_spark = spark_sequences(spark.table(f"kplex.{live}").collect())
    assert python_sequences(TableReader(bootstrap, live)) == by_spark
    values = {value for seq in by_spark.values() for _, value, _ in seq}
    assert b'{"viewtime": 2, "userid": "User_1", "page": "y"}' in values
    assert not any(b'"page": "x"' in v for v in values)


def test_a_source_topic_named_twice_or_missing_is_refused(spark, source, fresh_name):
    with pytest.raises(OptionError, match="names a topic twice"), translated():
        create_virtual(spark, fresh_name("twice"), f"{source}, {source}", 4)
    missing = fresh_name("missing")
    with pytest.raises(Exception, match=missing):
        create_virtual(spark, fresh_name("gone"), f"{source}, {missing}", 4)


def test_a_read_time_table_may_have_a_name_no_topic_can_have(spark, bootstrap, source, fresh_name):
    # It has no topic of its own: a name Kafka refuses for a topic ('.', spaces) is only a table's.
    live, stored = f"`{fresh_name('by user')}.v1`", fresh_name("stored")
    create_virtual(spark, live, source, 9, max_delay_ms=str(LAG_MS))
    create_materialized(spark, stored, source, 9, 3)
    assert spark_sequences(spark.table(f"kplex.{live}").collect()) == consumer_sequences(bootstrap, stored)
    spark.sql(f"DROP TABLE kplex.{live}")
    assert live.strip("`") not in {r.tableName for r in spark.sql("SHOW TABLES IN kplex").collect()}


def test_a_read_time_table_creates_no_topic_and_stores_a_self_describing_definition(
        spark, bootstrap, source, fresh_name):
    live = fresh_name("live")
    create_virtual(spark, live, source, 4)
    definition = read_table_definition(bootstrap, live)
    assert definition["topic"] == source
    assert definition["virtual_partitions"] == 4 and definition["physical_partitions"] == 3
    assert definition["properties"] == {
        "kplex.source": source, "kplex.virtual_partitions": "4", "kplex.physical_partitions": "3",
        "kplex.key": USERID, "kplex.order": definition["properties"]["kplex.order"],
        "kplex.max_delay_ms": "0", "kplex.late_policy": "fail", "kplex.null_key": "fail", "kplex.null_order": "fail"}
    with pytest.raises(ValueError, match="does not exist"):
        verify.read_topic(bootstrap, live, timeout=10)
    assert live in {r.tableName for r in spark.sql("SHOW TABLES IN kplex").collect()}
    # max_delay_ms and late_policy not given are stored as the session (or catalog) sets them
    # when the table is created; a property given wins. Reads resolve them from the definition.
    spark.conf.set("spark.kplex.max_delay_ms", "2500")
    spark.conf.set("spark.kplex.late_policy", "drop")
    try:
        from_session, given = fresh_name("from_session"), fresh_name("given")
        create_virtual(spark, from_session, source, 4)
        create_virtual(spark, given, source, 4, max_delay_ms="7", late_policy="fail")
        # A side_topic policy from the session brings the session's late topic along.
        spark.conf.set("spark.kplex.late_policy", "side_topic")
        spark.conf.set("spark.kplex.late_topic", fresh_name("late"))
        to_side = fresh_name("to_side")
        create_virtual(spark, to_side, source, 4)
        late_topic = spark.conf.get("spark.kplex.late_topic")
    finally:
        for setting in ("max_delay_ms", "late_policy", "late_topic"):
            spark.conf.unset(f"spark.kplex.{setting}")
    stored = {name: read_table_definition(bootstrap, name)["properties"] for name in (from_session, given, to_side)}
    assert (stored[from_session]["kplex.max_delay_ms"], stored[from_session]["kplex.late_policy"]) == ("2500", "drop")
    assert "kplex.late_topic" not in stored[from_session]
    assert (stored[given]["kplex.max_delay_ms"], stored[given]["kplex.late_policy"]) == ("7", "fail")
    assert (stored[to_side]["kplex.late_policy"], stored[to_side]["kplex.late_topic"]) == ("side_topic", late_topic)


def test_writing_into_a_read_time_table_is_refused_and_dropping_it_keeps_the_source(
        spark, bootstrap, source, fresh_name):
    live = fresh_name("live")
    create_virtual(spark, live, source, 4)
    with pytest.raises(ReadOnlyTableError, match=source), translated():
        spark.sql(f"INSERT INTO kplex.{live} SELECT kplex_key('k'), kplex_order(1L), 'v'")
    spark.sql(f"DROP TABLE kplex.{live}")
    assert read_table_definition(bootstrap, live) is None
    assert len(verify.read_topic(bootstrap, source)) == 600


@pytest.mark.parametrize("prop,text,message", [
    ("key", "no_such_column", "no_such_column"),
    ("order", USERID, "STRING"),
    ("order", "rand()", "not deterministic"),
], ids=["unknown column", "order of a wrong type", "non-deterministic"])
def test_a_bad_key_or_order_expression_is_refused_when_the_table_is_created(
        spark, bootstrap, source, fresh_name, prop, text, message):
    live = fresh_name("bad")
    with pytest.raises(ExpressionError, match=message), translated():
        create_virtual(spark, live, source, 4, **{prop: text})
    assert read_table_definition(bootstrap, live) is None


def test_side_topic_policy_needs_a_late_topic(spark, source, fresh_name):
    with pytest.raises(OptionError, match="kplex.late_topic"), translated():
        create_virtual(spark, fresh_name("bad"), source, 4, late_policy="side_topic")
