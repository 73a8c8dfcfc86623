"""Streams keep every on-time record, in order, however the input is paced.

The invariant: one source, written by a batch INSERT, by Trigger.AvailableNow in one
micro-batch or cut by maxOffsetsPerTrigger into many (each read by 2 tasks, or with
minPartitions 7, by one task a partition), by scheduled AvailableNow runs with
the source appended between them, or by a running query, gives the same records in the
same order per virtual partition, and finds the same late ones (here: none). Every check
reads the derived topic back with a plain read_committed consumer.
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

from confluent_kafka import Producer
from test_commit_recovery import SHORT_TIMEOUT, await_kafka_aborts
from test_streaming import SELECT, assert_exactly_once_in_order, create, run_driver, stream

from kplex.streaming import recent_progress
from kplex.testing import datagen, verify

DELAY_MS = 5_000
# Event time per record on each source partition: they advance at different speeds.
STEPS_MS = (1_000, 100, 300)


def paced_records(partition: int, first: int, count: int, seed: int) -> list[tuple[int, bytes, bytes]]:
    """Records `first`..`first + count` of a partition: its own pace, each up to 3 s behind
    the largest before it on that partition (within the 5 s bound)."""
    rng = random.Random(seed * 1_000 + partition)
    out = []
    for i in range(first, first + count):
        rng.seed(seed * 1_000_003 + partition * 10_007 + i)
        viewtime = datagen.ARTICLE_START_MS + i * STEPS_MS[partition] + rng.randrange(3_000)
        value = json.dumps({"viewtime": viewtime, "userid": f"User_{rng.randrange(15)}",
                            "pageid": f"Page_{partition}"}, separators=(",", ":")).encode()
        out.append((partition, f"Page_{partition}".encode(), value))
    return out


def produce_slice(bootstrap: str, topic: str, index: int, slices: int, per_partition: int) -> None:
    """The index-th of `slices` equal slices of each partition's records."""
    size = per_partition // slices
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for partition in range(3):
        for p, key, value in paced_records(partition, index * size, size, seed=7):
            producer.produce(topic, key=key, value=value, partition=p)
    assert producer.flush(30) == 0


def available_now(spark, source: str, target: str, chk: Path, **options: str):
    query = stream(spark, source, target, chk, **options).trigger(availableNow=True).start()
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return query


def late(query) -> int:
    return sum(int((p.sink.metrics or {}).get("lateRecords", "0")) for p in recent_progress(query))


def sequences(bootstrap: str, topic: str) -> dict[int, list[bytes | None]]:
    return verify.virtual_partition_sequences(verify.read_topic(bootstrap, topic))


def test_every_pacing_of_the_same_source_writes_what_the_batch_insert_writes(
        spark, bootstrap, fresh_name, tmp_path):
    per_partition, slices = 300, 5
    source = fresh_name("views_paced")
    datagen.ensure_topic(bootstrap, source, 3)
    targets = {name: fresh_name(f"by_user_{name}")
               for name in ("insert", "whole", "limited", "split", "runs", "live")}
    for target in targets.values():
        create(spark, target, delay_ms=DELAY_MS)
    total = 3 * per_partition
    lates: dict[str, int] = {}

    # A running query sees the source grow, slice by slice, over many micro-batches.
    live = (stream(spark, source, targets["live"], tmp_path / "live")
            .trigger(processingTime="500 milliseconds").start())
    try:
        for index in range(slices):
            produce_slice(bootstrap, source, index, slices, per_partition)
            # Scheduled runs: one AvailableNow run after each slice; what is held stays held.
            runs = available_now(spark, source, targets["runs"], tmp_path / "runs", releaseAtEnd="false")
            lates["runs"] = lates.get("runs", 0) + late(runs)
            time.sleep(2)
        deadline = time.time() + 120
        while sum(p.numInputRows for p in recent_progress(live)) < total and time.time() < deadline:
            time.sleep(1)
        lates["live"] = late(live)
        assert sum(p.numInputRows for p in recent_progress(live)) == total
        assert live.exception() is None, live.exception()
    finally:
        live.stop()
    # Nothing held is released early: before their last run, the streams hold the records
    # within the bound of the slowest partition's largest order value.
    held_before_end = total - len(verify.read_topic(bootstrap, targets["runs"]))
    assert held_before_end > 0

    spark.sql(f"INSERT INTO kplex.{targets['insert']} SELECT {', '.join(SELECT)} FROM kplex.{source}")
    whole = available_now(spark, source, targets["whole"], tmp_path / "whole", releaseAtEnd="true")
    lates["whole"] = late(whole)
    limited = available_now(spark, source, targets["limited"], tmp_path / "limited",
                            maxOffsetsPerTrigger="60", releaseAtEnd="true")
    lates["limited"] = late(limited)
    assert len([p for p in recent_progress(limited) if p.numInputRows > 0]) >= 10
    # minPartitions 7 over 3 partitions: a task each (a partition's range is never cut).
    split = available_now(spark, source, targets["split"], tmp_path / "split",
                          maxOffsetsPerTrigger="300", minPartitions="7", releaseAtEnd="true")
    lates["split"] = late(split)
    # The input has ended: one last run of the scheduled job and of the live query releases the rest.
    for name in ("runs", "live"):
        lates[name] += late(available_now(spark, source, targets[name], tmp_path / name, releaseAtEnd="true"))

    assert lates == {"runs": 0, "live": 0, "whole": 0, "limited": 0, "split": 0}
    expected = sequences(bootstrap, targets["insert"])
    assert sum(len(v) for v in expected.values()) == total
    for name, target in targets.items():
        assert_exactly_once_in_order(bootstrap, source, target, total)
        assert sequences(bootstrap, target) == expected, f"{name} differs from the batch INSERT"


