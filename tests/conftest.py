"""One broker and one Spark session per test run; a fresh topic name per test.

The broker is, in order of preference: the address in ``KPLEX_BOOTSTRAP``; a
testcontainers Kafka container when a Docker engine answers; the project's own
local Apache Kafka (kplex.testing.local_kafka), which is what runs here and in CI.
"""
from __future__ import annotations

import gc
import importlib.metadata
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Callable, Iterator

import pytest

# Task retries (up to 4 attempts) even in local mode, so injected failures are retried.
MASTER = os.environ.get("KPLEX_TEST_MASTER", "local[2,4]")

# The harness arms kplex's fault hooks (kplex.testing.* settings) in every JVM it starts: its
# Spark session, the drivers it runs as subprocesses, the servers (all inherit this
# environment). Nothing a SQL user can set arms them (testing/FaultInjection); a server
# started without it is how tests show that (test_thrift.py).
TEST_HOOKS_ENV = "KPLEX_TESTING_FAULTS"
os.environ[TEST_HOOKS_ENV] = "1"

# The JVM class archive (kplex.class_archive) of the suite's local sessions, as a user's
# machine has one after its first session: written once, before any test, by a session of its
# own that does what the tests' sessions do (prime_class_archive, when the broker is up), so
# that no test's session is the one that writes it, whatever the order of the tests. Kept
# apart from a user's archives, per pyspark (each Spark line's tests have theirs), between
# runs. KPLEX_CLASS_ARCHIVE=off runs the suite without one; tests/test_class_archive.py sets
# its own directories.
os.environ.setdefault("KPLEX_CLASS_ARCHIVE", str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kplex" / "test-class-archives"
    / importlib.metadata.version("pyspark")))


def _docker_answers() -> bool:
    try:
        import docker  # installed with testcontainers

        docker.from_env(timeout=3).ping()
        return True
    except Exception:  # noqa: BLE001 - any failure means no engine
        return False


@pytest.fixture(scope="session")
def bootstrap() -> Iterator[str]:
    if os.environ.get("KPLEX_BOOTSTRAP"):
        prime_class_archive(os.environ["KPLEX_BOOTSTRAP"])
        yield os.environ["KPLEX_BOOTSTRAP"]
    elif _docker_answers():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer().with_kraft() as kafka:
            prime_class_archive(kafka.get_bootstrap_server())
            yield kafka.get_bootstrap_server()
    else:
        from kplex.testing.local_kafka import LocalKafka

        with LocalKafka(brokers=1) as cluster:
            prime_class_archive(cluster.bootstrap)
            yield cluster.bootstrap
            drop_unreachable_clients()


def drop_unreachable_clients() -> None:
    """Before a broker of the suite stops: a test's frame kept in a cycle (``with pytest.raises()
    as failure`` holds the exception, whose traceback holds the frame) keeps the Kafka clients
    in it connected until Python's cycle collector runs; one left for the exit reconnects to
    the stopped broker and logs "Connection refused" after the suite's summary. Collected now,
    they close while their broker still answers."""
    gc.collect()


#: The session that writes the suite's class archive, when its JVM has none to map: an INSERT
#: into a kplex table and a read of it, so the archive holds the classes the tests' sessions
#: load; the archive is written as its process exits. A JVM that maps one ends at once.
_PRIMING = """
import sys, uuid
from kplex.session import kplex_session
from kplex.testing import datagen
bootstrap, name = sys.argv[1], "class_archive_" + uuid.uuid4().hex[:8]
spark = kplex_session(bootstrap, master="local[2]")
options = spark.sparkContext.getConf().get("spark.driver.defaultJavaOptions", "")
if "-XX:ArchiveClassesAtExit=" in options:
    datagen.generate_pageviews(bootstrap, name + "_src", 300, partitions=3, users=15, seed=1)
    spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '6', 'kplex.physical_partitions' = '3')")
    spark.sql(f"INSERT INTO kplex.{name} SELECT kplex_key(kplex_json(value, '/userid')),"
              f" kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value FROM kplex.{name}_src")
    assert spark.sql(f"SELECT count(*) FROM kplex.{name}").collect()[0][0] == 300
"""


def prime_class_archive(bootstrap: str) -> None:
    """Has the suite's class archive written (see KPLEX_CLASS_ARCHIVE above) if the sessions'
    JVM settings have none yet: once per machine and pyspark, about 20 s; a few seconds to see
    that one is there. A failure leaves the tests' sessions to write one, as a user's would."""
    from kplex import class_archive

    if class_archive.archive_dir() is None:
        return
    done = subprocess.run([sys.executable, "-c", _PRIMING, bootstrap], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "python")})
    if done.returncode != 0:
        print(f"conftest: writing the tests' class archive failed:\n{done.stderr[-2000:]}", file=sys.stderr)


@pytest.fixture(scope="session")
def secured_kafka():
    """A second local broker with a SASL_SSL listener (SCRAM users, TLS) and ACLs
    (kplex.testing.local_kafka, secured=True); its open listener is the harness's super
    user. kplex's own topics exist, as a cluster operator would have made them."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from kplex.testing.local_kafka import LocalKafka

    with LocalKafka(brokers=1, secured=True) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for future in admin.create_topics([NewTopic(t, 1, config={"cleanup.policy": "compact"})
                                           for t in ("_kplex_tables", "_kplex_commits")]).values():
            future.result(30)
        del admin, future  # not kept connected to the broker until it stops
        yield cluster
        drop_unreachable_clients()


@pytest.fixture(scope="session")
def spark(bootstrap: str):
    from kplex.session import kplex_session

    session = kplex_session(bootstrap, master=MASTER, app_name="kplex-tests", conf={
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.adaptive.enabled": "true",
    })
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def fresh_name(request) -> Callable[[str], str]:
    """Topic and table names unique to this test."""
    def make(stem: str) -> str:
        return f"{stem}_{uuid.uuid4().hex[:8]}"
    return make
