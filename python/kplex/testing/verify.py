"""Check a kplex-derived topic against its source, through a plain Kafka consumer.

This is the "different door" of the tests and of the demo: kplex writes with
Spark, this module reads both topics back with confluent-kafka and checks the
guarantees of the product contract record by record.

=====  ===============================================================  =========
check  what                                                             guarantee
=====  ===============================================================  =========
(a)    every source value is in the derived topic exactly once          G3
(b)    derived key == canonical_key(key_of(value))                      G4
(c)    ``kplex.vp`` is ASCII decimal, == virtual_partition(key, V),     G5 / G4
       and the record sits on physical partition vp % P
(d)    ``kplex.order`` is ASCII decimal, == order_of(value)             G5
(e)    order values non-decreasing inside each virtual partition        G2
(f)    each key in one virtual partition, each vp on one partition      G1
=====  ===============================================================  =========

>>> report = check_derived_topic(
...     "localhost:9092", "pageviews", "pageviews_by_user", 9, 3
... )  # doctest: +SKIP
>>> print(report.summary())  # doctest: +SKIP
>>> report.ok  # doctest: +SKIP
True
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

from kplex.placement import ORDER_HEADER, VP_HEADER, canonical_key, virtual_partition

__all__ = [
    "VP_HEADER",
    "ORDER_HEADER",
    "Record",
    "Violation",
    "VirtualPartitionStats",
    "VerifyReport",
    "read_topic",
    "check_records",
    "check_derived_topic",
    "virtual_partition_sequences",
    "pageview_key",
    "pageview_order",
]

_GUARANTEES = {
    "G1": "key affinity",
    "G2": "order",
    "G3": "exactly once",
    "G4": "Kafka-compatible placement",
    "G5": "self-describing",
}
_VP_TEXT = re.compile(rb"0|[1-9][0-9]*")
_ORDER_TEXT = re.compile(rb"0|-?[1-9][0-9]*")
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def pageview_key(value: Any) -> Any:
    """Default ``key_of``: the ``userid`` of a parsed pageview.

    >>> pageview_key({"viewtime": 1, "userid": "User_6", "pageid": "Page_62"})
    'User_6'
    """
    return value["userid"]


def pageview_order(value: Any) -> int:
    """Default ``order_of``: the ``viewtime`` of a parsed pageview.

    >>> pageview_order({"viewtime": 1565606197468, "userid": "User_6", "pageid": "Page_62"})
    1565606197468
    """
    return value["viewtime"]


def _parse_json(value: bytes) -> Any:
    return json.loads(value)


@dataclass(frozen=True)
class Record:
    """One Kafka record as read back, with headers as a dict (last one wins) and, as read,
    in ``header_list`` (names may repeat there).

    >>> Record(0, 7, b"User_6", b"{}", {"kplex.vp": b"8"}, 1565606197468).headers["kplex.vp"]
    b'8'
    """

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: dict[str, bytes | None] = field(default_factory=dict)
    timestamp: int = 0
    header_list: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class Violation:
    """One broken invariant, where it was seen, and the guarantee it breaks.

    >>> str(Violation("G2", "order", "order 5 after 7 in vp 3", partition=0, offset=12))
    'G2 order at partition 0 offset 12: order 5 after 7 in vp 3'
    """

    guarantee: str
    check: str
    message: str
    partition: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        where = ""
        if self.partition is not None:
            where = f" at partition {self.partition}"
            if self.offset is not None:
                where += f" offset {self.offset}"
        return f"{self.guarantee} {self.check}{where}: {self.message}"


@dataclass
class VirtualPartitionStats:
    """Records seen in one virtual partition of the derived topic."""

    vp: int
    physical: set[int] = field(default_factory=set)
    count: int = 0
    first_order: int | None = None
    last_order: int | None = None


@dataclass
class VerifyReport:
    """Outcome of :func:`check_records`; ``violations`` empty means every check passed.

    ``violations`` keeps at most ``max_examples`` per check; ``violation_counts``
    counts all of them.
    """

    source_topic: str
    derived_topic: str
    virtual_partitions: int
    physical_partitions: int
    source_count: int = 0
    derived_count: int = 0
    missing: int = 0
    duplicated: int = 0
    extra: int = 0
    keys: int = 0
    violations: list[Violation] = field(default_factory=list)
    violation_counts: Counter[tuple[str, str]] = field(default_factory=Counter)
    vp_stats: dict[int, VirtualPartitionStats] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no check failed."""
        return not self.violations

    def failed(self, guarantee: str) -> int:
        """How many violations break ``guarantee`` (``"G1"`` … ``"G5"``)."""
        return sum(n for (g, _), n in self.violation_counts.items() if g == guarantee)

    def summary(self, examples: int = 10) -> str:
        """A small printable table plus one PASS/FAIL line per guarantee.

        >>> report = VerifyReport("pageviews", "by_user", 9, 3)
        >>> print(report.summary())  # doctest: +NORMALIZE_WHITESPACE
        pageviews -> by_user  V=9 P=3
        source 0  derived 0  missing 0  duplicated 0  extra 0  keys 0
          vp  partition  records  first order  last order
        PASS G1 key affinity
        PASS G2 order
        PASS G3 exactly once
        PASS G4 Kafka-compatible placement
        PASS G5 self-describing
        """
        lines = [
            f"{self.source_topic} -> {self.derived_topic}  "
            f"V={self.virtual_partitions} P={self.physical_partitions}",
            f"source {self.source_count}  derived {self.derived_count}  missing {self.missing}  "
            f"duplicated {self.duplicated}  extra {self.extra}  keys {self.keys}",
            f"  {'vp':>2}  {'partition':>9}  {'records':>7}  "
            f"{'first order':>13}  {'last order':>13}",
        ]
        for vp, s in sorted(self.vp_stats.items()):
            physical = ",".join(str(p) for p in sorted(s.physical))
            lines.append(
                f"  {vp:>2}  {physical:>9}  {s.count:>7}  "
                f"{_text(s.first_order):>13}  {_text(s.last_order):>13}"
            )
        empty = [vp for vp in range(self.virtual_partitions) if vp not in self.vp_stats]
        if empty and self.derived_count:
            lines.append(f"  empty virtual partitions: {_ranges(empty)}")
        for g, name in _GUARANTEES.items():
            n = self.failed(g)
            lines.append(f"PASS {g} {name}" if n == 0 else f"FAIL {g} {name}: {n} violations")
        if self.violations:
            lines.append(f"first violations (of {sum(self.violation_counts.values())}):")
            lines += [f"  {v}" for v in self.violations[:examples]]
        return "\n".join(lines)


