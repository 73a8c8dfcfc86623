"""The plain Kafka clients (confluent-kafka) kplex opens outside Spark, set up in one place.

:data:`QUIET` takes librdkafka's own log lines (connection refused while a broker
starts, ...): kplex reports what goes wrong as exceptions instead. :func:`consumer`
is the consumer every read uses: ``read_committed`` (G3), committing nothing, from
the earliest offset, telling when a partition ends; :func:`consume` takes what it has
read so far.

>>> c = consumer("localhost:9092")  # doctest: +SKIP
>>> partitions(c, "pageviews", timeout=10)  # doctest: +SKIP
[0, 1, 2]
"""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Message

from kplex.errors import KplexError, kplex_error
from kplex.settings import topic_name_problem

__all__ = ["QUIET", "consumer", "consume", "partitions", "access_error"]

QUIET = logging.getLogger("kplex.librdkafka")
QUIET.addHandler(logging.NullHandler())
QUIET.propagate = False


class _Consumer(Consumer):
    """A consumer that remembers the login failures librdkafka reports (it retries them
    forever, and only says so through ``error_cb``), to tell them from a broker that is down."""

    bootstrap: str
    principal: str
    login_failures: list[KafkaError]


#: How long one call of librdkafka's consume() waits: see :func:`consume`.
CONSUME_WAIT_S = 0.2

_LOGIN = (KafkaError._AUTHENTICATION, KafkaError._SSL)
#: A refused ACL, by Kafka's error: the KPLEX_NOT_AUTHORIZED sub-class of the resource it is for
#: when kplex does not know its name.
_AUTHORIZATION = {
    KafkaError.TOPIC_AUTHORIZATION_FAILED: "TOPIC_UNNAMED",
    KafkaError.GROUP_AUTHORIZATION_FAILED: "CONSUMER_GROUP_UNNAMED",
    KafkaError.CLUSTER_AUTHORIZATION_FAILED: "CLUSTER",
}


def consumer(bootstrap: str, config: Mapping[str, Any] | None = None) -> Consumer:
    """A consumer of ``bootstrap`` for reading ranges of offsets; ``config`` adds or
    overrides librdkafka settings (security, ...)."""
    failures: list[KafkaError] = []

    def on_error(error: KafkaError) -> None:
        if error.code() in _LOGIN:
            failures.append(error)

    settings: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": f"kplex-read-{uuid.uuid4().hex}",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "enable.partition.eof": True,
        "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
        "logger": QUIET,
    }
    settings.update(config or {})
    settings["error_cb"] = on_error
    client = _Consumer(settings)
    client.bootstrap, client.login_failures = bootstrap, failures
    user = settings.get("sasl.username")
    client.principal = f"User:{user}" if user else "User:ANONYMOUS"
    return client


def access_error(client: Consumer, error: KafkaError | None = None, operation: str = "READ",
                 topic: str | None = None) -> KplexError | None:
    """The kplex error for a refused login (seen by ``client``) or a missing ACL
    (``error``), naming the principal, the operation and the resource (``topic``, if kplex
    was using one); None if neither."""
    principal = getattr(client, "principal", "the client's principal")
    bootstrap = getattr(client, "bootstrap", "the broker")
    if error is not None and error.code() in _AUTHORIZATION:
        kind = "TOPIC" if topic else _AUTHORIZATION[error.code()]
        return kplex_error(f"NOT_AUTHORIZED.{kind}", principal=principal, operation=operation, resource=topic,
                           bootstrap=bootstrap, cause=error.str())
    client.poll(0.5)  # serves error_cb: librdkafka reports a refused login there, nowhere else
    failures = getattr(client, "login_failures", [])
    if failures or (error is not None and error.code() in _LOGIN):
        said = (failures or [error])[-1].str()
        return kplex_error("NOT_AUTHENTICATED.PYTHON_CLIENT", bootstrap=bootstrap, principal=principal, cause=said)
    return None


def partitions(client: Consumer, topic: str, timeout: float) -> list[int] | None:
    """The partitions of ``topic``, sorted; None if it does not exist."""
    problem = topic_name_problem(topic)
    if problem is not None:
        raise kplex_error("BAD_TOPIC_NAME.TOPIC", topic=topic, problem=problem)
    try:
        metadata = client.list_topics(topic, timeout=timeout).topics.get(topic)
    except KafkaException as e:
        raise access_error(client) or kplex_error("UNREACHABLE.NO_ANSWER", bootstrap=getattr(client, "bootstrap", ""), cause=e) from None
    if metadata is None or metadata.error is not None:
        if metadata is not None and metadata.error.code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise access_error(client, metadata.error, "DESCRIBE", topic=topic) or KafkaException(metadata.error)
        return None
    return sorted(metadata.partitions)


def consume(client: Consumer, timeout: float, num_messages: int = 1000) -> list[Message]:
    """Up to ``num_messages`` messages and partition-end events, as soon as there are any;
    empty only when nothing came for ``timeout`` seconds. librdkafka's ``consume`` returns
    when it holds all ``num_messages`` or its whole wait is up, so a read whose last batch is
    smaller (any read of a small topic) would wait out the timeout that is meant for a
    stalled broker; here each call waits :data:`CONSUME_WAIT_S` at most."""
    deadline = time.monotonic() + timeout
    while True:
        messages = client.consume(num_messages, min(CONSUME_WAIT_S, max(0.0, deadline - time.monotonic())))
        if messages or time.monotonic() >= deadline:
            return messages
