"""What a reader knows of a table (:class:`TableInfo`, from its stored definition) and what a
read did (:class:`ReadStats`): shared by :mod:`kplex.reader`, which re-exports both, and
:mod:`kplex.reader.late`, below it."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

from kplex import settings
from kplex.definitions import TableDefinition, source_topics
from kplex.errors import kplex_error

__all__ = ["ReadStats", "TableInfo"]


@dataclass
class ReadStats:
    """What a read did: source records read, records yielded per vp, late records;
    ``max_queued``: the most records that waited in one FIFO's queue
    (:func:`kplex.reader.fanout.serve_fifos`; 0 otherwise)."""

    records_read: int = 0
    per_vp: Counter = field(default_factory=Counter)
    late_dropped: int = 0
    late_to_side_topic: int = 0
    max_queued: int = 0

    @property
    def records_out(self) -> int:
        return sum(self.per_vp.values())

    def __iadd__(self, other: ReadStats) -> ReadStats:
        self.records_read += other.records_read
        self.per_vp.update(other.per_vp)
        self.late_dropped += other.late_dropped
        self.late_to_side_topic += other.late_to_side_topic
        self.max_queued = max(self.max_queued, other.max_queued)
        return self

    def summary(self) -> str:
        """One line for ``kplex read --stats``.

        >>> ReadStats(records_read=3, per_vp=Counter({0: 2}), late_dropped=1).summary()
        '2 records out of 3 read; late: 1 dropped, 0 to the side topic'
        """
        queued = f"; at most {self.max_queued} records queued for one FIFO" if self.max_queued else ""
        return (f"{self.records_out} records out of {self.records_read} read; late: "
                f"{self.late_dropped} dropped, {self.late_to_side_topic} to the side topic{queued}")


@dataclass(frozen=True)
class TableInfo:
    """What a read resolved for a table: not another model of its definition (that is
    :class:`kplex.definitions.TableDefinition`, the one model), but what reading it takes:
    where the records are, which kind of read, the key and order a read-time table evaluates,
    and the lateness settings after a read's own overrides.

    ``kind`` is ``"derived"`` (kplex-written), ``"read_time"`` (a read-time table) or ``"topic"``;
    ``topic`` is where the records are (a read-time table's source: one topic, or several
    separated by commas, see :attr:`topics`).
    """

    name: str
    topic: str
    kind: str
    virtual_partitions: int
    physical_partitions: int
    key: str | None = None
    order: str | None = None
    max_delay_ms: int = 0
    late_policy: str = "fail"
    late_topic: str | None = None
    null_key: str = "fail"
    null_order: str = "fail"
    properties: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_definition(cls, definition: TableDefinition) -> TableInfo:
        """From the definition stored in ``_kplex_tables`` (:mod:`kplex.definitions`).

        >>> from kplex.definitions import parse_definition
        >>> TableInfo.from_definition(parse_definition(b'{"format": "kplex-table", "version": 1,'
        ...     b' "name": "t", "topic": "src", "virtual_partitions": 4, "physical_partitions": 2,'
        ...     b' "properties": {"kplex.source": "src"}}')).kind
        'read_time'
        """
        props = dict(definition.properties)
        read_time = settings.SOURCE in props
        if definition.virtual_partitions is None or definition.virtual_partitions < 1:
            raise kplex_error("DEFINITION_FORMAT.NO_VIRTUAL_PARTITIONS", table=definition.name)
        source = props.get(settings.SOURCE) or definition.source
        return cls(
            name=definition.name,
            topic=", ".join(source_topics(source)) if read_time and source else definition.topic,
            kind="read_time" if read_time else "derived",
            virtual_partitions=definition.virtual_partitions,
            physical_partitions=definition.physical_partitions or 0,
            key=props.get(settings.KEY, settings.read_time_default(settings.KEY) if read_time else None),
            order=props.get(settings.ORDER, settings.read_time_default(settings.ORDER) if read_time else None),
            max_delay_ms=int(str(settings.value(props, settings.MAX_DELAY_MS))),
            late_policy=str(settings.value(props, settings.LATE_POLICY)),
            late_topic=props.get(settings.LATE_TOPIC),
            null_key=definition.null_key,
            null_order=definition.null_order,
            properties=props,
        )

    @property
    def topics(self) -> tuple[str, ...]:
        """The topics read, in ``kplex.source`` order (one but for a read-time table of several).

        >>> TableInfo("t", "clicks, views", "read_time", 4, 5).topics
        ('clicks', 'views')
        """
        return source_topics(self.topic)
