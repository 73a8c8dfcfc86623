"""The Markdown of bench/streaming/run.py: the results table, the per-batch breakdown of
the Spark queries (from StreamingQueryProgress), the summary of several rounds (``--repeat``),
and RESULTS.md around them."""
from __future__ import annotations

import datetime as dt
import json
import statistics
from typing import Any, Iterable, Sequence

from harness import Result
from live_profile import INTERVAL_MS

#: StreamingQueryProgress.durationMs keys, in the order a micro-batch spends them.
DURATIONS = ("latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch", "commitOffsets",
             "triggerExecution")


def markdown(header: Sequence[str], rows: Iterable[Sequence[str]], right: Sequence[int] = ()) -> str:
    """A Markdown table; columns whose index is in ``right`` are right-aligned."""
    align = ["---:" if i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _num(x: float | None, digits: int = 0) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def _order_cell(r: Result) -> str:
    if not r.contender.keeps_order:
        return "no (not claimed)"
    if r.order_checked == 0:
        return "yes: no headers found"
    if r.order_violations:
        return f"yes: **{r.order_violations:,} violations**"
    return f"yes: in order ({r.order_checked:,} records)"


def _records_cell(r: Result) -> str:
    expected = r.backlog + r.live_produced
    seen = r.backlog_seen + r.live_seen
    text = f"{seen:,} of {expected:,}"
    if r.missing:
        text += f", **{r.missing:,} missing**"
    if r.extra:
        text += f", {'**' if r.contender.exactly_once else ''}{r.extra:,} duplicates{'**' if r.contender.exactly_once else ''}"
    return text


def _ratio(x: float | None, y: float | None) -> float | None:
    return x / y if x and y else None


def _find(results: Sequence[Result], slug: str) -> Result | None:
    return next((r for r in results if r.contender.slug == slug), None)


def results_table(results: Sequence[Result], baseline: str) -> str:
    """contender | guarantee | sustained rec/s | ratio | with start-up | ratio | drain | p50 | p99 |
    start-up | G2 | records."""
    base = _find(results, baseline)
    settled = any(r.settling_latencies_ms for r in results)
    header = ("contender", "guarantee", "sustained rec/s", "ratio to Kafka Streams EOS", "rec/s with start-up",
              "ratio", "drain s", "p50 ms", "p99 ms", *(("p50 ms while settling",) if settled else ()), "start-up s",
              "G2 order checked?", "records out")
    rows = []
    for r in results:
        ratio = _ratio(r.sustained, base.sustained if base else None)
        cold = _ratio(r.with_startup, base.with_startup if base else None)
        rows.append((r.contender.name + ("" if r.ok else " (**failed**)"), r.contender.guarantee,
                     _num(r.sustained), _num(ratio, 2), _num(r.with_startup), _num(cold, 2), _num(r.drain_s, 1),
                     _num(r.percentile(50)), _num(r.percentile(99)),
                     *((_num(r.settling_percentile(50)),) if settled else ()), _num(r.startup_s, 1), _order_cell(r),
                     _records_cell(r)))
    return markdown(header, rows, right=tuple(range(2, 10 + settled)))


def _round_figures(r: Result | None, base: Result | None) -> tuple[float | None, ...]:
    """A contender's ratio to the baseline, p50, p99 and sustained rate in one round."""
    if r is None:
        return (None, None, None, None)
    return _ratio(r.sustained, base.sustained if base else None), r.percentile(50), r.percentile(99), r.sustained


def rounds_table(rounds: Sequence[Sequence[Result]], baseline: str) -> str:
    """Several rounds of one command, one row per contender: the medians across rounds of its
    sustained rate's ratio to ``baseline``'s of the same round, of its p50 and p99 ms and of
    its sustained rate, then each of these per round in the order the rounds ran. A figure a
    round lacks shows as —, and the median is over the rounds that have it.

    >>> print(rounds_table([round_1, round_2, round_3], "kstreams_eos"))  # doctest: +SKIP
    | contender | median ratio to Kafka Streams EOS | median p50 ms | ... | ratio per round | p50 ms per round | ...
    | --- | ---: | ---: | ... | ---: | ---: | ...
    | kplex streaming, exactly once | 1.43 | 1,560 | ... | 1.19 / 1.43 / 1.52 | 1,560 / 1,518 / 2,060 | ...
    """
    names = {r.contender.slug: r.contender.name for results in rounds for r in results}
    header = ("contender", f"median ratio to {names.get(baseline, baseline)}", "median p50 ms", "median p99 ms",
              "median sustained rec/s", "ratio per round", "p50 ms per round", "p99 ms per round",
              "sustained rec/s per round")
    digits = (2, 0, 0, 0)  # ratio, p50, p99, sustained
    rows = []
    for slug, name in names.items():
        mine = [_find(results, slug) for results in rounds]
        columns = list(zip(*(_round_figures(r, _find(results, baseline)) for r, results in zip(mine, rounds))))
        failed = [str(n) for n, r in enumerate(mine, 1) if r is None or not r.ok]
        if failed:
            name += f" (**failed in round{'s' if len(failed) > 1 else ''} {', '.join(failed)}**)"
        medians = [_median([v for v in values if v is not None], d) for values, d in zip(columns, digits)]
        per_round = [" / ".join(_num(v, d) for v in values) for values, d in zip(columns, digits)]
        rows.append((name, *medians, *per_round))
    return markdown(header, rows, right=tuple(range(1, len(header))))


#: The kplex sink's own figures per micro-batch (its progress metrics), and their column names:
#: the slowest task's shuffle read and sort (until its first row), taking its rows in and
#: sending, its commit (releasing, holding back, flushing), then the driver's commit.
SINK_TIMES = {"taskSortMs": "task sort ms", "taskWriteMs": "task send ms", "taskCommitMs": "task flush ms",
              "commitMs": "driver commit ms"}


def _triggered_at(progress: dict[str, Any]) -> float:
    """When a micro-batch's trigger fired (epoch s), from its progress's ISO timestamp."""
    return dt.datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00")).timestamp()


def _phase(progress: dict[str, Any], r: Result) -> str:
    """backlog, settling (the live phase's first ``--settle`` seconds) or live (measured)."""
    if r.live_started_at is None:
        return "backlog"
    at = _triggered_at(progress)
    if at < r.live_started_at:
        return "backlog"
    return "settling" if r.measured_from is not None and at < r.measured_from else "live"


def _median(values: list[float], digits: int = 0) -> str:
    return _num(statistics.median(values), digits) if values else "—"


def _sink_metrics(progress: dict[str, Any]) -> dict[str, str]:
    return (progress.get("sink") or {}).get("metrics") or {}


def _rows_written(progress: dict[str, Any]) -> int | None:
    """Rows the kplex sink released in this batch (its rowsPerVirtualPartition), None for other sinks."""
    per_vp = _sink_metrics(progress).get("rowsPerVirtualPartition")
    return sum(json.loads(per_vp).values()) if per_vp else None


def _busy(progress: dict[str, Any]) -> bool:
    """A batch that read records or (kplex) released held ones."""
    return progress.get("numInputRows", 0) > 0 or bool(_rows_written(progress))


def breakdown_rows(r: Result) -> list[tuple[str, ...]]:
    """One row per phase: medians over the micro-batches that read or wrote records."""
    rows = []
    for phase in ("backlog", "settling", "live"):
        batches = [p for p in r.progress if _busy(p) and _phase(p, r) == phase]
        if not batches:
            continue
        written = [w for w in map(_rows_written, batches) if w is not None]
        cells = [r.contender.name, phase, f"{len(batches):,}", _median([p["numInputRows"] for p in batches]),
                 _median(written)]
        for key in DURATIONS:
            cells.append(_median([p["durationMs"][key] for p in batches if key in p.get("durationMs", {})]))
        for key in SINK_TIMES:
            cells.append(_median([float(_sink_metrics(p)[key]) for p in batches if key in _sink_metrics(p)]))
        rows.append(tuple(cells))
    return rows


def breakdown_table(results: Sequence[Result]) -> str:
    header = ("query", "phase", "batches", "rows in/batch", "rows out/batch", *(f"{k} ms" for k in DURATIONS),
              *(SINK_TIMES[k] for k in SINK_TIMES))
    rows = [row for r in results if r.contender.reports_progress for row in breakdown_rows(r)]
    if not rows:
        return ""
    return markdown(header, rows, right=tuple(range(2, len(header))))


def _read_at(progress: dict[str, Any]) -> float | None:
    """When the kplex source fixed the micro-batch's end offsets (epoch ms; its ``kplex.at``)."""
    for source in progress.get("sources") or []:
        end = source.get("endOffset")
        at = end.get("kplex.at") if isinstance(end, dict) else None
        if at is not None:
            return float(at)
    return None


#: How far before the live phase's start a watermark may be and still be the live records' (a
#: record produced just before the harness marked the start).
LIVE_SLACK_MS = 60_000


def released_p50(batches: Sequence[tuple[float, float, float]]) -> float | None:
    """The p50 visibility the micro-batches alone give, from ``(end, watermark before,
    watermark after)`` per live micro-batch (epoch ms): each releases the records between the
    two watermarks (as many per ms of event time, the live rate being fixed), visible at its
    end, so their latencies spread evenly from ``end - after`` to ``end - before``. The median
    of that mixture, by bisection."""
    spans = [(end - after, end - before) for end, before, after in batches if after > before]
    if not spans:
        return None
    total = sum(hi - lo for lo, hi in spans)

    def below(x: float) -> float:
        return sum(min(max(x - lo, 0.0), hi - lo) for lo, hi in spans) / total

    lo, hi = min(s[0] for s in spans), max(s[1] for s in spans)
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if below(mid) < 0.5 else (lo, mid)
    return hi


def visibility_row(r: Result) -> tuple[str, ...] | None:
    """Where a kplex query's p50 goes, from its live micro-batches alone: a record becomes
    visible at the end of the micro-batch whose watermark passes it, so for the median record
    that is (1) how far the watermark trails the newest record read (its ``kplex.at`` less its
    *watermark* metric: ``max_delay_ms`` and the way from the producer to the read), (2) about
    half a micro-batch (the wait until the next one reads the record that moves the watermark
    past it) and (3) that micro-batch's time from the read to its end, its commit included.
    *expected p50*: the median of what the micro-batches released, each record at its
    micro-batch's end (``released_p50``); the measured p50 less it is the rest: the broker
    making the commit visible and the watcher's read. None without the kplex sink's metrics."""
    lag, to_end, whole, released = [], [], [], []
    before = None
    for p in r.progress:
        at, watermark = _read_at(p), _sink_metrics(p).get("watermark")
        if at is None or not watermark:
            continue
        end = _triggered_at(p) * 1000 + p["durationMs"]["triggerExecution"]
        live = _phase(p, r) == "live"
        if live and _busy(p):
            lag.append(at - float(watermark))
            to_end.append(end - at)
            whole.append(p["durationMs"]["triggerExecution"])
            # The live records' viewtimes are their produce times (the backlog's are years older): a
            # watermark still in the backlog's time releases no live record.
            if before is not None and before >= r.live_started_at * 1000 - LIVE_SLACK_MS:
                released.append((end, before, float(watermark)))
        before = float(watermark) if live else None
    if not whole:
        return None
    expected = released_p50(released)
    measured = r.percentile(50)
    rest = None if measured is None or expected is None else measured - expected
    half = len(whole) // 2
    return (r.contender.name, f"{len(whole):,}", _median(lag), _median(whole), _median(to_end), _num(expected),
            _num(measured), _num(rest), f"{_median(whole[:half])} / {_median(whole[half:])}")


#: The columns of ``visibility_row``.
VISIBILITY_HEADER = ("query", "live batches", "watermark behind the read ms", "micro-batch ms", "read to end ms",
                     "expected p50 ms", "measured p50 ms", "rest ms",
                     "micro-batch ms, first / second half of the live phase")


def visibility_table(results: Sequence[Result]) -> str:
    rows = [row for r in results if r.contender.reports_progress for row in [visibility_row(r)] if row]
    return markdown(VISIBILITY_HEADER, rows, right=tuple(range(1, len(VISIBILITY_HEADER) - 1))) if rows else ""


#: The steps of a Spark contender's start-up, each from the end of the one before (the first
#: from the process's launch), as bench/streaming/spark_query.py marks them: the key of its
#: mark, the column. The kplex table's step is the sink's alone.
STARTUP_STEPS = (("imported", "Python imports s"), ("session", "JVM and Spark session s"),
                 ("source", "source `load()` s"), ("table", "`CREATE TABLE` s"), ("started", "`start()` s"))


def startup_steps(r: Result) -> dict[str, float]:
    """A contender's start-up in steps, seconds each: :data:`STARTUP_STEPS`, then ``first batch``
    (from ``start()`` returning to the end of micro-batch 0: Spark's trigger, reading, the
    write and its commit, in a JVM that has not run it before) and ``first batch addBatch``,
    and ``visible`` (launch to the first output record a read_committed consumer sees, for
    every contender). A step the contender did not mark is left out."""
    steps: dict[str, float] = {}
    if r.startup_s is not None:
        steps["visible"] = r.startup_s
    if r.started_at is None or not r.phases:
        return steps
    before = r.started_at
    for key, _ in STARTUP_STEPS:
        if key in r.phases:
            steps[key] = r.phases[key] - before
            before = r.phases[key]
    first = next((p for p in r.progress if p.get("batchId") == 0), None)
    if first is not None and "started" in r.phases:
        durations = first.get("durationMs", {})
        # micro-batch 0 ends at its trigger plus its triggerExecution
        end = _triggered_at(first) + durations.get("triggerExecution", 0) / 1000
        steps["first batch"] = end - r.phases["started"]
        steps["first batch addBatch"] = durations.get("addBatch", 0) / 1000
    return steps


def startup_table(rounds: Sequence[Sequence[Result]]) -> str:
    """Each contender's start-up in steps (:func:`startup_steps`), the median of each step
    over ``rounds``, and the range of the whole."""
    names = {r.contender.slug: r.contender.name for results in rounds for r in results}
    keys = [key for key, _ in STARTUP_STEPS] + ["first batch", "first batch addBatch"]
    header = ("contender", *(title for _, title in STARTUP_STEPS), "micro-batch 0 s", "of which addBatch s",
              "first record visible s", "per round")
    rows = []
    for slug, name in names.items():
        steps = [startup_steps(r) for results in rounds for r in results if r.contender.slug == slug]
        cells = [_median([s[key] for s in steps if key in s], 2) for key in keys]
        visible = [s["visible"] for s in steps if "visible" in s]
        rows.append((name, *cells, _median(visible, 1), " / ".join(_num(v, 1) for v in visible)))
    return markdown(header, rows, right=tuple(range(1, len(header))))


def problems(results: Sequence[Result], round_number: int | None = None) -> str:
    """A Markdown list of what failed and what is worth knowing, each line under the round's
    number when there is one (``--repeat``)."""
    lines = []
    for r in results:
        who = r.contender.name if round_number is None else f"round {round_number}, {r.contender.name}"
        for p in r.problems:
            lines.append(f"- {who}: {p} (log: `{r.log}`)")
        for n in r.notes:
            lines.append(f"- {who}: {n} (log: `{r.log}`)")
        for e in r.order_examples:
            lines.append(f"- {who}: order violation {e}")
        if r.died_early:
            lines.append(f"- {who}: the process exited before it was stopped (code {r.exit_code})")
    return "\n".join(lines)


def rounds_problems(rounds: Sequence[Sequence[Result]]) -> str:
    """:func:`problems` of every round; of the one round as it is when there is only one."""
    if len(rounds) == 1:
        return problems(rounds[0])
    return "\n".join(filter(None, (problems(results, n) for n, results in enumerate(rounds, 1))))


def results_document(results: Sequence[Result], baseline: str, *, command: str, started: dt.datetime,
                     parameters: dict[str, str], machine: dict[str, str],
                     rounds: Sequence[Sequence[Result]] = ()) -> str:
    """The whole of RESULTS.md: ``results`` in full (with ``--repeat``, the last round) and,
    when there were several ``rounds`` (``results`` the last of them), their summary above it."""
    params = ", ".join(f"{k} {v}" for k, v in parameters.items())
    host = "; ".join(f"{k}: {v}" for k, v in machine.items())
    trouble = rounds_problems(rounds) if len(rounds) > 1 else problems(results)
    parts = [
        "# Streaming benchmark: kplex vs Spark's Kafka sink vs Kafka Streams",
        "",
        f"`{command}` — {started:%Y-%m-%d %H:%M} UTC.",
        "",
        f"Parameters: {params}.",
        "",
        f"Machine: {host}.",
        "",
    ]
    if len(rounds) > 1:
        parts += [f"Medians over {len(rounds)} rounds of this same command, one after another on one broker at one "
                  "live rate; each ratio is to Kafka Streams EOS of the same round:",
                  "", rounds_table(rounds, baseline), "", f"The last round (round {len(rounds)}) in full:", ""]
    parts += [
        results_table(results, baseline),
        "",
        "*sustained rec/s*: the running contender's rate: the backlog records that became visible after "
        "its first commit, per second from that commit until a read_committed consumer sees the last one "
        "(start-up excluded). *rec/s with start-up*: all backlog records / seconds from launching the "
        "contender's process until the last one is visible (*drain s*: JVM and session start-up included). "
        "*start-up s*: until the first output record is visible. *p50/p99 ms*: for the records produced "
        "at the fixed rate after the drain (with `--settle S`, in the live phase's measured seconds, after "
        "its first S; *p50 ms while settling* is the same of the records of those S seconds), visible time "
        "minus produce time. Ratios are to Kafka Streams EOS of the same run.",
    ]
    breakdown = breakdown_table(results)
    if breakdown:
        parts += ["", "Per micro-batch of the Spark queries, medians over the batches that read records or released "
                  "held ones (StreamingQueryProgress.durationMs; the rest are the kplex sink's figures: *rows "
                  "out* its rowsPerVirtualPartition; of the slowest writer task, *task sort* the time until its "
                  "first row (Spark's shuffle read and sort), *task send* taking the rows in and sending those "
                  "released at once, *task flush* its commit (releasing with the batch's watermark, holding back, "
                  "flushing); *driver commit* the commit of the micro-batch. What *addBatch* has beyond these is "
                  "mostly the map stage: reading the source, evaluating key and order, the shuffle write):",
                  "", breakdown]
    visibility = visibility_table(results)
    if visibility:
        parts += ["", "Where the p50 goes, from the live micro-batches (medians): a record is visible at the end of the "
                  "micro-batch whose watermark passes it, so the median one waits for how far the watermark trails "
                  "the newest record read (*watermark behind the read*: `kplex.max_delay_ms` and the way from the "
                  "producer to the read), half a micro-batch (until the next one reads what moves the watermark "
                  "past it) and that micro-batch from its read to its end, its commit included (*read to end*). "
                  "*expected p50*: the median of what the micro-batches released, each record visible at its "
                  "micro-batch's end (a slow micro-batch releases more records); *rest*: the measured p50 less it "
                  "(the broker making the commit visible, the watcher's read). A micro-batch's time grows with the "
                  "records it reads, so the lever is its fixed cost:",
                  "", visibility]
    cpu = live_cpu_table(results)
    if cpu:
        parts += ["", "CPU during the live phase (`--profile-live`: async-profiler attached to each contender's JVM "
                  f"for the live phase's measured seconds (after its settling ones), CPU time sampled every {INTERVAL_MS} ms per thread; the stacks "
                  "are in the contender's `live.collapsed`, for `bench/collapsed_tree.py`; the profiler's own cost is in this "
                  "run's timings, so compare those with a run without it):", "", cpu]
    parts += ["", f"Start-up, {'medians over the rounds' if len(rounds) > 1 else 'seconds'}: each step from the "
              "end of the one before, as the Spark query marks them (bench/streaming/spark_query.py; its "
              "Python imports from the process's launch); *micro-batch 0* from `start()` returning to its end, "
              "its commit included (StreamingQueryProgress); *first record visible* from the launch until a "
              "read_committed consumer sees the first output record (Spark's Kafka sink's records are "
              "visible while its micro-batch runs):", "", startup_table(rounds or [results])]
    if trouble:
        parts += ["", "Problems and notes:", "", trouble]
    return "\n".join(parts) + "\n"


def results_summary(rounds: Sequence[Sequence[Result]], baseline: str, *, command: str, started: dt.datetime,
                    parameters: dict[str, str], machine: dict[str, str]) -> dict[str, Any]:
    """What RESULTS.md says, as data (``RESULTS.json`` beside it, which bench/targets.py reads):
    per round and contender its figures and ratio to ``baseline`` of the same round, their medians
    over the rounds (as :func:`rounds_table` takes them) and, as Markdown, the last round's
    per-batch breakdown and where its p50 goes, and the start-up steps over the rounds."""
    def figures(r: Result, base: Result | None) -> dict[str, Any]:
        ratio, p50, p99, sustained = _round_figures(r, base)
        return {"name": r.contender.name, "ok": r.ok, "ratio": ratio, "p50_ms": p50, "p99_ms": p99,
                "sustained": sustained, "visible_s": r.startup_s}

    per_round = [{r.contender.slug: figures(r, _find(results, baseline)) for r in results} for results in rounds]
    medians: dict[str, dict[str, Any]] = {}
    for slug in dict.fromkeys(slug for each in per_round for slug in each):
        mine = [each[slug] for each in per_round if slug in each]
        medians[slug] = {"name": mine[0]["name"], "ok": all(f["ok"] for f in mine) and len(mine) == len(rounds)}
        for key in ("ratio", "p50_ms", "p99_ms", "sustained", "visible_s"):
            values = [f[key] for f in mine if f[key] is not None]
            medians[slug][key] = statistics.median(values) if values else None
    last = rounds[-1] if rounds else []
    return {"command": command, "started": started.isoformat(), "parameters": parameters, "machine": machine,
            "baseline": baseline, "rounds": per_round, "medians": medians,
            "tables": {"breakdown": breakdown_table(last), "visibility": visibility_table(last),
                       "startup": startup_table(rounds) if rounds else ""}}


def live_cpu_table(results: Sequence[Result]) -> str:
    """Per contender profiled with ``--profile-live``: each kind of thread's CPU seconds in the
    live phase and its share of the JVM's; empty when none was."""
    rows = [f"| {r.contender.name} | {kind} | {cpu_s:,.1f} | {share:.0%} |"
            for r in results for kind, cpu_s, share in r.live_cpu]
    if not rows:
        return ""
    return "\n".join(["| contender | threads | CPU s | share of the JVM's CPU |", "| --- | --- | ---: | ---: |", *rows])
