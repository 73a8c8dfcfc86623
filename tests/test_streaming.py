"""Structured Streaming into kplex tables, exactly once per micro-batch, order
kept across micro-batches (G2 for streams).

Every check reads the derived topic back with a plain read_committed consumer
(kplex.testing.verify), which also checks per-virtual-partition order over the whole
topic, i.e. across every micro-batch.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import pyspark
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from test_exactly_once import stable_offsets_reach_the_end

from kplex.placement import virtual_partition
from kplex.streaming import recent_progress
from kplex.testing import datagen, verify

ROOT = Path(__file__).resolve().parents[1]
SELECT = ("kplex_key(kplex_json(value, '/userid')) AS key",
          "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)) AS order_value",
          "value")


def create(spark, table: str, delay_ms: int = 5_000, **props: str) -> None:
    extra = "".join(f", '{k}' = '{v}'" for k, v in props.items())
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              f" 'kplex.physical_partitions' = '3', 'kplex.max_delay_ms' = '{delay_ms}'{extra})")


def stream(spark, source: str, target: str, checkpoint: Path, select=SELECT, **read_options: str):
    reader = spark.readStream.format("kplex").option("table", source).option("startingOffsets", "earliest")
    for key, value in read_options.items():
        reader = reader.option(key, value)
    return (reader.load().selectExpr(*select)
            .writeStream.format("kplex").option("table", target)
            .option("checkpointLocation", str(checkpoint)))


def run_available_now(spark, source: str, target: str, checkpoint: Path, select=SELECT, **read_options: str):
    """One Trigger.AvailableNow run; unless told otherwise, a last one: it releases every held record."""
    read_options.setdefault("releaseAtEnd", "true")
    query = stream(spark, source, target, checkpoint, select, **read_options).trigger(availableNow=True).start()
    query.awaitTermination(300)
    return query


def stream_job(folder: Path, source: str, target: str) -> Path:
    """The repository's streaming SQL job (sql/pageviews_by_user_stream.sql) from ``source`` into ``target``."""
    job = folder / "job.sql"
    job.write_text((ROOT / "sql" / "pageviews_by_user_stream.sql").read_text()
                   .replace("kplex.pageviews_by_user_stream", f"kplex.{target}")
                   .replace("STREAM(kplex.pageviews)", f"STREAM(kplex.{source})"))
    return job


def produce(bootstrap: str, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random",
                         "enable.idempotence": True, "linger.ms": 5})
    for key, value in records:
        producer.produce(topic, value=value, key=key)
    assert producer.flush(30) == 0


def pageview(user: str, viewtime: int, page: str = "Page_1") -> tuple[bytes, bytes]:
    value = json.dumps({"viewtime": viewtime, "userid": user, "pageid": page}, separators=(",", ":"))
    return page.encode(), value.encode()


def wait_for(count: int, bootstrap: str, topic: str, timeout: float = 180) -> int:
    deadline = time.time() + timeout
    seen = -1
    while time.time() < deadline:
        seen = len(verify.read_topic(bootstrap, topic))
        if seen >= count:
            return seen
        time.sleep(2)
    return seen


def failure_of(query) -> str:
    """What a query that is to fail failed with, once it stopped (within 300 s)."""
    try:
        query.awaitTermination(300)
    except Exception:  # noqa: BLE001 - the error is read from query.exception() below
        pass
    finally:
        query.stop()
    return str(query.exception())


def assert_exactly_once_in_order(bootstrap: str, source: str, target: str, rows: int) -> None:
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == rows


def test_a_running_query_repartitions_a_growing_topic_exactly_once_and_in_order_across_batches(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_live"), fresh_name("by_user_live")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target, delay_ms=3_000)
    query = (stream(spark, source, target, tmp_path / "chk", idleReleaseMs="3000", maxOffsetsPerTrigger="400")
             .trigger(processingTime="1 second").start())
    try:
        # Records keep arriving while the query runs: 6 rounds, each out of order by up to 3 s
        # within and across partitions, each later in event time than the one before.
        total = 0
        for round_ in range(6):
            datagen.generate_pageviews(bootstrap, source, 500, partitions=3, users=15, seed=round_,
                                       out_of_order_ms=3_000, create=False,
                                       start_ms=datagen.ARTICLE_START_MS + round_ * 200_000)
            total += 500
            time.sleep(1.5)
        assert wait_for(total, bootstrap, target) == total
        batches = [p for p in recent_progress(query) if p.numInputRows > 0]
        assert len(batches) >= 2, "the records arrived over several micro-batches"
        metrics = [p.sink.metrics for p in recent_progress(query) if p.sink.metrics]
        assert metrics and all(m["lateRecords"] == "0" for m in metrics), metrics
    finally:
        query.stop()
    assert_exactly_once_in_order(bootstrap, source, target, total)


def test_a_running_query_holds_its_table_and_frees_it_when_stopped(spark, bootstrap, fresh_name, tmp_path):
    """One writer per table, for the whole run of a streaming query (not only during its
    micro-batches): an INSERT while it runs fails naming the query and writes nothing;
    the INSERT right after query.stop() finds the table free."""
    source, target = fresh_name("views_held_table"), fresh_name("by_user_held_table")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=31)
    # The INSERT brings later records: a virtual partition never goes back below what the query wrote.
    later = fresh_name("views_held_table_later")
    datagen.generate_pageviews(bootstrap, later, 300, partitions=3, users=15, seed=32,
                               start_ms=datagen.ARTICLE_START_MS + 10_000_000)
    create(spark, target, delay_ms=0)
    # The input stops: after 2 s without a record, the query releases what it holds (a flush on request).
    query = (stream(spark, source, target, tmp_path / "chk", idleReleaseMs="2000")
             .trigger(processingTime="1 second").start())
    insert = f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{later}"
    try:
        assert wait_for(300, bootstrap, target) == 300
        time.sleep(2)  # between micro-batches: no input, the query idles
        with pytest.raises(Exception, match="KPLEX_TABLE_BUSY") as busy:
            spark.sql(insert)
        assert query.id in str(busy.value) and target in str(busy.value)
        assert len(verify.read_topic(bootstrap, target)) == 300, "the refused INSERT wrote nothing"
    finally:
        query.stop()
    spark.sql(insert)
    assert len(verify.read_topic(bootstrap, target)) == 600


