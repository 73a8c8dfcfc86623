"""The tables ``kplex sql explain`` knows: from ``TBLPROPERTIES`` in a file, or as
stored in Kafka.

Stored definitions are parsed by :mod:`kplex.definitions` (the one parser of the
records of ``_kplex_tables``); this module keeps what explain shows of them and
where each came from. :func:`read_table_definitions` reads the topic with a plain
Kafka consumer, so no Spark is needed.

A table is a :class:`kplex.definitions.TableDefinition` with its ``origin`` set (the one
model of a table's definition); a ``CREATE TABLE`` in a file is read by
:meth:`~kplex.definitions.TableDefinition.from_properties`.

>>> v = b'{"format":"kplex-table","version":1,"name":"t","virtual_partitions":4,"physical_partitions":0}'
>>> t = definitions_from_records([(b"t", v)], "broker")["t"]
>>> t.virtual_partitions, t.physical_partitions, t.origin
(4, None, 'broker')
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

from kplex.definitions import (
    TABLES_TOPIC,
    TableDefinition,
    latest_values,
    parse_definition,
    positive,
    read_stored_values,
)
from kplex.errors import BrokerUnreachableError, DefinitionError
from kplex.sqltools.errors import broker_unavailable

__all__ = ["TABLES_TOPIC", "read_table_definitions", "definitions_from_records"]


def _explained(values: Mapping[str, bytes], origin: str) -> dict[str, TableDefinition]:
    """The tables of the latest stored values; values it cannot read are skipped."""
    tables: dict[str, TableDefinition] = {}
    for name, value in values.items():
        try:
            d = parse_definition(value)
            tables[name] = replace(d, origin=origin, virtual_partitions=positive(d.virtual_partitions),
                                   physical_partitions=positive(d.physical_partitions))
        except DefinitionError:
            continue
    return tables


def definitions_from_records(
    records: Iterable[tuple[bytes | None, bytes | None]], origin: str
) -> dict[str, TableDefinition]:
    """Fold (key, value) records of ``_kplex_tables`` in offset order: the last
    record of a key wins, a tombstone drops it, unreadable values are skipped.

    >>> v = b'{"format":"kplex-table","version":1,"name":"a","virtual_partitions":2,"physical_partitions":1}'
    >>> sorted(definitions_from_records([(b"a", v), (b"b", v.replace(b'"a"', b'"b"')), (b"a", None)], "x"))
    ['b']
    """
    return _explained(latest_values(records), origin)


def read_table_definitions(
    bootstrap: str, timeout: float = 5.0, topic: str = TABLES_TOPIC, config: Mapping[str, Any] | None = None
) -> dict[str, TableDefinition]:
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
        raise broker_unavailable(error) from error
    return _explained(values, f"stored definition on {bootstrap}")
