"""Bad input: a clear error naming the culprit, and nothing half-written.

Each case runs one statement that must fail with a given kplex error class and a
message naming the column, key, option or topic; then a plain consumer checks
that the target topic holds no record.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer, TopicCollection
from confluent_kafka.admin import AdminClient, NewTopic
from test_streaming import create, stream, wait_for

from kplex import errors, status
from kplex.definitions import read_table_definition
from kplex.errors import translated
from kplex.settings import session_setting_problem
from kplex.streaming import recent_progress
from kplex.testing import datagen, verify

GOOD_KEY = "kplex_key(CAST(id AS STRING))"
GOOD_ORDER = "kplex_order(CAST(id AS BIGINT))"
VALUE = "CAST('v' AS BINARY) AS value"

# (case id, SELECT written into a V=3/P=3 table, expected error class, text the message names)
WRITES = [
    ("NULL key", f"SELECT kplex_key(IF(id = 7, NULL, CAST(id AS STRING))), {GOOD_ORDER}, {VALUE} FROM range(20)",
     errors.NullKeyError, "NULL key in column `kplex_key("),
    ("NULL order", f"SELECT {GOOD_KEY}, kplex_order(IF(id = 7, NULL, id)), {VALUE} FROM range(20)",
     errors.NullOrderError, "for row key '7'"),
    ("order of an unsupported type", f"SELECT {GOOD_KEY}, kplex_order(CAST(id AS STRING)), {VALUE} FROM range(20)",
     errors.OrderTypeError, "STRING"),
    ("order column of an unsupported type", f"SELECT {GOOD_KEY}, CAST(id AS DOUBLE) AS order_value, {VALUE} FROM range(20)",
     errors.OrderTypeError, "order_value"),
    ("no key column", f"SELECT {GOOD_ORDER}, {VALUE} FROM range(20)", errors.ColumnError, "no key column"),
    ("no order column", f"SELECT {GOOD_KEY}, {VALUE} FROM range(20)", errors.ColumnError, "no order column"),
    ("two key columns", f"SELECT {GOOD_KEY}, CAST(id AS STRING) AS key, {GOOD_ORDER}, {VALUE} FROM range(20)",
     errors.ColumnError, "more than one key column"),
    ("value of a wrong type", f"SELECT {GOOD_KEY}, {GOOD_ORDER}, id AS value FROM range(20)",
     errors.ColumnError, "BIGINT"),
]


@pytest.fixture
def table(spark, fresh_name) -> str:
    name = fresh_name("bad")
    spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    return name


@pytest.mark.parametrize("select,error,culprit", [w[1:] for w in WRITES], ids=[w[0] for w in WRITES])
def test_a_bad_write_fails_naming_the_culprit_and_leaves_nothing_visible(
        spark, bootstrap, table, select, error, culprit):
    with pytest.raises(error) as raised, translated():
        spark.sql(f"INSERT INTO kplex.{table} {select}")
    assert culprit in str(raised.value)
    assert verify.read_topic(bootstrap, table) == []


def test_an_insert_of_records_below_what_the_table_holds_fails_naming_one_and_where_it_came_from(
        spark, bootstrap, fresh_name):
    """A batch INSERT writes only past what each virtual partition holds: a record below it fails
    the INSERT under late_policy fail, naming the record's source topic, partition and offset,
    without the advice to raise max_delay_ms (a batch write does not use it), and nothing of the
    INSERT is visible."""
    later, earlier, table = fresh_name("late_insert_later"), fresh_name("late_insert_earlier"), fresh_name("late_insert")
    datagen.generate_pageviews(bootstrap, later, 200, partitions=1, users=5, seed=21,
                               start_ms=datagen.ARTICLE_START_MS + 10_000_000)
    datagen.generate_pageviews(bootstrap, earlier, 200, partitions=1, users=5, seed=22)
    create(spark, table)
    select = ("kplex_key(kplex_json(value, '/userid'))", "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT))",
              "value")
    spark.sql(f"INSERT INTO kplex.{table} SELECT {', '.join(select)} FROM kplex.{later}")
    with pytest.raises(errors.LateRecordError) as late, translated():
        spark.sql(f"INSERT INTO kplex.{table} SELECT {', '.join(select)} FROM kplex.{earlier}")
    said = str(late.value)
    assert re.search(rf"\({re.escape(earlier)}-0 offset \d+\)", said), said
    assert "an INSERT writes only past what each virtual partition holds" in said, said
    assert "Raise 'kplex.max_delay_ms'" not in said, said
    assert len(verify.read_topic(bootstrap, table)) == 200


@pytest.mark.parametrize("column,select", [
    ("key", "kplex_key(IF(id = 40000, NULL, CAST(id AS STRING))), kplex_order(id)"),
    ("order", "kplex_key(CAST(id AS STRING)), kplex_order(IF(id = 40000, NULL, id))"),
], ids=["NULL key", "NULL order"])
def test_a_refused_null_fails_an_at_least_once_write_before_any_task_sends(
        spark, bootstrap, fresh_name, column, select):
    # At least once has no transaction to abort: the NULL must stop the write before
    # any writer task starts, not only the task that holds it (9 virtual partitions over
    # 4 shuffle partitions: the other tasks have thousands of good rows to send).
    name = fresh_name("alo_null")
    spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              " 'kplex.physical_partitions' = '3', 'kplex.delivery' = 'at_least_once')")
    with pytest.raises(errors.NullKeyError if column == "key" else errors.NullOrderError), translated():
        spark.sql(f"INSERT INTO kplex.{name} SELECT {select}, CAST('v' AS BINARY) AS value FROM range(50000)")
    assert verify.read_topic(bootstrap, name, isolation="read_uncommitted") == []


@pytest.mark.parametrize("props,culprit", [
    ("'kplex.physical_partitions' = '3'", "kplex.virtual_partitions"),
    ("'kplex.virtual_partitions' = '3'", "kplex.physical_partitions"),
    ("'kplex.virtual_partitions' = '0', 'kplex.physical_partitions' = '3'", "kplex.virtual_partitions"),
    ("'kplex.virtual_partitions' = '3', 'kplex.physical_partitions' = '-1'", "kplex.physical_partitions"),
    ("'kplex.virtual_partitions' = 'nine', 'kplex.physical_partitions' = '3'", "kplex.virtual_partitions"),
    ("'kplex.virtual_partitions' = '3', 'kplex.physical_partitions' = '3', 'kplex.delivery' = 'twice'",
     "kplex.delivery"),
    ("'kplex.virtual_partition' = '3', 'kplex.physical_partitions' = '3'", "kplex.virtual_partitions"),
], ids=["V missing", "P missing", "V < 1", "P < 1", "V not a number", "unknown delivery", "misspelt property"])
def test_create_table_rejects_bad_properties_and_creates_no_topic(spark, bootstrap, fresh_name, props, culprit):
    name = fresh_name("badprops")
    with pytest.raises(errors.OptionError) as raised, translated():
        spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ({props})")
    assert culprit in str(raised.value)
    assert name not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


@pytest.mark.parametrize("name,props,culprit", [
    ("`{name} v2`", "", "table '{name} v2' has no 'kplex.topic'"),
    ("{name}", ", 'kplex.topic' = 'pageviews by user'", "option 'kplex.topic' = 'pageviews by user'"),
    ("{name}", ", 'kplex.late_topic' = 'late!'", "option 'kplex.late_topic' = 'late!'"),
    ("`..`", "", "table '..' has no 'kplex.topic'"),
    ("`{name}{long}`", "", "characters long"),
], ids=["table name with a space", "kplex.topic with spaces", "kplex.late_topic", "'..'", "250 characters"])
def test_create_table_refuses_a_topic_name_kafka_would_refuse_naming_it_and_keeps_nothing(
        spark, bootstrap, fresh_name, name, props, culprit):
    base = fresh_name("badtopic")
    long = "x" * (250 - len(base))
    name, culprit = name.format(name=base, long=long), culprit.format(name=base, long=long)
    with pytest.raises(errors.OptionError) as raised, translated():
        spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
                  f" 'kplex.physical_partitions' = '3'{props})")
    message = str(raised.value)
    assert message.startswith("[KPLEX_BAD_TOPIC_NAME]") and culprit in message, message
    assert "1 to 249 ASCII letters, digits" in message
    topics = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert not [t for t in topics if t.startswith(base)]
    assert not [r for r in spark.sql("SHOW TABLES IN kplex").collect() if r.tableName.startswith(base)]


def test_reading_a_name_no_topic_can_have_says_so(spark, fresh_name):
    name = fresh_name("no topic")
    with pytest.raises(errors.OptionError) as raised, translated():
        spark.sql(f"SELECT * FROM kplex.`{name}`").collect()
    assert str(raised.value).startswith(f"[KPLEX_BAD_TOPIC_NAME] '{name}' cannot be a Kafka topic's name: it contains ' '")


def test_a_topic_the_broker_refuses_to_create_is_named_with_what_was_asked_and_no_table_is_left(
        spark, bootstrap, fresh_name):
    name = fresh_name("refused")
    with pytest.raises(errors.KafkaFailureError) as raised, translated():
        spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
                  " 'kplex.physical_partitions' = '3', 'kplex.replication_factor' = '1000')")
    assert str(raised.value).startswith(f"[KPLEX_KAFKA] the broker refused to create topic '{name}' with 3 partitions"
                                        " (replication factor: 1000): InvalidReplicationFactorException"), raised.value
    assert name not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    assert name not in {r.tableName for r in spark.sql("SHOW TABLES IN kplex").collect()}


@pytest.mark.parametrize("option,value,culprit", [
    ("kplex.delivry", "at_least_once", "unknown kplex write option 'kplex.delivry'; did you mean 'kplex.delivery'?"),
    ("KPLEX.NULL_KEYS", "drop", "unknown kplex write option 'KPLEX.NULL_KEYS'; did you mean 'kplex.null_key'?"),
    ("kplex.no_such_thing", "1", "unknown kplex write option 'kplex.no_such_thing'. A write may set [kplex.delivery,"),
    ("kplex.virtual_partitions", "12", "option 'kplex.virtual_partitions' cannot be set on a write into {table}"),
], ids=["misspelt", "misspelt, upper case", "unknown", "fixed by the definition"])
def test_a_write_option_kplex_does_not_take_is_refused_naming_it_and_nothing_is_written(
        spark, bootstrap, table, option, value, culprit):
    # A misspelt option would otherwise be ignored: its setting silently the default.
    rows = spark.range(20).selectExpr(f"{GOOD_KEY} AS key", f"{GOOD_ORDER} AS order_value", VALUE)
    with pytest.raises(errors.OptionError) as raised, translated():
        rows.write.format("kplex").option("table", table).option(option, value).mode("append").save()
    assert culprit.format(table=table) in str(raised.value), raised.value
    assert "kplex.testing" not in str(raised.value)  # the test hooks are accepted, never offered
    assert verify.read_topic(bootstrap, table, isolation="read_uncommitted") == []


def test_a_misspelt_session_setting_is_refused_naming_it_and_nothing_is_written(spark, bootstrap, table):
    # SET is how SQL configures kplex; Spark keeps a setting it does not know and ignores it.
    spark.sql("SET spark.kplex.nul_key = drop")
    try:
        with pytest.raises(errors.OptionError) as raised, translated():
            spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(5)")
    finally:
        spark.sql("RESET spark.kplex.nul_key")
    assert str(raised.value).startswith("[KPLEX_UNKNOWN_PROPERTY] unknown kplex session setting 'spark.kplex.nul_key';"
                                        " did you mean 'spark.kplex.null_key'?"), raised.value
    assert verify.read_topic(bootstrap, table, isolation="read_uncommitted") == []
    spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(5)")  # once RESET
    assert len(verify.read_topic(bootstrap, table)) == 5


@pytest.mark.parametrize("setting,meant", [
    ("kplex.stream.releaseatend", "kplex.stream.releaseAtEnd"),  # Spark's keys are case-sensitive
    ("kplex.stream.startingOffset", "kplex.stream.startingOffsets"),
])
def test_a_misspelt_stream_setting_is_refused_naming_the_one_meant(spark, bootstrap, table, tmp_path, setting, meant):
    # SQL's STREAM(...) takes no read options: a stream reads kplex.stream.* from the session,
    # and a misspelt one would leave its default (here: nothing released at the end).
    spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(5)")

    def stream(name: str):
        return (spark.readStream.format("kplex").option("table", table).load().writeStream.format("memory")
                .queryName(name).option("checkpointLocation", str(tmp_path / name)).trigger(availableNow=True).start())

    spark.sql(f"SET {setting} = true")
    try:
        with pytest.raises(errors.OptionError) as raised, translated():
            stream(f"typo_{table}").awaitTermination(120)
    finally:
        spark.sql(f"RESET {setting}")
    assert str(raised.value).startswith(
        f"[KPLEX_UNKNOWN_PROPERTY] unknown kplex stream setting '{setting}'; did you mean '{meant}'?"), raised.value
    assert spark.table(f"typo_{table}").count() == 0
    spark.sql(f"SET {meant} = {'true' if meant.endswith('AtEnd') else 'earliest'}")  # the name meant: it runs
    try:
        query = stream(f"meant_{table}")
        query.awaitTermination(120)
        assert query.exception() is None
    finally:
        spark.sql(f"RESET {meant}")
    assert sorted(bytes(r.key) for r in spark.table(f"meant_{table}").collect()) == sorted(
        bytes(r.key) for r in verify.read_topic(bootstrap, table))


def test_kplex_sql_check_flags_the_sets_the_plugin_refuses_and_names_the_same_setting(spark, bootstrap, table,
                                                                                   tmp_path):
    # kplex sql check reads a SET without Spark; the plugin refuses it at the next write or stream.
    sets = [("spark.kplex.nul_key", "drop"), ("spark.kplex.null_key", "'drop'"), ("spark.kplex.colour", "blue"),
            ("spark.KPLEX.Null_Key", "drop"), ("spark.kplex.nulll_order", "first"),
            ("kplex.stream.releaseatend", "true"), ("kplex.stream.startingOffset", "earliest"),
            ("kplex.stream.idleTimeoutMs", "-5"), ("kplex.stream.releaseAtEnd", "true"), ("kplex.stream.idle", "5")]
    spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(5)")
    for n, (key, value) in enumerate(sets):
        spark.sql(f"SET {key} = {value}")
        try:
            with translated():
                if key.lower().startswith("spark.kplex."):
                    spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} "
                              f"FROM range({100 * (n + 1)}, {100 * (n + 1) + 5})")  # later order values
                else:
                    query = (spark.readStream.format("kplex").option("table", table).load().writeStream
                             .format("memory").queryName(f"set{n}_{table}")
                             .option("checkpointLocation", str(tmp_path / str(n))).trigger(availableNow=True).start())
                    query.awaitTermination(120)
            refused = None
        except errors.OptionError as e:
            refused = str(e)
        finally:
            spark.sql(f"RESET {key}")
        flagged = session_setting_problem(key, value)
        assert (refused is None) == (flagged is None), (key, value, refused, flagged)
        meant = re.search(r"did you mean '([^']+)'", refused or "")
        assert meant == re.search(r"did you mean '([^']+)'", flagged or "") or meant[1] in flagged, (refused, flagged)


@pytest.mark.parametrize("stream", [False, True], ids=["batch", "stream"])
@pytest.mark.parametrize("option,value,suggestion", [
    ("startingOffset", "latest", "startingOffsets"),
    ("maxOffsetPerTrigger", "5", "maxOffsetsPerTrigger"),
    ("ENDINGOFFSET", "latest", "endingOffsets"),
], ids=["startingOffset", "maxOffsetPerTrigger", "ENDINGOFFSET"])
def test_a_misspelt_read_option_is_refused_naming_the_one_meant(spark, bootstrap, table, tmp_path, stream, option,
                                                                 value, suggestion):
    # Spark passes a misspelt option on unread: 'startingOffset' = 'latest' would read everything.
    spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(5)")
    reader = (spark.readStream if stream else spark.read).format("kplex").option("table", table).option(option, value)
    with pytest.raises(errors.OptionError) as raised, translated():
        if stream:
            reader.load().writeStream.format("memory").queryName(f"typo_{table}").option(
                "checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True).start().awaitTermination(120)
        else:
            reader.load().collect()
    assert str(raised.value).startswith(
        f"[KPLEX_UNKNOWN_PROPERTY] unknown read option '{option}'; did you mean '{suggestion}'?"), raised.value
    # A name that is no near miss of one kplex takes passes, as Spark's own sources let it.
    assert (spark.read.format("kplex").option("table", table).option("someone_elses_setting", "1").load().count()
            == 5)


def test_an_unknown_source_topic_is_named(spark, table):
    with pytest.raises(errors.UnknownTableError) as raised, translated():
        spark.sql(f"INSERT INTO kplex.{table} SELECT key, 0 AS order_value, value FROM kplex.no_such_topic")
    assert "no_such_topic" in str(raised.value)


def test_an_unknown_target_table_is_named(spark):
    with pytest.raises(errors.UnknownTableError) as raised, translated():
        spark.sql(f"INSERT INTO kplex.no_such_table SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(3)")
    assert "no_such_table" in str(raised.value)


def test_writing_into_a_plain_topic_says_it_is_not_a_kplex_table(spark, bootstrap, fresh_name):
    plain = fresh_name("plain")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    from confluent_kafka.admin import NewTopic
    admin.create_topics([NewTopic(plain, 3, 1)])[plain].result()
    with pytest.raises(errors.NotAKplexTableError) as raised, translated():
        spark.sql(f"INSERT INTO kplex.{plain} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(3)")
    assert plain in str(raised.value)
    # The JVM's message parameters come through: the culprit by name, not only in the text.
    assert raised.value.getMessageParameters() == {"topic": plain}


def test_a_topic_whose_partition_count_changed_is_refused(spark, bootstrap, table):
    # Waits for the broker's metadata too: CI once saw 3 partitions in a describe right after.
    datagen.grow_topic(bootstrap, table, 4)
    with pytest.raises(errors.PartitionMismatchError) as raised, translated():
        spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(3)")
    assert table in str(raised.value) and "4 partitions" in str(raised.value)
    parameters = raised.value.getMessageParameters()
    assert parameters.get("topic") == table and "4" in parameters.values(), parameters
    assert verify.read_topic(bootstrap, table) == []
    # A read says so too, naming the table, and nothing about writing.
    with pytest.raises(errors.PartitionMismatchError) as read, translated():
        spark.table(f"kplex.{table}").collect()
    assert read.value.getMessageParameters() == {"topic": table, "partition_count": "4", "table": table,
                                                 "expected": "3"}
    assert "writ" not in str(read.value), str(read.value)


def test_a_table_whose_topic_was_deleted_or_recreated_outside_kplex_says_so_and_starts_over_once_dropped(
        spark, bootstrap, table, fresh_name, tmp_path):
    # kplex's marks of what it wrote outlive a topic deleted with kafka-topics: the table's
    # records are gone, and the marks would call every new record late against them.
    # (A topic created again and written by others first, told apart by its id: the test below.)
    def insert(first: int) -> None:
        spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range({first}, {first + 5})")

    insert(100)
    # As a table first written by a kplex before the commit log named the topic (by its id) that
    # a table's writes went to: then a topic emptied is what tells one created again.
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("_kplex_commits", key=f"topic/{table}/id".encode(), value=None,
                     partition=status.control_plane_partition(table))
    assert producer.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.delete_topics([table])[table].result()
    gone = f"[KPLEX_UNKNOWN_TOPIC] topic '{table}' of kplex table {table} does not exist: it was deleted outside kplex."
    for attempt in ("insert", "select", "stream"):
        with pytest.raises(errors.UnknownTableError) as raised, translated():
            if attempt == "insert":
                insert(0)
            elif attempt == "select":
                spark.sql(f"SELECT count(*) FROM kplex.{table}").collect()
            else:
                spark.readStream.format("kplex").option("table", table).load().writeStream.format("memory").queryName(
                    f"gone_{table}").trigger(availableNow=True).start().awaitTermination(120)
        assert str(raised.value).startswith(gone) and "DROP TABLE" in str(raised.value), (attempt, raised.value)
    read = subprocess.run([sys.executable, "-m", "kplex", "read", "--bootstrap", bootstrap, table],
                          capture_output=True, text=True, timeout=120)
    assert read.returncode != 0 and gone in read.stderr, (read.returncode, read.stderr[-2000:])
    assert f"topic {table}:\n  does not exist: it was deleted outside kplex" in status.render(status.status(bootstrap, table))
    create_again(admin, table)
    source = fresh_name("src")
    spark.sql(f"CREATE TABLE kplex.{source} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    spark.sql(f"INSERT INTO kplex.{source} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(5)")
    for refused in refused_writes(spark, table, source, tmp_path / "chk", lambda: insert(0)):
        message = str(refused)
        assert message.startswith(f"[KPLEX_DATA_LOSS] table {table}'s topic '{table}' holds no records and never held "
                                  "any"), message
        assert "up to order value 104 in virtual partition" in message and "DROP TABLE" in message, message
        assert verify.read_topic(bootstrap, table, isolation="read_uncommitted") == []
    assert "  holds no records and never held any, yet kplex committed records to it" in status.render(
        status.status(bootstrap, table))
    # The remedy the error names: the table starts over, from any order value.
    spark.sql(f"DROP TABLE kplex.{table}")
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    insert(0)
    assert sorted(int(r.key) for r in verify.read_topic(bootstrap, table)) == [0, 1, 2, 3, 4]


def refused_writes(spark, table: str, source: str, checkpoint: Path, insert: Callable[[], None]) -> Iterator[Exception]:
    """The data-loss errors an INSERT into ``table`` (``insert``) and then a streaming run into it
    from kplex table ``source`` raise, each in turn, before the next is tried."""
    for attempt in ("insert", "stream"):
        with pytest.raises(errors.DataLossError) as raised, translated():
            if attempt == "insert":
                insert()
            else:
                query = (spark.readStream.format("kplex").option("table", source).load()
                         .selectExpr("key", "order_value", "value").writeStream.format("kplex").option("table", table)
                         .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
                query.awaitTermination(120)
        yield raised.value


def create_again(admin: AdminClient, topic: str) -> None:
    """Creates {topic}, deleted a moment ago, again with 3 partitions, as kafka-topics would."""
    deadline = time.monotonic() + 60
    while True:  # the broker finishes a deletion in the background
        try:
            admin.create_topics([NewTopic(topic, 3, 1)])[topic].result()
            break
        except KafkaException:
            assert time.monotonic() < deadline, f"topic {topic} could not be created again"
            time.sleep(0.1)


def topic_id(admin: AdminClient, topic: str, other_than: str | None = None) -> str:
    """The topic's id as Kafka's tools print it (URL-safe base64, which the JVM's clients use too),
    once it is not ``other_than``: a topic deleted and created a moment ago may be unknown to the
    broker's metadata, or still the old one there, for a moment more."""
    deadline = time.monotonic() + 30
    while True:
        try:
            described = admin.describe_topics(TopicCollection([topic]))[topic].result()
            found = str(described.topic_id).replace("+", "-").replace("/", "_")
            if found != other_than:
                return found
        except KafkaException:
            pass
        assert time.monotonic() < deadline, f"topic {topic} was never described (as other than {other_than})"
        time.sleep(0.1)


def test_a_table_whose_topic_was_recreated_and_written_by_others_is_told_apart_by_its_topic_id(
        spark, bootstrap, table, fresh_name, tmp_path):
    # Deleted and created again outside kplex, then written by a plain producer: the topic is
    # not empty, so only its id tells it from the one kplex committed records to.
    def insert(name: str, first: int) -> None:
        spark.sql(f"INSERT INTO kplex.{name} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range({first}, {first + 5})")

    def replace_outside_kplex(name: str) -> tuple[str, str]:
        before = topic_id(admin, name)
        admin.delete_topics([name])[name].result()
        create_again(admin, name)
        producer = Producer({"bootstrap.servers": bootstrap})
        for i in range(4):
            producer.produce(name, key=f"other-{i}".encode(), value=b"not kplex's", partition=i % 3)
        assert producer.flush(30) == 0
        return before, topic_id(admin, name, other_than=before)

    admin = AdminClient({"bootstrap.servers": bootstrap})
    insert(table, 100)
    insert(table, 200)  # a second write to the same topic is no replacement
    wrote, now = replace_outside_kplex(table)
    source = fresh_name("src")
    spark.sql(f"CREATE TABLE kplex.{source} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    insert(source, 0)
    for refused in refused_writes(spark, table, source, tmp_path / "chk", lambda: insert(table, 0)):
        message = str(refused)
        assert message.startswith(f"[KPLEX_DATA_LOSS] table {table}'s topic '{table}' is not the topic kplex committed"
                                  " records to, up to order value 204 in virtual partition"), message
        assert f"kplex wrote to the topic of id {wrote}, and the topic of that name now has id {now}." in message
        assert "DROP TABLE" in message, message
        parameters = refused.getMessageParameters()
        assert (parameters["written_topic_id"], parameters["topic_id"], parameters["topic"]) == (wrote, now, table)
        # Nothing of kplex's went in, committed or not: the topic holds the other producer's records only.
        assert sorted(r.key.decode() for r in verify.read_topic(bootstrap, table, isolation="read_uncommitted")) == [
            f"other-{i}" for i in range(4)]
    state = status.status(bootstrap, table)
    assert (state["topic_id"], state["written_topic_id"]) == (now, wrote)
    assert f"  is not the topic kplex committed records to (its topic id is {now}, kplex wrote to {wrote})" in (
        status.render(state))
    assert "keeps this topic and the records others wrote to it" in status.render(state)
    # A REPLACE over it is refused before it drops anything, whatever the new definition (on
    # the same topic, another one, or a read-time table of that name): the table stays as it was.
    for properties in ("'kplex.virtual_partitions' = '6', 'kplex.physical_partitions' = '3'",
                       f"'kplex.virtual_partitions' = '6', 'kplex.topic' = '{fresh_name('elsewhere')}'",
                       f"'kplex.source' = '{source}', 'kplex.virtual_partitions' = '6',"
                       " 'kplex.key' = 'CAST(key AS STRING)', 'kplex.order' = 'offset'"):
        with pytest.raises(errors.TopicInUseError) as refused, translated():
            spark.sql(f"CREATE OR REPLACE TABLE kplex.{table} TBLPROPERTIES ({properties})")
        assert str(refused.value).startswith(
            f"[KPLEX_TOPIC_IN_USE] table {table} cannot be replaced: its topic '{table}' was deleted"
            " and created again outside kplex after kplex wrote to it, and holds records kplex did not write"), (
            properties, str(refused.value))
        assert read_table_definition(bootstrap, table)["virtual_partitions"] == 3
        assert status.status(bootstrap, table)["written_topic_id"] == wrote, "the table's marks stay"
    # The remedy the error names: the table starts over. DROP leaves the others' records where
    # they are (the topic is not the one kplex wrote to), a plain topic of that name; once it is
    # deleted with Kafka's tools, the table starts on a topic of its own.
    spark.sql(f"DROP TABLE kplex.{table}")
    assert sorted(r.key.decode() for r in verify.read_topic(bootstrap, table)) == [f"other-{i}" for i in range(4)]
    assert read_table_definition(bootstrap, table) is None
    assert spark.table(f"kplex.{table}").count() == 4  # read as the plain topic it is now
    admin.delete_topics([table])[table].result()
    deadline = time.monotonic() + 60
    while table in admin.list_topics(timeout=10).topics:  # the broker finishes a deletion in the background
        assert time.monotonic() < deadline, f"topic {table} was not deleted"
        time.sleep(0.2)
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    insert(table, 0)
    assert sorted(int(r.key) for r in verify.read_topic(bootstrap, table)) == [0, 1, 2, 3, 4]
    assert status.status(bootstrap, table)["written_topic_id"] == topic_id(admin, table)

    # A table kplex committed no record to loses nothing when its topic is replaced: its next
    # write takes the new topic as the table's, and the write after that finds the one it wrote to.
    unwritten = fresh_name("unwritten")
    spark.sql(f"CREATE TABLE kplex.{unwritten} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    spark.sql(f"INSERT INTO kplex.{unwritten} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(0)")
    first, now = replace_outside_kplex(unwritten)
    assert status.status(bootstrap, unwritten)["written_topic_id"] == first != now
    insert(unwritten, 0)
    insert(unwritten, 5)
    assert status.status(bootstrap, unwritten)["written_topic_id"] == now
    assert sorted(r.key.decode() for r in verify.read_topic(bootstrap, unwritten)) == sorted(
        [str(i) for i in range(10)] + [f"other-{i}" for i in range(4)])


@pytest.mark.parametrize("change", ["created again", "deleted"])
def test_a_running_stream_whose_table_topic_is_replaced_or_deleted_fails_before_writing_to_it(
        spark, bootstrap, fresh_name, tmp_path, change):
    # The topic changes between two micro-batches of a running query, not before a run: the
    # next micro-batch checks it before its tasks send anything. The query also runs empty
    # micro-batches (its idle partitions, its release when input stops): one that starts
    # between the deletion and the creation finds no topic, and fails saying so instead.
    source, target = fresh_name("views_running"), fresh_name("by_user_running")
    datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=41)
    create(spark, target, delay_ms=0)
    query = (stream(spark, source, target, tmp_path / "chk", idleReleaseMs="2000")
             .trigger(processingTime="1 second").start())
    try:
        assert wait_for(300, bootstrap, target) == 300
        admin = AdminClient({"bootstrap.servers": bootstrap})
        wrote = topic_id(admin, target)
        admin.delete_topics([target])[target].result()
        if change == "created again":
            create_again(admin, target)
            now = topic_id(admin, target, other_than=wrote)
        datagen.generate_pageviews(bootstrap, source, 300, partitions=3, users=15, seed=42, create=False,
                                   start_ms=datagen.ARTICLE_START_MS + 10_000_000)
        with pytest.raises((errors.DataLossError, errors.UnknownTableError)) as raised, translated():
            query.awaitTermination(120)
    finally:
        query.stop()
    message = str(raised.value)
    deleted = f"[KPLEX_UNKNOWN_TOPIC] topic '{target}' of kplex table {target} does not exist: it was deleted outside kplex."
    if change == "deleted" or isinstance(raised.value, errors.UnknownTableError):
        assert message.startswith(deleted), message
    else:
        assert message.startswith(f"[KPLEX_DATA_LOSS] table {target}'s topic '{target}' is not the topic kplex"
                                  " committed records to"), message
        assert f"kplex wrote to the topic of id {wrote}, and the topic of that name now has id {now}." in message
    if change == "created again":
        assert verify.read_topic(bootstrap, target, isolation="read_uncommitted") == [], "nothing sent to the new topic"


def test_an_unreachable_broker_is_an_error_within_seconds(spark):
    spark.conf.set("spark.sql.catalog.nobroker", "io.kplex.spark.KplexCatalog")
    spark.conf.set("spark.sql.catalog.nobroker.kafka.bootstrap.servers", "127.0.0.1:1")
    started = time.monotonic()
    with pytest.raises(errors.BrokerUnreachableError) as raised, translated():
        spark.sql("SELECT * FROM nobroker.anything").collect()
    assert time.monotonic() - started < 40
    assert "127.0.0.1:1" in str(raised.value)


def test_null_keys_can_be_dropped_by_policy(spark, bootstrap, fresh_name):
    name = fresh_name("dropnull")
    spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3', 'kplex.null_key' = 'drop')")
    spark.sql(f"INSERT INTO kplex.{name} SELECT kplex_key(IF(id % 5 = 0, NULL, CAST(id AS STRING))),"
              f" {GOOD_ORDER}, {VALUE} FROM range(20)")
    keys = sorted(int(r.key) for r in verify.read_topic(bootstrap, name))
    assert keys == [i for i in range(20) if i % 5 != 0]


def test_a_table_name_the_control_plane_cannot_keep_apart_is_refused_and_nothing_is_stored(
        spark, bootstrap, fresh_name):
    """kplex's commit log keys a table's records `<table>` and `<kind>/<table>/...`: a table
    named `a/b` (possible with kplex.topic) would share keys with table `a`, and `_layout` is
    the key of the log's own layout record. Both are refused naming the table; an INSERT into
    table `a` and table `a`'s claims are untouched."""
    owner = fresh_name("owner")
    spark.sql(f"CREATE TABLE kplex.{owner} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    for name, why in ((f"{owner}/b", "it holds '/'"), ("_layout", "'_layout' is the key of the control plane's")):
        with pytest.raises(errors.OptionError) as raised, translated():
            spark.sql(f"CREATE TABLE kplex.`{name}` TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
                      f" 'kplex.physical_partitions' = '3', 'kplex.topic' = '{fresh_name('elsewhere')}')")
        assert str(raised.value).startswith(f"[KPLEX_BAD_TABLE_NAME] table name '{name}' cannot be a kplex table's:"
                                            f" {why}"), raised.value
    assert not [r for r in spark.sql("SHOW TABLES IN kplex").collect() if "/" in r[1] or r[1] == "_layout"]
    spark.sql(f"INSERT INTO kplex.{owner} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(4)")
    assert len(verify.read_topic(bootstrap, owner)) == 4


def test_a_table_is_made_only_on_a_topic_free_for_it_so_drop_table_never_deletes_someone_elses_records(
        spark, bootstrap, fresh_name):
    """CREATE TABLE takes a new topic, or an existing one nobody wrote (DROP TABLE deletes it).
    Kafka's and kplex's own topics, another table's topic and a topic with records are refused,
    naming table and topic, and nothing is stored: the topic keeps its records, the name stays free."""
    plain = fresh_name("plain")
    datagen.ensure_topic(bootstrap, plain, 3)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(5):
        producer.produce(plain, key=str(i).encode(), value=b"theirs", partition=i % 3)
    assert producer.flush(30) == 0
    owner = fresh_name("owner")
    spark.sql(f"CREATE TABLE kplex.{owner} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              " 'kplex.physical_partitions' = '3')")
    cases = [(plain, "the topic exists and has been written (end offsets {0=2, 1=2, 2=1})"),
             (owner, f"it is the topic of kplex table {owner}."),
             ("_kplex_tables", "it holds kplex's table definitions."),
             ("_kplex_commits", "it is kplex's commit log."),
             ("__consumer_offsets", "it is Kafka's own.")]
    for topic, why in cases:
        table = fresh_name("taker")
        with pytest.raises(errors.TopicInUseError) as raised, translated():
            spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
                      f" 'kplex.physical_partitions' = '3', 'kplex.topic' = '{topic}')")
        assert str(raised.value).startswith(f"[KPLEX_TOPIC_IN_USE] table {table} cannot use topic '{topic}': {why}"), (
            raised.value)
        assert not spark.sql(f"SHOW TABLES IN kplex LIKE '{table}'").collect()
    assert sorted(int(r.key) for r in verify.read_topic(bootstrap, plain)) == [0, 1, 2, 3, 4]
    spark.sql(f"INSERT INTO kplex.{owner} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(4)")
    assert len(verify.read_topic(bootstrap, owner)) == 4
    # A topic an admin made for the table, never written, is taken, and DROP TABLE deletes it
    # with the table.
    empty, table = fresh_name("empty"), fresh_name("on_empty")
    datagen.ensure_topic(bootstrap, empty, 3)
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              f" 'kplex.physical_partitions' = '3', 'kplex.topic' = '{empty}')")
    spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(3)")
    assert sorted(int(r.key) for r in verify.read_topic(bootstrap, empty)) == [0, 1, 2]
    spark.sql(f"DROP TABLE kplex.{table}")
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + 30
    while empty in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, f"DROP TABLE left topic {empty}"
        time.sleep(0.2)


def test_replace_checks_the_new_definition_before_it_drops_the_table(spark, bootstrap, fresh_name):
    """CREATE OR REPLACE TABLE, REPLACE TABLE and df.writeTo(t).createOrReplace() refuse a bad
    definition, naming the culprit, with the table, its topic and its records as they were;
    a good one drops the table and makes the new one (AS SELECT: with the query's records,
    or none at all when the query fails)."""
    table, other, plain = fresh_name("replaced"), fresh_name("other"), fresh_name("plain")
    datagen.ensure_topic(bootstrap, plain, 1)
    for name in (table, other):
        spark.sql(f"CREATE TABLE kplex.{name} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
                  " 'kplex.physical_partitions' = '3')")
    spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(6)")

    def intact() -> None:
        assert sorted(int(r.key) for r in verify.read_topic(bootstrap, table)) == list(range(6))
        props = dict(spark.sql(f"SHOW TBLPROPERTIES kplex.{table}").collect())
        assert (props["kplex.virtual_partitions"], props["kplex.physical_partitions"]) == ("3", "3"), props

    refusals = [
        (f"CREATE OR REPLACE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitons' = '12',"
         " 'kplex.physical_partitions' = '3')", errors.OptionError, "kplex.virtual_partitons"),
        (f"REPLACE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '12',"
         f" 'kplex.physical_partitions' = '3', 'kplex.topic' = '{other}')", errors.TopicInUseError,
         f"[KPLEX_TOPIC_IN_USE] table {table} cannot use topic '{other}': it is the topic of kplex table {other}."),
        (f"CREATE OR REPLACE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '0',"
         " 'kplex.physical_partitions' = '3') AS SELECT 1", errors.OptionError, "kplex.virtual_partitions"),
        (f"CREATE OR REPLACE TABLE kplex.{table} PARTITIONED BY (key) TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
         f" 'kplex.physical_partitions' = '3') AS SELECT {GOOD_KEY} AS key, {GOOD_ORDER}, {VALUE} FROM range(3)",
         errors.UnsupportedError, "takes no PARTITIONED BY"),
        # A read-time definition is checked whole before the drop too, its late topic with it.
        (f"CREATE OR REPLACE TABLE kplex.{table} TBLPROPERTIES ('kplex.source' = '{plain}',"
         " 'kplex.virtual_partitions' = '3', 'kplex.late_policy' = 'side_topic', 'kplex.late_topic' = '_kplex_commits')",
         errors.OptionError, "names a topic of Kafka's or kplex's own"),
        (f"REPLACE TABLE kplex.{table} TBLPROPERTIES ('kplex.source' = '{plain}', 'kplex.virtual_partitions' = '3',"
         f" 'kplex.late_policy' = 'side_topic', 'kplex.late_topic' = '{other}')",
         errors.OptionError, f"names the topic of kplex table {other}"),
    ]
    for statement, error, culprit in refusals:
        with pytest.raises(error) as raised, translated():
            spark.sql(statement)
        assert culprit in str(raised.value), (statement, raised.value)
        intact()
    with pytest.raises(errors.OptionError) as raised, translated():
        spark.range(3).selectExpr(GOOD_KEY, GOOD_ORDER, VALUE).writeTo(f"kplex.{table}").createOrReplace()
    assert "kplex.virtual_partitions" in str(raised.value), raised.value
    intact()

    # A read-time table cannot read the topic the REPLACE deletes (a table with a kplex.topic of its own).
    named, named_topic = fresh_name("named"), fresh_name("named_topic")
    spark.sql(f"CREATE TABLE kplex.{named} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              f" 'kplex.physical_partitions' = '3', 'kplex.topic' = '{named_topic}')")
    spark.sql(f"INSERT INTO kplex.{named} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(4)")
    with pytest.raises(errors.OptionError) as raised, translated():
        spark.sql(f"REPLACE TABLE kplex.{named} TBLPROPERTIES ('kplex.source' = '{named_topic}',"
                  " 'kplex.virtual_partitions' = '3')")
    assert f"'kplex.source' lists '{named_topic}', the topic of the table this REPLACE drops" in str(raised.value)
    assert len(verify.read_topic(bootstrap, named_topic)) == 4
    assert dict(spark.sql(f"SHOW TBLPROPERTIES kplex.{named}").collect())["kplex.topic"] == named_topic

    # A good definition replaces the table: a new topic of the new P, holding nothing of the old.
    spark.sql(f"CREATE OR REPLACE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '4',"
              " 'kplex.physical_partitions' = '2')")
    assert verify.read_topic(bootstrap, table) == []
    admin = AdminClient({"bootstrap.servers": bootstrap})
    assert len(admin.list_topics(table, timeout=10).topics[table].partitions) == 2
    spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(10, 13)")
    assert sorted(int(r.key) for r in verify.read_topic(bootstrap, table)) == [10, 11, 12]
    # AS SELECT writes the new table; a query that fails leaves no table behind.
    spark.sql(f"CREATE OR REPLACE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              f" 'kplex.physical_partitions' = '3') AS SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(20, 24)")
    assert sorted(int(r.key) for r in verify.read_topic(bootstrap, table)) == [20, 21, 22, 23]
    made = fresh_name("ctas")
    with pytest.raises(errors.NullKeyError), translated():
        spark.sql(f"CREATE TABLE kplex.{made} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
                  " 'kplex.physical_partitions' = '3') AS SELECT kplex_key(IF(id = 1, NULL, CAST(id AS STRING))),"
                  f" {GOOD_ORDER}, {VALUE} FROM range(3)")
    assert not spark.sql(f"SHOW TABLES IN kplex LIKE '{made}'").collect()
    assert made not in admin.list_topics(timeout=10).topics


def test_a_late_topic_that_is_the_tables_own_topic_is_refused_before_anything_is_written(
        spark, bootstrap, fresh_name):
    """Late records sent to the table's own topic would go back into its virtual partitions,
    below what they hold: a write with that late topic fails at once, naming option, topic and
    table, in a batch INSERT (here) as in a stream (the same check of the write)."""
    table = fresh_name("own_late")
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              f" 'kplex.physical_partitions' = '3', 'kplex.late_policy' = 'side_topic', 'kplex.late_topic' = '{table}')")
    with pytest.raises(errors.OptionError) as raised, translated():
        spark.sql(f"INSERT INTO kplex.{table} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(5)")
    assert str(raised.value).startswith(f"[KPLEX_BAD_OPTION] option 'kplex.late_topic' = '{table}'"
                                        f" names the topic of table {table} itself"), raised.value
    # Nor a topic of Kafka's or kplex's own (a late record's key could replace a table's definition).
    for reserved in ("_kplex_tables", "_kplex_commits", "__consumer_offsets"):
        with pytest.raises(errors.OptionError) as raised, translated():
            (spark.range(5).selectExpr(GOOD_KEY, GOOD_ORDER, VALUE).write.format("kplex").option("table", table)
             .option("kplex.late_topic", reserved).mode("append").save())
        assert str(raised.value).startswith(f"[KPLEX_BAD_OPTION] option 'kplex.late_topic' = '{reserved}' of table"
                                            f" {table} names a topic of Kafka's or kplex's own"), raised.value
    assert verify.read_topic(bootstrap, table, isolation="read_uncommitted") == []


