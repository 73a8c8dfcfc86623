"""kplex's JVM errors arrive as kplex.errors exceptions without `translated()`, their
message kplex's own and the Java trace only on request; and a normal session prints no
warning of kplex's making."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from kplex import errors

V3 = "TBLPROPERTIES ('kplex.virtual_partitions' = '3', 'kplex.physical_partitions' = '3')"


def test_a_null_key_found_mid_data_is_a_null_key_error_with_kplexs_message(spark, fresh_name):
    table = fresh_name("nulls")
    spark.sql(f"CREATE TABLE kplex.{table} {V3}")
    rows = spark.range(1_000).selectExpr("IF(id = 777, NULL, CAST(id AS STRING)) AS k", "id", "CAST(id AS STRING) AS value")
    with pytest.raises(errors.NullKeyError) as raised:
        (rows.selectExpr("kplex_key(k) AS key", "kplex_order(id) AS order_value", "value")
             .write.format("kplex").option("table", table).mode("append").save())
    message = str(raised.value)
    assert message.startswith("[KPLEX_NULL_KEY] NULL key in column `key`") and "777" in message
    assert len(message.splitlines()) == 1
    assert "KplexException" in raised.value.java_trace and "\tat " in raised.value.java_trace


def test_an_error_found_when_planning_is_kplexs_too(spark, fresh_name):
    with pytest.raises(errors.OptionError, match=r"^\[KPLEX_UNKNOWN_PROPERTY\] unknown kplex table property"):
        spark.sql(f"CREATE TABLE kplex.{fresh_name('bad')} TBLPROPERTIES ('kplex.virtual_partitons' = '9')")


def test_errors_that_are_not_kplexs_pass_through_unchanged(spark):
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException) as raised:
        spark.sql("SELECT no_such_column FROM range(1)").collect()
    assert not isinstance(raised.value, errors.KplexError)


def test_a_kplex_session_starts_without_warnings_of_kplexs_making(bootstrap, tmp_path):
    script = textwrap.dedent(f"""
        from kplex.session import kplex_session
        spark = kplex_session({bootstrap!r}, master="local[1]")
        spark.sql("SELECT kplex_key('a'), kplex_vpartition('a', 9)").collect()
        spark.stop()
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    noisy = [line for line in done.stderr.splitlines()
             if "replaced a previously registered function" in line or ("WARN" in line and "kplex" in line.lower())]
    assert noisy == []


# Importing kplex patches Spark Connect's error conversion without importing Connect's client,
# which pulls in pandas and more: about 0.6 s of every `import kplex` (classic sessions too).
_CONNECT_ORDER = textwrap.dedent("""
    import sys
    if sys.argv[1] == "client-first":
        from pyspark.sql.connect.client import core
    import kplex
    out = {"client imported by kplex": sys.argv[1] == "kplex-first" and "pyspark.sql.connect.client.core" in sys.modules}
    from pyspark.errors.exceptions import connect
    from pyspark.sql.connect.client import core
    out["connect"] = connect.convert_exception.__module__
    out["client"] = core.convert_exception.__module__
    print(out)
""")


@pytest.mark.parametrize("order", ["kplex-first", "client-first"])
def test_connects_errors_are_kplexs_whichever_is_imported_first(order):
    pytest.importorskip("grpc", reason="the Spark Connect client needs pyspark[connect]")
    done = subprocess.run([sys.executable, "-c", _CONNECT_ORDER, order], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str({"client imported by kplex": False, "connect": "kplex.errors",
                                       "client": "kplex.errors"})
