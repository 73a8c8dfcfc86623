"""kplex against a secured broker: SASL_SSL (SCRAM-SHA-512, TLS) with KRaft's
StandardAuthorizer, the same real broker as the other tests, configured.

The principal ``User:kplex`` is granted exactly the ACLs the README lists (its "Secured
Kafka" section), nothing more, and every path runs with its credentials: CREATE TABLE,
INSERT exactly once and at least once, reads of the table and of a read-time table,
DESCRIBE, DROP, ``kplex recover``, ``kplex read``, ``kplex sql explain``. Other
principals lack one ACL each, or cannot log in at all: each such write fails within
seconds naming the principal, the operation and the resource (never a password), writes
nothing and leaves no transaction open. What was written is checked by the harness
through the open listener (a super user), not through kplex."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from kplex.errors import NotAuthenticatedError, NotAuthorizedError
from kplex.session import CATALOG_CLASS
from kplex.testing import datagen, verify

ROWS = 600
SOURCE = "secured_pageviews"
V, P = 6, 2
INSERT = """INSERT INTO {catalog}.{target}
SELECT kplex_key(kplex_json(value, '/userid')), kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value
FROM {catalog}.{source}"""


@pytest.fixture(scope="module")
def secured(secured_kafka):
    datagen.generate_pageviews(secured_kafka.bootstrap, SOURCE, ROWS, partitions=3, users=11, seed=9,
                               out_of_order_ms=2_000)
    return secured_kafka


def grant(cluster, user: str, acls: list[tuple[ResourceType, str, ResourcePatternType, AclOperation]]) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    bindings = [AclBinding(kind, name, pattern, f"User:{user}", "*", op, AclPermissionType.ALLOW)
                for kind, name, pattern, op in acls]
    for future in admin.create_acls(bindings).values():
        future.result(30)
    # ACLs reach the authorizer through the metadata log: wait until they are listed.
    deadline = time.monotonic() + 30
    wanted = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, f"User:{user}", None,
                              AclOperation.ANY, AclPermissionType.ANY)
    while len(admin.describe_acls(wanted).result(30)) < len(bindings):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    time.sleep(1)


def readme_acls(tables: list[str], sources: list[str]) -> list[tuple]:
    """Exactly the ACLs docs/secured-kafka.md lists, for these tables and sources."""
    T, L, X = ResourceType.TOPIC, ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    acls = []
    for table in tables:
        acls += [(T, table, L, op) for op in (AclOperation.CREATE, AclOperation.DELETE, AclOperation.WRITE,
                                              AclOperation.READ)]
        acls.append((ResourceType.TRANSACTIONAL_ID, f"kplex.{table}.", X, AclOperation.WRITE))
    acls += [(T, source, L, AclOperation.READ) for source in sources]
    acls += [(T, topic, L, op) for topic in ("_kplex_tables", "_kplex_commits")
             for op in (AclOperation.READ, AclOperation.WRITE)]
    acls.append((ResourceType.GROUP, "kplex-read-", X, AclOperation.READ))
    return acls


def use_catalog(spark, cluster, name: str, user: str, password: str | None = None) -> str:
    """A catalog of the shared test session that logs in as ``user``."""
    spark.conf.set(f"spark.sql.catalog.{name}", CATALOG_CLASS)
    for key, value in cluster.client_settings(user, password).items():
        spark.conf.set(f"spark.sql.catalog.{name}.kafka.{key}", value)
    return name


def properties_file(cluster, user: str, path: Path) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in cluster.client_settings(user).items()))
    return path


def open_transactions(spark, cluster, table: str) -> list[str]:
    """The table's open transactions, as the broker's coordinators list them (asked through
    the open listener with Kafka's Java admin client: confluent-kafka has no such call)."""
    jvm = spark._jvm  # noqa: SLF001
    props = jvm.java.util.Properties()
    props.put("bootstrap.servers", cluster.bootstrap)
    admin = jvm.io.kplex.shaded.org.apache.kafka.clients.admin.Admin.create(props)
    try:
        return sorted(t.transactionalId() for t in admin.listTransactions().all().get()
                      if t.transactionalId().startswith(f"kplex.{table}.")
                      and str(t.state()) in ("Ongoing", "PrepareCommit", "PrepareAbort", "ONGOING",
                                             "PREPARE_COMMIT", "PREPARE_ABORT"))
    finally:
        admin.close()


def cli(*args: str, env_extra: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "KPLEX_BOOTSTRAP"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "kplex", *args], capture_output=True, text=True,
                          timeout=300, env=env, cwd=cwd)


