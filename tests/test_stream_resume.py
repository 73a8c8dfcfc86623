"""Resume from the table (issue #35): a query on a new checkpoint with
`startingOffsets = 'table'` starts where the table's last stream from the same source stopped,
and takes over what that stream held back, so a changed query loses nothing and writes nothing
twice. Checked with a plain read_committed consumer against the source: across the queries every
record once, each virtual partition in order, none late.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_stream_idle import late, written
from test_streaming import (
    SELECT,
    assert_exactly_once_in_order,
    batch_in_flight_after_progress,
    batches,
    create,
    run_available_now,
    run_driver,
    stream,
    stream_job,
)

from kplex import errors
from kplex.errors import translated
from kplex.placement import canonical_key, virtual_partition
from kplex.streaming import recent_progress
from kplex.testing import datagen, verify

ROOT = Path(__file__).resolve().parents[1]

# The same rows as SELECT, by another projection (a changed query): the order value plus zero.
CHANGED = (SELECT[0], "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT) + 0) AS order_value", SELECT[2])


def held(query) -> int:
    progress = [p for p in recent_progress(query) if "heldRecords" in (p.sink.metrics or {})]
    return int(progress[-1].sink.metrics["heldRecords"])


def stopped_holding(spark, bootstrap: str, source: str, target: str, checkpoint, seed: int) -> int:
    """3,000 records into ``source`` and a table ``target``; query A reads them all and stops
    holding the records of its last 5 s of event time. Returns how many it holds."""
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=15, seed=seed, out_of_order_ms=2_000)
    create(spark, target, delay_ms=5_000)
    a = run_available_now(spark, source, target, checkpoint, maxOffsetsPerTrigger="1000", releaseAtEnd="false")
    assert a.exception() is None, a.exception()
    held_back = held(a)
    assert 0 < held_back and written(bootstrap, target) == 3_000 - held_back
    return held_back


def run_dropping_late(spark, source: str, target: str, checkpoint):
    """``run_available_now`` under the session setting ``kplex.late_policy = drop``."""
    spark.conf.set("spark.kplex.late_policy", "drop")
    try:
        query = run_available_now(spark, source, target, checkpoint)
    finally:
        spark.conf.unset("spark.kplex.late_policy")
    assert query.exception() is None, query.exception()
    return query


def resume(spark, source: str, target: str, checkpoint, select=CHANGED, **read_options: str):
    """A Trigger.AvailableNow run on a new checkpoint that resumes from the table and releases at the end."""
    return run_available_now(spark, source, target, checkpoint, select, startingOffsets="table", **read_options)


def test_a_changed_query_on_a_new_checkpoint_resumes_from_the_table_and_writes_what_the_old_one_held(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("resume_src"), fresh_name("resume_by_user")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=15, seed=7, out_of_order_ms=2_000)
    create(spark, target, delay_ms=5_000)

    # Query A reads everything and stops holding the records of its last 5 s of event time.
    a = stream(spark, source, target, tmp_path / "a", maxOffsetsPerTrigger="1000").trigger(availableNow=True).start()
    a.awaitTermination(300)
    assert a.exception() is None, a.exception()
    assert held(a) > 0 and written(bootstrap, target) == 3_000 - held(a)

    # More records; query B, changed and on a new checkpoint, resumes from the table.
    later = datagen.ARTICLE_START_MS + 3_000 * 500 + 60_000
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=15, seed=8, out_of_order_ms=2_000,
                               create=False, start_ms=later)
    b = resume(spark, source, target, tmp_path / "b")
    assert b.exception() is None, b.exception()
    assert late(b) == 0
    first = recent_progress(b)[0]
    assert first.numInputRows == 2_000, "B reads only what A had not read"
    assert_exactly_once_in_order(bootstrap, source, target, 5_000)
    # The table's state says where B stopped on its source and whom it resumed from.
    described = {row[0]: row[2] for row in spark.sql(f"DESCRIBE TABLE EXTENDED kplex.{target}").collect()}
    assert f"from topic {source} at offsets {{0=" in described[f"query {b.id} lag"], described
    assert f"resumed from {a.id}@" in described[f"query {b.id} lag"], described

    # A, restarted from its own checkpoint, must not write what B took over.
    again = stream(spark, source, target, tmp_path / "a", releaseAtEnd="true").trigger(availableNow=True).start()
    with pytest.raises(errors.QuerySupersededError) as superseded:
        again.awaitTermination(300)
    assert b.id in str(superseded.value) and a.id in str(superseded.value)
    assert superseded.value.getMessageParameters() == {"table": target, "query": a.id, "taken_by": b.id}
    assert written(bootstrap, target) == 5_000

    # And a third query, naming the table, resumes from B.
    datagen.generate_pageviews(bootstrap, source, 500, partitions=3, users=15, seed=9, create=False,
                               start_ms=later + 2_000 * 500 + 60_000)
    c = resume(spark, source, target, tmp_path / "c", select=SELECT, startingTable=f"kplex.{target}")
    assert c.exception() is None, c.exception()
    assert late(c) == 0
    assert_exactly_once_in_order(bootstrap, source, target, 5_500)


def test_a_query_killed_mid_batch_is_resumed_by_a_changed_query_on_a_new_checkpoint(spark, bootstrap, fresh_name,
                                                                                     tmp_path):
    """A, in a driver of its own, is SIGKILLed with a micro-batch in flight (its transactions
    open, its claim unreleased) after committing some; B, changed, resumes from the table: it
    takes the claim over once stale, fences A's transactions and writes the rest and what A held."""
    source, target = fresh_name("resume_kill_src"), fresh_name("resume_kill")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=15, seed=41, out_of_order_ms=2_000)
    create(spark, target)
    chk = tmp_path / "a"
    run_driver(bootstrap, source, target, chk, {"spark.kplex.testing.sleep_ms": "300"},
               kill_when=batch_in_flight_after_progress(chk, 0.4))
    committed = batches(chk, "commits")
    assert 1 <= committed < batches(chk, "offsets"), "killed with a batch in flight, after one committed"
    assert written(bootstrap, target) < 300 * committed, "A held records back"
    b = resume(spark, source, target, tmp_path / "b")
    assert b.exception() is None, b.exception()
    assert late(b) == 0
    assert recent_progress(b)[0].numInputRows == 3_000 - 300 * committed, "B starts where A's last commit stopped"
    assert_exactly_once_in_order(bootstrap, source, target, 3_000)


