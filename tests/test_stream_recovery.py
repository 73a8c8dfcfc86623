"""A stream never skips data silently, and its checkpoint restarts wherever it is put:
batch 0 rerun after a restart, a source topic recreated with fewer records, a moved
checkpoint. Every check reads the derived topic back with a plain read_committed consumer.
"""
from __future__ import annotations

import json
import shutil
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions
from test_streaming import (
    assert_exactly_once_in_order,
    create,
    pageview,
    run_available_now,
    run_driver,
    stream,
)

from kplex.streaming import recent_progress
from kplex.testing import datagen, verify


def test_batch_0_rerun_after_a_driver_kill_reads_what_it_planned_from_latest(
        spark, bootstrap, fresh_name, tmp_path):
    """startingOffsets = latest, a steady producer, the driver killed while batch 0 runs:
    the restart reads batch 0's range again from the offsets the checkpoint kept, so
    nothing produced after the query started is missing (re-resolving `latest` would skip it)."""
    source, target = fresh_name("views_batch0"), fresh_name("by_user_batch0")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=33)
    create(spark, target, delay_ms=1_000)
    chk = tmp_path / "chk"
    stop = threading.Event()

    def steady() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
        i = 0
        while not stop.is_set():
            key, value = pageview(f"User_{i % 15}", datagen.ARTICLE_START_MS + 10_000_000 + i * 10, f"Page_{i % 7}")
            producer.produce(source, key=key, value=value)
            producer.poll(0)
            i += 1
            time.sleep(0.01)
        producer.flush(30)

    producing = threading.Thread(target=steady)
    producing.start()
    try:
        # Slow tasks: batch 0 is planned (its end offsets in the checkpoint) and still running.
        run_driver(bootstrap, source, target, chk, {"spark.kplex.testing.sleep_ms": "1000"}, starting="latest",
                   kill_when=lambda: (chk / "offsets" / "0").exists())
        time.sleep(1)
    finally:
        stop.set()
        producing.join(60)
    assert (chk / "offsets" / "0").exists() and not (chk / "commits" / "0").exists(), "killed during batch 0"
    initial = json.loads((chk / "sources" / "0" / "kplex-initial-offsets.json").read_text())[source]
    done = run_driver(bootstrap, source, target, chk, {}, starting="latest")
    assert done is not None and "DONE" in done.stdout, done.stderr[-3000:]
    expected = sorted(r.value for r in verify.read_topic(bootstrap, source) if r.offset >= initial[str(r.partition)])
    written = sorted(r.value for r in verify.read_topic(bootstrap, target))
    assert len(expected) > 0 and written == expected


def delete_topic(bootstrap: str, topic: str) -> None:
    """Deletes ``topic`` as Kafka's tools would, and waits until the broker no longer lists it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([topic])[topic].result()
    deadline = time.time() + 60
    while topic in admin.list_topics(timeout=10).topics and time.time() < deadline:
        time.sleep(0.5)


def streamed_then_shrunk(spark, bootstrap: str, source: str, target: str, tmp_path, seeds: tuple[int, int]):
    """300 pageviews of a 3-partition ``source`` streamed into a table ``target`` (one
    AvailableNow run), then ``source`` deleted and made again with 2 partitions and 200 later
    pageviews; returns the query's checkpoint."""
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=seeds[0])
    create(spark, target, delay_ms=1_000)
    chk = tmp_path / "chk"
    run_available_now(spark, source, target, chk)
    assert len(verify.read_topic(bootstrap, target)) == 300
    delete_topic(bootstrap, source)
    datagen.generate_pageviews(bootstrap, source, 200, partitions=2, users=15, seed=seeds[1],
                               start_ms=datagen.ARTICLE_START_MS + 10_000_000)
    return chk