def test_a_late_topic_that_the_write_reads_is_refused_before_anything_is_written(
        spark, bootstrap, fresh_name, tmp_path):
    """Late records sent to a topic the query reads would be read again, judged late again and
    sent again (a stream: without end): a batch INSERT, or a stream's first micro-batch, with that
    late topic fails naming option, topic and table; the table gets nothing, the source keeps
    what it had."""
    source, table = fresh_name("loop_src"), fresh_name("loop")
    datagen.generate_pageviews(bootstrap, source, 60, partitions=3, users=7, seed=43, out_of_order_ms=2_000)
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
              f" 'kplex.physical_partitions' = '3', 'kplex.late_policy' = 'side_topic', 'kplex.late_topic' = '{source}')")
    refusal = (f"[KPLEX_BAD_OPTION] option 'kplex.late_topic' = '{source}' of table {table} names a topic the"
               " query reads")
    select = ("kplex_key(kplex_json(value, '/userid'))", "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT))",
              "value")
    with pytest.raises(errors.OptionError) as raised, translated():
        spark.sql(f"INSERT INTO kplex.{table} SELECT {', '.join(select)} FROM kplex.{source} WHERE value IS NOT NULL")
    assert str(raised.value).startswith(refusal), raised.value
    query = stream(spark, source, table, tmp_path / "chk", select=select).trigger(availableNow=True).start()
    with pytest.raises(errors.OptionError) as raised, translated():
        query.awaitTermination(300)
    assert refusal in str(raised.value), raised.value
    assert verify.read_topic(bootstrap, table, isolation="read_uncommitted") == []
    assert len(verify.read_topic(bootstrap, source)) == 60
    # The write's own late topic, another one, wins over the table's: the same write runs.
    (spark.table(f"kplex.{source}").selectExpr(*select).write.format("kplex").option("table", table)
     .option("kplex.late_topic", fresh_name("late")).mode("append").save())
    assert len(verify.read_topic(bootstrap, table)) == 60


