"""Reading kplex tables back: the Spark source and the Python reader against a plain consumer.

Tables are written by kplex (INSERT) and read by three doors that share no code path
with each other beyond Kafka: Spark's kplex source, ``kplex.reader`` (confluent-kafka),
and ``kplex.testing.verify.read_topic`` (a plain consumer reading headers).
"""
from __future__ import annotations

import re
import time
import uuid
from collections import defaultdict

import pytest
from pyspark.sql.functions import spark_partition_id
from read_support import (
    consumer_sequences,
    create_materialized,
    pageviews,
    produce,
    python_sequences,
    spark_sequences,
)

from kplex.reader import TableReader, iter_virtual_partition
from kplex.session import read_metrics
from kplex.testing import datagen, verify


@pytest.fixture(scope="module")
def source(bootstrap: str) -> str:
    topic = f"read_roundtrip_{uuid.uuid4().hex[:8]}"
    pageviews(bootstrap, topic, 600, out_of_order_ms=4_000)
    return topic


@pytest.fixture(scope="module")
def by_user(spark, source: str) -> str:
    create_materialized(spark, f"{source}_by_user", source, 9, 3)
    return f"{source}_by_user"


def test_spark_reads_each_virtual_partition_as_one_input_partition_in_the_stored_order(
        spark, bootstrap, by_user):
    df = spark.read.format("kplex").option("table", by_user).load()
    assert df.rdd.getNumPartitions() == 9
    rows = df.withColumn("task", spark_partition_id()).collect()
    assert all(r.task == r.vpartition for r in rows)  # task n holds virtual partition n only
    expected = consumer_sequences(bootstrap, by_user)
    assert spark_sequences(rows) == expected
    assert sum(map(len, expected.values())) == 600
    assert all([o for _, _, o in seq] == sorted(o for _, _, o in seq) for seq in expected.values())


def test_sql_select_returns_kafka_coordinates_and_headers(spark, bootstrap, by_user):
    rows = spark.sql(f"SELECT * FROM kplex.{by_user} WHERE vpartition = 4").collect()
    stored = {(r.partition, r.offset): r for r in verify.read_topic(bootstrap, by_user)}
    assert rows and all(r.vpartition == 4 for r in rows)
    for row in rows:
        plain = stored[(row.partition, row.offset)]
        assert row.topic == by_user and row.partition == 4 % 3
        assert (bytes(row.key), bytes(row.value)) == (plain.key, plain.value)
        assert {h.key: bytes(h.value) for h in row.headers} == plain.headers
        assert int(row.timestamp.timestamp() * 1000) == plain.timestamp


def test_a_filter_on_vpartition_reads_only_those_virtual_partitions(spark, bootstrap, by_user):
    a, b = sorted(consumer_sequences(bootstrap, by_user))[1:3]
    df = spark.sql(f"SELECT * FROM kplex.{by_user} WHERE vpartition IN ({a}, {b})")
    assert df.rdd.getNumPartitions() == 2
    assert {r.vpartition for r in df.collect()} == {a, b}


def test_the_python_reader_gives_each_virtual_partition_as_a_plain_consumer_sees_it(bootstrap, by_user):
    expected = consumer_sequences(bootstrap, by_user)
    for vp in range(9):
        got = python_sequences(iter_virtual_partition(bootstrap, by_user, vp))
        assert got == {vp: expected[vp]} if vp in expected else got == {}
    reader = TableReader(bootstrap, by_user)
    assert python_sequences(reader) == expected
    assert reader.stats.records_out == 600


def test_a_plain_topic_reads_as_its_physical_partitions(spark, bootstrap, source):
    df = spark.table(f"kplex.{source}")
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "headers"]
    assert df.rdd.getNumPartitions() == 3
    got = sorted((r.partition, r.offset, bytes(r.key), bytes(r.value)) for r in df.collect())
    plain = [(r.partition, r.offset, r.key, r.value) for r in verify.read_topic(bootstrap, source)]
    assert got == plain
    assert read_metrics(df)["kplexRecordsRead"] == 600
    python = [(r.partition, r.offset, r.key, r.value) for r in TableReader(bootstrap, source)]
    assert sorted(python) == plain


def test_a_read_can_be_bounded_by_offsets(spark, bootstrap, source):
    df = (spark.read.format("kplex").option("table", source)
          .option("startingOffsets", f'{{"{source}": {{"0": 10, "2": -1}}}}')
          .option("endingOffsets", f'{{"{source}": {{"0": 20}}}}').load())
    offsets = defaultdict(list)
    for r in df.collect():
        offsets[r.partition].append(r.offset)
    stored = defaultdict(list)
    for r in verify.read_topic(bootstrap, source):
        stored[r.partition].append(r.offset)
    assert sorted(offsets[0]) == stored[0][10:20]
    assert sorted(offsets[1]) == stored[1]  # from the earliest to the latest
    assert 2 not in offsets                 # starts at its end