def test_with_a_held_location_what_a_query_held_outlives_its_deleted_checkpoint(spark, bootstrap, fresh_name,
                                                                                 tmp_path):
    """`kplex.held_location` keeps held records out of the checkpoint: A's checkpoint is deleted,
    B resumes from the table and still writes what A held; without it, B is refused, naming the
    file that is gone, and writes nothing."""
    source, target, bare = fresh_name("resume_gone_src"), fresh_name("resume_gone"), fresh_name("resume_bare")
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=15, seed=31, out_of_order_ms=2_000)
    held_location = tmp_path / "shared"
    create(spark, target, delay_ms=5_000, **{"kplex.held_location": str(held_location)})
    create(spark, bare, delay_ms=5_000)

    a = run_available_now(spark, source, target, tmp_path / "a", releaseAtEnd="false")
    assert a.exception() is None, a.exception()
    assert held(a) > 0
    assert list(held_location.glob(f"{target}/{a.id}/held/*/part-*")), "held files under the held location"
    assert not (tmp_path / "a" / "kplex" / "held").exists(), "and none in the checkpoint"
    shutil.rmtree(tmp_path / "a")
    b = resume(spark, source, target, tmp_path / "b")
    assert b.exception() is None, b.exception()
    assert late(b) == 0
    assert_exactly_once_in_order(bootstrap, source, target, 2_000)

    # Without it, the held files lived in the deleted checkpoint: B is refused, naming one.
    a = run_available_now(spark, source, bare, tmp_path / "bare_a", releaseAtEnd="false")
    assert a.exception() is None, a.exception()
    before = written(bootstrap, bare)
    assert 0 < before < 2_000
    shutil.rmtree(tmp_path / "bare_a")
    with pytest.raises(errors.ResumeFromTableError) as raised:
        resume(spark, source, bare, tmp_path / "bare_b", startingTable=bare)
    assert "kplex.held_location" in str(raised.value)
    parameters = raised.value.getMessageParameters()
    assert parameters["query"] == a.id and str(tmp_path / "bare_a") in parameters["file"]
    assert int(parameters["held_records"]) == 2_000 - before
    assert written(bootstrap, bare) == before


def test_resuming_with_columns_of_another_type_than_the_held_rows_is_refused_naming_the_column(
        spark, bootstrap, fresh_name, tmp_path):
    """Held rows are written as the old query projected them: a query resuming with a column of
    another type is refused before it writes, naming the column; renamed columns are fine."""
    source, target = fresh_name("resume_cols_src"), fresh_name("resume_cols")
    datagen.generate_pageviews(bootstrap, source, 1_000, partitions=3, users=15, seed=47, out_of_order_ms=2_000)
    create(spark, target, delay_ms=5_000)
    a = run_available_now(spark, source, target, tmp_path / "a", releaseAtEnd="false")
    assert a.exception() is None, a.exception()
    before = written(bootstrap, target)
    assert 0 < before < 1_000
    with pytest.raises(errors.StateError) as raised:
        resume(spark, source, target, tmp_path / "b", select=(SELECT[0], SELECT[1], "CAST(value AS STRING) AS value"))
    assert raised.value.getMessageParameters()["columns"] == "column 3: value binary -> value string"
    assert f"query {a.id} held {1_000 - before} records" in str(raised.value)
    assert written(bootstrap, target) == before
    renamed = resume(spark, source, target, tmp_path / "c", select=(SELECT[0], SELECT[1], "value AS payload"))
    assert renamed.exception() is None, renamed.exception()
    assert_exactly_once_in_order(bootstrap, source, target, 1_000)


