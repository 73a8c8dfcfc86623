"""One contender's run: a fresh source with the backlog, the contender's process, the
watcher on its output, the live phase at a fixed rate, and what came out of it.

Timeline (wall clock of this process)::

    started          the contender's process is launched (JVM and session start-up included)
    first visible    the first output records a read_committed consumer sees  -> start-up s
    backlog done     all N backlog records visible   -> sustained: (N - first) / (done - first visible)
                                                        with start-up: N / (done - started)
    live phase       R records/s for D s, each value stamped with its produce time
    live done        every live record visible (or the tail timeout)          -> p50 / p99 latency
    stop             stdin closed, the process exits (killed if it does not)
"""
from __future__ import annotations

import gc
import json
import math
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from contenders import Contender, Settings, Slot
from live_profile import LiveProfile
from watch import OutputWatcher, RateProducer

from kplex.testing.datagen import ensure_topic, generate_pageviews


def say(message: str) -> None:
    print(f"bench-streaming: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Load:
    """The input every contender gets: the backlog and the live phase."""

    records: int
    users: int
    seed: int
    duration_s: float  # the live phase's measured seconds, after ``settle_s``
    drain_timeout_s: float
    tail_timeout_s: float
    backlog_values: Counter[int]  # hash(value) -> count, of the generated backlog
    settle_s: float = 0.0  # live seconds before the measured ones (their latencies kept apart)


@dataclass
class Result:
    """What one contender did; every time in seconds, every latency in ms."""

    contender: Contender
    backlog: int
    backlog_seen: int = 0
    startup_s: float | None = None
    drain_s: float | None = None
    first_backlog: int = 0  # backlog records visible with the first ones
    rate: float = 0.0  # live records/s asked for
    live_produced: int = 0
    live_seen: int = 0
    latencies_ms: list[float] = field(default_factory=list)  # of the measured live records
    settling_latencies_ms: list[float] = field(default_factory=list)  # of the live records before them
    missing: int = 0
    extra: int = 0
    order_checked: int = 0
    order_violations: int = 0
    order_examples: list[str] = field(default_factory=list)
    exit_code: int | None = None
    died_early: bool = False
    started_at: float | None = None  # when the process was launched
    live_started_at: float | None = None
    measured_from: float | None = None  # the live phase's start plus its settling seconds
    progress: list[dict[str, Any]] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)  # start-up step -> when it ended (epoch s)
    problems: list[str] = field(default_factory=list)  # each one fails the run
    notes: list[str] = field(default_factory=list)  # worth knowing, not a failure
    live_cpu: list[tuple[str, float, float]] = field(default_factory=list)  # --profile-live: kind, CPU s, share
    log: Path | None = None

    @property
    def sustained(self) -> float | None:
        """The running contender's rate: the backlog records made visible after its first
        commit, per second from that commit to the last backlog record (start-up excluded)."""
        if self.drain_s is None or self.startup_s is None or self.drain_s <= self.startup_s:
            return None
        return (self.backlog - self.first_backlog) / (self.drain_s - self.startup_s)

    @property
    def with_startup(self) -> float | None:
        """Backlog records per second from launching the process (start-up included)."""
        return self.backlog / self.drain_s if self.drain_s else None

    def percentile(self, q: float) -> float | None:
        """Nearest-rank percentile of the measured live records' latencies."""
        return _percentile(self.latencies_ms, q)

    def settling_percentile(self, q: float) -> float | None:
        """The same of the live records produced while the stream settled (``--settle``)."""
        return _percentile(self.settling_latencies_ms, q)

    @property
    def ok(self) -> bool:
        """It ran until stopped, wrote every record (once, if it claims exactly once) and,
        if it claims order, kept each virtual partition in order."""
        return (not self.died_early and not self.problems and self.missing == 0
                and (self.extra == 0 or not self.contender.exactly_once)
                and (self.order_violations == 0 or not self.contender.keeps_order)
                and (self.order_checked > 0 or not self.contender.keeps_order))


