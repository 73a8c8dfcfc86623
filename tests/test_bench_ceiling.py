"""bench/contenders/ceiling.py --kplex-records: the producer ceiling that sends kplex's records
(KplexRecordsCeiling.java) writes what a kplex exactly-once writer writes (docs/contract.md, wire
format), so that kplex's rate over it is what the engine costs and nothing else. Read back with a
plain read_committed consumer."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from confluent_kafka import Consumer, TopicPartition

from kplex.placement import physical_partition, virtual_partition
from kplex.testing.datagen import ensure_topic
from kplex.testing.local_kafka import kafka_libs

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path[:0] = [str(BENCH), str(BENCH / "contenders")]

from common import parse_result  # noqa: E402
from source import make_source  # noqa: E402

V, P, RECORDS = 7, 3, 3_000


def read_committed(bootstrap: str, topic: str, expected: int) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{topic}", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, p) for p in range(P)])
    records: list = []
    try:
        for _ in range(60):
            records += [m for m in consumer.consume(1000, timeout=1.0) if m.error() is None]
            if len(records) >= expected:
                break
        records += [m for m in consumer.consume(1000, timeout=1.0) if m.error() is None]  # nothing more
    finally:
        consumer.close()
    return records


def test_the_kplex_records_ceiling_sends_kplex_records(bootstrap: str, fresh_name, tmp_path: Path) -> None:
    source, target = fresh_name("ceiling_src"), fresh_name("ceiling_out")
    make_source(bootstrap, source, 500, partitions=P, users=50)
    ensure_topic(bootstrap, target, P)  # as bench/runner.py does for every contender but kplex's
    run = subprocess.run(
        [sys.executable, str(BENCH / "contenders" / "ceiling.py"), "--bootstrap", bootstrap, "--source", source,
         "--target", target, "--records", str(RECORDS), "--v", str(V), "--p", str(P), "--kplex-records",
         "--kafka-libs", str(kafka_libs()), "--workdir", str(tmp_path)],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert parse_result(run.stdout)["records"] == RECORDS

    records = read_committed(bootstrap, target, RECORDS)
    assert len(records) == RECORDS
    for m in records:
        pageview = json.loads(m.value())
        headers = dict(m.headers())
        assert m.key() == pageview["userid"].encode()
        vp = virtual_partition(m.key(), V)
        assert headers == {"kplex.vp": str(vp).encode(), "kplex.order": str(pageview["viewtime"]).encode()}
        assert m.partition() == physical_partition(vp, P)
    assert len({m.key() for m in records}) > V  # the payloads' many users, not one record repeated
