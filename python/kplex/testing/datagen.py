"""Generate the seed article's ``pageviews`` topic, in the spirit of ksql-datagen.

Records look like ``{"viewtime":1565606197468,"userid":"User_6","pageid":"Page_62"}``
and are keyed by ``pageid`` (UTF-8), so every page's views sit on one
partition, placed by Kafka's default partitioner (murmur2). Re-keying them by
``userid`` in ``viewtime`` order is the job kplex does.

>>> summary = generate_pageviews("localhost:9092", "pageviews", 10_000)  # doctest: +SKIP
>>> print(summary.table())  # doctest: +SKIP
"""

from __future__ import annotations

import json
import random
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping

from confluent_kafka import KafkaError, KafkaException, Message, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

__all__ = [
    "ARTICLE_START_MS",
    "PageviewsSummary",
    "ensure_topic",
    "generate_pageviews",
    "grow_topic",
    "pageview_records",
    "user_name",
]

#: The first ``viewtime`` of the seed article's sample output.
ARTICLE_START_MS = 1565606197468

#: Largest step of the overall clock between two pageviews, in ms.
_MAX_STEP_MS = 500

#: The hot user when ``skew`` > 0. It is ASCII in both naming modes.
_HOT_USER = 1


def user_name(n: int, non_ascii: bool = False) -> str:
    """The ``userid`` of user number ``n``.

    With ``non_ascii`` every third user is ``Usér_ü_<n>`` and every third
    ``用户_<n>`` (multi-byte UTF-8 keys, to catch encoding bugs); user 1, the hot
    user of a skewed run, stays ``User_1``.

    >>> [user_name(n, non_ascii=True) for n in (1, 2, 3, 5)]
    ['User_1', '用户_2', 'Usér_ü_3', '用户_5']
    """
    if not non_ascii:
        return f"User_{n}"
    return (f"Usér_ü_{n}", f"User_{n}", f"用户_{n}")[n % 3]


def pageview_records(
    records: int,
    *,
    users: int = 9,
    pages: int = 100,
    seed: int = 42,
    start_ms: int = ARTICLE_START_MS,
    out_of_order_ms: int = 0,
    skew: float = 0.0,
    non_ascii: bool = False,
) -> Iterator[tuple[bytes, bytes]]:
    """Yield ``(key, value)`` byte pairs of pageviews, deterministically from ``seed``.

    An overall clock advances 0..500 ms per record, so ``viewtime`` is
    non-decreasing in production order when ``out_of_order_ms`` is 0 (each
    partition is then in ``viewtime`` order, as in the article). With
    ``out_of_order_ms`` > 0 each record's ``viewtime`` lags the clock by a
    random 0..``out_of_order_ms``: still increasing overall, but locally out
    of order within and across partitions, like late events. ``skew`` is the
    share of records that go to one hot user, ``User_1``; the rest are
    uniform over ``users``.

    >>> key, value = next(pageview_records(1, seed=1))
    >>> key, value  # doctest: +ELLIPSIS
    (b'Page_...', b'{"viewtime":1565606197...,"userid":"User_...","pageid":"Page_..."}')
    """
    rows = _pageviews(records, users, pages, seed, start_ms, out_of_order_ms, skew, non_ascii)
    return ((key, value) for _, _, key, value in rows)


def _pageviews(
    records: int,
    users: int,
    pages: int,
    seed: int,
    start_ms: int,
    out_of_order_ms: int,
    skew: float,
    non_ascii: bool,
) -> Iterator[tuple[int, str, bytes, bytes]]:
    """Check the arguments now, then yield ``(viewtime, userid, key, value)``.

    See :func:`pageview_records`; not a generator itself, so a bad argument
    fails at the call, before any topic is touched.
    """
    if records < 0:
        raise ValueError(f"records must be 0 or more, got {records}.")
    if users < 1 or pages < 1:
        raise ValueError(f"users and pages must be at least 1, got users={users}, pages={pages}.")
    if out_of_order_ms < 0:
        raise ValueError(f"out_of_order_ms must be 0 or more, got {out_of_order_ms}.")
    if not 0.0 <= skew <= 1.0:
        raise ValueError(f"skew is a share of records between 0 and 1, got {skew}.")

    rng = random.Random(seed)
    return _generate(records, users, pages, rng, start_ms, out_of_order_ms, skew, non_ascii)


