"""A real Apache Kafka broker, or a small cluster, on this machine.

Tests, the demo and the benchmarks run against the official ``kafka_2.13``
jars of the version pinned as ``kafkaVersion`` in ``gradle.properties``, or of the
one ``$KPLEX_KAFKA_VERSION`` names (``3.6.2``: scripts/test.sh runs the Spark 3.5 line
against a Kafka 3 broker, as many of its users run one). On
first use ``mvn`` resolves them from Maven Central (``scripts/kafka/pom.xml``)
into ``${KPLEX_CACHE:-<repo>/.cache}/kafka-<version>/libs``; later runs reuse
that directory. Each node runs in KRaft combined mode (broker and controller
in one JVM) on free ports of 127.0.0.1, keeping its configuration, data and
``logs/server.log`` under one work directory. Replication follows the broker
count: one broker gives replication factor 1, three give replication factor 3
with ``min.insync.replicas=2``. A cluster counts as ready once every broker is
registered and a transactional producer can initialise.

From a shell (progress goes to stderr, so ``start`` can be captured)::

    BOOTSTRAP=$(scripts/kafka.sh start)   # or: start --brokers 3 --dir DIR
    scripts/kafka.sh status               # prints the address, exits 1 if down
    scripts/kafka.sh stop
    scripts/kafka.sh jars                 # resolves the jars, prints their dir

Those brokers outlive the command, recorded in ``<repo>/.cache/broker`` (or
``--dir``) until ``stop``. From Python::

    from kplex.testing.local_kafka import LocalKafka

    with LocalKafka(brokers=3) as cluster:      # a temporary work dir
        run_job(bootstrap=cluster.bootstrap)    # "127.0.0.1:P0,127.0.0.1:P1,..."
        cluster.stop_broker(1)                  # SIGTERM; hard=True is kill -9
        cluster.start_broker(1)

A secured cluster (``LocalKafka(secured=True)``, ``kafka.sh start --secured``) adds a
``SASL_SSL`` listener: SCRAM-SHA-512 users created when the storage is formatted
(``admin``, a super user, and ``kplex``, which has no ACL until granted one), TLS
certificates made with the JDK's ``keytool`` (a test CA, the broker's key signed by it,
a PKCS12 trust store and the CA as PEM), and KRaft's ``StandardAuthorizer``, under which
a principal may do only what an ACL allows. The open ``PLAINTEXT`` listener stays for
the brokers themselves and for the test harness (its principal, ``User:ANONYMOUS``, is a
super user)::

    with LocalKafka(secured=True) as cluster:
        cluster.secured_bootstrap                    # "127.0.0.1:S0"
        cluster.client_settings("kplex")             # Java client settings (security.protocol, sasl.jaas.config, ssl.truststore.*)
        cluster.add_user("reader", "a-password")

Brokers started from Python die with the interpreter (``atexit``); the
temporary work dir goes with ``stop()``. The pinned version and the Maven project
are files of the repository, so this works from a source checkout (the package
installed with ``pip install -e python``), not from a wheel.
"""

from __future__ import annotations

import argparse
import atexit
import base64
import fcntl
import json
import logging
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

__all__ = ["LocalKafka", "KafkaSetupError", "kafka_version", "kafka_libs", "cluster_settings", "Certificates"]

REPO = Path(__file__).resolve().parents[3]  # <repo>/python/kplex/testing/local_kafka.py
POM = REPO / "scripts" / "kafka" / "pom.xml"
CLI_DIR = REPO / ".cache" / "broker"

HOST = "127.0.0.1"
BROKER_HEAP = "-Xmx512m"
START_TIMEOUT_S = 90.0
STOP_GRACE_S = 20.0
STATE_FILE = "cluster.json"
COMPLETE_MARKER = ".complete"

# librdkafka's own log lines (connection refused while a JVM boots, ...) are
# noise here: readiness failures are reported by KafkaSetupError instead.
_QUIET = logging.getLogger("local_kafka.librdkafka")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class KafkaSetupError(RuntimeError):
    """The broker jars could not be resolved, or a broker did not become ready."""


def _say(message: str) -> None:
    print(f"local_kafka: {message}", file=sys.stderr, flush=True)


