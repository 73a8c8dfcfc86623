"""``kplex status``: a table's state in one place, checked against the broker through other doors.

Counts and high marks against what a plain consumer reads; an open transaction made by a
plain transactional producer under the table's id scheme, seen as open, then gone after
``kplex recover`` fenced it; the CLI's JSON equal to the library's. The same state in SQL:
``DESCRIBE TABLE EXTENDED`` appends it below Spark's own rows; plain ``DESCRIBE`` is Spark's.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from read_support import INSERT, described_high_marks, pageviews, produce

from kplex.admin import recover
from kplex.cli import main
from kplex.errors import NotAKplexTableError, UnknownTableError
from kplex.kafka.clients import consume, consumer
from kplex.status import control_plane_partition, count_per_virtual_partition, render, status
from kplex.streaming import recent_progress
from kplex.testing import datagen, verify

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
    # The count ends once the last records are read, not when the stall timeout is up (librdkafka's
    # consume() waits for a whole batch of 1000 or its whole timeout).
    started = time.monotonic()
    counted = count_per_virtual_partition(bootstrap, table, timeout=60)
    assert {str(vp): n for vp, n in counted.items()} == dict(counts) and time.monotonic() - started < 30


def test_a_read_with_nothing_more_to_come_is_empty_only_once_its_timeout_is_up(bootstrap, fresh_name):
    """kafka.clients.consume, under the count and the sample: a partition's end is told once;
    after it nothing comes, and consume says so (empty) when its whole timeout is up, not after
    one short wait of librdkafka's, so their stall errors still wait the time they name."""
    topic = fresh_name("consume_idle")
    datagen.ensure_topic(bootstrap, topic, 1)
    client = consumer(bootstrap)
    try:
        client.assign([TopicPartition(topic, 0, 0)])
        assert [m.error().code() for m in consume(client, 30)] == [KafkaError._PARTITION_EOF]
        started = time.monotonic()
        assert consume(client, 2.0) == [] and time.monotonic() - started >= 2.0
    finally:
        client.close()


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


def describe(spark, table: str, extended: bool = True) -> list[tuple[str, str, str | None]]:
    return [tuple(r) for r in spark.sql(f"DESCRIBE TABLE {'EXTENDED ' if extended else ''}kplex.{table}").collect()]


