"""kplex against what users would pick instead, side by side, in one run.

    python bench/run.py                 # 1M and 10M records: the full table in bench/RESULTS.md
    python bench/run.py --smoke         # 20k records, every contender once: exits 0 when all ran and passed
    python bench/run.py --sizes 1000000 --vs 9,1000 --profile

One command sets everything up: the kplex jars (built with gradle if missing,
then snapshotted so a rebuild elsewhere cannot change a run midway), Spark's
Kafka connector (resolved with Maven into ``.cache/``), a local Kafka broker
(scripts/local_kafka.py) and, per size, one source topic of ~150-byte pageviews
(bench/source.py). Every contender then reads that topic (or, for the ceiling,
writes as many records of the same size) into a fresh topic, in its own process:

==========================  =========================================================
ceiling                     Kafka's ProducerPerformance, kplex's producer settings
spark-sink                  Spark's Kafka source + sink, same rows, partition, headers
                            and per-vp sort as kplex (producer defaults)
spark-sink (kplex conf)     the same with kplex's producer settings (not in --smoke)
python                      a hand-written confluent-kafka consume/re-produce loop
kplex at_least_once, V=..   INSERT INTO ... SELECT, 'kplex.delivery'='at_least_once'
kplex exactly_once, V=..    the same, exactly once (the default)
==========================  =========================================================

Each row gets records/s and MiB/s (value bytes over the job's own time), the
job and wall times, the peak memory of the contender's process tree (sampled
from /proc; the Spark driver JVM is also the executor in local mode) and of the
broker, Spark's spill, and the output's G1-G5 checks (bench/check.py). The
tables and the target ratios go to bench/RESULTS.md, with the machine and how
loaded it was.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import platform
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO / "scripts"))
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "contenders"))

from confluent_kafka.admin import AdminClient  # noqa: E402
from local_kafka import LocalKafka, kafka_libs, kafka_version  # noqa: E402

import check  # noqa: E402
import procmon  # noqa: E402
import jfr_summary  # noqa: E402
import source as sourcegen  # noqa: E402
from common import KPLEX_PRODUCER, parse_result  # noqa: E402

# Spark's Kafka connector jars passed with spark.jars (the rest is in pyspark already).
CONNECTOR_JARS = ("spark-sql-kafka-0-10", "spark-token-provider-kafka-0-10", "commons-pool2", "kafka-clients")
MIB = 2**20
# Targets: (name, numerator, denominator, minimum ratio).
MIN_ALO_VS_SPARK = 1.0
MIN_EOS_VS_ALO = 0.8
MIN_KPLEX_VS_CEILING = 0.5
MIN_V1000_VS_V9 = 0.85
# Spark's own JSON functions, in place of kplex_json in the kplex INSERT (--parse-variants).
PARSE_VARIANTS = ("get_json_object", "json_tuple")


def say(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------ set-up --

def kplex_snapshot(workdir: Path) -> Path:
    """Copy python/kplex (with its jars) into the work dir, building the jars first
    if they are missing; returns the directory to put on PYTHONPATH."""
    jars = REPO / "python" / "kplex" / "jars"
    for _ in range(60):  # a build elsewhere removes and re-copies them: wait it out
        if (jars / "kplex-spark.jar").is_file():
            break
        time.sleep(2)
    else:
        say("kplex-spark.jar is missing: running gradle -q bundleJars")
        subprocess.run(["gradle", "-q", "bundleJars"], cwd=REPO, check=True)
    time.sleep(1)  # let a copy in progress finish
    target = workdir / "pkg"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(REPO / "python" / "kplex", target / "kplex",
                    ignore=shutil.ignore_patterns("__pycache__"))
    if not (target / "kplex" / "jars" / "kplex-spark.jar").is_file():
        raise SystemExit("kplex-spark.jar vanished while it was copied; run again")
    return target


def connector_jars(spark_version: str) -> list[str]:
    """Spark's Kafka connector and its runtime jars, resolved once with Maven."""
    cache = Path(os.environ.get("KPLEX_CACHE") or REPO / ".cache") / f"spark-sql-kafka-{spark_version}"
    marker = cache / ".complete"
    if not marker.is_file():
        say(f"resolving spark-sql-kafka-0-10 {spark_version} into {cache}")
        staging = cache.with_name(cache.name + f".partial-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        run = subprocess.run(
            ["mvn", "-B", "-q", "-Dstyle.color=never", "-s", str(BENCH / "maven-settings.xml"),
             "-f", str(BENCH / "pom.xml"), f"-Dspark.version={spark_version}",
             "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if run.returncode != 0:
            raise SystemExit(f"mvn could not resolve Spark's Kafka connector:\n{run.stdout[-3000:]}")
        (staging / ".complete").write_text(spark_version + "\n")
        shutil.rmtree(cache, ignore_errors=True)
        staging.rename(cache)
    return sorted(str(p) for p in cache.glob("*.jar") if p.name.startswith(CONNECTOR_JARS))


def machine() -> dict[str, str]:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kib = int(Path("/proc/meminfo").read_text().split()[1])
    java = subprocess.run(["java", "-version"], stderr=subprocess.PIPE, text=True).stderr.splitlines()[0]
    import pyspark
    import confluent_kafka
    return {
        "cpu": f"{os.cpu_count()} x {cpu}",
        "memory": f"{mem_kib / 2**20:.0f} GiB",
        "os": f"{platform.system()} {platform.release()}",
        "java": java.replace('"', ""),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "kafka broker": kafka_version(),
        "confluent-kafka": f"{confluent_kafka.version()[0]} (librdkafka {confluent_kafka.libversion()[0]})",
    }


def broker_pid(cluster: LocalKafka) -> int | None:
    procs = getattr(cluster, "_procs", {}) or {}
    for proc in procs.values():
        return proc.pid
    pids = getattr(cluster, "_pids", {}) or {}
    return next(iter(pids.values()), None)


# ------------------------------------------------------------- contenders --

@dataclass
class Contender:
    """One run: which script, with which arguments, and what it promises."""

    name: str
    script: str
    v: int | None = None
    delivery: str = ""
    args: list[str] = field(default_factory=list)
    claims: tuple[str, ...] = ()  # guarantees its output must meet
    kplex_table: bool = False      # the script creates its own topic (CREATE TABLE)
    checked: bool = True           # its output holds the source's records
    verify: str = "yes"            # "none": not checked at all (the profiling run)


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


def contenders(sizes_v: list[int], deliveries: list[str], reference_v: int, smoke: bool,
               extra_jars: str, parse_variants: tuple[str, ...] = (), uncompressed: bool = False,
               warm: bool = False) -> list[Contender]:
    at_least_once = ("G1", "G2", "G4", "G5")  # what the at-least-once writers claim
    claims = {"at_least_once": at_least_once, "exactly_once": ("G1", "G2", "G3", "G4", "G5")}
    out = [
        Contender("ceiling (ProducerPerformance)", "ceiling.py", checked=False),
        Contender("spark-sink", "spark_sink.py", v=reference_v, delivery="at_least_once",
                  args=["--extra-jars", extra_jars], claims=at_least_once),
    ]
    if not smoke:
        out.append(Contender("spark-sink (kplex producer conf)", "spark_sink.py", v=reference_v,
                             delivery="at_least_once",
                             args=["--extra-jars", extra_jars, "--producer-conf", json.dumps(KPLEX_PRODUCER)],
                             claims=at_least_once))
    out.append(Contender("python confluent-kafka", "python_rekey.py", v=reference_v, delivery="at_least_once",
                         claims=("G1", "G4", "G5")))
    for v in sizes_v:
        for delivery in deliveries:
            out.append(Contender(f"kplex {delivery}", "kplex_insert.py", v=v, delivery=delivery,
                                 args=["--delivery", delivery], claims=claims[delivery], kplex_table=True))
    # Variants of the same INSERT at the reference V: (name suffix, extra arguments).
    variants: list[tuple[str, list[str]]] = []
    if uncompressed:
        # kplex's producer default is lz4 (KafkaConf.producer()); this row shows what it saves.
        variants.append(("compression.type=none", ["--producer-conf", json.dumps({"compression.type": "none"})]))
    if warm:
        # The same INSERT as the second statement of a session: shows what the fresh JVM
        # every other row starts in (its JIT compiler's CPU) costs.
        variants.append(("warm session", ["--warm"]))
    variants += [(parse, ["--parse", parse]) for parse in parse_variants]
    for suffix, extra in variants:
        for delivery in deliveries:
            out.append(Contender(f"kplex {delivery} ({suffix})", "kplex_insert.py", v=reference_v,
                                 delivery=delivery, args=["--delivery", delivery, *extra],
                                 claims=claims[delivery], kplex_table=True))
    return out


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path, bootstrap: str, broker: int | None,
                 python_path: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.bootstrap = bootstrap
        self.broker = broker
        self.env = {**os.environ, "KPLEX_PYTHON": str(python_path), "PYTHONUNBUFFERED": "1"}
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
            from kplex.datagen import ensure_topic
            ensure_topic(self.bootstrap, target, self.args.partitions)
        command = [sys.executable, str(BENCH / "contenders" / c.script), "--bootstrap", self.bootstrap,
                   "--source", src.topic, "--target", target, "--records", str(size),
                   "--p", str(self.args.partitions), "--v", str(c.v or self.args.reference_v),
                   "--memory", self.args.memory, "--workdir", str(self.workdir), *c.args]
        log = self.workdir / f"{target}.log"
        label = f"{c.name}" + (f" V={c.v}" if c.v and c.script == "kplex_insert.py" else "")
        say(f"{size:,} records: {label} -> {target}")
        row = Row(size, c.name, c.v, c.delivery, ok_run=False, claims=c.claims, checked=c.checked, log=str(log))
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
            written, _ = sourcegen.topic_count(self.bootstrap, target)
            row.check_method = "count"
            row.violations = {"count": int(written != size)}
            if written != size:
                row.examples = [f"{written} records written, not {size}"]
        say(f"  {row.records_per_s:,.0f} rec/s, job {row.job_s:.1f} s, wall {row.wall_s:.1f} s, "
            f"CPU {row.cpu_s:.0f}+{row.broker_cpu_s:.0f} s, peak {row.peak_tree_mib:.0f} MiB, load {row.load:.1f}, "
            f"{'PASS' if row.passed else 'FAIL'} {row.violations}")
        if not self.args.keep_topics:
            self.drop(target)
        return row

    def drop(self, topic: str) -> None:
        try:
            for future in self.admin.delete_topics([topic], operation_timeout=30).values():
                future.result(timeout=60)
        except Exception as e:  # noqa: BLE001 - a leftover topic only costs disk
            say(f"could not delete {topic}: {e}")


# ---------------------------------------------------------------- tables --

def _num(x: float | None, fmt: str = "{:,.0f}") -> str:
    if x is None or x != x:
        return "–"
    return fmt.format(x)


def _checks(row: Row) -> str:
    if not row.ok_run:
        return "did not finish"
    if not row.checked:
        return "count ok" if row.passed else "count WRONG"
    cells = []
    for g in check.GUARANTEES:
        n = row.violations.get(g, 0)
        if n == 0:
            cells.append(f"{g} ✓")
        elif g in row.claims:
            cells.append(f"**{g} ✗ {n}**")
        else:
            cells.append(f"{g} ✗ {n} (not claimed)")
    return " ".join(cells)


def results_table(rows: list[Row]) -> list[str]:
    lines = [
        "| records | contender | V | records/s | runs: min–max records/s | MiB/s | job s | wall s | CPU s (+ broker) "
        "| peak RSS MiB (tree: per process) | broker RSS MiB | Spark heap peak / spill MiB | load | checks |",
        "| ---: | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        spread = (f"{len(r.runs)}: {min(r.runs):,.0f}–{max(r.runs):,.0f}" if len(r.runs) > 1 else "1")
        roles = ", ".join(f"{k} {v}" for k, v in r.peak_by_role.items())
        spark = "–" if r.jvm_heap_peak_mib is None else f"{r.jvm_heap_peak_mib:,.0f} / {r.spill_disk_mib:,.0f}"
        lines.append(
            f"| {r.size:,} | {r.name} | {r.v or '–'} | {_num(r.records_per_s)} | {spread} | {_num(r.mib_per_s, '{:,.1f}')} "
            f"| {_num(r.job_s, '{:,.1f}')} | {_num(r.wall_s, '{:,.1f}')} "
            f"| {_num(r.cpu_s)} (+ {_num(r.broker_cpu_s)}) | {_num(r.peak_tree_mib)}: {roles} "
            f"| {_num(r.broker_peak_mib)} | {spark} | {_num(r.load, '{:.1f}')} | {_checks(r)} |")
    return lines


def _find(rows: list[Row], size: int, name: str, v: int | None = None) -> Row | None:
    for r in rows:
        if r.size == size and r.name == name and (v is None or r.v == v) and r.ok_run:
            return r
    return None


Ratio = tuple[int, str, "tuple[float, float] | None", "float | None", str]


def ratios(rows: list[Row], reference_v: int) -> list[Ratio]:
    """(size, what, (records/s ratio, records per CPU s ratio), minimum, note) for every
    target the run can judge."""
    out = []
    for size in sorted({r.size for r in rows}):
        alo = _find(rows, size, "kplex at_least_once", reference_v)
        eos = _find(rows, size, "kplex exactly_once", reference_v)
        sink = _find(rows, size, "spark-sink")
        sink_tuned = _find(rows, size, "spark-sink (kplex producer conf)")
        ceiling = _find(rows, size, "ceiling (ProducerPerformance)")

        def ratio(a: Row | None, b: Row | None) -> tuple[float, float] | None:
            if not (a and b):
                return None
            return a.records_per_s / b.records_per_s, a.records_per_cpu_s / b.records_per_cpu_s

        out.append((size, f"kplex at-least-once V={reference_v} / Spark Kafka sink (defaults)",
                    ratio(alo, sink), MIN_ALO_VS_SPARK, ""))
        if sink_tuned:
            out.append((size, f"kplex at-least-once V={reference_v} / Spark Kafka sink (kplex producer conf)",
                        ratio(alo, sink_tuned), MIN_ALO_VS_SPARK, "same producer settings on both sides"))
        for v in sorted({r.v for r in rows if r.size == size and r.name.startswith("kplex") and r.v}):
            out.append((size, f"kplex exactly-once / at-least-once, V={v}",
                        ratio(_find(rows, size, "kplex exactly_once", v), _find(rows, size, "kplex at_least_once", v)),
                        MIN_EOS_VS_ALO, ""))
        out.append((size, f"kplex at-least-once V={reference_v} / ceiling", ratio(alo, ceiling),
                    MIN_KPLEX_VS_CEILING, ""))
        out.append((size, f"kplex exactly-once V={reference_v} / ceiling", ratio(eos, ceiling),
                    MIN_KPLEX_VS_CEILING, ""))
        for delivery, default in (("at_least_once", alo), ("exactly_once", eos)):
            label = f"kplex {delivery.replace('_', '-')} V={reference_v}"
            plain = _find(rows, size, f"kplex {delivery} (compression.type=none)", reference_v)
            if plain and default:
                out.append((size, f"{label}, lz4 (default) / compression.type=none", ratio(default, plain),
                            None, "the producer default, by measurement"))
            warm = _find(rows, size, f"kplex {delivery} (warm session)", reference_v)
            if warm and ceiling:
                # Its CPU s covers both INSERTs of the session: no per-CPU ratio.
                out.append((size, f"{label}, second INSERT of a session / ceiling",
                            (warm.records_per_s / ceiling.records_per_s, None),
                            MIN_KPLEX_VS_CEILING, "the JVM's code compiled already"))
        for parse in PARSE_VARIANTS:
            for delivery in ("at_least_once", "exactly_once"):
                variant = _find(rows, size, f"kplex {delivery} ({parse})", reference_v)
                if variant:
                    out.append((size, f"kplex {delivery.replace('_', '-')} V={reference_v}, JSON read with "
                                f"Spark's {parse} / ceiling", ratio(variant, ceiling), MIN_KPLEX_VS_CEILING,
                                "the same INSERT without kplex_json"))
        for delivery in ("at_least_once", "exactly_once"):
            hi = _find(rows, size, f"kplex {delivery}", 1000)
            lo = _find(rows, size, f"kplex {delivery}", 9)
            if hi and lo:
                out.append((size, f"kplex {delivery.replace('_', '-')} V=1000 / V=9", ratio(hi, lo),
                            MIN_V1000_VS_V9, "within 15%: at least 0.85"))
    return out


def ratio_table(items: list[Ratio]) -> list[str]:
    lines = ["| records | ratio | records/s | met | records per CPU s | met | target |",
             "| ---: | --- | ---: | --- | ---: | --- | --- |"]
    for size, what, value, minimum, note in items:
        cells = []
        for v in value or (None, None):  # a None cell: not measured
            met = "–" if minimum is None else "yes" if v is not None and v >= minimum else "**no**"
            cells += ["–", "–"] if v is None else [f"{v:.2f}×", met]
        target = (f"≥ {minimum:.2f}" if minimum is not None else "no target") + (f" ({note})" if note else "")
        lines.append(f"| {size:,} | {what} | {' | '.join(cells)} | {target} |")
    return lines


def headline(rows: list[Row], reference_v: int, memory: str = "1g") -> list[str]:
    size = max((r.size for r in rows), default=0)
    eos = _find(rows, size, "kplex exactly_once", reference_v)
    alo = _find(rows, size, "kplex at_least_once", reference_v)
    sink = _find(rows, size, "spark-sink")
    ceiling = _find(rows, size, "ceiling (ProducerPerformance)")
    py = _find(rows, size, "python confluent-kafka")
    if not eos:
        return ["(no kplex exactly-once run at the largest size)"]
    parts = [f"Re-keying {size:,} pageviews (~{eos.mib_per_s * MIB * eos.job_s / size:.0f}-byte JSON values) "
             f"into V={reference_v} virtual partitions on one local broker, on {os.cpu_count()} cores: "
             f"kplex writes {eos.records_per_s:,.0f} records/s exactly once"]
    if alo:
        parts.append(f" ({alo.records_per_s:,.0f} at least once)")
    parts.append(f", in a {eos.peak_by_role.get('spark-jvm', eos.peak_tree_mib):,.0f} MiB JVM with "
                 f"spark.driver.memory={memory} (the sort spilled {eos.spill_disk_mib or 0:,.0f} MiB to disk)")
    comparisons = []
    if sink:
        comparisons.append(f"{eos.records_per_s / sink.records_per_s:.2f}× Spark's Kafka sink "
                           f"doing the same sort without exactly once ({sink.records_per_s:,.0f}/s)")
    if py:
        comparisons.append(f"{eos.records_per_s / py.records_per_s:.2f}× a hand-written confluent-kafka "
                           f"loop that keeps no order ({py.records_per_s:,.0f}/s)")
    if ceiling:
        comparisons.append(f"{eos.records_per_s / ceiling.records_per_s:.2f}× Kafka's own producer "
                           f"benchmark ({ceiling.records_per_s:,.0f}/s)")
    if comparisons:
        parts.append(": " + "; ".join(comparisons))
    return ["".join(parts) + "."]


@dataclass
class Meta:
    """What the results file says about the run besides its rows."""

    command: str
    started: str  # ISO, UTC
    finished: str
    info: dict[str, str]
    load_start: float
    load_end: float
    jar_sha: str
    sources: list[dict[str, Any]]
    partitions: int
    users: int
    memory: str
    reference_v: int
    full_check_up_to: int


def write_results(path: Path, rows: list[Row], meta: Meta) -> None:
    """The Markdown tables, and next to them the same as JSON (``--render`` reads it back)."""
    args = meta  # the fields the text below needs have the same names
    started = dt.datetime.fromisoformat(meta.started)
    minutes = (dt.datetime.fromisoformat(meta.finished) - started).total_seconds() / 60
    info, loads, command, jar_sha = meta.info, (meta.load_start, meta.load_end), meta.command, meta.jar_sha
    sources = [sourcegen.Source(**s) for s in meta.sources]
    items = ratios(rows, args.reference_v)
    lines = [
        "# kplex benchmark results",
        "",
        f"Command: `{command}`  ",
        f"Date: {started:%Y-%m-%d %H:%M} UTC, {minutes:.0f} minutes  ",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in info.items()) + "  ",
        f"kplex-spark.jar sha256 {jar_sha[:16]}…  ",
        f"Load average (1 min) at start {loads[0]:.1f}, at end {loads[1]:.1f}; the *load* column is its mean "
        "during each run. The machine is shared: a load above the core count means other work "
        "competed for the CPU during that run, and its numbers are low by about that much.",
        "",
        "Every contender reads the same source topic on the same single local broker "
        f"({args.partitions} partitions, " + ", ".join(
            f"{s.records:,} records of {s.mean_value_bytes:.0f} bytes" for s in sources) + ", lz4, keyed by "
        f"pageid, {args.users:,} users) and writes a fresh {args.partitions}-partition topic keyed by "
        "userid. Spark runs `local[2]` with "
        f"`spark.driver.memory={args.memory}` (driver = executor). records/s and MiB/s count value bytes over "
        "the job's own time (the INSERT or write action; ProducerPerformance's own figure); *wall s* adds "
        "process, JVM and session start-up. Peak RSS is the largest summed resident memory of the contender's "
        "process tree at one moment, then the high-water mark of each process. *CPU s* is the CPU time of the "
        "contender's processes for the whole run (start-up included), plus the broker's during the run: "
        "unlike the times, it hardly depends on how loaded the machine was.",
        "",
        "## Results",
        "",
        *results_table(rows),
        "",
        "## Targets",
        "",
        "Each ratio twice: by records/s (what the targets are stated in; noisy when other work shares the "
        "machine) and by records per CPU second of the whole run, contender plus broker (start-up included, "
        "which weighs on the JVM contenders at small sizes, but hardly moved by the load).",
        "",
        *ratio_table(items),
        "",
        "## Headline",
        "",
        *headline(rows, args.reference_v, args.memory),
        "",
        "## Notes",
        "",
        "- *spark-sink* writes what kplex writes (key, `kplex_vpartition(key, V) % P`, the two headers, each "
        "task sorted by order value, key, value as kplex's are) through Spark's Kafka source and sink; it is at least once, so "
        "G3 is not claimed. *spark-sink (kplex producer conf)* gives it kplex's producer settings "
        f"({', '.join(f'{k}={v}' for k, v in KPLEX_PRODUCER.items())}), to separate the engine from the tuning.",
        "- *python confluent-kafka* promises neither order (G2) nor exactly once (G3): records of one user come "
        "from several source partitions and are produced as they are consumed.",
        "- *kplex* rows run `INSERT INTO kplex.<t> SELECT kplex_key(kplex_json(value, '/userid')), "
        "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value FROM kplex.<source>`; *spark-sink* "
        "reads the JSON the same way. *kplex ... (get_json_object)* and *(json_tuple)* (with `--parse-variants`) "
        "run the same INSERT with Spark's own JSON functions instead, which parse the whole value through a "
        "`java.io.Reader` (get_json_object once per call, so twice per row; json_tuple once per row).",
        "- *ceiling* sends as many unkeyed records with kplex's producer settings, their values picked at random "
        "from 10,000 values of the source (`--payload-file`: with `--record-size` every record would be the same "
        "bytes, which lz4 shrinks to almost nothing); nothing is read, parsed, sorted or placed. Its output is "
        "checked by count only.",
        "- *kplex ... (compression.type=none)* (with `--uncompressed`) is the same INSERT with the producer's "
        "compression off; kplex's default is lz4.",
        "- *kplex ... (warm session)* (with `--warm`) times the same INSERT as the second of its session: the "
        "first, untimed, writes the same rows to another table, so the JVM's JIT compiler has done most of its "
        "work (every other Spark row starts a fresh JVM, as a `spark-submit` does). Its spill figure is the timed "
        "INSERT's; its CPU s and wall s include both.",
        f"- Checks: `kplex.verify.check_derived_topic` up to {args.full_check_up_to:,} records, above that the "
        "streaming equivalent in bench/check.py (same guarantees, O(keys) memory).",
    ]
    failed = [r for r in rows if not r.passed]
    if failed:
        lines += ["", "## Failures", ""]
        for r in failed:
            lines.append(f"- {r.size:,} {r.name} V={r.v}: {'; '.join(r.examples) or 'see ' + r.log}")
    path.write_text("\n".join(lines) + "\n")
    path.with_suffix(".json").write_text(json.dumps({"meta": asdict(meta), "rows": [asdict(r) for r in rows]},
                                                    indent=1))


def render(json_path: Path, out: Path | None) -> int:
    """Rewrite the Markdown of a results JSON (after a change to the tables)."""
    data = json.loads(json_path.read_text())
    rows = []
    for r in data["rows"]:
        r["claims"] = tuple(r["claims"])
        rows.append(Row(**r))
    write_results(out or json_path.with_suffix(".md"), rows, Meta(**data["meta"]))
    return 0


# ------------------------------------------------------------------ main --

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true",
                   help="20k records, V=9, each contender once; exit 0 when all ran and their checks pass")
    p.add_argument("--sizes", default="1000000,10000000", help="records per run, comma-separated")
    p.add_argument("--vs", default="3,9,96,1000", help="kplex virtual partition counts")
    p.add_argument("--deliveries", default="at_least_once,exactly_once")
    p.add_argument("--only", default="", help="run only contenders whose name contains one of these (comma-separated; =NAME: exactly)")
    p.add_argument("--large-vs", default="", help="kplex V values for sizes above 1M (default: --vs)")
    p.add_argument("--large-only", default="", help="--only for sizes above 1M (default: --only)")
    p.add_argument("--reference-v", type=int, default=9, help="V of the non-kplex contenders")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs of every contender; the table shows the median run and the spread")
    p.add_argument("--large-repeat", type=int, default=0, help="--repeat for sizes above 1M (default: --repeat)")
    p.add_argument("--repeat-only", default="",
                   help="repeat only the contenders these select (as --only); the others run once")
    p.add_argument("--partitions", type=int, default=3, help="P, of the source and of every output")
    p.add_argument("--users", type=int, default=100_000)
    p.add_argument("--memory", default="1g", help="spark.driver.memory of every Spark contender")
    p.add_argument("--full-check-up-to", type=int, default=200_000)
    p.add_argument("--timeout", type=float, default=3600, help="seconds per contender")
    p.add_argument("--workdir", type=Path, help="logs, broker data (default: a new dir in /tmp)")
    p.add_argument("--out", type=Path, help="results file (default bench/RESULTS.md; with --smoke, in the workdir)")
    p.add_argument("--keep-topics", action="store_true")
    p.add_argument("--uncompressed", action="store_true",
                   help="add kplex runs (V=reference) with compression.type=none instead of kplex's lz4 default")
    p.add_argument("--warm", action="store_true",
                   help="add kplex runs (V=reference) timed as the second INSERT of their session")
    p.add_argument("--parse-variants", default="",
                   help="add kplex runs (V=reference) whose query reads the JSON with Spark's own functions "
                        f"instead of kplex_json: comma-separated, of {','.join(PARSE_VARIANTS)}")
    p.add_argument("--render", type=Path, metavar="RESULTS.json",
                   help="only rewrite the Markdown of an earlier run from its JSON")
    p.add_argument("--profile", action="store_true",
                   help="also record one kplex exactly-once run (largest size, V=reference) with JFR "
                        "into bench/PROFILE.md")
    args = p.parse_args(argv)
    args.parse_variants = tuple(v for v in args.parse_variants.split(",") if v)
    unknown = set(args.parse_variants) - set(PARSE_VARIANTS)
    if unknown:
        p.error(f"--parse-variants: unknown {sorted(unknown)}; choose from {','.join(PARSE_VARIANTS)}")
    if args.smoke:
        args.sizes, args.vs, args.deliveries = "20000", str(args.reference_v), "at_least_once,exactly_once"
        args.users = min(args.users, 2000)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        return render(args.render, args.out)
    # A plain SIGTERM would skip the clean-up that stops the broker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = "python bench/run.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    started = dt.datetime.now(dt.timezone.utc)
    load_start = procmon.loadavg()
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="kplex-bench-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    out = args.out or (workdir / "RESULTS-smoke.md" if args.smoke else BENCH / "RESULTS.md")
    say(f"work dir {workdir}")
    python_path = kplex_snapshot(workdir)
    jar_sha = hashlib.sha256((python_path / "kplex" / "jars" / "kplex-spark.jar").read_bytes()).hexdigest()
    import pyspark
    jars = ",".join(j for j in connector_jars(pyspark.__version__)
                    if not (Path(j).name.startswith("kafka-clients")
                            and (python_path / "kplex" / "jars" / Path(j).name).exists()))
    kafka_libs()
    info = machine()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    vs = [int(v) for v in args.vs.split(",") if v]
    deliveries = [d for d in args.deliveries.split(",") if d]
    rows: list[Row] = []
    sources: list[sourcegen.Source] = []
    with LocalKafka(brokers=1, workdir=workdir / "broker") as cluster:
        bench = Bench(args, workdir, cluster.bootstrap, broker_pid(cluster), python_path)
        for size in sizes:
            say(f"generating the {size:,}-record source")
            src = sourcegen.make_source(cluster.bootstrap, f"pageviews_{size}", size,
                                        partitions=args.partitions, users=args.users)
            sources.append(src)
            say(f"  {src.records:,} records of {src.mean_value_bytes:.1f} bytes in {src.seconds:.0f} s")
            fingerprint = (check.source_fingerprint(cluster.bootstrap, src.topic)
                           if size > args.full_check_up_to else None)
            large = size > 1_000_000
            size_vs = [int(v) for v in args.large_vs.split(",") if v] if large and args.large_vs else vs
            only = args.large_only if large and args.large_only else args.only
            chosen = [c for c in contenders(size_vs, deliveries, args.reference_v, args.smoke, jars,
                                            args.parse_variants, args.uncompressed, args.warm)
                      if not only or any(_selects(o, c.name) for o in only.split(",") if o)]
            # Repeats go round the contenders (all once, then all again), so that a
            # slow spell of the machine does not land on one contender's every run.
            repeats = args.large_repeat if large and args.large_repeat else args.repeat
            runs: list[list[Row]] = [[] for _ in chosen]
            for repeat in range(repeats):
                for i, c in enumerate(chosen):
                    if repeat and not all(r.passed for r in runs[i]):
                        continue  # a failed contender is reported as it failed, not rerun
                    if repeat and args.repeat_only and not any(
                            _selects(o, c.name) for o in args.repeat_only.split(",") if o):
                        continue
                    runs[i].append(bench.run_one(c, size, src, fingerprint))
                    done = [median_run(r) for r in runs if r]
                    write_results(out, rows + done, meta(args, command, started, info, load_start, jar_sha, sources))
            rows += [median_run(r) for r in runs if r]
            if args.profile and size == max(sizes):
                run_profile(bench, src, args, workdir)
        del bench.admin  # before the broker stops, or librdkafka logs the disconnect
    write_results(out, rows, meta(args, command, started, info, load_start, jar_sha, sources))
    print(out.read_text())
    say(f"results in {out}")
    failed = [r for r in rows if not r.passed]
    for r in failed:
        say(f"FAILED: {r.size:,} {r.name} V={r.v}: {'; '.join(r.examples)}")
    return 1 if failed or not rows else 0


def meta(args: argparse.Namespace, command: str, started: dt.datetime, info: dict[str, str],
         load_start: float, jar_sha: str, sources: list[sourcegen.Source]) -> Meta:
    return Meta(command=command, started=started.isoformat(),
                finished=dt.datetime.now(dt.timezone.utc).isoformat(), info=info, load_start=load_start,
                load_end=procmon.loadavg(), jar_sha=jar_sha, sources=[asdict(s) for s in sources],
                partitions=args.partitions, users=args.users, memory=args.memory,
                reference_v=args.reference_v, full_check_up_to=args.full_check_up_to)


def median_run(runs: list[Row]) -> Row:
    """The run that stands for a contender: a failed one if any failed, else the one with
    the median records/s (the lower middle of an even count); ``runs`` lists them all."""
    failed = [r for r in runs if not r.passed]
    row = failed[0] if failed else sorted(runs, key=lambda r: r.records_per_s)[(len(runs) - 1) // 2]
    row.runs = [r.records_per_s for r in runs if r.ok_run]
    return row


def _selects(token: str, name: str) -> bool:
    """``--only`` matching: a substring of the name, or the exact name after ``=``."""
    return name == token[1:] if token.startswith("=") else token in name


def run_profile(bench: Bench, src: sourcegen.Source, args: argparse.Namespace, workdir: Path) -> None:
    recording = workdir / "kplex.jfr"
    c = Contender("kplex exactly_once (JFR)", "kplex_insert.py", v=args.reference_v, delivery="exactly_once",
                  args=["--delivery", "exactly_once", "--jfr", str(recording)], claims=(), kplex_table=True,
                  checked=False, verify="none")
    row = bench.run_one(c, src.records, src, None)
    if not recording.is_file():
        say("the JFR recording was not written")
        return
    window = (row.result["job_start_epoch"], row.result["job_end_epoch"]) if row.ok_run else None
    text = jfr_summary.report(jfr_summary.read_samples(recording, window=window))
    (BENCH / "PROFILE.md").write_text(
        "# Where a kplex write spends its time\n\n"
        f"`python bench/run.py --profile`: one kplex INSERT (exactly once, V={args.reference_v}, "
        f"P={args.partitions}) of {src.records:,} records, `local[2]`, driver memory {args.memory}, recorded "
        "with Java Flight Recorder (`-XX:StartFlightRecording=settings=profile`); only the samples taken "
        "while the INSERT ran (not the JVM and session start-up) are counted. "
        f"Job {row.job_s:.1f} s ({row.records_per_s:,.0f} records/s with the recorder on), load {row.load:.1f}. "
        "Aggregated by bench/jfr_summary.py from `jfr print --events jdk.ExecutionSample`.\n\n" + text + "\n")
    say(f"profile in {BENCH / 'PROFILE.md'} (recording {recording})")


if __name__ == "__main__":
    sys.exit(main())
