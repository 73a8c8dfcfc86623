"""The results of a run as Markdown (the results table, the target ratios, the
headline, the notes) and, next to it, as JSON, which ``--render`` turns back into
the Markdown.
"""
from __future__ import annotations

import datetime as dt
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import check
import source as sourcegen
from cases import PARSE_VARIANTS
from common import KPLEX_PRODUCER
from runner import MIB, Row

# Targets: (name, numerator, denominator, minimum ratio).
MIN_ALO_VS_SPARK = 1.0
MIN_EOS_VS_ALO = 0.97  # issue #37: exactly once at the price of at least once
MIN_KPLEX_VS_CEILING = 0.5
MIN_V1000_VS_V9 = 0.85


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
            f"| {r.size:,} | {r.label} | {r.v or '–'} | {_num(r.records_per_s)} | {spread} | {_num(r.mib_per_s, '{:,.1f}')} "
            f"| {_num(r.job_s, '{:,.1f}')} | {_num(r.wall_s, '{:,.1f}')} "
            f"| {_num(r.cpu_s)} (+ {_num(r.broker_cpu_s)}) | {_num(r.peak_tree_mib)}: {roles} "
            f"| {_num(r.broker_peak_mib)} | {spark} | {_num(r.load, '{:.1f}')} | {_checks(r)} |")
    return lines


def _find(rows: list[Row], size: int, name: str, v: int | None = None, spark: str = "") -> Row | None:
    """The row of a contender that ran, on the Spark line ``spark`` (bench/run.py's own
    pyspark, whose rows carry its version with ``--spark`` and none without)."""
    for r in rows:
        if (r.size == size and r.name == name and (v is None or r.v == v) and r.spark in ("", spark)
                and r.ok_run):
            return r
    return None


Ratio = tuple[int, str, "tuple[float, float] | None", "float | None", str]


def ratio(a: Row | None, b: Row | None) -> tuple[float, float] | None:
    """(records/s of a over b's, records per CPU s of a over b's), or None without both."""
    if not (a and b):
        return None
    return a.records_per_s / b.records_per_s, a.records_per_cpu_s / b.records_per_cpu_s