def test_a_query_that_resumed_a_table_restarts_from_its_checkpoint_after_another_table_is_streamed_from_the_source(
        spark, bootstrap, fresh_name, tmp_path):
    """B resumed table T (`startingOffsets = 'table'`, no `startingTable`: T was the one table
    streamed from the topic). Another stream then writes table U from the same topic. B,
    restarted from its own checkpoint with the same options (first with nothing new to read, a
    micro-batch that only releases what it held, then with more), goes on where it stopped:
    which table to resume is asked once, at its start, not again (it used to fail as ambiguous)."""
    source, target, other = fresh_name("restart_resumed_src"), fresh_name("restart_resumed"), fresh_name("other_table")
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=65)
    create(spark, target, delay_ms=1_000)
    create(spark, other, delay_ms=1_000)
    a = run_available_now(spark, source, target, tmp_path / "a", releaseAtEnd="false")
    assert a.exception() is None, a.exception()
    later = datagen.ARTICLE_START_MS + 600 * 500 + 60_000
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=66, create=False, start_ms=later)
    b = resume(spark, source, target, tmp_path / "b", select=SELECT, releaseAtEnd="false")
    assert b.exception() is None, b.exception()
    u = run_available_now(spark, source, other, tmp_path / "u")
    assert u.exception() is None, u.exception()
    flushed = resume(spark, source, target, tmp_path / "b", select=SELECT)  # nothing new: a batch that releases only
    assert flushed.exception() is None, flushed.exception()
    assert written(bootstrap, target) == 900
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=67, create=False,
                               start_ms=later + 300 * 500 + 60_000)
    again = resume(spark, source, target, tmp_path / "b", select=SELECT)
    assert again.exception() is None, again.exception()
    assert recent_progress(again)[0].numInputRows == 300
    assert late(again) == 0
    assert_exactly_once_in_order(bootstrap, source, target, 1_200)


def test_resuming_from_the_table_over_offsets_the_broker_deleted_since_is_data_loss_or_skips_them(
        spark, bootstrap, fresh_name, tmp_path):
    """The table's stream stops holding records; more arrive, and retention deletes some of
    partition 1's before a query resumes from the table. The resuming query fails with
    [KPLEX_DATA_LOSS] naming them; with failOnDataLoss = false it skips them (counted) and still
    resumes the table's stream, taking over what it held (it used to fail as stale, with no way on)."""
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    from test_streaming import end_offsets

    source, target = fresh_name("resume_deleted_src"), fresh_name("resume_deleted")
    held_back = stopped_holding(spark, bootstrap, source, target, tmp_path / "a", seed=68)
    before = end_offsets(bootstrap, source)
    later = datagen.ARTICLE_START_MS + 3_000 * 500 + 60_000
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=69, create=False, start_ms=later)
    after = end_offsets(bootstrap, source)
    cut = before[1] + (after[1] - before[1]) // 2
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(source, 1, cut)]).values():
        future.result()
    with pytest.raises(Exception) as failure:
        resume(spark, source, target, tmp_path / "b").awaitTermination(10)
    message = str(failure.value)
    assert "KPLEX_DATA_LOSS" in message and f"[{before[1]}, {cut})" in message, message[:2000]
    query = resume(spark, source, target, tmp_path / "c", failOnDataLoss="false")
    assert query.exception() is None, query.exception()
    assert late(query) == 0
    assert written(bootstrap, target) == 3_000 + 600 - (cut - before[1])
    assert held_back > 0


def test_records_a_stopped_stream_held_are_judged_by_an_insert_over_them_not_taken_as_written(
        spark, bootstrap, fresh_name, tmp_path):
    """A reads source X and stops holding records; an INSERT from source Y then writes the table
    beyond them; an INSERT from X reads them again. A read the held records but wrote none, so
    the INSERT judges them by the order rule (late where Y's rows passed them, written where
    not), never takes them as written by A; A, restarted, finds them read by that INSERT and
    skips them. Each held record is written or counted late once (they were lost before: each
    writer took them for the other's)."""
    source, other, target = fresh_name("held_x"), fresh_name("held_y"), fresh_name("held_by_user")
    held_back = stopped_holding(spark, bootstrap, source, target, tmp_path / "a", seed=70)
    later = datagen.ARTICLE_START_MS + 3_000 * 500 + 600_000
    datagen.generate_pageviews(bootstrap, other, 600, partitions=3, users=15, seed=71, start_ms=later)
    spark.conf.set("spark.kplex.late_policy", "drop")
    try:
        spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{other}")
        assert json.loads(spark.conf.get("kplex.last_write"))["rows"] == 600
        spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{source}")
        again = json.loads(spark.conf.get("kplex.last_write"))
        assert again["already_written"] == 3_000 - held_back, (again, held_back)
        assert again["rows"] + again["late"] == held_back and again["late"] > 0, (again, held_back)
        a = run_available_now(spark, source, target, tmp_path / "a", releaseAtEnd="true")
    finally:
        spark.conf.unset("spark.kplex.late_policy")
    assert a.exception() is None, a.exception()
    assert already_written(a) == held_back and late(a) == 0, (already_written(a), late(a))
    values = [r.value for r in verify.read_topic(bootstrap, target)]
    assert len(values) == len(set(values)) == 3_000 - held_back + 600 + again["rows"]


def already_written(query) -> int:
    return sum(int((p.sink.metrics or {}).get("alreadyWritten", "0")) for p in recent_progress(query))


