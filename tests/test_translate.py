"""``kplex translate``: data-driven job files in tests/sql_cases/translate
(among them the original kplex examples), JSON pointers, and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
from sql_cases import Case, cases

from kplex.cli import main
from kplex.jsonpointer import PointerError, json_path
from kplex.sqltools.check import check_text
from kplex.sqltools.errors import UntranslatableJob
from kplex.sqltools.translate import default_physical_partitions, translate_file

JOBS = cases("translate", ".toml", ".json")


def translated(case: Case) -> str:
    physical = case.options().get("physical_partitions") if case.input.suffix == ".toml" else None
    try:
        return translate_file(case.input, int(physical) if physical else None)
    except UntranslatableJob as error:
        return f"error: {error}"


@pytest.mark.parametrize("case", JOBS)
def test_translate_prints_what_the_case_expects(case: Case) -> None:
    case.assert_output(translated(case))


@pytest.mark.parametrize("case", [job for job in JOBS if not translated(job.values[0]).startswith("error: ")])
def test_translated_sql_checks_clean_so_kplex_sql_run_takes_it(case: Case) -> None:
    result = check_text(translated(case), case.input.name)
    assert result.diagnostics == [], result.format()


def test_an_untranslatable_job_names_every_culprit_field() -> None:
    with pytest.raises(UntranslatableJob) as failure:
        translate_file(Path(__file__).parent / "sql_cases" / "translate" / "unknown_fields.toml")
    problems = failure.value.problems
    for field in ("threads", "kafka.group_id", "topics.events.retention", "derive.by_user.filter",
                  "derive.by_user.key", "derive.by_user.order", "derive.by_user.output"):
        assert any(p.startswith(field) for p in problems), (field, problems)


# pointer            -> JSON path           (why)
# ""                 -> $                   the whole document
# /userid            -> $.userid            plain name
# /user/ids/0        -> $.user.ids[0]       digits: array index
# /01                -> $['01']             leading zero: not an index (RFC 6901), a name
# /meta/event.time   -> $.meta['event.time'] dot kept literal by brackets
# /a~1b/~0c          -> $['a/b']['~c']      ~1 is /, ~0 is ~ (in that order)
# /~01               -> $['~1']             ~01 is ~ then 1, not /
@pytest.mark.parametrize("pointer, path", [
    ("", "$"),
    ("/userid", "$.userid"),
    ("/user/ids/0", "$.user.ids[0]"),
    ("/01", "$['01']"),
    ("/meta/event.time", "$.meta['event.time']"),
    ("/a~1b/~0c", "$['a/b']['~c']"),
    ("/~01", "$['~1']"),
])
def test_a_json_pointer_becomes_the_matching_spark_json_path(pointer: str, path: str) -> None:
    assert json_path(pointer) == path


@pytest.mark.parametrize("pointer, reason", [
    ("userid", "must be empty or start with '/'"),
    ("/a~2", "'~' must be followed by 0 or 1"),
    ("/items/-", "past the end of an array"),
    ("/", "an empty member name"),
    ("/it's", "(it contains ')"),
])
def test_a_pointer_spark_cannot_express_is_an_error_saying_why(pointer: str, reason: str) -> None:
    with pytest.raises(PointerError, match=None) as failure:
        json_path(pointer)
    assert reason in str(failure.value)


# V, workers -> P: the largest divisor of V not above workers
@pytest.mark.parametrize("v, workers, p", [(9, 3, 3), (9, 4, 3), (9, None, 1), (8, 6, 4), (7, 6, 1), (4, 16, 4)])
def test_physical_partitions_default_to_the_largest_divisor_of_v_not_above_workers(v: int, workers: int | None, p: int) -> None:
    assert default_physical_partitions(v, workers) == p


def test_the_cli_prints_or_writes_the_sql_and_exits_1_on_an_untranslatable_job(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = Path(__file__).parent / "sql_cases" / "translate"
    assert main(["translate", str(folder / "repartition_pageviews.json")]) == 0
    printed = capsys.readouterr().out
    assert "INSERT INTO kplex.pageviews_by_user" in printed
    out = tmp_path / "job.sql"
    assert main(["translate", str(folder / "repartition_pageviews.json"), "-o", str(out)]) == 0
    assert out.read_text() == printed
    assert main(["translate", str(folder / "unknown_fields.toml")]) == 1
    assert "cannot translate unknown_fields.toml: threads (unknown field)" in capsys.readouterr().err


# job file     content                     -> exit, error                   (why)
# x.json       a JSON array                -> 1, the file and what it holds not a job: no table at its top
# x.json       a JSON number               -> 1, likewise
# x.json       a byte that is not UTF-8    -> 2, the file, byte and offset  cannot be read, as kplex sql run says
# x.toml       UTF-8 BOM, then a bad byte  -> 2, the offset in the file
@pytest.mark.parametrize("name, content, code, said", [
    ("x.json", b'[{"derive": {}}]', 1, "cannot translate {path}: not a valid JSON file: its top level is a JSON array,"
                                       " not an object"),
    ("x.json", b"3", 1, "cannot translate {path}: not a valid JSON file: its top level is a JSON number, not an object"),
    ("x.json", b'{"workers": "\xff"}', 2, "{path}: not UTF-8 (byte 0xff at offset 13)"),
    ("x.toml", b'\xef\xbb\xbfworkers = "\xe9"', 2, "{path}: not UTF-8 (byte 0xe9 at offset 14)"),
])
def test_a_job_file_that_is_no_job_or_not_utf8_is_an_error_naming_it_not_a_traceback(
        name: str, content: bytes, code: int, said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    assert main(["translate", str(path)]) == code
    assert capsys.readouterr().err == f"error: {said.format(path=path)}\n"
