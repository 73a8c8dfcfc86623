"""Checks of a contender's output topic: kplex.testing.verify for small runs, a streaming
equivalent for big ones.

:func:`kplex.testing.verify.check_derived_topic` keeps both topics in memory as Python
objects (about 1 KiB a record), fine up to a few hundred thousand records. For
millions, :func:`stream_check` reads each topic once and keeps only a few
numbers per key and per virtual partition. It checks the same guarantees on the
same wire format (key, ``kplex.vp`` and ``kplex.order`` headers, partition):

=====  =================================================================
G1     a key's records all carry the vp murmur2 gives it, and a vp sits
       on one physical partition (vp % P)
G2     order values never decrease inside a virtual partition
G3     same number of records as the source, and the same multiset of
       values (a sum of 64-bit value hashes: one missing record plus one
       duplicate of another changes it)
G4     key == the value's userid, vp == murmur2(key) % V, partition == vp % P
G5     headers present, kplex.order == the value's viewtime digits
=====  =================================================================

>>> src = source_fingerprint("127.0.0.1:9092", "pageviews")  # doctest: +SKIP
>>> stream_check("127.0.0.1:9092", src, "by_user", 9, 3).ok  # doctest: +SKIP
True
"""
from __future__ import annotations

import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterator

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Message, TopicPartition

from kplex.placement import virtual_partition
from kplex.testing.verify import check_derived_topic

__all__ = ["CheckResult", "SourceFingerprint", "source_fingerprint", "stream_check", "check_output"]

_MASK = (1 << 64) - 1
GUARANTEES = ("G1", "G2", "G3", "G4", "G5")


@dataclass
class CheckResult:
    """Violations per guarantee (0 everywhere is a pass) and how it was checked."""

    method: str
    records: int
    violations: Counter[str] = field(default_factory=Counter)
    examples: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not any(self.violations.values())

    def passes(self, guarantee: str) -> bool:
        return self.violations[guarantee] == 0

    def add(self, guarantee: str, message: str) -> None:
        self.violations[guarantee] += 1
        if len(self.examples) < 10:
            self.examples.append(f"{guarantee}: {message}")


@dataclass(frozen=True)
class SourceFingerprint:
    topic: str
    records: int
    value_hash_sum: int


