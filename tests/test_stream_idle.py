"""Live streams never stall on a partition without records (issue #33, idleness).

A source partition read to its end that is empty, or has had no new record for the read's
idleTimeoutMs, stops holding the watermark until its next record. The invariants, checked
with a plain read_committed consumer: a live stream whose topic has a partition that is never
written makes its records visible within max_delay_ms and a few micro-batches; a partition
that goes quiet mid-run and comes back with current event times stalls nothing past the
timeout and makes nothing late; the records are written exactly once, each virtual partition
in order.
"""
from __future__ import annotations

import json
import threading
import time
from collections import Counter

from confluent_kafka import Producer
from test_streaming import SELECT, assert_exactly_once_in_order, create, stream

from kplex.streaming import recent_progress
from kplex.testing import datagen, verify

DELAY_MS = 2_000


class LiveProducer:
    """Writes records with the current time as their event time to chosen partitions, ~100/s
    each, until stopped; `partitions` may be changed while it runs."""

    def __init__(self, bootstrap: str, topic: str, partitions: set[int]) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
        self.topic = topic
        self.partitions = set(partitions)
        self.sent = 0
        self.last_viewtime = 0
        self.users = 13
        self.unflushed: int | None = None  # what the producer had not delivered when stopped
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            for partition in sorted(self.partitions):
                viewtime = int(time.time() * 1000)
                value = json.dumps({"viewtime": viewtime, "userid": f"User_{i % self.users}"}, separators=(",", ":"))
                self.producer.produce(self.topic, key=f"Page_{partition}".encode(), value=value.encode(),
                                      partition=partition)
                self.sent += 1
                self.last_viewtime = viewtime
            i += 1
            self.producer.poll(0)
            time.sleep(0.01)
        self.unflushed = self.producer.flush(30)

    def __enter__(self) -> LiveProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(60)
        if exc[0] is None:  # else the test's own failure is the one to report
            assert self.unflushed == 0, f"the live producer stopped with {self.unflushed} records not delivered"


def written(bootstrap: str, topic: str) -> int:
    return len(verify.read_topic(bootstrap, topic))


def late(query) -> int:
    return sum(int((p.sink.metrics or {}).get("lateRecords", "0")) for p in recent_progress(query))


