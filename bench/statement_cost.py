"""What a SQL statement costs on a plain and on a SASL_SSL listener, with kplex's Kafka clients
shared by the JVM's statements and without (issue #37, start-up): `python bench/statement_cost.py`.

kplex's own requests on the driver (the catalog's table lookups, the write's topic and ACL checks,
the writer's claim, the commit record, a read's partitions and offsets) go through two Admin
clients and one producer that every statement of the JVM shares (`kafka/SharedClients`). Before, each use made clients of its own and
closed them: about fifteen connections per exactly-once INSERT, and on a SASL_SSL listener each is
a TLS handshake and a SCRAM login.

Starts one local broker with both listeners (`kplex.testing.local_kafka`, `secured=True`; the
SASL_SSL one logs in as its super user), writes `--records` pageviews, then runs driver JVMs in
turn, `--processes` of each mode: `shared` (kplex now) and `per use`
(`-Dkplex.sharedClients=false`, as before). Each runs `--rounds` + 1 rounds of `CREATE TABLE`, an
exactly-once `INSERT` of the source into it and `SELECT count(*)` of the result (checked against
`--records`), on each listener; its first round warms the JVM and is not counted. Prints the
medians per statement and listener, and per use / shared, to stdout and to
`bench/RESULTS-statement-cost.md`. Compare the modes as ratios: absolute times swing between runs.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))

sys.path.insert(0, str(HERE / "contenders"))  # common.py, shared with the contender scripts

from common import positive  # noqa: E402

from kplex.testing import datagen  # noqa: E402
from kplex.testing.local_kafka import LocalKafka  # noqa: E402

MODES = {"shared": "true", "per use": "false"}
LISTENERS = {"kplex": "plain", "secured": "SASL_SSL"}
STATEMENTS = ("CREATE TABLE", "INSERT", "SELECT count(*)")

# One driver JVM: runs the rounds, prints each statement's seconds as JSON on its last line.
TIMED = """
import json, sys, time, uuid
from kplex.session import CATALOG_CLASS, kplex_session
plain, secured, source, records, rounds, shared = sys.argv[1:7]
spark = kplex_session(plain, master="local[2]", app_name="kplex-statement-cost",
                      conf={"spark.driver.extraJavaOptions": f"-Dkplex.sharedClients={shared}",
                            "spark.ui.showConsoleProgress": "false"})
spark.sparkContext.setLogLevel("ERROR")
spark.conf.set("spark.sql.catalog.secured", CATALOG_CLASS)
for key, value in json.loads(secured).items():
    spark.conf.set(f"spark.sql.catalog.secured.kafka.{key}", value)
times = {}
for round_ in range(int(rounds) + 1):
    for catalog in ("kplex", "secured"):
        table = f"cost_{uuid.uuid4().hex[:8]}"
        statements = {
            "CREATE TABLE": f"CREATE TABLE {catalog}.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '6', "
                            "'kplex.physical_partitions' = '2', 'kplex.delivery' = 'exactly_once')",
            "INSERT": f"INSERT INTO {catalog}.{table} SELECT kplex_key(kplex_json(value, '/userid')), "
                      "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value "
                      f"FROM {catalog}.{source}",
            "SELECT count(*)": f"SELECT count(*) FROM {catalog}.{table}",
        }
        for name, sql in statements.items():
            started = time.perf_counter()
            rows = spark.sql(sql).collect()
            if round_:
                times.setdefault(f"{catalog}|{name}", []).append(time.perf_counter() - started)
        if rows[0][0] != int(records):
            raise SystemExit(f"{catalog}.{table} has {rows[0][0]} records, not {records}")
spark.stop()
print("TIMES " + json.dumps(times))
"""


def timed(cluster: LocalKafka, source: str, records: int, rounds: int, shared: str) -> dict[str, list[float]]:
    """One driver JVM's statement times, by "catalog|statement"."""
    env = {**os.environ, "KPLEX_CLASS_ARCHIVE": "off"}  # the same JVM start for both modes
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    done = subprocess.run([sys.executable, "-c", TIMED, cluster.bootstrap,
                           json.dumps(cluster.client_settings("admin")), source, str(records), str(rounds), shared],
                          capture_output=True, text=True, env=env, timeout=1800)
    lines = [line for line in done.stdout.splitlines() if line.startswith("TIMES ")]
    if done.returncode or not lines:
        raise SystemExit(f"a driver JVM failed (rc {done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    return json.loads(lines[-1][len("TIMES "):])


def report(times: dict[str, dict[str, list[float]]], args: argparse.Namespace) -> str:
    out = ["| listener | statement | shared s | per use s | per use / shared |", "| --- | --- | ---: | ---: | ---: |"]
    for catalog, listener in LISTENERS.items():
        for statement in STATEMENTS:
            shared = statistics.median(times["shared"][f"{catalog}|{statement}"])
            per_use = statistics.median(times["per use"][f"{catalog}|{statement}"])
            out.append(f"| {listener} | {statement} | {shared:.3f} | {per_use:.3f} | {per_use / shared:.2f}x |")
    counted = len(times["shared"][f"kplex|{STATEMENTS[0]}"])
    return "\n".join([
        f"`python bench/statement_cost.py --records {args.records} --rounds {args.rounds} "
        f"--processes {args.processes}` ({dt.datetime.now():%Y-%m-%d %H:%M}, {os.cpu_count()} cores, "
        "one local broker with a plain and a SASL_SSL listener, `local[2]`): the median of "
        f"{counted} statements per cell, {args.processes} driver JVMs per mode in turn, each JVM's first round "
        "not counted.", "", *out, ""])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=positive, default=2000, help="pageviews in the source")
    p.add_argument("--rounds", type=positive, default=4, help="counted rounds per driver JVM")
    p.add_argument("--processes", type=positive, default=2, help="driver JVMs per mode")
    p.add_argument("--out", type=Path, default=HERE / "RESULTS-statement-cost.md")
    args = p.parse_args(argv)
    times: dict[str, dict[str, list[float]]] = {mode: {} for mode in MODES}
    with LocalKafka(brokers=1, secured=True) as cluster:
        datagen.generate_pageviews(cluster.bootstrap, "cost_pageviews", args.records, partitions=3, users=11, seed=7)
        for i in range(args.processes):
            for mode, shared in MODES.items():
                print(f"driver JVM {i + 1} of {args.processes}, {mode}", file=sys.stderr, flush=True)
                for key, values in timed(cluster, "cost_pageviews", args.records, args.rounds, shared).items():
                    times[mode].setdefault(key, []).extend(values)
    text = report(times, args)
    print(text)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
