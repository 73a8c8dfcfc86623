"""Table definitions of the kplex catalog: from ``TBLPROPERTIES`` in a file, or
as stored in Kafka.

kplex stores each table's definition in the compacted topic ``_kplex_tables``
(one partition; record key = table name in UTF-8; value = UTF-8 JSON; the last
record of a key wins, a null value drops the table)::

    {"format": "kplex-table", "version": 1, "name": "pageviews_by_user",
     "topic": "pageviews_by_user", "virtual_partitions": 9,
     "physical_partitions": 3, "delivery": "exactly_once", "key": null,
     "order": null, "null_key": "fail", "null_order": "fail",
     "created_ms": 1700000000000}

:func:`read_table_definitions` reads that topic with a plain Kafka consumer,
from the beginning of partition 0 to its end, so no Spark is needed.

>>> d = TableDefinition.from_properties("t", {"kplex.virtual_partitions": "9", "kplex.physical_partitions": "3"}, "file")
>>> d.virtual_partitions, d.physical_partitions, d.delivery, d.topic
(9, 3, 'exactly_once', 't')
>>> TableDefinition.from_json(b'{"format":"kplex-table","version":1,"name":"t","virtual_partitions":4,"physical_partitions":2}', "broker").virtual_partitions
4
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from kplex.sqltools.errors import BrokerUnavailable
from kplex.sqltools.properties import parse_int

__all__ = ["TABLES_TOPIC", "TableDefinition", "read_table_definitions", "definitions_from_records"]

TABLES_TOPIC = "_kplex_tables"
FORMAT = "kplex-table"

_QUIET = logging.getLogger("kplex.sqltools.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


@dataclass(frozen=True)
class TableDefinition:
    """What kplex knows about one table; ``origin`` says where it was read."""

    name: str
    topic: str
    virtual_partitions: int | None
    physical_partitions: int | None
    origin: str
    delivery: str = "exactly_once"
    key: str | None = None
    order: str | None = None
    null_key: str = "fail"
    null_order: str = "fail"
    source: str | None = None

    @classmethod
    def from_properties(cls, name: str, properties: Mapping[str, str], origin: str) -> TableDefinition:
        """The definition a ``CREATE TABLE kplex.<name> TBLPROPERTIES (...)`` asks for."""
        p = {k.lower(): v.strip() for k, v in properties.items()}
        return cls(
            name=name,
            topic=p.get("kplex.topic") or name,
            virtual_partitions=_positive(parse_int(p.get("kplex.virtual_partitions", ""))),
            physical_partitions=_positive(parse_int(p.get("kplex.physical_partitions", ""))),
            origin=origin,
            delivery=p.get("kplex.delivery", "exactly_once").lower(),
            key=p.get("kplex.key"),
            order=p.get("kplex.order"),
            null_key=p.get("kplex.null_key", "fail").lower(),
            null_order=p.get("kplex.null_order", "fail").lower(),
            source=p.get("kplex.source"),
        )

    @classmethod
    def from_json(cls, value: bytes | str, origin: str) -> TableDefinition:
        """The definition stored as one record value of ``_kplex_tables``."""
        data: dict[str, Any] = json.loads(value)
        if data.get("format") != FORMAT:
            raise ValueError(f"not a kplex table definition (format {data.get('format')!r})")
        name = str(data["name"])
        return cls(
            name=name,
            topic=str(data.get("topic") or name),
            virtual_partitions=_positive(data.get("virtual_partitions")),
            physical_partitions=_positive(data.get("physical_partitions")),
            origin=origin,
            delivery=str(data.get("delivery") or "exactly_once"),
            key=data.get("key"),
            order=data.get("order"),
            null_key=str(data.get("null_key") or "fail"),
            null_order=str(data.get("null_order") or "fail"),
            source=data.get("source"),
        )


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def definitions_from_records(
    records: Iterable[tuple[bytes | None, bytes | None]], origin: str
) -> dict[str, TableDefinition]:
    """Fold (key, value) records of ``_kplex_tables`` in offset order: the last
    record of a key wins, a tombstone drops it, unreadable values are skipped.

    >>> v = b'{"format":"kplex-table","version":1,"name":"a","virtual_partitions":2,"physical_partitions":1}'
    >>> sorted(definitions_from_records([(b"a", v), (b"b", v.replace(b'"a"', b'"b"')), (b"a", None)], "x"))
    ['b']
    """
    tables: dict[str, TableDefinition] = {}
    for key, value in records:
        if key is None:
            continue
        name = key.decode("utf-8", errors="replace")
        if value is None:
            tables.pop(name, None)
            continue
        try:
            tables[name] = TableDefinition.from_json(value, origin)
        except (ValueError, KeyError, TypeError):
            continue
    return tables


def read_table_definitions(
    bootstrap: str, timeout: float = 5.0, topic: str = TABLES_TOPIC
) -> dict[str, TableDefinition]:
    """Every table definition stored on the cluster at ``bootstrap`` (in
    ``topic``: the catalog's ``metadata_topic`` option, ``_kplex_tables`` by default).

    Raises :class:`BrokerUnavailable` when the cluster does not answer within
    ``timeout`` seconds. A cluster without the topic has no tables.

    >>> read_table_definitions("localhost:9092")["pageviews_by_user"].virtual_partitions  # doctest: +SKIP
    9
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": f"kplex-sql-explain-{uuid.uuid4().hex}",
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "allow.auto.create.topics": False,
        "isolation.level": "read_committed",
        "logger": _QUIET,
        "error_cb": lambda _error: None,
    })
    origin = f"stored definition on {bootstrap}"
    try:
        try:
            metadata = consumer.list_topics(timeout=timeout)  # all topics: never auto-creates
            found = metadata.topics.get(topic)
            if found is None or found.error is not None or 0 not in found.partitions:
                return {}
            partition = TopicPartition(topic, 0)
            low, high = consumer.get_watermark_offsets(partition, timeout=timeout)
        except KafkaException as error:
            raise BrokerUnavailable(f"Kafka at {bootstrap} did not answer within {timeout:g} s: {error}") from error
        if high <= low:
            return {}
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        records: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    break
                raise BrokerUnavailable(f"cannot read {topic} on {bootstrap}: {error}")
            records.append((message.key(), message.value()))
            if message.offset() >= high - 1:
                break
        else:
            raise BrokerUnavailable(f"reading {topic} on {bootstrap} took longer than {timeout:g} s")
        return definitions_from_records(records, origin)
    finally:
        consumer.close()