def test_a_tiny_backlog_beside_a_huge_one_drains_under_a_rate_limit(spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_lopsided"), fresh_name("by_user_lopsided")
    datagen.ensure_topic(bootstrap, source, 2)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for partition, count in ((0, 3_000), (1, 5)):
        for i in range(count):
            value = json.dumps({"viewtime": datagen.ARTICLE_START_MS + i * 100, "userid": f"User_{i % 15}",
                                "pageid": "Page_1"}).encode()
            producer.produce(source, key=b"Page_1", value=value, partition=partition)
    assert producer.flush(30) == 0
    create(spark, target, delay_ms=DELAY_MS)
    query = available_now(spark, source, target, tmp_path / "chk", maxOffsetsPerTrigger="400", releaseAtEnd="true")
    first = next(p for p in recent_progress(query) if p.numInputRows > 0)
    end = json.loads(first.json)["sources"][0]["endOffset"]
    end = end if isinstance(end, dict) else json.loads(end)
    assert end[source]["1"] == 5, end
    assert late(query) == 0
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.ok and report.derived_count == 3_005, report.summary()


def one_partition_source(bootstrap: str, name: str) -> str:
    datagen.ensure_topic(bootstrap, name, 1)
    return name


def produce_at(bootstrap: str, topic: str, *viewtimes: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for t in viewtimes:
        value = json.dumps({"viewtime": t, "userid": "User_1", "pageid": "Page_1"}).encode()
        producer.produce(topic, key=b"Page_1", value=value)
    assert producer.flush(30) == 0


def viewtimes(bootstrap: str, topic: str) -> list[int]:
    return [json.loads(r.value)["viewtime"] for r in verify.read_topic(bootstrap, topic)]


def test_a_record_within_the_bound_after_a_run_ended_is_written_in_order_not_late(
        spark, bootstrap, fresh_name, tmp_path):
    """A job run on a schedule: run 1 reads t and t+20 s, run 2 reads t+10 s, which is
    10 s behind the largest order value seen, well inside a 30 s bound."""
    source = one_partition_source(bootstrap, fresh_name("views_runs"))
    target = fresh_name("by_user_runs")
    create(spark, target, delay_ms=30_000)
    t = datagen.ARTICLE_START_MS
    produce_at(bootstrap, source, t, t + 20_000)
    first = available_now(spark, source, target, tmp_path / "chk", releaseAtEnd="false")
    assert viewtimes(bootstrap, target) == []  # both within the bound: held, in the checkpoint
    produce_at(bootstrap, source, t + 10_000)
    second = available_now(spark, source, target, tmp_path / "chk", releaseAtEnd="false")
    assert late(first) == late(second) == 0
    last = available_now(spark, source, target, tmp_path / "chk", releaseAtEnd="true")
    assert late(last) == 0
    assert viewtimes(bootstrap, target) == [t, t + 10_000, t + 20_000]


def test_a_record_within_the_bound_after_an_idle_period_is_written_in_order_not_late(
        spark, bootstrap, fresh_name, tmp_path):
    source = one_partition_source(bootstrap, fresh_name("views_idle"))
    target = fresh_name("by_user_idle")
    create(spark, target, delay_ms=30_000)
    t = datagen.ARTICLE_START_MS
    query = (stream(spark, source, target, tmp_path / "chk").trigger(processingTime="500 milliseconds").start())
    try:
        produce_at(bootstrap, source, t, t + 20_000)
        time.sleep(12)  # idle: many micro-batches without a record (an idle flush came at 10 s before)
        produce_at(bootstrap, source, t + 10_000)
        deadline = time.time() + 60
        while sum(p.numInputRows for p in recent_progress(query)) < 3 and time.time() < deadline:
            time.sleep(1)
        assert query.exception() is None, query.exception()
        assert sum(p.numInputRows for p in recent_progress(query)) == 3, "the live query read the record after the idle period"
        assert late(query) == 0
    finally:
        query.stop()
    assert late(available_now(spark, source, target, tmp_path / "chk", releaseAtEnd="true")) == 0
    assert viewtimes(bootstrap, target) == [t, t + 10_000, t + 20_000]


def test_a_second_query_on_a_written_table_never_takes_a_virtual_partition_back(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_second"), fresh_name("by_user_second")
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=27, out_of_order_ms=2_000)
    create(spark, target, delay_ms=DELAY_MS, **{"kplex.late_policy": "drop"})
    available_now(spark, source, target, tmp_path / "first", releaseAtEnd="true")
    assert_exactly_once_in_order(bootstrap, source, target, 600)
    # A new checkpoint (the query was changed): it reads the source again from its start. What
    # the first query wrote is skipped (issue #35: no record twice), neither written nor late.
    second = available_now(spark, source, target, tmp_path / "second", releaseAtEnd="true")
    records = verify.read_topic(bootstrap, target)
    skipped = sum(int((p.sink.metrics or {}).get("alreadyWritten", "0")) for p in recent_progress(second))
    assert late(second) == 0 and skipped == 600
    assert len(records) == 600
    for vp, values in verify.virtual_partition_sequences(records).items():
        orders = [json.loads(v)["viewtime"] for v in values]
        assert orders == sorted(orders), f"virtual partition {vp} went back"


def test_a_transactional_upstream_seen_half_committed_makes_nothing_late_downstream(
        spark, bootstrap, fresh_name, tmp_path):
    """A kplex table written by a streaming query whose driver halts between two commits of an
    epoch: first the committed transaction is in part hidden behind the open ones (the last
    stable offset stops at the first open one on each partition), then, once Kafka has aborted
    those, half visible. A downstream query reading it at
    both moments, and after the upstream's restart finished the epoch, finds no late record and
    writes every record once."""
    source, upstream, downstream = fresh_name("views_up"), fresh_name("by_user_up"), fresh_name("by_page_down")
    datagen.generate_pageviews(bootstrap, source, 900, partitions=3, users=15, seed=29, out_of_order_ms=2_000)
    create(spark, upstream, delay_ms=DELAY_MS)
    create(spark, downstream, delay_ms=DELAY_MS)
    done = run_driver(bootstrap, source, upstream, tmp_path / "up", {})
    assert done is not None and "DONE" in done.stdout, done.stderr[-3000:]
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=30, out_of_order_ms=2_000,
                               create=False, start_ms=datagen.ARTICLE_START_MS + 1_000_000)
    # The driver commits an epoch's task transactions one at a time, and halts after the first.
    halted = run_driver(bootstrap, source, upstream, tmp_path / "up",
                        {**SHORT_TIMEOUT, "spark.kplex.testing.halt_after_commits": "1"})
    assert "DONE" not in halted.stdout, "the upstream driver halted mid-epoch"
    hidden = len(verify.read_topic(bootstrap, upstream))
    first = available_now(spark, upstream, downstream, tmp_path / "down", releaseAtEnd="false")
    await_kafka_aborts(bootstrap, upstream)
    half = len(verify.read_topic(bootstrap, upstream))
    second = available_now(spark, upstream, downstream, tmp_path / "down", releaseAtEnd="false")
    done = run_driver(bootstrap, source, upstream, tmp_path / "up", SHORT_TIMEOUT)
    assert done is not None and "DONE" in done.stdout, done.stderr[-3000:]
    assert 900 <= hidden <= half < 1_500, (hidden, half)  # the first of the epoch's transactions, not the others
    assert half > 900, half
    assert_exactly_once_in_order(bootstrap, source, upstream, 1_500)
    last = available_now(spark, upstream, downstream, tmp_path / "down", releaseAtEnd="true")
    assert late(first) == late(second) == late(last) == 0
    report = verify.check_derived_topic(bootstrap, upstream, downstream, 9, 3)
    assert report.ok and report.derived_count == 1_500, report.summary()


def test_an_insert_into_a_table_holding_later_records_never_takes_a_virtual_partition_back(
        spark, bootstrap, fresh_name, tmp_path):
    source, copy, target = (fresh_name("views_insert_again"), fresh_name("views_insert_copy"),
                            fresh_name("by_user_insert_again"))
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=31, out_of_order_ms=2_000)
    create(spark, target, delay_ms=DELAY_MS)
    # A streaming query wrote the table first; the INSERT of the same records comes after: the
    # stream read every one of them and none is above its virtual partition, so the INSERT
    # writes none again (not late either: already written).
    available_now(spark, source, target, tmp_path / "chk", releaseAtEnd="true")
    assert_exactly_once_in_order(bootstrap, source, target, 600)
    spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{source}")
    summary = json.loads(spark.conf.get("kplex.last_write"))
    assert summary["rows"] == 0 and summary["already_written"] == 600, summary
    # The same records from another topic, which no writer of the table read: below what the
    # table holds, they are late.
    datagen.generate_pageviews(bootstrap, copy, 600, partitions=3, users=15, seed=31, out_of_order_ms=2_000)
    insert = f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{copy}"
    try:
        spark.sql(insert)
        raise AssertionError("the INSERT below what the table holds was accepted")
    except Exception as e:  # noqa: BLE001 - the error class is kplex's LateRecordError
        assert "KPLEX_LATE_RECORD" in str(e) and "an INSERT writes only past what each virtual partition holds" in str(e), str(e)[:2000]
    before = verify.read_topic(bootstrap, target)
    assert len(before) == 600  # the failed INSERT wrote nothing
    # Under 'drop', only the records at each virtual partition's highest order value go in.
    # kplex tables cannot be altered: here the policy is the write's option.
    (spark.read.format("kplex").option("table", copy).load().selectExpr(*SELECT)
     .write.format("kplex").option("table", target).option("kplex.late_policy", "drop").mode("append").save())
    records = verify.read_topic(bootstrap, target)
    tops = {vp: max(json.loads(v)["viewtime"] for v in values)
            for vp, values in verify.virtual_partition_sequences(before).items()}
    at_top = sum(1 for vp, values in verify.virtual_partition_sequences(before).items()
                 for v in values if json.loads(v)["viewtime"] == tops[vp])
    assert len(records) == 600 + at_top
    summary = json.loads(spark.conf.get("kplex.last_write"))
    assert (summary["rows"], summary["late"], summary["dropped"]) == (at_top, 600 - at_top, 600 - at_top), summary
    for vp, values in verify.virtual_partition_sequences(records).items():
        orders = [json.loads(v)["viewtime"] for v in values]
        assert orders == sorted(orders), f"virtual partition {vp} went back"


