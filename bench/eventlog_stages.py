"""Where a streaming query's micro-batches spend their time, from Spark's event log: per
micro-batch job, its map stage and its write stage (duration, tasks, the slowest task's run
time, CPU of all tasks), and the time between two jobs (the driver's planning, checkpoint
writes and the sink's commit). Prints a table of medians over the live batches.

    PYSPARK_SUBMIT_ARGS='--conf spark.eventLog.enabled=true --conf spark.eventLog.compress=false
      --conf spark.eventLog.dir=file:///tmp/events pyspark-shell'
      python bench/streaming/run.py --only kplex_eo --records 200000 --rate 20000 --duration 30
    python bench/eventlog_stages.py /tmp/events

The live batches are the last two thirds of the jobs that have two stages (the backlog's come
first). Reads the plain JSON lines of an uncompressed event log: a file, or a directory holding
one application's log (Spark 4 rolls it into `eventlog_v2_<app>/events_<n>_<app>` files, read
in order) or the `spark.eventLog.dir` of a single run.

``--stages`` is for a batch INSERT, whose stages adaptive execution runs as jobs of their own:
every stage, when it ran (from the first task's launch) and each task's run time and, in
brackets, its CPU time (what it waited for a core, the collector or a lock is the difference), slowest last:

    python bench/contenders/kplex_insert.py --bootstrap B --source S --target T --records 3000000 \
        --workdir /tmp/w
    python bench/eventlog_stages.py --stages /tmp/w/eventlog-kplex-T
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


#: insert_phases's phases, in the order a table shows them.
PHASES = ("before the first job", "map stage", "between the stages", "write stage", "after the last job", "total")


def insert_phases(lines: list[str]) -> dict[str, float] | None:
    """Where a batch INSERT's time went (ms), from its event log: the last SQL execution that ran
    jobs (a session's timed INSERT comes after any untimed one). *before the first job*: planning,
    and for kplex the writer's claim, recovery and the table's state read; *map stage* and *write
    stage*: the first and the last stage that ran tasks, from submission to completion; *between
    the stages*: adaptive execution re-planning the write; *after the last job*: the write's commit
    on the driver. None: no such execution in the log."""
    executions: dict[int, list[int]] = {}
    jobs_of: dict[int, list[int]] = {}
    job_end: dict[int, int] = {}
    stages: dict[int, dict] = {}
    stage_job: dict[int, int] = {}
    for line in lines:
        e = json.loads(line)
        kind = e["Event"]
        if kind.endswith("SQLExecutionStart"):
            executions[e["executionId"]] = [e["time"], 0]
        elif kind.endswith("SQLExecutionEnd") and e["executionId"] in executions:
            executions[e["executionId"]][1] = e["time"]
        elif kind == "SparkListenerJobStart":
            execution = (e.get("Properties") or {}).get("spark.sql.execution.id")
            if execution is not None:
                jobs_of.setdefault(int(execution), []).append(e["Job ID"])
                for stage in e["Stage IDs"]:
                    stage_job[stage] = e["Job ID"]
        elif kind == "SparkListenerJobEnd":
            job_end[e["Job ID"]] = e["Completion Time"]
        elif kind == "SparkListenerStageCompleted":
            stages[e["Stage Info"]["Stage ID"]] = e["Stage Info"]
    ran = [x for x in sorted(executions) if x in jobs_of and executions[x][1]]
    if not ran:
        return None
    execution = ran[-1]
    start, end = executions[execution]
    mine = set(jobs_of[execution])
    ran_stages = sorted((info for sid, info in stages.items() if stage_job.get(sid) in mine
                         and info.get("Submission Time") and info.get("Completion Time")),
                        key=lambda info: info["Submission Time"])
    if not ran_stages:
        return None
    first, last = ran_stages[0], ran_stages[-1]
    return {"total": end - start,
            "before the first job": first["Submission Time"] - start,
            "map stage": first["Completion Time"] - first["Submission Time"],
            "between the stages": max(0, last["Submission Time"] - first["Completion Time"]),
            "write stage": last["Completion Time"] - last["Submission Time"],
            "after the last job": end - max(job_end.get(j, 0) for j in mine)}


def event_lines(path: Path) -> list[str]:
    """The lines of the event log at path: a file; or a directory holding one application's log,
    rolled (every `events_<n>_*` part under it, part by part) or a single file. A directory with
    neither, or with two applications' logs, is an error naming what it found."""
    if not path.is_dir():
        return path.read_text().splitlines()
    parts = sorted(path.rglob("events_[0-9]*_*"), key=lambda f: (f.parent, int(f.name.split("_")[1])))
    apps = sorted({str(f.parent) for f in parts}) or sorted(str(f) for f in path.iterdir() if f.is_file())
    if len(apps) != 1:
        raise SystemExit(f"{path} holds no event log" if not apps else
                         f"event logs of more than one application under {path}: name one of {apps}")
    files = parts or [Path(apps[0])]
    return [line for f in files for line in f.read_text().splitlines()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("event_log", type=Path, help="an event log file, or its directory")
    p.add_argument("--stages", action="store_true", help="every stage and its tasks (a batch job)")
    args = p.parse_args(argv)
    if args.stages:
        rows = stage_tasks(event_lines(args.event_log))
        print("| stage | tasks | from s | to s | task run ms (CPU ms) |\n| ---: | ---: | ---: | ---: | --- |")
        for r in rows:
            print(f"| {r['stage']} | {r['tasks']} | {r['from s']:.2f} | {r['to s']:.2f} | "
                  f"{', '.join(f'{ms:,} ({cpu:,})' for ms, cpu in zip(r['run ms'], r['cpu ms']))} |")
        return 0 if rows else 1
    rows = jobs(event_lines(args.event_log))
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
