"""The tables ``kplex sql explain`` knows: from ``TBLPROPERTIES`` in a file, or as
stored in Kafka.

Stored definitions are parsed by :mod:`kplex.definitions` (the one parser of the
records of ``_kplex_tables``); this module keeps what explain shows of them and
where each came from. :func:`read_table_definitions` reads the topic with a plain
Kafka consumer, so no Spark is needed.

>>> d = ExplainedTable.from_properties("t", {"kplex.virtual_partitions": "9", "kplex.physical_partitions": "3"}, "file")
>>> d.virtual_partitions, d.physical_partitions, d.delivery, d.topic
(9, 3, 'exactly_once', 't')
>>> from kplex.definitions import parse_definition
>>> stored = parse_definition(b'{"format":"kplex-table","version":1,"name":"t","virtual_partitions":4,"physical_partitions":2}')
>>> ExplainedTable.from_definition(stored, "broker").virtual_partitions
4
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Iterable, Mapping

from kplex.definitions import (
    FORMAT,
    FORMAT_VERSION,
    TABLES_TOPIC,
    TableDefinition,
    latest_values,
    parse_definition,
    read_stored_values,
)
from kplex.errors import BrokerUnreachableError, DefinitionError
from kplex.settings import parse_int
from kplex.sqltools.errors import BrokerUnavailable

__all__ = ["TABLES_TOPIC", "ExplainedTable", "read_table_definitions", "definitions_from_records"]


@dataclass(frozen=True)
class ExplainedTable(TableDefinition):
    """What explain knows about one table: a definition whose V and P are None unless
    they are >= 1, and ``origin``, where it was read."""

    origin: str = ""

    @classmethod
    def from_properties(cls, name: str, properties: Mapping[str, str], origin: str) -> ExplainedTable:
        """The table a ``CREATE TABLE kplex.<name> TBLPROPERTIES (...)`` asks for."""
        p = {k.lower(): v.strip() for k, v in properties.items()}
        return cls(
            format=FORMAT,
            version=FORMAT_VERSION,
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
            properties=p,
        )

    @classmethod
    def from_definition(cls, definition: TableDefinition, origin: str) -> ExplainedTable:
        """The table a definition stored in ``_kplex_tables`` describes."""
        stored = {f.name: getattr(definition, f.name) for f in fields(TableDefinition)}
        return cls(**{**stored, "virtual_partitions": _positive(definition.virtual_partitions),
                      "physical_partitions": _positive(definition.physical_partitions)}, origin=origin)


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 1 else None


def _explained(values: Mapping[str, bytes], origin: str) -> dict[str, ExplainedTable]:
    """The tables of the latest stored values; values it cannot read are skipped."""
    tables: dict[str, ExplainedTable] = {}
    for name, value in values.items():
        try:
            tables[name] = ExplainedTable.from_definition(parse_definition(value), origin)
        except DefinitionError:
            continue
    return tables


def definitions_from_records(
    records: Iterable[tuple[bytes | None, bytes | None]], origin: str
) -> dict[str, ExplainedTable]:
    """Fold (key, value) records of ``_kplex_tables`` in offset order: the last
    record of a key wins, a tombstone drops it, unreadable values are skipped.

    >>> v = b'{"format":"kplex-table","version":1,"name":"a","virtual_partitions":2,"physical_partitions":1}'
    >>> sorted(definitions_from_records([(b"a", v), (b"b", v.replace(b'"a"', b'"b"')), (b"a", None)], "x"))
    ['b']
    """
    return _explained(latest_values(records), origin)


def read_table_definitions(
    bootstrap: str, timeout: float = 5.0, topic: str = TABLES_TOPIC, config: Mapping[str, Any] | None = None
) -> dict[str, ExplainedTable]:
    """Every table definition stored on the cluster at ``bootstrap`` (in
    ``topic``: the catalog's ``metadata_topic`` option, ``_kplex_tables`` by default).

    Raises :class:`BrokerUnavailable` when the cluster does not answer within
    ``timeout`` seconds. A cluster without the topic has no tables. ``config`` adds
    librdkafka settings (credentials: :func:`kplex.kafka.config.librdkafka`).

    >>> read_table_definitions("localhost:9092")["pageviews_by_user"].virtual_partitions  # doctest: +SKIP
    9
    """
    try:
        values = read_stored_values(bootstrap, topic=topic, timeout=timeout, config=config)
    except BrokerUnreachableError as error:
        raise BrokerUnavailable(str(error)) from error
    return _explained(values, f"stored definition on {bootstrap}")
