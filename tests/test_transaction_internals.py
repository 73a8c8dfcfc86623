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
    topic = fresh_name("kept")
    spark.sql(f"CREATE TABLE kplex.{topic} TBLPROPERTIES ('kplex.virtual_partitions' = '1',"
              " 'kplex.physical_partitions' = '1')")
    jvm = spark._jvm
    resumer = jvm.io.kplex.spark.txn.TransactionResumer
    kafka = jvm.io.kplex.shaded.org.apache.kafka.clients.producer
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


def _producer(jvm, bootstrap: str, transactional_id: str):
    props = jvm.java.util.Properties()
    props.put("bootstrap.servers", bootstrap)
    props.put("transactional.id", transactional_id)
    props.put("key.serializer", "io.kplex.shaded.org.apache.kafka.common.serialization.ByteArraySerializer")
    props.put("value.serializer", "io.kplex.shaded.org.apache.kafka.common.serialization.ByteArraySerializer")
    return jvm.io.kplex.shaded.org.apache.kafka.clients.producer.KafkaProducer(props)
