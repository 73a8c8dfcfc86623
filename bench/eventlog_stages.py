"""Where a streaming query's micro-batches spend their time, from Spark's event log: per
micro-batch job, its map stage and its write stage (duration, tasks, the slowest task's run
time, CPU of all tasks), and the time between two jobs (the driver's planning, checkpoint
writes and the sink's commit). Prints a table of medians over the live batches.

    PYSPARK_SUBMIT_ARGS='--conf spark.eventLog.enabled=true --conf spark.eventLog.compress=false
      --conf spark.eventLog.dir=file:///tmp/events pyspark-shell'
      python bench/streaming/run.py --only kplex_eo --records 200000 --rate 20000 --duration 30
    python bench/eventlog_stages.py /tmp/events/*/events_1_*

The live batches are the last two thirds of the jobs that have two stages (the backlog's come
first). Reads the plain JSON lines of an uncompressed event log.

``--stages`` is for a batch INSERT, whose stages adaptive execution runs as jobs of their own:
every stage, when it ran (from the first task's launch) and each task's run time and, in
brackets, its CPU time (what it waited for a core, the collector or a lock is the difference), slowest last:

    python bench/contenders/kplex_insert.py --bootstrap B --source S --target T --records 3000000 \
        --workdir /tmp/w
    python bench/eventlog_stages.py --stages /tmp/w/eventlog-kplex-T/*/events_1_*
"""
from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path


def jobs(lines: list[str]) -> list[dict[str, float]]:
    """One row per job of two or more stages, in order."""
    started, ended, stages, tasks = {}, {}, {}, {}
    for line in lines:
        e = json.loads(line)
        kind = e["Event"]
        if kind == "SparkListenerJobStart":
            started[e["Job ID"]] = (e["Submission Time"], e["Stage IDs"])
        elif kind == "SparkListenerJobEnd":
            ended[e["Job ID"]] = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            stages[e["Stage Info"]["Stage ID"]] = e["Stage Info"]
        elif kind == "SparkListenerTaskEnd":
            tasks.setdefault(e["Stage ID"], []).append(e.get("Task Metrics") or {})
    rows, last_end = [], None
    for job in sorted(started):
        start, ids = started[job]
        ran = sorted(s for s in ids if "Submission Time" in stages.get(s, {}))
        if job not in ended:
            continue
        if len(ran) >= 2:
            row = {"job ms": ended[job] - start, "between jobs ms": start - last_end if last_end else None}
            for name, stage in (("map", ran[0]), ("write", ran[-1])):
                info, metrics = stages[stage], tasks.get(stage, [])
                row[f"{name} stage ms"] = info["Completion Time"] - info["Submission Time"]
                row[f"{name} tasks"] = len(metrics)
                row[f"{name} slowest task ms"] = max((m.get("Executor Run Time", 0) for m in metrics), default=0)
                row[f"{name} task CPU ms"] = sum(m.get("Executor CPU Time", 0) for m in metrics) / 1e6
            rows.append(row)
        last_end = ended[job]
    return rows


def stage_tasks(lines: list[str]) -> list[dict[str, object]]:
    """One row per stage that ran tasks, in the order they began: its tasks' first launch and
    last finish in seconds from the first task of the log, and their run and CPU times (ms),
    sorted by run time."""
    tasks: dict[int, list[tuple[int, int, int, int]]] = {}
    for line in lines:
        e = json.loads(line)
        if e["Event"] == "SparkListenerTaskEnd":
            info, metrics = e["Task Info"], e.get("Task Metrics") or {}
            tasks.setdefault(e["Stage ID"], []).append(
                (info["Launch Time"], info["Finish Time"], metrics.get("Executor Run Time", 0),
                 round(metrics.get("Executor CPU Time", 0) / 1e6)))
    if not tasks:
        return []
    origin = min(t[0] for ts in tasks.values() for t in ts)
    rows = []
    for stage, ts in tasks.items():
        ts = sorted(ts, key=lambda t: (t[2], t[3]))
        rows.append({"stage": stage, "tasks": len(ts), "from s": (min(t[0] for t in ts) - origin) / 1000,
                     "to s": (max(t[1] for t in ts) - origin) / 1000, "run ms": [t[2] for t in ts],
                     "cpu ms": [t[3] for t in ts]})
    return sorted(rows, key=lambda r: r["from s"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("event_log", type=Path)
    p.add_argument("--stages", action="store_true", help="every stage and its tasks (a batch job)")
    args = p.parse_args(argv)
    if args.stages:
        rows = stage_tasks(args.event_log.read_text().splitlines())
        print("| stage | tasks | from s | to s | task run ms (CPU ms) |\n| ---: | ---: | ---: | ---: | --- |")
        for r in rows:
            print(f"| {r['stage']} | {r['tasks']} | {r['from s']:.2f} | {r['to s']:.2f} | "
                  f"{', '.join(f'{ms:,} ({cpu:,})' for ms, cpu in zip(r['run ms'], r['cpu ms']))} |")
        return 0 if rows else 1
    rows = jobs(args.event_log.read_text().splitlines())
    live = rows[len(rows) // 3:]
    if not live:
        print("no micro-batch job of two stages in", args.event_log)
        return 1
    print(f"| {len(live)} live micro-batch jobs | median |\n| --- | ---: |")
    for key in live[0]:
        values = [r[key] for r in live if r.get(key) is not None]
        if values:
            print(f"| {key} | {statistics.median(values):,.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
