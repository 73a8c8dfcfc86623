"""Read kplex tables without Spark: every virtual partition in order, with a plain consumer.

Three kinds of table, told apart by the definition stored in ``_kplex_tables``:

* a **kplex-written table** (``INSERT INTO kplex.t``): virtual partition ``vp`` lives on
  physical partition ``vp % P`` in order (G2); its records carry headers ``kplex.vp``
  and ``kplex.order``, which is all the reader needs (G5);
* a **read-time table** (``'kplex.source' = 'topic'``, or several: ``'clicks, views'``):
  no topic of its own; the reader reads every partition of every source topic, computes
  key, order and virtual partition from the definition (:mod:`kplex.expressions`) and
  merges the (topic, partition) sequences in event-time order with the bound
  ``kplex.max_delay_ms`` (:mod:`kplex.reader.merge`), exactly as the Spark source does, so both
  give the same sequences;
* a **plain topic**: its physical partitions are its "virtual" ones, in offset order.
  Given ``order=`` (and optionally ``key=``, ``virtual_partitions=``) it is read as an
  ad-hoc read-time table instead, e.g. one global event-time order of all partitions.

Reads are bounded: from the earliest offset (or ``start_timestamp``) to the last stable
offset when the read starts (or ``end_timestamp``), ``read_committed``. The stored
definitions are read by :mod:`kplex.definitions`; late records of a read-time table
are handled by :mod:`kplex.reader.late`.

>>> for rec in iter_virtual_partition("localhost:9092", "pageviews_by_user", 3):  # doctest: +SKIP
...     print(rec.order, rec.value)
>>> timeline = TableReader("localhost:9092", "clickstream", order="/_time", max_delay_ms=1000)  # doctest: +SKIP
>>> times = [rec.order for rec in timeline]  # doctest: +SKIP
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from kplex import settings
from kplex.definitions import (
    TABLES_TOPIC,
    TableDefinition,
    parse_definition,
    read_stored_values,
    read_table_definition,
)
from kplex.errors import DefinitionError, kplex_error
from kplex.expressions import SourceRecord, compile_key, compile_order, pointer_or_expression
from kplex.kafka.clients import access_error
from kplex.kafka.clients import consumer as _consumer
from kplex.kafka.clients import partitions as _partitions
from kplex.placement import ORDER_HEADER, VP_HEADER, virtual_partition
from kplex.reader.late import LateRecords
from kplex.reader.merge import EventTimeMerge, Pending
from kplex.reader.nulls import DROPPED, null_verdict
from kplex.tableinfo import ReadStats, TableInfo

__all__ = [
    "TABLES_TOPIC",
    "KplexRecord",
    "ReadStats",
    "TableInfo",
    "TableReader",
    "iter_table",
    "iter_virtual_partition",
    "open_table",
    "read_table_definition",
]

LATE_POLICIES = ("fail", "drop", "side_topic")
#: A read that makes no progress for this long is an error, not a hang.
STALL_S = 120.0
#: With more records than this waiting for the watermark, only partitions holding it are read.
MAX_BUFFERED = 100_000


@dataclass(frozen=True)
class KplexRecord:
    """One record of a virtual partition.

    ``key`` is the canonical key bytes (for a plain topic: the record's key); ``order``
    the order value (plain topic: the Kafka timestamp); ``topic``, ``partition``,
    ``offset`` where the record is stored (for a read-time table: in the source);
    ``timestamp`` the Kafka timestamp in ms, or None.
    """

    vp: int
    order: int | None
    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp: int | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def open_table(bootstrap: str, table: str, *, key: str | None = None, order: str | None = None,
               virtual_partitions: int | None = None, max_delay_ms: int | None = None,
               late_policy: str | None = None, late_topic: str | None = None,
               metadata_topic: str = TABLES_TOPIC, timeout: float = 15.0,
               config: Mapping[str, Any] | None = None) -> TableInfo:
    """What to read for ``table``: its stored definition, or the plain topic of that name.

    On a read-time table ``max_delay_ms``, ``late_policy`` and ``late_topic`` override the
    definition for this read. On a plain topic, ``order`` (and ``key``, default the
    record key; ``virtual_partitions``, default 1) make an ad-hoc read-time view; a JSON
    pointer such as ``/viewtime`` stands for ``CAST(get_json_object(...) AS BIGINT)``.

    >>> open_table("localhost:9092", "clickstream", order="/_time", max_delay_ms=1000)  # doctest: +SKIP
    TableInfo(name='clickstream', topic='clickstream', kind='read_time', virtual_partitions=1, ...)
    """
    if virtual_partitions is not None and virtual_partitions < 1:
        raise kplex_error("BAD_OPTION.MINIMUM", option="virtual_partitions", minimum=1, value=virtual_partitions)
    stored = read_stored_values(bootstrap, topic=metadata_topic, timeout=timeout, config=config)
    definition = None if stored.get(table) is None else parse_definition(stored[table])
    overrides = {k: v for k, v in (("max_delay_ms", max_delay_ms), ("late_policy", late_policy),
                                   ("late_topic", late_topic)) if v is not None}
    defining = {k for k, v in (("key", key), ("order", order),
                               ("virtual_partitions", virtual_partitions)) if v is not None}
    if definition is not None:
        info = TableInfo.from_definition(definition)
        if defining:
            raise kplex_error("BAD_OPTION.DEFINING", option=sorted(defining)[0], table=table,
                              options=sorted(defining))
        if overrides and info.kind != "read_time":
            raise kplex_error("BAD_OPTION.OVERRIDES_READ_TIME_ONLY", option=sorted(overrides)[0], table=table,
                              options=sorted(overrides))
        info = replace(info, **overrides)
    else:
        consumer = _consumer(bootstrap, config)
        try:
            partitions = _partitions(consumer, table, timeout)
        finally:
            consumer.close()
        if partitions is None:
            raise kplex_error("UNKNOWN_TOPIC.NO_TABLE_OR_TOPIC", table=table, bootstrap=bootstrap)
        if defining or overrides:
            info = TableInfo(name=table, topic=table, kind="read_time",
                             virtual_partitions=1 if virtual_partitions is None else virtual_partitions,
                             physical_partitions=len(partitions),
                             key=pointer_or_expression(key) if key else "key",
                             order=pointer_or_expression(order, cast="BIGINT") if order else "timestamp",
                             **overrides)
        else:
            info = TableInfo(name=table, topic=table, kind="topic", virtual_partitions=len(partitions),
                             physical_partitions=len(partitions))
    if info.late_policy not in LATE_POLICIES:
        raise kplex_error("BAD_OPTION.ONE_OF", option="late_policy", value=info.late_policy,
                          expected=list(LATE_POLICIES))
    if late_topic is not None and info.late_policy != "side_topic":  # the policy given, else the table's
        raise kplex_error("BAD_OPTION.VALUE", option="late_topic", value=late_topic,
                          expected=f"late records go to a late topic only under late_policy 'side_topic', and this"
                                   f" read's late_policy is '{info.late_policy}'")
    if info.late_policy == "side_topic" and not info.late_topic:
        raise kplex_error("MISSING_OPTION.LATE_TOPIC", option="late_topic")
    if info.late_policy == "side_topic":
        _check_late_topic(info, stored, metadata_topic)
    if info.max_delay_ms < 0:
        raise kplex_error("BAD_OPTION.MINIMUM", option="max_delay_ms", minimum=0, value=info.max_delay_ms)
    return info


#: Kafka's own topics and kplex's commit log: no late record goes to them (nor to the catalog's
#: metadata topic), as in Spark (``catalog/LateTopics``).
RESERVED_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__cluster_metadata",
                             "__share_group_state", "__remote_log_metadata", "_kplex_commits"})


def _check_late_topic(info: TableInfo, stored: Mapping[str, bytes], metadata_topic: str) -> None:
    """Refuse a late topic that is one of the read's sources (its late records would be read
    again), a topic of Kafka's or kplex's own, or another kplex table's topic (they would land
    in its virtual partitions, out of their order), as Spark does."""
    late = str(info.late_topic)
    if late in info.topics:
        raise kplex_error("BAD_VIRTUAL_TABLE.LATE_TOPIC_IS_SOURCE", table=info.name, late_topic=late)
    if late in RESERVED_TOPICS or late == metadata_topic:
        raise kplex_error("BAD_OPTION.LATE_TOPIC_RESERVED", option=settings.LATE_TOPIC, late_topic=late,
                          table=info.name)
    for name, value in sorted(stored.items()):
        try:
            other: TableDefinition = parse_definition(value)
        except DefinitionError:
            continue  # not a table's record (the layout of a spread control plane), or another kplex's
        if other.source is None and other.topic == late:
            raise kplex_error("BAD_OPTION.LATE_TOPIC_OF_TABLE", option=settings.LATE_TOPIC, late_topic=late,
                              table=info.name, other=name)


#: A (topic, partition) pair.
Source = tuple[str, int]


class _Feed:
    """The messages of some topic partitions, each between its bounds, in offset order."""

    def __init__(self, consumer: Consumer, ranges: Mapping[Source, tuple[int, int]]) -> None:
        self.consumer = consumer
        self.ends = {tp: end for tp, (start, end) in ranges.items()}
        self.open = {tp for tp, (start, end) in ranges.items() if end > start}
        self.paused: set[Source] = set()
        self.last_progress = self.last_call = time.monotonic()
        consumer.assign([TopicPartition(t, p, ranges[t, p][0]) for t, p in sorted(self.open)])

    def batch(self) -> tuple[list[Message], list[Source]]:
        """The next messages within bounds, and the topic partitions that ended with them."""
        messages: list[Message] = []
        ended: list[Source] = []
        if time.monotonic() - self.last_call > 1.0:
            self.last_progress = time.monotonic()  # our caller was away (back-pressure): not a stall
        batch = self.consumer.consume(num_messages=1000, timeout=0.5)
        self.last_call = time.monotonic()
        if batch:
            self.last_progress = self.last_call
        elif self.last_call - self.last_progress > STALL_S:
            raise kplex_error("READ_STALLED.PARTITIONS", partitions=", ".join(f"{t}-{p}" for t, p in sorted(self.open)),
                              stall_s=f"{STALL_S:.0f}")
        for msg in batch:
            tp = (msg.topic(), msg.partition())
            error = msg.error()
            if tp not in self.open:
                continue
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise access_error(self.consumer, error, "READ", topic=tp[0]) or KafkaException(error)
                self._end(tp, ended)
            elif msg.offset() >= self.ends[tp]:
                self._end(tp, ended)
            else:
                messages.append(msg)
                if msg.offset() + 1 >= self.ends[tp]:
                    self._end(tp, ended)
        return messages, ended

    def _end(self, tp: Source, ended: list[Source]) -> None:
        self.open.discard(tp)
        ended.append(tp)
        self.consumer.pause([TopicPartition(*tp)])

    def read_only(self, sources: set[Source] | None) -> None:
        """Fetch only ``sources`` (None: all open ones)."""
        pause = set() if sources is None else self.open - sources
        if pause == self.paused:
            return
        if self.paused - pause:
            self.consumer.resume([TopicPartition(*tp) for tp in self.paused - pause])
        if pause - self.paused:
            self.consumer.pause([TopicPartition(*tp) for tp in pause - self.paused])
        self.paused = pause


_DECIMAL = re.compile(rb"[+-]?[0-9]+")


def _ascii_int(value: bytes | None) -> int | None:
    """A header's signed 64-bit decimal as Java's ``Long.valueOf`` reads it (the plugin's
    reading of ``kplex.vp`` and ``kplex.order``), or None: no spaces, no ``_``.

    >>> _ascii_int(b"-12"), _ascii_int(b"+3"), _ascii_int(b" 3"), _ascii_int(b"1_0"), _ascii_int(b"9" * 19)
    (-12, 3, None, None, None)
    """
    if value is None or not _DECIMAL.fullmatch(value):
        return None
    number = int(value)
    return number if -(2**63) <= number < 2**63 else None


class TableReader:
    """An iterable over the records of some (default: all) virtual partitions of a table,
    each virtual partition in its order; :attr:`stats` counts as it goes.

    ``table`` is a name (looked up with :func:`open_table`, which takes the keyword
    arguments ``key``, ``order``, ``virtual_partitions``, ``max_delay_ms``,
    ``late_policy``, ``late_topic``) or a :class:`TableInfo`. ``config`` adds librdkafka
    settings. Records of different virtual partitions interleave; each one's come in
    order.

    >>> reader = TableReader("localhost:9092", "pageviews_by_user", vps=[3])  # doctest: +SKIP
    >>> [r.order for r in reader] == sorted(r.order for r in reader)  # doctest: +SKIP
    True
    """

    def __init__(self, bootstrap: str, table: str | TableInfo, vps: Iterable[int] | None = None, *,
                 start_timestamp: int | None = None, end_timestamp: int | None = None,
                 config: Mapping[str, Any] | None = None, metadata_topic: str = TABLES_TOPIC,
                 timeout: float = 15.0, **table_options: Any) -> None:
        self.bootstrap = bootstrap
        self.config = dict(config or {})
        self.timeout = timeout
        self.info = table if isinstance(table, TableInfo) else open_table(
            bootstrap, table, metadata_topic=metadata_topic, timeout=timeout, config=config,
            **table_options)
        v = self.info.virtual_partitions
        self.vps = set(range(v)) if vps is None else set(vps)
        bad = sorted(vp for vp in self.vps if not 0 <= vp < v)
        if bad:
            raise kplex_error("BAD_OPTION.VIRTUAL_PARTITIONS", option="vps", table=self.info.name,
                              last_virtual_partition=v - 1, value=bad)
        self.start_timestamp = start_timestamp
        self.end_timestamp = end_timestamp
        self.stats = ReadStats()
        if self.info.kind == "read_time":
            self._key = compile_key(self.info.key or "key")
            self._order = compile_order(self.info.order or "timestamp")
            # Ties after (order, key, value) go by topic name, as Spark's read-time plan sorts.
            self._topic_index = {t: i for i, t in enumerate(sorted(self.info.topics))}

    def __iter__(self) -> Iterator[KplexRecord]:
        consumer = _consumer(self.bootstrap, self.config)
        try:
            found: dict[str, list[int]] = {}
            for topic in self.info.topics:
                partitions = _partitions(consumer, topic, self.timeout)
                if partitions is None and self.info.kind == "derived":  # its own topic: deleted outside kplex
                    raise kplex_error("UNKNOWN_TOPIC.TABLE_TOPIC_DELETED", topic=topic, table=self.info.name)
                if partitions is None:
                    raise kplex_error("UNKNOWN_TOPIC.OF_TABLE", topic=topic, table=self.info.name)
                found[topic] = partitions
            topic = self.info.topics[0]
            if self.info.kind == "derived":
                if len(found[topic]) != self.info.physical_partitions:
                    raise kplex_error("PARTITION_MISMATCH.READ", topic=topic, partition_count=len(found[topic]),
                                      table=self.info.name, expected=self.info.physical_partitions)
                wanted = [(topic, p) for p in sorted({vp % self.info.physical_partitions for vp in self.vps})]
            elif self.info.kind == "topic":
                wanted = [(topic, p) for p in sorted(self.vps)]
            else:
                wanted = [(t, p) for t in self.info.topics for p in found[t]]
            feed = _Feed(consumer, self._ranges(consumer, wanted))
            if self.info.kind == "read_time":
                yield from self._merged(feed, wanted)
            else:
                yield from self._stored(feed)
        finally:
            consumer.close()

    def _ranges(self, consumer: Consumer, sources: list[Source]) -> dict[Source, tuple[int, int]]:
        ranges = {}
        for t, p in sources:
            ranges[t, p] = consumer.get_watermark_offsets(TopicPartition(t, p), timeout=self.timeout,
                                                          cached=False)
        for i, ts in enumerate((self.start_timestamp, self.end_timestamp)):
            if ts is None:
                continue
            found = consumer.offsets_for_times([TopicPartition(t, p, ts) for t, p in sources],
                                               timeout=self.timeout)
            for tp in found:
                low, high = ranges[tp.topic, tp.partition]
                offset = high if tp.offset < 0 else min(max(tp.offset, low), high)
                ranges[tp.topic, tp.partition] = (offset, high) if i == 0 else (low, max(low, offset))
        return ranges

    @staticmethod
    def _coordinates(msg: Message) -> dict[str, Any]:
        kind, ts = msg.timestamp()
        return dict(topic=msg.topic(), partition=msg.partition(), offset=msg.offset(),
                    timestamp=None if ts < 0 else ts, headers=tuple(msg.headers() or ()))

    def _stored(self, feed: _Feed) -> Iterator[KplexRecord]:
        derived = self.info.kind == "derived"
        while feed.open:
            messages, _ = feed.batch()
            for msg in messages:
                self.stats.records_read += 1
                if derived:
                    headers = dict(msg.headers() or ())
                    vp = _ascii_int(headers.get(VP_HEADER))
                    if vp is None or vp not in self.vps:
                        continue
                    order = _ascii_int(headers.get(ORDER_HEADER))
                else:
                    vp = msg.partition()
                    order = msg.timestamp()[1] if msg.timestamp()[1] >= 0 else None
                self.stats.per_vp[vp] += 1
                yield KplexRecord(vp=vp, order=order, key=msg.key(), value=msg.value(),
                                  **self._coordinates(msg))

    def _merged(self, feed: _Feed, sources: list[Source]) -> Iterator[KplexRecord]:
        index = {tp: i for i, tp in enumerate(sources)}
        merge: EventTimeMerge[KplexRecord] = EventTimeMerge(len(sources), self.info.max_delay_ms)
        for tp in sources:
            if tp not in feed.open:
                merge.end(index[tp])
        late = LateRecords(self.bootstrap, self.info, self.config, self.stats)
        try:
            while True:
                while (record := merge.poll()) is not None:
                    self.stats.per_vp[record.vp] += 1
                    yield record
                if merge.all_ended():
                    break
                if merge.buffered > MAX_BUFFERED:
                    feed.read_only({tp for tp in sources if merge.holds_watermark(index[tp])})
                else:
                    feed.read_only(None)
                messages, ended = feed.batch()
                for msg in messages:
                    self.stats.records_read += 1
                    self._merge_one(merge, index[msg.topic(), msg.partition()], msg, late)
                for tp in ended:
                    merge.end(index[tp])
            late.flush()
        finally:
            late.close()

    def _merge_one(self, merge: EventTimeMerge[KplexRecord], source: int, msg: Message,
                   late: LateRecords) -> None:
        coordinates = self._coordinates(msg)
        src = SourceRecord(msg.key(), msg.value(), coordinates["topic"], coordinates["partition"],
                           coordinates["offset"], coordinates["timestamp"])
        key = self._key(src)
        order = self._order(src)
        where = f"{src.topic}-{src.partition} offset {src.offset}"
        if null_verdict(key_is_null=key is None, order_is_null=order is None, null_key=self.info.null_key,
                        null_order=self.info.null_order) == DROPPED:
            return
        if key is None:
            raise kplex_error("NULL_KEY.READER", expression=self.info.key, position=where)
        if order is None:  # null_order = first included: a read-time table's merge cannot honour it
            raise kplex_error("NULL_ORDER.READER", expression=self.info.order, position=where)
        vp = virtual_partition(key, self.info.virtual_partitions)
        if merge.is_late(source, order):
            if vp in self.vps:
                late.handle(msg, vp, order, merge.high(source))
            return
        merge.accept(source, order)
        if vp in self.vps:
            merge.add(Pending(order, key, msg.value(), src.partition, src.offset,
                              self._topic_index[src.topic]),
                      KplexRecord(vp=vp, order=order, key=key, value=msg.value(), **coordinates))


def iter_virtual_partition(bootstrap: str, table: str | TableInfo, vp: int,
                           **options: Any) -> Iterator[KplexRecord]:
    """The records of virtual partition ``vp`` of ``table``, in order (see :class:`TableReader`).

    >>> [r.order for r in iter_virtual_partition("localhost:9092", "pageviews_by_user", 3)]  # doctest: +SKIP
    [1565606197468, 1565606198622, ...]
    """
    return iter(TableReader(bootstrap, table, vps=[vp], **options))


def iter_table(bootstrap: str, table: str | TableInfo, vps: Iterable[int] | None = None,
               **options: Any) -> Iterator[KplexRecord]:
    """The records of every (or the given) virtual partition; each one's in order."""
    return iter(TableReader(bootstrap, table, vps=vps, **options))