def scheduled_run(spark, source: str, target: str, checkpoint, **read_options: str):
    """One AvailableNow run, as a scheduler starts it, that keeps what it holds at its end."""
    query = (stream(spark, source, target, checkpoint, releaseAtEnd="false", **read_options)
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return query


def release_the_rest(spark, source: str, target: str, checkpoint) -> int:
    """The input has ended: one AvailableNow run on the same checkpoint releases what is held."""
    query = stream(spark, source, target, checkpoint, releaseAtEnd="true").trigger(availableNow=True).start()
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    return late(query)


def test_a_live_stream_with_a_partition_never_written_makes_its_records_visible_without_waiting_for_it(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("idle_src"), fresh_name("idle_by_user")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target, delay_ms=DELAY_MS)
    chk = tmp_path / "chk"
    query = stream(spark, source, target, chk).trigger(processingTime="1 second").start()
    try:
        with LiveProducer(bootstrap, source, {0, 1}) as producer:
            time.sleep(20)
            sent_before, viewtime_before = producer.sent, producer.last_viewtime
            # Everything produced up to here lies below the watermark max_delay_ms later:
            # within a few more micro-batches it is visible, with partition 2 still empty.
            deadline = time.time() + DELAY_MS / 1000 + 15
            seen = 0
            while time.time() < deadline:
                seen = written(bootstrap, target)
                if seen >= sent_before * 0.9:
                    break
                time.sleep(1)
        assert seen >= sent_before * 0.9, (
            f"{seen} of the {sent_before} records produced up to {viewtime_before} visible: the stream waits for"
            " the empty partition")
        progress = [p.sink.metrics or {} for p in recent_progress(query)]
        assert any(m.get("idlePartitions") == "[2]" for m in progress), progress[-3:]
        assert query.exception() is None, query.exception()
        total = producer.sent
    finally:
        query.stop()
    assert late(query) == 0
    assert release_the_rest(spark, source, target, chk) == 0
    assert_exactly_once_in_order(bootstrap, source, target, total)


def test_a_partition_whose_every_row_a_where_removes_stalls_nothing(spark, bootstrap, fresh_name, tmp_path):
    """Partition 2 gets records all the time, and the query's WHERE removes every one: no row of
    it reaches the sink, so its high never rises, and its end never stops moving. Read to its
    end with no row of it having reached the sink, it is idle, as a kplex table's empty virtual
    partition is: the other partitions' records become visible within max_delay_ms and a few
    micro-batches, none late, none twice; and so again after the query restarts."""
    source, target = fresh_name("filtered_src"), fresh_name("filtered_by_user")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target, delay_ms=DELAY_MS)

    def run_live(seconds: float) -> int:
        """The query, live for ``seconds`` beside the producer; how many late records it counted."""
        before = written(bootstrap, target)
        query = (spark.readStream.format("kplex").option("table", source).option("startingOffsets", "earliest")
                 .load().where("partition != 2").selectExpr(*SELECT)
                 .writeStream.format("kplex").option("table", target)
                 .option("checkpointLocation", str(tmp_path / "chk")).trigger(processingTime="1 second").start())
        try:
            with LiveProducer(bootstrap, source, {0, 1, 2}) as producer:
                time.sleep(seconds)
                kept = producer.sent * 2 // 3
                deadline = time.time() + DELAY_MS / 1000 + 20
                seen = 0
                while time.time() < deadline:
                    seen = written(bootstrap, target) - before
                    if seen >= kept * 0.9:
                        break
                    time.sleep(1)
            assert seen >= kept * 0.9, (
                f"{seen} of the {kept} records of partitions 0 and 1 visible: the stream waits for partition 2")
            assert query.exception() is None, query.exception()
            return late(query)
        finally:
            query.stop()

    assert run_live(20) == 0
    assert run_live(12) == 0  # restarted from its checkpoint
    # No record twice, none of partition 2 (the producer sends equal values to the partitions).
    kept = Counter(r.value for r in verify.read_topic(bootstrap, source) if r.partition != 2)
    written_values = Counter(r.value for r in verify.read_topic(bootstrap, target))
    assert not written_values - kept, list((written_values - kept).items())[:5]


def test_a_partition_that_goes_quiet_and_comes_back_stalls_nothing_past_the_timeout_and_makes_nothing_late(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("quiet_src"), fresh_name("quiet_by_user")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target, delay_ms=DELAY_MS)
    chk = tmp_path / "chk"
    query = (stream(spark, source, target, chk, idleTimeoutMs="3000")
             .trigger(processingTime="1 second").start())
    lates = 0
    try:
        with LiveProducer(bootstrap, source, {0, 1, 2}) as producer:
            time.sleep(8)
            producer.partitions = {0, 1}          # partition 2 goes quiet
            time.sleep(4)
            quiet_at = written(bootstrap, target)
            time.sleep(10)
            during_quiet = written(bootstrap, target)
            producer.partitions = {0, 1, 2}       # and comes back, with current event times
            time.sleep(6)
        assert during_quiet > quiet_at, (
            f"nothing more written while partition 2 was quiet ({quiet_at} -> {during_quiet})")
        total = producer.sent
        deadline = time.time() + 60
        while sum(p.numInputRows for p in recent_progress(query)) < total and time.time() < deadline:
            time.sleep(1)
        assert query.exception() is None, query.exception()
        lates = late(query)
    finally:
        query.stop()
    assert lates == 0
    assert release_the_rest(spark, source, target, chk) == 0
    assert_exactly_once_in_order(bootstrap, source, target, total)


def test_with_strict_waiting_an_empty_partition_still_holds_everything(spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("strict_src"), fresh_name("strict_by_user")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target, delay_ms=DELAY_MS)
    producer = Producer({"bootstrap.servers": bootstrap})
    now = int(time.time() * 1000)
    for i in range(300):
        value = json.dumps({"viewtime": now + i * 100, "userid": f"User_{i % 7}"}).encode()
        producer.produce(source, key=b"k", value=value, partition=i % 2)
    assert producer.flush(30) == 0
    chk = tmp_path / "chk"
    strict = (stream(spark, source, target, chk, idleTimeoutMs="-1", releaseAtEnd="false")
              .trigger(availableNow=True).start())
    strict.awaitTermination(300)
    assert strict.exception() is None, strict.exception()
    assert written(bootstrap, target) == 0, "idleTimeoutMs = -1 waits for the empty partition"
    idle = (stream(spark, source, target, chk, releaseAtEnd="false").trigger(availableNow=True).start())
    idle.awaitTermination(300)
    # With the default, partition 2 is idle at once: what lies below the others' watermark is written.
    # The watermark: min(partition 0's high 298 x 100, partition 1's 299 x 100) - max_delay_ms.
    below = sum(1 for i in range(300) if i * 100 < 298 * 100 - DELAY_MS)
    assert written(bootstrap, target) == below
    assert release_the_rest(spark, source, target, chk) == 0
    assert_exactly_once_in_order(bootstrap, source, target, 300)


