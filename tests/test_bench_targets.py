"""bench/targets.py: issue #37's targets table from the two benchmarks' results, fabricated here
(no Spark, no broker: nothing is run). Each ratio is taken within a round and the figure is the
median of the rounds' ratios; a figure on the wrong side of its bound reads **no**."""
from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH / "streaming"))  # its contenders.py, not bench/contenders/


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


targets = _load("bench_targets", BENCH / "targets.py")
from contenders import select  # noqa: E402
from harness import Result  # noqa: E402
from tables import results_summary, rounds_table  # noqa: E402

KPLEX_EO, KSTREAMS = select("kplex_eo,kstreams_eos")
STARTED = dt.datetime(2026, 12, 3, 8, 0, tzinfo=dt.timezone.utc)


def batch_row(name: str, runs: list[float], v: int | None = 9, ok: bool = True) -> dict:
    return {"size": 3_000_000, "name": name, "v": v, "ok_run": ok, "runs": runs,
            "records_per_s": sorted(runs)[(len(runs) - 1) // 2]}


def batch(*rows: dict) -> dict:
    return {"meta": {"command": "python bench/run.py ...", "info": {"cpu": "2 x test"}}, "rows": list(rows)}


def stream_result(contender, sustained: float, p50: float, visible_s: float = 1.0) -> Result:
    backlog = 1_000_000
    return Result(contender, backlog=backlog, backlog_seen=backlog, startup_s=visible_s,
                  drain_s=visible_s + backlog / sustained, latencies_ms=[p50] * 60 + [p50 * 2] * 40,
                  order_checked=backlog if contender.keeps_order else 0)


def stream_summary(rounds: list[list[Result]]) -> dict:
    return results_summary(rounds, KSTREAMS.slug, command="python bench/streaming/run.py ...", started=STARTED,
                           parameters={"backlog": "1,000,000 records"}, machine={"cpu": "2 x test"})


def rows_of(text: str) -> dict[str, list[str]]:
    return {cells[0]: cells for cells in ([c.strip() for c in line.strip("|").split(" | ")]
                                          for line in text.splitlines() if line.startswith("| "))}


def test_a_batch_ratio_pairs_the_runs_of_one_round_and_takes_the_median_of_the_pairs():
    rows = [batch_row("kplex exactly_once", [300_000, 200_000, 260_000]),
            batch_row("ceiling (ProducerPerformance)", [500_000, 500_000, 700_000], v=None)]
    target = targets.batch_ratio(rows, "eo / producer", "kplex exactly_once", "ceiling (ProducerPerformance)", 0.5)
    assert target.per_round == (0.6, 0.4, 260_000 / 700_000)
    # the median of the three rounds' ratios, not 260,000 / 500,000 (the medians' ratio, 0.52)
    assert target.value == 0.4 and target.met is False


def test_unpaired_rounds_fall_back_to_the_medians_and_say_so():
    rows = [batch_row("kplex exactly_once", [300_000, 200_000]),
            batch_row("kplex at_least_once", [250_000, 210_000, 260_000])]
    target = targets.batch_ratio(rows, "eo / alo", "kplex exactly_once", "kplex at_least_once", 0.97)
    assert target.value == 200_000 / 250_000 and target.per_round == ()
    assert "do not pair up" in target.note


def test_a_contender_that_did_not_run_leaves_its_target_unjudged():
    target = targets.batch_ratio([batch_row("kplex exactly_once", [300_000])], "eo / alo", "kplex exactly_once",
                                 "kplex at_least_once", 0.97)
    assert target.value is None and target.met is None and "did not run" in target.row(judged=True)


def test_the_p50_target_is_a_bound_from_above():
    def p50_target(p50: float) -> targets.Target:
        summary = stream_summary([[stream_result(KPLEX_EO, 100_000, p50), stream_result(KSTREAMS, 50_000, 200)]])
        return next(t for t in targets.stream_targets(summary) if "p50" in t.what)

    assert p50_target(1_500).met is True
    assert p50_target(1_501).met is False
    assert "**no**" in p50_target(1_501).row(judged=True)


def test_the_summary_keeps_the_medians_rounds_table_prints():
    rounds = [[stream_result(KPLEX_EO, 90_000, 1_500), stream_result(KSTREAMS, 75_000, 250)],
              [stream_result(KPLEX_EO, 90_000, 2_000), stream_result(KSTREAMS, 60_000, 300)],
              [stream_result(KPLEX_EO, 100_000, 1_600), stream_result(KSTREAMS, 80_000, 200)]]
    summary = stream_summary(rounds)
    printed = rows_of(rounds_table(rounds, KSTREAMS.slug))["kplex streaming, exactly once"]
    assert f"{summary['medians']['kplex_eo']['ratio']:.2f}" == printed[1] == "1.25"
    assert f"{summary['medians']['kplex_eo']['p50_ms']:,.0f}" == printed[2] == "1,600"
    assert [round(r["kplex_eo"]["ratio"], 6) for r in summary["rounds"]] == [1.2, 1.5, 1.25]


def test_the_document_judges_each_target_and_a_smoke_run_judges_none():
    rounds = [[stream_result(KPLEX_EO, 120_000, 1_300, visible_s=8.0), stream_result(KSTREAMS, 50_000, 200, 3.0)]]
    results = batch(batch_row("kplex exactly_once", [240_000]), batch_row("kplex at_least_once", [235_000]),
                    batch_row("spark-sink", [90_000]), batch_row("ceiling (ProducerPerformance)", [670_000], v=None),
                    batch_row("kplex exactly_once (warm session)", [420_000]),
                    batch_row("kplex exactly_once (running server)", [300_000]))
    text = targets.document("python bench/targets.py", STARTED, 30, results, stream_summary(rounds), "b.md", "s.md",
                            smoke=False)
    table = rows_of(text)
    assert table["streaming, exactly once, sustained / Kafka Streams EOS v2"][1:5] == ["2.40x", "2.40x", "≥ 1.50x",
                                                                                      "yes"]
    assert table["streaming p50 visibility at half rate, `max_delay_ms` 1000"][1:5] == ["1,300 ms", "1,300 ms",
                                                                                       "≤ 1,500 ms", "yes"]
    assert table["batch, exactly once / at least once"][4] == "yes"
    assert table["batch, at least once / Spark's Kafka sink"][1:5] == ["2.61x", "2.61x", "≥ 2.50x", "yes"]
    assert table["batch, exactly once / Kafka's `ProducerPerformance`"][1:5] == ["0.36x", "0.36x", "≥ 0.50x",
                                                                                 "**no**"]
    assert table["batch, exactly once, second INSERT of a session / `ProducerPerformance`"][4] == "yes"
    assert table["batch, exactly once, a SQL file on a running server / `ProducerPerformance`"][1:5] == [
        "0.45x", "0.45x", "≥ 0.50x", "**no**"]
    assert table["streaming start-up, first record visible / Kafka Streams'"][1] == "2.67x"
    smoke = rows_of(targets.document("python bench/targets.py --smoke", STARTED, 5, results,
                                     stream_summary(rounds), "b.md", "s.md", smoke=True))
    assert {cells[4] for name, cells in smoke.items() if name.startswith(("batch", "streaming"))} == {"–"}


def test_the_document_counts_the_batch_rounds_apart_when_they_differ_from_the_streaming_ones():
    rounds = [[stream_result(KPLEX_EO, 120_000, 1_300), stream_result(KSTREAMS, 50_000, 200)]] * 3
    five = batch(batch_row("kplex exactly_once", [240_000, 230_000, 250_000, 220_000, 245_000]),
                 batch_row("kplex at_least_once", [235_000, 240_000, 240_000, 230_000, 250_000]))
    text = targets.document("python bench/targets.py --batch-repeat 5", STARTED, 40, five, stream_summary(rounds),
                            "b.md", "s.md", smoke=False)
    assert "the median of the rounds' (batch 5, streaming 3)" in text
    assert rows_of(text)["batch, exactly once / at least once"][2].count(" / ") == 4
    three = batch(batch_row("kplex exactly_once", [240_000, 230_000, 250_000]),
                  batch_row("kplex at_least_once", [235_000, 240_000, 240_000]))
    assert "the median of the 3 rounds'" in targets.document("python bench/targets.py", STARTED, 35, three,
                                                              stream_summary(rounds), "b.md", "s.md", smoke=False)


def _ev(kind: str, **fields) -> str:
    return json.dumps({"Event": kind, **fields})


def _insert(execution: int, t0: int, job: int, stage: int) -> list[str]:
    """An INSERT's events: two jobs of one stage each, 600 ms of planning, a 4 s map stage,
    300 ms between the stages, a 5.5 s write stage, 170 ms after the last job."""
    props = {"spark.sql.execution.id": str(execution)}
    return [_ev("org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", executionId=execution, time=t0),
            _ev("SparkListenerJobStart", **{"Job ID": job, "Stage IDs": [stage], "Properties": props}),
            _ev("SparkListenerStageCompleted", **{"Stage Info": {"Stage ID": stage, "Submission Time": t0 + 600,
                                                                "Completion Time": t0 + 4_600}}),
            _ev("SparkListenerJobEnd", **{"Job ID": job, "Completion Time": t0 + 4_610}),
            _ev("SparkListenerJobStart", **{"Job ID": job + 1, "Stage IDs": [stage + 1], "Properties": props}),
            _ev("SparkListenerStageCompleted", **{"Stage Info": {"Stage ID": stage + 1,
                                                                "Submission Time": t0 + 4_900,
                                                                "Completion Time": t0 + 10_400}}),
            _ev("SparkListenerJobEnd", **{"Job ID": job + 1, "Completion Time": t0 + 10_410}),
            _ev("org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", executionId=execution,
                time=t0 + 10_580)]


_CREATE = [_ev("org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart", executionId=0, time=0),
           _ev("org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd", executionId=0, time=300)]
_PHASES_ROW = "| kplex exactly_once | 600 | 4,000 | 300 | 5,500 | 170 | 10,580 |"


def test_insert_phases_split_the_last_insert_of_a_log_at_its_stages():
    """Two executions with jobs (an untimed INSERT, then the timed one) and a CREATE TABLE
    without: the phases are the last one's."""
    eventlog_stages = _load("bench_eventlog_stages", BENCH / "eventlog_stages.py")
    phases = eventlog_stages.insert_phases(_CREATE + _insert(1, 1_000, 0, 0) + _insert(2, 20_000, 2, 2))
    assert phases == {"total": 10_580, "before the first job": 600, "map stage": 4_000, "between the stages": 300,
                      "write stage": 5_500, "after the last job": 170}
    assert eventlog_stages.insert_phases(_CREATE) is None


@pytest.mark.parametrize("rolled", [True, False], ids=["spark 4, rolled into parts", "spark 3.5, one file"])
def test_batch_phases_read_the_event_log_bench_run_keeps_beside_a_run(tmp_path, rolled):
    """bench/run.py keeps a contender's event log in eventlog-<contender>-<output topic> beside
    the run's log; Spark 4 rolls it into numbered parts (here the INSERT starts in part 1 and ends
    in part 10, read after part 2), Spark 3.5 writes one file."""
    log = tmp_path / "kplex_eo_t1.log"
    log.write_text("")
    events = _CREATE + _insert(1, 1_000, 0, 0)
    app = tmp_path / "eventlog-kplex-kplex_eo_t1"
    if rolled:
        (app / "eventlog_v2_local-1").mkdir(parents=True)
        for n, chunk in ((1, events[:4]), (2, events[4:7]), (10, events[7:])):
            (app / "eventlog_v2_local-1" / f"events_{n}_local-1").write_text("\n".join(chunk) + "\n")
        (app / "eventlog_v2_local-1" / "appstatus_local-1").write_text("")
    else:
        app.mkdir()
        (app / "local-1").write_text("\n".join(events) + "\n")
    row = {"name": "kplex exactly_once", "size": 3_000_000, "ok_run": True, "v": 9, "log": str(log)}
    assert targets.batch_phases([row]).splitlines()[2:] == [_PHASES_ROW]
