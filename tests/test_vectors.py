"""The rules that the Java plugin and this Python package both implement, pinned by the
shared vectors in tests/vectors/ (the JUnit tests in jvm/src/test read the same files).
Key and order expressions are checked against Spark itself, on the same record."""
from __future__ import annotations

import datetime as dt
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from kplex.expressions import SourceRecord, compile_key, compile_order, get_json_object
from kplex.placement import (
    ORDER_HEADER,
    SOURCE_OFFSET_HEADER,
    SOURCE_PARTITION_HEADER,
    SOURCE_TOPIC_HEADER,
    VP_HEADER,
    canonical_int_key,
    canonical_key,
    murmur2,
    physical_partition,
    virtual_partition,
)
from kplex.reader.merge import EventTimeMerge, Pending
from kplex.reader.nulls import null_verdict
from kplex.settings import validate
from kplex.status import CONTROL_PLANE_PARTITIONS, control_plane_partition

VECTORS = Path(__file__).parent / "vectors"


def load(name: str) -> dict[str, Any]:
    return json.loads((VECTORS / name).read_text(encoding="utf-8"))


def key_bytes(case: dict[str, Any], prefix: str = "key") -> bytes | None:
    if f"{prefix}_utf8" in case:
        return case[f"{prefix}_utf8"].encode("utf-8")
    if f"{prefix}_hex" in case:
        return bytes.fromhex(case[f"{prefix}_hex"])
    text = case[f"{prefix}_latin1"]
    return None if text is None else text.encode("latin-1")


PLACEMENT = load("placement.json")


@pytest.mark.parametrize("case", PLACEMENT["murmur2"], ids=lambda c: str(c))
def test_murmur2_is_kafkas(case: dict[str, Any]) -> None:
    assert murmur2(key_bytes(case)) == case["murmur2"]


@pytest.mark.parametrize("case", PLACEMENT["placement"], ids=lambda c: str(c))
def test_a_key_lands_in_the_vectors_virtual_and_physical_partition(case: dict[str, Any]) -> None:
    vp = virtual_partition(key_bytes(case), case["V"])
    assert (vp, physical_partition(vp, case["P"])) == (case["vp"], case["physical"])


CONTROL_PLANE = load("control_plane.json")


@pytest.mark.parametrize("case", CONTROL_PLANE["cases"], ids=lambda c: f"{c['scope_utf8']}/{c['partitions']}")
def test_a_tables_control_plane_records_live_in_the_vectors_partition(case: dict[str, Any]) -> None:
    assert control_plane_partition(case["scope_utf8"], case["partitions"]) == case["partition"]


def test_a_new_control_plane_has_the_vectors_partition_count() -> None:
    assert CONTROL_PLANE_PARTITIONS == CONTROL_PLANE["new_log_partitions"]


def test_the_header_names_are_the_vectors() -> None:
    assert {"vp": VP_HEADER, "order": ORDER_HEADER, "source_topic": SOURCE_TOPIC_HEADER,
            "source_partition": SOURCE_PARTITION_HEADER, "source_offset": SOURCE_OFFSET_HEADER,
            } == load("headers.json")["headers"]


def _python_value(kind: str, value: Any) -> Any:
    """A vector's value as a Python user would hold it."""
    if value is None:
        return None
    if kind.startswith("decimal("):
        return Decimal(value)
    if kind == "date":
        return dt.date.fromisoformat(value)
    if kind == "timestamp":
        return dt.datetime.fromisoformat(value)
    return value


def _python_key(case: dict[str, Any]) -> bytes:
    kind, value = case["type"], case["value"]
    if kind == "int":
        return canonical_int_key(value)
    if kind == "binary":
        return canonical_key(bytes.fromhex(value))
    if kind == "struct":
        return canonical_key({name: _python_value(t, v) for name, t, v in value})
    if kind in ("smallint", "tinyint"):
        return str(value).encode()  # as canonical_key's doc says for these columns
    if kind.startswith("decimal(") or kind in ("date", "timestamp"):
        return canonical_key(_python_value(kind, value))
    if kind.startswith("map<"):
        return canonical_key(dict(value))
    return canonical_key(value)


@pytest.mark.parametrize("case", load("key_bytes.json")["cases"], ids=lambda c: f"{c['type']}:{c['value']}")
def test_canonical_key_bytes_are_the_vectors(case: dict[str, Any]) -> None:
    expected = bytes.fromhex(case["bytes_hex"]) if "bytes_hex" in case else case["json"].encode("utf-8")
    assert _python_key(case) == expected