@pytest.mark.parametrize("policy", ["drop", "side_topic", "fail"])
def test_a_record_later_than_the_bound_meets_the_late_policy(spark, bootstrap, fresh_name, tmp_path, policy):
    source, target = fresh_name("views_late"), fresh_name("by_user_late")
    late_topic = fresh_name("late")
    datagen.ensure_topic(bootstrap, source, 3)
    props = {"kplex.late_policy": policy}
    if policy == "side_topic":
        props["kplex.late_topic"] = late_topic  # not made here: the write makes it, with one partition
    create(spark, target, delay_ms=1_000, **props)
    on_time = [pageview(f"User_{i % 5}", 1_000_000 + i * 100) for i in range(50)]
    produce(bootstrap, source, on_time)
    with_headers = (*SELECT, "headers")  # the late record's own headers go with it to the side topic
    run_available_now(spark, source, target, tmp_path / "chk", with_headers)
    assert len(verify.read_topic(bootstrap, target)) == 50  # the end of input released every record

    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random", "enable.idempotence": True})
    key, value = pageview("User_late", 1_000_000)
    producer.produce(source, key=key, value=value, headers=[("trace", b"t-1"), ("kplex.source_offset", b"999")])
    assert producer.flush(30) == 0
    produce(bootstrap, source, [pageview("User_1", 2_000_000)])
    if policy == "fail":
        with pytest.raises(Exception, match="KPLEX_LATE_RECORD") as failure:
            run_available_now(spark, source, target, tmp_path / "chk", with_headers)
        # The record, its order value, the bound it missed and why.
        message = str(failure.value)
        assert "key 'User_late' and order value 1000000" in message, message[:2000]
        assert "more than kplex.max_delay_ms = 1000 behind the largest order value before it on its source" \
            " partition (it had to be at least 1003900)" in message, message[:2000]
        assert f"({source}-" in message and " offset 50)" in message, message[:2000]
        assert len(verify.read_topic(bootstrap, target)) == 50  # the failed batch wrote nothing
        return
    query = run_available_now(spark, source, target, tmp_path / "chk", with_headers)
    derived = verify.read_topic(bootstrap, target)
    assert len(derived) == 51 and not any(b"User_late" in r.value for r in derived)
    late = sum(int(p.sink.metrics.get("lateRecords", "0")) for p in recent_progress(query))
    assert late == 1
    if policy == "side_topic":
        assert wait_for(1, bootstrap, late_topic, timeout=60) == 1  # its commit marker may come a moment later
        admin = AdminClient({"bootstrap.servers": bootstrap})
        assert len(admin.list_topics(late_topic, timeout=10).topics[late_topic].partitions) == 1
        [side] = verify.read_topic(bootstrap, late_topic)
        assert (side.key, side.value) == (b"User_late", pageview("User_late", 1_000_000)[1])
        names = side.headers
        assert names["kplex.order"] == b"1000000"
        assert names["kplex.vp"] == str(virtual_partition(b"User_late", 9)).encode()
        assert names["kplex.source_topic"] == source.encode()
        assert names["kplex.source_offset"] == b"50"
        source_record = next(r for r in verify.read_topic(bootstrap, source) if b"User_late" in r.value)
        assert names["kplex.source_partition"] == str(source_record.partition).encode()
        assert side.timestamp == source_record.timestamp  # the source record's, kept
        # Its own headers kept, but for one named as kplex's: each of kplex's five is there once, kplex's.
        assert [n for n, _ in side.header_list] == ["trace", "kplex.vp", "kplex.order", "kplex.source_topic",
                                                   "kplex.source_partition", "kplex.source_offset"], side.header_list


