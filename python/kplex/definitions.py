"""Table definitions as kplex stores them, and the reading of the topic that holds them.

The JVM catalog keeps one JSON record per table in the compacted topic ``_kplex_tables``
(one partition; key: the table name in UTF-8; value: UTF-8 JSON; the last record of a
key wins, a null value drops the table)::

    {"format": "kplex-table", "version": 1, "name": "pageviews_by_user",
     "topic": "pageviews_by_user", "virtual_partitions": 9, "physical_partitions": 3,
     "delivery": "exactly_once", "key": null, "order": null, "null_key": "fail",
     "null_order": "fail", "created_ms": 1700000000000,
     "properties": {"kplex.physical_partitions": "3", "kplex.virtual_partitions": "9"}}

A read-time table also has ``"source"``, the topic it is computed from, or a
comma-separated list of topics (``"clicks, views"``: :func:`source_topics`); its
``physical_partitions`` is the source topics' partition count, summed (0 when unknown).

:func:`parse_definition` is the one Python parser of such a value (the reader and
``kplex sql explain`` both use it); like the JVM's ``TableDefinition.fromJson`` it
refuses another format and a newer version. :func:`read_stored_values` reads the topic
with a plain Kafka consumer, no Spark needed.

>>> d = parse_definition(b'{"format":"kplex-table","version":1,"name":"t","virtual_partitions":4,"physical_partitions":2}')
>>> d.name, d.topic, d.virtual_partitions, d.physical_partitions, d.delivery
('t', 't', 4, 2, 'exactly_once')
>>> parse_definition(b'{"format":"kplex-table","version":2,"name":"t"}')
Traceback (most recent call last):
...
kplex.errors.DefinitionError: [KPLEX_DEFINITION_FORMAT] table definition of format 'kplex-table' version 2 is not understood by this kplex (format version 1): upgrade kplex.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from kplex import settings
from kplex.errors import DefinitionError, kplex_error
from kplex.kafka.clients import access_error, consumer

__all__ = [
    "DefinitionError",
    "FORMAT",
    "FORMAT_VERSION",
    "TABLES_TOPIC",
    "TableDefinition",
    "latest_values",
    "parse_definition",
    "positive",
    "read_definition",
    "read_stored_values",
    "read_table_definition",
    "source_topics",
]

#: The catalog's metadata_topic by default: options.json's, as the JVM reads it.
TABLES_TOPIC: str = settings.default(settings.METADATA_TOPIC)


def _setting(properties: Mapping[str, str], name: str) -> str:
    """A setting that has a default, as ``properties`` give it or else by default."""
    return str(settings.value(properties, name))
FORMAT = "kplex-table"
#: The newest format version this kplex reads (the JVM's ``TableDefinition.FORMAT_VERSION``).
FORMAT_VERSION = 1


@dataclass(frozen=True)
class TableDefinition:
    """One stored table definition, field by field as the record has them.

    ``virtual_partitions`` and ``physical_partitions`` are None when the record lacks
    them or holds no integer there; ``version`` is -1 when the record has none (the
    JVM reads such a record too, as version -1).
    """

    format: str
    version: int
    name: str
    topic: str
    virtual_partitions: int | None
    physical_partitions: int | None
    source: str | None = None
    delivery: str = "exactly_once"
    key: str | None = None
    order: str | None = None
    null_key: str = "fail"
    null_order: str = "fail"
    created_ms: int | None = None
    properties: Mapping[str, str] = field(default_factory=dict)
    #: Where this definition was read (a file's ``CREATE TABLE``, a record on a broker), for
    #: what explains it; not part of the record.
    origin: str = field(default="", compare=False)

    @classmethod
    def from_properties(cls, name: str, properties: Mapping[str, str], origin: str = "") -> TableDefinition:
        """The table a ``CREATE TABLE kplex.<name> TBLPROPERTIES (...)`` asks for, as the
        catalog would store it; V and P are None unless they are integers >= 1.

        >>> d = TableDefinition.from_properties("t", {"kplex.virtual_partitions": "9", "kplex.physical_partitions": "3"})
        >>> d.virtual_partitions, d.physical_partitions, d.delivery, d.topic
        (9, 3, 'exactly_once', 't')
        """
        p = {k.lower(): v.strip() for k, v in properties.items()}
        return cls(
            format=FORMAT,
            version=FORMAT_VERSION,
            name=name,
            topic=p.get(settings.TOPIC) or name,
            virtual_partitions=positive(settings.parse_int(p.get(settings.VIRTUAL_PARTITIONS, ""))),
            physical_partitions=positive(settings.parse_int(p.get(settings.PHYSICAL_PARTITIONS, ""))),
            delivery=_setting(p, settings.DELIVERY).lower(),
            key=p.get(settings.KEY),
            order=p.get(settings.ORDER),
            null_key=_setting(p, settings.NULL_KEY).lower(),
            null_order=_setting(p, settings.NULL_ORDER).lower(),
            source=p.get(settings.SOURCE),
            properties=p,
            origin=origin,
        )

    def to_record(self) -> dict[str, Any]:
        """The JSON object of the record, with the JVM's field order.

        >>> parse_definition(b'{"format":"kplex-table","version":1,"name":"t","topic":"t",'
        ...                  b'"virtual_partitions":4,"physical_partitions":2}').to_record()["topic"]
        't'
        """
        record: dict[str, Any] = {"format": self.format, "version": self.version, "name": self.name,
                                  "topic": self.topic}
        if self.source is not None:
            record["source"] = self.source
        record.update(virtual_partitions=self.virtual_partitions, physical_partitions=self.physical_partitions,
                      delivery=self.delivery, key=self.key, order=self.order, null_key=self.null_key,
                      null_order=self.null_order, created_ms=self.created_ms, properties=dict(self.properties))
        return record


def source_topics(source: str) -> tuple[str, ...]:
    """The topics of a read-time table's ``kplex.source``: a comma-separated list, names
    trimmed, empty entries left out (as the JVM's ``TableDefinition.sourceList``), in the
    order given (which breaks ties in the event-time merge).

    >>> source_topics("clicks, views")
    ('clicks', 'views')
    >>> source_topics("pageviews")
    ('pageviews',)
    >>> source_topics("clicks, clicks")
    Traceback (most recent call last):
    ...
    kplex.errors.DefinitionError: [KPLEX_DEFINITION_FORMAT] 'kplex.source' = 'clicks, clicks' names topic 'clicks' twice; name each source topic once.
    """
    topics = tuple(name.strip() for name in source.split(",") if name.strip())
    if not topics:
        raise kplex_error("DEFINITION_FORMAT.NO_SOURCE_TOPIC", source=source)
    twice = next((t for i, t in enumerate(topics) if t in topics[:i]), None)
    if twice is not None:
        raise kplex_error("DEFINITION_FORMAT.SOURCE_TWICE", source=source, topic=twice)
    return topics


def positive(value: Any) -> int | None:
    """``value`` when it is an integer >= 1 (a usable V or P), else None.

    >>> positive(3), positive(0), positive(None), positive(True)
    (3, None, None, None)
    """
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _integer(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _version(value: Any) -> int:
    """The ``version`` field read as the JVM reads it (Jackson's ``asInt(-1)``): a number
    truncated, a numeric string parsed, anything else (or nothing) -1."""
    if isinstance(value, (bool, int, float)):
        return int(value)
    if isinstance(value, str):
        for parse in (int, float):
            try:
                return int(parse(value.strip()))
            except (ValueError, OverflowError):
                continue
    return -1


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def parse_definition(value: bytes | str) -> TableDefinition:
    """The definition stored as one record value of ``_kplex_tables``.

    Raises :class:`~kplex.errors.DefinitionError` for a value that is not a JSON
    object with a ``name``, of another ``format`` than ``kplex-table``, or of a
    ``version`` newer than this kplex reads.

    >>> parse_definition(b'{"format":"other","version":1,"name":"t"}')
    Traceback (most recent call last):
    ...
    kplex.errors.DefinitionError: [KPLEX_DEFINITION_FORMAT] table definition of format 'other' version 1 is not understood by this kplex (format version 1): upgrade kplex.
    """
    try:
        data = json.loads(value)
    except ValueError as error:  # JSONDecodeError, UnicodeDecodeError
        raise kplex_error("DEFINITION_FORMAT.UNREADABLE", cause=error) from None
    if not isinstance(data, dict):
        data = {}
    fmt = data.get("format")
    version = _version(data.get("version"))
    if fmt != FORMAT or version > FORMAT_VERSION:
        raise kplex_error("DEFINITION_FORMAT.TOO_NEW", format="" if fmt is None else fmt, version=version,
                          supported_version=FORMAT_VERSION)
    if data.get("name") is None:
        raise kplex_error("DEFINITION_FORMAT.NO_NAME")
    properties = data.get("properties") or {}
    if not isinstance(properties, dict):
        raise kplex_error("DEFINITION_FORMAT.PROPERTIES_NOT_OBJECT", table=data["name"])
    props = {str(k): str(v) for k, v in properties.items()}
    name = str(data["name"])
    return TableDefinition(
        format=fmt,
        version=version,
        name=name,
        topic=str(data.get("topic") or name),
        virtual_partitions=_integer(data.get("virtual_partitions")),
        physical_partitions=_integer(data.get("physical_partitions")),
        source=_text(data.get("source")),
        delivery=str(data.get("delivery") or _setting({}, settings.DELIVERY)),
        key=_text(data.get("key")),
        order=_text(data.get("order")),
        null_key=str(data.get("null_key") or _setting(props, settings.NULL_KEY)),
        null_order=str(data.get("null_order") or _setting(props, settings.NULL_ORDER)),
        created_ms=_integer(data.get("created_ms")),
        properties=props,
    )


def latest_values(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, bytes]:
    """Fold (key, value) records of ``_kplex_tables`` in offset order: the last record of
    a key wins, a tombstone (null value) drops the key, a record without a key is skipped.

    >>> latest_values([(b"a", b"1"), (b"b", b"2"), (b"a", b"3"), (b"b", None)])
    {'a': b'3'}
    """
    latest: dict[str, bytes | None] = {}
    for key, value in records:
        if key is not None:
            latest[key.decode("utf-8", errors="replace")] = value
    return {name: value for name, value in latest.items() if value is not None}


def read_stored_values(bootstrap: str, *, topic: str = TABLES_TOPIC, timeout: float = 15.0,
                       config: Mapping[str, Any] | None = None) -> dict[str, bytes]:
    """The latest value of every table in ``topic`` (the catalog's ``metadata_topic``),
    read from the beginning to the end of its partition 0 (:func:`latest_values`).

    A cluster without the topic has no tables. ``config`` adds librdkafka settings.
    Raises :class:`~kplex.errors.BrokerUnreachableError` when the cluster does not
    answer, or the read takes longer than ``timeout`` seconds.

    >>> sorted(read_stored_values("localhost:9092"))  # doctest: +SKIP
    ['pageviews_by_user', 'pageviews_by_user_live']
    """
    client = consumer(bootstrap, config)  # which never makes the topic it asks about
    try:
        try:
            metadata = client.list_topics(timeout=timeout)  # all topics: never auto-creates
            found = metadata.topics.get(topic)
            if found is not None and found.error is not None:
                denied = access_error(client, found.error, "DESCRIBE", topic=topic)
                if denied is not None:
                    raise denied
            if found is None or found.error is not None or 0 not in found.partitions:
                return {}
            low, high = client.get_watermark_offsets(TopicPartition(topic, 0), timeout=timeout, cached=False)
        except KafkaException as error:
            raise access_error(client) or kplex_error(
                "UNREACHABLE.TIMED_OUT", bootstrap=bootstrap, timeout_s=f"{timeout:g}", cause=error) from error
        if high <= low:
            return {}
        client.assign([TopicPartition(topic, 0, low)])
        records: list[tuple[bytes | None, bytes | None]] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for message in client.consume(num_messages=1000, timeout=0.2):
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        return latest_values(records)
                    raise access_error(client, error, "READ", topic=topic) or kplex_error(
                        "UNREACHABLE.CANNOT_READ", topic=topic, bootstrap=bootstrap, cause=error)
                records.append((message.key(), message.value()))
                if message.offset() >= high - 1:
                    return latest_values(records)
        raise kplex_error("UNREACHABLE.READ_TOO_LONG", topic=topic, bootstrap=bootstrap, timeout_s=f"{timeout:g}")
    finally:
        client.close()


def read_definition(bootstrap: str, table: str, *, metadata_topic: str = TABLES_TOPIC, timeout: float = 15.0,
                    config: Mapping[str, Any] | None = None) -> TableDefinition | None:
    """The stored definition of ``table``, None if it has none.

    >>> read_definition("localhost:9092", "pageviews_by_user").virtual_partitions  # doctest: +SKIP
    9
    """
    value = read_stored_values(bootstrap, topic=metadata_topic, timeout=timeout, config=config).get(table)
    return None if value is None else parse_definition(value)


def read_table_definition(bootstrap: str, table: str, *, metadata_topic: str = TABLES_TOPIC,
                          timeout: float = 15.0, config: Mapping[str, Any] | None = None,
                          ) -> dict[str, Any] | None:
    """The stored definition of ``table`` as the JSON object of its record, None if it has none.

    >>> read_table_definition("localhost:9092", "pageviews_by_user")["virtual_partitions"]  # doctest: +SKIP
    9
    """
    definition = read_definition(bootstrap, table, metadata_topic=metadata_topic, timeout=timeout, config=config)
    return None if definition is None else definition.to_record()
