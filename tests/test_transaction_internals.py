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