def test_create_table_as_select_records_what_it_read_so_a_stream_over_it_writes_nothing_twice(
        spark, bootstrap, fresh_name, tmp_path):
    """CREATE TABLE ... AS SELECT from a kplex topic writes the staged table, and records the
    offsets it read with its commit as an INSERT does: a stream from the same source's start
    into the new table skips every record as already written."""
    source, made = fresh_name("ctas_src"), fresh_name("ctas")
    datagen.generate_pageviews(bootstrap, source, 120, partitions=3, users=7, seed=41)
    select = ("kplex_key(kplex_json(value, '/userid')) AS key",
              "kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)) AS order_value", "value")
    spark.sql(f"CREATE TABLE kplex.{made} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
              f" 'kplex.physical_partitions' = '3') AS SELECT {', '.join(select)} FROM kplex.{source}")
    assert len(verify.read_topic(bootstrap, made)) == 120
    query = (stream(spark, source, made, tmp_path / "chk", select=select, releaseAtEnd="true")
             .trigger(availableNow=True).start())
    query.awaitTermination(300)
    assert query.exception() is None, query.exception()
    skipped = sum(int((p.sink.metrics or {}).get("alreadyWritten", "0")) for p in recent_progress(query))
    assert skipped == 120
    assert len(verify.read_topic(bootstrap, made)) == 120