def test_a_new_query_from_earliest_over_what_another_query_wrote_writes_no_record_twice(
        spark, bootstrap, fresh_name, tmp_path):
    """No resume: B and C start from `earliest` on new checkpoints over the table A wrote. What A
    wrote (read by A's stream, at or below what its virtual partition holds) is skipped and
    counted as alreadyWritten, not written twice and not late, under late_policy fail (the
    default) and drop; what A held back when it stopped is above that, so B writes it."""
    source, target = fresh_name("again_src"), fresh_name("again_by_user")
    held_back = stopped_holding(spark, bootstrap, source, target, tmp_path / "a", seed=43)

    b = run_available_now(spark, source, target, tmp_path / "b", maxOffsetsPerTrigger="1000")
    assert b.exception() is None, b.exception()
    assert late(b) == 0 and already_written(b) == 3_000 - held_back
    assert_exactly_once_in_order(bootstrap, source, target, 3_000)

    # A, restarted from its checkpoint with more to read, would release what B wrote since: it
    # is refused, naming B, and writes nothing.
    datagen.generate_pageviews(bootstrap, source, 100, partitions=3, users=15, seed=44, create=False,
                               start_ms=datagen.ARTICLE_START_MS + 3_000 * 500 + 60_000)
    with pytest.raises(errors.QuerySupersededError) as overtaken:
        run_available_now(spark, source, target, tmp_path / "a")
    assert overtaken.value.getMessageParameters()["taken_by"] == b.id
    assert f"{held_back} records" in str(overtaken.value)
    assert written(bootstrap, target) == 3_000

    c = run_dropping_late(spark, source, target, tmp_path / "c")
    assert late(c) == 0 and already_written(c) == 3_000, "C writes only the 100 records no query wrote"
    assert_exactly_once_in_order(bootstrap, source, target, 3_100)


def insert(spark, source: str, target: str) -> dict:
    """A batch INSERT of SELECT's rows from ``source``; returns its summary (kplex.last_write)."""
    spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{source}")
    return json.loads(spark.conf.get("kplex.last_write"))


def late_below_written(query) -> int:
    return sum(int((p.sink.metrics or {}).get("lateBelowWritten", "0")) for p in recent_progress(query))


def assert_in_order(bootstrap: str, target: str, rows: int) -> None:
    """Read back with a plain read_committed consumer: ``rows`` records, none twice, each virtual partition in order."""
    records = verify.read_topic(bootstrap, target)
    assert len(records) == rows
    assert len({r.value for r in records}) == rows, "a record written twice"
    orders: dict[bytes, list[int]] = {}
    for r in records:  # in offset order per partition; a virtual partition lives in one
        orders.setdefault(r.headers["kplex.vp"], []).append(int(r.headers["kplex.order"]))
    for vp, seen in orders.items():
        assert seen == sorted(seen), f"virtual partition {vp!r} out of order"


def test_a_stream_from_earliest_over_what_an_insert_wrote_writes_no_record_twice(spark, bootstrap, fresh_name,
                                                                                  tmp_path):
    """An INSERT from a kplex topic records what it read with its commit. The same INSERT run
    again then writes nothing (every row already written), and a stream from `earliest` on a new
    checkpoint skips what the INSERT wrote as alreadyWritten under late_policy fail (the
    default), writing only the records that came after, once, in order."""
    source, target = fresh_name("insert_then_stream_src"), fresh_name("insert_then_stream")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=15, seed=51, out_of_order_ms=2_000)
    create(spark, target)
    first = insert(spark, source, target)
    assert first["rows"] == 3_000 and first["already_written"] == 0
    described = {row[0]: row[1] for row in spark.sql(f"DESCRIBE TABLE EXTENDED kplex.{target}").collect()}
    assert f"read {source} 0:[0," in described["batch INSERTs"], described
    again = insert(spark, source, target)
    assert again["rows"] == 0 and again["already_written"] == 3_000
    assert written(bootstrap, target) == 3_000

    datagen.generate_pageviews(bootstrap, source, 500, partitions=3, users=15, seed=52, create=False,
                               start_ms=datagen.ARTICLE_START_MS + 3_000 * 500 + 60_000)
    b = run_available_now(spark, source, target, tmp_path / "b")
    assert b.exception() is None, b.exception()
    assert late(b) == 0 and already_written(b) == 3_000
    assert_exactly_once_in_order(bootstrap, source, target, 3_500)


def test_a_record_another_writer_read_through_other_filters_is_late_not_taken_as_written(
        spark, bootstrap, fresh_name, tmp_path):
    """A writer skips what another read only where that writer kept what it keeps: through no
    filter, or the same filters. An INSERT of Page_1's views run again writes nothing twice (the
    same WHERE); an INSERT of Page_2's views over the same offsets finds its rows below what their
    virtual partitions hold: late (dropped and counted here), not counted as already written,
    which the first INSERT never wrote; a stream from `earliest` with Page_1's WHERE skips what
    the INSERT wrote."""
    source, target = fresh_name("filtered_src"), fresh_name("filtered")
    datagen.generate_pageviews(bootstrap, source, 1_500, partitions=3, users=15, pages=5, seed=61)
    create(spark, target)
    page = "kplex_json(value, '/pageid') = '{}'"
    pages = [json.loads(r.value)["pageid"] for r in verify.read_topic(bootstrap, source)]
    ones, twos = pages.count("Page_1"), pages.count("Page_2")
    assert ones > 100 and twos > 100, (ones, twos)

    def insert_where(condition: str) -> dict:
        spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{source} WHERE {condition}")
        return json.loads(spark.conf.get("kplex.last_write"))

    first = insert_where(page.format("Page_1"))
    assert first["rows"] == ones and first["already_written"] == 0, first
    again = insert_where(page.format("Page_1"))
    assert again["rows"] == 0 and again["already_written"] == ones, again
    spark.conf.set("spark.kplex.late_policy", "drop")
    try:
        other = insert_where(page.format("Page_2"))
    finally:
        spark.conf.unset("spark.kplex.late_policy")
    assert other["already_written"] == 0 and other["late"] > 0, other
    assert other["rows"] + other["late"] == twos, other
    stream_b = (spark.readStream.format("kplex").option("table", source).option("startingOffsets", "earliest").load()
                .where(page.format("Page_1")).selectExpr(*SELECT)
                .writeStream.format("kplex").option("table", target)
                .option("checkpointLocation", str(tmp_path / "b")).trigger(availableNow=True).start())
    stream_b.awaitTermination(300)
    assert stream_b.exception() is None, stream_b.exception()
    assert late(stream_b) == 0 and already_written(stream_b) == ones
    values = [r.value for r in verify.read_topic(bootstrap, target)]
    assert len(values) == len(set(values)) == ones + other["rows"]


