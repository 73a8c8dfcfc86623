"""``kplex sql explain``: data-driven cases in tests/sql_cases/explain, the
stored definitions of a real broker, and a broker that does not answer."""

from __future__ import annotations

import json
import re
import time
import uuid
from pathlib import Path

import pytest
from sql_cases import Case, cases

from kplex.cli import main
from kplex.definitions import TableDefinition
from kplex.sqltools.definitions import definitions_from_records, read_table_definitions
from kplex.sqltools.explain import explain_file, explain_text, mapping_lines


def stored(case: Case) -> dict[str, TableDefinition] | None:
    """What a broker would hold for the case: its ``.stored.jsonl``, if any."""
    path = case.sidecar(".stored.jsonl")
    if not path.exists():
        return None
    values = [line.encode() for line in path.read_text().splitlines() if line.strip()]
    records = [(json.loads(v)["name"].encode(), v) for v in values]
    return definitions_from_records(records, "stored definition on broker:9092")


@pytest.mark.parametrize("case", cases("explain", ".sql"))
def test_explain_prints_what_the_case_expects(case: Case) -> None:
    options = case.options()
    text = explain_text(case.text(), case.input.name, case.variables(), options.get("dialect"),
                        stored=stored(case), bootstrap="broker:9092")
    case.assert_output(text)


# physical = vp % P: (V, P) -> the virtual partitions of each physical one.
#   9, 3 -> 0:{0,3,6} 1:{1,4,7} 2:{2,5,8}      P divides V: V/P each
#  10, 4 -> 0:{0,4,8} 1:{1,5,9} 2:{2,6} 3:{3,7} otherwise the first V % P hold one more
#   2, 3 -> 0:{0} 1:{1} 2:{}                   P > V: the last P - V are empty
@pytest.mark.parametrize("v, p, expected", [
    (9, 3, ["physical 0: vp 0, 3, 6", "physical 1: vp 1, 4, 7", "physical 2: vp 2, 5, 8"]),
    (10, 4, ["physical 0: vp 0, 4, 8", "physical 1: vp 1, 5, 9", "physical 2: vp 2, 6", "physical 3: vp 3, 7"]),
    (2, 3, ["physical 0: vp 0", "physical 1: vp 1", "physical 2: empty"]),
])
def test_the_mapping_puts_each_virtual_partition_on_vp_mod_p(v: int, p: int, expected: list[str]) -> None:
    assert mapping_lines(v, p) == expected


def test_the_last_stored_record_of_a_table_wins_and_a_tombstone_drops_it() -> None:
    def value(name: str, v: int) -> bytes:
        return json.dumps({"format": "kplex-table", "version": 1, "name": name,
                           "virtual_partitions": v, "physical_partitions": 1}).encode()

    tables = definitions_from_records(
        [(b"a", value("a", 2)), (b"b", value("b", 3)), (b"a", value("a", 5)), (b"b", None),
         (b"c", b"not json"), (b"d", b'{"format":"other"}')], "broker")
    assert {name: t.virtual_partitions for name, t in tables.items()} == {"a": 5}


def test_a_broker_that_does_not_answer_leaves_v_and_p_to_the_file(tmp_path: Path) -> None:
    job = tmp_path / "job.sql"
    job.write_text("CREATE TABLE kplex.t TBLPROPERTIES ('kplex.virtual_partitions' = '4', "
                   "'kplex.physical_partitions' = '2');\n")
    started = time.monotonic()
    text = explain_file(job, bootstrap="127.0.0.1:1", timeout=1.0)
    assert time.monotonic() - started < 10
    assert "broker: 127.0.0.1:1 (from --bootstrap) not reachable: V and P come from the file" in text
    assert "partitions  4 virtual on 2 physical (TBLPROPERTIES of statement 1)" in text


def test_the_cli_explains_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KPLEX_BOOTSTRAP", raising=False)
    job = tmp_path / "job.sql"
    job.write_text("INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.s;\n")
    assert main(["sql", "explain", str(job)]) == 0
    out = capsys.readouterr().out
    assert "statement 1, line 1: INSERT INTO kplex.t" in out
    assert "V and P unknown: kplex.t is not created in this file and no broker was given" in out