def regrow_partition_2(bootstrap: str, source: str) -> None:
    """A partition 2 made again in ``source`` (left with 2), holding 150 pageviews later in
    event time than anything the tests here wrote before."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(source, 3)])[source].result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    start = datagen.ARTICLE_START_MS + 20_000_000
    for i in range(150):
        producer.produce(source, partition=2, key=f"User_{i % 15}".encode(), value=json.dumps(
            {"viewtime": start + i * 1_000, "userid": f"User_{i % 15}", "pageid": f"Page_{i}"}).encode())
    assert producer.flush(30) == 0


@pytest.mark.parametrize("records", [60, 450], ids=["fewer records", "more records than were read"])
def test_a_source_recreated_is_data_loss_or_read_from_its_start(spark, bootstrap, fresh_name, tmp_path, records):
    """Deleted and created again, with fewer records than the query read (its end went back) or
    with more (its end is past where the query stands, which offsets alone cannot tell: the
    topic's id can): the query fails with [KPLEX_DATA_LOSS] naming the recreated topic, writing
    nothing; with failOnDataLoss = false it reads the new topic from its start, each record once."""
    source, target = fresh_name("views_recreated"), fresh_name("by_user_recreated")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=35)
    create(spark, target, delay_ms=1_000, **{"kplex.late_policy": "drop"})
    chk = tmp_path / "chk"
    run_available_now(spark, source, target, chk)
    assert len(verify.read_topic(bootstrap, target)) == 300
    delete_topic(bootstrap, source)
    # Later in event time than everything written, so none is late below what is there.
    datagen.generate_pageviews(bootstrap, source, records, partitions=3, users=15, seed=36,
                               start_ms=datagen.ARTICLE_START_MS + 10_000_000)
    with pytest.raises(Exception) as failure:
        run_available_now(spark, source, target, chk)
    message = str(failure.value)
    assert "KPLEX_DATA_LOSS" in message and "the topic was deleted and created again" in message, message[:2000]
    assert "failOnDataLoss" in message, message[:2000]
    assert len(verify.read_topic(bootstrap, target)) == 300  # nothing written
    query = run_available_now(spark, source, target, chk, failOnDataLoss="false")
    losses = max(int((p.sources[0].metrics or {}).get("dataLossEvents", "0")) for p in recent_progress(query))
    assert losses >= 3, [p.sources[0].metrics for p in recent_progress(query)]  # each partition recreated: counted
    written = verify.read_topic(bootstrap, target)
    new = {r.value for r in verify.read_topic(bootstrap, source)}
    assert len(written) == 300 + records and sum(1 for r in written if r.value in new) == records


def test_a_source_recreated_with_fewer_partitions_does_not_hold_the_watermark_on_the_one_gone(
        spark, bootstrap, fresh_name, tmp_path):
    """With failOnDataLoss = false, a partition the recreated topic no longer has is counted as
    lost and then idle: the new partitions' records are released by their own watermark (here
    without releaseAtEnd), not held for good below the old partition's last order value."""
    source, target = fresh_name("views_fewer"), fresh_name("by_user_fewer")
    chk = streamed_then_shrunk(spark, bootstrap, source, target, tmp_path, seeds=(38, 39))
    # The losses are reported by the first micro-batch only (the next leaves partition 2 out).
    query = run_available_now(spark, source, target, chk, failOnDataLoss="false", releaseAtEnd="false")
    assert query.exception() is None, query.exception()
    progress = recent_progress(query)
    # Partitions 0 and 1 recreated, partition 2 gone: three losses, reported once each.
    losses = [int((p.sources[0].metrics or {}).get("dataLossEvents", "0")) for p in progress]
    assert set(losses) == {3}, [p.sources[0].metrics for p in progress]
    assert any("2" in (p.sink.metrics or {}).get("idlePartitions", "") for p in progress), [
        p.sink.metrics for p in progress]
    last = max((f for f in (chk / "offsets").iterdir() if f.name.isdigit()), key=lambda f: int(f.name))
    assert set(json.loads(last.read_text().splitlines()[-1])[source]) == {"0", "1"}, "left out once reported"
    written = verify.read_topic(bootstrap, target)
    assert 300 + 50 <= len(written) < 500, len(written)  # released up to the new partitions' watermark
    assert len({r.value for r in written}) == len(written)
    by_vp: dict[bytes, list[int]] = {}
    for r in written:
        by_vp.setdefault(r.headers["kplex.vp"], []).append(int(r.headers["kplex.order"]))
    assert all(orders == sorted(orders) for orders in by_vp.values())

    # A partition 2 created again is a new partition: read from its beginning, not from where the
    # old one stood (about offset 100), and no loss is reported again after a restart.
    regrow_partition_2(bootstrap, source)
    again = run_available_now(spark, source, target, chk, failOnDataLoss="false")
    assert again.exception() is None, again.exception()
    assert all(int((p.sources[0].metrics or {}).get("dataLossEvents", "0")) == 0 for p in recent_progress(again))
    values = {r.value for r in verify.read_topic(bootstrap, target)}
    assert all(r.value in values for r in verify.read_topic(bootstrap, source) if r.partition == 2)