def kplex_state(rows: list[tuple[str, str, str | None]]) -> dict[str, tuple[str, str | None]]:
    """DESCRIBE's rows below ``# kplex state``, by name: (value, comment)."""
    names = [r[0] for r in rows]
    return {r[0]: (r[1], r[2]) for r in rows[names.index("# kplex state") + 1:]}


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def high_watermark(bootstrap: str, topic: str, partition: int, isolation: str) -> int:
    """A plain consumer's high watermark: the end offset, or under read_committed the last stable one."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kplex-watermarks", "isolation.level": isolation})
    try:
        return consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)[1]
    finally:
        consumer.close()


def test_describe_extended_shows_the_state_a_plain_consumer_and_producer_see(spark, bootstrap, fresh_name):
    table = written_table(spark, bootstrap, fresh_name)
    highs = described_high_marks(bootstrap, table, 6)
    # An open transaction under the table's id scheme, and a writer's claim left by a dead
    # driver a minute ago (as a writer records it in _kplex_commits), both by plain clients.
    txn_id = f"kplex.{table}.7.0.0"
    txn = Producer({"bootstrap.servers": bootstrap, "transactional.id": txn_id})
    txn.init_transactions(30)
    txn.begin_transaction()
    txn.produce(table, value=b"never committed", partition=0)
    assert txn.flush(30) == 0
    claim_key, claimed_at = f"writer/{table}/{uuid.uuid4()}", int(time.time() * 1000) - 60_000
    plain = Producer({"bootstrap.servers": bootstrap})
    plane = control_plane_partition(table)  # where kplex keeps the table's records
    plain.produce("_kplex_commits", key=claim_key, value=b'{"query":"dead-driver","beat":0}', partition=plane,
                  timestamp=claimed_at)
    assert plain.flush(30) == 0
    try:
        rows = describe(spark, table)
        state = kplex_state(rows)
        ends, stable = ({p: high_watermark(bootstrap, table, p, isolation) for p in range(3)}
                        for isolation in ("read_uncommitted", "read_committed"))
    finally:
        txn.abort_transaction(30)
        plain.produce("_kplex_commits", key=claim_key, value=None, partition=plane)
        plain.flush(30)
    # Spark's own rows first, the definition among them; then the state.
    assert rows[:len(describe(spark, table, extended=False))] == describe(spark, table, extended=False)
    properties = next(value for name, value, _ in rows if name == "Table Properties")
    assert "kplex.virtual_partitions=6" in properties and "kplex.physical_partitions=3" in properties
    assert state["kind"][0] == "kplex-written" and state["topic"][0] == table
    assert {vp: state[f"vp {vp} high order"][0] for vp in range(6)} == highs
    offsets = {p: state[f"partition {p} offsets"] for p in range(3)}
    assert {p: int(v.split("..")[1]) for p, (v, _) in offsets.items()} == ends
    assert {p: int(c.rsplit(" ", 1)[1]) for p, (_, c) in offsets.items()} == stable
    assert stable[0] < ends[0]  # the open transaction pins partition 0's last stable offset
    assert state["open transactions"][0] == "1" and state[f"transaction {txn_id}"][0] == "Ongoing"
    assert state["writer claim"][0] == f"dead-driver since {iso(claimed_at)} (stale: true)"
    assert state["writer claim"][1].endswith("the next write takes it over")
    assert state["pending commit"][0] == "none"
    assert state["batch INSERTs"][0].startswith("last epoch")


def test_plain_describe_shows_only_the_columns(spark, bootstrap, fresh_name):
    table = written_table(spark, bootstrap, fresh_name)
    rows = describe(spark, table, extended=False)
    assert [name for name, _, _ in rows] == ["key", "value", "topic", "partition", "offset", "timestamp", "headers",
                                              "vpartition", "order_value"]
    assert all(not name.startswith("#") for name, _, _ in rows)


def test_the_cli_prints_the_state_as_json_and_a_running_session_answers_alike_in_its_own_jvm(
        spark, bootstrap, fresh_name, monkeypatch):
    """The CLI's `status --json` (a JVM of its own) and the library's status() in a process whose
    kplex session runs (a notebook's): the same state, the latter from the session's JVM, with no
    JVM started; a kplex error from there keeps its condition and culprits as one from the CLI's."""
    table = written_table(spark, bootstrap, fresh_name)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), KPLEX_BOOTSTRAP=bootstrap)
    done = subprocess.run([sys.executable, "-m", "kplex", "status", table, "--json", "--count"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout)

    def no_jvm_of_its_own(*args, **kwargs):
        raise AssertionError(f"started a process with a kplex session running: {args}")

    monkeypatch.setattr("kplex.admin.subprocess.run", no_jvm_of_its_own)
    here = status(bootstrap, table, count=True)
    assert sum(got["records_per_virtual_partition"].values()) == 400
    settled = ("definition", "kind", "topic", "partitions", "high_order_per_virtual_partition", "writer_claim",
               "pending_commit", "open_transactions", "partial_commits", "records_per_virtual_partition")
    assert {k: here[k] for k in settled} == {k: got[k] for k in settled}
    missing = fresh_name("no_table")
    with pytest.raises(UnknownTableError) as raised:
        status(bootstrap, missing)
    assert raised.value.getCondition() == "KPLEX_UNKNOWN_TOPIC.BROKER"
    assert raised.value.getMessageParameters().get("topic") == missing
    assert recover(bootstrap, table).startswith("fenced 0 open transactions")


#: What Spark's own logging prints at every start of a local session (its default profile's
#: notices, and on this machine a loopback host name and no native Hadoop library).
SPARK_START_NOISE = ("Using Spark's default log4j profile", "Setting default log level", "NativeCodeLoader",
                     "resolves to a loopback address")


def test_the_cli_prints_the_state_without_a_spark_session_and_sessions_log_only_what_matters(
        spark, bootstrap, fresh_name, tmp_path):
    """`kplex status` runs the plugin in a plain JVM (no Spark session): its output is the state
    alone. A session the CLI starts (`kplex sql run`) logs from WARN up without Spark's start-up
    notices, unless the user configured log4j2 (Spark's conf directory), which then wins."""
    table = written_table(spark, bootstrap, fresh_name)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), KPLEX_BOOTSTRAP=bootstrap)
    done = subprocess.run([sys.executable, "-m", "kplex", "status", table],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0 and done.stderr == "", done.stderr[-3000:]
    highs: dict[int, int] = {}
    for r in verify.read_topic(bootstrap, table):
        vp = int(r.headers["kplex.vp"])
        highs[vp] = max(highs.get(vp, -2**63), int(r.headers["kplex.order"]))
    listed = done.stdout.split("virtual partitions (highest order value written; --count adds their records):\n")[1]
    assert listed.splitlines()[:6] == [f"  {vp:>4}  {highs.get(vp, '-')}" for vp in range(6)], done.stdout

    job = tmp_path / "count.sql"
    job.write_text(f"SELECT count(*) FROM kplex.{table};\n")
    run = [sys.executable, "-m", "kplex", "sql", "run", str(job)]
    done = subprocess.run(run, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "400", done.stdout + done.stderr[-3000:]
    assert not [n for n in SPARK_START_NOISE if n in done.stderr], done.stderr
    # A log4j2 configuration of the user's, in Spark's conf directory, is the driver's.
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "log4j2.properties").write_text(
        "rootLogger.level = info\nrootLogger.appenderRef.stdout.ref = console\nappender.console.type = Console\n"
        "appender.console.name = console\nappender.console.target = SYSTEM_ERR\n"
        "appender.console.layout.type = PatternLayout\nappender.console.layout.pattern = USERS-LOG %c{1}: %m%n\n")
    done = subprocess.run(run, capture_output=True, text=True, timeout=300, env=dict(env, SPARK_CONF_DIR=str(conf)),
                          cwd=ROOT)
    assert done.returncode == 0 and "USERS-LOG NativeCodeLoader: Unable to load native-hadoop" in done.stderr, \
        done.stderr[-3000:]


def test_an_unknown_table_is_named(spark, bootstrap):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), KPLEX_BOOTSTRAP=bootstrap)
    done = subprocess.run([sys.executable, "-m", "kplex", "status", "no_such_status_table"],
                          capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)
    assert done.returncode == 2 and "topic 'no_such_status_table' does not exist" in done.stderr, done.stderr[-3000:]


