"""Issue #37's side-by-side targets, measured by one command, in one table.

    python bench/targets.py              # three rounds of each comparison: about 35 minutes on 2 cores
    python bench/targets.py --repeat 1   # one round of each
    python bench/targets.py --batch-repeat 5   # five batch rounds (its single runs swing most), three streaming
    python bench/targets.py --smoke      # small inputs: that the command works (its figures judge nothing)

Runs, one after the other and each on a local broker of its own (the machine is never shared
between the two):

1. the batch comparison, ``bench/run.py --sizes 3000000 --vs 9 --warm --only ... --repeat N``:
   Kafka's ``ProducerPerformance`` (plain and in one transaction), the producer alone sending
   kplex's records, Spark's Kafka sink, kplex at least once and exactly once (each in a fresh
   JVM, as a ``spark-submit`` runs), exactly once as the second INSERT of its session (a
   long-lived session: the Thrift or Connect server, a notebook), and exactly once as a SQL file
   run by ``kplex sql run --remote`` on a ``kplex server connect`` that an earlier file warmed;
2. the streaming comparison, ``bench/streaming/run.py --only kplex_eo,kstreams_eos --repeat N``:
   a 1M-record backlog, then 120 s at half kplex's rate with ``kplex.max_delay_ms`` 1000, the
   p50 and p99 of the last 30 s.

Then it writes ``bench/RESULTS-targets.md``: each target with this run's figure (the median over
the rounds of the ratio taken within each round), each round's, and whether it is met; then the
live micro-batch's breakdown, where the p50 goes, and the start-up steps. The two runs' own
results are beside it (``bench/RESULTS-targets-batch.md`` and ``.json``,
``bench/streaming/RESULTS-targets.md`` and ``.json``); ``--smoke`` puts everything in the work dir.
It never asserts a time: it exits 0 when both runs ran and every output passed its checks.
"""
from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

BENCH = Path(__file__).resolve().parent

#: The batch rows, as bench/run.py's --only names them (=NAME: exactly that contender).
BATCH_ROWS = ("ceiling", "=spark-sink", "=kplex at_least_once", "=kplex exactly_once",
              "=kplex exactly_once (warm session)", "=kplex exactly_once (running server)")
BATCH_RECORDS = 3_000_000
V = 9
#: The streaming contenders (bench/streaming/contenders.py) and the baseline of their ratios.
STREAM_ROWS = ("kplex_eo", "kstreams_eos")
STREAM_BASELINE = "kstreams_eos"
MAX_DELAY_MS = 1000

#: Issue #37's targets.
MIN_STREAM_VS_KSTREAMS = 1.5
MAX_P50_MS = MAX_DELAY_MS + 500
MIN_EOS_VS_ALO = 0.97
MIN_ALO_VS_SPARK = 2.5
MIN_EOS_VS_PRODUCER = 0.5


@dataclass(frozen=True)
class Target:
    """One line of the table: what is measured, the run's figure (the median over the rounds),
    each round's, and the bound (None: shown beside the targets, not one of them)."""

    what: str
    value: float | None
    per_round: tuple[float | None, ...]
    bound: float | None = None
    at_most: bool = False  # the figure must stay at or below the bound
    unit: str = "x"
    note: str = ""

    @property
    def met(self) -> bool | None:
        if self.bound is None or self.value is None:
            return None
        return self.value <= self.bound if self.at_most else self.value >= self.bound

    def cell(self, value: float | None) -> str:
        if value is None:
            return "–"
        return f"{value:,.0f} ms" if self.unit == "ms" else f"{value:.2f}x"

    def row(self, judged: bool) -> str:
        bound = "–" if self.bound is None else ("≤ " if self.at_most else "≥ ") + self.cell(self.bound)
        met = "–" if self.met is None or not judged else ("yes" if self.met else "**no**")
        rounds = " / ".join(self.cell(v) for v in self.per_round)
        return f"| {self.what} | {self.cell(self.value)} | {rounds} | {bound} | {met} | {self.note} |"


