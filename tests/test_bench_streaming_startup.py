"""bench/streaming/run.py's start-up table (tables.startup_table): each step of a Spark
contender's start-up from the marks bench/streaming/spark_query.py writes and micro-batch 0's
StreamingQueryProgress, medians over rounds, from fabricated results (nothing is run).

One kplex contender launched at t = 1000 s, in each of three rounds::

    round   imported   session   source   table   started   batch 0 starts, runs   visible
    1       1000.4     1005.0    1005.5   1005.8  1006.2    1006.3, 3.0 s          9.4 s
    2       1000.5     1004.0    1004.6   1004.8  1005.1    1005.2, 3.4 s          8.7 s
    3       1000.3     1004.5    1005.0   1005.3  1005.6    1005.7, 3.2 s          8.9 s

Steps: imports 0.4 / 0.5 / 0.3 s, session 4.6 / 3.5 / 4.2, source 0.5 / 0.6 / 0.5, table
0.3 / 0.2 / 0.3, start() 0.4 / 0.3 / 0.3, batch 0 from start() to its end 3.1 / 3.5 / 3.3;
medians 0.40, 4.20, 0.50, 0.30, 0.30, 3.30; first visible 8.9.
"""
from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "streaming"))

from contenders import select  # noqa: E402
from harness import Result  # noqa: E402
from tables import startup_steps, startup_table  # noqa: E402

KPLEX_EO, KSTREAMS = select("kplex_eo,kstreams_eos")


def kplex_round(imported: float, session: float, source: float, table: float, started: float,
                batch_start: float, batch_s: float, visible_s: float) -> Result:
    stamp = dt.datetime.fromtimestamp(batch_start, dt.timezone.utc).isoformat(timespec="milliseconds")
    progress = [{"batchId": 0, "timestamp": stamp.replace("+00:00", "Z"),
                 "durationMs": {"triggerExecution": round(batch_s * 1000), "addBatch": round(batch_s * 800)}},
                {"batchId": 1, "timestamp": stamp.replace("+00:00", "Z"), "durationMs": {"triggerExecution": 99_000}}]
    return Result(KPLEX_EO, backlog=10, started_at=1000.0, startup_s=visible_s, progress=progress,
                  phases={"imported": imported, "session": session, "source": source, "table": table,
                          "started": started})


ROUNDS = [[kplex_round(1000.4, 1005.0, 1005.5, 1005.8, 1006.2, 1006.3, 3.0, 9.4),
           Result(KSTREAMS, backlog=10, started_at=1000.0, startup_s=2.0)],
          [kplex_round(1000.5, 1004.0, 1004.6, 1004.8, 1005.1, 1005.2, 3.4, 8.7),
           Result(KSTREAMS, backlog=10, started_at=1000.0, startup_s=2.5)],
          [kplex_round(1000.3, 1004.5, 1005.0, 1005.3, 1005.6, 1005.7, 3.2, 8.9),
           Result(KSTREAMS, backlog=10, started_at=1000.0, startup_s=1.9)]]


def rows(table: str) -> dict[str, dict[str, str]]:
    lines = [[cell.strip() for cell in line.strip("|").split(" | ")] for line in table.splitlines()]
    return {cells[0]: dict(zip(lines[0], cells)) for cells in lines[2:]}


def test_each_step_runs_from_the_end_of_the_one_before():
    steps = startup_steps(ROUNDS[0][0])
    assert {k: round(v, 3) for k, v in steps.items()} == {
        "visible": 9.4, "imported": 0.4, "session": 4.6, "source": 0.5, "table": 0.3, "started": 0.4,
        # from start() returning (1006.2) to batch 0's end (1006.3 + 3.0), not its own length
        "first batch": 3.1, "first batch addBatch": 2.4}


def test_the_table_gives_each_steps_median_and_every_rounds_whole():
    table = rows(startup_table(ROUNDS))
    kplex = table["kplex streaming, exactly once"]
    assert kplex["Python imports s"] == "0.40"
    assert kplex["JVM and Spark session s"] == "4.20"
    assert kplex["source `load()` s"] == "0.50"
    assert kplex["`CREATE TABLE` s"] == "0.30"
    assert kplex["`start()` s"] == "0.30"
    assert kplex["micro-batch 0 s"] == "3.30"
    assert kplex["first record visible s"] == "8.9"
    assert kplex["per round"] == "9.4 / 8.7 / 8.9"


def test_a_contender_without_marks_has_only_its_whole_start_up():
    kstreams = rows(startup_table(ROUNDS))["Kafka Streams EOS"]
    assert kstreams["JVM and Spark session s"] == "—" and kstreams["micro-batch 0 s"] == "—"
    assert kstreams["first record visible s"] == "2.0" and kstreams["per round"] == "2.0 / 2.5 / 1.9"
