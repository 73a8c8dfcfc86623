"""The local broker manager, kplex.testing.local_kafka (and scripts/kafka.sh), against real Kafka brokers.

Each cluster here is its own (module fixtures), separate from the suite's
shared broker: these tests stop brokers and start them again.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Iterator

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kplex.testing.local_kafka import LocalKafka, cluster_settings

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"

TIMEOUT_S = 60


@pytest.fixture(scope="module")
def one_broker() -> Iterator[LocalKafka]:
    with LocalKafka(brokers=1) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def three_brokers() -> Iterator[LocalKafka]:
    with LocalKafka(brokers=3) as cluster:
        yield cluster


def new_topic(bootstrap: str, partitions: int) -> str:
    """A fresh topic with the cluster's default replication factor."""
    name = f"local-kafka-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # must outlive the future
    admin.create_topics([NewTopic(name, partitions)])[name].result(TIMEOUT_S)
    return name


def produce(bootstrap: str, topic: str, values: list[str], **config: str) -> None:
    failures: list[KafkaError] = []
    producer = Producer({"bootstrap.servers": bootstrap, **config})
    for value in values:
        producer.produce(topic, value.encode(), key=value.encode(),
                         on_delivery=lambda error, _msg: error and failures.append(error))
    assert producer.flush(TIMEOUT_S) == 0, "records were still unsent after the timeout"
    assert failures == []