def test_what_counts_as_the_same_filter_bounds_of_position_aside(spark, bootstrap, fresh_name):
    """Filters compared conjunct by conjunct: INSERTs that read on (bounds of partition and
    offset) through the same page filter keep one read record (not one per INSERT); a filter on the
    offset that keeps some of a range (offset % 2) is a row filter; a subquery's filter is never
    taken for another's (each its own), so another subquery over the same offsets finds its rows late."""
    source, target = fresh_name("same_filter_src"), fresh_name("same_filter")
    datagen.generate_pageviews(bootstrap, source, 900, partitions=3, users=15, pages=5, seed=62)
    create(spark, target)
    spark.conf.set("spark.kplex.late_policy", "drop")
    try:
        def insert_where(condition: str) -> dict:
            spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{source} WHERE {condition}")
            return json.loads(spark.conf.get("kplex.last_write"))

        page = "kplex_json(value, '/pageid') = 'Page_1'"
        for low, high in ((0, 100), (100, 200), (200, 1_000)):  # reading on, through the same page filter
            done = insert_where(f"offset >= {low} AND offset < {high} AND {page}")
            assert done["already_written"] == 0 and done["late"] == 0, done
        reads = inserts_reads(bootstrap, target)
        assert len(reads) == 1 and next(iter(reads)).startswith(f"{source} where "), reads
        # (A range per INSERT and partition: the rows between two INSERTs' kept rows are records of
        # other pages, so no gap is empty; docs/exactly-once.md, what still grows.)
        assert all(len(ranges) <= 3 for ranges in next(iter(reads.values())).values()), reads
        rerun = insert_where(f"{page} AND offset >= 0")  # the same rows, its conjuncts in another order
        assert rerun["rows"] == 0 and rerun["late"] == 0 and rerun["already_written"] > 0, rerun
        even = insert_where("offset % 2 = 0 AND kplex_json(value, '/pageid') = 'Page_2'")
        odd = insert_where("offset % 2 = 1 AND kplex_json(value, '/pageid') = 'Page_2'")
        assert even["already_written"] == 0 and odd["already_written"] == 0, (even, odd)
        first = insert_where("kplex_json(value, '/pageid') IN (SELECT p FROM VALUES ('Page_3') AS t(p))")
        second = insert_where("kplex_json(value, '/pageid') IN (SELECT p FROM VALUES ('Page_4') AS t(p))")
        assert first["already_written"] == 0 and second["already_written"] == 0 and second["late"] > 0, second
    finally:
        spark.conf.unset("spark.kplex.late_policy")


def test_bounds_of_offset_that_pick_ranges_apart_are_a_row_filter(spark, bootstrap, fresh_name):
    """Bounds of partition and offset are left out of a filter's digest only where they pick one
    range of offsets per partition. An INSERT of `offset < 10 OR offset >= 100` (two ranges in each
    partition), or of a cast to text (`'10' < '5'`), read through a filter: the records between,
    inserted later, are judged by the order rule (late here, dropped and counted), never taken as
    already written, which nobody wrote. An OR whose sides each pin a partition of their own still
    reads on: one read record, no filter, and the INSERT of everything after it skips all of it."""
    source = fresh_name("bounds_src")
    datagen.generate_pageviews(bootstrap, source, 600, partitions=2, users=15, pages=5, seed=63)
    per_partition = {p: sum(1 for r in verify.read_topic(bootstrap, source) if r.partition == p) for p in (0, 1)}
    assert min(per_partition.values()) > 100 and max(per_partition.values()) <= 500, per_partition
    spark.conf.set("spark.kplex.late_policy", "drop")
    try:
        def insert_where(target: str, condition: str) -> dict:
            spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{source} WHERE {condition}")
            return json.loads(spark.conf.get("kplex.last_write"))

        holes, text, pinned = fresh_name("bounds_holes"), fresh_name("bounds_text"), fresh_name("bounds_pinned")
        for target in (holes, text, pinned):
            create(spark, target)
        apart = insert_where(holes, "offset < 10 OR offset >= 100")
        assert apart["rows"] + apart["late"] == 600 - 2 * 90, apart
        between = insert_where(holes, "offset >= 10 AND offset < 100")
        assert between["already_written"] == 0 and between["rows"] + between["late"] == 2 * 90, between
        assert between["late"] > 0, between
        as_text = insert_where(text, "CAST(offset AS STRING) < '5'")  # offsets 0-4, 10-49, 100-...
        assert as_text["rows"] + as_text["late"] == sum(n - 5 - 50 for n in per_partition.values()), as_text
        skipped = insert_where(text, "offset BETWEEN 5 AND 9")
        assert skipped["already_written"] == 0 and skipped["rows"] + skipped["late"] == 2 * 5, skipped

        first = insert_where(pinned, "(partition = 0 AND offset < 50) OR (partition = 1.0 AND offset < 70)")
        on = insert_where(pinned, "(partition = 0 AND offset >= 50) OR (partition IN (1) AND offset >= 70)")
        assert first["late"] == 0 and on["already_written"] == 0, (first, on)
        assert set(inserts_reads(bootstrap, pinned)) == {source}, inserts_reads(bootstrap, pinned)
        again = insert_where(pinned, "true")
        assert again["rows"] == 0 and again["late"] == 0 and again["already_written"] == 600, again  # late ones were read too
    finally:
        spark.conf.unset("spark.kplex.late_policy")
    for target, count in ((holes, apart["rows"] + between["rows"]), (text, as_text["rows"] + skipped["rows"]),
                          (pinned, 600 - on["late"])):
        values = [r.value for r in verify.read_topic(bootstrap, target)]
        assert len(values) == len(set(values)) == count, (target, len(values), count)


