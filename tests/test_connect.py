"""kplex from Spark Connect: a real Spark Connect server (`kplex server connect`, its own
JVM) and a thin Python client with no py4j, as Databricks' serverless and shared clusters
and Spark 4's `SparkSession.builder.remote(...)` run it. Written through the server,
checked with a plain Kafka consumer."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pyspark
import pytest
from read_support import described_high_marks
from servers import kill_connect_server, kplex_server

from kplex.sqltools.remote import SERVER_GONE_S
from kplex.testing import datagen
from kplex.testing.verify import check_derived_topic

pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect] (requirements.txt)")

CLIENT = textwrap.dedent('''
    import json, sys
    from pyspark.sql import SparkSession
    import kplex
    from kplex import configure_spark_with_kplex, last_write_summary, read_metrics, register_functions
    from kplex.errors import NullKeyError, UnsupportedError

    url, bootstrap, source, by_sql, by_df, nulls = sys.argv[1:]
    spark = configure_spark_with_kplex(SparkSession.builder.remote(url), bootstrap).getOrCreate()
    out = {"py4j": hasattr(spark, "_jvm") and spark._jvm is not None}
    register_functions(spark)  # checks that the server has kplex's functions
    spark.sql(f"CREATE TABLE kplex.{by_sql} TBLPROPERTIES ('kplex.virtual_partitions' = '6', 'kplex.physical_partitions' = '3')")
    spark.sql(f"""INSERT INTO kplex.{by_sql}
                 SELECT kplex_key(kplex_json(value, '/userid')),
                        kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value
                 FROM kplex.{source}""")
    out["sql_summary"] = last_write_summary(spark)
    out["describe"] = [list(r) for r in spark.sql(f"DESCRIBE TABLE EXTENDED kplex.{by_sql}").collect()]
    spark.sql(f"CREATE TABLE kplex.{by_df} TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3', 'kplex.delivery' = 'at_least_once')")
    (spark.read.format("kplex").option("table", source).load()
          .selectExpr("kplex_key(get_json_object(CAST(value AS STRING), '$.userid')) AS key",
                      "kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)) AS order_value",
                      "value")
          .write.format("kplex").option("table", by_df).mode("append").save())
    out["df_summary"] = last_write_summary(spark)
    read = spark.read.format("kplex").option("table", by_sql).load()
    out["per_vp"] = {r["vpartition"]: r["n"] for r in read.groupBy("vpartition").count().withColumnRenamed("count", "n").collect()}
    scan = spark.table(f"kplex.{source}")  # a plain topic: every record read is a row
    out["rows_read"] = len(scan.collect())
    try:
        out["metrics"] = read_metrics(scan)
    except UnsupportedError as e:  # Spark 3.5's Connect client has no DataFrame.executionInfo
        out["metrics"] = str(e)
    spark.sql(f"CREATE TABLE kplex.{nulls} TBLPROPERTIES ('kplex.virtual_partitions' = '3', 'kplex.physical_partitions' = '3')")
    try:
        spark.sql(f"""INSERT INTO kplex.{nulls}
                     SELECT kplex_key(IF(offset % 50 = 7, NULL, kplex_json(value, '/userid'))),
                            kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value
                     FROM kplex.{source}""")
        out["null_key_error"] = None
    except NullKeyError as e:
        out["null_key_error"] = str(e)
    print("RESULT " + json.dumps(out))
''')


@pytest.fixture(scope="module")
def connect_url(bootstrap, tmp_path_factory):
    with kplex_server("connect", bootstrap, tmp_path_factory.mktemp("connect")) as port:
        yield f"sc://127.0.0.1:{port}"


def test_a_local_connect_servers_jvm_is_started_with_the_parallel_collector(connect_url):
    """``kplex server connect`` on a local master picks the JVM's options as ``kplex_session``
    does (the parallel collector, C2's inlining limit):
    the server's JVM, found by its port among this machine's processes, was started with them."""
    port = connect_url.rsplit(":", 1)[1]
    jvms = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().split(b"\0")
        except OSError:  # a process that ended meanwhile
            continue
        if args and args[0].endswith(b"java") and f"spark.connect.grpc.binding.port={port}".encode() in args:
            jvms.append(args)
    assert len(jvms) == 1, f"{len(jvms)} JVMs serve port {port}"
    assert b"-XX:+UseParallelGC" in jvms[0]
    assert b"-XX:FreqInlineSize=120" in jvms[0]
    assert b"-XX:Tier4InvocationThreshold=50000" in jvms[0]


def test_the_python_surface_works_over_spark_connect_without_py4j(connect_url, bootstrap, fresh_name, tmp_path):
    source, by_sql, by_df, nulls = (fresh_name(n) for n in ("connect_src", "connect_sql", "connect_df", "connect_null"))
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=30, seed=11, out_of_order_ms=1_000)
    script = tmp_path / "client.py"
    script.write_text(CLIENT)
    done = subprocess.run([sys.executable, str(script), connect_url, bootstrap, source, by_sql, by_df, nulls],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    out = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert out["py4j"] is False
    # No warnings of kplex's making: no static settings set from the client, no function re-registered.
    assert "Cannot modify the value of the static Spark config" not in done.stderr, done.stderr[-3000:]
    assert "replaced a previously registered function" not in done.stderr
    # Written through the server, checked with a plain read_committed consumer.
    assert check_derived_topic(bootstrap, source, by_sql, 6, 3).ok
    assert check_derived_topic(bootstrap, source, by_df, 9, 3).ok
    assert out["sql_summary"]["table"] == by_sql and out["sql_summary"]["rows"] == 2_000
    # DESCRIBE TABLE EXTENDED on the server appends the table's state: its high marks as a plain consumer reads them.
    state = {name: value for name, value, _ in out["describe"][[r[0] for r in out["describe"]].index("# kplex state"):]}
    assert {vp: state[f"vp {vp} high order"] for vp in range(6)} == described_high_marks(bootstrap, by_sql, 6)
    assert state["writer claim"] == "free" and state["open transactions"] == "0"
    assert out["df_summary"]["table"] == by_df and out["df_summary"]["rows"] == 2_000
    assert sum(out["per_vp"].values()) == 2_000 and set(map(int, out["per_vp"])) <= set(range(6))
    assert out["rows_read"] == 2_000
    if pyspark.__version__.startswith("3.5."):
        assert out["metrics"].startswith("[KPLEX_SPARK_VERSION] read_metrics over Spark Connect needs Spark 4.0")
    else:
        assert out["metrics"]["kplexRecordsRead"] == 2_000
    # A task-time error (NULL key mid-data) arrives as kplex's exception, kplex's message first.
    assert out["null_key_error"] is not None and out["null_key_error"].startswith("[KPLEX_NULL_KEY]")


RESTRICTED_CLIENT = textwrap.dedent('''
    import json, sys
    from pyspark.sql import SparkSession
    from kplex import configure_spark_with_kplex

    url, bootstrap, source, target = sys.argv[1:]
    spark = configure_spark_with_kplex(SparkSession.builder.remote(url), bootstrap).getOrCreate()
    out = {}

    def refused(action):
        try:
            action()
            return None
        except Exception as e:  # noqa: BLE001 - the server's refusal, as the client raises it
            return str(e).splitlines()[0]

    def read(**options):
        reader = spark.read.format("kplex").option("table", source)
        for k, v in options.items():
            reader = reader.option(k, v)
        return int(reader.load().count())  # (numpy's int64 over Spark 3.5's Connect)

    def write(**options):
        writer = spark.read.format("kplex").option("table", source).load().selectExpr(
            "kplex_key(kplex_json(value, '/userid')) AS key",
            "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)) AS order_value", "value").write.format(
            "kplex").option("table", target).mode("append")
        for k, v in options.items():
            writer = writer.option(k, v)
        writer.save()

    spark.sql(f"CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '3', 'kplex.physical_partitions' = '3')")
    out["tuned_read"] = read(**{"kafka.fetch.max.bytes": "1048576", "kafka.isolation.level": "read_committed"})
    out["read_elsewhere"] = refused(lambda: read(**{"kafka.bootstrap.servers": "127.0.0.1:1"}))
    out["write_credentials"] = refused(lambda: write(**{"kafka.sasl.jaas.config": "x required;",
                                                         "kafka.security.protocol": "SASL_PLAINTEXT"}))
    out["write_provider"] = refused(lambda: write(**{"kafka.linger.ms": "${file:/etc/passwd:x}"}))
    write(**{"kafka.linger.ms": "5"})
    spark.conf.set("spark.kplex.server.restricted", "false")  # a session's value: not read
    out["after_set"] = refused(lambda: read(**{"kafka.bootstrap.servers": "127.0.0.1:1"}))
    spark.conf.set("spark.sql.catalog.mine", "io.kplex.spark.KplexCatalog")
    spark.conf.set("spark.sql.catalog.mine.kafka.bootstrap.servers", bootstrap)
    out["own_catalog"] = refused(lambda: spark.sql("SHOW TABLES IN mine").collect())
    print("RESULT " + json.dumps(out))
''')


def test_a_shared_server_takes_no_kafka_address_credentials_or_catalog_from_a_statement(
        connect_url, bootstrap, fresh_name, tmp_path):
    """`kplex server` is restricted: a read or write through it may set only the Kafka client
    settings that reach no further than the statement (fetch sizes, linger, isolation), not the
    address, credentials, files or classes of the server's clients, and may register no kplex
    catalog of its own; each refusal names the option or catalog and writes nothing."""
    source, target = fresh_name("restricted_src"), fresh_name("restricted_dst")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=10, seed=12)
    script = tmp_path / "client.py"
    script.write_text(RESTRICTED_CLIENT)
    done = subprocess.run([sys.executable, str(script), connect_url, bootstrap, source, target],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    out = json.loads(done.stdout.split("RESULT ", 1)[1])
    assert out["tuned_read"] == 300
    for key, option in (("read_elsewhere", "kafka.bootstrap.servers"), ("write_credentials", "kafka.sasl.jaas.config"),
                        ("after_set", "kafka.bootstrap.servers")):
        assert out[key] and "KPLEX_SERVER_RESTRICTED" in out[key] and f"'{option}'" in out[key], (key, out[key])
        assert "kafka.fetch.max.bytes" in out[key] and "x required" not in out[key], out[key]
    assert out["write_provider"] and "'kafka.linger.ms'" in out["write_provider"], out["write_provider"]
    assert "config provider" in out["write_provider"], out["write_provider"]
    assert out["own_catalog"] and "catalog 'mine'" in out["own_catalog"], out["own_catalog"]
    # Only the allowed write reached the table: each record once, read with a plain consumer.
    assert check_derived_topic(bootstrap, source, target, 3, 3).ok


REMOTE_FILE = """\
-- kplex.bootstrap = {bootstrap}
CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '6', 'kplex.physical_partitions' = '3');
INSERT INTO kplex.{target}
SELECT kplex_key(kplex_json(value, '/userid')), kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value
FROM kplex.{source};
SELECT date_format(timestamp_seconds(0), 'HH:mm') AS epoch_there;
"""


def _sql_run(args: list[str], tmp_path: Path, **environ: str) -> subprocess.CompletedProcess:
    """``kplex sql run`` in a process that cannot start a JVM of its own (JAVA_HOME leads nowhere)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "KPLEX_BOOTSTRAP", "PYSPARK_SUBMIT_ARGS")}
    env.update(JAVA_HOME=str(tmp_path / "no-java"), **environ)
    return subprocess.run([sys.executable, "-m", "kplex", "sql", "run", *args], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)


