"""kplex_json(json, pointer): JSON pointers (RFC 6901) as the original kplex jobs use them.

Checked against Python's own json module (a different parser) on documents with
escapes, non-ASCII text, nesting, arrays, numbers as written, and malformed input;
then end to end: a write keyed with kplex_json places every record exactly where the
same write keyed with get_json_object does (read back with a plain consumer).
"""
from __future__ import annotations

import json

import pytest

from kplex import errors
from kplex.errors import translated
from kplex.testing import datagen, verify

DOCUMENTS = [
    '{"userid":"User_5","viewtime":1700000000123,"pageid":"Page_1"}',
    '  { "viewtime" : -12.5e3 , "userid" : "Us\\u00e9r \\"q\\" \\\\ \\/ \\n" }  ',
    '{"userid":"Üser_ü","viewtime":0}',
    '{"a":{"b":[10,{"c":"deep"},[1,2]],"b2":true},"x/y":"slash","m~n":"tilde","":"empty name"}',
    '{"a":{"b":[ 10 , { "c" : "deep" } ]},"list":[{"k":1},{"k":2}],"flag":false,"nothing":null}',
    '{"arr":["zero","one"],"obj":{"0":"member zero","1":{"x":[true, false, null]}}}',
    '{"dup":1,"dup":2}',
    '{"esc\\u0061ped":"found by its unescaped name"}',
    '["top", {"level": "array"}]',
    '"just a string"',
    '{"userid":"User_1","viewtime":12',      # truncated after the values
    '{"userid" "User_1"}',                   # no colon
    '{"userid":"User_1", nonsense}',
    'not json at all',
    '',
]

POINTERS = ["", "/userid", "/viewtime", "/pageid", "/missing", "/a", "/a/b", "/a/b/0", "/a/b/1/c",
            "/a/b/2", "/a/b/9", "/a/b/-", "/a/b2", "/x~1y", "/m~0n", "/", "/list/1/k", "/flag",
            "/nothing", "/arr/1", "/arr/01", "/obj/0", "/obj/1/x", "/obj/1/x/2", "/dup", "/escaped",
            "/1/level", "/0", "/userid/0"]


