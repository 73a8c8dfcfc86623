"""CPU seconds per thread group of the JVMs on this machine (the Spark JVM, the Kafka
broker) during a contender's job: runs the command, samples every JVM thread's CPU time
from /proc every 0.5 s meanwhile, and reports the span between the job_start_epoch and
job_end_epoch of the result line the contender prints.

    python bench/thread_cpu.py python bench/contenders/kplex_insert.py --bootstrap B \\
        --source S --target T --records N --v 9
"""
from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import procmon  # next to this script

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "contenders"))  # common.py, shared with the contender scripts

from common import parse_result  # noqa: E402

JVM_ROLES = {"spark-jvm", "broker", "perf-jvm", "jvm"}
# Thread name prefixes (numbers stripped) and the group each counts in.
GROUPS = [("Executor task", "task"), ("kafka-producer", "producer-io"), ("GC Thread", "gc"), ("G1", "gc"),
          ("C2 Compiler", "jit"), ("C1 Compiler", "jit"), ("shuffle", "shuffle"), ("data-plane", "b-net"),
          ("kafka-request", "b-handler"), ("kafka-network", "b-net")]
Sample = tuple[float, dict[tuple[int, int], tuple[str, str, float]]]  # (time, (pid, tid) -> (role, group, cpu s))


def group(thread: str) -> str:
    name = re.sub(r"[#\-]?\d+$", "", thread.strip())
    return next((g for prefix, g in GROUPS if name.startswith(prefix)), name)


def sample() -> Sample:
    threads = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        pid = int(entry.name)
        role = procmon.role_of(pid)
        if role in JVM_ROLES:
            for (tid, name), cpu in procmon.thread_cpu_seconds(pid).items():
                threads[(pid, tid)] = (role, group(name), cpu)
    return time.time(), threads


def span(samples: list[Sample], start: float, end: float) -> collections.Counter[tuple[str, str]]:
    """CPU seconds by (role, group) from the last sample before ``start`` to the first after
    ``end``; a thread that started in between counts from zero."""
    first = max((s for s in samples if s[0] <= start), key=lambda s: s[0], default=samples[0])
    last = min((s for s in samples if s[0] >= end), key=lambda s: s[0], default=samples[-1])
    used: collections.Counter[tuple[str, str]] = collections.Counter()
    seen = dict(first[1])
    for at, threads in samples:
        if first[0] < at <= last[0]:
            for key, (role, grp, cpu) in threads.items():
                used[(role, grp)] += cpu - seen.get(key, (role, grp, 0.0))[2]
                seen[key] = (role, grp, cpu)
    return used


def main() -> int:
    proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True)
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(proc.stdout))
    reader.start()
    samples: list[Sample] = []
    while proc.poll() is None:
        samples.append(sample())
        time.sleep(0.5)
    reader.join()
    result = parse_result("".join(output))
    if not result or not samples:
        print("".join(output[-20:]))
        return 1
    job = result["job_s"]
    used = span(samples, result["job_start_epoch"], result["job_end_epoch"])
    print(f"job {job:.1f}s  {result['records'] / job:,.0f} rec/s  spill {result.get('spill_disk_mib', 0):.0f} MiB")
    for (role, grp), cpu in used.most_common(14):
        print(f"  {role:9s} {grp:22s} {cpu:6.1f} cpu-s  {cpu / job:4.2f} cores")
    total = sum(used.values())
    print(f"  total {total:.1f} cpu-s = {total / job:.2f} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
