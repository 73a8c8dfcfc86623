"""The package as users install it: a wheel (and an sdist) built from python/, installed
into a fresh virtual environment with no repository on its path, then the CLI and a small
write against the broker from there, checked with a plain consumer."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
import zipfile
from pathlib import Path

import pyspark
import pytest
from confluent_kafka import Consumer, TopicPartition

ROOT = Path(__file__).resolve().parent.parent
#: The pyspark the fresh environment gets: that of the line under test (the main suite's, or that
#: of a run of scripts/test_spark_version.sh), so that each line that runs this file gets the wheel installed.
LINE = os.environ.get("KPLEX_EXPECT_SPARK") or pyspark.__version__
MODULES = ("kplex/__init__.py", "kplex/cli/__init__.py", "kplex/session.py", "kplex/servers.py", "kplex/sqltools/check.py",
           "kplex/sqltools/translate.py", "kplex/testing/verify.py", "kplex/jars/kplex-spark.jar", "kplex/jars/kplex-spark-3.5.jar",
           "kplex/sql/pageviews_by_user.sql", "kplex/log4j2-session.properties")


def run(argv: list, cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SPARK_HOME", "VIRTUAL_ENV")}
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)
    assert done.returncode == 0, f"{argv}:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    # Built from a copy of python/: setuptools writes its build files into the tree it builds,
    # and scripts/test.sh runs another Spark line's run of this test while the main suite runs.
    tree = tmp_path_factory.mktemp("tree") / "python"
    shutil.copytree(ROOT / "python", tree, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    # The sdist, then the wheel built from that sdist (so the sdist is proven complete too).
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, tree], cwd=out)
    return out


@pytest.fixture(scope="module")
def venv(dist, tmp_path_factory) -> Path:
    home = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", home / "env"], cwd=home)
    wheel = next(dist.glob("kplex_spark-*.whl"))
    # --no-compile: Python compiles what it imports; compiling all of pyspark costs CI a core for a while.
    run([home / "env" / "bin" / "pip", "install", "--quiet", "--disable-pip-version-check", "--no-compile", wheel,
         f"pyspark=={LINE}"], cwd=home)
    return home / "env"


def test_the_wheel_and_the_sdist_carry_every_module_the_jars_and_the_example_sql(dist):
    wheel = zipfile.ZipFile(next(dist.glob("kplex_spark-*.whl"))).namelist()
    sdist = tarfile.open(next(dist.glob("kplex*spark-*.tar.gz"))).getnames()
    for member in MODULES:
        assert member in wheel, member
        assert any(name.endswith("/" + member) for name in sdist), member
    # One jar: kafka-clients is relocated inside the plugin jar, none beside it.
    assert sorted(m for m in wheel if m.endswith(".jar")) == ["kplex/jars/kplex-spark-3.5.jar", "kplex/jars/kplex-spark.jar"]
    sources = {str(p.relative_to(ROOT / "python")) for p in (ROOT / "python" / "kplex").rglob("*.py")}
    assert sources <= set(wheel), sources - set(wheel)
    # Every example under sql/ (python/kplex/sql links to it), the pipeline's spec and tables included.
    examples = {"kplex/sql/" + str(p.relative_to(ROOT / "sql")) for p in (ROOT / "sql").rglob("*") if p.is_file()}
    assert examples <= set(wheel), examples - set(wheel)


def test_an_installed_wheel_runs_the_cli_and_writes_without_the_repository(venv, bootstrap, fresh_name, tmp_path):
    bin_dir = venv / "bin"
    where = run([bin_dir / "python", "-c", "import kplex, pyspark; print(kplex.__file__); print(kplex.jars()[0])"],
                cwd=tmp_path).stdout.split()
    assert all(str(venv) in path for path in where), where
    assert where[1].endswith("kplex-spark-3.5.jar" if LINE.startswith("3.5.") else "kplex-spark.jar"), where
    installed = run([bin_dir / "python", "-c", "import pyspark; print(pyspark.__version__)"], cwd=tmp_path).stdout
    assert installed.strip() == LINE, installed
    helped = run([bin_dir / "kplex", "--help"], cwd=tmp_path).stdout
    for command in ("demo", "datagen", "recover", "sql", "translate", "read", "server"):
        assert command in helped
    shipped = Path(where[0]).parent / "sql" / "pageviews_by_user.sql"
    run([bin_dir / "kplex", "sql", "check", shipped], cwd=tmp_path)  # exits non-zero on any error
    job = tmp_path / "job.toml"
    job.write_text((ROOT / "tests" / "sql_cases" / "translate" / "consistent_read.toml").read_text())
    assert "INSERT INTO kplex." in run([bin_dir / "kplex", "translate", job], cwd=tmp_path).stdout

    table = fresh_name("from_wheel")
    started = run([bin_dir / "python", "-c", textwrap.dedent(f"""
        from kplex.session import kplex_session
        spark = kplex_session({bootstrap!r}, master="local[1]")
        spark.sql("CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '4', 'kplex.physical_partitions' = '2')")
        spark.sql("INSERT INTO kplex.{table} SELECT kplex_key(CAST(id % 10 AS STRING)), kplex_order(id), CAST(id AS STRING) FROM range(100)")
        spark.stop()
    """)], cwd=tmp_path)
    # The session's driver logs as the wheel's log4j2 file says: none of Spark's start-up notices.
    assert "Using Spark's default log4j profile" not in started.stderr, started.stderr[-3000:]
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": table, "isolation.level": "read_committed",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(table, p, 0) for p in (0, 1)])
    seen = []
    while len(seen) < 100:
        message = consumer.poll(10)
        assert message is not None, f"only {len(seen)} of 100 records"
        assert message.error() is None, message.error()
        headers = dict(message.headers())
        seen.append((int(message.value()), int(headers["kplex.vp"]), message.partition()))
    consumer.close()
    assert sorted(v for v, _, _ in seen) == list(range(100))
    assert all(vp % 2 == partition for _, vp, partition in seen)
