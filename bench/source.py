"""The benchmark's source topic: the seed article's pageviews, padded to ~150 bytes.

Same record shape as :mod:`kplex.testing.datagen` (``viewtime`` from a clock that advances
0..500 ms per record, so every source partition is in ``viewtime`` order; keyed by
``pageid``, placed by murmur2), plus three fields that bring a value to about 150
bytes, the size the benchmark is specified for::

    {"viewtime":1565606197468,"userid":"User_8213","pageid":"Page_62",
     "regionid":"Region_3","gender":"FEMALE","agent":"Mozilla/5.0 (X11; Linux) Firefox/128"}

It produces as fast as one Python process can (no per-record delivery callback; the
record count is checked against the topic's offsets afterwards), because the 10M
source is built before every run.

>>> s = make_source("127.0.0.1:9092", "pageviews_1m", 1_000_000)  # doctest: +SKIP
>>> round(s.mean_value_bytes)  # doctest: +SKIP
150
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Iterator

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kplex.testing.datagen import ARTICLE_START_MS, ensure_topic, user_name

__all__ = ["Source", "make_source", "padded_pageviews", "topic_count"]

_REGIONS = [f'"Region_{n}"' for n in range(10)]
_GENDERS = ['"MALE"', '"FEMALE"', '"OTHER"']
# Four browsers of similar length, so values stay close to 150 bytes.
_AGENTS = [
    '"Mozilla/5.0 (X11; Linux) Firefox/128"',
    '"Mozilla/5.0 (Macintosh) Safari/605.1"',
    '"Mozilla/5.0 (Windows NT 10) Chrome/131"',
    '"Mozilla/5.0 (iPhone; iOS 18) Mobile/15"',
]


@dataclass(frozen=True)
class Source:
    """A generated source topic."""

    topic: str
    records: int
    partitions: int
    users: int
    mean_value_bytes: float
    seconds: float


def padded_pageviews(records: int, users: int, pages: int = 100, seed: int = 42,
                     start_ms: int = ARTICLE_START_MS) -> Iterator[tuple[bytes, bytes]]:
    """Yield ``(pageid key, ~150-byte JSON value)`` pairs, deterministically from ``seed``.

    >>> key, value = next(padded_pageviews(1, users=10))
    >>> key.startswith(b"Page_"), 130 < len(value) < 170
    (True, True)
    """
    rng = random.Random(seed).random
    user_json = [f'"{user_name(n)}"' for n in range(users + 1)]
    page_keys = [f"Page_{n}".encode() for n in range(pages + 1)]
    clock = start_ms
    for _ in range(records):
        clock += int(rng() * 501)
        user = 1 + int(rng() * users)
        page = 1 + int(rng() * pages)
        value = (f'{{"viewtime":{clock},"userid":{user_json[user]},"pageid":"Page_{page}",'
                 f'"regionid":{_REGIONS[user % 10]},"gender":{_GENDERS[user % 3]},'
                 f'"agent":{_AGENTS[page % 4]}}}')
        yield page_keys[page], value.encode()


def topic_count(bootstrap: str, topic: str, timeout: float = 30.0) -> tuple[int, int]:
    """(records, partitions) of a non-transactional topic, from its watermarks."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kplex-bench-count"})
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics[topic]
        total = 0
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
            total += high - low
        return total, len(meta.partitions)
    finally:
        consumer.close()


def make_source(bootstrap: str, topic: str, records: int, partitions: int = 3,
                users: int = 100_000, seed: int = 42) -> Source:
    """Create ``topic`` and fill it with ``records`` padded pageviews."""
    ensure_topic(bootstrap, topic, partitions)
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "client.id": "kplex-bench-source",
        "partitioner": "murmur2_random",
        "enable.idempotence": True,
        "linger.ms": 50,
        "batch.size": 1_000_000,
        "batch.num.messages": 100_000,
        "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 1_048_576,
        "compression.type": "lz4",
        "log_level": 3,
    })
    started = time.monotonic()
    total_bytes = 0
    produce = producer.produce
    for i, (key, value) in enumerate(padded_pageviews(records, users, seed=seed)):
        total_bytes += len(value)
        try:
            produce(topic, value, key)
        except BufferError:
            producer.poll(0.1)
            produce(topic, value, key)
        if i & 0xFFFF == 0:
            producer.poll(0)
    if producer.flush(300):
        raise TimeoutError(f"the source {topic!r} was not fully delivered within 300 s")
    seconds = time.monotonic() - started
    written, _ = topic_count(bootstrap, topic)
    if written != records:
        raise KafkaException(f"the source {topic!r} holds {written} records, not {records}")
    return Source(topic, records, partitions, users, total_bytes / max(records, 1), seconds)
