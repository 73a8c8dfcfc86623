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
from typing import Any, Iterable, Mapping

from kplex.errors import kplex_error

__all__ = ["ENV_VAR", "load", "settings_file", "parse_properties", "librdkafka", "ClientSettings", "principal",
           "bootstrap_of"]

ENV_VAR = "KPLEX_KAFKA_CONFIG"

_JAAS_FIELD = re.compile(r'\b(username|password)\s*=\s*"((?:[^"\\]|\\.)*)"')
_PEM = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.S)

#: Java client settings that librdkafka knows by the same name and meaning.
_SAME = ("client.id", "ssl.key.password", "ssl.cipher.suites", "sasl.kerberos.service.name",
         "socket.connection.setup.timeout.ms", "reconnect.backoff.ms", "reconnect.backoff.max.ms")
#: librdkafka settings :func:`librdkafka` makes of a Java setting of the same name.
_TRANSLATED = ("security.protocol", "sasl.mechanism", "ssl.endpoint.identification.algorithm",
               "ssl.keystore.location", "ssl.keystore.password")
#: ... and of a Java setting of another name.
_TRANSLATED_FROM = {"sasl.username": "sasl.jaas.config", "sasl.password": "sasl.jaas.config",
                    "ssl.ca.location": "ssl.truststore.location"}


#: The blanks of Java properties: one ends a key (as ``=`` and ``:`` do), and those that start a
#: line, or a line that continues another, are not part of it.
_BLANK = " \t\f"
#: A setting's name: what a key must look like (a line that does not start with one is most
#: likely the rest of the line before it, a JAAS line say, whose backslash went missing).
_NAME = re.compile(r"[\w.-]+")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
#: What Java's ``String.trim`` removes from both ends of a value: every character up to the space.
_TRIMMED = "".join(chr(c) for c in range(0x21))


def parse_properties(text: str, source: str = "the given text") -> dict[str, str]:
    """Java properties, as Kafka's tools read a ``--command-config`` file
    (``java.util.Properties.load``): ``key=value``, ``key: value`` or ``key value`` lines;
    ``#`` and ``!`` start comments; a line that ends in an odd number of backslashes goes on
    in the next, whose leading blanks are dropped; ``\\t``, ``\\n``, ``\\uXXXX`` and
    ``\\`` followed by any other character escape it. A line that does not start with a
    setting's name, or has no value, or a JAAS line (``sasl.jaas.config``) that does not end
    in ``;`` (the rest of it on the next line without a backslash), is an
    :class:`~kplex.errors.OptionError` naming ``source`` (the file), the line and the key if
    it has one, never the line's text: it may hold a password.

    >>> parse_properties("# a comment\\nbootstrap.servers = h:9093\\nsasl.mechanism: PLAIN\\t")
    {'bootstrap.servers': 'h:9093', 'sasl.mechanism': 'PLAIN'}
    >>> parse_properties('sasl.jaas.config=ScramLoginModule required \\\\\\n    username="u" password="p";')
    {'sasl.jaas.config': 'ScramLoginModule required username="u" password="p";'}
    >>> parse_properties('sasl.jaas.config=ScramLoginModule required\\n  username="u" password="p";', "client.properties")
    Traceback (most recent call last):
    kplex.errors.OptionError: [KPLEX_BAD_OPTION] line 1 of the Kafka client settings in client.properties: 'sasl.jaas.config' does not end in ';' ...
    """
    settings: dict[str, str] = {}
    for number, line in _logical_lines(text):
        key, value = _key_and_value(line)
        if not _NAME.fullmatch(key):
            raise kplex_error("BAD_OPTION.SETTINGS_LINE", line=number, file=source)
        if value is None:  # a name alone: not named, as it may be a password on a line of its own
            raise kplex_error("BAD_OPTION.SETTINGS_NO_VALUE", line=number, file=source)
        unescaped = _unescape(value)
        if unescaped is None:
            raise kplex_error("BAD_OPTION.SETTINGS_ESCAPE", line=number, file=source, key=key)
        if key == "sasl.jaas.config" and not unescaped.rstrip().endswith(";"):
            raise kplex_error("BAD_OPTION.SETTINGS_JAAS", line=number, file=source, key=key)
        settings[key] = unescaped.strip(_TRIMMED)  # as Kafka's clients trim a value (ConfigDef), escaped or not
    return settings


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(number of its first line, text) of each setting's line, continued lines joined; blank
    and comment lines left out."""
    lines, found, i = re.split(r"\r\n|\r|\n", text), [], 0
    while i < len(lines):
        number, line = i + 1, lines[i].lstrip(_BLANK)
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line):
            line = line[:-1] + (lines[i].lstrip(_BLANK) if i < len(lines) else "")
            i += 1
        found.append((number, line))
    return found


def _continues(line: str) -> bool:
    """Whether ``line`` ends in an odd number of backslashes (the last one not escaped)."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def _key_and_value(line: str) -> tuple[str, str | None]:
    """The key of a properties line, unescaped (a key in a settings file needs no escape), and
    its value as written, None if the line has neither a separator nor a value."""
    end = 0
    while end < len(line) and line[end] not in "=:" + _BLANK:
        end += 2 if line[end] == "\\" else 1
    key, rest = line[:end], line[end:]
    separated = rest[:1] in ("=", ":")
    rest = rest[1:] if separated else rest
    rest = rest.lstrip(_BLANK)
    if not separated and rest[:1] in ("=", ":"):
        separated, rest = True, rest[1:].lstrip(_BLANK)
    return _unescape(key) or "", rest if separated or rest else None