def test_a_misspelt_sink_option_fails_the_stream_naming_it_before_anything_is_written(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_typo"), fresh_name("by_user_typo")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target, delay_ms=1_000)
    produce(bootstrap, source, [pageview(f"User_{i % 5}", 1_000_000 + i * 100) for i in range(50)])
    query = (stream(spark, source, target, tmp_path / "chk").option("kplex.max_dealy_ms", "60000")
             .trigger(availableNow=True).start())
    with pytest.raises(Exception, match="KPLEX_UNKNOWN_PROPERTY") as failure:
        query.awaitTermination(300)
    assert "unknown kplex write option 'kplex.max_dealy_ms'; did you mean 'kplex.max_delay_ms'?" in str(failure.value)
    assert verify.read_topic(bootstrap, target, isolation="read_uncommitted") == []


def test_a_micro_batch_releases_below_the_slowest_partitions_watermark_cut_by_a_rate_limit_or_not(
        spark, bootstrap, fresh_name, tmp_path):
    # In viewtime order, 0..500 ms apart: with a 5 s bound, all but the last seconds of it
    # are below the watermark the backlog itself sets.
    source = fresh_name("views_release")
    records = list(datagen.pageview_records(600, users=15, seed=11))
    datagen.ensure_topic(bootstrap, source, 3)
    produce(bootstrap, source, records)
    viewtimes = [json.loads(value)["viewtime"] for _, value in records]
    # Rows a task may hold: at or above the slowest partition's largest order value minus
    # the bound, so at least those at or above the largest of all minus the bound.
    surely_held = sum(1 for t in viewtimes if t >= max(viewtimes) - 5_000)

    def first_batch(target: str, **read_options: str) -> dict[str, str]:
        create(spark, target)
        query = run_available_now(spark, source, target, tmp_path / target, **read_options)
        assert_exactly_once_in_order(bootstrap, source, target, 600)  # the end of input released the rest
        first = next(p for p in recent_progress(query) if p.numInputRows > 0)
        return first.sink.metrics

    # One micro-batch reads every partition to its end: it writes what its own records let go.
    whole = first_batch(fresh_name("by_user_whole"))
    written = sum(json.loads(whole["rowsPerVirtualPartition"]).values())
    assert int(whole["heldRecords"]) >= surely_held
    assert written == 600 - int(whole["heldRecords"]) and written > 300  # 150 s of records, a 5 s bound
    # Where the slowest writer task's time went, reported with the batch.
    assert {"taskHeldReadMs", "taskSortMs", "taskWriteMs", "taskCommitMs"} <= whole.keys()
    # Cut by maxOffsetsPerTrigger, every partition got its share, and the batch writes what
    # the slowest of them lets go: records still unread cannot sort before it (they are
    # either later, or late by their own partition).
    capped = first_batch(fresh_name("by_user_capped"), maxOffsetsPerTrigger="200")
    released = sum(json.loads(capped["rowsPerVirtualPartition"]).values())
    assert 0 < released < 200 and released + int(capped["heldRecords"]) == 200, capped
    assert capped["lateRecords"] == "0"


def test_available_now_over_a_backlog_gives_the_rows_and_order_of_the_batch_insert(
        spark, bootstrap, fresh_name, tmp_path):
    source, batch, streamed = fresh_name("views_backlog"), fresh_name("by_user_batch"), fresh_name("by_user_stream")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=15, seed=9, out_of_order_ms=2_000)
    create(spark, batch)
    create(spark, streamed)
    spark.sql(f"INSERT INTO kplex.{batch} SELECT {', '.join(SELECT)} FROM kplex.{source}")
    # A small rate limit: the backlog arrives over several micro-batches.
    query = run_available_now(spark, source, streamed, tmp_path / "chk", maxOffsetsPerTrigger="700")
    assert len([p for p in recent_progress(query) if p.numInputRows > 0]) >= 4
    assert_exactly_once_in_order(bootstrap, source, streamed, 3_000)
    # Same records in the same order per virtual partition as the batch INSERT.
    # (Equal only because the delay bound covers the data's disorder: nothing was late.)
    assert (verify.virtual_partition_sequences(verify.read_topic(bootstrap, batch))
            == verify.virtual_partition_sequences(verify.read_topic(bootstrap, streamed)))


