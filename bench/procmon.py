"""Peak memory of a process tree, sampled from /proc (Linux; no psutil needed).

A :class:`TreeMonitor` polls a root process and all its descendants every
``interval`` seconds. It keeps the peak of the tree's summed resident set size
(the memory the contender needed at once) and, per process, the kernel's own
high-water mark ``VmHWM`` (exact even between samples), grouped by role: the
Spark JVM (driver and executors, one JVM in local mode), the ProducerPerformance
JVM, the Python driver, PySpark's Python workers.

>>> with TreeMonitor(proc.pid, watch={"broker": broker_pid}) as mon:  # doctest: +SKIP
...     proc.wait()
>>> mon.peak_tree_mib, mon.peak_by_role  # doctest: +SKIP
(1480.2, {'spark-jvm': 1391.0, 'python': 88.1})
"""
from __future__ import annotations

import os
import threading
from pathlib import Path

__all__ = ["TreeMonitor", "cpu_seconds", "thread_cpu_seconds", "rss_kib", "descendants", "role_of", "loadavg"]

# Roles that no longer change (spark-submit is a shell script that execs the JVM).
_FINAL_ROLES = {"spark-jvm", "perf-jvm", "pyspark-worker", "broker"}


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of ``pid`` in KiB ({} once it is gone)."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                name, value = line.split(":", 1)
                out[name] = int(value.split()[0])
    except (OSError, ValueError):
        return {}
    return out


_TICKS = os.sysconf("SC_CLK_TCK")


def _stat(path: str) -> tuple[str, float] | None:
    """(command name, user + system CPU seconds) of a /proc .../stat file, None once gone."""
    try:
        stat = Path(path).read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return stat[stat.index("(") + 1:stat.rindex(")")], (int(fields[11]) + int(fields[12])) / _TICKS


def cpu_seconds(pid: int) -> float:
    """User + system CPU time ``pid`` has used so far (0 once it is gone)."""
    stat = _stat(f"/proc/{pid}/stat")
    return stat[1] if stat else 0.0


def thread_cpu_seconds(pid: int) -> dict[tuple[int, str], float]:
    """CPU time each live thread of ``pid`` has used so far, by (thread id, thread name)."""
    out: dict[tuple[int, str], float] = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        stat = _stat(f"/proc/{pid}/task/{tid}/stat")
        if stat:
            out[(int(tid), stat[0])] = stat[1]
    return out


def rss_kib(pid: int) -> int:
    """Current resident set size of ``pid`` in KiB (0 once it is gone)."""
    return _status(pid).get("VmRSS", 0)


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: split after the last ')'.
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children = _children_map()
    found, stack = [], [pid]
    while stack:
        p = stack.pop()
        found.append(p)
        stack.extend(children.get(p, []))
    return found


def role_of(pid: int) -> str:
    """A short name for what a process is, from its command line."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    text = b" ".join(argv)
    exe = os.path.basename(argv[0].decode(errors="replace")) if argv and argv[0] else "?"
    if b"SparkSubmit" in text:
        return "spark-jvm"
    if b"ProducerPerformance" in text:
        return "perf-jvm"
    if b"pyspark.daemon" in text or b"pyspark.worker" in text:
        return "pyspark-worker"
    if b"kafka.Kafka" in text:
        return "broker"
    if exe.startswith("python"):
        return "python"
    if exe == "java":
        return "jvm"
    return exe


def loadavg() -> float:
    """The 1-minute load average."""
    try:
        return float(Path("/proc/loadavg").read_text().split()[0])
    except (OSError, ValueError):
        return float("nan")


class TreeMonitor:
    """Samples a process tree (and other watched processes) in a background thread."""

    def __init__(self, root: int, watch: dict[str, int] | None = None, interval: float = 0.2) -> None:
        self.root = root
        self.watch = dict(watch or {})
        self.interval = interval
        self.peak_tree_kib = 0
        self.hwm_kib: dict[int, int] = {}
        self.roles: dict[int, str] = {}
        self.watch_peak_kib: dict[str, int] = {name: 0 for name in self.watch}
        self.load_samples: list[float] = []
        self.cpu_s: dict[int, float] = {}
        self.watch_cpu_start: dict[str, float] = {n: cpu_seconds(p) for n, p in self.watch.items()}
        self.watch_cpu_s: dict[str, float] = {n: 0.0 for n in self.watch}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="tree-monitor")

    def __enter__(self) -> TreeMonitor:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        for name, pid in self.watch.items():  # the watched processes outlive the tree
            self.watch_cpu_s[name] = max(self.watch_cpu_s[name], cpu_seconds(pid) - self.watch_cpu_start[name])

    def sample(self) -> None:
        total = 0
        for pid in descendants(self.root):
            st = _status(pid)
            if not st:
                continue
            total += st.get("VmRSS", 0)
            self.cpu_s[pid] = max(self.cpu_s.get(pid, 0.0), cpu_seconds(pid))
            self.hwm_kib[pid] = max(self.hwm_kib.get(pid, 0), st.get("VmHWM", 0))
            if self.roles.get(pid) not in _FINAL_ROLES:
                self.roles[pid] = role_of(pid)  # a shell or fork may exec into something else
        self.peak_tree_kib = max(self.peak_tree_kib, total)
        for name, pid in self.watch.items():
            self.watch_peak_kib[name] = max(self.watch_peak_kib[name], rss_kib(pid))
            self.watch_cpu_s[name] = max(self.watch_cpu_s[name], cpu_seconds(pid) - self.watch_cpu_start[name])

    def _run(self) -> None:
        ticks = 0
        while not self._stop.is_set():
            self.sample()
            if ticks % 25 == 0:
                self.load_samples.append(loadavg())
            ticks += 1
            self._stop.wait(self.interval)

    @property
    def tree_cpu_s(self) -> float:
        """CPU seconds the tree used (each process as last sampled: a process that
        lived less than one interval may be missed)."""
        return sum(self.cpu_s.values())

    @property
    def peak_tree_mib(self) -> float:
        """Peak of the summed RSS of the whole tree at one moment."""
        return self.peak_tree_kib / 1024

    @property
    def peak_by_role(self) -> dict[str, float]:
        """Per role, the largest single-process high-water mark (MiB), and for
        roles with several processes (PySpark workers) their summed marks."""
        out: dict[str, float] = {}
        for pid, hwm in self.hwm_kib.items():
            role = self.roles.get(pid, "?")
            if role == "pyspark-worker":
                out[role] = out.get(role, 0) + hwm / 1024
            else:
                out[role] = max(out.get(role, 0), hwm / 1024)
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    @property
    def watched_peak_mib(self) -> dict[str, float]:
        return {name: kib / 1024 for name, kib in self.watch_peak_kib.items()}
