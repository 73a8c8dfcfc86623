"""One broker and one Spark session per test run; a fresh topic name per test.

The broker is, in order of preference: the address in ``KPLEX_BOOTSTRAP``; a
testcontainers Kafka container when a Docker engine answers; the project's own
local Apache Kafka (kplex.testing.local_kafka), which is what runs here and in CI.
"""
from __future__ import annotations

import os
import uuid
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

# No JVM class archive (kplex.class_archive) for the suite's sessions, unless the caller chose
# one: a machine's first session writes it, running slower meanwhile, and which session is
# first would depend on the order of the tests. tests/test_class_archive.py sets its own.
os.environ.setdefault("KPLEX_CLASS_ARCHIVE", "off")


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
        yield os.environ["KPLEX_BOOTSTRAP"]
    elif _docker_answers():
        from testcontainers.kafka import KafkaContainer

        with KafkaContainer().with_kraft() as kafka:
            yield kafka.get_bootstrap_server()
    else:
        from kplex.testing.local_kafka import LocalKafka

        with LocalKafka(brokers=1) as cluster:
            yield cluster.bootstrap


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
        yield cluster


@pytest.fixture(scope="session")
def spark(bootstrap: str):
    from kplex.session import kplex_session

    session = kplex_session(bootstrap, master=MASTER, app_name="kplex-tests", conf={
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.adaptive.enabled": "true",
        "spark.driver.memory": "1g",
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
