"""What the JVM class archive (kplex.class_archive) or the driver plugin's warm-up
(io.kplex.spark.KplexPlugin) saves a local kplex session: alternating fresh processes with and
without it, each timing ``kplex_session(...)``, its first statement (``SHOW TABLES IN kplex``,
which plans through the catalog and asks the broker), a table's first write (``CREATE TABLE``
and an exactly-once ``INSERT`` of one row: the topic, the definition, the claim, the commit) and
the process from start to exit. Prints a table of medians and every run.

    python bench/session_start.py --rounds 5            # its own broker and archive, in a temp dir
    python bench/session_start.py --bootstrap B --workdir /tmp/ss
    python bench/session_start.py --compare warm-up     # both with the archive; KPLEX_WARM_UP=off or not

The archive is written first, by one process whose session runs the same statements, as a
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
import json, sys, time, uuid
started = time.time()
from kplex.session import kplex_session
spark = kplex_session(sys.argv[1], master="local[2]")
session = time.time()
spark.sql("SHOW TABLES IN kplex").collect()
first = time.time()
table = "session_start_" + uuid.uuid4().hex[:8]
spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3', "
          "'kplex.physical_partitions' = '1')")
spark.sql(f"INSERT INTO kplex.{table} SELECT kplex_key('k'), kplex_order(1L), CAST('v' AS BINARY)")
print("TIMES " + json.dumps({"session_s": session - started, "first_statement_s": first - session,
                             "first_write_s": time.time() - first}))
"""
#: What each comparison runs: its two rows' names, and each row's (class archive, KPLEX_WARM_UP).
COMPARES = {
    "archive": {"without (KPLEX_CLASS_ARCHIVE=off)": ("off", None), "with the archive": ("archive", None)},
    "warm-up": {"without the warm-up (KPLEX_WARM_UP=off)": ("archive", "off"),
                "with the warm-up": ("archive", None)},
}
KEYS = ("session_s", "first_statement_s", "first_write_s", "process_s")


def one(bootstrap: str, archives: str, warm_up: str | None = None) -> dict[str, float]:
    env = {**os.environ, ENV: archives}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop("KPLEX_WARM_UP", None)
    if warm_up:
        env["KPLEX_WARM_UP"] = warm_up
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
    p.add_argument("--compare", choices=sorted(COMPARES), default="archive",
                   help="archive: with and without the class archive; warm-up: with and without the "
                        "driver plugin's warm-up, both with the archive")
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
        rows = COMPARES[args.compare]
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in rows}
        for _ in range(args.rounds):
            for name, (where, warm_up) in rows.items():
                runs[name].append(one(bootstrap, archives if where == "archive" else where, warm_up))
    print("| JVM | session s | first statement s | first write s | process s "
          "| each run: session / first statement / first write / process |")
    print("| --- | ---: | ---: | ---: | ---: | --- |")
    for name, each in runs.items():
        medians = " | ".join(f"{statistics.median(r[k] for r in each):.2f}" for k in KEYS)
        detail = ", ".join("/".join(f"{r[k]:.2f}" for k in KEYS) for r in each)
        print(f"| {name} | {medians} | {detail} |")
    print("| writing the archive (a machine's first session, once) | "
          + " | ".join(f"{first[k]:.2f}" for k in KEYS) + " | 1 run |")


if __name__ == "__main__":
    main()
