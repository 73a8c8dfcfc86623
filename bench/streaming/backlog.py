"""A multi-million-record backlog drained under the defaults (issue #33): `python bench/streaming/backlog.py`.

A stream that starts on a large backlog must drain it without `[KPLEX_COMMIT_EXPIRED]`: a
micro-batch holds its transactions open until its commit, and a transaction older than
`transaction.timeout.ms` is aborted by the broker. Without `maxOffsetsPerTrigger`, kplex's source
sizes each micro-batch to a quarter of the commit's time budget at the pace of the last one
(`KplexMicroBatchStream.getDefaultReadLimit`), so any backlog drains in micro-batches that each
commit in time, even with a short timeout.

The benchmark, on one local broker (or `KPLEX_BOOTSTRAP`): produces `--records` pageviews to a
3-partition topic, streams them into a kplex table in one `Trigger.AvailableNow` run with the
default read limit, `releaseAtEnd`, and `kafka.transaction.timeout.ms` = `--transaction-timeout-ms`
on the catalog (so the read sizes its micro-batches by it, as docs/streaming.md says to set it),
then checks with a plain read_committed consumer that every record was written once, each virtual
partition in order. It prints the micro-batches' sizes and times; the table goes to stdout and to
`bench/streaming/RESULTS-backlog.md`.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import shlex
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "python"))

from kplex.streaming import recent_progress  # noqa: E402
from kplex.testing import datagen, verify  # noqa: E402
from kplex.testing.local_kafka import LocalKafka  # noqa: E402

SELECT = ("kplex_key(kplex_json(value, '/userid')) AS key",
          "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)) AS order_value",
          "value")


def run(bootstrap: str, args: argparse.Namespace, command: str, work: Path) -> tuple[str, bool]:
    from kplex.session import kplex_session

    stamp = str(int(time.time()))
    source, target = "backlog_src_" + stamp, "backlog_out_" + stamp
    started = time.perf_counter()
    datagen.generate_pageviews(bootstrap, source, args.records, partitions=3, users=args.users)
    produced_s = time.perf_counter() - started
    spark = kplex_session(bootstrap, master="local[2]", app_name="kplex-backlog",
                          conf={"spark.driver.memory": args.memory, "spark.sql.shuffle.partitions": "3",
                                "spark.sql.streaming.numRecentProgressUpdates": "10000",
                                # On the catalog, so that the read sizes its batches by it too (docs/streaming.md).
                                "spark.sql.catalog.kplex.kafka.transaction.timeout.ms":
                                    str(args.transaction_timeout_ms)})
    try:
        spark.sql(f"CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
                  " 'kplex.physical_partitions' = '3', 'kplex.max_delay_ms' = '1000')")
        started = time.perf_counter()
        query = (spark.readStream.format("kplex").option("table", source).option("startingOffsets", "earliest")
                 .option("releaseAtEnd", "true").load().selectExpr(*SELECT)
                 .writeStream.format("kplex").option("table", target)
                 .option("checkpointLocation", str(work / "chk")).trigger(availableNow=True).start())
        query.awaitTermination()
        drained_s = time.perf_counter() - started
        failure = query.exception()
        progress = recent_progress(query)
    finally:
        spark.stop()
    batches = [p for p in progress if int(p.numInputRows) > 0]
    rows = [int(p.numInputRows) for p in batches]
    ms = [int(p.durationMs["triggerExecution"]) for p in batches]
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3, timeout=600)
    ok = failure is None and report.ok and report.derived_count == args.records
    lines = ["# A backlog drained under the defaults", "",
             f"`{command}`, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC: {args.records:,} records on a"
             f" 3-partition topic (produced in {produced_s:.0f} s), one `Trigger.AvailableNow` run with the default"
             f" read limit and `releaseAtEnd`, `kafka.transaction.timeout.ms` = {args.transaction_timeout_ms:,}"
             " on the catalog,"
             f" driver heap {args.memory}, local[2].", "",
             "| micro-batches | records a batch (first / largest / median) | batch ms (largest) | drained in (s)"
             " | records/s | failure | read back (plain read_committed consumer) |",
             "|---:|---|---:|---:|---:|---|---|",
             f"| {len(batches)} | {rows[0] if rows else 0:,} / {max(rows, default=0):,} /"
             f" {sorted(rows)[len(rows) // 2] if rows else 0:,} | {max(ms, default=0):,} | {drained_s:.0f} |"
             f" {args.records / max(drained_s, 0.001):,.0f} | {'none' if failure is None else str(failure)[:200]} |"
             f" {report.derived_count:,}: {'every record once, every virtual partition in order' if ok else 'FAILED'}"
             " |", ""]
    lines.append("Per micro-batch: " + ", ".join(f"{r:,} rows in {m:,} ms" for r, m in zip(rows, ms)) + ".")
    return "\n".join(lines) + "\n", ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=3_000_000, help="backlog records (default 3,000,000)")
    parser.add_argument("--transaction-timeout-ms", type=int, default=20_000,
                        help="kafka.transaction.timeout.ms of the write (default 20,000)")
    parser.add_argument("--users", type=int, default=1000, help="distinct keys")
    parser.add_argument("--memory", default="2g", help="spark.driver.memory (default 2g)")
    parser.add_argument("--out", default=str(HERE / "RESULTS-backlog.md"))
    args = parser.parse_args(argv)
    command = "python bench/streaming/backlog.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    with tempfile.TemporaryDirectory(prefix="kplex-backlog-") as work:
        if os.environ.get("KPLEX_BOOTSTRAP"):
            text, ok = run(os.environ["KPLEX_BOOTSTRAP"], args, command.strip(), Path(work))
        else:
            with LocalKafka(brokers=1, workdir=Path(work) / "broker") as cluster:
                text, ok = run(cluster.bootstrap, args, command.strip(), Path(work))
    Path(args.out).write_text(text)
    print(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