def test_every_path_works_with_exactly_the_readme_acls(spark, secured, tmp_path):
    table, alo, view = (f"sec_{kind}_{uuid.uuid4().hex[:6]}" for kind in ("eos", "alo", "view"))
    grant(secured, "kplex", readme_acls([table, alo], [SOURCE]))
    cat = use_catalog(spark, secured, "sec_kplex", "kplex")

    for name, delivery in ((table, "exactly_once"), (alo, "at_least_once")):
        spark.sql(f"CREATE TABLE {cat}.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '{V}',"
                  f" 'kplex.physical_partitions' = '{P}', 'kplex.delivery' = '{delivery}')")
        spark.sql(INSERT.format(catalog=cat, target=name, source=SOURCE))
        # Checked through the open listener as the harness's super user: not through kplex.
        report = verify.check_derived_topic(secured.bootstrap, SOURCE, name, V, P)
        assert report.ok and report.derived_count == ROWS, report.summary()

    # A read-time table over the source, and reads of both kinds.
    spark.sql(f"CREATE TABLE {cat}.{view} TBLPROPERTIES ('kplex.source' = '{SOURCE}',"
              f" 'kplex.virtual_partitions' = '4', 'kplex.max_delay_ms' = '5000',"
              f" 'kplex.key' = 'kplex_json(value, \\'/userid\\')',"
              f" 'kplex.order' = 'CAST(kplex_json(value, \\'/viewtime\\') AS BIGINT)')")
    assert spark.sql(f"SELECT count(*) FROM {cat}.{table}").first()[0] == ROWS
    assert spark.sql(f"SELECT count(*) FROM {cat}.{view}").first()[0] == ROWS
    described = {r[0]: r[1] for r in spark.sql(f"DESCRIBE TABLE EXTENDED {cat}.{table}").collect()}
    assert "kplex.virtual_partitions" in " ".join(str(v) for v in described.values()), described

    # The CLI, with the credentials in a --kafka-config file (and none on the command line).
    config = properties_file(secured, "kplex", tmp_path / "kplex.properties")
    recovered = cli("recover", "--table", table, "--kafka-config", str(config))
    assert recovered.returncode == 0, recovered.stderr[-3000:]
    read = cli("read", table, "--vp", "1", "--kafka-config", str(config))
    assert read.returncode == 0, read.stderr[-3000:]
    vp1 = [r for r in verify.read_topic(secured.bootstrap, table) if r.headers.get("kplex.vp") == b"1"]
    assert read.stdout.splitlines() == [r.value.decode() for r in vp1] and vp1
    sql = tmp_path / "job.sql"
    sql.write_text(f"INSERT INTO kplex.{table} SELECT kplex_key(kplex_json(value, '/userid')),"
                   f" kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value FROM kplex.{SOURCE};\n")
    explained = cli("sql", "explain", str(sql), "--kafka-config", str(config))
    assert explained.returncode == 0, explained.stderr[-3000:]
    # V and P as stored on the secured broker, read by the Python client with the file's credentials.
    assert f"{V} virtual on {P} physical (stored definition on {secured.secured_bootstrap})" in explained.stdout, \
        explained.stdout

    spark.sql(f"DROP TABLE {cat}.{alo}")
    assert alo not in AdminClient({"bootstrap.servers": secured.bootstrap}).list_topics(timeout=30).topics
    password = secured.users["kplex"]
    for text in (recovered.stdout, recovered.stderr, read.stderr, explained.stdout, explained.stderr):
        assert password not in text


def _fails_within_seconds(call, error_type, *expected: str, limit: float = 45.0) -> str:
    started = time.monotonic()
    with pytest.raises(error_type) as raised:
        call()
    took = time.monotonic() - started
    message = str(raised.value).split("\n")[0]
    assert took < limit, (took, message)
    for part in expected:
        assert part in message, (part, message)
    return message


