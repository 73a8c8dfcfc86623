"""scripts/under_load.py: the tests it runs see its busy loops running beside them (read from
/proc, not from the script), a failing round makes it exit 1, and no busy loop outlives it."""
from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "under_load.py"
MARK = "kplex-under-load-hog"


def hogs_running() -> int:
    found = 0
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            found += MARK in cmdline.read_bytes().decode(errors="replace")
        except OSError:
            pass
    return found


# The inner test counts the running busy loops by their command line, with the function above.
# One loop, not two: in CI the other Spark lines' stream runs beside the main suite, and two loops
# would take both cores from it.
INNER = f'''
from pathlib import Path

MARK = {MARK!r}


{inspect.getsource(hogs_running)}

def test_the_hog_runs_beside_me():
    assert hogs_running() == 1


def test_{{outcome}}():
    assert {{outcome!r}} == "passes"
'''


def run(tmp_path: Path, outcome: str) -> subprocess.CompletedProcess:
    tests = tmp_path / f"test_inner_{outcome}.py"
    tests.write_text(INNER.format(outcome=outcome))
    return subprocess.run([sys.executable, str(SCRIPT), "--rounds", "2", "--hogs", "1", "--logs",
                           str(tmp_path / "logs"), "--", str(tests)],
                          capture_output=True, text=True, timeout=300)


def test_every_round_runs_beside_the_busy_loops_and_none_outlives_the_script(tmp_path):
    done = run(tmp_path, "passes")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "round 1: 2 passed" in done.stdout and "round 2: 2 passed" in done.stdout
    assert "2 of 2 round(s) passed" in done.stdout
    assert (tmp_path / "logs" / "round-2.log").read_text().count("passed") >= 1
    assert hogs_running() == 0


def test_a_failing_round_fails_the_run_and_names_its_log(tmp_path):
    done = run(tmp_path, "fails")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "round 1: 1 passed, 1 failed" in done.stdout
    assert str(tmp_path / "logs" / "round-1.log") in done.stdout
    assert "0 of 2 round(s) passed; round(s) 1, 2 did not" in done.stdout
    assert hogs_running() == 0


def test_a_run_that_collects_no_test_fails(tmp_path):
    empty = tmp_path / "test_empty.py"
    empty.write_text("")
    done = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "1", "--hogs", "0", "--", str(empty)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "round 1: no test ran" in done.stdout, done.stdout


def test_bad_counts_are_refused_by_name():
    done = subprocess.run([sys.executable, str(SCRIPT), "--rounds", "0"], capture_output=True, text=True)
    assert done.returncode == 2 and "--rounds must be 1 or more" in done.stderr