def _merge(case: dict[str, Any], schedule: list[int]) -> tuple[list[list[int]], list[list[int]]]:
    partitions = [p["records"] for p in case["partitions"]]
    merge: EventTimeMerge[list[int]] = EventTimeMerge(len(partitions), case["max_delay_ms"])
    for p, records in enumerate(partitions):
        if not records:
            merge.end(p)
    taken = [0] * len(partitions)
    released: list[list[int]] = []
    late: list[list[int]] = []
    for p in schedule:
        record = partitions[p][taken[p]]
        taken[p] += 1
        where = [p, record["offset"]]
        if merge.is_late(p, record["order"]):
            late.append(where)
        else:
            merge.accept(p, record["order"])
            merge.add(Pending(record["order"], key_bytes(record), key_bytes(record, "value"), p, record["offset"]), where)
        if taken[p] == len(partitions[p]):
            merge.end(p)
        while (item := merge.poll()) is not None:
            released.append(item)
    while (item := merge.poll()) is not None:
        released.append(item)
    return released, sorted(late)


def _schedules(case: dict[str, Any]) -> dict[str, list[int]]:
    sizes = [len(p["records"]) for p in case["partitions"]]
    turns = [p for i in range(max(sizes, default=0)) for p, n in enumerate(sizes) if i < n]
    forwards = [p for p, n in enumerate(sizes) for _ in range(n)]
    backwards = [p for p, n in reversed(list(enumerate(sizes))) for _ in range(n)]
    return {"round robin": turns, "first partition first": forwards, "last partition first": backwards}


@pytest.mark.parametrize("case", load("null_policy.json")["cases"], ids=lambda c: json.dumps(c))
def test_a_null_key_or_order_is_kept_dropped_or_refused_as_the_vectors_say(case: dict[str, Any]) -> None:
    assert null_verdict(key_is_null=case["key"] is None, order_is_null=case["order"] is None,
                        null_key=case["null_key"], null_order=case["null_order"]) == case["row"]


@pytest.mark.parametrize("case", load("event_time_merge.json")["cases"], ids=lambda c: c["name"])
def test_the_event_time_merge_releases_the_vectors_sequence_however_polls_interleave(case: dict[str, Any]) -> None:
    for how, schedule in _schedules(case).items():
        assert _merge(case, schedule) == (case["released"], case["late"]), how


POINTERS = load("json_pointer.json")


@pytest.mark.parametrize("case", POINTERS["parse"], ids=lambda c: c["pointer"] or "(empty)")
def test_a_json_pointer_splits_into_the_vectors_tokens_or_is_refused(case: dict[str, Any]) -> None:
    from kplex.jsonpointer import PointerError, segments

    if case.get("error"):
        with pytest.raises(PointerError, match="JSON pointer"):
            segments(case["pointer"])
    else:
        assert segments(case["pointer"]) == case["tokens"]


@pytest.mark.parametrize("case", [c for c in POINTERS["extract"] if c.get("get_json_object_too")],
                         ids=lambda c: f"{c['pointer']} of {c['json']}")
def test_a_pointer_evaluated_outside_spark_gives_kplex_jsons_value(case: dict[str, Any]) -> None:
    from kplex.jsonpointer import segments

    # As kplex.jsonpointer.json_path reads a token: digits without a leading zero index an array.
    steps = [int(s) if re.fullmatch(r"0|[1-9][0-9]*", s) else s for s in segments(case["pointer"])]
    assert get_json_object(case["json"], steps) == case["value"]


@pytest.mark.parametrize("case", load("table_properties.json")["cases"], ids=lambda c: json.dumps(c["properties"]))
def test_sql_check_accepts_exactly_the_properties_the_catalog_accepts(case: dict[str, Any]) -> None:
    problems = validate(case["properties"])
    if case["valid"]:
        assert problems == []
    else:
        assert problems and any(case["culprit"] in p for p in problems), problems


DEFINITIONS = load("table_definition.json")


@pytest.mark.parametrize("case", DEFINITIONS["read"], ids=lambda c: c["record"]["name"])
def test_a_stored_table_definition_reads_as_the_vectors_table(case: dict[str, Any]) -> None:
    from kplex.definitions import DefinitionError, parse_definition

    record = json.dumps(case["record"]).encode("utf-8")
    if "error" in case:
        with pytest.raises(DefinitionError, match=case["error"]):
            parse_definition(record)
        return
    table = parse_definition(record)
    expected = case["table"]
    assert (table.name, table.topic, table.virtual_partitions, table.physical_partitions, table.source) == (
        expected["name"], expected["topic"], expected["virtual_partitions"], expected["physical_partitions"],
        expected["source"])