def test_the_cli_exits_1_when_the_file_it_explains_has_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit code 1: the SQL has errors (the CLI's rule), here an undefined variable, which the
    explanation names; a file with a list of brokers in its bootstrap comment is read whole."""
    monkeypatch.delenv("KPLEX_BOOTSTRAP", raising=False)
    job = tmp_path / "job.sql"
    job.write_text("INSERT INTO kplex.t SELECT kplex_key(key), kplex_order(timestamp), value FROM kplex.${src};\n")
    assert main(["sql", "explain", str(job)]) == 1
    assert "undefined variable ${src}" in capsys.readouterr().out
    assert main(["sql", "explain", str(job), "--var", "src=s"]) == 0
    capsys.readouterr()
    job.write_text("-- kplex.bootstrap = 127.0.0.1:1, 127.0.0.1:2\nSELECT 1;\n")
    assert main(["sql", "explain", str(job), "--timeout", "1"]) == 0
    assert "127.0.0.1:1,127.0.0.1:2 (from the kplex.bootstrap comment of the file)" in capsys.readouterr().out


def test_a_file_that_did_not_read_whole_runs_no_statement(tmp_path: Path) -> None:
    """`kplex stream` and a pipeline's tables.sql take their statements from spark_statements:
    an undefined variable or an unterminated quote raises, naming it, instead of none or part."""
    from kplex.sqltools.errors import CheckFailed
    from kplex.sqltools.run import spark_statements
    from kplex.sqltools.script import load_script

    for text, culprit in (("CREATE TABLE kplex.${t} TBLPROPERTIES ('kplex.virtual_partitions' = '1');",
                           "undefined variable ${t}"),
                          ("SELECT 1; SELECT 'open", "unterminated")):
        with pytest.raises(CheckFailed, match=re.escape(culprit)):
            spark_statements(load_script(text, "tables.sql"))
    assert spark_statements(load_script("SELECT 1; SELECT 2")) == ["SELECT 1", "SELECT 2"]


def test_stored_definitions_are_read_from_a_real_broker_with_a_plain_consumer(bootstrap: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"kplex-test-tables-{uuid.uuid4().hex[:8]}"  # not _kplex_tables: the catalog's own
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, config={"cleanup.policy": "compact"})])[topic].result(60)
    producer = Producer({"bootstrap.servers": bootstrap})
    for name, v in (("by_user", 9), ("gone", 2), ("by_user", 12)):
        producer.produce(topic, key=name.encode(), value=json.dumps(
            {"format": "kplex-table", "version": 1, "name": name, "virtual_partitions": v,
             "physical_partitions": 3, "delivery": "at_least_once"}).encode())
    producer.produce(topic, key=b"gone", value=None)
    assert producer.flush(30) == 0

    tables = read_table_definitions(bootstrap, timeout=10, topic=topic)

    assert sorted(tables) == ["by_user"]
    assert (tables["by_user"].virtual_partitions, tables["by_user"].delivery) == (12, "at_least_once")
    assert tables["by_user"].origin == f"stored definition on {bootstrap}"
    assert read_table_definitions(bootstrap, timeout=10, topic=f"{topic}-absent") == {}


def test_explain_reads_v_and_p_of_a_table_created_through_spark(
        spark, bootstrap: str, fresh_name, tmp_path: Path) -> None:
    table = fresh_name("explained")
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '6', "
              "'kplex.physical_partitions' = '2', 'kplex.delivery' = 'at_least_once')")
    job = tmp_path / "job.sql"
    job.write_text(f"INSERT INTO kplex.{table} SELECT kplex_key(key), kplex_order(offset), value FROM kplex.src;\n")

    text = explain_file(job, bootstrap=bootstrap, timeout=10)

    assert f"partitions  6 virtual on 2 physical (stored definition on {bootstrap})" in text
    assert "physical 1: vp 1, 3, 5" in text
    assert "delivery    at least once" in text