def ratios(rows: list[Row], reference_v: int, spark: str = "") -> list[Ratio]:
    """(size, what, (records/s ratio, records per CPU s ratio), minimum, note) for every
    target the run can judge, on the Spark line ``spark`` (the installed pyspark's version),
    then every other line's kplex rows over that line's."""
    out = []
    for size in sorted({r.size for r in rows}):
        def find(name: str, v: int | None = None) -> Row | None:
            return _find(rows, size, name, v, spark)

        alo = find("kplex at_least_once", reference_v)
        eos = find("kplex exactly_once", reference_v)
        sink = find("spark-sink")
        sink_tuned = find("spark-sink (kplex producer conf)")
        ceiling = find("ceiling (ProducerPerformance)")

        out.append((size, f"kplex at-least-once V={reference_v} / Spark Kafka sink (defaults)",
                    ratio(alo, sink), MIN_ALO_VS_SPARK, ""))
        if sink_tuned:
            out.append((size, f"kplex at-least-once V={reference_v} / Spark Kafka sink (kplex producer conf)",
                        ratio(alo, sink_tuned), MIN_ALO_VS_SPARK, "same producer settings on both sides"))
        for v in sorted({r.v for r in rows if r.size == size and r.name.startswith("kplex") and r.v}):
            out.append((size, f"kplex exactly-once / at-least-once, V={v}",
                        ratio(find("kplex exactly_once", v), find("kplex at_least_once", v)),
                        MIN_EOS_VS_ALO, ""))
        one_transaction = find("ceiling (ProducerPerformance, one transaction)")
        if one_transaction and ceiling:
            out.append((size, "ceiling in one transaction / ceiling", ratio(one_transaction, ceiling), None,
                        "Kafka's own price of a transaction, beside exactly once's"))
        out.append((size, f"kplex at-least-once V={reference_v} / ceiling", ratio(alo, ceiling),
                    MIN_KPLEX_VS_CEILING, ""))
        out.append((size, f"kplex exactly-once V={reference_v} / ceiling", ratio(eos, ceiling),
                    MIN_KPLEX_VS_CEILING, ""))
        kplex_records = find("ceiling (kplex's records, one transaction)")
        if kplex_records and one_transaction:
            out.append((size, "ceiling with kplex's records / ceiling in one transaction",
                        ratio(kplex_records, one_transaction), None,
                        "both one transaction: what the wire format's key and headers cost the producer"))
        if kplex_records:
            out.append((size, f"kplex exactly-once V={reference_v} / ceiling with kplex's records",
                        ratio(eos, kplex_records), None, "what reading, parsing, shuffling and sorting cost"))
        for delivery, default in (("at_least_once", alo), ("exactly_once", eos)):
            label = f"kplex {delivery.replace('_', '-')} V={reference_v}"
            plain = find(f"kplex {delivery} (compression.type=none)", reference_v)
            if plain and default:
                out.append((size, f"{label}, lz4 (default) / compression.type=none", ratio(default, plain),
                            None, "the producer default, by measurement"))
            warm = find(f"kplex {delivery} (warm session)", reference_v)
            if warm and ceiling:
                # Its CPU s covers both INSERTs of the session: no per-CPU ratio.
                out.append((size, f"{label}, second INSERT of a session / ceiling",
                            (warm.records_per_s / ceiling.records_per_s, None),
                            MIN_KPLEX_VS_CEILING, "the JVM's code compiled already"))
            served = find(f"kplex {delivery} (running server)", reference_v)
            if served and ceiling:
                # The work is the server's JVM's, not the client process's: no per-CPU ratio.
                out.append((size, f"{label}, a SQL file on a running server / ceiling",
                            (served.records_per_s / ceiling.records_per_s, None),
                            MIN_KPLEX_VS_CEILING, "`kplex sql run --remote`, an earlier file warmed the server"))
        for parse in PARSE_VARIANTS:
            for delivery in ("at_least_once", "exactly_once"):
                variant = find(f"kplex {delivery} ({parse})", reference_v)
                if variant:
                    out.append((size, f"kplex {delivery.replace('_', '-')} V={reference_v}, JSON read with "
                                f"Spark's {parse} / ceiling", ratio(variant, ceiling), MIN_KPLEX_VS_CEILING,
                                "the same INSERT without kplex_json"))
        for delivery in ("at_least_once", "exactly_once"):
            hi = find(f"kplex {delivery}", 1000)
            lo = find(f"kplex {delivery}", 9)
            if hi and lo:
                out.append((size, f"kplex {delivery.replace('_', '-')} V=1000 / V=9", ratio(hi, lo),
                            MIN_V1000_VS_V9, "within 15%: at least 0.85"))
        for r in rows:
            if r.size == size and r.spark and r.spark != spark and r.name.startswith("kplex"):
                out.append((size, f"{r.name.replace('_', '-')} V={r.v}, Spark {r.spark} / Spark {spark or '?'}",
                            ratio(r if r.ok_run else None, find(r.name, r.v)), None,
                            "the same INSERT on another Spark line"))
    return out


def shown(value: float, minimum: float | None) -> str:
    """A ratio as the table prints it: two decimals, or three where two would round it onto
    the other side of its target (0.967 against 0.97 reads "0.967×", not "0.97×" beside "no").

    >>> shown(0.9667, 0.97), shown(0.9667, None), shown(0.974, 0.97), shown(0.9698, 0.97)
    ('0.967×', '0.97×', '0.97×', '0.970×')
    """
    two = f"{value:.2f}"
    if minimum is not None and (float(two) >= minimum) != (value >= minimum):
        return f"{value:.3f}×"
    return f"{two}×"


def ratio_table(items: list[Ratio]) -> list[str]:
    lines = ["| records | ratio | records/s | met | records per CPU s | met | target |",
             "| ---: | --- | ---: | --- | ---: | --- | --- |"]
    for size, what, value, minimum, note in items:
        cells = []
        for v in value or (None, None):  # a None cell: not measured
            met = "–" if minimum is None else "yes" if v is not None and v >= minimum else "**no**"
            cells += ["–", "–"] if v is None else [shown(v, minimum), met]
        target = (f"≥ {minimum:.2f}" if minimum is not None else "no target") + (f" ({note})" if note else "")
        lines.append(f"| {size:,} | {what} | {' | '.join(cells)} | {target} |")
    return lines


def headline(rows: list[Row], reference_v: int, memory: str = "1g", spark: str = "") -> list[str]:
    size = max((r.size for r in rows), default=0)
    eos = _find(rows, size, "kplex exactly_once", reference_v, spark)
    alo = _find(rows, size, "kplex at_least_once", reference_v, spark)
    sink = _find(rows, size, "spark-sink", spark=spark)
    ceiling = _find(rows, size, "ceiling (ProducerPerformance)", spark=spark)
    py = _find(rows, size, "python confluent-kafka", spark=spark)
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
    jar_shas: dict[str, str] = field(default_factory=dict)  # plugin jar -> sha256 (older runs: jar_sha only)
    class_archive: str = ""  # the note on the kplex sessions' JVM class archive (older runs: "")


