"""A micro-batch's cost as held records grow (issue #33): `python bench/streaming/held_growth.py`.

A stream holds back every record the watermark has not passed. When one source partition holds
the watermark for long (strict waiting, `idleTimeoutMs = -1`, and a partition with no record),
everything read from the others is held, and held state grows batch after batch. Each writer
task keeps its held records in files of the checkpoint, sorted; a micro-batch reads of them only
what it releases and writes only its own new held records, merging files so that they grow
geometrically (`StreamingDataWriter.absorbedFrom`): a held record is rewritten a logarithmic
number of times, not in every micro-batch. So a micro-batch's time should follow what it reads,
not what is held.

The benchmark, on one local broker (or `KPLEX_BOOTSTRAP`), each mode in its own driver JVM of
`--memory` heap, in the same run:
- produces `--records` pageviews to partition 0 of a 2-partition topic (partition 1 stays empty);
- streams them into a kplex table in one `Trigger.AvailableNow` run of `--step` offsets per
  micro-batch, with `idleTimeoutMs = -1` and no cap (`kplex.max_held_records = -1`): every record
  is held, so held records grow by `--step` each micro-batch;
- then releases everything (a second run with `releaseAtEnd`) and checks, with a plain
  read_committed consumer, that every record was written once, each virtual partition in order.
The modes: `in place` (kplex now) and `rewrite all` (`-Dkplex.held.rewriteAll=true`: every held
record read and written again in every micro-batch, as kplex did before). It prints, per mode, the
median batch time of the first and the last quarter of the micro-batches and their ratio (the
target: `in place` within 1.5x), and every micro-batch's figures.

The table goes to stdout and to `bench/streaming/RESULTS-held-growth.md`.
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
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "python"))

from kplex.streaming import recent_progress  # noqa: E402
from kplex.testing import datagen, verify  # noqa: E402
from kplex.testing.local_kafka import LocalKafka  # noqa: E402

ALL_MODES = ["in place", "rewrite all"]

SELECT = ("kplex_key(kplex_json(value, '/userid')) AS key",
          "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)) AS order_value",
          "value")


def stream(spark, source: str, target: str, checkpoint: Path, step: int, release: bool) -> list:
    """One Trigger.AvailableNow run; its progress, one entry per micro-batch."""
    reader = (spark.readStream.format("kplex").option("table", source).option("startingOffsets", "earliest")
              .option("maxOffsetsPerTrigger", str(step)).option("idleTimeoutMs", "-1"))
    if release:
        reader = reader.option("releaseAtEnd", "true")
    query = (reader.load().selectExpr(*SELECT).writeStream.format("kplex").option("table", target)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination()
    if query.exception() is not None:
        raise SystemExit(f"the stream failed: {query.exception()}")
    return recent_progress(query)


def figures(progress: list) -> list[dict]:
    """Per micro-batch that read records: held at its start, rows read, its times."""
    rows, held_before = [], 0
    for p in progress:
        metrics = p.sink.metrics or {}
        if "heldRecords" not in metrics:
            continue
        read = int(p.numInputRows)
        if read:
            rows.append({"batch": p.batchId, "held_before": held_before, "read": read,
                         "batch_ms": int(p.durationMs["triggerExecution"]),
                         "held_read_ms": int(metrics.get("taskHeldReadMs", 0)),
                         "task_write_ms": int(metrics.get("taskWriteMs", 0)),
                         "task_commit_ms": int(metrics.get("taskCommitMs", 0)),
                         "held_after": int(metrics["heldRecords"])})
        held_before = int(metrics["heldRecords"])
    return rows


def child(args: argparse.Namespace) -> int:
    """One mode in this driver JVM: stream, hold everything, release; print the figures as JSON."""
    from kplex.session import kplex_session

    rewrite_all = "true" if args.mode == "rewrite all" else "false"
    spark = kplex_session(args.bootstrap, master="local[2]", app_name="kplex-held-growth",
                          conf={"spark.driver.memory": args.memory, "spark.sql.shuffle.partitions": "2",
                                "spark.driver.extraJavaOptions": f"-Dkplex.held.rewriteAll={rewrite_all}",
                                "spark.kplex.max_held_records": "-1",
                                "spark.sql.streaming.numRecentProgressUpdates": "1000"})
    try:
        spark.sql(f"CREATE TABLE kplex.{args.target} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
                  " 'kplex.physical_partitions' = '3', 'kplex.max_delay_ms' = '1000')")
        rows = figures(stream(spark, args.source, args.target, args.checkpoint, args.step, release=False))
        written_while_held = len(verify.read_topic(args.bootstrap, args.target))
        started = time.perf_counter()
        stream(spark, args.source, args.target, args.checkpoint, args.step, release=True)
        release_s = time.perf_counter() - started
    finally:
        spark.stop()
    print(json.dumps({"rows": rows, "written_while_held": written_while_held, "release_s": release_s}))
    return 0


def table(rows: list[dict]) -> str:
    lines = ["| micro-batch | held at its start | records read | batch ms | task held-read ms | task send ms"
             " | task commit ms |", "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['batch']} | {r['held_before']:,} | {r['read']:,} | {r['batch_ms']:,} |"
                     f" {r['held_read_ms']:,} | {r['task_write_ms']:,} | {r['task_commit_ms']:,} |")
    return "\n".join(lines)


def quarter_medians(rows: list[dict]) -> tuple[float, float, str]:
    """The first and the last quarter's median batch ms (the first micro-batch, which warms the JVM, left
    out), and the held records they start from."""
    steady = rows[1:]
    n = max(1, len(steady) // 4)
    first, last = steady[:n], steady[-n:]
    held = f"{first[0]['held_before']:,}-{first[-1]['held_before']:,} / {last[0]['held_before']:,}-{last[-1]['held_before']:,}"
    return statistics.median(r["batch_ms"] for r in first), statistics.median(r["batch_ms"] for r in last), held


def measure(bootstrap: str, args: argparse.Namespace, work: Path) -> dict:
    """Each mode in its own driver JVM, on the same source, into its own table."""
    stamp = str(int(time.time()))
    source = "held_src_" + stamp
    datagen.generate_pageviews(bootstrap, source, args.records, partitions=2, users=args.users, write_partitions=1)
    results = {}
    for i, mode in enumerate(args.modes):
        target = f"held_out_{stamp}_{i}"
        command = [sys.executable, __file__, "--child", "--mode", mode, "--bootstrap", bootstrap, "--source", source,
                   "--target", target, "--checkpoint", str(work / f"chk{i}"), "--step", str(args.step),
                   "--memory", args.memory]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{mode}: the driver failed:\n{done.stderr[-3000:]}")
        result = json.loads(done.stdout.strip().splitlines()[-1])
        report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
        held = result["rows"][-1]["held_after"] if result["rows"] else 0
        result["once"] = (report.ok and report.derived_count == args.records and held == args.records
                          and result["written_while_held"] == 0)
        result["derived"] = report.derived_count
        result["violations"] = str(report.violations)[:300]
        results[mode] = result
    return results


def document(results: dict, args: argparse.Namespace, command: str) -> str:
    lines = ["# Per-batch time as held records grow", "",
             f"`{command}`, {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC: {args.records:,} records on"
             f" partition 0 of a 2-partition topic whose partition 1 is empty, strict waiting (`idleTimeoutMs = -1`),"
             f" so every record is held; {args.step:,} offsets per micro-batch, driver heap {args.memory}, local[2],"
             " 2 shuffle partitions, `max_delay_ms` 1000, V = 9. Each mode in its own driver JVM, one after the"
             " other, in the same run: `in place` (kplex now: held files stay in place, read only as far as"
             " released, merged geometrically) and `rewrite all` (`-Dkplex.held.rewriteAll=true`: every held"
             " record read and written again in every micro-batch, as before).", "",
             "| mode | median batch ms, first quarter | last quarter | last / first | held at start (first / last"
             " quarter) | release of all (s) | read back (plain read_committed consumer) |",
             "|---|---:|---:|---:|---|---:|---|"]
    ratios = {}
    for mode, r in results.items():
        first, last, held = quarter_medians(r["rows"])
        ratios[mode] = last
        check = ("every record once, every virtual partition in order" if r["once"]
                 else f"FAILED ({r['derived']:,} records; {r['violations']})")
        lines.append(f"| {mode} | {first:,.0f} | {last:,.0f} | {last / max(1.0, first):.2f}x | {held} |"
                     f" {r['release_s']:.1f} | {r['derived']:,}: {check} |")
    if len(ratios) == 2:
        lines += ["", f"In the last quarter, a micro-batch takes {ratios['rewrite all'] / max(1.0, ratios['in place']):.1f}x"
                  " as long when everything held is rewritten as with the files in place. Target: `in place`'s"
                  " last / first within 1.5x."]
    for mode, r in results.items():
        lines += ["", f"Per micro-batch, `{mode}` (the slowest writer task's times):", "", table(r["rows"])]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000, help="records produced (default 2,000,000)")
    parser.add_argument("--step", type=int, default=50_000, help="maxOffsetsPerTrigger (default 50,000)")
    parser.add_argument("--users", type=int, default=1000, help="distinct keys")
    parser.add_argument("--memory", default="1g", help="spark.driver.memory (default 1g)")
    parser.add_argument("--modes", default=",".join(ALL_MODES), help="comma-separated: " + ", ".join(ALL_MODES))
    parser.add_argument("--out", default=str(HERE / "RESULTS-held-growth.md"))
    for internal in ("--mode", "--bootstrap", "--source", "--target", "--checkpoint"):
        parser.add_argument(internal, help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        args.checkpoint = Path(args.checkpoint)
        return child(args)
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    command = "python bench/streaming/held_growth.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    with tempfile.TemporaryDirectory(prefix="kplex-held-") as work:
        if os.environ.get("KPLEX_BOOTSTRAP"):
            results = measure(os.environ["KPLEX_BOOTSTRAP"], args, Path(work))
        else:
            with LocalKafka(brokers=1, workdir=Path(work) / "broker") as cluster:
                results = measure(cluster.bootstrap, args, Path(work))
    text = document(results, args, command.strip())
    Path(args.out).write_text(text)
    print(text)
    return 0 if all(r["once"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
