"""The two threads the harness runs beside a contender: a read_committed consumer that
watches the derived topic (when records become visible, how late, in what order), and a
producer that appends live pageviews to the source at a fixed rate.

A live record's ``viewtime`` is the wall-clock time (ms) at which it was produced, and
every contender passes the value through unchanged, so its latency is the time it became
visible to a read_committed consumer minus that ``viewtime``, both taken by this process's
clock. Backlog records (from kplex.testing.datagen) carry 2019 viewtimes, far below any
live one.

The harness shares the machine with the contender it measures, so both threads do as little
as they can while it runs: the watcher stamps, counts and keeps what it read, and checks it
(every value, every virtual partition's order) once it is stopped; the producer draws a
tick's pages and users at once and counts its values afterwards. At 44,000 records/s the
two took 70% of a core with the checks done as records arrived (``bench/streaming/harness_cost.py``).
"""
from __future__ import annotations

import random
import re
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from kplex.testing.datagen import partition_of

_VIEWTIME = re.compile(rb'"viewtime":(\d+)')
#: Viewtimes at or above this (2020-01-01 UTC) are live records' produce times.
LIVE_SINCE_MS = 1_577_836_800_000
#: The watcher's longest wait in one consume(): a visible record is stamped at most this late.
CONSUME_WAIT_S = 0.01


def viewtime(value: bytes) -> int:
    """The ``viewtime`` of a pageview value, -1 if it has none.

    >>> viewtime(b'{"viewtime":1565606197468,"userid":"User_6","pageid":"Page_62"}')
    1565606197468
    """
    found = _VIEWTIME.search(value)
    return int(found.group(1)) if found else -1


def now_ms() -> float:
    return time.time() * 1000.0


@dataclass
class Observed:
    """What the watcher saw of the derived topic (read under its lock)."""

    backlog: int = 0
    live: int = 0
    first_at: float | None = None  # wall-clock s of the first visible record
    first_backlog: int = 0  # backlog records visible at ``first_at`` (the contender's first commit)
    backlog_done_at: float | None = None  # wall-clock s when ``backlog`` reached the expected count
    latencies_ms: list[float] = field(default_factory=list)  # live records produced from ``measure_from_ms`` on
    settling_latencies_ms: list[float] = field(default_factory=list)  # live records produced before it
    values: Counter[int] = field(default_factory=Counter)  # hash(value) -> times seen
    order_checked: int = 0  # records that carried kplex.vp and kplex.order headers
    order_violations: int = 0
    order_examples: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.backlog + self.live


class OutputWatcher(threading.Thread):
    """Reads ``topic`` (read_committed, from its beginning) until stopped, once it exists.

    Checks each virtual partition's order (kplex.vp / kplex.order headers, ASCII
    decimals) record by record: a virtual partition sits on one physical partition,
    whose records arrive in offset order.
    """

    def __init__(self, bootstrap: str, topic: str, expected_backlog: int) -> None:
        super().__init__(name=f"watch-{topic}", daemon=True)
        self.bootstrap, self.topic, self.expected_backlog = bootstrap, topic, expected_backlog
        self.observed = Observed()
        self.lock = threading.Lock()
        self.error: BaseException | None = None
        self._stop_requested = threading.Event()
        self._last_order: dict[int, int] = {}
        self._last_message_at = time.monotonic()
        #: Live records produced (their viewtime) before this epoch ms count as the stream settling.
        self.measure_from_ms = 0.0

    def stop(self, quiet_s: float = 2.0, timeout: float = 30.0) -> None:
        """Stop once nothing new arrived for ``quiet_s`` (or ``timeout``), then join."""
        deadline = time.monotonic() + timeout
        while time.monotonic() - self._last_message_at < quiet_s and time.monotonic() < deadline:
            time.sleep(0.2)
        self._stop_requested.set()
        self.join(timeout=600)  # the checks of everything read (about 3 s a million records)

    def snapshot(self) -> tuple[int, int]:
        with self.lock:
            return self.observed.backlog, self.observed.live

    def run(self) -> None:
        try:
            self._watch()
        except BaseException as e:  # reported by the harness
            self.error = e

    def _partitions(self) -> list[int] | None:
        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        topics = admin.list_topics(self.topic, timeout=10).topics
        meta = topics.get(self.topic)
        if meta is None or meta.error is not None or not meta.partitions:
            return None
        return sorted(meta.partitions)

    def _watch(self) -> None:
        partitions = None
        while partitions is None and not self._stop_requested.wait(0.2):
            partitions = self._partitions()
        if partitions is None:
            return
        consumer = Consumer({
            "bootstrap.servers": self.bootstrap,
            "group.id": f"bench-streaming-watch-{uuid.uuid4()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            # A fetch waits at most this long at the broker for data.
            "fetch.wait.max.ms": 25,
        })
        consumer.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions])
        read: list[list] = []  # what consume() returned, in order: checked once stopped
        try:
            while not self._stop_requested.is_set():
                # consume() returns when it has all it asked for or when its timeout is up,
                # whichever comes first: the timeout bounds how late a record that became
                # visible is stamped (with 0.1 s, records were seen 50 ms late on average).
                messages = consumer.consume(10_000, timeout=CONSUME_WAIT_S)
                seen_at = time.time()
                if messages:
                    self._last_message_at = time.monotonic()
                    self._stamp(messages, seen_at)
                    read.append(messages)
            self._check(read)
        finally:
            consumer.close()

    def _stamp(self, messages: list, seen_at: float) -> None:
        """Counts and latencies, as records arrive (a microsecond a record)."""
        obs = self.observed
        seen_ms = seen_at * 1000.0
        live = backlog = 0
        latencies, settling = [], []
        measure_from = self.measure_from_ms
        for m in messages:
            if m.error() is not None:
                continue  # raised by _check
            stamp = viewtime(m.value() or b"")
            if stamp >= LIVE_SINCE_MS:
                live += 1
                (latencies if stamp >= measure_from else settling).append(seen_ms - stamp)
            else:
                backlog += 1
        with self.lock:
            obs.live += live
            obs.backlog += backlog
            obs.latencies_ms.extend(latencies)
            obs.settling_latencies_ms.extend(settling)
            if obs.first_at is None:
                obs.first_at, obs.first_backlog = seen_at, obs.backlog
            if obs.backlog_done_at is None and obs.backlog >= self.expected_backlog:
                obs.backlog_done_at = seen_at

    def _check(self, read: list[list]) -> None:
        """Every value counted and every virtual partition's order checked, in the order read."""
        obs = self.observed
        hashes = []
        with self.lock:
            for messages in read:
                for m in messages:
                    if m.error() is not None:
                        if m.error().code() == KafkaError._PARTITION_EOF:
                            continue
                        raise KafkaException(m.error())
                    hashes.append(hash(m.value() or b""))
                    self._check_order(m)
            obs.values.update(hashes)

    def _check_order(self, message: object) -> None:
        headers = dict(message.headers() or ())  # type: ignore[attr-defined]
        if "kplex.vp" not in headers or "kplex.order" not in headers:
            return
        obs = self.observed
        vp, order = int(headers["kplex.vp"]), int(headers["kplex.order"])
        obs.order_checked += 1
        last = self._last_order.get(vp)
        if last is not None and order < last:
            obs.order_violations += 1
            if len(obs.order_examples) < 5:
                obs.order_examples.append(
                    f"vp {vp}: order {order} after {last} (partition {message.partition()},"  # type: ignore[attr-defined]
                    f" offset {message.offset()})")  # type: ignore[attr-defined]
        self._last_order[vp] = order


