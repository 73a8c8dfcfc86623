"""INSERT INTO kplex.<table> SELECT ..., end to end on a real broker.

Every check reads the derived topic back with a plain confluent-kafka consumer
(kplex.testing.verify), never through kplex's own reader.
"""
from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from read_support import INSERT

from kplex.placement import virtual_partition
from kplex.session import jars, last_write_summary
from kplex.testing import datagen, verify

ROOT = Path(__file__).resolve().parents[1]
JOB = (ROOT / "sql" / "pageviews_by_user.sql").read_text()


def create(spark, table: str, v: int, p: int, **props: str) -> None:
    extra = "".join(f", 'kplex.{k}' = '{val}'" for k, val in props.items())
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '{v}',"
              f" 'kplex.physical_partitions' = '{p}'{extra})")


@pytest.fixture(scope="module")
def messy_pageviews(bootstrap: str) -> str:
    """3 source partitions, out of order across them, one hot user, non-ASCII user ids."""
    topic = f"pageviews_messy_{uuid.uuid4().hex[:8]}"  # unique: a reused broker (KPLEX_BOOTSTRAP) keeps topics
    datagen.generate_pageviews(bootstrap, topic, 3_000, partitions=3, users=20, seed=11,
                               out_of_order_ms=5_000, skew=0.3, non_ascii=True)
    return topic


@pytest.mark.parametrize("v,p", [(2, 3), (3, 3), (9, 3), (1, 3), (96, 4)],
                         ids=["V<P", "V=P", "V>P", "V=1 one global order", "V>>P"])
def test_insert_places_every_row_once_in_order_on_its_virtual_partition(
        spark, bootstrap, messy_pageviews, fresh_name, v, p):
    target = fresh_name("by_user")
    create(spark, target, v, p)
    spark.sql(INSERT.format(target=target, source=messy_pageviews))
    report = verify.check_derived_topic(bootstrap, messy_pageviews, target, v, p)
    assert report.ok, report.summary()
    assert report.derived_count == 3_000
    assert last_write_summary(spark)["rows"] == 3_000


def test_the_same_input_written_twice_gives_the_same_sequence_in_every_virtual_partition(
        spark, bootstrap, messy_pageviews, fresh_name):
    """G2's ties: order values in minutes make most records of a virtual partition tie, and the
    second write spreads its rows over 7 writer tasks where the first, merged by adaptive
    execution, has one; the sequences, read back with a plain consumer, are still the same."""
    first, second = fresh_name("twice_a"), fresh_name("twice_b")
    coarse = INSERT.replace("AS BIGINT))", "AS BIGINT) DIV 60000)")
    assert coarse != INSERT
    spread = {"spark.sql.shuffle.partitions": "7", "spark.sql.adaptive.coalescePartitions.enabled": "false"}
    before = {key: spark.conf.get(key) for key in spread}
    for target, settings in ((first, {}), (second, spread)):
        create(spark, target, 9, 3)
        for key, value in settings.items():
            spark.conf.set(key, value)
        try:
            spark.sql(coarse.format(target=target, source=messy_pageviews))
        finally:
            for key, value in before.items():
                spark.conf.set(key, value)
    derived = [verify.read_topic(bootstrap, t) for t in (first, second)]
    assert [len(d) for d in derived] == [3_000, 3_000]
    orders = [(r.headers["kplex.vp"], r.headers["kplex.order"]) for r in derived[0]]
    assert len(set(orders)) < len(orders) / 10, "most records tie with another of their virtual partition"
    sequences = [verify.virtual_partition_sequences(d) for d in derived]
    assert sequences[0] == sequences[1]