def inserts_reads(bootstrap: str, table: str) -> dict:
    """What the table's INSERTs read, per source key, as its `_inserts` mark in `_kplex_commits` holds it."""
    from test_control_plane import latest_by_partition

    from kplex.status import control_plane_partition

    mark = latest_by_partition(bootstrap)[control_plane_partition(table)][f"epoch/{table}/_inserts"]
    return json.loads(mark)["reads"]


def test_an_insert_over_what_a_stopped_query_read_writes_what_it_held_and_the_query_restarted_nothing_twice(
        spark, bootstrap, fresh_name, tmp_path):
    """A reads everything and stops holding records. An INSERT of the same source skips what A
    wrote (A's stream read it, and it is not above its virtual partition) and writes what A held.
    A, restarted, finds its held records written by the INSERT (it read them): skipped, not
    late, not written twice."""
    source, target = fresh_name("held_then_insert_src"), fresh_name("held_then_insert")
    held_back = stopped_holding(spark, bootstrap, source, target, tmp_path / "a", seed=54)
    summary = insert(spark, source, target)
    assert summary["rows"] == held_back and summary["already_written"] == 3_000 - held_back
    restarted = run_available_now(spark, source, target, tmp_path / "a")
    assert restarted.exception() is None, restarted.exception()
    assert late(restarted) == 0 and already_written(restarted) == held_back
    assert_exactly_once_in_order(bootstrap, source, target, 3_000)


def test_what_a_stopped_query_held_is_judged_again_when_an_insert_from_another_topic_wrote_past_it(
        spark, bootstrap, fresh_name, tmp_path):
    """A holds records and stops; an INSERT from another topic writes later records to the same
    virtual partitions. A, restarted, releases what it held: those now below what their virtual
    partition holds are late (counted under drop), none is written below it. Which ones those
    are is worked out apart, from the source and the table read with a plain consumer, each
    record's virtual partition and order value taken from its JSON value."""
    source, other, target = fresh_name("held_raised_src"), fresh_name("held_raised_other"), fresh_name("held_raised")
    held_back = stopped_holding(spark, bootstrap, source, target, tmp_path / "a", seed=55)
    datagen.generate_pageviews(bootstrap, other, 300, partitions=3, users=15, seed=56,
                               start_ms=datagen.ARTICLE_START_MS + 3_000 * 500 + 60_000)
    assert insert(spark, other, target)["rows"] == 300

    def vp_and_order(value: bytes) -> tuple[int, int]:
        view = json.loads(value)
        return virtual_partition(canonical_key(verify.pageview_key(view)), 9), verify.pageview_order(view)

    before = {r.value for r in verify.read_topic(bootstrap, target)}
    highest: dict[int, int] = {}
    for vp, order in map(vp_and_order, before):
        highest[vp] = max(order, highest.get(vp, order))
    held_values = [r.value for r in verify.read_topic(bootstrap, source) if r.value not in before]
    assert len(held_values) == held_back
    below = set()
    for value in held_values:
        vp, order = vp_and_order(value)
        if order < highest.get(vp, order):
            below.add(value)
    assert below, "the INSERT wrote above some of what A held"

    restarted = run_dropping_late(spark, source, target, tmp_path / "a")
    assert late_below_written(restarted) == late(restarted) == len(below)
    assert_in_order(bootstrap, target, 3_000 + 300 - len(below))
    assert {r.value for r in verify.read_topic(bootstrap, target)} == before | (set(held_values) - below)


