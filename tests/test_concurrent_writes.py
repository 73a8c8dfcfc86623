"""Concurrent writers. One writer per table at a time (a lease in the commit
log): of two INSERTs into one table at once, one succeeds and the other fails saying so,
and the table holds the rows of exactly one of them, once. Writes into different tables
from one session's threads do not disturb each other.
"""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from kplex.testing import datagen, verify

ROWS = 1_500
SELECT = """kplex_key(kplex_json(value, '/userid')),
       kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)),
       value"""


def create(spark, table: str) -> None:
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              " 'kplex.physical_partitions' = '3')")


def test_two_inserts_into_one_table_at_once_one_succeeds_and_the_other_fails_saying_so(
        spark, bootstrap, fresh_name):
    source, target = fresh_name("views_two"), fresh_name("by_user_two")
    datagen.generate_pageviews(bootstrap, source, ROWS, partitions=3, users=15, seed=21, out_of_order_ms=1_000)
    create(spark, target)
    frame = spark.sql(f"SELECT {SELECT} FROM kplex.{source}")

    def write() -> str:
        # Slow tasks (sleep_ms): each write is still running when the other one starts.
        try:
            frame.write.format("kplex").option("table", target).option("kplex.testing.sleep_ms", "300") \
                .mode("append").save()
            return "ok"
        except Exception as e:  # noqa: BLE001 - the test inspects the message
            return str(e)

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(lambda _: write(), range(2)))
    assert sorted(o == "ok" for o in outcomes) == [False, True], outcomes
    failure = next(o for o in outcomes if o != "ok")
    assert "KPLEX_TABLE_BUSY" in failure and target in failure and "being written by another query" in failure
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == ROWS


def test_twenty_inserts_into_twenty_tables_from_one_sessions_threads_are_each_exactly_once(
        spark, bootstrap, fresh_name):
    source = fresh_name("views_twenty")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=22, out_of_order_ms=1_000)
    targets = [fresh_name(f"by_user_{i}") for i in range(20)]
    for t in targets:
        create(spark, t)

    def insert(target: str) -> None:
        spark.sql(f"INSERT INTO kplex.{target} SELECT {SELECT} FROM kplex.{source}")

    with ThreadPoolExecutor(20) as pool:
        list(pool.map(insert, targets))
    for t in targets:
        report = verify.check_derived_topic(bootstrap, source, t, 9, 3)
        assert report.ok, (t, report.summary())
        assert report.derived_count == 300


def test_kplex_recover_leaves_a_live_write_alone(spark, bootstrap, fresh_name):
    source, target = fresh_name("views_live_recover"), fresh_name("by_user_live_recover")
    datagen.generate_pageviews(bootstrap, source, ROWS, partitions=3, users=15, seed=23)
    create(spark, target)
    frame = spark.sql(f"SELECT {SELECT} FROM kplex.{source}")
    with ThreadPoolExecutor(1) as pool:
        # Slow tasks: the write runs for 20 s or more.
        running = pool.submit(lambda: frame.write.format("kplex").option("table", target)
                              .option("kplex.testing.sleep_ms", "1500").mode("append").save())
        time.sleep(4)
        with pytest.raises(Exception, match="KPLEX_TABLE_BUSY"):
            spark._jvm.io.kplex.spark.KplexAdmin.recover(spark._jsparkSession, "kplex", target)  # noqa: SLF001
        running.result()
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.ok, report.summary()


def test_a_write_right_after_a_streaming_run_ended_finds_the_table_free_round_after_round(
        spark, bootstrap, fresh_name, tmp_path):
    """A streaming run is over (``awaitTermination`` returns) a moment before its thread has
    ended, and its claim is removed by its renewer a moment after that: an INSERT started at
    once, and the query's next run, find the table free every round, and the table holds
    every record of both writers once, in order (a plain consumer's read). A CI run once
    failed [KPLEX_TABLE_BUSY] naming the query's own id."""
    from test_streaming import run_available_now

    source, target = fresh_name("views_runs"), fresh_name("by_user_runs")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target)
    rounds = 6
    # Each round's INSERT reads its own topic, made beforehand: nothing but a pause stands
    # between a run's end and the INSERT, 0 to 1 s (the renewer looks for the run's end every
    # second). Its records come after the run's, before the next round's.
    inserted = [fresh_name(f"views_after_run_{r}") for r in range(rounds)]
    for r, topic in enumerate(inserted):
        datagen.generate_pageviews(bootstrap, topic, 100, partitions=3, users=15, seed=60 + r,
                                   start_ms=datagen.ARTICLE_START_MS + r * 1_000_000 + 500_000)
    for r in range(rounds):
        datagen.generate_pageviews(bootstrap, source, 100, partitions=3, users=15, seed=70 + r, create=False,
                                   start_ms=datagen.ARTICLE_START_MS + r * 1_000_000)
        query = run_available_now(spark, source, target, tmp_path / "chk")
        assert query.exception() is None, query.exception()
        time.sleep(r * 0.2)
        spark.sql(f"INSERT INTO kplex.{target} SELECT {SELECT} FROM kplex.{inserted[r]}")
    written = [record for topic in [source, *inserted] for record in verify.read_topic(bootstrap, topic)]
    report = verify.check_records(written, verify.read_topic(bootstrap, target), 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == rounds * 200


@pytest.mark.parametrize("if_not_exists", [True, False], ids=["if_not_exists", "plain"])
def test_sessions_creating_one_table_at_once_never_fail_on_the_topic_another_made(
        spark, bootstrap, fresh_name, if_not_exists):
    """A scheduler that runs one SQL file twice at once: sessions CREATE the same table together.
    Whichever makes the topic first, the others find the table there (IF NOT EXISTS: nothing to
    do; plain CREATE: Spark's "already exists"), never Kafka's TopicExists; the table is usable."""
    sessions = [spark.newSession() for _ in range(4)]
    clause = "IF NOT EXISTS " if if_not_exists else ""
    for round_ in range(3):
        table = fresh_name(f"raced_{round_}")
        statement = (f"CREATE TABLE {clause}kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '6',"
                     " 'kplex.physical_partitions' = '3')")
        gate = threading.Barrier(len(sessions))

        def create_in(session) -> str:
            gate.wait()
            try:
                session.sql(statement)
                return "ok"
            except Exception as e:  # noqa: BLE001 - the test inspects the message
                return str(e)

        with ThreadPoolExecutor(len(sessions)) as pool:
            outcomes = list(pool.map(create_in, sessions))
        assert "ok" in outcomes, outcomes
        failures = [o for o in outcomes if o != "ok"]
        if if_not_exists:
            assert not failures, failures
        else:
            assert all("TABLE_OR_VIEW_ALREADY_EXISTS" in f or "already exists" in f for f in failures), failures
        spark.sql(f"INSERT INTO kplex.{table} SELECT kplex_key(CAST(id AS STRING)), kplex_order(id),"
                  " CAST(id AS STRING) FROM range(30)")
        assert sorted(int(r.key) for r in verify.read_topic(bootstrap, table)) == list(range(30))
