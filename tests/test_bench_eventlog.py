"""bench/eventlog_stages.py --stages: a batch job's stages and their tasks from Spark's event
log, here a fabricated one (nothing is run). Two stages, times in ms since the epoch::

    stage 0: tasks launched at 1000 and 1000, finished 1500 and 2000, run 480 and 990 ms
             on 450 and 400 ms of CPU
    stage 2: one task launched at 2300, finished 2700, run 390 ms on 300.4 ms of CPU
    (stage 1 was skipped: no task of it ends in the log)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from eventlog_stages import event_lines, main, stage_tasks  # noqa: E402


def task_end(stage: int, launch: int, finish: int, run_ms: int, cpu_ns: int) -> str:
    return json.dumps({"Event": "SparkListenerTaskEnd", "Stage ID": stage,
                       "Task Info": {"Launch Time": launch, "Finish Time": finish},
                       "Task Metrics": {"Executor Run Time": run_ms, "Executor CPU Time": cpu_ns}})


LOG = [json.dumps({"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 990, "Stage IDs": [0]}),
       task_end(2, 2300, 2700, 390, 300_400_000), task_end(0, 1000, 2000, 990, 400_000_000),
       task_end(0, 1000, 1500, 480, 450_000_000)]


def test_each_stage_from_its_first_launch_to_its_last_finish_with_its_tasks_run_and_cpu_times_by_run():
    assert stage_tasks(LOG) == [
        {"stage": 0, "tasks": 2, "from s": 0.0, "to s": 1.0, "run ms": [480, 990], "cpu ms": [450, 400]},
        {"stage": 2, "tasks": 1, "from s": 1.3, "to s": 1.7, "run ms": [390], "cpu ms": [300]}]


def test_the_command_prints_them_as_a_table(tmp_path, capsys):
    log = tmp_path / "events_1_local"
    log.write_text("\n".join(LOG) + "\n")
    assert main(["--stages", str(log)]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == ["| 0 | 2 | 0.00 | 1.00 | 480 (450), 990 (400) |",
                                                        "| 2 | 1 | 1.30 | 1.70 | 390 (300) |"]


def test_a_rolled_log_is_read_from_its_directory_part_by_part(tmp_path, capsys):
    # Spark 4 rolls a log into eventlog_v2_<app>/events_<n>_<app>; part 10 comes after part 2.
    app = tmp_path / "eventlog-kplex-T" / "eventlog_v2_local-1"
    app.mkdir(parents=True)
    (app / "appstatus_local-1").write_text("")
    (app / "events_1_local-1").write_text("\n".join(LOG[:2]) + "\n")
    (app / "events_2_local-1").write_text(LOG[2] + "\n")
    (app / "events_10_local-1").write_text(LOG[3] + "\n")
    assert event_lines(tmp_path / "eventlog-kplex-T") == LOG
    assert main(["--stages", str(tmp_path / "eventlog-kplex-T")]) == 0
    assert capsys.readouterr().out.splitlines()[2:] == ["| 0 | 2 | 0.00 | 1.00 | 480 (450), 990 (400) |",
                                                        "| 2 | 1 | 1.30 | 1.70 | 390 (300) |"]


def test_a_directory_of_two_applications_logs_is_refused_naming_both(tmp_path):
    for app in ("eventlog_v2_local-1", "eventlog_v2_local-2"):
        (tmp_path / app).mkdir()
        (tmp_path / app / f"events_1_{app[12:]}").write_text(LOG[0] + "\n")
    with pytest.raises(SystemExit, match="more than one application.*local-1.*local-2"):
        main(["--stages", str(tmp_path)])
