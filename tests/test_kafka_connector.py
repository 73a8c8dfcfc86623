"""kplex beside Spark's own Kafka connector (issue 23): kafka-clients is relocated inside
kplex's jar (io.kplex.shaded.org.apache.kafka, build.gradle), so in one session Spark's
``format("kafka")`` runs on the kafka-clients its connector brings and kplex's
exactly-once write on the one kplex was checked against, neither in the other's way."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pyspark
import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kplex.session import SHADED_KAFKA, SPARK_JARS, _spark_line, jars
from kplex.testing.maven import scala_of

#: Where Spark's ivy keeps the connector's jars between runs (spark.jars.ivy), beside the
#: virtual environments of scripts/test_spark_version.sh; one per pyspark, because
#: scripts/test.sh runs the other Spark lines while the main suite runs, and two ivy
#: resolutions into one cache at once can clash.
IVY = Path(os.environ.get("KPLEX_CACHE_DIR", Path.home() / ".cache" / "kplex")) / f"ivy-{pyspark.__version__}"
ROWS = 50


def test_the_plugin_jar_carries_kafka_clients_relocated_and_nothing_unrelocated():
    expected = "kplex-spark-3.5.jar" if pyspark.__version__.startswith("3.5.") else "kplex-spark.jar"
    assert [Path(j).name for j in jars()] == [expected] == [SPARK_JARS[_spark_line(pyspark.__version__)]]
    names = zipfile.ZipFile(jars()[0]).namelist()
    assert not [n for n in names if n.startswith("org/apache/kafka")]
    shaded = SHADED_KAFKA.replace(".", "/")
    assert f"{shaded}/clients/producer/KafkaProducer.class" in names
    assert f"META-INF/services/{SHADED_KAFKA}.common.config.provider.ConfigProvider" in names
    services = zipfile.ZipFile(jars()[0]).read(f"META-INF/services/{SHADED_KAFKA}.common.config.provider.ConfigProvider")
    assert f"{SHADED_KAFKA}.common.config.provider.FileConfigProvider" in services.decode()


def test_sparks_kafka_connector_reads_and_kplex_writes_exactly_once_in_one_session(bootstrap, fresh_name, tmp_path):
    source, table = fresh_name("connector_source"), fresh_name("beside_connector")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(source, 2)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(ROWS):
        producer.produce(source, key=f"user{i % 7}".encode(), value=f"{i}".encode())
    assert producer.flush(30) == 0

    connector = f"org.apache.spark:spark-sql-kafka-0-10_{scala_of(pyspark.__version__)}:{pyspark.__version__}"
    script = textwrap.dedent(f"""
        from kplex.session import kplex_session
        spark = kplex_session({bootstrap!r}, master="local[2]", conf={{
            "spark.jars.packages": {connector!r}, "spark.jars.ivy": {str(IVY)!r}}})
        spark.sparkContext.setLogLevel("ERROR")
        jvm = spark._jvm
        def jar_of(name):
            cls = jvm.java.lang.Class.forName(name, True, jvm.java.lang.Thread.currentThread().getContextClassLoader())
            return cls.getProtectionDomain().getCodeSource().getLocation().toString()
        print("SPARKS", jar_of("org.apache.kafka.clients.consumer.KafkaConsumer"))
        print("KPLEXS", jar_of("{SHADED_KAFKA}.clients.consumer.KafkaConsumer"))
        (spark.read.format("kafka").option("kafka.bootstrap.servers", {bootstrap!r})
             .option("subscribe", {source!r}).load().createOrReplaceTempView("source"))
        print("READ", spark.table("source").count())
        spark.sql("CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '4',"
                  " 'kplex.physical_partitions' = '2')")
        spark.sql("INSERT INTO kplex.{table} SELECT kplex_key(CAST(key AS STRING)), kplex_order(offset),"
                  " CAST(value AS STRING) FROM source")
        spark.stop()
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_HOME",)}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900,
                          cwd=tmp_path, env=env)
    unresolved = re.search(r"unresolved dependency: (org\.apache\.spark#spark-[\w.-]+;[\w.-]+): not found", done.stderr)
    if unresolved:  # e.g. a connector not yet published for a new pyspark
        pytest.skip(f"Spark's Kafka connector {pyspark.__version__} cannot be resolved from Maven Central:"
                    f" {unresolved.group(1)} not found")
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    printed = dict(line.split(" ", 1) for line in done.stdout.splitlines()
                   if line.split(" ")[0] in ("SPARKS", "KPLEXS", "READ"))
    assert "kafka-clients" in printed["SPARKS"], printed  # the connector's own, unrelocated
    assert printed["KPLEXS"].endswith(Path(jars()[0]).name), printed
    assert printed["READ"] == str(ROWS)

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": table, "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(table, p, 0) for p in (0, 1)])
    seen = []
    while len(seen) < ROWS:
        message = consumer.poll(10)
        assert message is not None, f"only {len(seen)} of {ROWS} records"
        assert message.error() is None, message.error()
        seen.append(int(message.value()))
    assert consumer.poll(2) is None  # nothing twice
    consumer.close()
    assert sorted(seen) == list(range(ROWS))