def read_all(bootstrap: str, topic: str, partitions: int) -> list[Message]:
    """Every committed record of ``topic``, read up to the end of each partition."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "unused",  # assigned partitions, no group and no commits
        "enable.auto.commit": False,
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
    })
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    records: list[Message] = []
    at_end: set[int] = set()
    try:
        while len(at_end) < partitions:
            msg = consumer.poll(TIMEOUT_S)
            assert msg is not None, f"no record nor end of partition within {TIMEOUT_S} s"
            if msg.error() is None:
                records.append(msg)
            elif msg.error().code() == KafkaError._PARTITION_EOF:
                at_end.add(msg.partition())
            else:
                raise AssertionError(msg.error())
    finally:
        consumer.close()
    return records


# brokers | replication factor | min.insync.replicas
#    1    |         1          |         1
#    2    |         2          |         1
#    3    |         3          |         2
#    5    |         3          |         2
@pytest.mark.parametrize("brokers, replicas, min_isr", [(1, "1", "1"), (2, "2", "1"), (3, "3", "2"), (5, "3", "2")])
def test_replication_settings_follow_the_broker_count(brokers: int, replicas: str, min_isr: str) -> None:
    settings = cluster_settings(brokers)
    assert settings["default.replication.factor"] == replicas
    assert settings["offsets.topic.replication.factor"] == replicas
    assert settings["transaction.state.log.replication.factor"] == replicas
    assert settings["min.insync.replicas"] == min_isr
    assert settings["transaction.state.log.min.isr"] == min_isr


def test_one_broker_serves_a_three_partition_topic(one_broker: LocalKafka) -> None:
    assert re.fullmatch(r"127\.0\.0\.1:\d+", one_broker.bootstrap)
    topic = new_topic(one_broker.bootstrap, partitions=3)
    values = [f"key-{i}" for i in range(60)]
    produce(one_broker.bootstrap, topic, values)

    records = read_all(one_broker.bootstrap, topic, partitions=3)
    assert sorted(r.value().decode() for r in records) == sorted(values)
    assert {r.partition() for r in records} == {0, 1, 2}


def test_a_transactional_producer_commits_and_readers_see_only_committed_records(one_broker: LocalKafka) -> None:
    topic = new_topic(one_broker.bootstrap, partitions=3)
    producer = Producer({"bootstrap.servers": one_broker.bootstrap, "transactional.id": f"tx-{topic}"})
    producer.init_transactions(TIMEOUT_S)
    producer.begin_transaction()
    for i in range(10):
        producer.produce(topic, f"committed-{i}".encode(), key=str(i).encode())
    producer.commit_transaction(TIMEOUT_S)
    producer.begin_transaction()
    producer.produce(topic, b"aborted", key=b"0")
    producer.abort_transaction(TIMEOUT_S)

    values = sorted(r.value().decode() for r in read_all(one_broker.bootstrap, topic, partitions=3))
    assert values == sorted(f"committed-{i}" for i in range(10))


#: The Kafka 3 broker scripts/test.sh runs the Spark 3.5 line against (its default).
KAFKA_3 = "3.6.2"


@pytest.mark.parametrize("version", [KAFKA_3, None], ids=["kafka-3", "pinned"])
def test_a_broker_runs_the_version_kplex_kafka_version_names_and_logs_it(
        version: str | None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pinned = re.search(r"^kafkaVersion=(\S+)$", (SCRIPTS.parent / "gradle.properties").read_text(), re.M)[1]
    if version is None:
        monkeypatch.delenv("KPLEX_KAFKA_VERSION", raising=False)
    else:
        monkeypatch.setenv("KPLEX_KAFKA_VERSION", version)
    with LocalKafka(brokers=1, workdir=tmp_path / "broker") as cluster:
        topic = new_topic(cluster.bootstrap, partitions=1)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": f"tx-{topic}"})
        producer.init_transactions(TIMEOUT_S)
        producer.begin_transaction()
        producer.produce(topic, b"committed")
        producer.commit_transaction(TIMEOUT_S)
        assert [r.value() for r in read_all(cluster.bootstrap, topic, partitions=1)] == [b"committed"]
        # The broker's own word for what runs, Kafka 3's (reload4j) and 4's (log4j2) alike.
        log = (tmp_path / "broker" / "node-0" / "logs" / "server.log").read_text()
    assert re.findall(r"Kafka version: (\S+)", log) == [version or pinned]


def test_two_processes_resolving_one_version_at_once_run_maven_once_and_get_the_same_jars(tmp_path: Path) -> None:
    # As CI's two streams may, each starting its first broker of the Kafka 3 version.
    code = f"from kplex.testing.local_kafka import kafka_libs; print(kafka_libs({KAFKA_3!r}))"
    env = {**os.environ, "KPLEX_CACHE": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
    outs = [proc.communicate(timeout=300) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0], outs
    libs = tmp_path / f"kafka-{KAFKA_3}" / "libs"
    assert [out.strip() for out, _ in outs] == [str(libs)] * 2
    assert sum(f"resolving Kafka {KAFKA_3} jars" in err for _, err in outs) == 1, outs
    assert any(libs.glob(f"kafka_2.13-{KAFKA_3}.jar"))
    assert sorted(p.name for p in libs.parent.iterdir()) == ["libs", "resolve.lock"]  # no staging left


@pytest.mark.parametrize("hard", [False, True], ids=["sigterm", "kill-9"])
def test_three_brokers_take_acks_all_writes_with_one_broker_down(three_brokers: LocalKafka, hard: bool) -> None:
    bootstrap = three_brokers.bootstrap
    assert len(bootstrap.split(",")) == 3
    topic = new_topic(bootstrap, partitions=3)
    safe = {"acks": "all", "enable.idempotence": "true"}

    three_brokers.stop_broker(1, hard=hard)
    produce(bootstrap, topic, [f"while-down-{i}" for i in range(30)], **safe)
    three_brokers.start_broker(1)
    assert three_brokers.running()
    produce(bootstrap, topic, [f"after-restart-{i}" for i in range(30)], **safe)

    assert len(read_all(bootstrap, topic, partitions=3)) == 60


def test_kafka_sh_start_prints_only_the_address_and_leaves_the_broker_running(tmp_path: Path) -> None:
    def kafka_sh(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SCRIPTS / "kafka.sh"), *args, "--dir", str(tmp_path)],
                              capture_output=True, text=True, timeout=120)

    try:
        started = kafka_sh("start")
        assert started.returncode == 0, started.stderr
        bootstrap = started.stdout.strip()
        assert re.fullmatch(r"127\.0\.0\.1:\d+", bootstrap), started.stdout

        assert kafka_sh("status").stdout.strip() == bootstrap
        assert kafka_sh("start").stdout.strip() == bootstrap  # already running
        topic = new_topic(bootstrap, partitions=1)
        produce(bootstrap, topic, ["still here"])
    finally:
        assert kafka_sh("stop").returncode == 0
    assert kafka_sh("status").returncode == 1