def test_an_epoch_that_spark_runs_again_writes_nothing_twice(spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_rerun"), fresh_name("by_user_rerun")
    datagen.generate_pageviews(bootstrap, source, 1_000, partitions=3, users=15, seed=3, out_of_order_ms=2_000)
    create(spark, target)
    chk = tmp_path / "chk"
    run_available_now(spark, source, target, chk, maxOffsetsPerTrigger="400")
    assert_exactly_once_in_order(bootstrap, source, target, 1_000)
    # Make Spark believe its last two batches never committed (a driver that died after
    # kplex committed, before Spark's own commit log): it runs them again on restart.
    last = max(int(p.name) for p in (chk / "offsets").iterdir() if p.name.isdigit())
    for folder, batch in (("commits", last), ("commits", last - 1), ("offsets", last)):
        (chk / folder / str(batch)).unlink()
        (chk / folder / f".{batch}.crc").unlink(missing_ok=True)  # the local file system's checksum
    query = run_available_now(spark, source, target, chk, maxOffsetsPerTrigger="400")
    assert sum(p.numInputRows for p in recent_progress(query)) > 0  # Spark did read a batch again
    assert_exactly_once_in_order(bootstrap, source, target, 1_000)


STREAM_SCRIPT = """
import sys
from kplex.session import kplex_session
spark = kplex_session({bootstrap!r}, master="local[2]", conf={{"spark.sql.shuffle.partitions": "3", **{conf!r}}})
q = (spark.readStream.format("kplex").option("table", {source!r}).option("startingOffsets", {starting!r})
     .option("maxOffsetsPerTrigger", "300").option("releaseAtEnd", "true").load()
     .selectExpr({select!r}[0], {select!r}[1], {select!r}[2])
     .writeStream.format("kplex").option("table", {target!r}).option("checkpointLocation", {chk!r})
     .trigger(availableNow=True).start())
q.awaitTermination()
print("DONE", flush=True)
"""


def run_driver(bootstrap: str, source: str, target: str, chk: Path, conf: dict[str, str],
               kill_after: float | None = None, starting: str = "earliest",
               kill_when: Callable[[], bool] | None = None) -> subprocess.CompletedProcess:
    """The streaming job in a driver of its own (AvailableNow, the last run: it releases all);
    killed with SIGKILL after `kill_after` seconds, or once `kill_when()` holds (its return code
    then -9; its output is not kept)."""
    code = STREAM_SCRIPT.format(bootstrap=bootstrap, source=source, target=target, chk=str(chk),
                                conf=conf, select=list(SELECT), starting=starting)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    if kill_after is None and kill_when is None:
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    deadline = time.time() + (kill_after if kill_after is not None else 300)
    while proc.poll() is None and time.time() < deadline and not (kill_when is not None and kill_when()):
        time.sleep(0.2)
    if proc.poll() is None:
        os.killpg(proc.pid, 9)  # the driver and its JVM, with SIGKILL: nothing runs on exit
    return subprocess.CompletedProcess(proc.args, proc.wait(), "", "")


def batches(chk: Path, kind: str) -> int:
    """How many batch files the checkpoint has under `kind` (offsets: planned, commits: done)."""
    return len([f for f in (chk / kind).glob("[0-9]*") if f.is_file()]) if (chk / kind).is_dir() else 0


def batch_in_flight_after_progress(chk: Path, lag_s: float) -> Callable[[], bool]:
    """For run_driver's kill_when: holds `lag_s` after the run has committed one more batch
    than the checkpoint held when it started and planned the next one."""
    committed_before = batches(chk, "commits")
    since: list[float] = []

    def ready() -> bool:
        if not since and batches(chk, "commits") > committed_before and batches(chk, "offsets") > batches(chk, "commits"):
            since.append(time.time())
        return bool(since) and time.time() - since[0] >= lag_s
    return ready


def test_a_driver_killed_mid_stream_again_and_again_restarts_exactly_once_in_order(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_killed"), fresh_name("by_user_killed")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=15, seed=11, out_of_order_ms=2_000)
    create(spark, target)
    chk = tmp_path / "chk"
    # Each task sleeps, so each run is killed with a batch in flight: once it has committed a
    # batch of its own (every run gets further) and planned the next, at a different moment of
    # that batch each time (planned, then about one and two task sleeps on).
    slow = {"spark.kplex.testing.sleep_ms": "300"}
    for lag in (0.0, 0.4, 0.8):
        killed = run_driver(bootstrap, source, target, chk, slow, kill_when=batch_in_flight_after_progress(chk, lag))
        assert killed.returncode == -9, f"the run killed {lag} s into a batch ended first"
        assert batches(chk, "offsets") > batches(chk, "commits"), "killed with a batch in flight"
    # And once between two of an epoch's commits (the driver halts mid-commit).
    halted = run_driver(bootstrap, source, target, chk, {"spark.kplex.testing.halt_after_commits": "1"})
    assert "DONE" not in halted.stdout, "the driver halted mid-commit"
    done = run_driver(bootstrap, source, target, chk, {})
    assert done is not None and "DONE" in done.stdout, done.stderr[-3000:]
    assert_exactly_once_in_order(bootstrap, source, target, 3_000)
    assert stable_offsets_reach_the_end(bootstrap, target)


def test_a_task_failing_after_its_rows_reached_the_broker_is_retried_without_duplicates(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_taskfail"), fresh_name("by_user_taskfail")
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=15, seed=13, out_of_order_ms=2_000)
    create(spark, target)
    spark.conf.set("spark.kplex.testing.fail_after_rows", "50")
    try:
        run_available_now(spark, source, target, tmp_path / "chk", maxOffsetsPerTrigger="800")
    finally:
        spark.conf.unset("spark.kplex.testing.fail_after_rows")
    assert_exactly_once_in_order(bootstrap, source, target, 2_000)
    # The failed attempts did send their rows, and were aborted.
    assert len(verify.read_topic(bootstrap, target, isolation="read_uncommitted")) > 2_000


def test_a_bad_streaming_read_option_is_named(spark, fresh_name, bootstrap):
    source, target = fresh_name("views_bad"), fresh_name("by_user_bad")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target)
    reader = spark.readStream.format("kplex").option("table", source)
    with pytest.raises(Exception, match="maxOffsetsPerTrigger"):
        (reader.option("maxOffsetsPerTrigger", "lots").load().selectExpr(*SELECT).writeStream.format("kplex")
         .option("table", target).option("checkpointLocation", "/tmp/unused").trigger(availableNow=True)
         .start().awaitTermination(60))


def kplex_stream(job: Path, bootstrap: str, *flags: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kplex", "stream", str(job), "--bootstrap", bootstrap,
                           "--master", "local[2]", "--conf", "spark.sql.shuffle.partitions=3", *flags],
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT / "python"), **(env or {})})


