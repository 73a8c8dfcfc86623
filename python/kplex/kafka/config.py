"""Kafka client settings (security above all) for what kplex runs outside a Spark catalog:
the CLI, the Python reader, ``kplex sql explain``.

One source for every command: a Java client properties file, the format of Kafka's own
``--command-config`` (``security.protocol``, ``sasl.mechanism``, ``sasl.jaas.config``,
``ssl.truststore.location``, ...), named by ``--kafka-config FILE`` or
``$KPLEX_KAFKA_CONFIG``. Spark's Java clients take it as it is (as the catalog's
``kafka.*`` settings); the Python clients (librdkafka) get it translated by
:func:`librdkafka`. Only connection and security settings are translated; tuning
settings are the Java clients'; a ``librdkafka.<name>`` entry goes to the Python
clients verbatim.

>>> settings = parse_properties('security.protocol=SASL_SSL\\nsasl.mechanism=SCRAM-SHA-512\\n'
...     'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="kplex" password="s";')
>>> sorted(librdkafka(settings).items())
[('sasl.mechanism', 'SCRAM-SHA-512'), ('sasl.password', 's'), ('sasl.username', 'kplex'), ('security.protocol', 'sasl_ssl')]
>>> principal(settings)
'User:kplex (SCRAM-SHA-512)'
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any, Mapping

from kplex.errors import kplex_error

__all__ = ["ENV_VAR", "load", "parse_properties", "librdkafka", "principal", "bootstrap_of"]

ENV_VAR = "KPLEX_KAFKA_CONFIG"

_JAAS_FIELD = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_PEM = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)

#: Java client settings that librdkafka knows by the same name and meaning.
_SAME = ("client.id", "ssl.key.password", "ssl.cipher.suites", "sasl.kerberos.service.name",
         "socket.connection.setup.timeout.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms")


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` (or ``key: value``) lines; ``#`` and ``!`` start comments.

    >>> parse_properties("# a comment\\nbootstrap.servers = h:9093\\nsasl.mechanism: PLAIN")
    {'bootstrap.servers': 'h:9093', 'sasl.mechanism': 'PLAIN'}
    """
    settings: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        match = re.match(r"([^=:\s]+)\s*[=:]\s*(.*)$", line)
        if match is None:
            raise kplex_error("BAD_OPTION.SETTINGS_LINE", line=number, start=line.split()[0])
        settings[match.group(1)] = match.group(2)
    return settings