def _median(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def _batch_row(rows: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    """The contender's row at the run's size (its largest), if it ran."""
    size = max(r["size"] for r in rows)
    return next((r for r in rows if r["name"] == name and r["size"] == size and r["ok_run"]
                 and r["v"] in (None, V)), None)


def batch_ratio(rows: list[dict[str, Any]], what: str, top: str, bottom: str, bound: float | None,
                note: str = "") -> Target:
    """``top``'s records/s over ``bottom``'s: round by round (bench/run.py goes round all its
    contenders before the next round, so the i-th runs of two contenders ran side by side), and
    the median of those ratios."""
    a, b = _batch_row(rows, top), _batch_row(rows, bottom)
    if not (a and b):
        return Target(what, None, (), bound, note=note or "did not run")
    tops, bottoms = a["runs"] or [a["records_per_s"]], b["runs"] or [b["records_per_s"]]
    if len(tops) != len(bottoms):  # a run that did not finish leaves the rounds unpaired
        return Target(what, a["records_per_s"] / b["records_per_s"], (), bound,
                      note="; ".join(filter(None, (note, "the ratio of the medians: the rounds do not pair up"))))
    per_round = tuple(x / y for x, y in zip(tops, bottoms))
    return Target(what, _median(per_round), per_round, bound, note=note)


def batch_targets(rows: list[dict[str, Any]]) -> list[Target]:
    return [
        batch_ratio(rows, "batch, exactly once / at least once", "kplex exactly_once", "kplex at_least_once",
                    MIN_EOS_VS_ALO),
        batch_ratio(rows, "batch, at least once / Spark's Kafka sink", "kplex at_least_once", "spark-sink",
                    MIN_ALO_VS_SPARK),
        batch_ratio(rows, "batch, exactly once / Kafka's `ProducerPerformance`", "kplex exactly_once",
                    "ceiling (ProducerPerformance)", MIN_EOS_VS_PRODUCER, "a fresh JVM, as `spark-submit` runs"),
        batch_ratio(rows, "batch, exactly once, second INSERT of a session / `ProducerPerformance`",
                    "kplex exactly_once (warm session)", "ceiling (ProducerPerformance)", MIN_EOS_VS_PRODUCER,
                    "a long-lived session (Thrift, Connect, a notebook): the JIT compiler's work done"),
        batch_ratio(rows, "batch, exactly once, a SQL file on a running server / `ProducerPerformance`",
                    "kplex exactly_once (running server)", "ceiling (ProducerPerformance)", MIN_EOS_VS_PRODUCER,
                    "`kplex sql run --remote` on a `kplex server connect` an earlier file warmed"),
        batch_ratio(rows, "the producer alone with kplex's records / `ProducerPerformance`, both one transaction",
                    "ceiling (kplex's records, one transaction)", "ceiling (ProducerPerformance, one transaction)",
                    None, "what the wire format's key and two headers cost the producer"),
        batch_ratio(rows, "batch, exactly once / the producer alone with kplex's records", "kplex exactly_once",
                    "ceiling (kplex's records, one transaction)", None,
                    "what reading, parsing, the shuffle, the sort and a fresh JVM's compiler cost"),
    ]


def stream_targets(summary: dict[str, Any]) -> list[Target]:
    def per_round(slug: str, key: str) -> tuple[float | None, ...]:
        return tuple(each.get(slug, {}).get(key) for each in summary["rounds"])

    kplex, peer = per_round("kplex_eo", "visible_s"), per_round(STREAM_BASELINE, "visible_s")
    return [
        Target("streaming, exactly once, sustained / Kafka Streams EOS v2", _median(per_round("kplex_eo", "ratio")),
               per_round("kplex_eo", "ratio"), MIN_STREAM_VS_KSTREAMS),
        Target(f"streaming p50 visibility at half rate, `max_delay_ms` {MAX_DELAY_MS}",
               _median(per_round("kplex_eo", "p50_ms")), per_round("kplex_eo", "p50_ms"), MAX_P50_MS, at_most=True,
               unit="ms", note=f"Kafka Streams EOS: {_ms(_median(per_round(STREAM_BASELINE, 'p50_ms')))}"),
        Target("streaming start-up, first record visible / Kafka Streams'",
               _median(tuple(a / b for a, b in zip(kplex, peer) if a and b)),
               tuple(a / b if a and b else None for a, b in zip(kplex, peer)),
               note=f"kplex {_s(_median(kplex))}, Kafka Streams {_s(_median(peer))}, from the process's launch"),
    ]


#: The kplex rows whose INSERT is broken into phases (bench/eventlog_stages.py).
PHASED_ROWS = ("kplex at_least_once", "kplex exactly_once", "kplex exactly_once (warm session)")


def _eventlog_stages():
    """bench/eventlog_stages.py, loaded by path (bench/ on sys.path would shadow
    bench/streaming's modules of the same names)."""
    spec = importlib.util.spec_from_file_location("kplex_bench_eventlog_stages", BENCH / "eventlog_stages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def batch_phases(rows: list[dict[str, Any]]) -> str:
    """Where each kplex row's INSERT spent its time, in its median run, from the event log that
    bench/run.py keeps beside the run's log (``eventlog-<contender>-<output topic>``)."""
    stages = _eventlog_stages()
    lines = ["| INSERT (its median run) | " + " | ".join(f"{phase} ms" for phase in stages.PHASES) + " |",
             "| --- |" + " ---: |" * len(stages.PHASES)]
    for name in PHASED_ROWS:
        row = _batch_row(rows, name)
        if not row or not row.get("log"):
            continue
        log = Path(row["log"])
        eventlog = next(log.parent.glob(f"eventlog-*-{log.stem}"), None)
        phases = eventlog and stages.insert_phases(stages.event_lines(eventlog))
        if phases:
            lines.append(f"| {name} | " + " | ".join(f"{phases[phase]:,}" for phase in stages.PHASES) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f} ms"


def _s(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} s"


def document(command: str, started: dt.datetime, minutes: float, batch: dict[str, Any], stream: dict[str, Any],
             batch_md: str, stream_md: str, smoke: bool) -> str:
    """RESULTS-targets.md from the two runs' results (bench/run.py's JSON and
    bench/streaming/run.py's)."""
    targets = stream_targets(stream) + batch_targets(batch["rows"])
    machine = "; ".join(f"{k} {v}" for k, v in batch["meta"]["info"].items())
    rounds = len(stream["rounds"])
    batch_rounds = max((len(r["runs"]) for r in batch["rows"] if r.get("runs")), default=1)
    counted = (f"{rounds} rounds'" if batch_rounds == rounds else
               f"rounds' (batch {batch_rounds}, streaming {rounds})")
    lines = [
        "# Issue #37's targets, side by side, in one run",
        "",
        f"`{command}`: {started:%Y-%m-%d %H:%M} UTC, {minutes:.0f} minutes.  ",
        f"Machine: {machine}.",
        "",
        f"Batch: `{batch['meta']['command']}`, its results in [{batch_md}]({batch_md}): "
        f"{max(r['size'] for r in batch['rows']):,} records, V = {V}, each contender in a fresh process, round-robin. "
        f"Streaming: `{stream['command']}`, its results in [{stream_md}]({stream_md}): "
        + ", ".join(f"{k} {v}" for k, v in stream["parameters"].items()) + ".",
        "",
        ("Each ratio is taken within a round (the runs that ran side by side), and the figure is the median "
         f"of the {counted}; the rounds' own are beside it." if max(rounds, batch_rounds) > 1 else
         "One round: each ratio is of runs that ran side by side.")
        + (" A smoke run: its inputs are too small for its figures to judge the targets." if smoke else ""),
        "",
        "| measured | this run | per round | target | met | |",
        "| --- | ---: | ---: | ---: | --- | --- |",
        *(t.row(judged=not smoke) for t in targets),
        "",
    ]
    phases = batch_phases(batch["rows"])
    if phases:
        lines += ["Where a batch INSERT's time goes, in each kplex row's median run, from its Spark event log: "
                  "*before the first job* is planning and, for kplex, the writer's claim, recovery and the "
                  "table's state; *between the stages* adaptive execution re-planning the write; *after the last "
                  "job* the write's commit on the driver (for exactly once: the commit record, committing the "
                  "tasks' transactions, waiting until they are visible):", "", phases, ""]
    tables = stream["tables"]
    if tables.get("visibility"):
        lines += ["A live exactly-once micro-batch, the last round (medians over its live micro-batches; "
                  "[bench/streaming/run.py](streaming/run.py) explains each column). Where the p50 goes:", "",
                  tables["visibility"], ""]
    if tables.get("breakdown"):
        lines += ["What a micro-batch spends, by phase of the stream:", "", tables["breakdown"], ""]
    if tables.get("startup"):
        lines += ["Start-up, each step from the end of the one before, medians over the rounds:", "",
                  tables["startup"], ""]
    failed = [r["name"] for r in batch["rows"] if not r["ok_run"]]
    failed += [m["name"] for m in stream["medians"].values() if not m["ok"]]
    if failed:
        lines += ["**Failed** (see the runs' own results): " + ", ".join(failed), ""]
    return "\n".join(lines)


def render(record_path: Path) -> int:
    """RESULTS-targets.md from a run's record (``RESULTS-targets.json``: the command, when it
    ran, where the two runs' results are) and those results."""
    record = json.loads(record_path.read_text())
    out, batch_out, stream_out = (record_path.parent / record[key] for key in ("out", "batch", "streaming"))
    batch, stream = (json.loads(path.with_suffix(".json").read_text()) for path in (batch_out, stream_out))
    out.write_text(document(record["command"], dt.datetime.fromisoformat(record["started"]), record["minutes"],
                            batch, stream, record["batch"], record["streaming"], record["smoke"]))
    return 0


def run(command: list[str]) -> int:
    print("targets: " + shlex.join(command), flush=True)
    return subprocess.call(command)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=3, metavar="N", help="rounds of each comparison (3)")
    p.add_argument("--batch-repeat", type=int, metavar="N",
                   help="rounds of the batch comparison, whose single runs swing most (default: --repeat)")
    p.add_argument("--smoke", action="store_true", help="small inputs, one round: that the command works")
    p.add_argument("--workdir", type=Path, help="the two runs' brokers and logs (default: a new dir in /tmp)")
    p.add_argument("--out", type=Path, help="the targets' table (default bench/RESULTS-targets.md; "
                                            "with --smoke, in the work dir)")
    p.add_argument("--render", type=Path, metavar="RESULTS-targets.json",
                   help="write the table again from an earlier run's results (after a change to it), running nothing")
    args = p.parse_args(argv)
    if args.render:
        return render(args.render)
    for flag, value in (("--repeat", args.repeat), ("--batch-repeat", args.batch_repeat)):
        if value is not None and value < 1:
            p.error(f"{flag}: at least 1, not {value}")
    command = "python bench/targets.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    started = dt.datetime.now(dt.timezone.utc)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="kplex-targets-"))).resolve()
    out = args.out or (workdir / "RESULTS-targets.md" if args.smoke else BENCH / "RESULTS-targets.md")
    batch_out = workdir / "batch.md" if args.smoke else BENCH / "RESULTS-targets-batch.md"
    stream_out = workdir / "streaming.md" if args.smoke else BENCH / "streaming" / "RESULTS-targets.md"
    repeat = ["--repeat", str(1 if args.smoke else args.repeat)]
    batch_repeat = ["--repeat", str(1 if args.smoke else args.batch_repeat or args.repeat)]
    size = ["--smoke"] if args.smoke else ["--sizes", str(BATCH_RECORDS), "--vs", str(V)]
    batch_rc = run([sys.executable, str(BENCH / "run.py"), *size, "--warm", "--only", ",".join(BATCH_ROWS),
                    *batch_repeat, "--workdir", str(workdir / "batch"), "--out", str(batch_out)])
    stream_rc = run([sys.executable, str(BENCH / "streaming" / "run.py"), *(["--smoke"] if args.smoke else []),
                     "--only", ",".join(STREAM_ROWS), "--max-delay-ms", str(MAX_DELAY_MS), *repeat,
                     "--workdir", str(workdir / "streaming"), "--out", str(stream_out)])
    missing = [str(path.with_suffix(".json")) for path in (batch_out, stream_out)
               if not path.with_suffix(".json").is_file()]
    if missing:
        print(f"targets: no results in {', '.join(missing)}: see the run's output above", file=sys.stderr)
        return 1
    minutes = (dt.datetime.now(dt.timezone.utc) - started).total_seconds() / 60

    def kept(path: Path) -> str:  # beside the record, relative, so a clone can --render it
        return str(path.relative_to(out.parent)) if path.is_relative_to(out.parent) else str(path)

    run_record = {"command": command, "started": started.isoformat(), "minutes": minutes, "smoke": args.smoke,
                  "batch": kept(batch_out), "streaming": kept(stream_out), "out": out.name}
    out.with_suffix(".json").write_text(json.dumps(run_record, indent=1) + "\n")
    render(out.with_suffix(".json"))
    print(out.read_text())
    print(f"targets: results in {out}")
    return 0 if batch_rc == 0 and stream_rc == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