@pytest.mark.parametrize("release", ["flag", "set_in_file"])
def test_the_cli_runs_the_streaming_job_of_sql_and_prints_each_micro_batch(bootstrap, fresh_name, tmp_path, release):
    """`kplex stream` runs sql/pageviews_by_user_stream.sql; the last run releases what it holds,
    asked by --release-at-end or by the file's own SET kplex.stream.releaseAtEnd (a session
    setting the command keeps). An exported $SPARK_REMOTE does not keep it from its own Spark."""
    source, target = fresh_name("pageviews_cli"), fresh_name("pageviews_by_user_cli")
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=15, seed=17, out_of_order_ms=3_000)
    job = stream_job(tmp_path, source, target)
    flags = ["--checkpoint", str(tmp_path / "chk"), "--available-now"]
    if release == "flag":
        flags.append("--release-at-end")
    else:
        job.write_text("SET kplex.stream.releaseAtEnd = true;\n" + job.read_text())
    done = kplex_stream(job, bootstrap, *flags, env={"SPARK_REMOTE": "sc://127.0.0.1:1"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "batch 0: 2000 rows read" in done.stdout and "late 0" in done.stdout, done.stdout
    assert "(slowest task: sort " in done.stdout, done.stdout
    assert_exactly_once_in_order(bootstrap, source, target, 2_000)


def test_the_cli_runs_nothing_of_a_file_that_cannot_stream_and_names_a_failing_statement(
        spark, bootstrap, fresh_name, tmp_path):
    """A batch job given to `kplex stream` by mistake, or a stream file with a kplex error, runs no
    statement (its CREATE makes no topic, its INSERT writes nothing); a statement Spark refuses is
    named with its line, exit 1; a missing file is exit 2, before any Spark starts."""
    source, target = fresh_name("pageviews_nostream"), fresh_name("pageviews_by_user_nostream")
    datagen.generate_pageviews(bootstrap, source, 200, partitions=3, users=15, seed=17)
    batch = tmp_path / "batch.sql"
    batch.write_text((ROOT / "sql" / "pageviews_by_user.sql").read_text()
                     .replace("kplex.pageviews_by_user", f"kplex.{target}").replace("kplex.pageviews", f"kplex.{source}"))
    done = kplex_stream(batch, bootstrap, "--checkpoint", str(tmp_path / "chk"), "--available-now")
    assert done.returncode == 2 and "FROM STREAM(<source>) to run; nothing was run" in done.stderr, done.stderr[-3000:]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert target not in admin.list_topics(timeout=10).topics, "the batch file's CREATE ran"

    broken = stream_job(tmp_path, source, target)
    broken.write_text(broken.read_text().replace("kplex_order(", "kplex_ordr("))
    done = kplex_stream(broken, bootstrap, "--checkpoint", str(tmp_path / "chk"), "--available-now")
    assert done.returncode == 1 and "kplex_ordr" in done.stderr, done.stderr[-3000:]
    assert target not in admin.list_topics(timeout=10).topics, "the broken file's CREATE ran"

    refused = stream_job(tmp_path, source, target)
    refused.write_text(refused.read_text().replace("       value\nFROM STREAM", "       no_such_column\nFROM STREAM"))
    done = kplex_stream(refused, bootstrap, "--checkpoint", str(tmp_path / "chk"), "--available-now")
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    if tuple(int(n) for n in pyspark.__version__.split(".")[:2]) >= (4, 1):
        assert done.returncode == 1 and "no_such_column" in done.stderr and "statement 2" in done.stderr, \
            done.stderr[-3000:]
    else:  # a Spark that cannot stream SQL: refused before the file's CREATE runs
        assert done.returncode == 2 and "KPLEX_SPARK_VERSION" in done.stderr, done.stderr[-3000:]
        assert target not in admin.list_topics(timeout=10).topics, "the CREATE ran on a Spark that cannot stream"

    missing = kplex_stream(tmp_path / "nowhere.sql", bootstrap, "--checkpoint", str(tmp_path / "chk"))
    assert missing.returncode == 2 and "no SQL file at" in missing.stderr, missing.stderr


def test_start_stream_undoes_only_what_an_earlier_start_set(spark):
    """The Python API's start_stream sets a resume or a release for its own query; the next start
    undoes them, but never a user's own SET of the same settings (a resume written as SET)."""
    from kplex import settings
    from kplex.streaming import _set_for_this_start

    offsets, table, release = (settings.session_key(n) for n in
                               (settings.STARTING_OFFSETS, settings.STARTING_TABLE, settings.RELEASE_AT_END))
    try:
        _set_for_this_start(spark, {settings.STARTING_OFFSETS: "table", settings.STARTING_TABLE: "t",
                                    settings.RELEASE_AT_END: "true"})
        _set_for_this_start(spark, {})
        assert [spark.conf.get(k, None) for k in (offsets, table, release)] == [None, None, None]
        spark.sql(f"SET {offsets} = table")
        spark.sql(f"SET {table} = t")
        spark.sql(f"SET {release} = true")
        _set_for_this_start(spark, {})
        assert [spark.conf.get(k, None) for k in (offsets, table, release)] == ["table", "t", "true"]
        _set_for_this_start(spark, {settings.RELEASE_AT_END: "true"})
        spark.sql(f"SET {release} = false")  # the user's, after the start's
        _set_for_this_start(spark, {})
        assert spark.conf.get(release, None) == "false"
    finally:
        for key in (offsets, table, release):
            spark.conf.unset(key)


def test_the_declarative_pipeline_runs_end_to_end_through_its_cli(bootstrap, fresh_name, tmp_path):
    """sql/pipeline: a Spark Declarative Pipeline whose sink is a kplex table, run by
    `kplex pipeline run` on a real Spark Connect server with kplex (started for the run). A
    first update holds records back; the pipeline, moved to a new storage (new checkpoints),
    is run again with --resume --release-at-end (session settings added to the spec's
    configuration for the run): it starts where the table's stream stopped and writes what the
    first held, every record once."""
    source, target = fresh_name("pageviews_sdp"), fresh_name("pageviews_by_user_sdp")
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=15, seed=19, out_of_order_ms=3_000)
    pipeline = tmp_path / "pipeline"
    shutil.copytree(ROOT / "sql" / "pipeline", pipeline)
    for path in [pipeline / "spark-pipeline.yml", pipeline / "tables.sql",
                 *(pipeline / "transformations").iterdir()]:
        path.write_text(path.read_text()
                        .replace("file:///tmp/kplex-pipelines/pageviews_by_user", (tmp_path / "storage").as_uri())
                        .replace("pageviews_by_user_pipeline", target)
                        .replace("STREAM(kplex.pageviews)", f"STREAM(kplex.{source})"))
    spec = pipeline / "spark-pipeline.yml"

    def update(*flags: str) -> str:
        done = subprocess.run([sys.executable, "-m", "kplex", "pipeline", "run", str(pipeline), "--bootstrap",
                               bootstrap, "--master", "local[2]", *flags], capture_output=True, text=True,
                              timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        assert "Flow repartition_pageviews has COMPLETED" in done.stdout + done.stderr
        return done.stdout + done.stderr

    update()
    assert 0 < len(verify.read_topic(bootstrap, target)) < 2_000, "a scheduled update holds its last records"
    spec.write_text(spec.read_text().replace((tmp_path / "storage").as_uri(), (tmp_path / "storage2").as_uri()))
    update("--resume", "--release-at-end")  # the last update: it releases every record it holds
    assert not list(pipeline.glob(".*kplex-run*")), "the run's copy of the spec is removed"
    assert_exactly_once_in_order(bootstrap, source, target, 2_000)


CLUSTER_STREAM_SCRIPT = """
from kplex.session import kplex_session
spark = kplex_session({bootstrap!r}, master="local-cluster[2,1,1024]", conf={{
    "spark.sql.shuffle.partitions": "3", "spark.task.maxFailures": "8",
    "spark.stage.maxConsecutiveAttempts": "8", **{conf!r}}})
spark.sparkContext.setLogLevel("ERROR")
print("APP", spark.sparkContext.applicationId, flush=True)
q = (spark.readStream.format("kplex").option("table", {source!r}).option("maxOffsetsPerTrigger", "300")
     .option("releaseAtEnd", "true").load()
     .selectExpr({select!r}[0], {select!r}[1], {select!r}[2])
     .writeStream.format("kplex").option("table", {target!r}).option("checkpointLocation", {chk!r})
     .trigger(availableNow=True).start())
q.awaitTermination()
print("DONE", flush=True)
"""


def executor_pids(app_id: str) -> list[int]:
    """The executor JVMs of a local-cluster application (separate processes)."""
    pids = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        if b"org.apache.spark.executor.CoarseGrainedExecutorBackend" in args and app_id.encode() in args:
            pids.append(int(cmdline.parent.name))
    return pids


def test_an_executor_jvm_killed_mid_stream_changes_nothing(spark, bootstrap, fresh_name, tmp_path):
    """Two executor JVMs (local-cluster[2,1,1024]); once the query's first micro-batch is
    visible, one executor is killed with SIGKILL while later batches run. Spark replaces it
    and reruns what it lost; if the query gives up instead, a restart from the checkpoint
    must finish it. Either way: every row once, every virtual partition in order, no open
    transaction left."""
    source, target = fresh_name("views_lostexec"), fresh_name("by_user_lostexec")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=15, seed=17, out_of_order_ms=2_000)
    create(spark, target)
    chk = tmp_path / "chk"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}

    def script(conf: dict[str, str]) -> str:
        return CLUSTER_STREAM_SCRIPT.format(bootstrap=bootstrap, source=source, target=target, chk=str(chk),
                                            conf=conf, select=list(SELECT))

    out = tmp_path / "driver.out"
    with open(out, "w") as stdout:
        # Partition 0's first attempts are slow, so batches are in flight when the kill comes.
        proc = subprocess.Popen([sys.executable, "-c", script({"spark.kplex.testing.sleep_ms": "200"})],
                                stdout=stdout, stderr=subprocess.DEVNULL, env=env, start_new_session=True)
    try:
        deadline = time.time() + 180
        while "APP" not in out.read_text() and time.time() < deadline and proc.poll() is None:
            time.sleep(0.5)
        app_id = out.read_text().split("APP", 1)[1].split()[0]
        assert wait_for(1, bootstrap, target, timeout=240) >= 1
        before = len(verify.read_topic(bootstrap, target))
        pids = executor_pids(app_id)
        assert len(pids) == 2, pids
        os.kill(pids[0], 9)
        proc.wait(timeout=600)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
            proc.wait()
    assert before < 3_000  # the kill came mid-stream
    if "DONE" not in out.read_text():
        done = subprocess.run([sys.executable, "-c", script({})], capture_output=True, text=True, timeout=600,
                              env=env)
        assert "DONE" in done.stdout, done.stderr[-3000:]
    assert_exactly_once_in_order(bootstrap, source, target, 3_000)
    assert stable_offsets_reach_the_end(bootstrap, target)


