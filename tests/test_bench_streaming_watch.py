"""bench/streaming/watch.py against the real broker: what the streaming benchmark's harness
reports is what the topics hold.

The watcher stamps and counts records as they arrive and checks them (every value, every
virtual partition's order) only once it is stopped, so that its checks take no CPU from the
contender it measures. These tests write a derived topic by hand, with a duplicate, an
out-of-order record and a value without a viewtime, and read the producer's topic back with a
plain consumer.
"""
from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "streaming"))

from watch import LIVE_SINCE_MS, OutputWatcher, RateProducer, viewtime  # noqa: E402

from kplex.testing.datagen import ensure_topic, partition_of  # noqa: E402


def _topic(bootstrap: str, name: str, partitions: int) -> str:
    ensure_topic(bootstrap, name, partitions)
    return name


def _value(stamp: int, user: str) -> bytes:
    return f'{{"viewtime":{stamp},"userid":"{user}","pageid":"Page_1"}}'.encode()


def _read_all(bootstrap: str, topic: str, partitions: int, expected: int) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    read, deadline = [], time.monotonic() + 30
    while len(read) < expected and time.monotonic() < deadline:
        read += [m for m in consumer.consume(1000, timeout=0.5) if m.error() is None]
    consumer.close()
    return read


def test_the_watcher_counts_as_records_arrive_and_checks_values_and_order_once_stopped(bootstrap, fresh_name):
    topic = _topic(bootstrap, fresh_name("watched"), 2)
    backlog = [_value(1_565_606_197_468 + i, f"User_{i}") for i in range(4)]
    now = int(time.time() * 1000)
    assert now >= LIVE_SINCE_MS
    live = [_value(now - 300, "User_a"), _value(now - 200, "User_b"), _value(now - 100, "User_c")]
    # vp 7 on partition 0 runs 10, 20, 15 (out of order); vp 8 on partition 1 is in order; the
    # live "User_b" value comes twice; the last record has no viewtime (a backlog record).
    sent = [(0, 7, 10, backlog[0]), (0, 7, 20, backlog[1]), (1, 8, 1, backlog[2]), (1, 8, 2, backlog[3]),
            (0, 7, 15, live[0]), (1, 8, 3, live[1]), (1, 8, 4, live[1]), (1, 8, 5, live[2]),
            (1, 8, 6, b'{"userid":"User_z"}')]
    watcher = OutputWatcher(bootstrap, topic, expected_backlog=len(backlog) + 1)
    watcher.start()
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition, vp, order, value in sent:
        producer.produce(topic, value=value, partition=partition,
                         headers=[("kplex.vp", str(vp).encode()), ("kplex.order", str(order).encode())])
    assert producer.flush(30) == 0
    deadline = time.monotonic() + 30
    while watcher.snapshot() != (5, 4) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert watcher.snapshot() == (5, 4)
    # Counted as they arrived; checked only once stopped.
    assert watcher.observed.order_checked == 0 and not watcher.observed.values
    assert watcher.observed.backlog_done_at is not None and watcher.observed.first_at is not None
    assert len(watcher.observed.latencies_ms) == 4
    assert all(ms >= 100 for ms in watcher.observed.latencies_ms)

    watcher.stop(quiet_s=0.5)
    assert watcher.error is None
    obs = watcher.observed
    assert obs.values == Counter(hash(value) for _, _, _, value in sent)
    assert obs.values[hash(live[1])] == 2
    assert obs.order_checked == len(sent)
    assert obs.order_violations == 1
    assert obs.order_examples == ["vp 7: order 15 after 20 (partition 0, offset 2)"]


def test_the_rate_producer_writes_every_record_it_counts_each_stamped_when_produced(bootstrap, fresh_name):
    topic = _topic(bootstrap, fresh_name("paced"), 3)
    # Whole milliseconds, floored as the producer stamps them: a float here put a record stamped
    # in the same millisecond as the start before it.
    started = time.time_ns() // 1_000_000
    producer = RateProducer(bootstrap, topic, rate=2000, seconds=1.0)
    producer.start()
    producer.join(30)
    ended = time.time_ns() // 1_000_000
    assert producer.error is None and producer.produced == 2000
    read = _read_all(bootstrap, topic, 3, 2000)
    assert Counter(hash(m.value()) for m in read) == producer.values
    stamps = sorted(viewtime(m.value()) for m in read)
    assert started <= stamps[0] and stamps[-1] <= ended
    # Paced: the records of the second half were produced in the second half of the second.
    assert stamps[1500] - stamps[0] >= 600
    # The page is the key, spread over the topic's partitions by the producer's partitioner.
    assert {m.partition() for m in read} == {0, 1, 2}
    assert all(m.key() == m.value().split(b'"pageid":"')[1].rstrip(b'"}') for m in read)


def test_the_rate_producer_writes_only_the_first_partitions_when_asked(bootstrap, fresh_name):
    topic = _topic(bootstrap, fresh_name("paced_two"), 3)
    producer = RateProducer(bootstrap, topic, rate=1000, seconds=0.5, write_partitions=2)
    producer.start()
    producer.join(30)
    assert producer.error is None and producer.produced == 500
    read = _read_all(bootstrap, topic, 3, 500)
    assert len(read) == 500
    assert all(m.partition() == partition_of(m.key(), 2) for m in read)
    assert {m.partition() for m in read} == {0, 1}


def test_live_records_produced_before_the_measured_span_count_apart(bootstrap, fresh_name):
    """``--settle``: a live record whose viewtime is before ``measure_from_ms`` is the stream
    settling; its latency is kept apart from the measured ones."""
    topic = _topic(bootstrap, fresh_name("settling"), 1)
    now = int(time.time() * 1000)
    watcher = OutputWatcher(bootstrap, topic, expected_backlog=0)
    watcher.measure_from_ms = now - 150
    watcher.start()
    producer = Producer({"bootstrap.servers": bootstrap})
    for stamp, user in ((now - 300, "User_a"), (now - 200, "User_b"), (now - 100, "User_c")):
        producer.produce(topic, value=_value(stamp, user), partition=0)
    assert producer.flush(30) == 0
    deadline = time.monotonic() + 30
    while watcher.snapshot() != (0, 3) and time.monotonic() < deadline:
        time.sleep(0.05)
    watcher.stop(quiet_s=0.5)
    assert watcher.error is None
    obs = watcher.observed
    assert (obs.live, len(obs.settling_latencies_ms), len(obs.latencies_ms)) == (3, 2, 1)
    assert min(obs.settling_latencies_ms) > max(obs.latencies_ms)  # the older records waited longer
