"""Run tests again and again beside jobs that compete for the cores.

A stream test that passed once, on an idle machine, proves little: a guarantee that holds only
when micro-batches are paced one way is not one. This runs pytest ROUNDS times in a row while
HOGS busy loops (one core each) run beside it, and prints each round's tally:

    python scripts/under_load.py                                  # the stream tests, 2 rounds, 1 hog
    python scripts/under_load.py --rounds 5 --hogs 1 -- tests/test_exactly_once.py -k recovery

Everything after ``--`` goes to pytest (default: the stream test files). Each round's output is
kept in ``--logs`` (a temporary directory by default, printed). The exit status is 1 if any round
had a failure or an error, or ran no test; the hogs are stopped however the run ends.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The stream test files (test_stream_*.py and test_streaming.py), found, so that a new one is not left out.
DEFAULT_TESTS = sorted(str(path.relative_to(ROOT)) for path in ROOT.glob("tests/test_stream*.py"))
# The hogs' command line carries this, so that anyone (and the script's own test) can find them.
HOG_MARK = "kplex-under-load-hog"
_ORDER = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
_COUNT = re.compile(r"(\d+) (passed|failed|skipped|errors?|xfailed|xpassed)")


@dataclass
class Round:
    number: int
    counts: dict[str, int]
    seconds: float

    @property
    def ok(self) -> bool:
        return self.counts.get("passed", 0) > 0 and not (self.counts.get("failed") or self.counts.get("error"))


def tally(output: str) -> dict[str, int]:
    """The counts of pytest's last summary line ("3 passed, 1 failed, 2 errors in 9.1s").

    >>> tally("....F\\n== 4 passed, 1 failed, 2 errors in 9.10s ==")
    {'passed': 4, 'failed': 1, 'error': 2}
    >>> tally("no tests ran in 0.01s")
    {}
    """
    lines = [line for line in output.splitlines() if re.search(r"\bin [\d.]+s\b", line)]
    counts: dict[str, int] = {}
    for number, word in _COUNT.findall(lines[-1] if lines else ""):
        counts["error" if word.startswith("error") else word] = int(number)
    return counts


def start_hogs(count: int) -> list[subprocess.Popen]:
    """``count`` busy loops, each in a session of its own (so that a kill reaches only them)."""
    return [subprocess.Popen([sys.executable, "-c", f"# {HOG_MARK}\nwhile True:\n    pass"],
                             start_new_session=True) for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen]) -> None:
    for hog in hogs:
        if hog.poll() is None:
            os.killpg(hog.pid, signal.SIGKILL)
        hog.wait()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, pytest_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=2, help="how many times to run the tests (default 2)")
    parser.add_argument("--hogs", type=int, default=1, help="busy loops beside them, one core each (default 1)")
    parser.add_argument("--logs", type=Path, help="where each round's pytest output goes")
    args = parser.parse_args(ours)
    if args.rounds < 1 or args.hogs < 0:
        parser.error(f"--rounds must be 1 or more and --hogs 0 or more (got {args.rounds} and {args.hogs})")
    tests = pytest_args or DEFAULT_TESTS
    logs = args.logs or Path(tempfile.mkdtemp(prefix="kplex-under-load-"))
    logs.mkdir(parents=True, exist_ok=True)
    print(f"under_load: {args.rounds} round(s) of pytest {' '.join(tests)} beside {args.hogs} busy loop(s)"
          f" on {os.cpu_count()} cores; logs in {logs}", flush=True)
    rounds: list[Round] = []
    hogs = start_hogs(args.hogs)
    try:
        for number in range(1, args.rounds + 1):
            log = logs / f"round-{number}.log"
            started = time.monotonic()
            with log.open("w") as out:
                subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests],
                               cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
            done = Round(number, tally(log.read_text()), time.monotonic() - started)
            rounds.append(done)
            counts = ", ".join(f"{done.counts[w]} {w}" for w in _ORDER if w in done.counts) or "no test ran"
            print(f"round {number}: {counts} in {done.seconds / 60:.1f} min{'' if done.ok else f' (see {log})'}",
                  flush=True)
    finally:
        stop_hogs(hogs)
    bad = [r.number for r in rounds if not r.ok]
    print(f"under_load: {len(rounds) - len(bad)} of {len(rounds)} round(s) passed"
          + (f"; round(s) {', '.join(map(str, bad))} did not" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