@pytest.mark.parametrize("user, password", [("kplex", "not-the-password"), ("ghost", "whatever-it-is")])
def test_a_login_the_broker_refuses_fails_at_once_naming_the_principal(spark, secured, user, password):
    cat = use_catalog(spark, secured, f"sec_login_{user}", user, password)
    table = f"sec_login_{uuid.uuid4().hex[:6]}"
    message = _fails_within_seconds(
        lambda: spark.sql(f"CREATE TABLE {cat}.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '{V}',"
                          f" 'kplex.physical_partitions' = '{P}')"),
        NotAuthenticatedError, f"User:{user}", "SCRAM-SHA-512")
    assert password not in message
    assert table not in AdminClient({"bootstrap.servers": secured.bootstrap}).list_topics(timeout=30).topics


def test_a_login_refused_then_made_works_in_the_next_statement_of_the_session(spark, secured):
    """The driver's Kafka clients are the JVM's, shared by its statements (kafka/SharedClients):
    one whose login the broker refused is not kept, so once the user exists the next statement
    logs in afresh."""
    user, password = f"late{uuid.uuid4().hex[:6]}", f"pw-{uuid.uuid4().hex}"
    cat = use_catalog(spark, secured, f"sec_{user}", user, password)
    table = f"sec_late_{uuid.uuid4().hex[:6]}"
    create = (f"CREATE TABLE {cat}.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '{V}',"
              f" 'kplex.physical_partitions' = '{P}', 'kplex.delivery' = 'exactly_once')")
    _fails_within_seconds(lambda: spark.sql(create), NotAuthenticatedError, f"User:{user}")
    secured.add_user(user, password)
    grant(secured, user, readme_acls([table], [SOURCE]))
    spark.sql(create)
    spark.sql(INSERT.format(catalog=cat, target=table, source=SOURCE))
    report = verify.check_derived_topic(secured.bootstrap, SOURCE, table, V, P)
    assert report.ok and report.derived_count == ROWS, report.summary()


def _clients_made(spark, cluster) -> tuple[int, int, int]:
    """How many Admin clients, plain producers and consumers the driver's JVM has made so far,
    counting a probe of each made here (Kafka numbers the clients of a JVM without a client.id
    in turn)."""
    jvm = spark._jvm  # noqa: SLF001
    kafka = "io.kplex.shaded.org.apache.kafka"
    props = jvm.java.util.Properties()
    props.put("bootstrap.servers", cluster.bootstrap)
    for side in ("key", "value"):
        props.put(f"{side}.serializer", f"{kafka}.common.serialization.ByteArraySerializer")
        props.put(f"{side}.deserializer", f"{kafka}.common.serialization.ByteArrayDeserializer")
    admin = jvm.io.kplex.shaded.org.apache.kafka.clients.admin.Admin.create(props)
    producer = jvm.io.kplex.shaded.org.apache.kafka.clients.producer.KafkaProducer(props)
    consumer = jvm.io.kplex.shaded.org.apache.kafka.clients.consumer.KafkaConsumer(props)
    try:
        names = [str(t.getName()) for t in jvm.java.lang.Thread.getAllStackTraces().keySet()]
        numbers = {kind: max(int(m.group(1)) for n in names if (m := re.fullmatch(pattern, n)))
                   for kind, pattern in (("admin", r"kafka-admin-client-thread \| adminclient-(\d+)"),
                                         ("producer", r"kafka-producer-network-thread \| producer-(\d+)"))}
        ids = {str(name.tags().get("client-id")) for name in consumer.metrics().keySet()}
        consumers = max(int(m.group(1)) for i in ids if (m := re.fullmatch(r"consumer-null-(\d+)", i)))
        return numbers["admin"], numbers["producer"], consumers
    finally:
        admin.close()
        producer.close()
        consumer.close()