def test_kplex_sql_run_remote_runs_a_files_statements_on_the_server_and_starts_no_jvm(
        connect_url, bootstrap, fresh_name, tmp_path):
    """A scheduler's SQL file run on a running server: the write, checked with a plain consumer; the
    session's --conf took effect there; then the same server through $SPARK_REMOTE."""
    source, target = fresh_name("remote_src"), fresh_name("remote_by_user")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=40, seed=5, out_of_order_ms=1_000)
    job = tmp_path / "job.sql"
    job.write_text(REMOTE_FILE.format(bootstrap=bootstrap, source=source, target=target))
    done = _sql_run([str(job), "--remote", connect_url, "--conf", "spark.sql.session.timeZone=Asia/Kolkata"],
                    tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"3000 rows written to kplex.{target}" in done.stderr
    assert done.stdout == "05:30\n"
    report = check_derived_topic(bootstrap, source, target, 6, 3)
    assert report.ok and report.derived_count == 3_000, report
    count = tmp_path / "count.sql"
    count.write_text(f"SELECT count(*) FROM kplex.{target};\n")
    # The server is shared (restricted): its catalog is its own, so a client's bootstrap, here
    # spelled otherwise than the server's, is not sent to change it.
    again = _sql_run([str(count)], tmp_path, SPARK_REMOTE=connect_url,
                     KPLEX_BOOTSTRAP=bootstrap.replace("127.0.0.1", "localhost"))
    assert again.returncode == 0, again.stderr[-4000:]
    assert again.stdout == "3000\n"
    # A statement that fails on the server stops the file there, named, with kplex's message.
    broken = tmp_path / "broken.sql"
    broken.write_text(f"SELECT 1;\nINSERT INTO kplex.{target}\n"
                      "SELECT kplex_key(IF(offset = 7, NULL, kplex_json(value, '/userid'))),"
                      f" kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value FROM kplex.{source};\n")
    failed = _sql_run([str(broken), "--remote", connect_url, "--bootstrap", bootstrap], tmp_path)
    assert failed.returncode == 1, failed.stderr[-4000:]
    assert re.search(r"broken\.sql:2: statement 2 failed \(INSERT INTO kplex\.\w+\)", failed.stderr), failed.stderr
    assert "[KPLEX_NULL_KEY]" in failed.stderr and "Traceback" not in failed.stderr
    after = check_derived_topic(bootstrap, source, target, 6, 3)
    assert after.ok and after.derived_count == 3_000, after  # nothing of the failed INSERT is visible


@pytest.mark.parametrize("key, value", [("spark.sql.extensions", "com.example.Other"), ("spark.driver.memory", "2g")])
def test_kplex_sql_run_remote_refuses_a_setting_of_the_servers_jvm_by_name(connect_url, bootstrap, tmp_path, key, value):
    job = tmp_path / "job.sql"
    job.write_text("SELECT 1;\n")
    done = _sql_run([str(job), "--remote", connect_url, "--bootstrap", bootstrap, "--conf", f"{key}={value}"], tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.startswith(f"error: --conf {key}: the Spark Connect server at {connect_url} refused it ("), \
        done.stderr[-3000:]
    assert f"kplex server connect --conf {key}=VALUE" in done.stderr
    assert done.stdout == ""


def test_kplex_sql_run_remote_on_a_port_that_is_not_spark_connect_says_so_in_seconds(bootstrap, tmp_path):
    """The broker's own port, given by mistake: it accepts the connection, and the Connect client
    alone would retry for minutes without a word."""
    job = tmp_path / "job.sql"
    job.write_text("SELECT 1;\n")
    broker = bootstrap.split(",")[0]
    started = time.monotonic()
    done = _sql_run([str(job), "--remote", f"sc://{broker}"], tmp_path)
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.startswith(f"error: sc://{broker} accepts connections but did not answer as a Spark"
                                  " Connect server in 10 s"), done.stderr[-3000:]
    assert time.monotonic() - started < 60


class _HighWatermarks:
    """The records a topic's partitions hold, committed or not: their high watermarks (a
    read_committed consumer, librdkafka's default, is told the last stable offsets instead)."""

    def __init__(self, bootstrap: str, topic: str):
        from confluent_kafka import Consumer

        self.topic = topic
        self.consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "kplex-test-offsets",
                                  "isolation.level": "read_uncommitted"})

    def __call__(self) -> int:
        from confluent_kafka import KafkaException, TopicPartition

        partitions = self.consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions
        try:
            return sum(self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10)[1]
                       for p in partitions)
        except KafkaException as error:  # a topic just made, whose partitions have no leader yet
            if error.args[0].retriable() or error.args[0].name() in ("NOT_LEADER_FOR_PARTITION", "UNKNOWN_TOPIC_OR_PART"):
                return 0
            raise

    def close(self) -> None:
        self.consumer.close()


