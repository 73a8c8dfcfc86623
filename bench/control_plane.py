"""The control plane's cost as its history grows (issue #34): `python bench/control_plane.py`.

kplex keeps table definitions, writer claims, epoch marks and pending commits in the compacted
topic `_kplex_commits`. A commit reads it several times (the claim, the epoch marks, the pending
record). Before, every read opened a consumer and read the whole log, so a commit's cost grew with
the history of every table on the cluster. Now each JVM keeps a view of the log that reads only what
was appended since its last read (`kafka/LogView`).

The benchmark times a 100-record exactly-once `INSERT` into a fresh table, on one local broker:
- at the start (a few hundred control records in the log);
- then fills the log as a big deployment would (`--history` epoch marks of 500 other tables,
  V = 16 each, distinct keys, so compaction cannot shrink them);
- and times the same `INSERT` again: the first in a fresh driver JVM (the view reads the history
  once), then the next ones in that JVM.

Each mode runs in its own driver JVM, in the same run, on the same log: `view` (kplex now) and
`full scan` (`-Dkplex.controlPlane.fullScan=true`: every read reads the whole log, as before).
The table (median of `--inserts` timed INSERTs per row) goes to stdout and to
`bench/RESULTS-control-plane.md`. Compare modes as ratios: absolute times swing between runs.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "python"))

from kplex.testing import datagen  # noqa: E402
from kplex.testing.local_kafka import LocalKafka  # noqa: E402

MODES = {"view": "false", "full scan": "true"}

# One driver JVM: times INSERTs, prints their seconds as JSON on its last line.
TIMED = """
import json, sys, time, uuid
from kplex.session import kplex_session
bootstrap, source, full_scan, inserts = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
spark = kplex_session(bootstrap, master="local[2]", app_name="kplex-control-plane",
                      conf={"spark.driver.extraJavaOptions": f"-Dkplex.controlPlane.fullScan={full_scan}",
                            "spark.sql.shuffle.partitions": "2"})
seconds = []
for i in range(inserts):
    table = "cp_" + uuid.uuid4().hex[:10]
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '16',"
              " 'kplex.physical_partitions' = '2')")
    started = time.perf_counter()
    spark.sql(f"INSERT INTO kplex.{table} SELECT kplex_key(kplex_json(value, '/userid')),"
              f" kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value FROM kplex.{source}")
    seconds.append(time.perf_counter() - started)
spark.stop()
print(json.dumps(seconds))
"""


def timed_inserts(bootstrap: str, source: str, full_scan: str, inserts: int) -> list[float]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    done = subprocess.run([sys.executable, "-c", TIMED, bootstrap, source, full_scan, str(inserts)],
                          capture_output=True, text=True, timeout=3600, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the timed INSERTs failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def fill(bootstrap: str, records: int, tables: int = 500, vps: int = 16) -> int:
    """Epoch marks of `tables` other tables' streaming queries, each key distinct; returns bytes sent."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.num.messages": 10_000,
                         "queue.buffering.max.messages": 1_000_000})
    sent = 0
    for i in range(records):
        table = f"bench_other_{i % tables}"
        query = f"q{i // tables}"
        mark = {"table": table, "query": query, "epoch": i // tables,
                "highs": {str(p): 1_700_000_000_000 + i for p in range(4)},
                "written": {str(vp): 1_700_000_000_000 + i for vp in range(vps)}, "held": []}
        key, value = f"epoch/{table}/{query}".encode(), json.dumps(mark, separators=(",", ":")).encode()
        sent += len(key) + len(value)
        while True:
            try:
                producer.produce("_kplex_commits", key=key, value=value, partition=0)
                break
            except BufferError:
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(120) == 0
    return sent


def log_end(bootstrap: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kplex-bench-" + uuid.uuid4().hex})
    try:
        return consumer.get_watermark_offsets(TopicPartition("_kplex_commits", 0), timeout=30)[1]
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--history", type=int, default=300_000, help="control records added (default 300,000)")
    parser.add_argument("--inserts", type=int, default=3, help="timed INSERTs per row (default 3)")
    parser.add_argument("--out", default=str(HERE / "RESULTS-control-plane.md"))
    args = parser.parse_args(argv)
    command = "python bench/control_plane.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    started = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    def run(bootstrap: str) -> str:
        source = "cp_src_" + uuid.uuid4().hex[:8]
        datagen.generate_pageviews(bootstrap, source, 100, partitions=2, users=9, seed=3)
        # At the start too, the first INSERT of each driver (a cold JVM) is left out of the median.
        start = {mode: timed_inserts(bootstrap, source, flag, args.inserts + 1)[1:] for mode, flag in MODES.items()}
        before = log_end(bootstrap)
        t0 = time.perf_counter()
        sent = fill(bootstrap, args.history)
        filled_s = time.perf_counter() - t0
        after = log_end(bootstrap)
        end = {mode: timed_inserts(bootstrap, source, flag, args.inserts + 1) for mode, flag in MODES.items()}
        rows = []
        for mode in MODES:
            s, e = statistics.median(start[mode]), end[mode]
            warm = statistics.median(e[1:])
            rows.append((mode, s, e[0], warm, warm / s))
        lines = [
            "# The control plane's cost as its history grows",
            "",
            f"`{command.strip()}`, {started}; one local broker, `local[2]`, a 100-record exactly-once INSERT into"
            " a fresh table (V = 16, P = 2), median of the timed INSERTs of a row (each driver's first INSERT, in a"
            " cold JVM, apart).",
            f"`_kplex_commits` held {before:,} records at the start and {after:,} at the end ({sent / 1e6:.0f} MB"
            f" of epoch marks of 500 other tables added in {filled_s:.0f} s).",
            "",
            "| mode | start (s) | end, first in a new driver (s) | end, next ones (s) | end / start |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += [f"| {m} | {s:.2f} | {cold:.2f} | {warm:.2f} | {ratio:.2f}x |" for m, s, cold, warm, ratio in rows]
        view, full = rows[0], rows[1]
        lines += ["", f"At the end, a commit in a running driver takes {full[3] / view[3]:.1f}x as long with full"
                  f" scans as with the view; the view's end / start ratio is {view[4]:.2f}x (target: within 1.2x)."
                  " The first INSERT of a new driver still reads the history once."]
        return "\n".join(lines) + "\n"

    bootstrap = os.environ.get("KPLEX_BOOTSTRAP")
    if bootstrap:
        print("note: KPLEX_BOOTSTRAP's broker already holds other records in _kplex_commits", file=sys.stderr)
        document = run(bootstrap)
    else:
        with tempfile.TemporaryDirectory(prefix="kplex-cp-bench-") as work, \
                LocalKafka(brokers=1, workdir=Path(work) / "broker") as cluster:
            document = run(cluster.bootstrap)
    Path(args.out).write_text(document)
    print(document)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
