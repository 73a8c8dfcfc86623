"""Contender: the re-keying script a Python user writes by hand with confluent-kafka.

Reads every source partition to its end, parses each JSON value, and produces it
keyed by ``userid`` to partition ``vp % P`` with the same ``kplex.vp`` and
``kplex.order`` headers as kplex (vp by Kafka's murmur2, cached per key). It makes no
attempt at order: records of one user arrive from several source partitions and go
out interleaved as they are consumed, so G2 is not promised (and not met), nor is
exactly once (G3).

    python bench/contenders/python_rekey.py --bootstrap B --source pageviews \\
        --target by_user --records 1000000 --v 9 --p 3
"""
from __future__ import annotations

import json
import time
import uuid

from common import arguments, emit
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from kplex.placement import virtual_partition


def main() -> None:
    args = arguments(__doc__).parse_args()
    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": f"python-rekey-{uuid.uuid4()}",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
    })
    producer = Producer({
        "bootstrap.servers": args.bootstrap,
        "enable.idempotence": True,
        "queue.buffering.max.messages": 1_000_000,
    })
    errors: list[str] = []

    def on_error(err: object) -> None:
        errors.append(str(err))

    partitions = consumer.list_topics(args.source, timeout=30).topics[args.source].partitions
    ends = {p: consumer.get_watermark_offsets(TopicPartition(args.source, p), timeout=30)[1]
            for p in partitions}
    started = time.perf_counter()
    consumer.assign([TopicPartition(args.source, p, OFFSET_BEGINNING) for p in ends if ends[p] > 0])
    pending = {p for p in ends if ends[p] > 0}
    placement: dict[str, tuple[int, bytes, bytes]] = {}
    written = 0
    while pending:
        for msg in consumer.consume(num_messages=10_000, timeout=0.5):
            if msg.error():
                raise KafkaException(msg.error())
            value = msg.value()
            view = json.loads(value)
            user = view["userid"]
            placed = placement.get(user)
            if placed is None:
                key = user.encode()
                vp = virtual_partition(key, args.v)
                placed = placement[user] = (vp % args.p, key, str(vp).encode())
            partition, key, vp_header = placed
            headers = [("kplex.vp", vp_header), ("kplex.order", str(view["viewtime"]).encode())]
            while True:
                try:
                    producer.produce(args.target, value, key, partition=partition,
                                     headers=headers, on_delivery=None)
                    break
                except BufferError:
                    producer.poll(0.05)
            written += 1
            if msg.offset() + 1 >= ends[msg.partition()]:
                pending.discard(msg.partition())
        producer.poll(0)
    if producer.flush(300):
        raise TimeoutError("records still undelivered after 300 s")
    seconds = time.perf_counter() - started
    consumer.close()
    emit({"job_s": seconds, "records": written, "errors": errors[:5]})


if __name__ == "__main__":
    main()