def oracle(document: str, pointer: str) -> str | None:
    """The value at pointer by Python's json module; numbers kept as written."""
    try:
        node = json.loads(document, parse_float=str, parse_int=str)
    except ValueError:
        return "MALFORMED"
    tokens = [] if pointer == "" else [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
    for token in tokens:
        if isinstance(node, dict):
            if token not in node:
                return None
            node = node[token]
        elif isinstance(node, list):
            if not token.isdigit() or (len(token) > 1 and token[0] == "0") or int(token) >= len(node):
                return None
            node = node[int(token)]
        else:
            return None
    if node is None:
        return None
    if isinstance(node, bool):
        return "true" if node else "false"
    if isinstance(node, (dict, list)):
        return json.dumps(node, separators=(",", ":"), ensure_ascii=False)
    return node


def normalized(text: str | None) -> str | None:
    """Containers compared as parsed JSON (kplex keeps the document's own escapes)."""
    if text is not None and text[:1] in "{[":
        return json.dumps(json.loads(text, parse_float=str, parse_int=str), separators=(",", ":"),
                          ensure_ascii=False)
    return text


@pytest.fixture(scope="module")
def extracted(spark):
    rows = [(d, i, p) for i, d in enumerate(DOCUMENTS) for p in POINTERS]
    df = spark.createDataFrame(rows, "doc STRING, i INT, pointer STRING")
    df.createOrReplaceTempView("kplex_json_cases")
    out = spark.sql("SELECT i, pointer, kplex_json(doc, pointer) AS s, kplex_json(CAST(doc AS BINARY), pointer) AS b"
                    " FROM kplex_json_cases").collect()
    return {(r.i, r.pointer): (r.s, r.b) for r in out}


@pytest.mark.parametrize("i", range(len(DOCUMENTS)))
def test_kplex_json_agrees_with_pythons_json_module(extracted, i):
    document = DOCUMENTS[i]
    for pointer in POINTERS:
        from_string, from_binary = extracted[(i, pointer)]
        assert from_string == from_binary, (document, pointer)
        want = oracle(document, pointer)
        if want == "MALFORMED":
            continue  # checked below: a value before the damage is still found
        if pointer == "/dup" and "dup" in document:
            assert from_string == "1"  # the first of duplicate members, as the scan meets it
            continue
        assert normalized(from_string) == want, (document, pointer)


def test_kplex_json_on_damaged_documents_finds_what_precedes_the_damage_and_never_fails(extracted):
    truncated = DOCUMENTS.index('{"userid":"User_1","viewtime":12')
    assert extracted[(truncated, "/userid")][0] == "User_1"
    assert extracted[(truncated, "/viewtime")][0] == "12"
    assert extracted[(truncated, "/missing")][0] is None
    for damaged in ('{"userid" "User_1"}', "not json at all", ""):
        assert extracted[(DOCUMENTS.index(damaged), "/userid")][0] is None


def test_kplex_json_null_in_null_out(spark):
    row = spark.sql("SELECT kplex_json(CAST(NULL AS STRING), '/a') AS a, kplex_json('{\"a\":1}', NULL) AS b").first()
    assert row.a is None and row.b is None


@pytest.mark.parametrize("pointer,problem", [("userid", "starts with '/'"), ("$.userid", "JSON path"),
                                             ("/a~2", "'~' must be followed by 0 or 1")])
def test_a_malformed_literal_pointer_fails_the_query_naming_it(spark, pointer, problem):
    with pytest.raises(errors.ExpressionError) as raised, translated():
        spark.sql(f"SELECT kplex_json(CAST(id AS STRING), '{pointer}') FROM range(3)").collect()
    assert f"'{pointer}'" in str(raised.value) and problem in str(raised.value)


def test_a_json_argument_of_a_wrong_type_is_named(spark):
    with pytest.raises(Exception) as raised:
        spark.sql("SELECT kplex_json(id, '/a') FROM range(3)").collect()
    assert "kplex_json" in str(raised.value) and "BIGINT" in str(raised.value)


def test_a_write_keyed_with_kplex_json_places_records_as_get_json_object_does(spark, bootstrap, fresh_name):
    source = fresh_name("json_src")
    datagen.generate_pageviews(bootstrap, source, 3_000, partitions=3, users=40, seed=3,
                               out_of_order_ms=2_000, non_ascii=True)
    by_pointer, by_path = fresh_name("by_pointer"), fresh_name("by_path")
    for table in (by_pointer, by_path):
        spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '9',"
                  " 'kplex.physical_partitions' = '3')")
    spark.sql(f"""INSERT INTO kplex.{by_pointer}
        SELECT kplex_key(kplex_json(value, '/userid')), kplex_order(CAST(kplex_json(value, '/viewtime') AS BIGINT)), value
        FROM kplex.{source}""")
    spark.sql(f"""INSERT INTO kplex.{by_path}
        SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')),
               kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)), value
        FROM kplex.{source}""")
    report = verify.check_derived_topic(bootstrap, source, by_pointer, 9, 3)
    assert report.ok, report.summary()
    placed = [[(r.partition, r.offset, r.key, r.value) for r in verify.read_topic(bootstrap, t)]
              for t in (by_pointer, by_path)]
    assert placed[0] == placed[1] and len(placed[0]) == 3_000


@pytest.mark.parametrize("order,compiled,expected", [
    ("CAST(kplex_json(value, '/viewtime') AS BIGINT)", True, 1700000000123),
    ("timestamp_millis(CAST(kplex_json(value, '/viewtime') AS BIGINT))", True, 1700000000123),
    ("CAST(kplex_json(value, '/n') AS INT)", False, 42),   # widened to BIGINT by the bound function
])
def test_kplex_order_of_a_bigint_or_timestamp_leaves_its_argument_to_generated_code(
        spark, order, compiled, expected):
    # A bound V2 function is evaluated without generated code, and so is everything under it
    # (here a CAST of a JSON field, and kplex_json called by reflection): kplex_order of a
    # BIGINT or TIMESTAMP is the argument itself, tagged, so the whole projection compiles.
    df = spark.sql(f"SELECT kplex_order({order}) AS o FROM (SELECT CAST(concat('{{\"viewtime\": ',"
                   " 1700000000123 + id, ', \"n\": ', 42 + id, '}}') AS BINARY) AS value FROM range(1))")
    plan = df._jdf.queryExecution().executedPlan().toString()
    assert ("applyfunctionexpression" not in plan) == compiled, plan
    assert df.schema["o"].metadata.get("kplex.function") == "kplex_order"
    got = df.selectExpr("CAST(unix_millis(o) AS BIGINT) AS ms" if "timestamp" in order else "o AS ms").first()["ms"]
    assert got == expected