def _ranges(numbers: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    parts: list[str] = []
    start = previous = numbers[0]
    for n in numbers[1:] + [None]:
        if n is not None and n == previous + 1:
            previous = n
            continue
        parts.append(str(start) if start == previous else f"{start}-{previous}")
        if n is not None:
            start = previous = n
    return ", ".join(parts)


def _text(value: int | None) -> str:
    return "-" if value is None else str(value)


class _Collector:
    """Counts every violation, keeps the first few of each check."""

    def __init__(self, report: VerifyReport, max_examples: int) -> None:
        self.report = report
        self.max_examples = max_examples

    def add(
        self,
        guarantee: str,
        check: str,
        message: str,
        record: Record | None = None,
    ) -> None:
        counts = self.report.violation_counts
        counts[guarantee, check] += 1
        if counts[guarantee, check] <= self.max_examples:
            self.report.violations.append(
                Violation(
                    guarantee,
                    check,
                    message,
                    partition=None if record is None else record.partition,
                    offset=None if record is None else record.offset,
                )
            )


def _decimal_header(
    record: Record, name: str, pattern: re.Pattern[bytes], out: _Collector
) -> int | None:
    """The header's value as an int, or None after recording why it is unusable."""
    if name not in record.headers:
        out.add("G5", f"{name} header", f"header {name!r} is missing", record)
        return None
    raw = record.headers[name]
    if raw is None or not pattern.fullmatch(raw):
        out.add("G5", f"{name} header", f"header {name!r} is not ASCII decimal: {raw!r}", record)
        return None
    number = int(raw)
    if not _LONG_MIN <= number <= _LONG_MAX:
        out.add("G5", f"{name} header", f"header {name!r} is not a 64-bit integer: {raw!r}", record)
        return None
    return number


def check_records(
    source: Iterable[Record],
    derived: Iterable[Record],
    virtual_partitions: int,
    physical_partitions: int,
    key_of: Callable[[Any], Any] = pageview_key,
    order_of: Callable[[Any], int] = pageview_order,
    *,
    parse: Callable[[bytes], Any] = _parse_json,
    timestamp_is_order: bool = False,
    derived_partition_count: int | None = None,
    source_topic: str = "source",
    derived_topic: str = "derived",
    max_examples: int = 100,
) -> VerifyReport:
    """Check derived records against source records; no broker needed.

    ``key_of`` and ``order_of`` take the parsed value (``parse``, JSON by
    default) and return the key (made into bytes by ``canonical_key``; return
    bytes yourself for e.g. a 4-byte INT key) and the order value.
    ``derived`` must be in offset order within each partition, as
    :func:`read_topic` returns it. With ``timestamp_is_order`` the record
    timestamp must equal the order value (orders from TIMESTAMP or DATE).

    >>> src = [Record(0, 0, b"Page_1", b'{"viewtime":5,"userid":"u","pageid":"Page_1"}')]
    >>> vp = virtual_partition(b"u", 4)
    >>> headers = {"kplex.vp": str(vp).encode(), "kplex.order": b"5"}
    >>> out = [Record(vp % 2, 0, b"u", src[0].value, headers)]
    >>> check_records(src, out, 4, 2).ok
    True
    >>> check_records(src, [], 4, 2).violations[0].check
    'missing'
    """
    report = VerifyReport(source_topic, derived_topic, virtual_partitions, physical_partitions)
    out = _Collector(report, max_examples)
    source = list(source)
    derived = list(derived)
    report.source_count = len(source)
    report.derived_count = len(derived)

    if derived_partition_count is not None and derived_partition_count != physical_partitions:
        out.add(
            "G4",
            "partition count",
            f"the derived topic has {derived_partition_count} partitions, "
            f"the table says P={physical_partitions}",
        )

    _check_exactly_once(source, derived, report, out)

    key_vps: dict[bytes, set[int]] = defaultdict(set)
    # Records of each virtual partition in read order: (record, order value).
    sequences: dict[int, list[tuple[Record, int | None]]] = defaultdict(list)
    for record in sorted(derived, key=lambda r: (r.partition, r.offset)):
        expected_key, expected_order = _expected(record, key_of, order_of, parse, out)

        # (b) the key is the canonical key of the value's key column.
        if record.key is None:
            out.add("G4", "key", "the record has no key", record)
        elif expected_key is not None and record.key != expected_key:
            out.add("G4", "key", f"key {record.key!r}, expected {expected_key!r}", record)

        # (c) kplex.vp: present, decimal, Kafka's formula, on partition vp % P.
        vp = _decimal_header(record, VP_HEADER, _VP_TEXT, out)
        if vp is not None:
            if record.key is not None:
                computed = virtual_partition(record.key, virtual_partitions)
                if vp != computed:
                    out.add(
                        "G4",
                        "vp",
                        f"kplex.vp is {vp}, murmur2 of key {record.key!r} gives {computed}",
                        record,
                    )
            elif vp >= virtual_partitions:
                out.add("G4", "vp", f"kplex.vp {vp} is not below V={virtual_partitions}", record)
            if record.partition != vp % physical_partitions:
                out.add(
                    "G4",
                    "physical partition",
                    f"vp {vp} belongs on partition {vp % physical_partitions}",
                    record,
                )
        elif record.key is not None:
            vp = virtual_partition(record.key, virtual_partitions)  # to go on checking order

        # (d) kplex.order: present, decimal, the value's order.
        order = _decimal_header(record, ORDER_HEADER, _ORDER_TEXT, out)
        if order is not None and expected_order is not None and order != expected_order:
            message = f"kplex.order is {order}, the value says {expected_order}"
            out.add("G5", "order value", message, record)
        if expected_order is not None:
            order = expected_order
        if timestamp_is_order and order is not None and record.timestamp != order:
            out.add("G5", "timestamp", f"timestamp {record.timestamp}, order value {order}", record)

        if vp is None:
            continue
        if record.key is not None:
            key_vps[record.key].add(vp)
        sequences[vp].append((record, order))

    # (e) order inside each virtual partition; statistics for the summary.
    for vp, sequence in sorted(sequences.items()):
        stats = report.vp_stats[vp] = VirtualPartitionStats(vp)
        previous: int | None = None
        for record, order in sequence:
            stats.count += 1
            stats.physical.add(record.partition)
            if order is None:
                continue
            if stats.first_order is None:
                stats.first_order = order
            stats.last_order = order
            if previous is not None and order < previous:
                out.add("G2", "order", f"order {order} after {previous} in vp {vp}", record)
            previous = order
        # (f) second half of G1: a virtual partition lives on one physical partition.
        if len(stats.physical) > 1:
            spread = sorted(stats.physical)
            out.add("G1", "vp affinity", f"vp {vp} is spread over partitions {spread}")

    # (f) key affinity: equal keys, one virtual partition.
    report.keys = len(key_vps)
    for key, vps in key_vps.items():
        if len(vps) > 1:
            out.add("G1", "key affinity", f"key {key!r} is in virtual partitions {sorted(vps)}")
    return report


def _expected(
    record: Record,
    key_of: Callable[[Any], Any],
    order_of: Callable[[Any], int],
    parse: Callable[[bytes], Any],
    out: _Collector,
) -> tuple[bytes | None, int | None]:
    """The key bytes and order value the record's value calls for, None where unknown."""
    if record.value is None:
        return None, None
    try:
        parsed = parse(record.value)
    except Exception as e:  # noqa: BLE001 - any parse failure is a finding, not a crash
        out.add("G4", "value", f"cannot parse the value ({e}): {record.value[:80]!r}", record)
        return None, None
    key: bytes | None = None
    order: int | None = None
    try:
        key = canonical_key(key_of(parsed))
    except Exception as e:  # noqa: BLE001
        out.add("G4", "key", f"cannot compute the expected key: {e}", record)
    try:
        raw_order = order_of(parsed)
        if isinstance(raw_order, bool) or not isinstance(raw_order, int):
            raise TypeError(f"order_of returned {type(raw_order).__name__}, not int")
        order = raw_order
    except Exception as e:  # noqa: BLE001
        out.add("G5", "order value", f"cannot compute the expected order: {e}", record)
    return key, order


def _check_exactly_once(
    source: list[Record], derived: list[Record], report: VerifyReport, out: _Collector
) -> None:
    """(a) Source and derived values are equal as multisets."""
    source_values = Counter(r.value for r in source)
    derived_values = Counter(r.value for r in derived)
    first_source = {}
    for r in source:
        first_source.setdefault(r.value, r)
    first_derived = {}
    for r in derived:
        first_derived.setdefault(r.value, r)
    for value, wanted in source_values.items():
        got = derived_values.get(value, 0)
        if got < wanted:
            report.missing += wanted - got
            out.add(
                "G3",
                "missing",
                f"{wanted - got} of {wanted} copies missing from the derived topic "
                f"(first seen in the source at partition {first_source[value].partition} "
                f"offset {first_source[value].offset}): {_short(value)}",
            )
        elif got > wanted:
            report.duplicated += got - wanted
            out.add(
                "G3",
                "duplicated",
                f"{got} copies of a value the source has {wanted} times: {_short(value)}",
                first_derived[value],
            )
    for value, got in derived_values.items():
        if value not in source_values:
            report.extra += got
            out.add(
                "G3", "extra", f"not in the source ({got}x): {_short(value)}", first_derived[value]
            )


def _short(value: bytes | None, limit: int = 120) -> str:
    if value is None:
        return "null value"
    text = value[:limit].decode("utf-8", errors="replace")
    return text + ("…" if len(value) > limit else "")


def virtual_partition_sequences(derived: Iterable[Record]) -> dict[int, list[bytes | None]]:
    """Values of each virtual partition in read order, by the ``kplex.vp`` header.

    Two writes of the same input must give equal sequences (the tie-breaking
    half of G2). Records without a usable header are left out.

    >>> virtual_partition_sequences([Record(0, 0, b"k", b"v", {"kplex.vp": b"3"})])
    {3: [b'v']}
    """
    sequences: dict[int, list[bytes | None]] = defaultdict(list)
    for record in sorted(derived, key=lambda r: (r.partition, r.offset)):
        raw = record.headers.get(VP_HEADER)
        if raw is not None and _VP_TEXT.fullmatch(raw):
            sequences[int(raw)].append(record.value)
    return dict(sequences)


def read_topic(
    bootstrap: str,
    topic: str,
    isolation: str = "read_committed",
    timeout: float = 60.0,
    config: Mapping[str, Any] | None = None,
) -> list[Record]:
    """Read every partition of ``topic`` from the beginning to its current end.

    A plain consumer with ``assign`` (no group membership, no commits). The
    end of each partition is taken when reading starts: the high watermark,
    or where the consumer reports end-of-partition, which for
    ``read_committed`` is the last stable offset (transaction markers and
    aborted records are skipped by the client). Records come back sorted by
    partition, then offset. ``config``: more librdkafka settings (a secured cluster's
    credentials).

    >>> records = read_topic("localhost:9092", "pageviews_by_user")  # doctest: +SKIP
    >>> records[0].headers["kplex.vp"]  # doctest: +SKIP
    b'0'
    """
    if isolation not in ("read_committed", "read_uncommitted"):
        raise ValueError(
            f"isolation must be 'read_committed' or 'read_uncommitted', got {isolation!r}."
        )
    return _read(bootstrap, topic, isolation, timeout, config)[0]


def _read(bootstrap: str, topic: str, isolation: str, timeout: float,
          config: Mapping[str, Any] | None = None) -> tuple[list[Record], int]:
    """The records of ``topic`` and its partition count (empty partitions included)."""
    consumer = Consumer(
        {
            **(config or {}),
            "bootstrap.servers": bootstrap,
            "group.id": f"kplex-verify-{uuid.uuid4()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        return _read_all(consumer, topic, timeout)
    finally:
        consumer.close()


def _partitions_of(consumer: Consumer, topic: str, timeout: float) -> list[int]:
    # A consumer's metadata request never auto-creates the topic
    # (allow.auto.create.topics defaults to false for consumers only).
    metadata = consumer.list_topics(topic, timeout=timeout).topics.get(topic)
    if metadata is None or metadata.error is not None:
        error = None if metadata is None else metadata.error
        if error is None or error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise ValueError(f"topic {topic!r} does not exist.")
        raise KafkaException(error)
    return sorted(metadata.partitions)


_LSO_GRACE_S = 3.0


#: What a partition of a topic just created answers until its leader is elected and known
#: (librdkafka does not mark these retriable on a watermark query).
_NO_LEADER_YET = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                            KafkaError.UNKNOWN_TOPIC_OR_PART})


def _watermarks(consumer: Consumer, tp: TopicPartition, deadline: float) -> tuple[int, int] | None:
    """A partition's (low, high) watermarks, asked again while the broker answers with a
    retriable error until ``deadline``: a topic created a moment ago may have no leader yet
    (NOT_LEADER_FOR_PARTITION), on a busy machine for a while."""
    while True:
        try:
            return consumer.get_watermark_offsets(tp, timeout=max(0.1, deadline - time.monotonic()))
        except KafkaException as error:
            kafka_error = error.args[0]
            if (kafka_error.code() not in _NO_LEADER_YET and not kafka_error.retriable()) \
                    or time.monotonic() + 0.2 > deadline:
                raise
            time.sleep(0.2)


def _read_all(consumer: Consumer, topic: str, timeout: float) -> tuple[list[Record], int]:
    deadline = time.monotonic() + timeout
    ends: dict[int, int] = {}
    partitions = _partitions_of(consumer, topic, timeout)
    for p in partitions:
        offsets = _watermarks(consumer, TopicPartition(topic, p), deadline)
        if offsets is None:
            raise TimeoutError(f"no watermarks for {topic!r} partition {p} within {timeout}s.")
        low, high = offsets
        if high > low:
            ends[p] = high
    if not ends:
        return [], len(partitions)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])

    records: list[Record] = []
    # read_committed ends a partition at its last stable offset. Right after a
    # transaction commits, the coordinator may not have written its marker yet, so
    # the LSO can lag the high watermark briefly: an end-of-partition short of the
    # high watermark counts only once the position has not moved for a while
    # (an open transaction, e.g. of a killed writer, holds it back for good).
    short_eof: dict[int, tuple[int, float]] = {}
    while ends:
        now = time.monotonic()
        for p, (_, since) in list(short_eof.items()):
            if now - since >= _LSO_GRACE_S:
                ends.pop(p, None)
                short_eof.pop(p)
        if not ends:
            break
        if now > deadline:
            raise TimeoutError(
                f"reading {topic!r} took over {timeout}s; partitions not finished: "
                f"{ {p: end for p, end in sorted(ends.items())} }"
            )
        for msg in consumer.consume(num_messages=10_000, timeout=0.5):
            p = msg.partition()
            error = msg.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    if p in ends and msg.offset() < ends[p]:
                        short_eof[p] = (msg.offset(), time.monotonic())
                    else:
                        ends.pop(p, None)
                    continue
                raise KafkaException(error)
            short_eof.pop(p, None)
            end = ends.get(p)
            if end is None or msg.offset() >= end:
                continue  # written after the read started, or partition done
            _, timestamp = msg.timestamp()
            records.append(
                Record(
                    partition=p,
                    offset=msg.offset(),
                    key=msg.key(),
                    value=msg.value(),
                    headers=dict(msg.headers() or ()),
                    timestamp=timestamp,
                    header_list=tuple(msg.headers() or ()),
                )
            )
            if msg.offset() + 1 >= end:
                ends.pop(p)
    records.sort(key=lambda r: (r.partition, r.offset))
    return records, len(partitions)