def test_the_statements_of_a_session_share_the_drivers_kafka_logins(spark, secured):
    """On a SASL_SSL listener every connection is a TLS handshake and a login: kplex's own
    requests (table lookups, topic and ACL checks, the claim, the commit record) go through the
    Admin clients and producer the JVM's statements share, so once a session has run a
    statement, the next ones make none (each made about fifteen before)."""
    cat = use_catalog(spark, secured, "sec_shared", "admin")
    tables = [f"sec_shared_{uuid.uuid4().hex[:6]}" for _ in range(2)]

    def create_and_insert(table: str) -> None:
        spark.sql(f"CREATE TABLE {cat}.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '{V}',"
                  f" 'kplex.physical_partitions' = '{P}', 'kplex.delivery' = 'exactly_once')")
        spark.sql(INSERT.format(catalog=cat, target=table, source=SOURCE))

    create_and_insert(tables[0])
    before = _clients_made(spark, secured)
    create_and_insert(tables[1])
    # The source's partitions are read by the consumers the first INSERT's tasks gave back
    # (kafka/ConsumerPool), and the driver plans the read through its shared Admin client.
    inserted = _clients_made(spark, secured)
    assert [a - b for a, b in zip(inserted, before)] == [1, 1, 1], "only the probes: no client made by kplex"
    assert spark.sql(f"SELECT count(*) FROM {cat}.{tables[1]}").first()[0] == ROWS
    after = _clients_made(spark, secured)
    assert (after[0] - inserted[0], after[1] - inserted[1]) == (1, 1), "only the probes: no client made by kplex"
    for table in tables:  # through the open listener as the harness's super user: not through kplex
        report = verify.check_derived_topic(secured.bootstrap, SOURCE, table, V, P)
        assert report.ok and report.derived_count == ROWS, report.summary()


@pytest.mark.parametrize("missing, operation, resource", [
    ("target WRITE", "WRITE", "topic '{table}'"),
    ("transactional ids", "WRITE", "transactional ids 'kplex.{table}.*'"),
    ("source READ", "READ", f"topic '{SOURCE}'"),
])
def test_a_missing_acl_fails_naming_principal_operation_and_resource_and_writes_nothing(
        spark, secured, missing, operation, resource):
    user = f"u{uuid.uuid4().hex[:8]}"
    secured.add_user(user, f"pw-{uuid.uuid4().hex}")
    table = f"sec_acl_{uuid.uuid4().hex[:6]}"
    acls = [a for a in readme_acls([table], [SOURCE])
            if not (missing == "target WRITE" and a[1] == table and a[3] == AclOperation.WRITE)
            and not (missing == "transactional ids" and a[0] == ResourceType.TRANSACTIONAL_ID)
            and not (missing == "source READ" and a[1] == SOURCE)]
    grant(secured, user, acls)
    cat = use_catalog(spark, secured, f"sec_{user}", user)
    spark.sql(f"CREATE TABLE {cat}.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '{V}',"
              f" 'kplex.physical_partitions' = '{P}')")
    source = f"{cat}.{SOURCE}"
    _fails_within_seconds(lambda: spark.sql(INSERT.format(catalog=cat, target=table, source=SOURCE)
                                            .replace(f"{cat}.{SOURCE}", source)),
                          NotAuthorizedError, f"principal User:{user} is not allowed to {operation} {resource.format(table=table)}")
    assert verify.read_topic(secured.bootstrap, table, isolation="read_uncommitted") == []
    assert open_transactions(spark, secured, table) == []