def test_a_broker_stopped_mid_stream_loses_and_doubles_nothing(spark, fresh_name, tmp_path):
    """A 3-broker cluster (replication 3, min.insync.replicas 2); broker 1 is stopped while
    the query runs its micro-batches. The query goes on (or, if it fails, a restart from
    the checkpoint finishes it): every row once, in order, nothing left open."""
    from kplex.testing.local_kafka import LocalKafka

    with LocalKafka(brokers=3) as cluster:
        # A catalog of its own: Spark keeps a catalog's first settings for the session's life.
        spark.conf.set("spark.sql.catalog.kplex3s", "io.kplex.spark.KplexCatalog")
        spark.conf.set("spark.sql.catalog.kplex3s.kafka.bootstrap.servers", cluster.bootstrap)
        source, target = fresh_name("views_failover"), fresh_name("by_user_failover")
        datagen.generate_pageviews(cluster.bootstrap, source, 3_000, partitions=3, users=15, seed=19,
                                   out_of_order_ms=2_000)
        spark.sql(f"CREATE TABLE kplex3s.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
                  " 'kplex.physical_partitions' = '3', 'kplex.max_delay_ms' = '5000')")
        chk = tmp_path / "chk"

        def run() -> object:
            query = (spark.readStream.option("maxOffsetsPerTrigger", "300").option("releaseAtEnd", "true")
                     .table(f"kplex3s.{source}")
                     .selectExpr(*SELECT).writeStream.option("checkpointLocation", str(chk))
                     .trigger(availableNow=True).toTable(f"kplex3s.{target}"))
            query.awaitTermination(600)
            return query

        spark.conf.set("spark.kplex.testing.sleep_ms", "200")
        try:
            visible_at_stop: list[int | str] = []

            def stop_mid_stream() -> None:
                visible_at_stop.append(wait_for(1, cluster.bootstrap, target, 240))
                cluster.stop_broker(1)
                visible_at_stop.append("stopped")

            stopper = threading.Thread(target=stop_mid_stream)
            stopper.start()
            try:
                run()
            except Exception:  # noqa: BLE001 - failing is allowed; the restart must finish the job
                pass
            stopper.join(300)
            assert visible_at_stop[-1:] == ["stopped"], visible_at_stop
            assert 1 <= visible_at_stop[0] < 3_000, visible_at_stop  # mid-stream
            run()  # from the checkpoint: nothing left to do, or what the failed run left
        finally:
            spark.conf.unset("spark.kplex.testing.sleep_ms")
        report = verify.check_derived_topic(cluster.bootstrap, source, target, 9, 3)
        assert report.ok, report.summary()
        assert report.derived_count == 3_000
        assert stable_offsets_reach_the_end(cluster.bootstrap, target)


