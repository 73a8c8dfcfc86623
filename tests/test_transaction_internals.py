"""The one place kplex relies on kafka-clients internals (TransactionResumer): if a
kafka-clients upgrade changes them, these tests fail loudly, before any write does."""
from __future__ import annotations

from py4j.java_gateway import get_field

from kplex.testing import verify


def test_the_bundled_kafka_clients_has_the_internals_exactly_once_needs(spark):
    spark._jvm.io.kplex.spark.KplexAdmin.checkTransactionSupport()


def test_a_transaction_left_open_by_one_producer_is_committed_by_another(spark, bootstrap, fresh_name):
    topic = fresh_name("resume")
    spark.sql(f"CREATE TABLE kplex.{topic} TBLPROPERTIES ('kplex.virtual_partitions' = '1',"
              " 'kplex.physical_partitions' = '1')")
    jvm = spark._jvm
    kafka = jvm.io.kplex.shaded.org.apache.kafka.clients.producer

    def producer():
        props = jvm.java.util.Properties()
        props.put("bootstrap.servers", bootstrap)
        props.put("transactional.id", f"resume-test-{topic}")
        props.put("key.serializer", "io.kplex.shaded.org.apache.kafka.common.serialization.ByteArraySerializer")
        props.put("value.serializer", "io.kplex.shaded.org.apache.kafka.common.serialization.ByteArraySerializer")
        return kafka.KafkaProducer(props)

    writer = producer()
    writer.initTransactions()
    writer.beginTransaction()
    for i in range(5):
        writer.send(kafka.ProducerRecord(topic, bytearray(b"k"), bytearray(f"v{i}".encode())))
    writer.flush()
    id_and_epoch = jvm.io.kplex.spark.txn.TransactionResumer.idAndEpoch(writer)
    writer.close(jvm.java.time.Duration.ZERO)  # gone, transaction still open
    assert verify.read_topic(bootstrap, topic) == []

    committer = producer()
    producer_id, epoch = (get_field(id_and_epoch, name) for name in ("producerId", "epoch"))
    jvm.io.kplex.spark.txn.TransactionResumer.resume(committer, producer_id, epoch)
    committer.commitTransaction()
    committer.close()
    assert [r.value for r in verify.read_topic(bootstrap, topic)] == [f"v{i}".encode() for i in range(5)]


def test_the_producers_of_a_committed_transaction_go_on_with_the_next_one(spark, bootstrap, fresh_name):
    """What a streaming run does from one micro-batch to the next: the task's producer, whose
    transaction the driver committed in another producer, opens the next one under the same
    id and epoch (adoptCommitted), and the driver's producer, which committed, resumes and
    commits that one too. Read back with a plain consumer: both transactions, in order."""
    topic = _one_partition_table(spark, fresh_name("kept"))
    jvm, resumer, kafka = _internals(spark)
    writer, committer = _producer(jvm, bootstrap, f"kept-test-{topic}"), _producer(jvm, bootstrap, f"kept-test-{topic}")
    writer.initTransactions()
    for batch in range(3):
        if batch > 0:
            resumer.adoptCommitted(writer)
        writer.beginTransaction()
        for i in range(3):
            writer.send(kafka.ProducerRecord(topic, bytearray(b"k"), bytearray(f"b{batch}v{i}".encode())))
        writer.flush()
        id_and_epoch = resumer.idAndEpoch(writer)
        resumer.resume(committer, *(get_field(id_and_epoch, name) for name in ("producerId", "epoch")))
        committer.commitTransaction()
        assert [r.value.decode() for r in verify.read_topic(bootstrap, topic)] == [
            f"b{b}v{i}" for b in range(batch + 1) for i in range(3)]
    writer.close(jvm.java.time.Duration.ZERO)
    committer.close()


def test_a_producer_that_found_its_coordinator_first_commits_a_transaction_opened_after(
        spark, bootstrap, fresh_name):
    """What a batch write's driver does with the producers it prepares while the tasks write
    (PreparedCommitters): the lookup happens before the task's producer opens its transaction
    under the same id, and fences nothing (the task's sends go through); the transaction is
    then resumed and committed in the prepared producer. Read back with a plain consumer."""
    topic = _one_partition_table(spark, fresh_name("found"))
    jvm, resumer, kafka = _internals(spark)
    tid = f"found-test-{topic}"
    committer = _producer(jvm, bootstrap, tid)
    committer.partitionsFor(topic)
    resumer.findCoordinator(committer, tid)
    writer = _producer(jvm, bootstrap, tid)
    writer.initTransactions()
    writer.beginTransaction()
    for i in range(4):
        writer.send(kafka.ProducerRecord(topic, bytearray(b"k"), bytearray(f"v{i}".encode())))
    writer.flush()  # raises if the lookup had fenced the writer
    id_and_epoch = resumer.idAndEpoch(writer)
    writer.close(jvm.java.time.Duration.ZERO)
    assert verify.read_topic(bootstrap, topic) == []
    assert not resumer.failed(committer)
    resumer.resume(committer, *(get_field(id_and_epoch, name) for name in ("producerId", "epoch")))
    committer.commitTransaction()
    committer.close()
    assert [r.value for r in verify.read_topic(bootstrap, topic)] == [f"v{i}".encode() for i in range(4)]


def _one_partition_table(spark, name: str) -> str:
    spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '1',"
              " 'kplex.physical_partitions' = '1')")
    return name


def _internals(spark):
    """The JVM, kplex's TransactionResumer and the bundled kafka-clients' producer package."""
    jvm = spark._jvm
    return jvm, jvm.io.kplex.spark.txn.TransactionResumer, jvm.io.kplex.shaded.org.apache.kafka.clients.producer


def _producer(jvm, bootstrap: str, transactional_id: str):
    props = jvm.java.util.Properties()
    props.put("bootstrap.servers", bootstrap)
    props.put("transactional.id", transactional_id)
    props.put("key.serializer", "io.kplex.shaded.org.apache.kafka.common.serialization.ByteArraySerializer")
    props.put("value.serializer", "io.kplex.shaded.org.apache.kafka.common.serialization.ByteArraySerializer")
    return jvm.io.kplex.shaded.org.apache.kafka.clients.producer.KafkaProducer(props)
