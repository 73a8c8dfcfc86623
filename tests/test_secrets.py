"""Kafka credentials given to kplex never show: not in the driver's (and its executors')
log, EXPLAIN, the Spark event log, error messages, the stored table definitions
(_kplex_tables), the commit log (_kplex_commits), or what the session and the CLI print.

The write and the read really log in with them: SASL_SSL with a SCRAM password and a TLS
trust store password, on the secured local broker (tests/conftest.py). A second catalog
tries a wrong password, so that an authentication error is searched too."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

import pyspark.java_gateway
import pytest
from pyspark import SparkContext
from pyspark.sql import SparkSession

from kplex import session
from kplex.cli import main
from kplex.kafka import config as kafka_config
from kplex.testing.verify import read_topic


def test_credentials_appear_nowhere(secured_kafka, fresh_name, tmp_path):
    cluster = secured_kafka
    settings = cluster.client_settings("admin")
    scram, truststore = cluster.users["admin"], cluster.certificates.password
    wrong = f"wrong-{uuid.uuid4().hex}"
    table, events = fresh_name("secret"), tmp_path / "events"
    events.mkdir()
    wrong_settings = cluster.client_settings("admin", wrong)
    script = textwrap.dedent(f"""
        from kplex.session import kplex_session
        from kplex.errors import OptionError, NotAuthenticatedError
        spark = kplex_session(None, master="local[2]", kafka_options={settings!r}, conf={{
            "spark.eventLog.enabled": "true", "spark.eventLog.dir": {str(events)!r},
            "spark.eventLog.compress": "false",  # plain JSON lines, to search
            "spark.sql.shuffle.partitions": "2"}})
        spark.sql("CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '4', 'kplex.physical_partitions' = '2')")
        rows = spark.range(200).selectExpr("kplex_key(CAST(id % 7 AS STRING)) AS key", "kplex_order(id) AS order_value",
                                           "CAST(id AS STRING) AS value")
        rows.write.format("kplex").option("table", {table!r}).mode("append").save()
        print(spark.sql("EXPLAIN EXTENDED INSERT INTO kplex.{table} SELECT key, order_value, value FROM kplex.{table}").first()[0])
        print("COUNT", spark.read.format("kplex").option("table", {table!r}).load().count())
        try:
            spark.sql("CREATE TABLE kplex.{table}_bad TBLPROPERTIES ('kplex.virtual_partitions' = '4',"
                      " 'kplex.physical_partitions' = '2', 'kafka.sasl.jaas.config' = 'x password={scram}')")
        except OptionError as e:
            print("REFUSED", e)
        spark.conf.set("spark.sql.catalog.wrong", "io.kplex.spark.KplexCatalog")
        for k, v in {wrong_settings!r}.items():
            spark.conf.set("spark.sql.catalog.wrong.kafka." + k, v)
        try:
            spark.sql("SELECT count(*) FROM wrong.{table}").collect()
        except NotAuthenticatedError as e:
            print("NOT AUTHENTICATED", e, e.java_trace)
        spark.stop()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-4000:]
    assert "COUNT 200" in done.stdout
    assert "REFUSED [KPLEX_BAD_OPTION] table property 'kafka.sasl.jaas.config'" in done.stdout
    assert "NOT AUTHENTICATED [KPLEX_NOT_AUTHENTICATED]" in done.stdout and "User:admin" in done.stdout

    # The CLI, with the credentials in a --kafka-config file. The file's bootstrap.servers go with
    # its credentials: they win over $KPLEX_BOOTSTRAP (here an address where nothing listens).
    config = tmp_path / "admin.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
    cli = [subprocess.run([sys.executable, "-m", "kplex", *args, "--kafka-config", str(config)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=dict(os.environ, KPLEX_BOOTSTRAP="127.0.0.1:9"))
           for args in (["read", table, "--vp", "0", "--stats"], ["recover", "--table", table])]
    assert [c.returncode for c in cli] == [0, 0], [c.stderr[-2000:] for c in cli]

    logs = [f for f in events.rglob("*") if f.is_file() and not f.name.endswith(".crc")]
    assert any("SparkListenerEnvironmentUpdate" in f.read_text(errors="replace") for f in logs)
    stored = [r.value or b"" for topic in ("_kplex_tables", "_kplex_commits") for r in read_topic(cluster.bootstrap, topic)]
    places = {"stdout": done.stdout, "stderr": done.stderr,
              **{f"kplex {c.args[3]} output": c.stdout + c.stderr for c in cli},
              **{str(f): f.read_text(errors="replace") for f in logs},
              "_kplex_tables and _kplex_commits": b"\n".join(stored).decode("utf-8", "replace")}
    for secret in (scram, truststore, wrong):
        leaks = [where for where, text in places.items() if secret in text]
        assert leaks == [], f"a secret leaked into {leaks}"
    assert table in places["_kplex_tables and _kplex_commits"]  # the stored definitions were read


def test_a_session_that_starts_its_jvm_puts_no_credential_on_its_command_line(monkeypatch):
    """pyspark starts a session's JVM with `spark-submit --conf KEY=VALUE` for each setting, where
    `ps` shows them for the JVM's life: `kplex_session` (`kplex sql run`, `kplex stream`) leaves
    the catalog's credentials off it, whether they come as kafka_options or as catalog settings.
    The launch is stopped at spark-submit, with the command it was given."""
    class Launched(Exception):
        pass

    commands: list[list[str]] = []

    def spark_submit(command, **_):
        commands.append(command)
        raise Launched

    monkeypatch.setattr(pyspark.java_gateway, "Popen", spark_submit)
    monkeypatch.setattr(SparkContext, "_gateway", None)
    monkeypatch.setattr(SparkContext, "_jvm", None)
    monkeypatch.setattr(SparkContext, "_active_spark_context", None)
    monkeypatch.setattr(SparkSession, "_instantiatedSession", None)
    monkeypatch.setattr(session, "jars", lambda: ["/opt/kplex-spark.jar"])
    for name in ("PYSPARK_GATEWAY_PORT", "SPARK_REMOTE", "SPARK_CONNECT_MODE_ENABLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KPLEX_CLASS_ARCHIVE", "off")
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kplex" password="s3cr3t-jaas";'
    with pytest.raises(Launched):
        session.kplex_session("broker:9093", master="local[1]", kafka_options={
            "security.protocol": "SASL_SSL", "sasl.jaas.config": jaas,
            "ssl.truststore.password": "s3cr3t-store"},
            conf={"spark.sql.catalog.other.kafka.sasl.jaas.config": jaas.replace("jaas", "conf")})
    [command] = commands
    line = " ".join(command)
    assert "spark.sql.catalog.kplex.kafka.bootstrap.servers=broker:9093" in line  # the rest is there
    assert "spark.sql.catalog.kplex.kafka.security.protocol=SASL_SSL" in line
    for secret in ("s3cr3t-jaas", "s3cr3t-conf", "s3cr3t-store"):
        assert secret not in line


JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kplex" password="s3cr3t";'


# file text                                        -> settings                 (why)
# k=v / k: v / k v                                 -> k = v                    three separators
# k = = v                                          -> k = "= v"                one separator only
# ! c / # c \                                      -> nothing                  comments, never continued
# jaas=...required \ + "   username=..."           -> one JAAS line            continued, leading blanks dropped
# k=a\\ (even backslashes)                         -> a\                       not continued, escape kept as one
# k=\u0041\tb                                      -> "A<tab>b"                Java's escapes
# k=SASL_SSL<blank><tab> / k=a\<blank><blank>       -> SASL_SSL / a             trimmed as Kafka's clients trim (String.trim), escaped or not
@pytest.mark.parametrize("text, settings", [
    ("a=1\nb: 2\nc 3\n", {"a": "1", "b": "2", "c": "3"}),
    ("k = = v\n", {"k": "= v"}),
    ("! a comment\n# another \\\nk=v\n", {"k": "v"}),
    ("sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
     '   username="kplex" \\\n\tpassword="s3cr3t";\n', {"sasl.jaas.config": JAAS}),
    ("k=a\\\\\nnext=1\n", {"k": "a\\", "next": "1"}),
    ("k=\\u0041\\tb\n", {"k": "A\tb"}),
    ("security.protocol=SASL_SSL \t\nk=a\\  \nt=SASL_SSL\\t\n", {"security.protocol": "SASL_SSL", "k": "a", "t": "SASL_SSL"}),
])
def test_a_settings_file_reads_as_kafkas_own_tools_read_it(text, settings, tmp_path):
    """--kafka-config is the file Kafka's tools take as --command-config: java.util.Properties."""
    path = tmp_path / "client.properties"
    path.write_text(text)
    assert kafka_config.load(path) == settings


@pytest.mark.parametrize("text, said", [
    ('sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required\n'
     '  username="kplex" password="s3cr3t";\n',
     "line 1 of the Kafka client settings in {file}: 'sasl.jaas.config' does not end in ';'"),
    ("security.protocol=SASL_SSL\n  s3cr3t\n", "line 2 of the Kafka client settings in {file} has no value"),
    ('security.protocol=SASL_SSL\n"s3cr3t"=x\n',
     "line 2 of the Kafka client settings in {file} does not start with a setting's name"),
    ("ssl.truststore.password=s3cr3t\\u00\n",
     "line 1 of the Kafka client settings in {file}: the value of 'ssl.truststore.password' has a \\u escape"),
])
def test_a_bad_settings_line_is_named_by_file_line_and_key_never_by_its_text(text, said, tmp_path, capsys):
    path = tmp_path / "client.properties"
    path.write_text(text)
    assert main(["status", "t", "--kafka-config", str(path)]) == 2
    err = capsys.readouterr().err
    assert said.format(file=path) in err and "s3cr3t" not in err, err