def test_two_queries_resuming_from_the_table_at_once_one_is_refused_naming_the_other(
        spark, bootstrap, fresh_name, tmp_path):
    """B and D start together, both resuming from what A left: the table's writer claim lets one
    write; the other fails, naming it (the claim it meets, or the epoch it wrote since), having
    written nothing: A's held records are written once. Their writer tasks are slowed (a test
    hook): the first claim is held for seconds, so the two overlap however loaded the machine
    (unslowed, on a loaded machine one could end before the other planned: then the other
    resumes after it and writes nothing, which is right, but no race)."""
    source, target = fresh_name("resume_race_src"), fresh_name("resume_race")
    datagen.generate_pageviews(bootstrap, source, 1_000, partitions=3, users=15, seed=53, out_of_order_ms=2_000)
    create(spark, target, delay_ms=5_000)
    a = run_available_now(spark, source, target, tmp_path / "a", releaseAtEnd="false")
    assert a.exception() is None and held(a) > 0
    racing = [stream(spark, source, target, tmp_path / name, CHANGED, startingOffsets="table", releaseAtEnd="true")
              .option("kplex.testing.sleep_ms", "500").trigger(availableNow=True).start() for name in ("b", "d")]
    for query in racing:
        try:
            query.awaitTermination(300)
        except Exception:  # noqa: BLE001 - the loser's error is read from query.exception() below
            pass
    failed = [q for q in racing if q.exception() is not None]
    assert len(failed) == 1, [str(q.exception())[:300] for q in racing]
    winner = next(q for q in racing if q.exception() is None)
    assert winner.id in str(failed[0].exception()), str(failed[0].exception())[:2000]
    assert_exactly_once_in_order(bootstrap, source, target, 1_000)


def test_resuming_from_a_table_no_stream_wrote_from_that_source_is_an_error_naming_the_topic(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("resume_none_src"), fresh_name("resume_none")
    datagen.generate_pageviews(bootstrap, source, 100, partitions=3, users=5, seed=3)
    create(spark, target)
    with pytest.raises(errors.ResumeFromTableError) as raised:
        resume(spark, source, target, tmp_path / "chk", select=SELECT, startingTable=target)
    assert f"topic '{source}'" in str(raised.value) and target in str(raised.value)
    assert written(bootstrap, target) == 0
    # A batch read has no table stream to start from.
    with pytest.raises(errors.ResumeFromTableError) as raised, translated():
        spark.read.format("kplex").option("table", source).option("startingOffsets", "table").load().count()
    assert "batch read" in str(raised.value)


@pytest.mark.parametrize("partitions", [3, 2], ids=["as many partitions", "fewer partitions"])
def test_resuming_from_the_table_over_a_source_created_again_is_data_loss_or_reads_it_from_its_start(
        spark, bootstrap, fresh_name, tmp_path, partitions):
    """The source topic deleted and created again (holding more records than the table's stream
    had read) between the table's stream and a query that resumes from the table: the old
    stream's offsets are not the new topic's, told by the topic's id the table's marks keep. The
    resuming query fails with [KPLEX_DATA_LOSS] naming the recreated topic and writes nothing;
    with failOnDataLoss = false it reads the new topic from its start: each record once."""
    from test_stream_recovery import delete_topic

    source, target = fresh_name("views_resume_recreated"), fresh_name("by_user_resume_recreated")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=42)
    create(spark, target, delay_ms=1_000)
    first = run_available_now(spark, source, target, tmp_path / "a")
    assert first.exception() is None, first.exception()
    assert written(bootstrap, target) == 300
    delete_topic(bootstrap, source)
    datagen.generate_pageviews(bootstrap, source, 450, partitions=partitions, users=15, seed=43,
                               start_ms=datagen.ARTICLE_START_MS + 10_000_000)
    with pytest.raises(Exception) as failure:
        resume(spark, source, target, tmp_path / "b")
    message = str(failure.value)
    assert "KPLEX_DATA_LOSS" in message and "the topic was deleted and created again" in message, message[:2000]
    assert written(bootstrap, target) == 300  # nothing written
    query = resume(spark, source, target, tmp_path / "c", failOnDataLoss="false")
    assert query.exception() is None, query.exception()
    assert late(query) == 0
    new = [r.value for r in verify.read_topic(bootstrap, source)]
    values = [r.value for r in verify.read_topic(bootstrap, target)]
    assert len(values) == 300 + 450 and len(set(values)) == len(values) and set(new) <= set(values)