def _generate(
    records: int,
    users: int,
    pages: int,
    rng: random.Random,
    start_ms: int,
    out_of_order_ms: int,
    skew: float,
    non_ascii: bool,
) -> Iterator[tuple[int, str, bytes, bytes]]:
    # Pre-encode names once: the value is built by formatting, which gives the
    # same bytes as json.dumps(..., separators=(",", ":"), ensure_ascii=False).
    user_names = [user_name(n, non_ascii) for n in range(users + 1)]
    user_json = [json.dumps(u, ensure_ascii=False) for u in user_names]
    page_names = [f"Page_{n}" for n in range(pages + 1)]
    page_json = [json.dumps(p) for p in page_names]
    page_keys = [p.encode("utf-8") for p in page_names]

    clock = start_ms
    for _ in range(records):
        clock += rng.randint(0, _MAX_STEP_MS)
        viewtime = clock - rng.randint(0, out_of_order_ms) if out_of_order_ms else clock
        if skew and rng.random() < skew:
            user = _HOT_USER
        else:
            user = rng.randint(1, users)
        page = rng.randint(1, pages)
        value = f'{{"viewtime":{viewtime},"userid":{user_json[user]},"pageid":{page_json[page]}}}'
        yield viewtime, user_names[user], page_keys[page], value.encode("utf-8")


def ensure_topic(
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    create: bool = True,
    timeout: float = 30.0,
    config: Mapping[str, Any] | None = None,
) -> bool:
    """Make sure ``topic`` exists with exactly ``partitions`` partitions.

    Creates it (broker-default replication) when missing and ``create`` is
    true. Returns True when it was created, False when it already existed
    with the right count; raises ValueError when it exists with another
    count or is missing and ``create`` is false.

    >>> ensure_topic("localhost:9092", "pageviews", 3)  # doctest: +SKIP
    True
    """
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, got {partitions}.")
    admin = AdminClient({**(config or {}), "bootstrap.servers": bootstrap})
    existing = _partition_count(admin, topic, timeout)
    if existing is None:
        if not create:
            raise ValueError(f"topic {topic!r} does not exist; create it or pass create=True.")
        try:
            admin.create_topics(
                [NewTopic(topic, num_partitions=partitions, replication_factor=-1)],
                operation_timeout=timeout,
            )[topic].result(timeout=timeout)
        except KafkaException as e:
            if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
            existing = _partition_count(admin, topic, timeout)  # lost a race: check it
        else:
            _wait_for_partitions(admin, topic, partitions, timeout)
            return True
    if existing != partitions:
        raise ValueError(
            f"topic {topic!r} already exists with {existing} partitions, not {partitions}; "
            f"delete it or pass partitions={existing}."
        )
    return False