class RateProducer(threading.Thread):
    """Appends pageviews to ``topic`` at ``rate`` records/s for ``seconds``, each value's
    ``viewtime`` the wall-clock ms of its produce call. Keys are the page, as in the backlog."""

    def __init__(self, bootstrap: str, topic: str, rate: float, seconds: float,
                 users: int = 1000, pages: int = 100, seed: int = 7, write_partitions: int | None = None) -> None:
        super().__init__(name=f"produce-{topic}", daemon=True)
        self.write_partitions = write_partitions  # only partitions 0..n-1 get records (None: by key, all)
        self.topic, self.rate, self.seconds = topic, rate, seconds
        self.users, self.pages = users, pages
        self.rng = random.Random(seed)
        self._pages = [f"Page_{i}" for i in range(1, pages + 1)]
        self._users = [f"User_{i}" for i in range(1, users + 1)]
        self._hashes: list[int] = []  # hash(value) of every record produced, counted by ``values``
        self.produced = 0
        self.error: BaseException | None = None
        self.producer = Producer({
            "bootstrap.servers": bootstrap,
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
            "linger.ms": 5,
        })

    def run(self) -> None:
        try:
            self._produce()
        except BaseException as e:
            self.error = e

    @property
    def values(self) -> Counter[int]:
        """hash(value) -> times produced."""
        return Counter(self._hashes)

    def _produce(self) -> None:
        """Keep up with the schedule (record i is due at i / rate s), checking every 10 ms."""
        total = round(self.seconds * self.rate)
        started = time.monotonic()
        while self.produced < total:
            due = min(int((time.monotonic() - started) * self.rate) + 1, total)
            if due > self.produced:
                self._send(due - self.produced)
            self.producer.poll(0)
            time.sleep(0.01)
        if self.producer.flush(60) != 0:
            raise TimeoutError(f"live records to {self.topic} were still undelivered after 60 s")

    def _send(self, count: int) -> None:
        """``count`` records, each value's viewtime the wall-clock ms just before its produce call."""
        pages = self.rng.choices(self._pages, k=count)
        users = self.rng.choices(self._users, k=count)
        produce, hashes = self.producer.produce, self._hashes
        for page, user in zip(pages, users):
            value = f'{{"viewtime":{time.time_ns() // 1_000_000},"userid":"{user}","pageid":"{page}"}}'.encode()
            key = page.encode()
            partition = -1 if self.write_partitions is None else partition_of(key, self.write_partitions)
            while True:
                try:
                    produce(self.topic, key=key, value=value, partition=partition)
                    break
                except BufferError:
                    self.producer.poll(0.05)
            hashes.append(hash(value))
            self.produced += 1