def _percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile, None of nothing."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered), max(1, math.ceil(q / 100 * len(ordered)))) - 1]


class Process:
    """A contender's process: stdin kept open until :meth:`stop`, output to a log file,
    in its own process group so that a stuck one goes with its children."""

    def __init__(self, command: list[str], log: Path, env: dict[str, str]) -> None:
        self.log = log
        with log.open("wb") as out:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT,
                                         env=env, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, grace_s: float = 90.0) -> int:
        """Close stdin (the contender's cue to stop), then SIGTERM, then SIGKILL its group."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass
        for sig, wait in ((None, grace_s), (signal.SIGTERM, 15.0), (signal.SIGKILL, 15.0)):
            if sig is not None:
                say(f"  process {self.proc.pid} did not stop: sending {sig.name} to its group")
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    pass
            try:
                return self.proc.wait(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        return self.proc.wait()


def wait_until(done: Callable[[], bool], process: Process, timeout_s: float) -> bool:
    """Poll ``done`` until true, the process exits, or ``timeout_s``; returns ``done()``."""
    deadline = time.monotonic() + timeout_s
    while not done() and process.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    return done()


def prepare_slot(contender: Contender, settings: Settings, load: Load, run_id: str) -> Slot:
    """Fresh topics and a directory for one contender; the source holds the backlog."""
    slot = Slot(source=f"pageviews_{contender.slug}_{run_id}", target=f"by_user_{contender.slug}_{run_id}",
                directory=settings.workdir / contender.slug)
    slot.directory.mkdir(parents=True, exist_ok=True)
    say(f"{contender.name}: writing the {load.records:,}-record backlog to {slot.source}")
    # With empty partitions the source has p + e partitions and only the first p get records.
    written = settings.p if settings.empty_partitions else None
    generate_pageviews(settings.bootstrap, slot.source, load.records, partitions=settings.p + settings.empty_partitions,
                       users=load.users, seed=load.seed, write_partitions=written)
    if not contender.creates_target:
        ensure_topic(settings.bootstrap, slot.target, settings.p)
    return slot


def run_contender(contender: Contender, settings: Settings, load: Load, run_id: str,
                  rate_for: Callable[[Result], float]) -> Result:
    """Run one contender through both phases; ``rate_for`` picks the live rate once the
    backlog is drained (it may depend on this very result)."""
    # What earlier contenders left (their latencies, millions of objects with --repeat) is kept
    # out of the garbage collector's full passes, which would otherwise slow this process's
    # watcher and producer more with every contender run.
    gc.freeze()
    slot = prepare_slot(contender, settings, load, run_id)
    result = Result(contender, backlog=load.records, log=slot.log)
    watcher = OutputWatcher(settings.bootstrap, slot.target, load.records)
    watcher.start()
    env = dict(os.environ, KPLEX_PYTHON=str(settings.kplex_python), PYTHONUNBUFFERED="1")
    say(f"{contender.name}: starting (log {slot.log})")
    result.started_at = time.time()
    process = Process(contender.command(settings, slot), slot.log, env)
    producer: RateProducer | None = None
    try:
        if wait_until(lambda: watcher.snapshot()[0] >= load.records, process, load.drain_timeout_s):
            result.rate = rate_for(_drain_figures(result, watcher))
            producer = live_phase(settings, slot, load, result, watcher, process)
        else:
            result.problems.append(_why_not(process, "backlog", watcher.snapshot()[0], load.records,
                                            load.drain_timeout_s))
        result.died_early = not process.alive()
    finally:
        result.exit_code = process.stop()
        watcher.stop()
    collect(result, watcher, producer, load, slot)
    if result.exit_code and not result.died_early:
        result.notes.append(f"exit code {result.exit_code} after it was asked to stop (see its log)")
    say(f"{contender.name}: done, exit code {result.exit_code}")
    return result


def _drain_figures(result: Result, watcher: OutputWatcher) -> Result:
    """Start-up and drain times, counted from the process's launch."""
    assert result.started_at is not None
    with watcher.lock:
        obs = watcher.observed
        result.startup_s = obs.first_at - result.started_at if obs.first_at is not None else None
        result.first_backlog = obs.first_backlog
        result.drain_s = obs.backlog_done_at - result.started_at if obs.backlog_done_at is not None else None
    return result


