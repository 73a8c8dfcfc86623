"""What the JVM class archive (kplex.class_archive) saves a local kplex session: alternating
fresh processes with and without it, each timing ``kplex_session(...)``, its first statement
(``SHOW TABLES IN kplex``, which plans through the catalog and asks the broker) and the
process from start to exit. Prints a table of medians and every run.

    python bench/session_start.py --rounds 5            # its own broker and archive, in a temp dir
    python bench/session_start.py --bootstrap B --workdir /tmp/ss

The archive is written first, by one process whose session runs the same statement, as a
machine's first kplex session does; its times are the table's last row.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "contenders"))  # common.py, shared with the contender scripts

from common import positive  # noqa: E402

from kplex.class_archive import ENV  # noqa: E402

SESSION = """
import json, sys, time
started = time.time()
from kplex.session import kplex_session
spark = kplex_session(sys.argv[1], master="local[2]")
session = time.time()
spark.sql("SHOW TABLES IN kplex").collect()
print("TIMES " + json.dumps({"session_s": session - started, "first_statement_s": time.time() - session}))
"""


def one(bootstrap: str, archives: str) -> dict[str, float]:
    env = {**os.environ, ENV: archives}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", SESSION, bootstrap], capture_output=True, text=True, env=env,
                          timeout=600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"the session failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    line = next(li for li in done.stdout.splitlines() if li.startswith("TIMES "))
    return {**json.loads(line[len("TIMES "):]), "process_s": wall}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap", default=os.environ.get("KPLEX_BOOTSTRAP"),
                   help="a broker (default: $KPLEX_BOOTSTRAP, else a local one started here)")
    p.add_argument("--rounds", type=positive, default=5)
    p.add_argument("--workdir", type=Path)
    args = p.parse_args()
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="kplex-session-start-"))).resolve()
    archives = str(workdir / "class-archives")
    with ExitStack() as stack:
        bootstrap = args.bootstrap
        if not bootstrap:
            from kplex.testing.local_kafka import LocalKafka

            bootstrap = stack.enter_context(LocalKafka(brokers=1, workdir=workdir / "broker")).bootstrap
        print(f"writing the class archive in {archives}", file=sys.stderr)
        first = one(bootstrap, archives)
        if not list(Path(archives).glob("*.jsa")):
            sys.exit(f"no class archive was written in {archives}")
        runs: dict[str, list[dict[str, float]]] = {"without (KPLEX_CLASS_ARCHIVE=off)": [], "with the archive": []}
        for _ in range(args.rounds):
            for name, where in zip(runs, ("off", archives)):
                runs[name].append(one(bootstrap, where))
    print("| JVM | session s | first statement s | process s | each run: session / first statement / process |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, each in runs.items():
        medians = [statistics.median(r[k] for r in each) for k in ("session_s", "first_statement_s", "process_s")]
        detail = ", ".join(f"{r['session_s']:.2f}/{r['first_statement_s']:.2f}/{r['process_s']:.2f}" for r in each)
        print(f"| {name} | {medians[0]:.2f} | {medians[1]:.2f} | {medians[2]:.2f} | {detail} |")
    print(f"| writing the archive (a machine's first session, once) | {first['session_s']:.2f} | "
          f"{first['first_statement_s']:.2f} | {first['process_s']:.2f} | 1 run |")


if __name__ == "__main__":
    main()
