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
import re
import time
import uuid
from typing import Any, Mapping

from confluent_kafka import Consumer, KafkaError, KafkaException, Message

from kplex.errors import KplexError, kplex_error
from kplex.kafka.config import ENV_VAR, ClientSettings
from kplex.settings import topic_name_problem

__all__ = ["QUIET", "consumer", "consume", "partitions", "access_error", "settings_error", "check_settings"]

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
        "allow.auto.create.topics": False,  # a read never makes the topic it asks about
        "logger": QUIET,
    }
    settings.update(config or {})
    settings["error_cb"] = on_error
    try:
        client = _Consumer(settings)
    except KafkaException as e:
        raise settings_error(e.args[0], config or {}) from None
    client.bootstrap, client.login_failures = bootstrap, failures
    user = settings.get("sasl.username")
    client.principal = f"User:{user}" if user else "User:ANONYMOUS"
    return client


def check_settings(config: Mapping[str, Any]) -> None:
    """Raise :func:`settings_error` if librdkafka refuses ``config`` (librdkafka settings): a
    consumer of no broker is made of them (it connects nowhere) and closed, before anything
    slow starts."""
    try:
        Consumer({"group.id": "kplex-check", **config, "logger": QUIET}).close()
    except KafkaException as e:
        raise settings_error(e.args[0], config) from None


#: A setting's name in librdkafka's words: in quotes ("socket.timeout.ms", `x.y=z`) or bare.
_NAME = re.compile(r"(?<![\w./-])[a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+(?![\w/-])")
#: Settings librdkafka names, bare, when they are missing.
_CREDENTIALS = ("sasl.username", "sasl.password")


def settings_error(error: KafkaError, config: Mapping[str, Any]) -> KplexError:
    """The kplex error for librdkafka settings ``config`` that librdkafka refused to make a
    client of (``error``): its words, each setting they name as the user gave it, and the file
    the settings came from, when ``config`` knows them (:class:`~kplex.kafka.config.ClientSettings`
    of a ``--kafka-config`` file). A setting it says is missing is one the user must add.

    >>> refused = KafkaError(KafkaError._INVALID_ARG, 'No such configuration property: "bogus.prop"')
    >>> print(settings_error(refused, {"bogus.prop": "1"}))
    [KPLEX_KAFKA] the Python clients (librdkafka) refuse 'bogus.prop': No such configuration property: "bogus.prop"
    >>> from kplex.kafka.config import librdkafka
    >>> print(settings_error(refused, librdkafka({"librdkafka.bogus.prop": "1"}, "client.properties")))
    [KPLEX_BAD_OPTION] cannot read the Kafka client settings file client.properties (--kafka-config or $KPLEX_KAFKA_CONFIG): the Python clients (librdkafka) refuse 'librdkafka.bogus.prop': No such configuration property: "librdkafka.bogus.prop"
    >>> missing = KafkaError(KafkaError._INVALID_ARG, "Failed to create consumer: sasl.username and sasl.password must be set")
    >>> print(settings_error(missing, librdkafka({"sasl.mechanism": "SCRAM-SHA-256"})))
    [KPLEX_KAFKA] the Python clients (librdkafka) need 'sasl.jaas.config': sasl.username and sasl.password must be set
    """
    from_file = isinstance(config, ClientSettings)
    written = config.written if from_file else (lambda name: name)
    given = config.given if from_file else set(config)
    said = error.str().removeprefix("Failed to create consumer: ")
    named = [m[0] for m in _NAME.finditer(said)
             if m[0] in config or m[0] in _CREDENTIALS or said[m.start() - 1:m.start()] in ('"', "`")]
    # librdkafka's name of a setting given as librdkafka.<name>: the name given, in its words too
    said = _NAME.sub(lambda m: written(m[0]) if m[0] in named and written(m[0]).endswith(m[0]) else m[0], said)
    names = list(dict.fromkeys(written(name) for name in named))
    missing = [name for name in names if name not in given]
    quoted = ", ".join(f"'{name}'" for name in missing or names)
    what = f"need {quoted}" if missing else f"refuse {quoted}" if names else "refuse the settings"
    cause = f"the Python clients (librdkafka) {what}: {said}"
    if from_file and config.source:
        return kplex_error("BAD_OPTION.SETTINGS_FILE", file=config.source, environment_variable=ENV_VAR, cause=cause)
    return kplex_error("KAFKA.UNCLASSIFIED", cause=cause)


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