def check_derived_topic(
    bootstrap: str,
    source_topic: str,
    derived_topic: str,
    virtual_partitions: int,
    physical_partitions: int,
    key_of: Callable[[Any], Any] = pageview_key,
    order_of: Callable[[Any], int] = pageview_order,
    *,
    parse: Callable[[bytes], Any] = _parse_json,
    timestamp_is_order: bool = False,
    isolation: str = "read_committed",
    timeout: float = 120.0,
    max_examples: int = 100,
    config: Mapping[str, Any] | None = None,
) -> VerifyReport:
    """Read both topics completely and run :func:`check_records` on them (``config``: more
    librdkafka settings, a secured cluster's credentials).

    >>> report = check_derived_topic(
    ...     "localhost:9092", "pageviews", "pageviews_by_user", 9, 3
    ... )  # doctest: +SKIP
    >>> report.ok, report.derived_count  # doctest: +SKIP
    (True, 100000)
    """
    source = read_topic(bootstrap, source_topic, isolation, timeout, config)
    derived, partition_count = _read(bootstrap, derived_topic, isolation, timeout, config)
    return check_records(
        source,
        derived,
        virtual_partitions,
        physical_partitions,
        key_of,
        order_of,
        parse=parse,
        timestamp_is_order=timestamp_is_order,
        derived_partition_count=partition_count,
        source_topic=source_topic,
        derived_topic=derived_topic,
        max_examples=max_examples,
    )
