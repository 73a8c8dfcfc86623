"""``kplex status``: a table's state in one place, checked against the broker through other doors.

Counts and high marks against what a plain consumer reads; an open transaction made by a
plain transactional producer under the table's id scheme, seen as open, then gone after
``kplex recover`` fenced it; the CLI's JSON equal to the library's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from confluent_kafka import Producer
from read_support import INSERT, pageviews

from kplex.admin import recover
from kplex.status import render, status
from kplex.testing import verify

ROOT = Path(__file__).resolve().parents[1]


def written_table(spark, bootstrap: str, fresh_name) -> str:
    source, table = fresh_name("status_src"), fresh_name("status")
    pageviews(bootstrap, source, 400)
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '6',"
              " 'kplex.physical_partitions' = '3')")
    spark.sql(INSERT.format(target=table, source=source))
    return table


def test_status_counts_and_marks_what_a_plain_consumer_reads(spark, bootstrap, fresh_name):
    table = written_table(spark, bootstrap, fresh_name)
    state = status(bootstrap, table, count=True)
    records = verify.read_topic(bootstrap, table)
    counts = Counter(str(int(r.headers["kplex.vp"])) for r in records)
    highs: dict[str, int] = {}
    for r in records:
        vp = str(int(r.headers["kplex.vp"]))
        highs[vp] = max(highs.get(vp, -2**63), int(r.headers["kplex.order"]))
    assert state["kind"] == "kplex-written" and state["topic"] == table
    assert state["definition"]["kplex.virtual_partitions"] == "6"
    assert state["records_per_virtual_partition"] == dict(counts)
    assert state["high_order_per_virtual_partition"] == highs
    per_partition = Counter(r.partition for r in records)
    for p in state["partitions"]:
        # Each partition holds its records and one commit marker of the INSERT's transaction(s).
        assert p["last_stable_offset"] == p["end_offset"] >= per_partition[p["partition"]]
    assert state["writer_claim"] is None and state["pending_commit"] is None
    assert state["open_transactions"] == [] and state["partial_commits"] == []
    assert [q["kind"] for q in state["streams"]] == ["batch INSERTs"]
    assert "writer claim: free" in render(state)


def test_an_open_transaction_of_the_table_is_listed_until_recover_fences_it(spark, bootstrap, fresh_name):
    table = written_table(spark, bootstrap, fresh_name)
    txn_id = f"kplex.{table}.7.0.0"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(table, value=b"never committed", partition=0)
    assert producer.flush(30) == 0
    state = status(bootstrap, table)
    assert [t["transactional_id"] for t in state["open_transactions"]] == [txn_id]
    assert state["open_transactions"][0]["state"] == "Ongoing"
    stable = {p["partition"]: p["last_stable_offset"] for p in state["partitions"]}
    ends = {p["partition"]: p["end_offset"] for p in state["partitions"]}
    assert stable[0] < ends[0]  # the open transaction pins partition 0's last stable offset
    recover(bootstrap, table)
    after = status(bootstrap, table)
    assert after["open_transactions"] == []
    assert all(p["last_stable_offset"] == p["end_offset"] for p in after["partitions"])


def test_the_cli_prints_the_state_as_json(spark, bootstrap, fresh_name):
    table = written_table(spark, bootstrap, fresh_name)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), KPLEX_BOOTSTRAP=bootstrap)
    done = subprocess.run([sys.executable, "-m", "kplex", "status", table, "--json", "--count"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)
    assert got["records_per_virtual_partition"] == status(bootstrap, table, count=True)["records_per_virtual_partition"]
    assert sum(got["records_per_virtual_partition"].values()) == 400


def test_an_unknown_table_is_named(spark, bootstrap):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), KPLEX_BOOTSTRAP=bootstrap)
    done = subprocess.run([sys.executable, "-m", "kplex", "status", "no_such_status_table"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 2 and "no_such_status_table" in done.stderr, done.stderr[-3000:]


def group_tool(bootstrap: str, *args: str) -> str:
    """Kafka's own ``kafka-consumer-groups.sh`` (its class, from the broker's jars)."""
    from kplex.testing.local_kafka import kafka_libs

    done = subprocess.run(["java", "-cp", f"{kafka_libs()}/*", "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
                           "--bootstrap-server", bootstrap, *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def describe_group(bootstrap: str, group: str) -> dict[int, tuple[int, int]]:
    """``--describe --group``: per source partition (committed offset, lag)."""
    out = {}
    for line in group_tool(bootstrap, "--describe", "--group", group).splitlines():
        cols = line.split()
        if len(cols) >= 6 and cols[0] == group and cols[2].isdigit():
            out[int(cols[2])] = (int(cols[3]), int(cols[5]))
    return out


def streamed(spark, source: str, table: str, checkpoint: Path, **options: str):
    """A Trigger.AvailableNow run of the pageviews job from ``source`` into ``table``, to its end."""
    from test_streaming import SELECT

    reader = spark.readStream.format("kplex").option("table", source).option("releaseAtEnd", "true")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load().selectExpr(*SELECT).writeStream.format("kplex").option("table", table)
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(300)
    return query


def test_a_streaming_query_shows_its_lag_to_kafkas_own_group_tool_and_to_status(spark, bootstrap, fresh_name,
                                                                                tmp_path):
    source, table = fresh_name("lag_src"), fresh_name("lag")
    pageviews(bootstrap, source, 300)
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '6',"
              " 'kplex.physical_partitions' = '3')")
    query = streamed(spark, source, table, tmp_path / "chk", maxOffsetsPerTrigger="100")
    group = f"kplex.{table}.{query.id}"
    source_sizes = Counter(r.partition for r in verify.read_topic(bootstrap, source))
    assert describe_group(bootstrap, group) == {p: (n, 0) for p, n in source_sizes.items()}
    # Behind by what arrives while no query runs.
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(30):
        producer.produce(source, value=b'{"userid":"User_1","viewtime":1565606500000}', partition=i % 3)
    assert producer.flush(30) == 0
    assert sum(lag for _, lag in describe_group(bootstrap, group).values()) == 30
    stream_state = next(q for q in status(bootstrap, table)["streams"] if q["query"] == str(query.id))
    assert stream_state["monitor_group"] == group and stream_state["total_lag"] == 30


def test_monitor_group_false_commits_to_no_group(spark, bootstrap, fresh_name, tmp_path):
    source, table = fresh_name("nolag_src"), fresh_name("nolag")
    pageviews(bootstrap, source, 60)
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    streamed(spark, source, table, tmp_path / "chk", monitorGroup="false")
    assert len(verify.read_topic(bootstrap, table)) == 60
    assert table not in group_tool(bootstrap, "--list")