def test_what_was_read_of_a_source_since_created_again_is_not_taken_as_written(
        spark, bootstrap, fresh_name, tmp_path):
    """Three tables read the source: A and C by INSERT, B by a stream. The source is then deleted
    and created again with other, fewer records over the same offsets and times. A stream into A,
    an INSERT into B and a read_uncommitted INSERT into C judge those records by the order rule
    (late: dropped and counted here), never as already written by the writers that read the old
    topic, which wrote none of them; the new stream takes none of the old one's state over (its
    partitions' event times are the old topic's). C's mark keeps only what was read of the new
    topic."""
    from test_stream_recovery import delete_topic

    source = fresh_name("recreated_src")
    a, b, c = fresh_name("recreated_a"), fresh_name("recreated_b"), fresh_name("recreated_c")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=44)
    for table in (a, b, c):
        create(spark, table, delay_ms=1_000)

    def insert(table: str, **read_options: str) -> dict:
        reader = spark.read.format("kplex").option("table", source)
        for k, v in read_options.items():
            reader = reader.option(k, v)
        reader.load().selectExpr(*SELECT).writeTo(f"kplex.{table}").append()
        return json.loads(spark.conf.get("kplex.last_write"))

    assert insert(a)["rows"] == 300 and insert(c)["rows"] == 300
    first = run_available_now(spark, source, b, tmp_path / "b1")
    assert first.exception() is None, first.exception()
    assert written(bootstrap, b) == 300
    delete_topic(bootstrap, source)
    datagen.generate_pageviews(bootstrap, source, 150, partitions=3, users=15, seed=45)  # the same span of time
    new_ends = {}
    for r in verify.read_topic(bootstrap, source):
        new_ends[str(r.partition)] = max(new_ends.get(str(r.partition), 0), r.offset + 1)

    streamed = run_dropping_late(spark, source, a, tmp_path / "a2")
    assert already_written(streamed) == 0 and late(streamed) > 0, (already_written(streamed), late(streamed))
    # Judged against what the table holds, not the old topic's partitions (a new stream takes nothing over).
    behind = sum(int((p.sink.metrics or {}).get("lateBehindPartition", "0")) for p in recent_progress(streamed))
    assert behind == 0, behind
    assert written(bootstrap, a) == 300 + 150 - late(streamed)
    spark.conf.set("spark.kplex.late_policy", "drop")
    try:
        inserted = insert(b)
        uncommitted = insert(c, **{"kafka.isolation.level": "read_uncommitted"})
    finally:
        spark.conf.unset("spark.kplex.late_policy")
    for done in (inserted, uncommitted):
        assert done["already_written"] == 0 and done["late"] > 0 and done["rows"] + done["late"] == 150, done
    assert inserts_reads(bootstrap, c)[source] == {p: [[0, end]] for p, end in new_ends.items()}
    for table, count in ((b, 300 + inserted["rows"]), (c, 300 + uncommitted["rows"])):
        values = [r.value for r in verify.read_topic(bootstrap, table)]
        assert len(values) == count and len(set(values)) == len(values), table


def test_a_stream_through_a_bound_of_partition_counts_as_read_only_for_the_same_bound(
        spark, bootstrap, fresh_name, tmp_path):
    """A stream records what it read as everything below where it stopped, in every partition:
    one through `WHERE partition = 0` read nothing of partition 1. An INSERT of partition 1's
    records into the same table judges them by the order rule (late: dropped and counted here),
    not as already written by the stream, which wrote none of them; the same stream's WHERE
    again (a new query from `earliest`) skips what it wrote."""
    source, target = fresh_name("bound_stream_src"), fresh_name("bound_stream")
    datagen.generate_pageviews(bootstrap, source, 400, partitions=2, users=15, pages=20, seed=64)
    ones = sum(1 for r in verify.read_topic(bootstrap, source) if r.partition == 1)
    assert 50 < ones < 350, ones
    create(spark, target, delay_ms=1_000)

    def stream(checkpoint: str):
        query = (spark.readStream.format("kplex").option("table", source).option("startingOffsets", "earliest")
                 .option("releaseAtEnd", "true").load().where("partition = 0").selectExpr(*SELECT)
                 .writeStream.format("kplex").option("table", target)
                 .option("checkpointLocation", str(tmp_path / checkpoint)).trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return query

    stream("a")
    zeros = written(bootstrap, target)
    assert zeros == 400 - ones
    spark.conf.set("spark.kplex.late_policy", "drop")
    try:
        spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{source} WHERE partition = 1")
        other = json.loads(spark.conf.get("kplex.last_write"))
        assert other["already_written"] == 0 and other["rows"] + other["late"] == ones, other
        again = stream("b")
    finally:
        spark.conf.unset("spark.kplex.late_policy")
    assert already_written(again) == zeros and late(again) == 0, (already_written(again), late(again))
    values = [r.value for r in verify.read_topic(bootstrap, target)]
    assert len(values) == len(set(values)) == zeros + other["rows"]


def test_kplex_stream_resume_takes_over_from_the_cli_stream_of_another_checkpoint(bootstrap, fresh_name, tmp_path):
    """In SQL (no read options): `kplex stream FILE --checkpoint NEW --resume`."""
    source, target = fresh_name("resume_cli_src"), fresh_name("resume_cli_by_user")
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=15, seed=23, out_of_order_ms=3_000)
    job = stream_job(tmp_path, source, target)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}

    def kplex_stream(checkpoint: str, *flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kplex", "stream", str(job), "--bootstrap", bootstrap,
                               "--checkpoint", str(tmp_path / checkpoint), "--available-now", "--master", "local[2]",
                               "--conf", "spark.sql.shuffle.partitions=3", *flags],
                              capture_output=True, text=True, timeout=300, env=env)

    a = kplex_stream("a")
    assert a.returncode == 0, (a.stdout + a.stderr)[-3000:]
    held_back = 2_000 - written(bootstrap, target)
    assert held_back > 0, "the first run should hold the records of its last 5 s"
    later = datagen.ARTICLE_START_MS + 2_000 * 500 + 60_000
    datagen.generate_pageviews(bootstrap, source, 1_000, partitions=3, users=15, seed=24, create=False,
                               start_ms=later)
    b = kplex_stream("b", "--resume", "--release-at-end")
    assert b.returncode == 0, (b.stdout + b.stderr)[-3000:]
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == 3_000
