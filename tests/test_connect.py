"""kplex from Spark Connect: a real Spark Connect server (`kplex server connect`, its own
JVM) and a thin Python client with no py4j, as Databricks' serverless and shared clusters
and Spark 4's `SparkSession.builder.remote(...)` run it. Written through the server,
checked with a plain Kafka consumer."""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pyspark
import pytest
from read_support import described_high_marks
from servers import kplex_server

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