def recent_ms() -> int:
    """A Kafka timestamp a minute ago. Records stamped in 1970 are past the broker's 7-day
    retention: its next retention check (every 5 minutes) deletes them under a running test."""
    return int(time.time() * 1000) - 60_000


def test_a_read_can_be_bounded_by_kafka_timestamps(spark, bootstrap, fresh_name):
    topic = fresh_name("stamped")
    base = recent_ms()
    produce(bootstrap, topic, {p: [{"_time": base + 10 * i + p, "userid": i} for i in range(20)]
                               for p in range(2)}, timestamps=True)
    lo, hi = base + 50, base + 120
    expected = sorted(base + 10 * i + p for i in range(20) for p in range(2)
                      if lo <= base + 10 * i + p < hi)
    df = (spark.read.format("kplex").option("table", topic)
          .option("startingTimestamp", str(lo)).option("endingTimestamp", str(hi)).load())
    assert sorted(int(r.timestamp.timestamp() * 1000) for r in df.collect()) == expected
    python = TableReader(bootstrap, topic, start_timestamp=lo, end_timestamp=hi)
    assert sorted(r.timestamp for r in python) == expected


def test_a_bounded_read_ends_at_the_last_stable_offset_and_finds_partitions_added_since(
        spark, bootstrap, fresh_name):
    # The driver asks the broker for the partitions and their offsets on every statement:
    # a transaction still open on partition 0 ends that partition's read before it (what a
    # read_committed consumer can reach), and a partition added after the session's last
    # statement is read by the next one.
    from confluent_kafka import KafkaException, Producer
    topic = fresh_name("stable")
    base = recent_ms()
    produce(bootstrap, topic, {p: [{"_time": base + i, "userid": i} for i in range(10)] for p in range(2)},
            timestamps=True)
    table = spark.read.format("kplex").option("table", topic)
    assert table.load().count() == 20
    # Open for longer than the test: a read that waited for it to end would not end first.
    open_txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"open-{topic}",
                         "transaction.timeout.ms": 300_000})
    open_txn.init_transactions(30)
    open_txn.begin_transaction()
    open_txn.produce(topic, value=b"not committed", partition=0)
    assert open_txn.flush(30) == 0
    try:
        datagen.grow_topic(bootstrap, topic, 3)
        produce(bootstrap, topic, {2: [{"_time": base + 1_000, "userid": 99}]}, timestamps=True)
        started = time.monotonic()
        rows = table.load().select("partition", "offset", "value").collect()
        assert time.monotonic() - started < 60
        plain = verify.read_topic(bootstrap, topic)
        assert sorted((r.partition, r.offset, bytes(r.value)) for r in rows) == [
            (r.partition, r.offset, r.value) for r in plain]
        assert len(rows) == 21 and {r.partition for r in rows} == {0, 1, 2}
        # A starting timestamp after every record: each partition starts at its end.
        assert table.option("startingTimestamp", str(base + 5_000)).load().count() == 0
    finally:
        try:
            open_txn.abort_transaction(30)
        except KafkaException:  # the broker's timeout aborted it (after a failure above)
            pass


def test_a_plain_topic_read_in_more_pieces_than_partitions_has_every_record_once(spark, bootstrap, source):
    # minPartitions (Spark's Kafka source's option) cuts each partition's offset range into
    # pieces; the pieces must tile it: no record lost at a cut, none read twice.
    df = spark.read.format("kplex").option("table", source).option("minPartitions", "7").load()
    assert df.rdd.getNumPartitions() >= 7
    rows = df.select("partition", "offset", "key", "value", "headers").collect()
    stored = {(r.partition, r.offset): r for r in verify.read_topic(bootstrap, source)}
    assert len(rows) == len(stored) == 600
    assert {(r.partition, r.offset) for r in rows} == set(stored)
    for row in rows:
        plain = stored[(row.partition, row.offset)]
        assert (bytes(row.key), bytes(row.value)) == (plain.key, plain.value)
        assert {h.key: bytes(h.value) for h in row.headers} == plain.headers


def test_a_plain_topic_read_builds_only_the_columns_the_query_uses(spark, bootstrap, source):
    df = spark.read.format("kplex").option("table", source).load().select("value", "offset")
    plan = df._jdf.queryExecution().executedPlan().toString()
    scanned = re.search(r"BatchScan \S+\[([^\]]*)\]", plan).group(1)
    assert [c.split("#")[0] for c in scanned.split(", ")] == ["value", "offset"], plan
    stored = sorted((r.offset, r.value) for r in verify.read_topic(bootstrap, source))
    assert sorted((r.offset, bytes(r.value)) for r in df.collect()) == stored
    assert spark.read.format("kplex").option("table", source).load().count() == 600


def test_a_bad_min_partitions_is_named(spark, source):
    from kplex import errors
    from kplex.errors import translated
    with pytest.raises(errors.OptionError) as raised, translated():
        spark.read.format("kplex").option("table", source).option("minPartitions", "0").load().collect()
    assert "minPartitions" in str(raised.value)