def test_a_query_whose_rows_carry_no_source_position_still_releases_by_its_watermark(
        spark, bootstrap, fresh_name, tmp_path):
    """A join with a static table: kplex does not follow the plan to the source, so the input
    counts as one partition; records below its watermark are still written in the run."""
    source, target = fresh_name("views_joined"), fresh_name("by_user_joined")
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=39)
    create(spark, target, delay_ms=DELAY_MS)
    users = spark.createDataFrame([(f"User_{i}",) for i in range(100)], "userid STRING")

    def joined(release_at_end: str):
        query = (spark.readStream.format("kplex").option("table", source).option("releaseAtEnd", release_at_end)
                 .load().selectExpr("value", "kplex_json(value, '/userid') AS userid")
                 .join(users, "userid").selectExpr(*SELECT)
                 .writeStream.format("kplex").option("table", target)
                 .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return query

    first = joined("false")
    written = len(verify.read_topic(bootstrap, target))
    assert 0 < written < 600 and late(first) == 0  # below the watermark: written; the rest: held
    joined("true")
    assert_exactly_once_in_order(bootstrap, source, target, 600)


def test_microsecond_event_times_give_the_batch_inserts_sequence_however_held(spark, bootstrap, fresh_name, tmp_path):
    """Order values are milliseconds, their ties broken by key, then value. With TIMESTAMP event
    times in microseconds, eight records share each millisecond; a stream cut into micro-batches
    that hold records back from one to the next writes the batch INSERT's sequence in every
    virtual partition (read back with a plain consumer), and fails on none of what it held."""
    source, inserted, streamed = fresh_name("micros_src"), fresh_name("micros_insert"), fresh_name("micros_stream")
    datagen.ensure_topic(bootstrap, source, 2)
    rng = random.Random(5)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    for i in range(1_600):
        micros = datagen.ARTICLE_START_MS * 1_000 + (i // 8) * 20_000 + rng.randrange(1_000)
        value = json.dumps({"us": micros, "userid": f"User_{rng.randrange(15)}"}, separators=(",", ":")).encode()
        producer.produce(source, value=value, partition=i % 2)
    assert producer.flush(30) == 0
    select = ("kplex_key(kplex_json(value, '/userid')) AS key",
              "kplex_order(timestamp_micros(CAST(kplex_json(value, '/us') AS BIGINT))) AS order_value", "value")
    create(spark, inserted, delay_ms=100)
    create(spark, streamed, delay_ms=100)
    spark.sql(f"INSERT INTO kplex.{inserted} SELECT {', '.join(select)} FROM kplex.{source}")
    query = available_now(spark, source, streamed, tmp_path / "chk", select=select, maxOffsetsPerTrigger="200",
                          releaseAtEnd="true")
    progress = [p for p in recent_progress(query) if p.numInputRows > 0]
    assert len(progress) >= 6 and any(int(p.sink.metrics.get("heldRecords", "0")) > 0 for p in progress[:-1])
    assert late(query) == 0
    records = verify.read_topic(bootstrap, inserted)
    expected = verify.virtual_partition_sequences(records)
    assert sum(len(v) for v in expected.values()) == 1_600
    ties = [(r.headers["kplex.vp"], r.headers["kplex.order"]) for r in records]
    assert len(set(ties)) < len(ties) * 0.9, "records share a millisecond in their virtual partition"
    assert sequences(bootstrap, streamed) == expected


def test_a_null_order_ordered_first_ties_with_the_smallest_bigint_by_key_in_a_batch_and_a_stream(
        spark, bootstrap, fresh_name, tmp_path):
    """Under null_order = first a NULL order value is Long.MIN_VALUE, written so in kplex.order.
    A BIGINT order of exactly that value is then a tie, broken by key, then value: the batch
    INSERT and a stream that holds those records from one micro-batch to the next write the
    same sequence, the one sorted by (order value, key, value) here, read with a plain consumer."""
    smallest = -(2 ** 63)
    source, inserted, streamed = fresh_name("nullfirst_src"), fresh_name("nullfirst_insert"), fresh_name("nullfirst_stream")
    datagen.ensure_topic(bootstrap, source, 1)
    first = [("u3", None), ("u1", smallest), ("u2", None), ("u0", smallest), ("u4", None), ("u1", None)]
    rng = random.Random(11)
    later = [(f"u{rng.randrange(5)}", datagen.ARTICLE_START_MS + i * 100) for i in range(40)]
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    values = []
    for user, viewtime in first + later:
        value = json.dumps({"viewtime": viewtime, "userid": user}, separators=(",", ":")).encode()
        values.append((smallest if viewtime is None else viewtime, user.encode(), value))
        producer.produce(source, value=value, partition=0)
    assert producer.flush(30) == 0
    expected = [value for _, _, value in sorted(values)]
    for table in (inserted, streamed):
        spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '1',"
                  " 'kplex.physical_partitions' = '1', 'kplex.max_delay_ms' = '10000', 'kplex.null_order' = 'first')")
    spark.sql(f"INSERT INTO kplex.{inserted} SELECT {', '.join(SELECT)} FROM kplex.{source}")
    records = verify.read_topic(bootstrap, inserted)
    assert [r.headers["kplex.order"] for r in records[:6]] == [str(smallest).encode()] * 6
    assert sequences(bootstrap, inserted) == {0: expected}
    query = available_now(spark, source, streamed, tmp_path / "chk", maxOffsetsPerTrigger="2", releaseAtEnd="true")
    progress = [p for p in recent_progress(query) if p.numInputRows > 0]
    assert len(progress) >= 3 and int(progress[0].sink.metrics.get("heldRecords", "0")) > 0
    assert late(query) == 0
    assert sequences(bootstrap, streamed) == {0: expected}