def test_placement_matches_kafkas_java_producer_when_p_divides_v(spark, bootstrap, messy_pageviews, fresh_name):
    target, plain = fresh_name("placed"), fresh_name("plain")
    create(spark, target, 9, 3)
    spark.sql(INSERT.format(target=target, source=messy_pageviews))
    derived = verify.read_topic(bootstrap, target)
    keys = sorted({r.key for r in derived})
    spark.sql(f"CREATE TABLE kplex.{plain} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")  # just a 3-partition topic
    jvm = spark._jvm
    props = jvm.java.util.Properties()
    props.put("bootstrap.servers", bootstrap)
    props.put("key.serializer", "io.kplex.shaded.org.apache.kafka.common.serialization.ByteArraySerializer")
    props.put("value.serializer", "io.kplex.shaded.org.apache.kafka.common.serialization.ByteArraySerializer")
    producer = jvm.io.kplex.shaded.org.apache.kafka.clients.producer.KafkaProducer(props)
    try:
        java_partition = {}
        for key in keys:
            record = jvm.io.kplex.shaded.org.apache.kafka.clients.producer.ProducerRecord(plain, bytearray(key), bytearray(b"x"))
            java_partition[key] = producer.send(record).get().partition()
    finally:
        producer.close()
    kplex_partition = {r.key: r.partition for r in derived}
    assert len(keys) == 20
    assert kplex_partition == java_partition


def test_dataframe_write_with_the_kplex_format(spark, bootstrap, messy_pageviews, fresh_name):
    target = fresh_name("df")
    create(spark, target, 9, 3)
    df = spark.read.format("kplex").option("table", messy_pageviews).load().selectExpr(
        "kplex_key(get_json_object(CAST(value AS STRING), '$.userid')) AS key",
        "kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)) AS order_value",
        "value")
    df.write.format("kplex").option("table", target).mode("append").save()
    report = verify.check_derived_topic(bootstrap, messy_pageviews, target, 9, 3)
    assert report.ok, report.summary()


