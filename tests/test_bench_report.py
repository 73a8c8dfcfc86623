"""bench/report.py's targets table: a ratio is never printed so that it reads as meeting a
target it missed, or missing one it met (nothing is run)."""
from __future__ import annotations

import doctest
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path[:0] = [str(BENCH), str(BENCH / "contenders")]  # report.py imports both, as bench/run.py does

import report  # noqa: E402


def test_a_ratio_just_under_its_target_shows_the_digit_that_misses_it():
    lines = report.ratio_table([(3_000_000, "exactly once / at least once", (0.9667, 0.974), 0.97, "")])
    assert lines[2] == "| 3,000,000 | exactly once / at least once | 0.967× | **no** | 0.97× | yes | ≥ 0.97 |"


def test_a_ratio_without_a_target_keeps_two_decimals():
    lines = report.ratio_table([(3_000_000, "ceiling in one transaction / ceiling", (1.0949, None), None, "")])
    assert lines[2] == "| 3,000,000 | ceiling in one transaction / ceiling | 1.09× | – | – | – | no target |"


def test_the_examples_in_shown_hold():
    assert doctest.testmod(report, verbose=False).failed == 0


def test_the_ceiling_with_kplex_records_splits_the_gap_to_the_ceiling():
    def row(name: str, records_per_s: float, v: int | None = None) -> report.Row:
        return report.Row(3_000_000, name, v, "", ok_run=True, records_per_s=records_per_s, cpu_s=10.0,
                          broker_cpu_s=0.0)

    rows = [row("ceiling (ProducerPerformance)", 1_000_000), row("kplex exactly_once", 400_000, 9),
            row("ceiling (ProducerPerformance, one transaction)", 1_000_000),
            row("ceiling (kplex's records, one transaction)", 800_000, 9)]
    found = {what: value for _, what, value, _, _ in report.ratios(rows, 9)}
    assert found["ceiling with kplex's records / ceiling in one transaction"][0] == 0.8
    assert found["kplex exactly-once V=9 / ceiling with kplex's records"][0] == 0.5
    assert found["kplex exactly-once V=9 / ceiling"][0] == 0.4
    without = {what for _, what, _, _, _ in report.ratios(rows[:2], 9)}
    assert "kplex exactly-once V=9 / ceiling" in without
    assert not without & {"ceiling with kplex's records / ceiling in one transaction",
                          "kplex exactly-once V=9 / ceiling with kplex's records"}


def test_every_other_round_runs_the_contenders_in_reverse_so_a_drift_favours_none():
    import runner

    chosen = ["ceiling", "kplex at_least_once", "kplex exactly_once"]
    rounds = [[name for _, name in runner.round_order(chosen, r)] for r in range(3)]
    assert rounds == [chosen, chosen[::-1], chosen]
    # each contender's index stays its own, whatever the order (the runs are kept per index)
    assert all(chosen[i] == name for r in range(3) for i, name in runner.round_order(chosen, r))


def test_the_phase_table_shows_each_contenders_medians_and_every_run():
    import eo_phases

    def run(after: float, total: float) -> dict[str, float]:
        return {"before the first job": 700, "map stage": 4000, "between the stages": 300,
                "write stage": total - 5000 - after, "after the last job": after, "total": total}

    lines = eo_phases.table({"exactly once": [run(120, 12_000), run(200, 13_000), run(100, 11_000)]})
    assert lines[2].startswith("| exactly once | 700 | 4,000 | 300 | 6,880 | 120 | 12,000 |")
    assert lines[2].endswith("| 120 / 200 / 100 | 12,000 / 13,000 / 11,000 |")


def test_the_warm_rows_are_each_their_own_ratio_to_the_ceiling_and_none_is_taken_for_the_fresh_jvm():
    def row(name: str, records_per_s: float, v: int | None = None) -> report.Row:
        return report.Row(3_000_000, name, v, "", ok_run=True, records_per_s=records_per_s, cpu_s=10.0,
                          broker_cpu_s=0.0)

    rows = [row("ceiling (ProducerPerformance)", 1_000_000), row("kplex exactly_once", 340_000, 9),
            row("kplex exactly_once (warm session)", 560_000, 9),
            row("kplex exactly_once (running server)", 580_000, 9)]
    found = {what: (value, target) for _, what, value, target, _ in report.ratios(rows, 9)}
    assert found["kplex exactly-once V=9 / ceiling"][0][0] == 0.34
    assert found["kplex exactly-once V=9, second INSERT of a session / ceiling"] == ((0.56, None), 0.5)
    assert found["kplex exactly-once V=9, a SQL file on a running server / ceiling"] == ((0.58, None), 0.5)
