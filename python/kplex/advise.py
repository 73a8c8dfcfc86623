"""Choose V and P from the data: how a topic's records would spread over virtual partitions.

The whole reason for kplex is that a topic was partitioned wrongly for some consumer.
:func:`advise` reads a sample of a source topic, evaluates the key and order a table
definition would (:mod:`kplex.expressions`, the same subset of Spark SQL, JSON pointers
of the original kplex included), and reports as data:

* the load per source partition now, and for every candidate V (with a P dividing V, so
  that the derived topic keeps Kafka's default placement, G4) the load per virtual and
  per physical partition, as max/mean imbalance;
* how many consumers the data can keep busy at that V: the records over the busiest
  virtual partition's records (a consumer owns whole virtual partitions; one with the
  busiest is the last to finish);
* the hottest keys and their share, and whether one key alone exceeds a consumer's share
  (then no V helps: a finer key, or a two-stage aggregation);
* how out of order each source partition is: for every record, how far its order value
  trails the largest one before it on its partition (the lateness rule of
  ``docs/contract.md``); the percentiles of that are the ``kplex.max_delay_ms`` that keeps
  that share of records on time;
* a recommendation with its reasons.

>>> records = [Sampled(p, str(i % 40).encode(), 1000 + i) for i in range(4000) for p in (i % 3,)]
>>> advice = analyse(records, topic="t", source_partitions=3, candidates=(6, 12), consumers=6)
>>> (advice.recommended.virtual_partitions, advice.recommended.physical_partitions)
(6, 3)
>>> advice.max_delay_ms["max"]
0
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from kplex.errors import kplex_error
from kplex.placement import physical_partition, virtual_partition

__all__ = ["Sampled", "Candidate", "HotKey", "Advice", "analyse", "advise", "read_sample",
           "DEFAULT_CANDIDATES", "MAX_IMBALANCE"]

#: V tried when none are given (besides the source's partition count and the consumers wanted).
DEFAULT_CANDIDATES = (3, 6, 9, 12, 18, 24, 36, 48, 64, 96, 128)
#: The busiest virtual partition may carry this much more than the mean and still count as even.
MAX_IMBALANCE = 1.5
#: The percentile of the disorder named beside its maximum (for late_policy drop or side_topic).
ON_TIME_PERCENTILE = 99.9
#: Percentiles reported for the disorder.
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


@dataclass(frozen=True)
class Sampled:
    """One sampled record: its source partition, canonical key bytes and order value (None: NULL)."""

    partition: int
    key: bytes | None
    order: int | None


@dataclass(frozen=True)
class Candidate:
    """One (V, P): the records per virtual and per physical partition and what follows."""

    virtual_partitions: int
    physical_partitions: int
    per_virtual: tuple[int, ...]
    per_physical: tuple[int, ...]

    @property
    def vp_imbalance(self) -> float:
        """Busiest virtual partition over the mean (1.0 is perfectly even)."""
        return _imbalance(self.per_virtual)

    @property
    def physical_imbalance(self) -> float:
        return _imbalance(self.per_physical)

    @property
    def empty_virtual(self) -> int:
        return sum(1 for n in self.per_virtual if n == 0)

    @property
    def busy_consumers(self) -> int:
        """How many consumers the data keeps busy: all records over the busiest VP's, at most V."""
        busiest = max(self.per_virtual, default=0)
        return 0 if busiest == 0 else min(self.virtual_partitions, sum(self.per_virtual) // busiest)

    def to_dict(self) -> dict[str, Any]:
        return {"virtual_partitions": self.virtual_partitions, "physical_partitions": self.physical_partitions,
                "vp_imbalance": round(self.vp_imbalance, 3), "physical_imbalance": round(self.physical_imbalance, 3),
                "empty_virtual_partitions": self.empty_virtual, "busy_consumers": self.busy_consumers,
                "per_virtual": list(self.per_virtual), "per_physical": list(self.per_physical)}


@dataclass(frozen=True)
class HotKey:
    key: bytes
    records: int
    share: float

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key.decode("utf-8", errors="backslashreplace"), "records": self.records,
                "share": round(self.share, 5)}