def test_a_create_table_with_columns_partitioned_by_or_a_property_twice_is_refused_naming_it(
        spark, bootstrap, fresh_name):
    """A kplex table's columns and partitioning are kplex's: a column list, PARTITIONED BY, or
    one property in two spellings with two values (which one wins would be chance) is refused,
    naming it, with no topic and no definition made (as `kplex sql check` says beforehand)."""
    table = fresh_name("shaped")
    props = "TBLPROPERTIES ('kplex.virtual_partitions' = '3', 'kplex.physical_partitions' = '3')"
    refusals = [
        (f"CREATE TABLE kplex.{table} (userid STRING, n INT) {props}", errors.UnsupportedError,
         f"CREATE TABLE kplex.{table} takes no column list (it has column userid)"),
        (f"CREATE TABLE kplex.{table} PARTITIONED BY (key) {props} AS SELECT {GOOD_KEY} AS key, {GOOD_ORDER},"
         f" {VALUE} FROM range(3)", errors.UnsupportedError, f"CREATE TABLE kplex.{table} takes no PARTITIONED BY"),
        (f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
         " 'KPLEX.Virtual_Partitions' = '12', 'kplex.physical_partitions' = '3')", errors.OptionError,
         "table property 'kplex.virtual_partitions' is given twice"),
    ]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for statement, error, culprit in refusals:
        with pytest.raises(error) as raised, translated():
            spark.sql(statement)
        assert culprit in str(raised.value), (statement, raised.value)
        assert table not in admin.list_topics(timeout=10).topics
        assert read_table_definition(bootstrap, table) is None
    spark.sql(f"CREATE TABLE kplex.{table} {props} AS SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(3)")
    assert len(verify.read_topic(bootstrap, table)) == 3  # AS SELECT's columns are the query's, not a list