def test_a_server_killed_during_a_files_insert_fails_the_run_in_seconds_and_the_file_run_again_writes_once(
        connect_url, bootstrap, fresh_name, tmp_path):
    """The server's JVM dies (SIGKILL) while a file's INSERT is sending records. The run fails
    within SERVER_GONE_S of that, naming the server and the statement; pyspark's client alone
    retried for more than ten minutes, then as long again to release the session. The same file
    run again, on another server, leaves every source record in the table exactly once: nothing of
    the killed INSERT became visible."""
    # Enough that the INSERT still sends when its first records arrive (the server is killed then).
    records = 400_000
    source, target = fresh_name("gone_src"), fresh_name("gone_by_user")
    datagen.generate_pageviews(bootstrap, source, records, partitions=3, users=40, seed=11, out_of_order_ms=1_000)
    job = tmp_path / "job.sql"
    job.write_text(f"CREATE TABLE IF NOT EXISTS kplex.{target}"
                   " TBLPROPERTIES ('kplex.virtual_partitions' = '6', 'kplex.physical_partitions' = '3');\n"
                   f"INSERT INTO kplex.{target} SELECT kplex_key(kplex_json(value, '/userid')),"
                   f" kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value FROM kplex.{source};\n")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "KPLEX_BOOTSTRAP", "PYSPARK_SUBMIT_ARGS")}
    env["JAVA_HOME"] = str(tmp_path / "no-java")
    (tmp_path / "doomed").mkdir()
    with kplex_server("connect", bootstrap, tmp_path / "doomed") as port:
        url = f"sc://127.0.0.1:{port}"
        run = subprocess.Popen([sys.executable, "-m", "kplex", "sql", "run", str(job), "--remote", url,
                                "--bootstrap", bootstrap], cwd=tmp_path, env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        written = _HighWatermarks(bootstrap, target)
        try:
            deadline = time.monotonic() + 240
            while run.poll() is None and time.monotonic() < deadline:  # until the INSERT's records arrive
                if written() > 0:
                    break
                time.sleep(0.01)
            assert run.poll() is None, f"the run ended before its server could be killed mid-INSERT: {run.communicate()}"
            kill_connect_server(port)
            killed = time.monotonic()
            sent = written()
        finally:
            written.close()
        out, err = run.communicate(timeout=SERVER_GONE_S + 120)
        waited = time.monotonic() - killed
    assert run.returncode == 1, err[-4000:]
    assert 0 < sent < records, f"the INSERT had sent {sent} records of {records:,} when its server was killed"
    assert re.search(rf"job\.sql:2: statement 2 failed \(INSERT INTO kplex\.{target} [^)]*\): the Spark Connect server"
                     rf" at {re.escape(url)} stopped answering \(", err), err[-4000:]
    assert f"did not answer again within {SERVER_GONE_S:g} s" in err
    assert "statement 1 ran and its effects are kept" in err
    assert "Traceback" not in err and "RETRIES_EXCEEDED" not in err and "ReleaseExecute" not in err, err[-4000:]
    # Not twice that: once the statement failed, the run does not wait for the dead server again.
    assert waited < SERVER_GONE_S + 25, f"the run took {waited:.0f} s after the server died"
    assert out == ""
    again = _sql_run([str(job), "--remote", connect_url, "--bootstrap", bootstrap], tmp_path)
    assert again.returncode == 0, again.stderr[-4000:]
    report = check_derived_topic(bootstrap, source, target, 6, 3)
    assert report.ok and report.derived_count == records, report
