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
