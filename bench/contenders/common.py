"""What the contender scripts share: arguments, the Spark session, the result line.

A contender prints exactly one line ``BENCH_RESULT {json}`` on stdout, with at
least ``job_s`` (seconds of the job itself, without process or session start-up)
and ``records`` (records it wrote, as far as it knows).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

# bench/run.py points KPLEX_PYTHON at a snapshot of python/ (package and jars) taken
# when the run starts, so that a rebuild in the work tree cannot change a run midway;
# without it, the installed kplex (pip install -e python) is used.
if os.environ.get("KPLEX_PYTHON"):
    sys.path.insert(0, os.environ["KPLEX_PYTHON"])

RESULT_PREFIX = "BENCH_RESULT "
# kplex's producer defaults beyond acks/idempotence (KafkaConf.producer()): the ceiling and
# the tuned Spark sink run with them too, to separate the engine from the tuning.
KPLEX_PRODUCER = {"linger.ms": "10", "batch.size": str(256 * 1024), "buffer.memory": str(64 << 20),
                  "compression.type": "lz4"}


def positive(text: str) -> int:
    """An argparse type: a whole number of 1 or more (rounds, records, processes)."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a positive number")
    return value


def emit(result: dict[str, Any]) -> None:
    """Print the result line that bench/run.py looks for."""
    print(RESULT_PREFIX + json.dumps(result), flush=True)


def parse_result(output: str) -> dict[str, Any] | None:
    """The last result line of a contender's output, or None."""
    for line in reversed(output.splitlines()):
        if line.startswith(RESULT_PREFIX):
            return json.loads(line[len(RESULT_PREFIX):])
    return None


def arguments(description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--source", required=True, help="source topic")
    parser.add_argument("--target", required=True, help="output topic (a fresh one)")
    parser.add_argument("--records", type=int, required=True, help="records in the source")
    parser.add_argument("--v", type=int, default=9, help="virtual partitions")
    parser.add_argument("--p", type=int, default=3, help="physical partitions of the output")
    parser.add_argument("--memory", default="1g", help="spark.driver.memory (local mode: driver = executors)")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--workdir", type=Path, default=Path("."), help="event logs, JFR files")
    parser.add_argument("--jfr", type=Path, help="record the Spark JVM with Java Flight Recorder into this file")
    parser.add_argument("--jfr-settings", default="profile",
                        help="the recording's settings: a JDK settings name or a .jfc file (with --jfr)")
    parser.add_argument("--extra-jars", default="", help="comma-separated jars for spark.jars")
    return parser


def spark_conf(args: argparse.Namespace, name: str) -> dict[str, str]:
    """The Spark settings every Spark contender runs with (only the job differs)."""
    eventlog = (args.workdir / f"eventlog-{name}").resolve()
    eventlog.mkdir(parents=True, exist_ok=True)
    conf = {
        "spark.driver.memory": args.memory,
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": eventlog.as_uri(),
        "spark.eventLog.compress": "false",
        "spark.eventLog.logStageExecutorMetrics": "true",
        "spark.executor.metrics.pollingInterval": "1s",
        "spark.log.level": "WARN",
        "spark.ui.showConsoleProgress": "false",
    }
    if args.extra_jars:
        conf["spark.jars"] = args.extra_jars
    if args.jfr:
        conf["spark.driver.extraJavaOptions"] = (
            f"-XX:+FlightRecorder -XX:StartFlightRecording=settings={args.jfr_settings},"
            f"dumponexit=true,filename={args.jfr.resolve()}")
    return conf


def spark_metrics(eventlog_dir: str, since_epoch: float = 0.0) -> dict[str, Any]:
    """Spill and memory figures summed over the tasks of the event log(s) in a dir that
    were launched at or after ``since_epoch`` (the heap peak is the whole session's)."""
    spilled_disk = spilled_mem = peak_exec = 0
    heap_peak = 0
    tasks = 0
    for path in sorted(Path(eventlog_dir.removeprefix("file:")).rglob("*")):
        if path.is_dir():
            continue
        with path.open() as f:
            for line in f:
                if '"SparkListenerTaskEnd"' in line:
                    event = json.loads(line)
                    if (event.get("Task Info") or {}).get("Launch Time", 0) < since_epoch * 1000:
                        continue
                    m = event.get("Task Metrics") or {}
                    tasks += 1
                    spilled_disk += m.get("Disk Bytes Spilled", 0)
                    spilled_mem += m.get("Memory Bytes Spilled", 0)
                    peak_exec = max(peak_exec, m.get("Peak Execution Memory", 0))
                elif '"Executor Metrics"' in line:
                    metrics = json.loads(line).get("Executor Metrics") or {}
                    heap_peak = max(heap_peak, metrics.get("JVMHeapMemory", 0))
    return {
        "tasks": tasks,
        "spill_disk_mib": spilled_disk / 2**20,
        "spill_memory_mib": spilled_mem / 2**20,
        "peak_execution_memory_mib": peak_exec / 2**20,
        "jvm_heap_peak_mib": heap_peak / 2**20,
    }


class Timer:
    """``with Timer() as t: ...``; then ``t.seconds``."""

    def __enter__(self) -> "Timer":
        self.started = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.started