def test_a_scheduled_run_finds_a_partition_quiet_since_the_last_run_idle_at_once(spark, bootstrap, fresh_name, tmp_path):
    """Trigger.AvailableNow runs as a scheduler starts them, without releaseAtEnd, idleTimeoutMs
    15 s. Partition 1 got one record before the first run and none since; partition 0 gets 200
    records before each run. The second run starts 21 s after the first planned its offsets,
    finds partition 1 where that run left it, so without a record for longer than the timeout
    (and the 5 s allowed for the clocks of two drivers):
    idle at once, and what lies below partition 0's watermark is written. (Before, each run
    measured the quiet from its own start, and a run shorter than the timeout never found
    partition 1 idle: its records were held run after run and nothing was written.)"""
    source, target = fresh_name("scheduled_src"), fresh_name("scheduled_by_user")
    datagen.ensure_topic(bootstrap, source, 2)
    create(spark, target, delay_ms=DELAY_MS)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    base = int(time.time() * 1000)

    def send(partition: int, viewtime: int, user: str) -> None:
        producer.produce(source, key=b"k", partition=partition,
                         value=json.dumps({"viewtime": viewtime, "userid": user}).encode())

    send(1, base - 1_000, "User_x")
    for i in range(200):
        send(0, base + i * 100, f"User_{i % 7}")
    assert producer.flush(30) == 0
    scheduled_run(spark, source, target, tmp_path / "chk", idleTimeoutMs="15000")
    time.sleep(21)
    for i in range(200, 400):
        send(0, base + i * 100, f"User_{i % 7}")
    assert producer.flush(30) == 0
    second = scheduled_run(spark, source, target, tmp_path / "chk", idleTimeoutMs="15000")
    # Partition 1 idle: the watermark is partition 0's high (record 399) less max_delay_ms; its
    # one record lies below it too.
    below = 1 + sum(1 for i in range(400) if i * 100 < 399 * 100 - DELAY_MS)
    assert written(bootstrap, target) == below
    progress = [p.sink.metrics or {} for p in recent_progress(second)]
    assert any(m.get("idlePartitions") == "[1]" for m in progress), progress
    assert late(second) == 0
    assert release_the_rest(spark, source, target, tmp_path / "chk") == 0
    assert_exactly_once_in_order(bootstrap, source, target, 401)


def test_a_strict_stream_written_by_two_tasks_judges_none_of_its_own_held_records_late(
        spark, bootstrap, fresh_name, tmp_path):
    """Strict waiting (idleTimeoutMs -1), two writer tasks (local[2], V = 9), 40 users over two
    partitions whose event times interleave, late_policy fail. Each task releases below the
    watermark as of what it alone read, so it holds records a little below the epoch's watermark
    over both tasks' reads. The strict stream publishes a floor for every virtual partition of
    the table: it must be the lowest bound a task released below, less one. (It was the
    epoch's watermark less one: in the next run, the records a task still held below it were
    its own, on time, and judged late, failing the query with [KPLEX_LATE_RECORD] run after
    run.) Two scheduled runs, then one that releases the rest: every record, once, in order."""
    source, target = fresh_name("strict_tasks_src"), fresh_name("strict_tasks_by_user")
    datagen.ensure_topic(bootstrap, source, 2)
    create(spark, target, delay_ms=1_000)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5})
    base = 1_700_000_000_000

    def produce_rounds(start: int, rounds: int) -> None:
        for i in range(start, start + rounds):
            for partition in (0, 1):
                user = f"User_{(2 * i + partition) % 40}"
                value = json.dumps({"viewtime": base + i * 100 + partition * 50, "userid": user})
                producer.produce(source, key=user.encode(), value=value.encode(), partition=partition)
        assert producer.flush(30) == 0

    produce_rounds(0, 500)
    first = scheduled_run(spark, source, target, tmp_path / "chk", idleTimeoutMs="-1")
    produce_rounds(500, 500)
    second = scheduled_run(spark, source, target, tmp_path / "chk", idleTimeoutMs="-1")
    assert late(first) == 0 and late(second) == 0
    assert written(bootstrap, target) > 0
    assert release_the_rest(spark, source, target, tmp_path / "chk") == 0
    assert_exactly_once_in_order(bootstrap, source, target, 2_000)