def test_the_article_job_runs_through_spark_sql_cli(bootstrap, messy_pageviews, fresh_name, tmp_path):
    import pyspark

    target = fresh_name("cli")
    job = tmp_path / "job.sql"
    job.write_text(JOB.replace("pageviews_by_user", target).replace("kplex.pageviews;", f"kplex.{messy_pageviews};"))
    spark_sql = Path(pyspark.__file__).parent / "bin" / "spark-sql"
    result = subprocess.run(
        [str(spark_sql), "--master", "local[2]", "--jars", ",".join(jars()),
         "--conf", "spark.sql.extensions=io.kplex.spark.KplexExtensions",
         "--conf", "spark.sql.catalog.kplex=io.kplex.spark.KplexCatalog",
         "--conf", f"spark.sql.catalog.kplex.kafka.bootstrap.servers={bootstrap}",
         "--conf", "spark.plugins=io.kplex.spark.KplexPlugin",
         "--conf", "spark.sql.shuffle.partitions=4", "--conf", "spark.ui.enabled=false",
         "-f", str(job)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    report = verify.check_derived_topic(bootstrap, messy_pageviews, target, 9, 3)
    assert report.ok, report.summary()


def test_tasks_in_separate_executor_jvms_write_consistently(bootstrap, messy_pageviews, fresh_name):
    """local-cluster[2,1,1024]: two executor JVMs, each with its own producers."""
    target = fresh_name("cluster")
    script = f"""
from kplex.session import kplex_session, last_write_summary
spark = kplex_session({bootstrap!r}, master="local-cluster[2,1,1024]",
                      conf={{"spark.sql.shuffle.partitions": "6"}})
spark.sql("CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3')")
spark.sql('''{INSERT.format(target=target, source=messy_pageviews)}''')
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
print("executors", executors)
spark.stop()
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(ROOT / "python")})
    assert result.returncode == 0, result.stderr[-3000:]
    assert "executors 2" in result.stdout
    report = verify.check_derived_topic(bootstrap, messy_pageviews, target, 9, 3)
    assert report.ok, report.summary()


def test_a_users_headers_named_as_kplexs_are_left_out_and_the_rest_kept_in_order(spark, bootstrap, fresh_name):
    """The contract: user headers are kept, but for kplex.vp and kplex.order, which kplex
    writes (a late record's source coordinates are kept: a late topic written back into a
    table keeps where its records came from). Read back with a plain consumer, every header
    as it came. A later INSERT's record below what the virtual partition holds goes to the late
    topic with the same headers: kplex knows no source of an INSERT's row, so the row's own
    kplex.source_* stay."""
    table, late_topic = fresh_name("headed"), fresh_name("headed_late")
    create(spark, table, 3, 3)
    headers = ("array(named_struct('key', 'kplex.source_offset', 'value', CAST('999' AS BINARY)),"
               " named_struct('key', 'trace', 'value', CAST('t-1' AS BINARY)),"
               " named_struct('key', 'kplex.vp', 'value', CAST('77' AS BINARY)),"
               " named_struct('key', 'kplex.source_topic', 'value', CAST('elsewhere' AS BINARY)),"
               " named_struct('key', 'kplex.source_partition', 'value', CAST('4' AS BINARY)),"
               " named_struct('key', 'span', 'value', CAST(NULL AS BINARY))) AS headers")
    spark.sql(f"INSERT INTO kplex.{table} SELECT kplex_key('u'), kplex_order(5), CAST('v' AS BINARY) AS value,"
              f" {headers}")

    def expected(order: int) -> list:
        return [("kplex.source_offset", b"999"), ("trace", b"t-1"), ("kplex.source_topic", b"elsewhere"),
                ("kplex.source_partition", b"4"), ("span", None),
                ("kplex.vp", str(virtual_partition(b"u", 3)).encode()), ("kplex.order", str(order).encode())]

    [record] = verify.read_topic(bootstrap, table)
    assert list(record.header_list) == expected(5)
    (spark.sql(f"SELECT kplex_key('u'), kplex_order(1), CAST('late' AS BINARY) AS value, {headers}")
     .write.format("kplex").option("table", table).option("kplex.late_policy", "side_topic")
     .option("kplex.late_topic", late_topic).mode("append").save())
    assert [r.value for r in verify.read_topic(bootstrap, table)] == [b"v"]
    [late] = verify.read_topic(bootstrap, late_topic)
    assert late.value == b"late" and list(late.header_list) == expected(1)


def test_order_headers_and_timestamps_spell_every_order_value_exactly(spark, bootstrap, fresh_name):
    # The kplex.order header is the order value in decimal ASCII (SPEC): negative, zero,
    # every digit count up to the 64-bit extremes; a TIMESTAMP order is also the record's
    # timestamp in epoch milliseconds.
    orders = [-(2**63) + 1, -10**18, -99, -1, 0, 1, 9, 10, 99, 100, 12345, 10**15, 2**63 - 1]
    orders += [10**k - 1 for k in range(2, 19)] + [10**k for k in range(2, 19)]
    table = fresh_name("orders")
    create(spark, table, 3, 3)
    values = ", ".join(f"({o})" for o in orders)
    spark.sql(f"INSERT INTO kplex.{table} SELECT kplex_key(CAST(o AS STRING)), kplex_order(o),"
              f" CAST(CAST(o AS STRING) AS BINARY) AS value FROM VALUES {values} AS t(o)")
    written = {int(r.value): r.headers["kplex.order"] for r in verify.read_topic(bootstrap, table)}
    assert written == {o: str(o).encode() for o in orders}

    timed = fresh_name("timed")
    create(spark, timed, 3, 3)
    spark.sql(f"INSERT INTO kplex.{timed} SELECT kplex_key(CAST(ms AS STRING)), kplex_order(timestamp_millis(ms)),"
              " CAST(CAST(ms AS STRING) AS BINARY) AS value FROM VALUES (0), (1), (1700000000123) AS t(ms)")
    records = verify.read_topic(bootstrap, timed)
    assert sorted(int(r.value) for r in records) == [0, 1, 1700000000123]
    for r in records:
        assert r.timestamp == int(r.value) and r.headers["kplex.order"] == r.value

    # A DATE order is the epoch milliseconds of its midnight, UTC, whatever the session's zone.
    dated = fresh_name("dated")
    create(spark, dated, 3, 3)
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")
    try:
        spark.sql(f"INSERT INTO kplex.{dated} SELECT kplex_key(d), kplex_order(CAST(d AS DATE)),"
                  " CAST(d AS BINARY) AS value FROM VALUES ('1970-01-01'), ('2024-02-29'), ('1969-12-31') AS t(d)")
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    midnights = {"1970-01-01": 0, "2024-02-29": 1709164800000, "1969-12-31": -86400000}
    records = verify.read_topic(bootstrap, dated)
    assert {r.value.decode(): int(r.headers["kplex.order"]) for r in records} == midnights
    for r in records:
        if midnights[r.value.decode()] >= 0:
            assert r.timestamp == midnights[r.value.decode()]