def test_the_rerun_of_a_micro_batch_that_found_a_partition_gone_reads_the_one_made_again_once(
        spark, bootstrap, fresh_name, tmp_path):
    """The micro-batch that finds a source partition gone fails (failOnDataLoss) after Spark wrote
    its offset; the partition is made again with records before the query restarts with
    failOnDataLoss = false. The rerun plans what the failed run planned (nothing of the partition:
    the offset says it was gone), and the next micro-batch reads the new partition from its
    beginning: each of its records is written once, none twice and none judged late."""
    source, target = fresh_name("views_regrown"), fresh_name("by_user_regrown")
    chk = streamed_then_shrunk(spark, bootstrap, source, target, tmp_path, seeds=(40, 41))
    with pytest.raises(Exception) as failure:
        run_available_now(spark, source, target, chk)
    assert "KPLEX_DATA_LOSS" in str(failure.value), str(failure.value)[:2000]
    planned = max((f for f in (chk / "offsets").iterdir() if f.name.isdigit()), key=lambda f: int(f.name))
    assert json.loads(planned.read_text().splitlines()[-1]).get("kplex.gone") == [2], planned.read_text()
    regrow_partition_2(bootstrap, source)
    query = run_available_now(spark, source, target, chk, failOnDataLoss="false")
    assert query.exception() is None, query.exception()
    progress = recent_progress(query)
    late = sum(int((p.sink.metrics or {}).get(k, "0")) for p in progress
               for k in ("lateBehindPartition", "lateBelowWritten", "lateAfterIdle"))
    assert late == 0, [p.sink.metrics for p in progress]
    written = [r.value for r in verify.read_topic(bootstrap, target)]
    assert len(written) == len(set(written)), "a record written twice"
    regrown = [r.value for r in verify.read_topic(bootstrap, source) if r.partition == 2]
    assert len(regrown) == 150 and set(regrown) <= set(written)
    assert len(written) == 300 + 200 + 150


def test_a_moved_checkpoint_with_held_records_restarts_exactly_once_in_order(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("views_moved"), fresh_name("by_user_moved")
    datagen.generate_pageviews(bootstrap, source, 600, partitions=3, users=15, seed=37, out_of_order_ms=2_000)
    create(spark, target, delay_ms=5_000)
    first = tmp_path / "first"
    query = stream(spark, source, target, first, releaseAtEnd="false").trigger(availableNow=True).start()
    query.awaitTermination(300)
    held = sum(int((p.sink.metrics or {}).get("heldRecords", "0")) for p in recent_progress(query)[-1:])
    assert held > 0 and len(verify.read_topic(bootstrap, target)) == 600 - held
    moved = tmp_path / "elsewhere" / "chk"
    shutil.move(str(first), str(moved))
    run_available_now(spark, source, target, moved)
    assert_exactly_once_in_order(bootstrap, source, target, 600)


def test_records_the_broker_deletes_while_a_task_reads_them_are_data_loss_naming_them(spark, bootstrap, fresh_name):
    """Retention (here DeleteRecords) that removes offsets after the read planned them and before
    its task fetched them: the read fails with [KPLEX_DATA_LOSS] naming topic, partition and the
    offsets lost, not Kafka's bare OffsetOutOfRangeException (kplex's consumers never reset).
    A slow step after the read keeps its task fetching while the records go."""
    from confluent_kafka import TopicPartition
    from pyspark.sql.functions import udf

    from kplex import errors
    from kplex.errors import translated

    topic = fresh_name("deleted_in_read")
    datagen.ensure_topic(bootstrap, topic, 1)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(6_000):
        producer.produce(topic, key=str(i).encode(), value=b"x" * 4_000, partition=0)
    assert producer.flush(60) == 0

    @udf("int")
    def slowly(value):  # ~4 ms a record; a fetch brings at most 4 MiB (kplex's), ~1,000 records of 4 KB
        time.sleep(0.004)
        return len(value)

    outcome: list[BaseException | None] = []

    def read() -> None:
        try:
            with translated():
                spark.read.format("kplex").option("table", topic).load().select(slowly("value")).collect()
            outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - the test inspects it
            outcome.append(e)

    reader = threading.Thread(target=read)
    reader.start()
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + 120
    while not tracker.getActiveStageIds():
        assert time.monotonic() < deadline and reader.is_alive(), outcome
        time.sleep(0.05)
    time.sleep(1.0)  # a few hundred records in: the next fetch, at ~1,000 or ~2,000, is well below 5,000
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 5_000)]).values():
        future.result(timeout=30)
    reader.join(240)
    assert outcome and isinstance(outcome[0], errors.DataLossError), outcome
    message = str(outcome[0])
    assert f"topic '{topic}' partition 0: offsets [" in message, message[:2000]
    assert ", 5000) were not read because the broker deleted them (retention or truncation) after the read" \
        " planned them" in message, message[:2000]