def test_a_drop_that_cannot_read_the_commit_log_deletes_no_topic_with_records(spark, secured):
    """DROP deletes a table's topic only when the records in it are kplex's, told by the topic id
    the commit log recorded. A principal that may delete the topic but not read the log gets
    the table's topic refused when it holds records (nothing dropped: definition, topic and
    records stay), and an empty one deleted; the owner's DROP then works."""
    owner, dropper = (f"u{uuid.uuid4().hex[:8]}" for _ in range(2))
    written, empty = (f"sec_drop_{kind}_{uuid.uuid4().hex[:6]}" for kind in ("written", "empty"))
    for user in (owner, dropper):
        secured.add_user(user, f"pw-{uuid.uuid4().hex}")
    grant(secured, owner, readme_acls([written, empty], [SOURCE]))
    grant(secured, dropper, [a for a in readme_acls([written, empty], [SOURCE])
                             if not (a[1] == "_kplex_commits" and a[3] == AclOperation.READ)])
    mine, theirs = use_catalog(spark, secured, f"sec_{owner}", owner), use_catalog(spark, secured, f"sec_{dropper}", dropper)
    for table in (written, empty):
        spark.sql(f"CREATE TABLE {mine}.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '{V}',"
                  f" 'kplex.physical_partitions' = '{P}')")
    spark.sql(INSERT.format(catalog=mine, target=written, source=SOURCE))

    with pytest.raises(Exception) as refused:
        spark.sql(f"DROP TABLE {theirs}.{written}")
    message = str(refused.value)
    assert f"[KPLEX_TOPIC_IN_USE] table {written}'s topic '{written}' holds records, and whether kplex" \
           " wrote them cannot be told: the id of the topic kplex wrote to could not be read from _kplex_commits." in message, message
    assert f"The read failed with: KplexException: [KPLEX_NOT_AUTHORIZED] principal User:{dropper} is not allowed to" \
           " READ topic '_kplex_commits'" in message, message
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    assert written in admin.list_topics(timeout=30).topics
    assert len(verify.read_topic(secured.bootstrap, written)) == ROWS
    assert spark.sql(f"SELECT count(*) FROM {mine}.{written}").first()[0] == ROWS, "the definition stays"

    spark.sql(f"DROP TABLE {theirs}.{empty}")  # an empty topic is anyone's to delete
    spark.sql(f"DROP TABLE {mine}.{written}")
    deadline = time.monotonic() + 60
    while {written, empty} & set(admin.list_topics(timeout=30).topics):
        assert time.monotonic() < deadline, "the topics were not deleted"
        time.sleep(0.2)


def test_datagen_and_the_demo_log_in_with_the_kafka_config_file(secured, tmp_path):
    """`kplex datagen` and `kplex demo` take --kafka-config as every command that talks to
    Kafka does: its bootstrap.servers (the SASL_SSL listener) with its credentials."""
    settings = properties_file(secured, "admin", tmp_path / "admin.properties")
    topic = f"datagen_secured_{uuid.uuid4().hex[:8]}"
    done = cli("datagen", "--kafka-config", str(settings), "--topic", topic, "--records", "500", "--partitions", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    # Read back through the open listener: every record is there.
    assert len(verify.read_topic(secured.bootstrap, topic)) == 500

    # The demo lists the cluster's topics over the same login, and refuses to replace one of its
    # names that exists there (it would have timed out connecting without the credentials).
    datagen.ensure_topic(secured.bootstrap, "pageviews", 3)
    refused = cli("demo", "--kafka-config", str(settings), "--records", "100")
    assert refused.returncode == 2, refused.stderr[-3000:]
    assert "topic(s) pageviews exist on" in refused.stderr and "--replace" in refused.stderr, refused.stderr


def test_an_operators_kafka_system_properties_bind_kplexs_own_clients(bootstrap, fresh_name, tmp_path):
    """kplex's Kafka clients are relocated inside its jar, and so are the names of the system
    properties they read. An operator's `-Dorg.apache.kafka.disallowed.login.modules` (Kafka's
    limit on the login modules a client setting may load) must bind them all the same: a read
    whose JAAS line names a disallowed module is refused by Kafka's client, naming it."""
    topic = fresh_name("disallowed_login")
    datagen.generate_pageviews(bootstrap, topic, 20, partitions=1, users=2, seed=4)
    script = tmp_path / "disallowed.py"
    script.write_text(f"""
from kplex.session import kplex_session
spark = kplex_session({bootstrap!r}, master="local[1]", conf={{"spark.driver.extraJavaOptions":
    "-Dorg.apache.kafka.disallowed.login.modules=org.apache.kafka.common.security.plain.PlainLoginModule"}})
print("PLAIN READ", spark.read.format("kplex").option("table", {topic!r}).load().count())
try:
    (spark.read.format("kplex").option("table", {topic!r}).option("kafka.security.protocol", "SASL_PLAINTEXT")
     .option("kafka.sasl.mechanism", "PLAIN")
     .option("kafka.sasl.jaas.config",
             'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";')
     .load().count())
    print("SASL READ RAN")
except Exception as e:
    print("REFUSED", str(e).replace(chr(10), " ")[:3000])
spark.stop()
""")
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "PLAIN READ 20" in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
    refused = next((line for line in run.stdout.splitlines() if line.startswith("REFUSED")), run.stdout[-2000:])
    assert "PlainLoginModule" in refused and "not allowed" in refused, refused