@pytest.mark.parametrize("case", DEFINITIONS["written"], ids=lambda c: c["name"])
def test_the_record_the_catalog_writes_reads_back_in_python(case: dict[str, Any]) -> None:
    from kplex.definitions import parse_definition

    table = parse_definition(json.dumps(dict(case["record"], created_ms=1)).encode("utf-8"))
    record = case["record"]
    assert (table.name, table.topic, table.virtual_partitions, table.physical_partitions, table.source) == (
        record["name"], record["topic"], record["virtual_partitions"], record["physical_partitions"], None)


EXPRESSIONS = load("expressions.json")


def _record() -> SourceRecord:
    r = EXPRESSIONS["record"]
    return SourceRecord(key=r["key_utf8"].encode(), value=json.dumps(r["value_json"]).encode(), topic=r["topic"],
                        partition=r["partition"], offset=r["offset"], timestamp=r["timestamp_ms"])


@pytest.fixture(scope="module")
def record_df(spark):
    from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

    r = _record()
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType()),
                         StructField("topic", StringType()), StructField("partition", IntegerType()),
                         StructField("offset", LongType()), StructField("timestamp", TimestampType())])
    when = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(milliseconds=r.timestamp)
    return spark.createDataFrame([(r.key, r.value, r.topic, r.partition, r.offset, when)], schema)


def _expected_key(case: dict[str, Any]) -> bytes | None:
    if case.get("null"):
        return None
    return case["utf8"].encode("utf-8") if "utf8" in case else bytes.fromhex(case["hex"])


@pytest.mark.parametrize("case", EXPRESSIONS["key"], ids=lambda c: c["expression"])
def test_a_key_expression_gives_the_same_bytes_in_spark_and_outside(record_df, case: dict[str, Any]) -> None:
    in_spark = record_df.selectExpr(f"kplex_key({case['expression']}) AS k").collect()[0].k
    assert (None if in_spark is None else bytes(in_spark)) == _expected_key(case)
    assert compile_key(case["expression"])(_record()) == _expected_key(case)


@pytest.mark.parametrize("case", EXPRESSIONS["order"], ids=lambda c: c["expression"])
def test_an_order_expression_gives_the_same_value_in_spark_and_outside(record_df, case: dict[str, Any]) -> None:
    from kplex.errors import ExpressionError

    ordered = record_df.selectExpr(f"kplex_order({case['expression']}) AS o")
    if ordered.schema["o"].dataType.typeName() == "timestamp":
        ordered = ordered.selectExpr("unix_millis(o) AS o")
    if case.get("error"):
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):  # Spark's own refusal of the cast
            ordered.collect()
        with pytest.raises(ExpressionError):
            compile_order(case["expression"])(_record())
        return
    assert ordered.collect()[0].o == case["value"]
    assert compile_order(case["expression"])(_record()) == case["value"]


def _document_id(case: dict[str, Any]) -> str:
    return case.get("expression", case.get("path", "")) + ":" + case.get("value", case.get("value_hex", ""))


@pytest.mark.parametrize("case", EXPRESSIONS["documents"], ids=_document_id)
def test_a_json_document_is_read_as_spark_reads_it(spark, case: dict[str, Any]) -> None:
    """get_json_object of a value as Spark's JSON reader takes it (raw control characters in
    strings, the first of equal member names, what follows the document ignored, single-quoted
    strings, bytes not UTF-8 as U+FFFD, no NaN, an object or array printed as Jackson copies
    it), and the string functions and casts on such values, inside Spark and in the Python
    subset alike."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    from kplex.errors import ExpressionError

    value = bytes.fromhex(case["value_hex"]) if "value_hex" in case else case["value"].encode("utf-8")
    expression = case.get("expression", f"get_json_object(CAST(value AS STRING), '{case.get('path')}')")
    df = spark.createDataFrame([(value,)], StructType([StructField("value", BinaryType())]))
    record = SourceRecord(key=None, value=value, topic="t", partition=0, offset=0, timestamp=0)
    if case.get("error"):
        with pytest.raises(Exception, match="CAST_INVALID_INPUT"):  # Spark's own refusal of the cast
            df.selectExpr(f"{expression} AS v").collect()
        with pytest.raises(ExpressionError):
            compile_order(expression)(record)
        return
    assert df.selectExpr(f"{expression} AS v").collect()[0].v == case["result"]
    if isinstance(case["result"], int):
        assert compile_order(expression)(record) == case["result"]
    else:
        expected = None if case["result"] is None else case["result"].encode("utf-8")
        assert compile_key(expression)(record) == expected