def test_partitions_added_to_the_source_while_the_query_runs_are_read_from_their_beginning(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_grown"), fresh_name("by_user_grown")
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=21, out_of_order_ms=1_000)
    create(spark, target, delay_ms=2_000)
    query = (stream(spark, source, target, tmp_path / "chk", idleReleaseMs="2000")
             .trigger(processingTime="1 second").start())
    try:
        deadline = time.time() + 120
        while sum(p.numInputRows for p in recent_progress(query)) < 600 and time.time() < deadline:
            time.sleep(1)
        datagen.grow_topic(bootstrap, source, 5)
        # Records on the new partitions only, later in event time than every one before.
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        for i in range(300):
            key, value = pageview(f"User_{i % 15}", datagen.ARTICLE_START_MS + 10_000_000 + i * 10)
            producer.produce(source, value=value, key=key, partition=3 + i % 2)
        assert producer.flush(30) == 0
        assert wait_for(900, bootstrap, target) == 900
    finally:
        query.stop()
    assert_exactly_once_in_order(bootstrap, source, target, 900)


def test_a_kplex_table_streamed_whose_topic_was_given_more_partitions_fails_the_query_naming_it(
        spark, bootstrap, fresh_name, tmp_path):
    """As a batch read does (test_bad_input): the records on the added partition are on no
    virtual partition's physical one, so the stream refuses to read the table at all."""
    upstream, target = fresh_name("grown_upstream"), fresh_name("grown_target")
    create(spark, upstream)
    create(spark, target)
    spark.sql(f"INSERT INTO kplex.{upstream} SELECT kplex_key(CAST(id % 7 AS STRING)), kplex_order(id),"
              " CAST(CAST(id AS STRING) AS BINARY) FROM range(50)")
    datagen.grow_topic(bootstrap, upstream, 4)
    error = failure_of(stream(spark, upstream, target, tmp_path / "chk").trigger(availableNow=True).start())
    assert "[KPLEX_PARTITION_MISMATCH]" in error and f"4 partitions but table {upstream} says 3" in error, error[:3000]
    assert verify.read_topic(bootstrap, target, isolation="read_uncommitted") == []


def end_offsets(bootstrap: str, topic: str, partitions: int = 3) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kplex-ends"})
    try:
        return [consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10, cached=False)[1]
                for p in range(partitions)]
    finally:
        consumer.close()


def test_starting_offsets_below_what_the_broker_still_holds_are_a_data_loss_named_or_skipped(
        spark, bootstrap, fresh_name, tmp_path):
    """A new query whose startingOffsets name offsets the broker has deleted (retention) fails
    with [KPLEX_DATA_LOSS] naming them, as Spark's Kafka source does, rather than start later
    unsaid; with failOnDataLoss = false it reads what the partition holds."""
    source, target = fresh_name("views_start_deleted"), fresh_name("by_user_start_deleted")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=25)
    create(spark, target, delay_ms=1_000)
    ends = end_offsets(bootstrap, source)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(source, 1, 40)]).values():
        future.result()
    starting = json.dumps({source: {"0": 0, "1": 10, "2": -2}})
    with pytest.raises(Exception) as failure:
        run_available_now(spark, source, target, tmp_path / "a", startingOffsets=starting).awaitTermination(10)
    message = str(failure.value)
    assert "KPLEX_DATA_LOSS" in message and "partition 1" in message and "[10, 40)" in message, message[:2000]
    assert verify.read_topic(bootstrap, target) == []
    query = run_available_now(spark, source, target, tmp_path / "b", startingOffsets=starting, failOnDataLoss="false")
    assert query.exception() is None, query.exception()
    assert len(verify.read_topic(bootstrap, target)) == sum(ends) - 40


