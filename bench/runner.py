"""Running one case: the contender's own process, what it used (peak memory of its
process tree and of the broker, CPU time, Spark's spill) and the checks of its output
(bench/check.py), as one :class:`Row`.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import check
import procmon
import source as sourcegen
from cases import Contender
from common import parse_result
from confluent_kafka.admin import AdminClient
from prepare import BENCH, say

from kplex.class_archive import ENV as ARCHIVE_ENV
from kplex.class_archive import turned_off
from kplex.testing.datagen import ensure_topic

MIB = 2**20


@dataclass
class Row:
    size: int
    name: str
    v: int | None
    delivery: str
    ok_run: bool
    job_s: float = float("nan")
    wall_s: float = float("nan")
    records_per_s: float = float("nan")
    mib_per_s: float = float("nan")
    peak_tree_mib: float = float("nan")
    peak_by_role: dict[str, float] = field(default_factory=dict)
    broker_peak_mib: float = float("nan")
    load: float = float("nan")
    cpu_s: float = float("nan")
    broker_cpu_s: float = float("nan")
    spill_disk_mib: float | None = None
    jvm_heap_peak_mib: float | None = None
    check_method: str = ""
    violations: dict[str, int] = field(default_factory=dict)
    claims: tuple[str, ...] = ()
    checked: bool = True
    examples: list[str] = field(default_factory=list)
    log: str = ""
    result: dict[str, Any] = field(default_factory=dict)
    runs: list[float] = field(default_factory=list)  # records/s of every repeat (--repeat)
    spark: str = ""  # the pyspark version it ran on (--spark); "": bench/run.py's own

    @property
    def label(self) -> str:
        """The contender column: the name, and the Spark line when the run chose lines."""
        return self.name + (f", Spark {self.spark}" if self.spark else "")

    @property
    def records_per_cpu_s(self) -> float:
        """Records per CPU second of the whole run, the contender's processes plus the broker."""
        return self.size / (self.cpu_s + self.broker_cpu_s) if self.ok_run else float("nan")

    @property
    def passed(self) -> bool:
        if not self.ok_run:
            return False
        if not self.checked:
            return self.violations.get("count", 0) == 0
        return all(self.violations.get(g, 0) == 0 for g in self.claims)


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path, bootstrap: str, broker: int | None,
                 python_path: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.bootstrap = bootstrap
        self.broker = broker
        self.env = {**os.environ, "KPLEX_PYTHON": str(python_path), "PYTHONUNBUFFERED": "1"}
        # The JVM class archives of this run's sessions (kplex.class_archive), in its work dir, unless
        # the caller chose (KPLEX_CLASS_ARCHIVE=off measures without one): see Bench.write_class_archives.
        self.env.setdefault(ARCHIVE_ENV, str(workdir / "class-archives"))
        self.admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})

    def settle(self, quiet_share: float = 0.1, longest_s: float = 60.0) -> None:
        """Wait until the broker is idle (below quiet_share of a core for a second), so
        that one contender's run does not pay for the last one's log flushes."""
        if not self.broker:
            return
        deadline = time.monotonic() + longest_s
        while time.monotonic() < deadline:
            try:
                before = procmon.cpu_seconds(self.broker)
                time.sleep(1.0)
                if procmon.cpu_seconds(self.broker) - before < quiet_share:
                    return
            except (OSError, ValueError):
                return
        say(f"the broker was still busy after {longest_s:.0f} s; running anyway")

    def run_one(self, c: Contender, size: int, src: sourcegen.Source,
                fingerprint: check.SourceFingerprint | None) -> Row:
        self.settle()
        target = f"out_{size}_{c.script.split('.')[0]}_{uuid.uuid4().hex[:8]}"
        if not c.kplex_table:
            ensure_topic(self.bootstrap, target, self.args.partitions)
        command = [c.python or sys.executable, str(BENCH / "contenders" / c.script), "--bootstrap", self.bootstrap,
                   "--source", src.topic, "--target", target, "--records", str(size),
                   "--p", str(self.args.partitions), "--v", str(c.v or self.args.reference_v),
                   "--memory", self.args.memory, "--workdir", str(self.workdir), *c.args]
        log = self.workdir / f"{target}.log"
        label = c.label
        say(f"{size:,} records: {label} -> {target}")
        row = Row(size, c.name, c.v, c.delivery, ok_run=False, claims=c.claims, checked=c.checked, log=str(log),
                  spark=c.spark)
        started = time.perf_counter()
        with log.open("w") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=self.env, cwd=self.workdir)
            watch = {"broker": self.broker} if self.broker else {}
            with procmon.TreeMonitor(proc.pid, watch=watch) as mon:
                try:
                    proc.wait(timeout=self.args.timeout)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        row.wall_s = time.perf_counter() - started
        row.peak_tree_mib = mon.peak_tree_mib
        row.peak_by_role = {k: round(v) for k, v in mon.peak_by_role.items() if v >= 5}
        row.broker_peak_mib = mon.watched_peak_mib.get("broker", float("nan"))
        row.cpu_s = mon.tree_cpu_s
        row.broker_cpu_s = mon.watch_cpu_s.get("broker", float("nan"))
        row.load = sum(mon.load_samples) / len(mon.load_samples) if mon.load_samples else procmon.loadavg()
        result = parse_result(log.read_text(errors="replace"))
        if proc.returncode != 0 or result is None:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-25:])
            say(f"{label} FAILED (exit {proc.returncode}); last lines of {log}:\n{tail}")
            row.examples = [f"exit {proc.returncode}, see {log}"]
            self.drop(target)
            return row
        row.ok_run = True
        row.result = result
        row.job_s = result["job_s"]
        row.records_per_s = size / row.job_s
        row.mib_per_s = size * src.mean_value_bytes / row.job_s / MIB
        row.spill_disk_mib = result.get("spill_disk_mib")
        row.jvm_heap_peak_mib = result.get("jvm_heap_peak_mib")
        if c.verify == "none":
            pass
        elif c.checked:
            fp = fingerprint or check.SourceFingerprint(src.topic, size, 0)
            res = check.check_output(self.bootstrap, fp, target, c.v or self.args.reference_v,
                                     self.args.partitions, full_up_to=self.args.full_check_up_to)
            row.check_method = res.method
            row.violations = {g: int(res.violations.get(g, 0)) for g in check.GUARANTEES}
            row.examples = res.examples[:5]
        else:
            written, partitions = sourcegen.topic_count(self.bootstrap, target)
            # Offsets: records, and one commit marker per partition of a single transaction.
            expected = size + (partitions if c.committed_once else 0)
            row.check_method = "count"
            row.violations = {"count": int(written != expected)}
            if written != expected:
                row.examples = [f"{written} offsets written, not {expected}"]
        say(f"  {row.records_per_s:,.0f} rec/s, job {row.job_s:.1f} s, wall {row.wall_s:.1f} s, "
            f"CPU {row.cpu_s:.0f}+{row.broker_cpu_s:.0f} s, peak {row.peak_tree_mib:.0f} MiB, load {row.load:.1f}, "
            f"{'PASS' if row.passed else 'FAIL'} {row.violations}")
        if not self.args.keep_topics:
            self.drop(target)
        return row

    @property
    def class_archives(self) -> bool:
        return not turned_off(self.env[ARCHIVE_ENV])

    def write_class_archives(self, chosen: list[Contender], src: sourcegen.Source) -> list[str]:
        """Run the first kplex contender of each Spark line once, untimed, on ``src`` (a small
        source), as a machine's first kplex session: its JVM writes the class archive that
        every later session of that line maps. Returns the lines it was written for."""
        if not self.class_archives:
            return []
        done: dict[str, bool] = {}
        for c in chosen:
            if c.kplex_table and c.python not in done:
                say(f"writing the JVM class archive{f' of Spark {c.spark}' if c.spark else ''} (untimed)")
                done[c.python] = self.run_one(c, src.records, src, None).ok_run
        return [line for line, ok in done.items() if ok]

    def drop(self, topic: str) -> None:
        try:
            for future in self.admin.delete_topics([topic], operation_timeout=30).values():
                future.result(timeout=60)
        except Exception as e:  # noqa: BLE001 - a leftover topic only costs disk
            say(f"could not delete {topic}: {e}")


def round_order(chosen: list, repeat: int) -> list[tuple[int, object]]:
    """The contenders of round ``repeat`` (from 0), with their indexes: as listed, and every
    other round in reverse.

    >>> round_order(["a", "b", "c"], 0), round_order(["a", "b", "c"], 1)
    ([(0, 'a'), (1, 'b'), (2, 'c')], [(2, 'c'), (1, 'b'), (0, 'a')])
    """
    listed = list(enumerate(chosen))
    return listed if repeat % 2 == 0 else listed[::-1]