def grow_topic(bootstrap: str, topic: str, partitions: int, *, timeout: float = 30.0,
               config: Mapping[str, Any] | None = None) -> None:
    """Give ``topic`` ``partitions`` partitions in all, and return once the broker's metadata
    shows them. The controller has the change when CreatePartitions answers; the broker's
    metadata follows a moment later, and until then a producer asked for a new partition fails
    at once (librdkafka's ``_UNKNOWN_PARTITION``) and a describe reports the old count.

    >>> grow_topic("localhost:9092", "pageviews", 5)  # doctest: +SKIP
    """
    admin = AdminClient({**(config or {}), "bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, partitions)], operation_timeout=timeout)[topic].result(timeout)
    _wait_for_partitions(admin, topic, partitions, timeout)


def _partition_count(admin: AdminClient, topic: str, timeout: float) -> int | None:
    """The topic's partition count, None if it does not exist.

    DescribeTopics, unlike a producer-side metadata request, never makes a
    broker with ``auto.create.topics.enable`` create the topic. No future is kept in a local
    variable here or in :func:`ensure_topic`: a failed future keeps its exception, whose
    traceback keeps the frame that holds the future, and that cycle would keep the callers'
    frames too (a producer made after the call, until Python's cycle collector ran).
    """
    try:
        return len(admin.describe_topics(TopicCollection([topic]), request_timeout=timeout)[topic]
                   .result(timeout=timeout).partitions)
    except KafkaException as e:
        if e.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            return None
        raise


def _wait_for_partitions(admin: AdminClient, topic: str, partitions: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while _partition_count(admin, topic, timeout) != partitions:
        if time.monotonic() > deadline:
            raise TimeoutError(f"the broker's metadata did not show {partitions} partitions of topic {topic!r}"
                               f" within {timeout:g} s.")
        time.sleep(0.1)


@dataclass(frozen=True)
class PageviewsSummary:
    """What :func:`generate_pageviews` wrote, counted from delivery reports."""

    topic: str
    records: int
    per_partition: dict[int, int] = field(default_factory=dict)
    per_user: dict[str, int] = field(default_factory=dict)
    min_viewtime: int | None = None
    max_viewtime: int | None = None
    created: bool = False

    def table(self) -> str:
        """A small printable table of records per partition.

        >>> print(PageviewsSummary("pageviews", 3, {0: 2, 1: 1}).table())
        pageviews: 3 records
          partition  records
                  0        2
                  1        1
        """
        lines = [f"{self.topic}: {self.records} records", "  partition  records"]
        lines += [f"  {p:>9}  {n:>7}" for p, n in sorted(self.per_partition.items())]
        return "\n".join(lines)


def partition_of(key: bytes, partitions: int) -> int:
    """A partition among the first ``partitions`` for ``key`` (CRC-32; the same key, the same
    partition), for producers that leave a topic's last partitions empty."""
    return zlib.crc32(key) % partitions


def generate_pageviews(
    bootstrap: str,
    topic: str,
    records: int,
    partitions: int = 3,
    users: int = 9,
    pages: int = 100,
    seed: int = 42,
    out_of_order_ms: int = 0,
    skew: float = 0.0,
    non_ascii: bool = False,
    create: bool = True,
    start_ms: int = ARTICLE_START_MS,
    timeout: float = 120.0,
    write_partitions: int | None = None,
    config: Mapping[str, Any] | None = None,
) -> PageviewsSummary:
    """Produce ``records`` pageviews to ``topic`` (created with ``partitions``).

    Keys are ``pageid`` in UTF-8, placed by librdkafka's ``murmur2_random``
    partitioner, which is the Java client's default partitioner for keyed
    records: partition = ``(murmur2(key) & 0x7fffffff) % partitions``.
    The producer is idempotent, so retries add no duplicates. The record
    contents depend only on the arguments (see :func:`pageview_records`);
    Kafka timestamps are the produce time, so the default 2019 ``viewtime``
    values never trigger retention. With ``write_partitions`` = n, only partitions
    0..n-1 get records (:func:`partition_of`): the others stay empty. ``config``: more
    librdkafka settings for its clients (a secured cluster's credentials).

    >>> s = generate_pageviews("localhost:9092", "pageviews", 100_000, skew=0.5)  # doctest: +SKIP
    >>> s.per_user["User_1"] > 50_000 * 0.9  # doctest: +SKIP
    True
    """
    rows = _pageviews(records, users, pages, seed, start_ms, out_of_order_ms, skew, non_ascii)
    created = ensure_topic(bootstrap, topic, partitions, create=create, config=config)
    producer = Producer(
        {
            **(config or {}),
            "bootstrap.servers": bootstrap,
            "client.id": "kplex-datagen",
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
            "linger.ms": 20,
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "lz4",
        }
    )
    per_partition: Counter[int] = Counter()
    failures: list[KafkaError] = []

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            failures.append(err)
        else:
            per_partition[msg.partition()] += 1

    per_user: Counter[str] = Counter()
    min_viewtime: int | None = None
    max_viewtime: int | None = None
    for i, (viewtime, userid, key, value) in enumerate(rows):
        if failures:
            break
        while True:
            try:
                if write_partitions is None:
                    producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
                else:
                    producer.produce(topic, value=value, key=key, on_delivery=on_delivery,
                                     partition=partition_of(key, write_partitions))
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
        per_user[userid] += 1
        min_viewtime = viewtime if min_viewtime is None else min(min_viewtime, viewtime)
        max_viewtime = viewtime if max_viewtime is None else max(max_viewtime, viewtime)

    remaining = producer.flush(timeout)
    if failures:
        raise KafkaException(failures[0])
    if remaining:
        raise TimeoutError(
            f"{remaining} pageviews were still undelivered to {topic!r} after {timeout}s; "
            f"is the broker at {bootstrap} reachable?"
        )
    return PageviewsSummary(
        topic=topic,
        records=sum(per_partition.values()),
        per_partition=dict(sorted(per_partition.items())),
        per_user=dict(sorted(per_user.items())),
        min_viewtime=min_viewtime,
        max_viewtime=max_viewtime,
        created=created,
    )
