"""kplex from JDBC: Spark's Thrift server (`kplex server thrift`, its own JVM) driven with
pyspark's own beeline, as a BI tool would; checked with a plain Kafka consumer."""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from conftest import TEST_HOOKS_ENV
from read_support import described_high_marks
from servers import kplex_server

from kplex.servers import spark_home
from kplex.testing import datagen
from kplex.testing.verify import check_derived_topic


@pytest.fixture(scope="module")
def jdbc_url(bootstrap, tmp_path_factory):
    """A shared server as users get it: the test harness's fault hooks are not armed in it."""
    armed = os.environ.pop(TEST_HOOKS_ENV, None)
    try:
        with kplex_server("thrift", bootstrap, tmp_path_factory.mktemp("thrift")) as port:
            if armed is not None:
                os.environ[TEST_HOOKS_ENV] = armed
                armed = None
            yield f"jdbc:hive2://127.0.0.1:{port}/default"
    finally:
        if armed is not None:
            os.environ[TEST_HOOKS_ENV] = armed


def beeline(url: str, sql: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([str(spark_home() / "bin" / "beeline"), "-u", url, "-n", "kplex", "--silent=true",
                           "--showHeader=false", "--outputformat=tsv2", "-e", sql],
                          capture_output=True, text=True, timeout=600, cwd=cwd,
                          env=dict(os.environ, SPARK_HOME=str(spark_home())))


def test_create_insert_and_read_through_beeline(jdbc_url, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("jdbc_src"), fresh_name("jdbc_by_user")
    datagen.generate_pageviews(bootstrap, source, 1_500, partitions=3, users=20, seed=5, out_of_order_ms=500)
    done = beeline(jdbc_url, f"""
        CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '9', 'kplex.physical_partitions' = '3');
        INSERT INTO kplex.{target}
          SELECT kplex_key(kplex_json(value, '/userid')),
                 kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value
          FROM kplex.{source};
        SELECT count(*), count(DISTINCT vpartition) FROM kplex.{target};
        DESCRIBE TABLE EXTENDED kplex.{target};
        SET kplex.last_write;
    """, tmp_path)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # tsv2: a row per line, columns split by tabs (beeline may wrap a value in NUL quotes).
    rows = [line.replace("\0", "").split("\t") for line in done.stdout.splitlines() if line.strip()]
    assert ["1500", "9"] in rows, rows
    summary = [json.loads(row[1]) for row in rows if row[0] == "kplex.last_write"]
    assert summary and summary[0]["table"] == target and summary[0]["rows"] == 1500, rows
    assert check_derived_topic(bootstrap, source, target, 9, 3).ok
    # DESCRIBE TABLE EXTENDED appends the table's state: its high marks as a plain consumer reads them.
    assert ["# kplex state", "", ""] in rows, rows
    state = {row[0]: row[1] for row in rows if len(row) == 3}
    assert {vp: state[f"vp {vp} high order"] for vp in range(9)} == described_high_marks(bootstrap, target, 9)


def test_a_kplex_error_reaches_the_jdbc_client_with_its_message(jdbc_url, fresh_name, tmp_path):
    done = beeline(jdbc_url, f"CREATE TABLE kplex.{fresh_name('bad')} TBLPROPERTIES ('kplex.virtual_partitons' = '9')",
                   tmp_path)
    assert done.returncode != 0
    assert "[KPLEX_UNKNOWN_PROPERTY]" in done.stdout + done.stderr
    assert "kplex.virtual_partitions" in done.stdout + done.stderr


def test_a_sql_user_setting_a_test_hook_on_a_shared_server_changes_nothing(jdbc_url, bootstrap, fresh_name, tmp_path):
    """`SET spark.kplex.testing.halt_after_commits=1` used to halt the server's JVM at the next
    INSERT, for every user. Now the INSERT is refused naming the setting, nothing is written,
    and the server serves the next statement; RESET, the same INSERT writes."""
    source, target = fresh_name("hook_src"), fresh_name("hook_by_user")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=10, seed=3)
    insert = f"""INSERT INTO kplex.{target}
          SELECT kplex_key(kplex_json(value, '/userid')),
                 kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value
          FROM kplex.{source};"""
    create = beeline(jdbc_url, f"CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
                               " 'kplex.physical_partitions' = '3');", tmp_path)
    assert create.returncode == 0, create.stdout[-2000:] + create.stderr[-2000:]
    for hook in ("halt_after_commits", "halt_after_rows", "sleep_ms"):
        refused = beeline(jdbc_url, f"SET spark.kplex.testing.{hook}=1; {insert}", tmp_path)
        assert refused.returncode != 0
        said = refused.stdout + refused.stderr
        assert "KPLEX_TEST_HOOK" in said and f"'kplex.testing.{hook}'" in said, said[-3000:]
        assert f"RESET spark.kplex.testing.{hook}" in said, said[-3000:]
    # The server is alive, and the refused INSERTs wrote nothing.
    alive = beeline(jdbc_url, f"SELECT count(*) FROM kplex.{target};", tmp_path)
    rows = [line.replace("\0", "").strip() for line in alive.stdout.splitlines() if line.strip()]
    assert alive.returncode == 0 and rows == ["0"], alive.stdout + alive.stderr
    assert check_derived_topic(bootstrap, source, target, 9, 3).derived_count == 0
    written = beeline(jdbc_url, f"RESET spark.kplex.testing.halt_after_commits; {insert}"
                                f" SELECT count(*) FROM kplex.{target};", tmp_path)
    assert written.returncode == 0, written.stdout[-2000:] + written.stderr[-2000:]
    report = check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.ok and report.derived_count == 300, report.summary()


def test_a_shared_jdbc_server_keeps_the_catalogs_it_started_with_as_it_started_them(jdbc_url, bootstrap, tmp_path):
    """`kplex server thrift` is restricted: a SQL user cannot register a kplex catalog of their
    own (it would take the server's credentials to any cluster) nor point the server's catalog
    elsewhere in their session; each refusal names the catalog or the setting, and the next
    session finds the server's catalog as it started."""
    mine = beeline(jdbc_url, "SET spark.sql.catalog.mine = io.kplex.spark.KplexCatalog;"
                             f" SET spark.sql.catalog.mine.kafka.bootstrap.servers = {bootstrap}; SHOW TABLES IN mine;",
                   tmp_path)
    said = mine.stdout + mine.stderr
    assert mine.returncode != 0 and "KPLEX_SERVER_RESTRICTED" in said and "catalog 'mine'" in said, said[-3000:]
    moved = beeline(jdbc_url, "SET spark.kplex.server.restricted = false;"
                              " SET spark.sql.catalog.kplex.kafka.bootstrap.servers = 127.0.0.1:1; SHOW TABLES IN kplex;",
                    tmp_path)
    said = moved.stdout + moved.stderr
    assert moved.returncode != 0, said[-3000:]
    assert "KPLEX_SERVER_RESTRICTED" in said and "'spark.sql.catalog.kplex.kafka.bootstrap.servers'" in said, said[-3000:]
    shown = beeline(jdbc_url, "SHOW TABLES IN kplex;", tmp_path)
    assert shown.returncode == 0, shown.stdout[-2000:] + shown.stderr[-2000:]