def upstream_table(spark, bootstrap: str, fresh_name, users: int, records: int) -> tuple[str, list[dict]]:
    """Table A (V = 16, P = 4), written by an INSERT from a topic whose records have `users` keys:
    most of A's virtual partitions hold no record."""
    topic, upstream = fresh_name("chain_src"), fresh_name("chain_a")
    datagen.ensure_topic(bootstrap, topic, 2)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    start = int(time.time() * 1000) - 3_600_000
    rows = [{"viewtime": start + i * 10, "userid": f"User_{i % users}"} for i in range(records)]
    for i, row in enumerate(rows):
        producer.produce(topic, value=json.dumps(row, separators=(",", ":")).encode(), partition=i % 2)
    assert producer.flush(30) == 0
    spark.sql(f"CREATE TABLE kplex.{upstream} TBLPROPERTIES ('kplex.virtual_partitions' = '16',"
              " 'kplex.physical_partitions' = '4', 'kplex.max_delay_ms' = '1000')")
    spark.sql(f"INSERT INTO kplex.{upstream} SELECT {', '.join(SELECT)} FROM kplex.{topic}")
    return upstream, rows


def test_a_kplex_table_with_mostly_empty_virtual_partitions_read_as_a_source_writes_downstream(
        spark, bootstrap, fresh_name, tmp_path):
    """The issue's case: 3 keys over 16 virtual partitions leave 13 or more of them empty; each
    virtual partition of the upstream table is an ordered partition of the downstream read, and
    an empty one, its physical partition read to its end, is idle at once."""
    upstream, rows = upstream_table(spark, bootstrap, fresh_name, users=3, records=3_000)
    by_vp = verify.virtual_partition_sequences(verify.read_topic(bootstrap, upstream))
    assert len(by_vp) <= 3
    downstream = fresh_name("chain_b")
    create(spark, downstream, delay_ms=1_000)
    chk = tmp_path / "chk"

    strict = stream(spark, upstream, downstream, chk, idleTimeoutMs="-1").trigger(availableNow=True).start()
    strict.awaitTermination(300)
    assert strict.exception() is None, strict.exception()
    assert written(bootstrap, downstream) == 0, "with strict waiting the empty virtual partitions hold everything"

    query = stream(spark, upstream, downstream, chk).trigger(availableNow=True).start()
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    # The watermark: the slowest non-empty virtual partition's largest order value, less max_delay_ms.
    watermark = min(max(json.loads(v)["viewtime"] for v in values) for values in by_vp.values()) - 1_000
    below = sum(1 for r in rows if r["viewtime"] < watermark)
    assert below > 2_000
    assert written(bootstrap, downstream) == below
    held_by = [p.sink.metrics.get("watermarkHeldBy") for p in recent_progress(query) if p.sink.metrics]
    assert held_by and all(h and len(h.strip("[]").split(",")) <= 3 for h in held_by), held_by
    assert late(query) == 0
    assert release_the_rest(spark, upstream, downstream, chk) == 0
    report = verify.check_derived_topic(bootstrap, upstream, downstream, 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == len(rows)


def test_a_chain_topic_to_a_to_b_streams_live_through_a_table_whose_virtual_partitions_are_mostly_empty(
        spark, bootstrap, fresh_name, tmp_path):
    """topic -> A (V = 16, 3 keys) -> B, both live: B keeps up with A, with no idleness between them
    (the empty virtual partitions of A are idle once read to their end), exactly once, in order."""
    source, upstream, downstream = fresh_name("live_chain_src"), fresh_name("live_chain_a"), fresh_name("live_chain_b")
    datagen.ensure_topic(bootstrap, source, 2)
    spark.sql(f"CREATE TABLE kplex.{upstream} TBLPROPERTIES ('kplex.virtual_partitions' = '16',"
              f" 'kplex.physical_partitions' = '4', 'kplex.max_delay_ms' = '{DELAY_MS}')")
    create(spark, downstream, delay_ms=DELAY_MS)
    to_a = stream(spark, source, upstream, tmp_path / "a").trigger(processingTime="1 second").start()
    to_b = stream(spark, upstream, downstream, tmp_path / "b").trigger(processingTime="1 second").start()
    try:
        with LiveProducer(bootstrap, source, {0, 1}) as producer:
            producer.users = 3
            time.sleep(25)
            in_a, in_b = written(bootstrap, upstream), written(bootstrap, downstream)
            assert in_a > 0 and in_b >= in_a * 0.7, f"A holds {in_a} records, B only {in_b}: B waits on A's empty vps"
        total = producer.sent
        assert to_a.exception() is None and to_b.exception() is None, (to_a.exception(), to_b.exception())
    finally:
        to_a.stop()
        to_b.stop()
    assert late(to_a) == 0 and late(to_b) == 0
    assert release_the_rest(spark, source, upstream, tmp_path / "a") == 0
    assert release_the_rest(spark, upstream, downstream, tmp_path / "b") == 0
    report = verify.check_derived_topic(bootstrap, upstream, downstream, 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == total


def test_a_strict_upstream_streams_watermark_carries_to_a_strict_downstream_past_empty_virtual_partitions(
        spark, bootstrap, fresh_name, tmp_path):
    """topic -> A (V = 16, 3 keys: most virtual partitions empty) -> B, both strict
    (idleTimeoutMs = -1: no partition is ever taken as idle). A publishes its watermark with
    each epoch; B, once it has read what A had written then, takes it for every virtual
    partition of A, the empty ones included, and releases without waiting on them (strict, and
    without it, B writes nothing: see the test above). A's published watermark is the floor of
    A for every writer: an INSERT into A below it is late."""
    source, upstream, downstream = fresh_name("carry_src"), fresh_name("carry_a"), fresh_name("carry_b")
    datagen.ensure_topic(bootstrap, source, 2)
    spark.sql(f"CREATE TABLE kplex.{upstream} TBLPROPERTIES ('kplex.virtual_partitions' = '16',"
              " 'kplex.physical_partitions' = '4', 'kplex.max_delay_ms' = '1000')")
    create(spark, downstream, delay_ms=1_000)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    start = int(time.time() * 1000) - 3_600_000

    def produce(first: int, count: int) -> None:
        for i in range(first, first + count):
            row = {"viewtime": start + i * 10, "userid": f"User_{i % 3}"}
            producer.produce(source, value=json.dumps(row, separators=(",", ":")).encode(), partition=i % 2)
        assert producer.flush(30) == 0

    def strict(src: str, dst: str, chk: str, release: str = "false"):
        query = (stream(spark, src, dst, tmp_path / chk, idleTimeoutMs="-1", releaseAtEnd=release)
                 .trigger(availableNow=True).start())
        query.awaitTermination(300)
        assert query.exception() is None, query.exception()
        return query

    produce(0, 1_000)
    a1 = strict(source, upstream, "a")
    b1 = strict(upstream, downstream, "b")
    assert written(bootstrap, upstream) > 500, "A releases below its watermark"
    assert written(bootstrap, downstream) == 0, "B's first epoch read A from the start: no published watermark yet"
    produce(1_000, 1_000)
    a2 = strict(source, upstream, "a")
    b2 = strict(upstream, downstream, "b")
    in_b = written(bootstrap, downstream)
    assert in_b > 500, f"B wrote {in_b}: it waits on A's empty virtual partitions"
    assert late(a1) == late(a2) == late(b1) == late(b2) == 0

    # A's published watermark is its table's floor for every virtual partition, empty ones too.
    described = {row[0]: row[1] for row in spark.sql(f"DESCRIBE TABLE EXTENDED kplex.{upstream}").collect()}
    assert start + 1_000 * 10 < int(described["floor"]) < start + 2_000 * 10, described
    old = fresh_name("carry_old")
    datagen.ensure_topic(bootstrap, old, 1)
    producer.produce(old, value=json.dumps({"viewtime": start, "userid": "User_7"}).encode())
    assert producer.flush(30) == 0
    try:
        spark.sql(f"INSERT INTO kplex.{upstream} SELECT {', '.join(SELECT)} FROM kplex.{old}")
        raise AssertionError("an INSERT below A's published watermark was accepted")
    except Exception as e:  # noqa: BLE001 - the error class is kplex's LateRecordError
        assert "KPLEX_LATE_RECORD" in str(e) and "User_7" in str(e), str(e)[:2000]

    strict(source, upstream, "a", release="true")
    strict(upstream, downstream, "b", release="true")
    report = verify.check_derived_topic(bootstrap, upstream, downstream, 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == 2_000


def test_a_plan_that_loses_the_source_positions_says_so_in_its_progress(spark, bootstrap, fresh_name, tmp_path):
    """A union before the sink: the rows no longer carry their source partition and offset, so the
    input counts as one partition; the progress says so (and the driver's log, once per run)."""
    first, second, target = fresh_name("lost_a"), fresh_name("lost_b"), fresh_name("lost_by_user")
    for topic, seed in ((first, 1), (second, 2)):
        datagen.generate_pageviews(bootstrap, topic, 100, partitions=2, users=5, seed=seed)
    create(spark, target)

    def read(topic):
        return (spark.readStream.format("kplex").option("table", topic).option("startingOffsets", "earliest")
                .option("releaseAtEnd", "true").load().selectExpr(*SELECT))

    query = (read(first).union(read(second)).writeStream.format("kplex").option("table", target)
             .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    positions = {(p.sink.metrics or {}).get("sourcePositions") for p in recent_progress(query) if p.sink.metrics}
    assert positions == {"lost"}
    assert written(bootstrap, target) == 200

    kept_table = fresh_name("kept_target")
    create(spark, kept_table)
    query = stream(spark, first, kept_table, tmp_path / "kept2", releaseAtEnd="true").trigger(availableNow=True).start()
    query.awaitTermination(300)
    assert {(p.sink.metrics or {}).get("sourcePositions") for p in recent_progress(query) if p.sink.metrics} == {"kept"}


def test_a_partition_back_from_idle_with_records_below_what_their_virtual_partitions_hold_counts_them_late_after_idle(
        spark, bootstrap, fresh_name, tmp_path):
    """Partition 1 goes quiet past idleTimeoutMs while partition 0 carries every virtual
    partition seconds further; partition 1 then comes back with records from just after its
    last one: within the bound of its own partition, but below what their virtual partitions
    hold. They are late for that reason (lateAfterIdle in the progress, nothing else), dropped
    under late_policy drop, and none of them is in the table (read with a plain consumer)."""
    source, target = fresh_name("back_src"), fresh_name("back_by_user")
    datagen.ensure_topic(bootstrap, source, 2)
    create(spark, target, delay_ms=1_000, **{"kplex.late_policy": "drop"})
    query = (stream(spark, source, target, tmp_path / "chk", idleTimeoutMs="2000")
             .trigger(processingTime="1 second").start())
    stale = []
    try:
        with LiveProducer(bootstrap, source, {0, 1}) as producer:
            time.sleep(5)
            producer.partitions = {0}  # partition 1 goes quiet
            time.sleep(0.5)
            quiet_from = producer.last_viewtime
            time.sleep(7)
            back = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
            for i in range(producer.users):
                value = json.dumps({"viewtime": quiet_from + i, "userid": f"User_{i}", "stale": True},
                                   separators=(",", ":")).encode()
                back.produce(source, key=b"Page_1", value=value, partition=1)
                stale.append(value)
            assert back.flush(30) == 0
            time.sleep(5)
        deadline = time.time() + 60
        while sum(p.numInputRows for p in recent_progress(query)) < producer.sent + len(stale) and time.time() < deadline:
            time.sleep(1)
        assert query.exception() is None, query.exception()
        metrics = [p.sink.metrics or {} for p in recent_progress(query)]
    finally:
        query.stop()
    counted = {name: sum(int(m.get(name, "0")) for m in metrics)
               for name in ("lateAfterIdle", "lateBelowWritten", "lateBehindPartition")}
    assert counted == {"lateAfterIdle": len(stale), "lateBelowWritten": 0, "lateBehindPartition": 0}, counted
    assert not set(stale) & {r.value for r in verify.read_topic(bootstrap, target)}
