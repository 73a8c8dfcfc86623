"""Helpers of the read tests (tests/test_read_*.py): make sources, collect sequences.

A *sequence* is what a virtual partition must reproduce: ``{vp: [(key, value, order), ...]}``
in the order read.
"""
from __future__ import annotations

import json
import random
from collections import defaultdict
from typing import Iterable

from confluent_kafka import Producer

from kplex.reader import KplexRecord
from kplex.testing import datagen, verify

USERID = """get_json_object(CAST(value AS STRING), "$.userid")"""
VIEWTIME = """CAST(get_json_object(CAST(value AS STRING), "$.viewtime") AS BIGINT)"""
INSERT = """INSERT INTO kplex.{target}
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')),
       kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)),
       value
FROM kplex.{source}"""

Sequences = dict[int, list[tuple[bytes | None, bytes | None, int | None]]]


def create_virtual(spark, name: str, source: str, v: int, key: str = USERID, order: str = VIEWTIME,
                   **props: str) -> None:
    extra = "".join(f", 'kplex.{k}' = '{val}'" for k, val in props.items())
    spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.source' = '{source}',"
              f" 'kplex.virtual_partitions' = '{v}', 'kplex.key' = '{key}', 'kplex.order' = '{order}'{extra})")


def create_materialized(spark, name: str, source: str, v: int, p: int) -> None:
    spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '{v}',"
              f" 'kplex.physical_partitions' = '{p}')")
    spark.sql(INSERT.format(target=name, source=source))


def spark_sequences(rows: Iterable) -> Sequences:
    seqs: Sequences = defaultdict(list)
    for r in rows:
        seqs[r.vpartition].append((bytes(r.key), bytes(r.value), r.order_value))
    return dict(seqs)


def python_sequences(records: Iterable[KplexRecord]) -> Sequences:
    seqs: Sequences = defaultdict(list)
    for r in records:
        seqs[r.vp].append((r.key, r.value, r.order))
    return dict(seqs)


def consumer_sequences(bootstrap: str, topic: str) -> Sequences:
    """Per virtual partition from the headers, in offset order, through a plain consumer."""
    seqs: Sequences = defaultdict(list)
    for r in verify.read_topic(bootstrap, topic):  # sorted by partition, then offset
        seqs[int(r.headers["kplex.vp"])].append((r.key, r.value, int(r.headers["kplex.order"])))
    return dict(seqs)


def described_high_marks(bootstrap: str, table: str, virtual_partitions: int) -> dict[int, str]:
    """Per virtual partition the highest ``kplex.order`` header, read by a plain consumer, as
    ``DESCRIBE TABLE EXTENDED`` shows it (``none``: nothing written)."""
    highs: dict[int, int] = {}
    for r in verify.read_topic(bootstrap, table):
        vp = int(r.headers["kplex.vp"])
        highs[vp] = max(highs.get(vp, -2**63), int(r.headers["kplex.order"]))
    return {vp: str(highs[vp]) if vp in highs else "none" for vp in range(virtual_partitions)}


def pageviews(bootstrap: str, topic: str, records: int = 600, out_of_order_ms: int = 0) -> None:
    datagen.generate_pageviews(bootstrap, topic, records, partitions=3, users=12, seed=7,
                               out_of_order_ms=out_of_order_ms, non_ascii=True)


def produce(bootstrap: str, topic: str, partitions: dict[int, list[dict]], timestamps: bool = False) -> None:
    """Create ``topic`` and write each partition's JSON records to it, in the given order
    (with ``timestamps``, each record's Kafka timestamp is its ``_time``; a record's
    ``headers``, if given, are its Kafka headers, not part of its value)."""
    datagen.ensure_topic(bootstrap, topic, max(partitions) + 1)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for p, records in sorted(partitions.items()):
        for rec in records:
            extra = {"timestamp": rec["_time"]} if timestamps else {}
            if "headers" in rec:
                extra["headers"] = rec["headers"]
            value = {k: v for k, v in rec.items() if k != "headers"}
            producer.produce(topic, value=json.dumps(value).encode(), key=str(rec["userid"]).encode(),
                             partition=p, **extra)
    assert producer.flush(30) == 0


def clickstream(partitions: int, records: int, max_lag_ms: int, seed: int = 3) -> dict[int, list[dict]]:
    """Like consistent_read.toml's clickstream: one rising clock spread over partitions at
    random; each record lags the clock by up to ``max_lag_ms`` (so on its partition it is
    at most that much behind an earlier record)."""
    rng = random.Random(seed)
    clock = 1_565_780_158_477
    out: dict[int, list[dict]] = {p: [] for p in range(partitions)}
    for i in range(records):
        clock += rng.randint(0, 300)
        out[rng.randrange(partitions)].append(
            {"_time": clock - rng.randint(0, max_lag_ms), "userid": rng.randint(1, 20), "n": i})
    return out