def write_results(path: Path, rows: list[Row], meta: Meta) -> None:
    """The Markdown tables, and next to them the same as JSON (``--render`` reads it back)."""
    args = meta  # the fields the text below needs have the same names
    started = dt.datetime.fromisoformat(meta.started)
    minutes = (dt.datetime.fromisoformat(meta.finished) - started).total_seconds() / 60
    info, loads, command, jar_sha = meta.info, (meta.load_start, meta.load_end), meta.command, meta.jar_sha
    sources = [sourcegen.Source(**s) for s in meta.sources]
    spark = info.get("pyspark", "")  # the Spark line of bench/run.py's own Python
    items = ratios(rows, args.reference_v, spark)
    jars = meta.jar_shas or {"kplex-spark.jar": jar_sha}
    lines_run = sorted({r.spark for r in rows if r.spark}, key=lambda v: [int(p) for p in v.split(".") if p.isdigit()])
    lines = [
        "# kplex benchmark results",
        "",
        f"Command: `{command}`  ",
        f"Date: {started:%Y-%m-%d %H:%M} UTC, {minutes:.0f} minutes  ",
        "Machine: " + "; ".join(f"{k} {v}" for k, v in info.items()) + "  ",
        ", ".join(f"{name} sha256 {sha[:16]}…" for name, sha in jars.items()) + "  ",
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
        *headline(rows, args.reference_v, args.memory, spark),
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
        "checked by count only. *ceiling (ProducerPerformance, one transaction)* (beside exactly-once rows) "
        "sends the same in one Kafka transaction committed at the end, as an exactly-once kplex task does: Kafka's "
        "own price of a transaction. *ceiling (kplex's records, one transaction)* (beside exactly-once rows; "
        "`bench/contenders/KplexRecordsCeiling.java`) sends, from the same payloads, each record as a kplex "
        "exactly-once writer task hands it to the producer: the value's userid as key, the `kplex.vp` and "
        "`kplex.order` headers, the virtual partition's physical partition, in one transaction; a payload's key, "
        "order and placement are worked out before the clock starts. It is the producer's part of a kplex write.",
        *([f"- {meta.class_archive}"] if meta.class_archive else []),
        "- *kplex ... (compression.type=none)* (with `--uncompressed`) is the same INSERT with the producer's "
        "compression off; kplex's default is lz4.",
        "- *kplex ... (warm session)* (with `--warm`) times the same INSERT as the second of its session: the "
        "first, untimed, writes the same rows to another table, so the JVM's JIT compiler has done most of its "
        "work (every other Spark row starts a fresh JVM, as a `spark-submit` does). Its spill figure is the timed "
        "INSERT's; its CPU s and wall s include both.",
        "- *kplex ... (running server)* (with `--warm`) runs the same INSERT as a scheduler's SQL file on a running "
        "`kplex server connect` (`kplex sql run --remote`): the server is started, a first file writes the same rows "
        "to another table, untimed, then the timed file runs in a Spark Connect session of its own. Its time is "
        "the INSERT statement's, as the client sees it; its CPU s and wall s include the server's start and the "
        "first file.",
        f"- Checks: `kplex.testing.verify.check_derived_topic` up to {args.full_check_up_to:,} records, above that the "
        "streaming equivalent in bench/check.py (same guarantees, O(keys) memory).",
    ]
    if lines_run:
        lines.append(
            f"- *..., Spark X* rows (`--spark {','.join(lines_run)}`) ran the same kplex script and package snapshot "
            f"with pyspark X: in bench/run.py's own Python for its pyspark ({spark}), else in the virtual environment that "
            "`scripts/test_spark_version.sh X --prepare` makes, with the plugin jar of that line "
            "(`kplex.jars()`: kplex-spark-3.5.jar on 3.5, kplex-spark.jar on 4.x); the targets compare each line "
            f"with Spark {spark}. The other contenders ran once, on Spark {spark}.")
    failed = [r for r in rows if not r.passed]
    if failed:
        lines += ["", "## Failures", ""]
        for r in failed:
            lines.append(f"- {r.size:,} {r.label} V={r.v}: {'; '.join(r.examples) or 'see ' + r.log}")
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
