"""Avro and Protobuf sources in the Confluent wire format, written by Confluent's own serializers.

No schema registry runs here: the serializers register their schemas with confluent-kafka's
in-memory registry (``mock://``), which assigns ids as a registry does; the bytes on the wire
are a real registry's. Spark decodes Avro with its own ``from_avro`` (spark-avro from Maven
Central) after ``kplex_confluent_payload`` strips the framing, in an INSERT and in a streaming
query; the Protobuf payload is checked by parsing what kplex wrote with the message class
(spark-protobuf is not served by the registries this project reaches, so ``from_protobuf``
cannot run here). Everything is read back with a plain consumer.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kplex.errors import ConfluentFramingError
from kplex.placement import virtual_partition
from kplex.testing import datagen, verify
from kplex.testing.maven import spark_jar

ROOT = Path(__file__).resolve().parents[1]
AVRO_SCHEMA = json.dumps({"type": "record", "name": "Pageview", "namespace": "kplex.test", "fields": [
    {"name": "userid", "type": "string"}, {"name": "pageid", "type": "string"}, {"name": "viewtime", "type": "long"}]})
V = 6


def pageview_class():
    """A proto3 Pageview message class, built from its descriptor (no protoc needed)."""
    proto = descriptor_pb2.FileDescriptorProto(name="kplex_pageview.proto", package="kplex.test", syntax="proto3")
    message = proto.message_type.add(name="Pageview")
    for number, (name, kind) in enumerate((("userid", "TYPE_STRING"), ("pageid", "TYPE_STRING"),
                                           ("viewtime", "TYPE_INT64")), start=1):
        message.field.add(name=name, number=number, type=getattr(descriptor_pb2.FieldDescriptorProto, kind),
                          label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kplex.test.Pageview"))


def pageviews(n: int) -> list[dict]:
    # Out of order across the three partitions, in order within each.
    return [{"userid": f"User_{i % 7}", "pageid": f"Page_{i % 5}", "viewtime": 1_565_606_000_000 + 10 * i - 500 * (i % 3)}
            for i in range(n)]


def produce(bootstrap: str, topic: str, views: list[dict], serialize) -> list[bytes]:
    datagen.ensure_topic(bootstrap, topic, 3)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    values = []
    for i, view in enumerate(views):
        value = serialize(view, SerializationContext(topic, MessageField.VALUE))
        values.append(value)
        producer.produce(topic, value=value, key=view["pageid"].encode(), partition=i % 3)
    assert producer.flush(30) == 0
    return values


@pytest.fixture(scope="module")
def job(bootstrap: str, tmp_path_factory) -> dict:
    registry = SchemaRegistryClient.new_client({"url": "mock://kplex-tests"})
    suffix = f"{os.getpid()}_{id(registry) & 0xffff:x}"
    names = {k: f"{k}_{suffix}" for k in ("avro_source", "protobuf_source", "avro_table", "stream_table",
                                          "protobuf_table")}
    views = pageviews(300)
    avro = AvroSerializer(registry, AVRO_SCHEMA)
    avro_values = produce(bootstrap, names["avro_source"], views, avro)
    message = pageview_class()
    protobuf = ProtobufSerializer(message, registry, {"use.deprecated.format": False})
    protobuf_values = produce(bootstrap, names["protobuf_source"], views,
                              lambda view, ctx: protobuf(message(**view), ctx))
    import pyspark

    settings = dict(names, bootstrap=bootstrap, avro_schema=AVRO_SCHEMA, virtual_partitions=V,
                    checkpoint=str(tmp_path_factory.mktemp("confluent") / "chk"),
                    avro_jar=str(spark_jar("spark-avro", pyspark.__version__)))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "python"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "confluent_job.py"), json.dumps(settings)],
                          capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-5000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return dict(names=names, views=views, avro_values=avro_values, protobuf_values=protobuf_values,
                message=message, result=result,
                ids={names["avro_source"]: registry.get_latest_version(f"{names['avro_source']}-value").schema_id,
                     names["protobuf_source"]: registry.get_latest_version(
                         f"{names['protobuf_source']}-value").schema_id})


def check_table(bootstrap: str, table: str, views: list[dict], values: list[bytes]) -> None:
    """Every source value once, keyed by its userid, in its virtual partition, in viewtime order."""
    by_value = {v: view for v, view in zip(values, views)}
    written = verify.read_topic(bootstrap, table)
    assert sorted(r.value for r in written) == sorted(values)
    orders = defaultdict(list)
    for r in written:
        view = by_value[r.value]
        assert r.key == view["userid"].encode()
        assert int(r.headers["kplex.order"]) == view["viewtime"]
        vp = int(r.headers["kplex.vp"])
        assert vp == virtual_partition(r.key, V) and r.partition == vp % 3
        orders[vp].append(view["viewtime"])
    assert all(seq == sorted(seq) for seq in orders.values())


def test_an_insert_keys_and_orders_by_avro_fields_that_from_avro_decodes(bootstrap, job):
    check_table(bootstrap, job["names"]["avro_table"], job["views"], job["avro_values"])


def test_a_streaming_query_keys_and_orders_by_the_same_avro_fields(bootstrap, job):
    check_table(bootstrap, job["names"]["stream_table"], job["views"], job["avro_values"])


def test_the_protobuf_payload_is_the_serialized_message(bootstrap, job):
    written = verify.read_topic(bootstrap, job["names"]["protobuf_table"])
    assert sorted(r.value for r in written) == sorted(job["protobuf_values"])
    decoded = []
    for r in written:
        message = job["message"]()
        message.ParseFromString(r.key)
        decoded.append((message.userid, message.pageid, message.viewtime))
    assert sorted(decoded) == sorted((v["userid"], v["pageid"], v["viewtime"]) for v in job["views"])


def test_the_schema_ids_are_those_the_registry_assigned(job):
    assert job["result"]["schema_ids"] == {topic: [schema_id] for topic, schema_id in job["ids"].items()}


def test_a_value_not_in_the_wire_format_is_an_error_and_nothing_is_written(spark, bootstrap, fresh_name):
    source, table = fresh_name("plain_json"), fresh_name("framed")
    datagen.ensure_topic(bootstrap, source, 1)
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(source, value=b'{"userid":"User_1"}')
    assert producer.flush(30) == 0
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    with pytest.raises(ConfluentFramingError, match=r"magic byte 123, not 0"):
        spark.sql(f"INSERT INTO kplex.{table} SELECT kplex_key(kplex_confluent_payload(value)),"
                  f" kplex_order(offset), value FROM kplex.{source}")
    assert verify.read_topic(bootstrap, table) == []