@dataclass(frozen=True)
class Advice:
    """What :func:`analyse` found; :meth:`to_dict` is the ``--json`` form."""

    topic: str
    records: int
    source_partitions: int
    per_source_partition: tuple[int, ...]
    distinct_keys: int
    null_keys: int
    null_orders: int
    hot_keys: tuple[HotKey, ...]
    max_delay_ms: dict[str, int]
    partition_spread_ms: int
    candidates: tuple[Candidate, ...]
    recommended: Candidate | None
    consumers: int | None
    reasons: tuple[str, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def source_imbalance(self) -> float:
        return _imbalance(self.per_source_partition)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["hot_keys"] = [k.to_dict() for k in self.hot_keys]
        out["candidates"] = [c.to_dict() for c in self.candidates]
        out["recommended"] = None if self.recommended is None else self.recommended.to_dict()
        out["per_source_partition"] = list(self.per_source_partition)
        out["source_imbalance"] = round(self.source_imbalance, 3)
        out["reasons"], out["warnings"] = list(self.reasons), list(self.warnings)
        return out


def _imbalance(loads: Sequence[int]) -> float:
    total = sum(loads)
    return 0.0 if total == 0 else max(loads) / (total / len(loads))


def _percentile(sorted_values: Sequence[int], pct: float) -> int:
    if not sorted_values:
        return 0
    rank = max(0, math.ceil(pct / 100.0 * len(sorted_values)) - 1)
    return sorted_values[rank]


def _label(pct: float) -> str:
    return "p" + (f"{pct:g}".replace(".", "_") if pct % 1 else f"{pct:.0f}")


def disorder(records: Iterable[Sampled]) -> tuple[dict[str, int], int]:
    """How far each record's order trails the largest before it on its own partition
    (percentiles and max: the ``max_delay_ms`` that keeps that share on time), and how far
    apart the partitions' largest order values are at the end (what the slowest partition
    holds back)."""
    front: dict[int, int] = {}
    lags: list[int] = []
    for r in records:
        if r.order is None:
            continue
        top = front.get(r.partition)
        lags.append(0 if top is None or r.order >= top else top - r.order)
        if top is None or r.order > top:
            front[r.partition] = r.order
    lags.sort()
    out = {_label(p): _percentile(lags, p) for p in PERCENTILES}
    out["max"] = lags[-1] if lags else 0
    spread = max(front.values()) - min(front.values()) if front else 0
    return out, spread


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def physical_for(v: int, source_partitions: int) -> int:
    """The P advised for V: the divisor of V nearest the source's partition count (the broker
    load stays as it is), the larger one on a tie; P divides V so placement stays Kafka's."""
    return min(_divisors(v), key=lambda d: (abs(d - source_partitions), -d))


def analyse(records: Sequence[Sampled], *, topic: str, source_partitions: int,
            candidates: Iterable[int] = (), consumers: int | None = None, top: int = 10,
            max_imbalance: float = MAX_IMBALANCE) -> Advice:
    """The advice for a sample (pure: no Kafka). ``consumers``: how many the user wants to
    keep busy (None: as many as the data allows within ``max_imbalance``)."""
    if consumers is not None and consumers < 1:
        raise kplex_error("BAD_OPTION.MINIMUM", option="consumers", minimum=1, value=consumers)
    candidates = tuple(candidates)
    if any(v < 1 for v in candidates):
        raise kplex_error("BAD_OPTION.CANDIDATES", option="candidates", value=list(candidates))
    vs = sorted({v for v in (*(candidates or DEFAULT_CANDIDATES), source_partitions, consumers or 0) if v > 0})
    keyed = [r for r in records if r.key is not None]
    counts = Counter(r.key for r in keyed)
    per_source = [0] * source_partitions
    for r in records:
        if 0 <= r.partition < source_partitions:
            per_source[r.partition] += 1
    total = len(keyed)
    hot = tuple(HotKey(k, n, n / total) for k, n in heapq.nlargest(top, counts.items(), key=lambda kv: kv[1]))
    table = tuple(_candidate(counts, v, physical_for(v, source_partitions)) for v in vs)
    delays, spread = disorder(records)
    recommended, reasons, warnings = _recommend(table, hot, consumers, max_imbalance, total, len(counts))
    reasons.append(f"kplex.max_delay_ms >= {delays['max']}: every sampled record trails its partition's largest"
                   " order value by at most that, so none is late (under the default late_policy 'fail' one late"
                   f" record fails the write); {delays[_label(ON_TIME_PERCENTILE)]} keeps {ON_TIME_PERCENTILE:g}%"
                   " on time, with late_policy 'drop' or 'side_topic' for the rest. A record waits about"
                   " max_delay_ms before it is written")
    nulls = len(records) - total
    null_orders = sum(1 for r in records if r.order is None)
    if nulls or null_orders:
        warnings.append(f"{nulls} records have a NULL key and {null_orders} a NULL order: they fail a write"
                        " unless kplex.null_key / kplex.null_order say drop (or first)")
    return Advice(topic=topic, records=len(records), source_partitions=source_partitions,
                  per_source_partition=tuple(per_source), distinct_keys=len(counts), null_keys=nulls,
                  null_orders=null_orders, hot_keys=hot, max_delay_ms=delays, partition_spread_ms=spread,
                  candidates=table, recommended=recommended, consumers=consumers, reasons=tuple(reasons),
                  warnings=tuple(warnings))


def _candidate(counts: Mapping[bytes, int], v: int, p: int) -> Candidate:
    per_virtual = [0] * v
    for key, n in counts.items():
        per_virtual[virtual_partition(key, v)] += n
    per_physical = [0] * p
    for vp, n in enumerate(per_virtual):
        per_physical[physical_partition(vp, p)] += n
    return Candidate(v, p, tuple(per_virtual), tuple(per_physical))


def _recommend(table: Sequence[Candidate], hot: Sequence[HotKey], consumers: int | None, max_imbalance: float,
               total: int, distinct: int) -> tuple[Candidate | None, list[str], list[str]]:
    reasons: list[str] = []
    warnings: list[str] = []
    if total == 0:
        return None, ["the sample holds no record with a key: nothing to advise on"], warnings
    even = [c for c in table if c.vp_imbalance <= max_imbalance]
    if consumers is not None:
        # V serves N consumers when the busiest virtual partition is at most max_imbalance x one consumer's share.
        enough = [c for c in table if c.virtual_partitions >= consumers
                  and max(c.per_virtual) <= max_imbalance * total / consumers]
        choice = enough[0] if enough else max(table, key=lambda c: (c.busy_consumers, -c.virtual_partitions))
        if not enough:
            warnings.append(f"no candidate V gives {consumers} consumers even work (the busiest virtual partition"
                            f" within {max_imbalance:g}x a consumer's share); the best keeps {choice.busy_consumers}"
                            " busy")
    else:
        pool = even or list(table)
        choice = max(pool, key=lambda c: (c.busy_consumers, -c.virtual_partitions))
    reasons.append(f"V = {choice.virtual_partitions}: its busiest virtual partition carries"
                   f" {choice.vp_imbalance:.2f}x the mean ({choice.empty_virtual} of {choice.virtual_partitions}"
                   f" empty), so the data keeps {choice.busy_consumers} consumers busy all the time"
                   " (all records over the busiest virtual partition's)"
                   + (f"; {consumers} consumers each get work within {max_imbalance:g}x their share"
                      if consumers is not None and choice.virtual_partitions >= consumers
                      and max(choice.per_virtual) <= max_imbalance * total / consumers else ""))
    reasons.append(f"P = {choice.physical_partitions}: divides V, so the derived topic keeps Kafka's default"
                   f" placement (a plain producer would put each key there too); nearest the source's partition"
                   f" count; busiest partition {choice.physical_imbalance:.2f}x the mean")
    if distinct < 10 * choice.virtual_partitions:
        warnings.append(f"only {distinct} distinct keys for V = {choice.virtual_partitions}: with fewer than about"
                        " 10 keys per virtual partition, hashing leaves some far busier than others")
    wanted = consumers or choice.virtual_partitions
    if hot and hot[0].share > 1.0 / wanted:
        k = hot[0]
        warnings.append(f"key {k.to_dict()['key']!r} alone carries {k.share:.1%} of the records, more than one of"
                        f" {wanted} consumers' share ({1.0 / wanted:.1%}): no V spreads one key. Use a finer key"
                        " (e.g. the key plus a sub-key, if per-key order allows it) or aggregate in two stages"
                        " (per key and salt, then per key)")
    return choice, reasons, warnings


# --- Reading a sample from Kafka ------------------------------------------------------------

Progress = Callable[[int], None]


def read_sample(bootstrap: str, topic: str, *, key: str = "key", order: str = "timestamp", sample: int = 100_000,
                start_timestamp: int | None = None, end_timestamp: int | None = None,
                config: Mapping[str, Any] | None = None, timeout: float = 15.0,
                progress: Callable[[int], Progress] | None = None) -> tuple[list[Sampled], int]:
    """Reads the last ``sample`` records of ``topic`` (shared evenly over its partitions; 0:
    all), or those between two timestamps, with key and order evaluated as a table
    definition's (JSON pointers allowed). Returns the records and the partition count.
    ``progress(total)`` gives a callback told how many records were read since the last call."""
    from confluent_kafka import KafkaError, TopicPartition

    from kplex.expressions import SourceRecord, compile_key, compile_order, pointer_or_expression
    from kplex.kafka.clients import access_error, consume, consumer, partitions

    key_of = compile_key(pointer_or_expression(key))
    order_of = compile_order(pointer_or_expression(order, cast="BIGINT"))
    client = consumer(bootstrap, config)
    try:
        parts = partitions(client, topic, timeout)
        if parts is None:
            raise kplex_error("UNKNOWN_TOPIC.ON_BROKER", topic=topic, bootstrap=bootstrap)
        ranges = _ranges(client, topic, parts, sample, start_timestamp, end_timestamp, timeout)
        todo = {p: (lo, hi) for p, (lo, hi) in ranges.items() if hi > lo}
        tick = progress(sum(hi - lo for lo, hi in todo.values())) if progress else None
        client.assign([TopicPartition(topic, p, lo) for p, (lo, _) in todo.items()])
        out: list[Sampled] = []
        while todo:
            msgs = consume(client, timeout)
            if not msgs:
                raise access_error(client) or kplex_error(
                    "READ_STALLED.TOPIC", topic=topic, timeout_s=f"{timeout:g}", partitions=sorted(todo))
            before = len(out)
            for m in msgs:
                p = m.partition()
                if m.error() is not None:
                    if m.error().code() == KafkaError._PARTITION_EOF:
                        todo.pop(p, None)
                        continue
                    raise access_error(client, m.error()) or kplex_error("KAFKA.READING", topic=topic, cause=m.error())
                if p not in todo or m.offset() >= todo[p][1]:
                    todo.pop(p, None)
                    continue
                ts = m.timestamp()[1] if m.timestamp()[0] else None
                rec = SourceRecord(m.key(), m.value(), topic, p, m.offset(), ts)
                out.append(Sampled(p, key_of(rec), _order(order_of, rec)))
                if m.offset() + 1 >= todo[p][1]:
                    todo.pop(p, None)
            if tick:
                tick(len(out) - before)
        return out, len(parts)
    finally:
        client.close()


def _order(order_of: Callable[[Any], int | None], rec: Any) -> int | None:
    try:
        return order_of(rec)
    except (ValueError, TypeError) as error:
        raise kplex_error("BAD_EXPRESSION.ORDER_OF_RECORD", topic=rec.topic, partition=rec.partition,
                          offset=rec.offset, cause=error) from error


def _ranges(client: Any, topic: str, parts: Sequence[int], sample: int, start: int | None, end: int | None,
            timeout: float) -> dict[int, tuple[int, int]]:
    from confluent_kafka import TopicPartition

    ranges = {}
    for p in parts:
        lo, hi = client.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout)
        ranges[p] = (lo, hi)
    if start is not None or end is not None:
        for bound, index in ((start, 0), (end, 1)):
            if bound is None:
                continue
            found = client.offsets_for_times([TopicPartition(topic, p, bound) for p in parts], timeout=timeout)
            for tp in found:
                lo, hi = ranges[tp.partition]
                at = hi if tp.offset < 0 else tp.offset
                ranges[tp.partition] = (at, hi) if index == 0 else (lo, at)
    elif sample > 0:
        share = math.ceil(sample / len(parts))
        ranges = {p: (max(lo, hi - share), hi) for p, (lo, hi) in ranges.items()}
    return ranges


def advise(bootstrap: str, topic: str, *, key: str = "key", order: str = "timestamp", sample: int = 100_000,
           candidates: Iterable[int] = (), consumers: int | None = None, start_timestamp: int | None = None,
           end_timestamp: int | None = None, config: Mapping[str, Any] | None = None, top: int = 10,
           progress: Callable[[int], Progress] | None = None) -> Advice:
    """Reads a sample of ``topic`` and analyses it (:func:`read_sample`, :func:`analyse`).

    >>> a = advise("localhost:9092", "pageviews", key="/userid", order="/viewtime", consumers=9)  # doctest: +SKIP
    >>> a.recommended.virtual_partitions, a.max_delay_ms["p99_9"]  # doctest: +SKIP
    (9, 0)
    """
    records, count = read_sample(bootstrap, topic, key=key, order=order, sample=sample, config=config,
                                 start_timestamp=start_timestamp, end_timestamp=end_timestamp, progress=progress)
    return analyse(records, topic=topic, source_partitions=count, candidates=candidates, consumers=consumers,
                   top=top)