def test_a_streams_to_table_into_a_table_that_does_not_exist_says_to_make_it_first(spark, bootstrap, fresh_name, tmp_path):
    """`toTable` of a missing table asks the catalog for one with the stream's columns: refused
    as a column list is, saying how to make the table; nothing made, no query started."""
    table = fresh_name("to_table")
    rows = spark.readStream.format("rate").load().selectExpr("value AS id").selectExpr(GOOD_KEY, GOOD_ORDER, VALUE)
    with pytest.raises(errors.UnsupportedError, match=rf"make the table first, CREATE TABLE kplex\.{table} TBLPROPERTIES"), \
            translated():
        rows.writeStream.option("checkpointLocation", str(tmp_path / "chk")).toTable(f"kplex.{table}")
    assert read_table_definition(bootstrap, table) is None
    assert table not in AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics


def test_a_definition_this_kplex_cannot_read_fails_its_own_table_only_naming_it(spark, bootstrap, fresh_name):
    """A record in the metadata topic from a newer kplex (or damaged) takes no other table
    down: listing, creating and writing other tables work, and its own table's statements fail
    naming it."""
    future, other = fresh_name("future"), fresh_name("beside_future")
    producer = Producer({"bootstrap.servers": bootstrap})
    record = {"format": "kplex-table", "version": 99, "name": future, "topic": future, "virtual_partitions": 3}
    producer.produce("_kplex_tables", key=future.encode(), value=json.dumps(record).encode(), partition=0)
    assert producer.flush(30) == 0
    try:
        spark.sql(f"CREATE TABLE kplex.{other} TBLPROPERTIES ('kplex.virtual_partitions' = '3',"
                  " 'kplex.physical_partitions' = '3')")
        spark.sql(f"INSERT INTO kplex.{other} SELECT {GOOD_KEY}, {GOOD_ORDER}, {VALUE} FROM range(4)")
        assert len(verify.read_topic(bootstrap, other)) == 4
        assert spark.sql(f"SHOW TABLES IN kplex LIKE '{other}'").collect()
        with pytest.raises(errors.DefinitionError) as raised, translated():
            spark.table(f"kplex.{future}").collect()
        assert f"the definition of table {future} stored in '_kplex_tables' cannot be read" in str(raised.value)
        assert "version 99" in str(raised.value), raised.value
    finally:
        producer.produce("_kplex_tables", key=future.encode(), value=None, partition=0)
        assert producer.flush(30) == 0