def _unescape(text: str) -> str | None:
    """``text`` with its escapes replaced, as Java's properties read them; None for a ``\\u``
    without four hex digits."""
    out, i = [], 0
    while i < len(text):
        if text[i] != "\\":
            out.append(text[i])
            i += 1
        elif text[i + 1:i + 2] == "u":
            digits = text[i + 2:i + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                return None
            out.append(chr(int(digits, 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(text[i + 1:i + 2], text[i + 1:i + 2]))
            i += 2
    return "".join(out)


def load(path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The settings of ``path``, else of the file ``$KPLEX_KAFKA_CONFIG`` names, else none.
    The file is read as UTF-8, else as ISO-8859-1, Java's properties encoding (as Java's
    ``PropertyResourceBundle`` does)."""
    path = settings_file(path, environ)
    if not path:
        return {}
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise kplex_error("BAD_OPTION.SETTINGS_FILE", file=path, environment_variable=ENV_VAR,
                          cause=error.strerror) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("iso-8859-1")
    return parse_properties(text, str(path))


def settings_file(path: str | os.PathLike[str] | None = None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The file of Kafka client settings :func:`load` reads: ``path`` (``--kafka-config``), else
    the one ``$KPLEX_KAFKA_CONFIG`` names, else None.

    >>> settings_file(None, {ENV_VAR: "client.properties"}), settings_file(None, {})
    ('client.properties', None)
    """
    return str(path) if path else environ.get(ENV_VAR) or None


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


class ClientSettings(dict):
    """librdkafka settings :func:`librdkafka` made of Java client settings: a dict that also
    keeps the names those gave (``given``) and the file they came from (``source``, None when
    not known), so that an error about a setting librdkafka refuses names it as the user wrote
    it (:meth:`written`) and where (:func:`kplex.kafka.clients.settings_error`).

    >>> s = librdkafka({"librdkafka.bogus.prop": "1", "sasl.mechanism": "PLAIN"}, "client.properties")
    >>> s, s.source
    ({'bogus.prop': '1', 'sasl.mechanism': 'PLAIN'}, 'client.properties')
    >>> s.written("bogus.prop"), s.written("sasl.username"), s.written("sasl.mechanism")
    ('librdkafka.bogus.prop', 'sasl.jaas.config', 'sasl.mechanism')
    """

    def __init__(self, settings: Mapping[str, Any], given: Iterable[str] = (), source: str | None = None) -> None:
        super().__init__(settings)
        self.given = frozenset(given)
        self.source = source

    def written(self, name: str) -> str:
        """The name the Java settings give (or would give) librdkafka's setting ``name`` by."""
        if f"librdkafka.{name}" in self.given:
            return f"librdkafka.{name}"
        if name == "ssl.ca.pem":  # the trust store's certificates
            certificates = "ssl.truststore.certificates"
            return certificates if certificates in self.given else "ssl.truststore.location"
        if name in _TRANSLATED_FROM:
            return _TRANSLATED_FROM[name]
        return name if name in _SAME or name in _TRANSLATED else f"librdkafka.{name}"


def librdkafka(settings: Mapping[str, str], source: str | None = None) -> ClientSettings:
    """The librdkafka (confluent-kafka) form of Java client settings (of the file ``source``,
    if known: :class:`ClientSettings`); ``bootstrap.servers`` is left to the caller. Raises
    :class:`~kplex.errors.OptionError` naming a setting it cannot translate. An OAuth JAAS line
    (``OAuthBearerLoginModule``) is the Java clients' only: librdkafka logs in with the
    ``librdkafka.sasl.oauthbearer.*`` entries.

    >>> sorted(librdkafka({"sasl.mechanism": "OAUTHBEARER", "sasl.jaas.config": "...OAuthBearerLoginModule required;",
    ...                    "librdkafka.sasl.oauthbearer.method": "oidc"}).items())
    [('sasl.mechanism', 'OAUTHBEARER'), ('sasl.oauthbearer.method', 'oidc')]
    """
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
    if jaas and "OAuthBearerLoginModule" in jaas:
        # The Java login has no librdkafka form; librdkafka.sasl.oauthbearer.* entries are librdkafka's own.
        if not any(key.startswith("librdkafka.sasl.oauthbearer.") for key in settings):
            raise kplex_error("BAD_OPTION.OAUTHBEARER", option="sasl.jaas.config")
    elif jaas:
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
    return ClientSettings(out, settings, source)


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
