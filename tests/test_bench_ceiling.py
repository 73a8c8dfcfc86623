"""bench/contenders/ceiling.py --kplex-records: the producer ceiling that sends kplex's records
(KplexRecordsCeiling.java) writes what a kplex exactly-once writer writes (docs/contract.md, wire
format), so that kplex's rate over it is what the engine costs and nothing else. Read back with a
plain read_committed consumer."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kplex.placement import physical_partition, virtual_partition
from kplex.testing.datagen import ensure_topic
from kplex.testing.local_kafka import kafka_libs
from kplex.testing.verify import read_topic

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path[:0] = [str(BENCH), str(BENCH / "contenders")]

from common import parse_result  # noqa: E402
from source import make_source  # noqa: E402

V, P, RECORDS = 7, 3, 3_000


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

    records = read_topic(bootstrap, target)  # read_committed
    assert len(records) == RECORDS
    for r in records:
        pageview = json.loads(r.value)
        assert r.key == pageview["userid"].encode()
        vp = virtual_partition(r.key, V)
        assert r.headers == {"kplex.vp": str(vp).encode(), "kplex.order": str(pageview["viewtime"]).encode()}
        assert r.partition == physical_partition(vp, P)
    assert len({r.key for r in records}) > V  # the payloads' many users, not one record repeated