@pytest.mark.parametrize("command", [status, recover])
def test_a_name_that_is_no_table_is_named_as_a_missing_topic_or_a_plain_one(spark, bootstrap, fresh_name, command):
    missing, plain = fresh_name("no_table"), fresh_name("plain_topic")
    datagen.ensure_topic(bootstrap, plain, 2)
    with pytest.raises(UnknownTableError, match=f"topic '{missing}' does not exist"):
        command(bootstrap, missing)
    with pytest.raises(NotAKplexTableError, match=f"topic '{plain}' is a plain Kafka topic"):
        command(bootstrap, plain)
    assert missing not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=30).topics  # nothing made


def group_tool(bootstrap: str, *args: str) -> str:
    """Kafka's own ``kafka-consumer-groups.sh`` (its class, from the broker's jars: in kafka-tools
    since Kafka 3.7, in the broker's own jar before, as on the Spark 3.5 line's Kafka 3.6)."""
    from kplex.testing.local_kafka import kafka_libs, kafka_version

    major, minor = (int(part) for part in kafka_version().split(".")[:2])
    tool = ("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand" if (major, minor) >= (3, 7)
            else "kafka.admin.ConsumerGroupCommand")
    done = subprocess.run(["java", "-cp", f"{kafka_libs()}/*", tool,
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
    from test_streaming import run_available_now

    return run_available_now(spark, source, table, checkpoint, **options)


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
    # Where its last epoch stopped on its source: what a query resuming from the table starts from.
    assert stream_state["source"] == {"topic": source, "ends": {str(p): n for p, n in source_sizes.items()}}
    assert "resumed_from" not in stream_state
    lag = kplex_state(describe(spark, table))[f"query {query.id} lag"]
    assert lag[0] == "30" and lag[1].startswith(f"monitoring group {group};")


def test_records_held_back_count_as_lag_in_kafkas_group_tool_until_they_are_released(spark, bootstrap, fresh_name,
                                                                                     tmp_path):
    """The monitoring group is committed up to the oldest record still held on each partition,
    not to the end of what was read: a held record is not delivered yet. Checked against the
    table read back with a plain consumer: per source partition, the first record not written."""
    source, table = fresh_name("heldlag_src"), fresh_name("heldlag")
    t0 = 1_565_606_000_000
    # Each partition: 100 records 100 ms apart, in order; max_delay_ms 3000 holds at least the
    # last 31 of each (at or above the watermark 9,900 - 3,000 past t0).
    produce(bootstrap, source, {p: [{"userid": f"User_{p}_{i % 4}", "viewtime": t0 + i * 100} for i in range(100)]
                                for p in range(3)})
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '6',"
              " 'kplex.physical_partitions' = '3', 'kplex.max_delay_ms' = '3000')")
    query = streamed(spark, source, table, tmp_path / "chk", releaseAtEnd="false")
    metrics = [p.sink.metrics for p in recent_progress(query) if p.sink.metrics]
    held = int(metrics[-1]["heldRecords"])
    written = set()
    for r in verify.read_topic(bootstrap, table):
        record = json.loads(r.value)
        written.add((int(record["userid"].split("_")[1]), (record["viewtime"] - t0) // 100))
    assert len(written) == 300 - held and held >= 3 * 31, metrics
    first_held = {p: min(i for i in range(100) if (p, i) not in written) for p in range(3)}
    group = f"kplex.{table}.{query.id}"
    assert describe_group(bootstrap, group) == {p: (first_held[p], 100 - first_held[p]) for p in range(3)}
    state = status(bootstrap, table)
    stream_state = next(q for q in state["streams"] if q["query"] == str(query.id))
    assert stream_state["held_records"] == held
    plane = state["control_plane"]
    assert plane["topic"] == "_kplex_commits" and 0 < plane["live_keys"] <= plane["end_offset"] - plane["start_offset"]
    assert (f"control plane _kplex_commits, partition {plane['partition']} of {plane['partitions']}:"
            f" {plane['live_keys']} live keys") in render(state)
    assert stream_state["total_lag"] == sum(100 - first_held[p] for p in range(3)) >= held
    released = streamed(spark, source, table, tmp_path / "chk", releaseAtEnd="true")
    assert released.id == query.id
    assert describe_group(bootstrap, group) == {p: (100, 0) for p in range(3)}
    assert len(verify.read_topic(bootstrap, table)) == 300


def test_monitor_group_false_commits_to_no_group(spark, bootstrap, fresh_name, tmp_path):
    source, table = fresh_name("nolag_src"), fresh_name("nolag")
    pageviews(bootstrap, source, 60)
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    streamed(spark, source, table, tmp_path / "chk", monitorGroup="false")
    assert len(verify.read_topic(bootstrap, table)) == 60
    assert table not in group_tool(bootstrap, "--list")


OAUTH = ("security.protocol=SASL_SSL\nsasl.mechanism=OAUTHBEARER\n"
         "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
         ' clientId="kplex" clientSecret="s3cr3t";\n')


# --kafka-config file       --count  -> the Python clients' settings  (why)
# OAuth JAAS line           no       -> none                         only the JVM reads the table's state
# OAuth JAAS line           yes      -> refused, naming the setting  librdkafka has no form of the Java login
# + librdkafka.sasl.*       yes      -> librdkafka's own entries     as the refusal tells the user to give
@pytest.mark.parametrize("extra, count, config", [
    ("", False, None),
    ("", True, "[KPLEX_BAD_OPTION] 'sasl.jaas.config' with OAuthBearerLoginModule has no librdkafka form"),
    ("librdkafka.sasl.oauthbearer.method=oidc\nlibrdkafka.sasl.oauthbearer.client.id=kplex\n", True,
     {"security.protocol": "sasl_ssl", "sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
      "sasl.oauthbearer.client.id": "kplex"}),
])
def test_the_cli_translates_the_settings_for_the_python_clients_only_when_they_count(
        extra, count, config, tmp_path, monkeypatch, capsys):
    """`kplex status` hands the --kafka-config settings to its JVM as they are; librdkafka gets
    them translated only for --count, and an OAuth login then comes from librdkafka's own entries."""
    asked = []

    def state_of(bootstrap, table, **kwargs):
        asked.append(kwargs)
        return {"table": table}

    monkeypatch.setattr("kplex.status.status", state_of)
    path = tmp_path / "client.properties"
    path.write_text(OAUTH + extra)
    done = main(["status", "t", "--bootstrap", "broker:9093", "--kafka-config", str(path), "--json",
                 *(["--count"] if count else [])])
    err = capsys.readouterr().err
    if isinstance(config, str):
        assert done == 2 and config in err and "s3cr3t" not in err, err
        return
    assert done == 0, err
    [kwargs] = asked
    assert kwargs["kafka_options"]["sasl.jaas.config"].endswith('clientSecret="s3cr3t";')
    assert kwargs["count"] is count and kwargs["config"] == config
