"""``kplex.late_policy`` for the reader outside Spark: what happens to a record of a
read-time table that comes later than ``kplex.max_delay_ms`` allows.

``fail`` raises :class:`~kplex.errors.LateRecordError` naming the record, ``drop``
counts it in :class:`~kplex.tableinfo.ReadStats`, ``side_topic`` sends it to
``kplex.late_topic`` (created with one partition if missing, as Spark does) as it
was, plus the headers ``kplex.vp``, ``kplex.order``, ``kplex.source_topic``, ``kplex.source_partition`` and
``kplex.source_offset``.

>>> late = LateRecords("localhost:9092", info, {}, stats)  # doctest: +SKIP
>>> late.handle(msg, vp=3, order=1565606197468, partition_max=1565606230000)  # doctest: +SKIP
>>> late.flush(); late.close()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any, Mapping

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from kplex.errors import kplex_error
from kplex.kafka.clients import QUIET
from kplex.placement import ORDER_HEADER, SOURCE_OFFSET_HEADER, SOURCE_PARTITION_HEADER, SOURCE_TOPIC_HEADER, VP_HEADER
from kplex.tableinfo import ReadStats, TableInfo

# The headers kplex writes: a source record's own so named are left out, as kplex sets them anew.
KPLEX_HEADERS = frozenset({VP_HEADER, ORDER_HEADER, SOURCE_TOPIC_HEADER, SOURCE_PARTITION_HEADER, SOURCE_OFFSET_HEADER})

__all__ = ["LateRecords", "ensure_late_topic"]


def ensure_late_topic(bootstrap: str, topic: str, config: Mapping[str, Any], timeout: float = 30.0) -> None:
    """Create the side topic for late records (one partition) if it does not exist, as Spark does."""
    from confluent_kafka.admin import AdminClient, NewTopic

    settings = {"bootstrap.servers": bootstrap, "logger": QUIET}
    settings.update({k: v for k, v in config.items() if k.startswith(("security.", "sasl.", "ssl."))})
    admin = AdminClient(settings)
    if topic in admin.list_topics(timeout=timeout).topics:
        return
    try:
        admin.create_topics([NewTopic(topic, num_partitions=1, replication_factor=-1)])[topic].result(timeout)
    except KafkaException as e:
        if e.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise


class LateRecords:
    """``kplex.late_policy`` for the reader: fail, drop (counted), or send to the side topic."""

    def __init__(self, bootstrap: str, info: TableInfo, config: Mapping[str, Any], stats: ReadStats) -> None:
        self.bootstrap = bootstrap
        self.info = info
        self.config = config
        self.stats = stats
        self.producer: Producer | None = None
        self.errors: list[KafkaError] = []

    def handle(self, msg: Message, vp: int, order: int, partition_max: int | None) -> None:
        policy = self.info.late_policy
        if policy == "drop":
            self.stats.late_dropped += 1
        elif policy == "side_topic":
            self.send(msg, vp, order)
            self.stats.late_to_side_topic += 1
        else:
            behind = None if partition_max is None else partition_max - order
            raise kplex_error("LATE_RECORD.READ", table=self.info.name, topic=msg.topic(), partition=msg.partition(),
                              offset=msg.offset(), order_value=order, max_order_value=partition_max,
                              max_delay_ms=self.info.max_delay_ms,
                              lateness="far" if behind is None or behind < 0 else f"{behind} ms")

    def send(self, msg: Message, vp: int, order: int) -> None:
        """The source record as it was, but for headers named as kplex's, plus kplex.vp,
        kplex.order and where it came from."""
        if self.producer is None:
            ensure_late_topic(self.bootstrap, self.info.late_topic or "", self.config)
            settings = {"bootstrap.servers": self.bootstrap, "enable.idempotence": True,
                        "logger": QUIET}
            settings.update({k: v for k, v in self.config.items() if not k.startswith(("group.", "isolation."))})
            self.producer = Producer(settings)
        headers = [(name, value) for name, value in msg.headers() or () if name not in KPLEX_HEADERS] + [
            (VP_HEADER, str(vp).encode()), (ORDER_HEADER, str(order).encode()),
            (SOURCE_TOPIC_HEADER, (msg.topic() or "").encode()),
            (SOURCE_PARTITION_HEADER, str(msg.partition()).encode()),
            (SOURCE_OFFSET_HEADER, str(msg.offset()).encode())]
        kind, ts = msg.timestamp()
        extra = {"timestamp": ts} if ts >= 0 else {}
        while True:
            try:
                self.producer.produce(self.info.late_topic, key=msg.key(), value=msg.value(),
                                      headers=headers, on_delivery=self._delivered, **extra)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)

    def _delivered(self, err: KafkaError | None, _msg: Message) -> None:
        if err is not None:
            self.errors.append(err)

    def flush(self) -> None:
        if self.producer is not None:
            if self.producer.flush(60) or self.errors:
                raise kplex_error("SEND_FAILED.LATE_RECORDS", topic=self.info.late_topic,
                                  cause=self.errors[:1] or "timeout")

    def close(self) -> None:
        if self.producer is not None:
            self.producer.flush(5)
            self.producer = None