def load(path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The settings of ``path``, else of the file ``$KPLEX_KAFKA_CONFIG`` names, else none."""
    path = path or environ.get(ENV_VAR)
    if not path:
        return {}
    try:
        return parse_properties(Path(path).read_text())
    except OSError as error:
        raise kplex_error("BAD_OPTION.SETTINGS_FILE", file=path, environment_variable=ENV_VAR,
                          cause=error.strerror) from None


def bootstrap_of(settings: Mapping[str, str]) -> str | None:
    return settings.get("bootstrap.servers") or None


def principal(settings: Mapping[str, str]) -> str:
    """Who the settings log in as, for messages (never the secret)."""
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    if protocol.startswith("SASL"):
        mechanism = settings.get("sasl.mechanism", "GSSAPI")
        user = dict(_JAAS_FIELD.findall(settings.get("sasl.jaas.config", ""))).get("username")
        return f"User:{user} ({mechanism})" if user else f"the {mechanism} login"
    if protocol == "SSL":
        return "the TLS client certificate's principal"
    return "User:ANONYMOUS"


def librdkafka(settings: Mapping[str, str]) -> dict[str, Any]:
    """The librdkafka (confluent-kafka) form of Java client settings; ``bootstrap.servers``
    is left to the caller. Raises :class:`~kplex.errors.OptionError` naming a setting it
    cannot translate."""
    out: dict[str, Any] = {}
    for key, value in settings.items():
        if key.startswith("librdkafka."):
            out[key[len("librdkafka."):]] = value
        elif key in _SAME:
            out[key] = value
    if "security.protocol" in settings:
        out["security.protocol"] = settings["security.protocol"].lower()
    if "sasl.mechanism" in settings:
        out["sasl.mechanism"] = settings["sasl.mechanism"]
    jaas = settings.get("sasl.jaas.config")
    if jaas:
        if "OAuthBearerLoginModule" in jaas:
            raise kplex_error("BAD_OPTION.OAUTHBEARER", option="sasl.jaas.config")
        fields = dict(_JAAS_FIELD.findall(jaas))
        if "username" not in fields or "password" not in fields:
            raise kplex_error("BAD_OPTION.JAAS_CREDENTIALS", option="sasl.jaas.config")
        out["sasl.username"], out["sasl.password"] = fields["username"], fields["password"]
    if "ssl.endpoint.identification.algorithm" in settings:
        out["ssl.endpoint.identification.algorithm"] = settings["ssl.endpoint.identification.algorithm"] or "none"
    out.update(_trust(settings))
    keystore = settings.get("ssl.keystore.location")
    if keystore:
        if settings.get("ssl.keystore.type", "PKCS12").upper() != "PKCS12":
            raise kplex_error("BAD_OPTION.KEYSTORE_TYPE", option="ssl.keystore.type",
                              value=settings["ssl.keystore.type"])
        out["ssl.keystore.location"] = keystore
        if "ssl.keystore.password" in settings:
            out["ssl.keystore.password"] = settings["ssl.keystore.password"]
    return out


def _trust(settings: Mapping[str, str]) -> dict[str, str]:
    """The CA certificates of a Java trust store, as librdkafka's ``ssl.ca.pem``/``ssl.ca.location``."""
    kind = settings.get("ssl.truststore.type", "JKS").upper()
    if "ssl.truststore.certificates" in settings:
        return {"ssl.ca.pem": settings["ssl.truststore.certificates"]}
    location = settings.get("ssl.truststore.location")
    if not location:
        return {}
    if kind == "PEM":
        return {"ssl.ca.location": location}
    keytool = shutil.which("keytool") or (os.path.join(os.environ["JAVA_HOME"], "bin", "keytool")
                                          if os.environ.get("JAVA_HOME") else None)
    if keytool is None:
        raise kplex_error("BAD_OPTION.NO_KEYTOOL", option="ssl.truststore.location")
    done = subprocess.run([keytool, "-list", "-rfc", "-keystore", location, "-storetype", kind,
                           "-storepass:env", "KPLEX_TRUSTSTORE_PASSWORD"],
                          env={**os.environ, "KPLEX_TRUSTSTORE_PASSWORD": settings.get("ssl.truststore.password", "")},
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    certificates = _PEM.findall(done.stdout)
    if done.returncode != 0 or not certificates:
        raise kplex_error("BAD_OPTION.TRUSTSTORE", option="ssl.truststore.location", file=location, type=kind,
                          cause=(done.stderr or done.stdout).strip()[:300])
    return {"ssl.ca.pem": "\n".join(certificates)}


def add_arguments(parser: Any, bootstrap: bool = True) -> None:
    """``--bootstrap`` and ``--kafka-config``, as every ``kplex`` command that talks to Kafka has them."""
    if bootstrap:
        parser.add_argument("--bootstrap", help="Kafka address (default the bootstrap.servers of the"
                                                " --kafka-config file, then $KPLEX_BOOTSTRAP)")
    parser.add_argument("--kafka-config", metavar="FILE",
                        help="Kafka client settings (security.protocol, sasl.*, ssl.*), a Java properties"
                             f" file as Kafka's --command-config takes (default ${ENV_VAR})")


def from_args(args: Any, environ: Mapping[str, str] = os.environ) -> tuple[str, dict[str, str]]:
    """(bootstrap servers, Java client settings) of a command's arguments; exits naming what is missing.
    The servers are ``--bootstrap``'s, else those of the settings file, which go with its
    credentials, else ``$KPLEX_BOOTSTRAP`` (as ``kplex sql run`` picks them); which of the
    three it was is left in ``args.bootstrap_source``, for the CLI's message when no broker answers.

    >>> import argparse
    >>> args = argparse.Namespace(bootstrap=None, kafka_config=None)
    >>> from_args(args, {"KPLEX_BOOTSTRAP": "dev:9092"}), args.bootstrap_source
    (('dev:9092', {}), '$KPLEX_BOOTSTRAP')
    """
    settings = load(getattr(args, "kafka_config", None), environ)
    sources = (("--bootstrap", getattr(args, "bootstrap", None)),
               ("the --kafka-config file's bootstrap.servers", bootstrap_of(settings)),
               ("$KPLEX_BOOTSTRAP", environ.get("KPLEX_BOOTSTRAP")))
    source, bootstrap = next(((name, value) for name, value in sources if value), (None, None))
    args.bootstrap_source = source
    if not bootstrap:
        raise SystemExit("kplex: no broker: pass --bootstrap HOST:PORT, give bootstrap.servers in the"
                         " --kafka-config file, or set KPLEX_BOOTSTRAP")
    settings.pop("bootstrap.servers", None)
    return bootstrap, settings