def live_phase(settings: Settings, slot: Slot, load: Load, result: Result, watcher: OutputWatcher,
               process: Process) -> RateProducer | None:
    """Produce at ``result.rate`` for the load's settling and measured seconds, then wait for
    the last record. Latencies count the records produced in the measured seconds; the
    profiler (``--profile-live``) samples those seconds only."""
    if load.duration_s <= 0 or result.rate <= 0:
        return None
    settling = f", the first {load.settle_s:.0f} s to settle" if load.settle_s > 0 else ""
    say(f"  backlog drained in {result.drain_s:.1f} s; live phase: {result.rate:,.0f} records/s"
        f" for {load.settle_s + load.duration_s:.0f} s{settling}")
    producer = RateProducer(settings.bootstrap, slot.source, result.rate, load.settle_s + load.duration_s,
                            users=load.users, write_partitions=settings.p if settings.empty_partitions else None)
    profile = LiveProfile(process.proc.pid, slot.directory / "live.collapsed") if settings.profile_live else None
    result.live_started_at = time.time()
    result.measured_from = result.live_started_at + load.settle_s
    watcher.measure_from_ms = result.measured_from * 1000.0
    producer.start()
    profiling = False
    while producer.is_alive() and process.alive():
        if profile is not None and not profiling and time.time() >= result.measured_from:
            profile.start()
            profiling = True
        producer.join(timeout=0.5)
    if profile is not None and profiling:
        result.live_cpu = (profile.stop() if process.alive() else None) or []
        if profile.problem is not None:
            result.notes.append(profile.problem)
    if producer.error is not None:
        result.problems.append(f"the live producer failed: {producer.error}")
        return producer
    if not wait_until(lambda: watcher.snapshot()[1] >= producer.produced, process, load.tail_timeout_s):
        result.problems.append(_why_not(process, "live", watcher.snapshot()[1], producer.produced,
                                        load.tail_timeout_s))
    return producer


def _why_not(process: Process, what: str, seen: int, expected: int, timeout_s: float) -> str:
    if not process.alive():
        return f"the process exited (code {process.proc.returncode}) with {seen:,} of {expected:,} {what} records visible"
    return f"{seen:,} of {expected:,} {what} records visible after {timeout_s:.0f} s"


def collect(result: Result, watcher: OutputWatcher, producer: RateProducer | None, load: Load, slot: Slot) -> None:
    """Counts, the multiset comparison, order and latencies, from the watcher and producer."""
    _drain_figures(result, watcher)
    if watcher.error is not None:
        result.problems.append(f"the output watcher failed: {watcher.error}")
    expected = Counter(load.backlog_values)
    if producer is not None:
        expected.update(producer.values)
        result.live_produced = producer.produced
    with watcher.lock:
        obs = watcher.observed
        result.backlog_seen, result.live_seen = obs.backlog, obs.live
        result.latencies_ms = list(obs.latencies_ms)
        result.settling_latencies_ms = list(obs.settling_latencies_ms)
        result.missing = sum((expected - obs.values).values())
        result.extra = sum((obs.values - expected).values())
        result.order_checked, result.order_violations = obs.order_checked, obs.order_violations
        result.order_examples = list(obs.order_examples)
    if result.contender.reports_progress and slot.progress.is_file():
        result.progress = [json.loads(line) for line in slot.progress.read_text().splitlines() if line.strip()]
    if result.contender.reports_progress and slot.phases.is_file():
        result.phases = json.loads(slot.phases.read_text())
