"""The driver plugin's warm-up (io.kplex.spark.KplexPlugin): a fresh session connects to its
catalog's brokers while Spark starts, before any statement, and only reads.

Each case starts a session in a process of its own (the plugin acts once, when a JVM's Spark
context starts) and asks the operating system, not kplex, which threads the JVM runs
(/proc/<pid>/task/*/comm): Kafka's Admin client runs one of its own. The broker is asked, with
a plain Admin client, whether the warm-up wrote anything.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

from confluent_kafka.admin import AdminClient

SESSION = """
import glob, json, sys, time
from pyspark import SparkContext
from kplex.session import kplex_session
bootstrap, metadata_topic, wait_s, statement = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
spark = kplex_session(bootstrap, master="local[1]", conf={"spark.sql.catalog.kplex.metadata_topic": metadata_topic})
pid = SparkContext._gateway.proc.pid

def threads():
    names = set()
    for comm in glob.glob(f"/proc/{pid}/task/*/comm"):
        try:
            names.add(open(comm).read().strip())
        except OSError:
            pass  # a thread that ended meanwhile
    return names

def admin_running():
    return any(name.startswith("kafka-admin") for name in threads())

deadline = time.time() + wait_s
while time.time() < deadline and not admin_running():
    time.sleep(0.05)
before = admin_running()
if statement:
    spark.sql(statement).collect()
print("ADMIN " + json.dumps({"before_any_statement": before, "after_the_statement": admin_running()}))
"""


def _session(bootstrap: str, metadata_topic: str, *, warm_up: bool, wait_s: float, statement: str = "") -> dict:
    env = {**os.environ}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop("KPLEX_WARM_UP", None)
    if not warm_up:
        env["KPLEX_WARM_UP"] = "off"
    done = subprocess.run([sys.executable, "-c", SESSION, bootstrap, metadata_topic, str(wait_s), statement],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("ADMIN "))
    return json.loads(line[len("ADMIN "):])


def _topics(bootstrap: str) -> set[str]:
    return set(AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics)


def test_a_fresh_session_connects_to_its_catalogs_brokers_before_any_statement_and_creates_nothing(
        bootstrap, fresh_name):
    metadata_topic = fresh_name("_warm_defs")
    seen = _session(bootstrap, metadata_topic, warm_up=True, wait_s=30)
    assert seen["before_any_statement"], seen
    # It only read: the catalog's definitions topic, which no statement made, is still not there.
    assert metadata_topic not in _topics(bootstrap)


def test_with_the_warm_up_turned_off_the_first_statement_is_the_first_contact(bootstrap, fresh_name):
    seen = _session(bootstrap, fresh_name("_warm_defs_off"), warm_up=False, wait_s=5,
                    statement="SHOW TABLES IN kplex")
    # What the first case saw before any statement came from the warm-up: without it, the
    # Admin client starts with the statement that needs it.
    assert seen == {"before_any_statement": False, "after_the_statement": True}
