"""bench/streaming/run.py --repeat: the summary of several rounds (tables.rounds_table) and where
RESULTS.md puts it, from fabricated results (no Spark, no broker: nothing is run).

Three rounds of kplex exactly once against Kafka Streams EOS, the baseline::

    round   kstreams_eos rec/s   kplex_eo rec/s   ratio   kplex_eo p50 / p99 ms
    1       75,000               90,000           1.20    1,500 / 2,000
    2       60,000               90,000           1.50    2,000 / 2,600
    3       80,000               100,000          1.25    1,600 / 2,100

The median ratio is 1.25, the median of the three ratios; dividing the median rates would give
1.20 (90,000 / 75,000), which mixes the rounds' machines.
"""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "streaming"))

from contenders import Contender, select  # noqa: E402
from harness import Result  # noqa: E402
from tables import results_document, rounds_table  # noqa: E402

KPLEX_EO, KSTREAMS = select("kplex_eo,kstreams_eos")
BASELINE = KSTREAMS.slug


def result(contender: Contender, sustained: float, p50: float | None, p99: float | None, ok: bool = True) -> Result:
    """A result with this sustained rate (1M records after a 1 s start-up) and these nearest-rank
    percentiles (half the live records at p50, half at p99); ``ok=False``: records missing."""
    backlog = 1_000_000
    latencies = [p50] * 50 + [p99] * 50 if p50 is not None and p99 is not None else []
    return Result(contender, backlog=backlog, backlog_seen=backlog, startup_s=1.0, drain_s=1.0 + backlog / sustained,
                  latencies_ms=latencies, order_checked=backlog if contender.keeps_order else 0,
                  missing=0 if ok else 10)


def three_rounds() -> list[list[Result]]:
    return [[result(KPLEX_EO, 90_000, 1_500, 2_000), result(KSTREAMS, 75_000, 250, 500)],
            [result(KPLEX_EO, 90_000, 2_000, 2_600), result(KSTREAMS, 60_000, 300, 600)],
            [result(KPLEX_EO, 100_000, 1_600, 2_100), result(KSTREAMS, 80_000, 200, 450)]]


def rows(table: str) -> dict[str, dict[str, str]]:
    """The table's rows by their first cell, each a dict from column name to cell."""
    lines = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table.splitlines()]
    header, body = lines[0], lines[2:]
    return {cells[0]: dict(zip(header, cells)) for cells in body}


@pytest.mark.parametrize("name, column, cell", [
    ("kplex streaming, exactly once", "median ratio to Kafka Streams EOS", "1.25"),
    ("kplex streaming, exactly once", "median p50 ms", "1,600"),
    ("kplex streaming, exactly once", "median p99 ms", "2,100"),
    ("kplex streaming, exactly once", "median sustained rec/s", "90,000"),
    ("kplex streaming, exactly once", "ratio per round", "1.20 / 1.50 / 1.25"),
    ("kplex streaming, exactly once", "p50 ms per round", "1,500 / 2,000 / 1,600"),
    ("kplex streaming, exactly once", "p99 ms per round", "2,000 / 2,600 / 2,100"),
    ("kplex streaming, exactly once", "sustained rec/s per round", "90,000 / 90,000 / 100,000"),
    ("Kafka Streams EOS", "median ratio to Kafka Streams EOS", "1.00"),
    ("Kafka Streams EOS", "ratio per round", "1.00 / 1.00 / 1.00"),
    ("Kafka Streams EOS", "median p50 ms", "250"),
    ("Kafka Streams EOS", "median sustained rec/s", "75,000"),
])
def test_each_contender_has_the_medians_across_rounds_and_each_rounds_figures(name: str, column: str, cell: str):
    assert rows(rounds_table(three_rounds(), BASELINE))[name][column] == cell


def test_the_medians_come_first_after_the_contender_then_the_rounds():
    header = rounds_table(three_rounds(), BASELINE).splitlines()[0]
    assert header == ("| contender | median ratio to Kafka Streams EOS | median p50 ms | median p99 ms"
                      " | median sustained rec/s | ratio per round | p50 ms per round | p99 ms per round"
                      " | sustained rec/s per round |")


def test_a_failed_round_is_named_and_a_figure_a_round_lacks_is_left_out_of_the_median():
    rounds = three_rounds()
    rounds[1][0] = result(KPLEX_EO, 90_000, None, None, ok=False)  # round 2: no live latencies, records missing
    row = rows(rounds_table(rounds, BASELINE))["kplex streaming, exactly once (**failed in round 2**)"]
    assert row["p50 ms per round"] == "1,500 / — / 1,600"
    assert row["median p50 ms"] == "1,550"
    assert row["median ratio to Kafka Streams EOS"] == "1.25"


def test_without_the_baseline_there_are_no_ratios():
    row = rows(rounds_table([[r] for r, _ in three_rounds()], BASELINE))["kplex streaming, exactly once"]
    assert row["median ratio to kstreams_eos"] == "—"
    assert row["ratio per round"] == "— / — / —"


def document(rounds: list[list[Result]]) -> str:
    return results_document(rounds[-1], BASELINE, command="python bench/streaming/run.py --repeat 3",
                            started=dt.datetime(2026, 11, 27, 6, 21, tzinfo=dt.timezone.utc),
                            parameters={"backlog": "1,000,000 records"}, machine={"cpu": "2"}, rounds=rounds)


def test_results_md_puts_the_summary_of_several_rounds_above_the_last_rounds_full_table():
    text = document(three_rounds())
    summary = text.index("| contender | median ratio to Kafka Streams EOS |")
    full = text.index("| contender | guarantee | sustained rec/s |")
    assert text.index("Medians over 3 rounds of this same command") < summary < full
    assert "| kplex streaming, exactly once | exactly once, per-vp order | 100,000 | 1.25 |" in text[full:]


def test_results_md_of_one_round_has_no_summary():
    text = document(three_rounds()[:1])
    assert "rounds of this same command" not in text and "| contender | guarantee | sustained rec/s |" in text