def _messages(bootstrap: str, topic: str, isolation: str = "read_committed",
              timeout: float = 600.0) -> Iterator[Message]:
    """Every record of ``topic`` up to its end when called, partition by partition in
    offset order (transaction markers and aborted records skipped by the client)."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"kplex-bench-check-{uuid.uuid4()}",
        "isolation.level": isolation,
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "fetch.max.bytes": 64 << 20,
        "max.partition.fetch.bytes": 16 << 20,
    })
    try:
        meta = consumer.list_topics(topic, timeout=30).topics.get(topic)
        if meta is None or meta.error is not None:
            raise ValueError(f"topic {topic!r} cannot be read: {None if meta is None else meta.error}")
        ends: dict[int, int] = {}
        for p in meta.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            if high > low:
                ends[p] = high
        pending = set(ends)
        if not pending:
            return
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in sorted(pending)])
        deadline = time.monotonic() + timeout
        # An end of partition short of the high watermark (read_committed: a commit
        # marker not written yet) ends it only when nothing more came for a while.
        short_eof: dict[int, float] = {}
        while pending:
            now = time.monotonic()
            for p, since in list(short_eof.items()):
                if now - since >= 3.0:
                    pending.discard(p)
                    del short_eof[p]
            if now > deadline:
                raise TimeoutError(f"reading {topic!r} took over {timeout} s")
            for msg in consumer.consume(num_messages=20_000, timeout=0.2):
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if msg.offset() < ends.get(msg.partition(), 0):
                            short_eof[msg.partition()] = time.monotonic()
                        else:
                            pending.discard(msg.partition())
                        continue
                    raise KafkaException(err)
                short_eof.pop(msg.partition(), None)
                if msg.partition() not in pending:
                    continue
                if msg.offset() + 1 >= ends[msg.partition()]:
                    # Done without waiting for the EOF event (a transactional topic
                    # ends with a commit marker instead, and gets the EOF).
                    pending.discard(msg.partition())
                yield msg
    finally:
        consumer.close()


def source_fingerprint(bootstrap: str, topic: str) -> SourceFingerprint:
    """Count and value-hash sum of the source (Python's hash of bytes: per process,
    so compare only fingerprints made by the same interpreter)."""
    n = 0
    total = 0
    for msg in _messages(bootstrap, topic, "read_uncommitted"):
        n += 1
        total += hash(msg.value())
    return SourceFingerprint(topic, n, total & _MASK)


def _field(value: bytes, name: bytes, end: bytes) -> bytes | None:
    i = value.find(name)
    if i < 0:
        return None
    i += len(name)
    j = value.find(end, i)
    return value[i:j] if j >= 0 else None


def stream_check(bootstrap: str, source: SourceFingerprint, derived_topic: str,
                 virtual_partitions: int, physical_partitions: int) -> CheckResult:
    """Check ``derived_topic`` against the source fingerprint, one pass, O(keys) memory."""
    started = time.monotonic()
    result = CheckResult("stream", 0)
    vp_of_key: dict[bytes, int] = {}
    vp_text = [str(v).encode() for v in range(virtual_partitions)]
    last_order: dict[int, int] = {}
    vp_partition: dict[int, int] = {}
    n = 0
    total = 0
    for msg in _messages(bootstrap, derived_topic):
        n += 1
        value = msg.value()
        key = msg.key()
        partition = msg.partition()
        total += hash(value)
        user = _field(value, b'"userid":"', b'"')
        viewtime = _field(value, b'"viewtime":', b",")
        if key is None or key != user:
            result.add("G4", f"key {key!r} is not the value's userid {user!r}")
            if key is None:
                continue
        vp = vp_of_key.get(key)
        if vp is None:
            vp = vp_of_key[key] = virtual_partition(key, virtual_partitions)
        header_vp = header_order = None
        for name, raw in msg.headers() or ():
            if name == "kplex.vp":
                header_vp = raw
            elif name == "kplex.order":
                header_order = raw
        if header_vp != vp_text[vp]:
            result.add("G1", f"key {key!r} carries kplex.vp {header_vp!r}, murmur2 gives {vp}")
        if partition != vp % physical_partitions:
            result.add("G4", f"vp {vp} on partition {partition}, not {vp % physical_partitions}")
        seen = vp_partition.setdefault(vp, partition)
        if seen != partition:
            result.add("G1", f"vp {vp} is on partitions {seen} and {partition}")
        if header_order is None or header_order != viewtime:
            result.add("G5", f"kplex.order {header_order!r}, the value's viewtime is {viewtime!r}")
        if viewtime is None:
            continue
        order = int(viewtime)
        previous = last_order.get(vp)
        if previous is not None and order < previous:
            result.add("G2", f"order {order} after {previous} in vp {vp}")
        last_order[vp] = order
    result.records = n
    if n != source.records:
        result.add("G3", f"{n} records, the source has {source.records}")
    elif total & _MASK != source.value_hash_sum:
        result.add("G3", "the values differ from the source's (missing and duplicated records)")
    result.seconds = time.monotonic() - started
    return result


def full_check(bootstrap: str, source_topic: str, derived_topic: str,
               virtual_partitions: int, physical_partitions: int) -> CheckResult:
    """kplex.testing.verify.check_derived_topic, its violations counted per guarantee."""
    started = time.monotonic()
    report = check_derived_topic(bootstrap, source_topic, derived_topic,
                                 virtual_partitions, physical_partitions)
    result = CheckResult("kplex.verify", report.derived_count)
    for g in GUARANTEES:
        result.violations[g] = report.failed(g)
    result.examples = [str(v) for v in report.violations[:10]]
    result.seconds = time.monotonic() - started
    return result


def check_output(bootstrap: str, source: SourceFingerprint, derived_topic: str,
                 virtual_partitions: int, physical_partitions: int,
                 full_up_to: int = 200_000) -> CheckResult:
    """The full check for small sources, the streaming one above ``full_up_to``."""
    if source.records <= full_up_to:
        return full_check(bootstrap, source.topic, derived_topic,
                          virtual_partitions, physical_partitions)
    return stream_check(bootstrap, source, derived_topic, virtual_partitions, physical_partitions)
