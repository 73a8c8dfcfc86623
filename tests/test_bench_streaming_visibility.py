"""bench/streaming/run.py's *where the p50 goes* (tables.visibility_row): the p50 the live
micro-batches alone give, from their progress (no Spark, no broker: fabricated progress).

A record is visible at the end of the micro-batch whose watermark passes it. With micro-batches
of 400 ms, each reading 10 ms after its trigger and holding its watermark 1,020 ms behind that
read, micro-batch i releases the records between its watermark and the one before, 400 ms of
event time, all at its end: their latencies spread evenly over 1,410-1,810 ms, median 1,610
(1,020 + 400 / 2 + 390).
"""
from __future__ import annotations

import datetime as dt
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "streaming"))

from contenders import select  # noqa: E402
from harness import Result  # noqa: E402
from run import SETTLE_S, parse_args  # noqa: E402
from tables import VISIBILITY_HEADER, released_p50, results_document, visibility_row  # noqa: E402

(KPLEX_EO,) = select("kplex_eo")
LIVE_AT = 1_800_000_000.0  # s
BACKLOG_WATERMARK = 1_500_000_000_000  # ms: the backlog's viewtimes are years older


def progress(triggered_ms: float, duration_ms: int, watermark_ms: float, rows: int = 1000) -> dict:
    """One micro-batch's StreamingQueryProgress, as the kplex sink reports it (the parts read)."""
    stamp = dt.datetime.fromtimestamp(triggered_ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds")
    return {"timestamp": stamp.replace("+00:00", "Z"), "numInputRows": rows,
            "durationMs": {"triggerExecution": duration_ms},
            "sources": [{"endOffset": {"pageviews": {"0": 1}, "kplex.at": int(triggered_ms) + 10}}],
            "sink": {"metrics": {"watermark": str(int(watermark_ms)), "rowsPerVirtualPartition": '{"0": 1}'}}}


def steady(durations: list[int], lag_ms: int = 1020) -> list[dict]:
    """Micro-batches one after another from the live phase's start, each of its duration."""
    out, at = [], LIVE_AT * 1000
    for d in durations:
        out.append(progress(at, d, at + 10 - lag_ms))
        at += d
    return out


def result(batches: list[dict], measured_p50: float | None) -> Result:
    r = Result(KPLEX_EO, backlog=1, backlog_seen=1, latencies_ms=[] if measured_p50 is None else [measured_p50])
    r.progress, r.live_started_at = batches, LIVE_AT
    return r


def cells(row: tuple[str, ...]) -> dict[str, str]:
    return dict(zip(VISIBILITY_HEADER, row))


def test_steady_micro_batches_give_the_watermark_lag_half_a_batch_and_the_read_to_the_end():
    row = cells(visibility_row(result(steady([400] * 20), 1_700)))
    assert row["watermark behind the read ms"] == "1,020"
    assert row["micro-batch ms"] == "400"
    assert row["read to end ms"] == "390"
    assert row["expected p50 ms"] == "1,610"
    assert row["measured p50 ms"] == "1,700"
    assert row["rest ms"] == "90"


def test_the_backlogs_batches_and_a_watermark_still_in_the_backlogs_time_release_no_live_record():
    backlog = [progress(LIVE_AT * 1000 - 3000 + 1000 * i, 900, BACKLOG_WATERMARK, rows=100_000) for i in range(3)]
    stuck = progress(LIVE_AT * 1000, 400, BACKLOG_WATERMARK)  # a partition without a live record yet
    live = steady([400] * 10)
    for p in live:  # after the stuck one
        p["timestamp"] = (dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
                          + dt.timedelta(milliseconds=400)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        p["sources"][0]["endOffset"]["kplex.at"] += 400
        p["sink"]["metrics"]["watermark"] = str(int(p["sink"]["metrics"]["watermark"]) + 400)
    row = cells(visibility_row(result(backlog + [stuck] + live, 1_650)))
    assert row["expected p50 ms"] == "1,610"
    assert row["live batches"] == "11"


def test_slow_micro_batches_weigh_by_the_records_they_release():
    """Half the micro-batches take 200 ms, half 800: the slow ones release four times the
    records, so the p50 is not the median batch's. Checked against a record-by-record count."""
    rng = random.Random(5)
    durations = [rng.choice([200, 800]) for _ in range(200)]
    batches = steady(durations)
    row = cells(visibility_row(result(batches, None)))
    # Each ms of event time is one record, released at the end of the first batch whose watermark passes it.
    latencies, start = [], None
    for p in batches:
        end = dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp() * 1000 + p["durationMs"]["triggerExecution"]
        after = float(p["sink"]["metrics"]["watermark"])
        if start is not None:
            latencies += [end - v for v in range(int(start) + 1, int(after) + 1)]
        start = after
    latencies.sort()
    by_record = latencies[len(latencies) // 2]
    expected = float(row["expected p50 ms"].replace(",", ""))
    assert abs(expected - by_record) <= 2, (expected, by_record)
    mean_batch = 1020 + 500 / 2 + 490  # what a batch of the mean duration (500 ms) would give
    assert expected > mean_batch + 100
    assert row["measured p50 ms"] == "—" and row["rest ms"] == "—"


def test_released_p50_of_one_span_is_its_middle_and_nothing_released_is_none():
    assert abs(released_p50([(10_000.0, 8_000.0, 8_600.0)]) - 1_700) < 1e-6
    assert released_p50([]) is None
    assert released_p50([(10_000.0, 8_000.0, 8_000.0)]) is None


def test_results_document_shows_the_table_under_the_per_batch_breakdown():
    r = result(steady([400] * 20), 1_700)
    r.backlog_seen = r.backlog
    doc = results_document([r], "kstreams_eos", command="python bench/streaming/run.py", started=dt.datetime(2026, 12, 2),
                           parameters={}, machine={})
    assert "Where the p50 goes" in doc
    assert "| kplex streaming, exactly once | 20 | 1,020 | 400 | 390 | 1,610 | 1,700 | 90 |" in doc


def test_with_settling_seconds_only_the_micro_batches_after_them_are_measured_and_both_are_shown():
    """``--settle``: the live phase's first micro-batches (slow, 800 ms) are the settling ones; the
    visibility row reads only the later ones (400 ms), the breakdown shows both phases, and the
    results table gives the settling records' p50 beside the measured one."""
    settling, measured = steady([800] * 10), steady([400] * 20)
    for p in measured:  # after the settling ones
        p["timestamp"] = (dt.datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00"))
                          + dt.timedelta(seconds=8)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        p["sources"][0]["endOffset"]["kplex.at"] += 8000
        p["sink"]["metrics"]["watermark"] = str(int(p["sink"]["metrics"]["watermark"]) + 8000)
    r = result(settling + measured, 1_700)
    r.backlog_seen, r.measured_from, r.settling_latencies_ms = r.backlog, LIVE_AT + 8, [2_400.0]
    row = cells(visibility_row(r))
    assert row["live batches"] == "20"
    assert row["micro-batch ms"] == "400"
    assert row["expected p50 ms"] == "1,610"
    doc = results_document([r], "kstreams_eos", command="python bench/streaming/run.py", started=dt.datetime(2026, 12, 2),
                           parameters={}, machine={})
    assert "| p50 ms | p99 ms | p50 ms while settling |" in doc
    assert "| 1,700 | 1,700 | 2,400 |" in doc
    phases = [line.split(" | ")[1] for line in doc.splitlines() if line.startswith("| kplex streaming, exactly once | ")
              and line.split(" | ")[1] in ("backlog", "settling", "live")]
    assert phases == ["settling", "live"]


def test_without_settling_seconds_the_table_has_no_settling_column():
    r = result(steady([400] * 20), 1_700)
    r.backlog_seen = r.backlog
    doc = results_document([r], "kstreams_eos", command="python bench/streaming/run.py", started=dt.datetime(2026, 12, 2),
                           parameters={}, machine={})
    header = next(line for line in doc.splitlines() if line.startswith("| contender | guarantee |"))
    assert "| p50 ms | p99 ms | start-up s |" in header


def test_settling_seconds_default_to_90_smoke_runs_none_and_a_negative_count_is_refused(capsys):
    assert parse_args([]).settle == SETTLE_S == 90.0
    assert parse_args(["--smoke"]).settle == 0.0
    with pytest.raises(SystemExit):
        parse_args(["--settle", "-1"])
    assert "--settle: at least 0 seconds, not -1" in capsys.readouterr().err