def _excerpt(path: Path, errors: int = 5, last: int = 15) -> str:
    """The first ERROR/FATAL lines of a broker log (with the line after each,
    usually the exception) and its last lines, indented."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return f"  ({path} was not written)"
    if not lines:
        return f"  ({path} is empty)"
    found = [i for i, line in enumerate(lines) if "] ERROR " in line or "] FATAL " in line][:errors]
    picked = [lines[j] for i in found for j in (i, i + 1) if j < len(lines)]
    report = ""
    if picked:
        report += f"  first errors in {path}:\n" + "\n".join("    " + line for line in picked) + "\n"
    report += f"  last lines of {path}:\n" + "\n".join("    " + line for line in lines[-last:])
    return report


# --------------------------------------------------------------------- jars --

def kafka_version() -> str:
    """The Kafka version the local brokers run: ``$KPLEX_KAFKA_VERSION`` if set, else the one
    pinned as ``kafkaVersion`` in gradle.properties.

    >>> kafka_version()  # doctest: +SKIP
    '4.1.1'
    """
    if os.environ.get("KPLEX_KAFKA_VERSION"):
        return os.environ["KPLEX_KAFKA_VERSION"]
    properties = REPO / "gradle.properties"
    if not properties.is_file():
        raise KafkaSetupError(f"{properties} is missing: the local broker runs from a source checkout"
                              " of kplex (pip install -e python), not from an installed wheel")
    for line in properties.read_text().splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "kafkaVersion":
            return value.strip()
    raise KafkaSetupError(f"kafkaVersion is not set in {properties}")


def kafka_libs(version: str | None = None) -> Path:
    """The directory of the broker's jars, resolved with Maven on first use.

    The cache root is ``$KPLEX_CACHE``, else ``<repo>/.cache``. A directory
    counts as complete only once it holds the marker written after a
    successful ``dependency:copy-dependencies``; processes resolving the same
    version at once take turns (a lock file beside it), so Maven runs once.

    >>> kafka_libs()  # doctest: +SKIP
    PosixPath('/work/main/.cache/kafka-4.1.1/libs')
    """
    version = version or kafka_version()
    libs = Path(os.environ.get("KPLEX_CACHE") or REPO / ".cache") / f"kafka-{version}" / "libs"
    if (libs / COMPLETE_MARKER).is_file():
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise KafkaSetupError("mvn is not on PATH; install Maven to resolve the Kafka broker jars")
    libs.parent.mkdir(parents=True, exist_ok=True)
    # One process resolves a version at a time (CI's two streams may both start its first broker);
    # the others wait here and find the marker.
    with open(libs.parent / "resolve.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (libs / COMPLETE_MARKER).is_file():
            return libs
        _resolve(mvn, version, libs)
    return libs


def _resolve(mvn: str, version: str, libs: Path) -> None:
    """``mvn dependency:copy-dependencies`` into a staging directory, then moved to ``libs``."""
    staging = libs.with_name(f"libs.partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    _say(f"resolving Kafka {version} jars from Maven Central into {libs}")
    started = time.monotonic()
    result = subprocess.run(
        [mvn, "-B", "-q", "-Dstyle.color=never", "-f", str(POM), f"-Dkafka.version={version}",
         "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if result.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        last = "\n".join(result.stdout.splitlines()[-30:])
        raise KafkaSetupError(f"mvn could not resolve the Kafka {version} jars (exit {result.returncode}):\n{last}")
    (staging / COMPLETE_MARKER).write_text(version + "\n")
    shutil.rmtree(libs, ignore_errors=True)  # an interrupted earlier attempt
    staging.rename(libs)
    _say(f"resolved {sum(1 for _ in libs.glob('*.jar'))} jars in {time.monotonic() - started:.0f} s")


def _java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home) / "bin" / "java") if home else "java"


# ---------------------------------------------------------------- settings --

def cluster_settings(brokers: int) -> dict[str, str]:
    """Broker settings shared by every node of a ``brokers``-node test cluster.

    Replication follows the broker count, up to three copies:

        brokers | replication factor | min.insync.replicas
        --------+--------------------+--------------------
           1    |         1          |         1
           2    |         2          |         1
          3+    |         3          |         2

    >>> cluster_settings(3)["min.insync.replicas"]
    '2'
    """
    replicas = min(brokers, 3)
    min_isr = 2 if replicas == 3 else 1
    return {
        "process.roles": "broker,controller",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "default.replication.factor": str(replicas),
        "min.insync.replicas": str(min_isr),
        "offsets.topic.replication.factor": str(replicas),
        "offsets.topic.num.partitions": "4",
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": str(min_isr),
        "transaction.state.log.num.partitions": "4",
        "share.coordinator.state.topic.replication.factor": str(replicas),
        "share.coordinator.state.topic.min.isr": str(min_isr),
        "group.initial.rebalance.delay.ms": "0",
        # A transaction past its timeout is aborted within a second of it (default: a check every 10 s).
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        # A killed broker is fenced, and its partitions move, within 6 s (default 9 s).
        "broker.heartbeat.interval.ms": "1000",
        "broker.session.timeout.ms": "6000",
    }


SCRAM_MECHANISM = "SCRAM-SHA-512"
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: The users a secured cluster is formatted with: ``admin`` is a super user, ``kplex``
#: starts with no ACL (tests grant it exactly what docs/secured-kafka.md lists).
SECURED_USERS = ("admin", "kplex")


@dataclass(frozen=True)
class Certificates:
    """The TLS files of a secured cluster, made by :meth:`create` with ``keytool``: a test
    CA (``ca.pem``), the broker's PKCS12 key store (its key, signed by the CA for
    127.0.0.1 and localhost) and a PKCS12 trust store holding the CA, for Java clients."""

    dir: Path
    password: str

    @property
    def ca_pem(self) -> Path:
        return self.dir / "ca.pem"

    @property
    def keystore(self) -> Path:
        return self.dir / "broker.p12"

    @property
    def truststore(self) -> Path:
        return self.dir / "truststore.p12"

    @classmethod
    def create(cls, directory: Path, password: str) -> Certificates:
        certs = cls(directory, password)
        if certs.truststore.is_file() and certs.ca_pem.is_file() and certs.keystore.is_file():
            return certs
        directory.mkdir(parents=True, exist_ok=True)
        keytool = str(Path(_java()).with_name("keytool")) if os.environ.get("JAVA_HOME") else "keytool"
        ca, csr, signed = directory / "ca.p12", directory / "broker.csr", directory / "broker.pem"
        names = "san=ip:127.0.0.1,dns:localhost"
        store = ["-storetype", "PKCS12", "-storepass:env", "KPLEX_STOREPASS"]
        steps = [
            ["-genkeypair", "-keystore", ca, *store, "-alias", "ca", "-dname", "CN=kplex test CA",
             "-keyalg", "RSA", "-keysize", "2048", "-validity", "30", "-ext", "bc:c"],
            ["-exportcert", "-keystore", ca, *store, "-alias", "ca", "-rfc", "-file", certs.ca_pem],
            ["-genkeypair", "-keystore", certs.keystore, *store, "-alias", "broker", "-dname", "CN=127.0.0.1",
             "-keyalg", "RSA", "-keysize", "2048", "-validity", "30", "-ext", names],
            ["-certreq", "-keystore", certs.keystore, *store, "-alias", "broker", "-file", csr],
            ["-gencert", "-keystore", ca, *store, "-alias", "ca", "-infile", csr, "-outfile", signed,
             "-rfc", "-validity", "30", "-ext", names],
            ["-importcert", "-keystore", certs.keystore, *store, "-alias", "ca", "-file", certs.ca_pem, "-noprompt"],
            ["-importcert", "-keystore", certs.keystore, *store, "-alias", "broker", "-file", signed],
            ["-importcert", "-keystore", certs.truststore, *store, "-alias", "ca", "-file", certs.ca_pem, "-noprompt"],
        ]
        for step in steps:
            done = subprocess.run([keytool, *map(str, step)], env={**os.environ, "KPLEX_STOREPASS": password},
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True)
            if done.returncode != 0:
                raise KafkaSetupError(f"keytool {step[0]} failed (exit {done.returncode}):\n{done.stdout}{done.stderr}")
        return certs


def secured_settings(certs: Certificates) -> dict[str, str]:
    """Broker settings of the SASL_SSL listener and the authorizer (see the module doc)."""
    prefix = "listener.name.sasl_ssl."
    return {
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": SCRAM_MECHANISM,
        f"{prefix}{SCRAM_MECHANISM.lower()}.sasl.jaas.config": f"{SCRAM_LOGIN} required;",
        f"{prefix}ssl.keystore.type": "PKCS12",
        f"{prefix}ssl.keystore.location": str(certs.keystore),
        f"{prefix}ssl.keystore.password": certs.password,
        f"{prefix}ssl.key.password": certs.password,
        "authorizer.class.name": STANDARD_AUTHORIZER,
        "super.users": "User:ANONYMOUS;User:admin",
        "allow.everyone.if.no.acl.found": "false",
    }


@dataclass(frozen=True)
class _Node:
    """One node's identity and files; ports stay the same across restarts."""

    id: int
    port: int
    controller_port: int
    dir: Path
    secured_port: int | None = None

    @property
    def config(self) -> Path:
        return self.dir / "server.properties"

    @property
    def log4j(self) -> Path:
        return self.dir / "log4j2.properties"

    @property
    def log4j1(self) -> Path:
        return self.dir / "log4j.properties"

    @property
    def server_log(self) -> Path:
        return self.dir / "logs" / "server.log"

    @property
    def stdout_log(self) -> Path:
        return self.dir / "stdout.log"

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def secured_address(self) -> str | None:
        return f"{HOST}:{self.secured_port}" if self.secured_port else None

    def properties(self, brokers: int, voters: str, security: Certificates | None = None) -> dict[str, str]:
        props = {
            **cluster_settings(brokers),
            "node.id": str(self.id),
            "controller.quorum.voters": voters,
            "listeners": f"PLAINTEXT://{HOST}:{self.port},CONTROLLER://{HOST}:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://{self.address}",
            "log.dirs": str(self.dir / "data"),
        }
        if security is not None and self.secured_port:
            props.update(secured_settings(security))
            props["listeners"] += f",SASL_SSL://{self.secured_address}"
            props["advertised.listeners"] += f",SASL_SSL://{self.secured_address}"
        return props

    def write_files(self, brokers: int, voters: str, security: Certificates | None = None) -> None:
        (self.dir / "logs").mkdir(parents=True, exist_ok=True)
        lines = [f"{key}={value}" for key, value in self.properties(brokers, voters, security).items()]
        self.config.write_text("\n".join(lines) + "\n")
        self.log4j.write_text(_LOG4J2.format(log=self.server_log))
        self.log4j1.write_text(_LOG4J1.format(log=self.server_log))

    def java_command(self, libs: Path, heap: str, main: str, *args: str) -> list[str]:
        # Each logging library reads its own file: log4j2 (Kafka 4), reload4j (Kafka 3).
        return [_java(), heap, f"-Dlog4j2.configurationFile={self.log4j}",
                f"-Dlog4j.configuration={self.log4j1.as_uri()}", "-cp", f"{libs}/*", main, *args]

    def runs_as(self, pid: int) -> bool:
        """Whether ``pid`` is this node's JVM (not a recycled pid, not a zombie)."""
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except FileNotFoundError:
            return False
        except OSError:  # no /proc: trust the pid
            try:
                os.kill(pid, 0)
            except OSError:
                return False
            return True
        return str(self.config).encode() in cmdline.split(b"\0")

    def failure(self, what: str) -> str:
        report = f"{what}\n{_excerpt(self.server_log)}"
        if self.stdout_log.exists() and self.stdout_log.stat().st_size:
            report += f"\n{_excerpt(self.stdout_log, last=10)}"
        return report