def test_records_deleted_from_the_source_before_the_query_read_them_fail_it_naming_them_or_are_skipped(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_truncated"), fresh_name("by_user_truncated")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=23, out_of_order_ms=1_000)
    create(spark, target, delay_ms=1_000)
    chk = tmp_path / "chk"
    run_available_now(spark, source, target, chk)
    before = end_offsets(bootstrap, source)
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=24, out_of_order_ms=1_000,
                               create=False, start_ms=datagen.ARTICLE_START_MS + 200_000)
    after = end_offsets(bootstrap, source)
    assert after[1] > before[1]
    # Retention, as it were: partition 1 loses its records before the query read them.
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deleted = admin.delete_records([TopicPartition(source, 1, after[1])])
    for future in deleted.values():
        future.result()
    with pytest.raises(Exception) as failure:
        run_available_now(spark, source, target, chk).awaitTermination(10)
    message = str(failure.value)
    assert "KPLEX_DATA_LOSS" in message and "partition 1" in message, message[:2000]
    assert f"[{before[1]}, {after[1]})" in message and "failOnDataLoss" in message, message[:2000]
    assert len(verify.read_topic(bootstrap, target)) == 300  # the failed run wrote nothing
    # Skipped on request: the rest of the new records arrive, once each, in order.
    run_available_now(spark, source, target, chk, failOnDataLoss="false")
    records = verify.read_topic(bootstrap, target)
    new = (after[0] - before[0]) + (after[2] - before[2])
    assert len(records) == 300 + new
    assert len({(r.key, r.value) for r in records}) == len(records)
    for vp, values in verify.virtual_partition_sequences(records).items():
        orders = [json.loads(v)["viewtime"] for v in values]
        assert orders == sorted(orders), f"virtual partition {vp} out of order"
    assert stable_offsets_reach_the_end(bootstrap, target)


def test_a_micro_batch_that_outlives_the_transaction_timeout_fails_clearly_writes_nothing_and_its_rerun_gets_more_time(
        spark, bootstrap, fresh_name, tmp_path):
    """Spark reruns a planned micro-batch with the same offsets after a restart: the rerun of
    one that expired writes with a longer transaction timeout (4x, at least a minute more)
    instead of failing again at every restart."""
    source, target = fresh_name("views_expiring"), fresh_name("by_user_expiring")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=25)
    create(spark, target, delay_ms=1_000)
    # One writer task sleeps 4.5 s in all; the transactions may live 5 s, and kplex commits
    # only with half of that in hand.
    spark.conf.set("spark.kplex.testing.sleep_ms", "300")
    try:
        query = (stream(spark, source, target, tmp_path / "chk")
                 .option("kafka.transaction.timeout.ms", "5000").trigger(availableNow=True).start())
        with pytest.raises(Exception) as failure:
            query.awaitTermination(300)
        message = str(failure.value)
        assert "KPLEX_COMMIT_EXPIRED" in message and "kafka.transaction.timeout.ms (5000 ms)" in message, message[:2000]
        assert "reruns this micro-batch (the same offsets) with kafka.transaction.timeout.ms = 65000 ms" in message, \
            message[:2000]
        assert verify.read_topic(bootstrap, target) == []
        assert stable_offsets_reach_the_end(bootstrap, target)
        # Restarted with the same settings, the task as slow as before: the rerun commits.
        rerun = (stream(spark, source, target, tmp_path / "chk")
                 .option("kafka.transaction.timeout.ms", "5000").trigger(availableNow=True).start())
        rerun.awaitTermination(300)
        assert rerun.exception() is None, rerun.exception()
        assert [p.batchId for p in recent_progress(rerun) if p.numInputRows > 0] == [0]
    finally:
        spark.conf.unset("spark.kplex.testing.sleep_ms")
    assert 0 < len(verify.read_topic(bootstrap, target)) < 300  # written but for what max_delay_ms holds
    run_available_now(spark, source, target, tmp_path / "chk")  # the end of the input: the rest
    assert_exactly_once_in_order(bootstrap, source, target, 300)
    assert stable_offsets_reach_the_end(bootstrap, target)


def test_the_session_setting_starting_offsets_latest_starts_a_stream_at_the_end_and_an_end_bound_is_refused(
        spark, bootstrap, fresh_name, tmp_path):
    """`SET kplex.stream.startingOffsets = latest`, a SQL user's way to skip a topic's history
    (options.json: a session setting), starts the stream where the topic ends: of two
    AvailableNow runs, the second writes what came after the first, and nothing from before.
    A stream has no end: 'endingOffsets' on it fails the query naming the option, writing nothing."""
    source, target = fresh_name("views_latest"), fresh_name("by_user_latest")
    datagen.ensure_topic(bootstrap, source, 3)
    produce(bootstrap, source, [pageview(f"u{i % 4}", 1_000 + i) for i in range(40)])
    create(spark, target, delay_ms=1_000)

    def run() -> None:
        query = (spark.readStream.format("kplex").option("table", source).option("releaseAtEnd", "true").load()
                 .selectExpr(*SELECT).writeStream.format("kplex").option("table", target)
                 .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()

    spark.conf.set("kplex.stream.startingOffsets", "latest")
    try:
        run()
        produce(bootstrap, source, [pageview(f"u{i % 4}", 5_000 + i) for i in range(25)])
        run()
    finally:
        spark.conf.unset("kplex.stream.startingOffsets")
    times = sorted(json.loads(r.value)["viewtime"] for r in verify.read_topic(bootstrap, target))
    assert times == list(range(5_000, 5_025))

    bounded = stream(spark, source, fresh_name("never"), tmp_path / "chk_end", endingOffsets="latest")
    error = failure_of(bounded.trigger(availableNow=True).start())
    assert "[KPLEX_BAD_OPTION] read bounds: 'endingOffsets' ends a batch read; a stream has no end" in error, error[:2000]