# Kafka 4 logs through log4j2; everything goes to the node's server.log.
_LOG4J2 = """\
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
"""

# Kafka 3 logs through reload4j (log4j 1.2's API): the same, in that library's words.
_LOG4J1 = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
"""


def _free_ports(count: int) -> list[int]:
    """Distinct free ports below the kernel's ephemeral range: an outgoing
    connection can take an ephemeral port in the seconds a JVM takes to boot
    and bind, but never one of these."""
    try:
        low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    sockets: list[socket.socket] = []
    try:
        while len(sockets) < count:
            sock = socket.socket()
            try:
                sock.bind((HOST, random.randrange(10000, max(low, 10000 + 4 * count))))
            except OSError:
                sock.close()
                continue
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def _accepts(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((HOST, port)) == 0


def _random_cluster_id() -> str:
    # Kafka's Uuid.randomUuid().toString(): URL-safe base64, never starting with '-'.
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


# ----------------------------------------------------------------- cluster --

class LocalKafka:
    """A local Kafka cluster of ``brokers`` KRaft nodes, each broker+controller.

    >>> with LocalKafka(brokers=1) as cluster:  # doctest: +SKIP
    ...     cluster.bootstrap
    '127.0.0.1:40211'

    ``workdir=None`` makes a temporary directory that ``stop()`` removes; a
    given directory is kept, and ``start()`` wipes the nodes it held before.
    ``detach=True`` (what ``kafka.sh start`` uses) leaves the brokers running
    when this interpreter exits; otherwise ``atexit`` kills them.
    """

    def __init__(self, brokers: int = 1, workdir: str | os.PathLike[str] | None = None,
                 *, detach: bool = False, start_timeout: float = START_TIMEOUT_S, secured: bool = False) -> None:
        if brokers < 1:
            raise ValueError(f"brokers must be at least 1, got {brokers}")
        self.brokers = brokers
        self.secured = secured
        #: SCRAM user name -> password (a secured cluster's; see :data:`SECURED_USERS`).
        self.users: dict[str, str] = {}
        self.certificates: Certificates | None = None
        self.workdir = Path(workdir).resolve() if workdir is not None else None
        self.start_timeout = start_timeout
        self._owns_workdir = workdir is None
        self._detach = detach
        self._libs: Path | None = None
        self._cluster_id = ""
        self._nodes: list[_Node] = []
        self._procs: dict[int, subprocess.Popen[bytes]] = {}
        self._pids: dict[int, int] = {}  # for a cluster found on disk by attach()

    def __repr__(self) -> str:
        return f"LocalKafka(brokers={self.brokers}, workdir={str(self.workdir)!r}, bootstrap={self.bootstrap!r})"

    def __enter__(self) -> LocalKafka:
        return self if self._nodes else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def bootstrap(self) -> str:
        """Every node's address, whether or not it is running right now."""
        return ",".join(node.address for node in self._nodes)

    @property
    def secured_bootstrap(self) -> str:
        """Every node's SASL_SSL address (a secured cluster only)."""
        if not self.secured:
            raise KafkaSetupError(f"{self!r} has no SASL_SSL listener: start it with secured=True")
        return ",".join(node.secured_address or "" for node in self._nodes)

    def client_settings(self, user: str, password: str | None = None) -> dict[str, str]:
        """Java Kafka client settings (no ``kafka.`` prefix) that log in to the SASL_SSL
        listener as ``user``, with its password unless another is given."""
        certs = self.certificates
        if certs is None:
            raise KafkaSetupError(f"{self!r} has no SASL_SSL listener: start it with secured=True")
        secret = password if password is not None else self.users[user]
        return {
            "bootstrap.servers": self.secured_bootstrap,
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": SCRAM_MECHANISM,
            "sasl.jaas.config": f'{SCRAM_LOGIN} required username="{user}" password="{secret}";',
            "ssl.truststore.location": str(certs.truststore),
            "ssl.truststore.password": certs.password,
            "ssl.truststore.type": "PKCS12",
        }

    def add_user(self, user: str, password: str) -> None:
        """Creates (or changes the password of) a SCRAM user, through the open listener."""
        from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

        admin = AdminClient({"bootstrap.servers": self.bootstrap, "logger": _QUIET})
        upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096),
                                              password.encode())
        for future in admin.alter_user_scram_credentials([upsert]).values():
            future.result(timeout=30)
        self.users[user] = password
        self._write_state()

    # -- lifecycle ----------------------------------------------------------

    def start(self) -> LocalKafka:
        """Format and start every node, and wait until the cluster is ready."""
        if self._nodes:
            raise KafkaSetupError(f"{self!r} was already started")
        self._libs = kafka_libs()
        if self.workdir is None:
            self.workdir = Path(tempfile.mkdtemp(prefix="kplex-kafka-"))
        else:
            self._clear_workdir()
        per_node = 3 if self.secured else 2
        ports = _free_ports(per_node * self.brokers)
        self._nodes = [_Node(i, ports[per_node * i], ports[per_node * i + 1], self.workdir / f"node-{i}",
                             ports[per_node * i + 2] if self.secured else None)
                       for i in range(self.brokers)]
        self._cluster_id = _random_cluster_id()
        if self.secured:
            self.certificates = Certificates.create(self.workdir / "tls", uuid.uuid4().hex)
            self.users = {user: f"{user}-{uuid.uuid4().hex}" for user in SECURED_USERS}
        voters = ",".join(f"{n.id}@{HOST}:{n.controller_port}" for n in self._nodes)
        for node in self._nodes:
            node.write_files(self.brokers, voters, self.certificates)
        if not self._detach:
            atexit.register(self._kill_at_exit)
        _say(f"starting {self.brokers} Kafka {kafka_version()} broker(s) in {self.workdir}"
             + (" with a SASL_SSL listener and ACLs" if self.secured else ""))
        started = time.monotonic()
        try:
            self._format()
            for node in self._nodes:
                self._launch(node)
            self._wait_ready(self._nodes, transactions=True)
        except BaseException:
            # Kill the nodes but keep their files, for the logs the error names.
            self._signal_all(signal.SIGKILL)
            self._wait_down(self._nodes, STOP_GRACE_S)
            atexit.unregister(self._kill_at_exit)
            raise
        _say(f"ready at {self.bootstrap} after {time.monotonic() - started:.1f} s")
        return self

    def stop(self) -> None:
        """Stop every node (SIGTERM, then SIGKILL after a grace period).

        A temporary work dir is removed, and then nothing needs a clean
        shutdown, so its brokers are simply killed.
        """
        if self._owns_workdir:
            self._signal_all(signal.SIGKILL)
        else:
            self._signal_all(signal.SIGTERM)
            if not self._wait_down(self._nodes, STOP_GRACE_S):
                self._signal_all(signal.SIGKILL)
        self._wait_down(self._nodes, STOP_GRACE_S)
        self._procs.clear()
        self._pids.clear()
        atexit.unregister(self._kill_at_exit)
        if self.workdir is None:
            return
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            (self.workdir / STATE_FILE).unlink(missing_ok=True)

    def stop_broker(self, i: int, hard: bool = False) -> None:
        """Stop node ``i``: SIGTERM and wait for its controlled shutdown, or
        with ``hard=True`` kill -9 it (the cluster notices within 6 s)."""
        node = self._node(i)
        self._signal(node, signal.SIGKILL if hard else signal.SIGTERM)
        if not self._wait_down([node], STOP_GRACE_S):
            self._signal(node, signal.SIGKILL)
            self._wait_down([node], STOP_GRACE_S)
        self._procs.pop(i, None)
        self._pids.pop(i, None)
        self._write_state()

    def start_broker(self, i: int) -> None:
        """Start node ``i`` again, on its old ports and data, and wait until
        every running node is registered."""
        node = self._node(i)
        if self._alive(node):
            raise KafkaSetupError(f"broker {i} is already running")
        self._launch(node)
        self._wait_ready([n for n in self._nodes if self._alive(n)], transactions=False)

    def running(self) -> bool:
        """Whether every node's JVM is running."""
        return bool(self._nodes) and all(self._alive(node) for node in self._nodes)

    # -- a cluster recorded on disk (kafka.sh) ----------------------------

    @classmethod
    def attach(cls, workdir: str | os.PathLike[str]) -> LocalKafka | None:
        """The cluster that ``start()`` recorded in ``workdir``, or None.

        >>> LocalKafka.attach(".cache/broker").running()  # doctest: +SKIP
        True
        """
        workdir = Path(workdir).resolve()
        try:
            state = json.loads((workdir / STATE_FILE).read_text())
        except FileNotFoundError:
            return None
        cluster = cls(len(state["nodes"]), workdir, detach=True, secured=bool(state.get("secured")))
        cluster._cluster_id = state["cluster_id"]
        if cluster.secured:
            cluster.certificates = Certificates(workdir / "tls", state["secured"]["tls_password"])
            cluster.users = dict(state["secured"]["users"])
        for entry in state["nodes"]:
            cluster._nodes.append(_Node(entry["id"], entry["port"], entry["controller_port"],
                                        workdir / f"node-{entry['id']}", entry.get("secured_port")))
            if entry["pid"] is not None:
                cluster._pids[entry["id"]] = entry["pid"]
        return cluster

    def _write_state(self) -> None:
        assert self.workdir is not None
        state = {
            "kafka_version": kafka_version(),
            "cluster_id": self._cluster_id,
            "bootstrap": self.bootstrap,
            "nodes": [{"id": n.id, "port": n.port, "controller_port": n.controller_port,
                       "secured_port": n.secured_port, "pid": self._pid(n)} for n in self._nodes],
        }
        if self.certificates is not None:  # test credentials, kept with the cluster's files
            state["secured"] = {"bootstrap": self.secured_bootstrap, "tls_password": self.certificates.password,
                                "ca_pem": str(self.certificates.ca_pem), "users": self.users}
        path = self.workdir / STATE_FILE
        path.write_text(json.dumps(state, indent=2) + "\n")
        if self.certificates is not None:
            path.chmod(0o600)  # it holds the test users' passwords

    def _clear_workdir(self) -> None:
        assert self.workdir is not None
        previous = LocalKafka.attach(self.workdir)
        if previous is not None and any(previous._alive(n) for n in previous._nodes):
            raise KafkaSetupError(f"a Kafka cluster is already running in {self.workdir} "
                                  f"({previous.bootstrap}); stop it first: scripts/kafka.sh stop --dir {self.workdir}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        (self.workdir / STATE_FILE).unlink(missing_ok=True)
        for old in [*self.workdir.glob("node-*"), self.workdir / "tls"]:
            shutil.rmtree(old, ignore_errors=True)

    # -- processes ----------------------------------------------------------

    def _node(self, i: int) -> _Node:
        if not 0 <= i < len(self._nodes):
            raise IndexError(f"no broker {i}: this cluster has brokers 0..{len(self._nodes) - 1}")
        return self._nodes[i]

    def _format(self) -> None:
        """Format every node's storage for a static quorum, all at once."""
        assert self._libs is not None
        scram = [arg for user, password in self.users.items()
                 for arg in ("--add-scram", f"{SCRAM_MECHANISM}=[name={user},password={password}]")]
        formats = [(node, subprocess.Popen(
            node.java_command(self._libs, "-Xmx256m", "kafka.tools.StorageTool", "format",
                              "--cluster-id", self._cluster_id, "--config", str(node.config), *scram),
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT))
            for node in self._nodes]
        for node, proc in formats:
            output, _ = proc.communicate()
            if proc.returncode != 0:
                raise KafkaSetupError(f"formatting the storage of broker {node.id} failed "
                                      f"(exit {proc.returncode}):\n{output.decode(errors='replace')}")

    def _launch(self, node: _Node) -> None:
        assert self._libs is not None
        with open(node.stdout_log, "ab") as out:
            self._procs[node.id] = subprocess.Popen(
                node.java_command(self._libs, BROKER_HEAP, "kafka.Kafka", str(node.config)),
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                cwd=node.dir, start_new_session=self._detach)
        self._write_state()

    def _pid(self, node: _Node) -> int | None:
        proc = self._procs.get(node.id)
        return proc.pid if proc is not None else self._pids.get(node.id)

    def _alive(self, node: _Node) -> bool:
        proc = self._procs.get(node.id)
        if proc is not None:
            return proc.poll() is None
        pid = self._pids.get(node.id)
        return pid is not None and node.runs_as(pid)

    def _signal(self, node: _Node, sig: signal.Signals) -> None:
        if self._alive(node):
            pid = self._pid(node)
            assert pid is not None
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass

    def _signal_all(self, sig: signal.Signals) -> None:
        for node in self._nodes:
            self._signal(node, sig)

    def _wait_down(self, nodes: Iterable[_Node], timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while any(self._alive(node) for node in nodes):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def _kill_at_exit(self) -> None:
        self._signal_all(signal.SIGKILL)
        self._wait_down(self._nodes, 5)
        if self._owns_workdir and self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    # -- readiness ----------------------------------------------------------

    def _wait_ready(self, nodes: list[_Node], transactions: bool) -> None:
        """Wait until ``nodes`` all accept connections and are registered
        brokers, then (``transactions``) until a transactional producer can
        initialise, i.e. the transaction coordinator is up."""
        deadline = time.monotonic() + self.start_timeout

        def check(waiting_for: str) -> float:
            for node in nodes:
                if not self._alive(node):
                    proc = self._procs.get(node.id)
                    code = proc.returncode if proc is not None else "unknown"
                    raise KafkaSetupError(node.failure(
                        f"Kafka broker {node.id} exited (code {code}) before it was ready; "
                        f"its files are in {node.dir}"))
            left = deadline - time.monotonic()
            if left <= 0:
                reports = "\n".join(n.failure(f"broker {n.id} ({n.dir}):") for n in nodes)
                raise KafkaSetupError(f"the Kafka cluster was not ready after {self.start_timeout:.0f} s "
                                      f"(waiting for {waiting_for})\n{reports}")
            return left

        for node in nodes:
            while not _accepts(node.port):
                check(f"broker {node.id} to listen on {node.address}")
                time.sleep(0.2)
        bootstrap = ",".join(node.address for node in nodes)
        wanted = {node.id for node in nodes}
        admin = AdminClient({"bootstrap.servers": bootstrap, "logger": _QUIET})
        while True:
            left = check(f"brokers {sorted(wanted)} to register")
            try:
                if wanted <= set(admin.list_topics(timeout=min(left, 5)).brokers):
                    break
            except KafkaException:
                pass
            time.sleep(0.2)
        if not transactions:
            return
        while True:
            left = check("the transaction coordinator")
            producer = Producer({"bootstrap.servers": bootstrap, "logger": _QUIET,
                                 "transactional.id": f"local-kafka-ready-{uuid.uuid4().hex}"})
            try:
                producer.init_transactions(min(left, 10))
                return
            except KafkaException:  # a timeout, or a fatal error that needs a new producer
                time.sleep(0.2)


# --------------------------------------------------------------------- CLI --

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="kafka.sh", description="A local Apache Kafka broker for kplex's tests, demo and benchmarks.")
    commands = parser.add_subparsers(dest="command", required=True)
    start = commands.add_parser("start", help="start detached brokers, print the bootstrap address once ready")
    start.add_argument("--brokers", type=int, default=1, help="number of nodes (default 1)")
    start.add_argument("--secured", action="store_true",
                       help="add a SASL_SSL listener (SCRAM users admin and kplex, TLS) and ACLs; writes"
                            " <dir>/<user>.properties, the client settings of each user")
    for command in (start, commands.add_parser("stop", help="stop the brokers"),
                    commands.add_parser("status", help="print the bootstrap address, or exit 1 if not running")):
        command.add_argument("--dir", type=Path, default=CLI_DIR, help=f"work directory (default {CLI_DIR})")
    commands.add_parser("jars", help="resolve the broker jars and print their directory")
    args = parser.parse_args(argv)

    try:
        if args.command == "jars":
            print(kafka_libs())
            return 0
        cluster = LocalKafka.attach(args.dir)
        if args.command == "start":
            if cluster is not None and cluster.running():
                if cluster.brokers != args.brokers:
                    _say(f"already running with {cluster.brokers} broker(s), not {args.brokers}")
            else:
                if cluster is not None:
                    cluster.stop()  # whatever is left of a broken cluster
                cluster = LocalKafka(args.brokers, args.dir, detach=True, secured=args.secured).start()
            if cluster.secured:
                for user in cluster.users:
                    path = args.dir / f"{user}.properties"
                    path.write_text("".join(f"{k}={v}\n" for k, v in cluster.client_settings(user).items()))
                    path.chmod(0o600)
                _say(f"SASL_SSL listener at {cluster.secured_bootstrap}; client settings in"
                     f" {', '.join(str(args.dir / f'{u}.properties') for u in cluster.users)}")
            print(cluster.bootstrap)
            return 0
        if args.command == "status":
            if cluster is not None and cluster.running():
                print(cluster.bootstrap)
                return 0
            _say(f"no Kafka cluster is running in {args.dir}")
            return 1
        if cluster is not None:  # stop
            cluster.stop()
        return 0
    except KafkaSetupError as error:
        print(f"kafka.sh {args.command}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
