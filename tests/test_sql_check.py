"""``kplex sql check``: data-driven cases in tests/sql_cases/check, plus the
runnable jobs of sql/, which must check clean."""

from __future__ import annotations

from pathlib import Path

import pytest
from sql_cases import Case, cases

from kplex.cli import main
from kplex.sqltools.check import check_file, check_text, require_clean
from kplex.sqltools.errors import CheckFailed

REPO = Path(__file__).resolve().parent.parent


def checked(case: Case) -> str:
    options = case.options()
    result = check_file(case.input, case.variables(), options.get("dialect"))
    return result.format(case.input.name) if result.diagnostics else "ok"


@pytest.mark.parametrize("case", cases("check", ".sql"))
def test_check_reports_what_the_case_expects(case: Case) -> None:
    case.assert_output(checked(case))


@pytest.mark.parametrize("job", sorted((REPO / "sql").glob("*.sql")), ids=lambda p: p.name)
def test_every_job_in_sql_checks_clean(job: Path) -> None:
    result = check_file(job)
    assert result.ok, result.format()


def test_a_misspelt_function_comes_with_the_name_it_resembles() -> None:
    result = check_text("SELECT kplex_ordr(timestamp) FROM kplex.s")
    assert [d.message for d in result.diagnostics] == ["unknown function kplex_ordr; did you mean kplex_order?"]


def test_a_stream_relation_checks_with_or_without_parentheses_and_later_errors_keep_their_place() -> None:
    insert = "INSERT INTO kplex.t SELECT kplex_key(k), kplex_order(o), value FROM STREAM{} a JOIN STREAM{} b ON a.k = b.k"
    for first, second in (("(kplex.s)", "(`kplex`.`u`)"), (" kplex.s", " `kplex`.`u`"), ("\n  kplex.s", "\tkplex.u")):
        result = check_text(insert.format(first, second))
        assert result.ok and not result.diagnostics, (first, result.format())
    # An error after a stream relation written without parentheses: where it is in the file.
    result = check_text("SELECT kplex_ordr(o) FROM STREAM kplex.s WHERE kplex_ordr(o) > 0")
    assert [(d.line, d.column) for d in result.diagnostics] == [(1, 8), (1, 48)], result.format()


def test_a_file_with_errors_raises_check_failed_naming_each_finding() -> None:
    with pytest.raises(CheckFailed) as failure:
        require_clean(check_text("INSERT INTO kplex.t SELECT kplex_key(k), value FROM kplex.s;", path="job.sql"))
    assert "job.sql:1:28: error: statement 1: INSERT INTO kplex.t has no order column" in str(failure.value)
    assert len(failure.value.diagnostics) == 1


def test_warnings_alone_leave_the_file_ok() -> None:
    result = check_text("INSERT INTO kplex.t SELECT * FROM kplex.s")
    assert result.ok and [d.severity for d in result.diagnostics] == ["warning"]


def test_the_cli_exits_1_on_errors_and_0_when_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad, good = tmp_path / "bad.sql", tmp_path / "good.sql"
    bad.write_text("SELECT kplex_ordr(timestamp) FROM kplex.s;\n")
    good.write_text("SELECT kplex_order(timestamp) FROM kplex.s;\n")
    assert main(["sql", "check", str(bad)]) == 1
    assert "did you mean kplex_order?" in capsys.readouterr().out
    assert main(["sql", "check", str(good)]) == 0
    assert "ok, 1 statement(s)" in capsys.readouterr().out


def test_the_cli_takes_variables_and_names_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "job.sql"
    job.write_text("SELECT value FROM kplex.${t};\n")
    assert main(["sql", "check", str(job)]) == 1
    assert "undefined variable ${t}: pass --var t=VALUE" in capsys.readouterr().out
    assert main(["sql", "check", str(job), "--var", "t=pageviews"]) == 0
    assert main(["sql", "check", str(tmp_path / "none.sql")]) == 2
    assert "none.sql" in capsys.readouterr().err
    assert main(["sql", "check", str(job), "--dialect", "nosuch"]) == 2
    assert "unknown SQL dialect 'nosuch'" in capsys.readouterr().err


def test_a_variables_value_never_ends_a_statement_nor_opens_a_quote_or_comment(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A scheduler passes values with --var: one that would end its statement early (a ';'
    outside a string, a quote that closes the string, a comment that hides the rest) is refused
    naming the variable, by check and by run (nothing is run), whatever the statement count;
    a ';' or a doubled quote inside the string it goes into is the value's own."""
    job = tmp_path / "daily.sql"
    job.write_text("SELECT * FROM kplex.t WHERE d = '${day}';\nSELECT '${note}';\n")
    job.write_text("SELECT * FROM kplex.t WHERE d = '${day}';\nSELECT '${note}';\n-- ${note}\n")
    for day in ("2026-01-01'; DROP TABLE kplex.t; --", "x' --", "x'"):
        assert main(["sql", "check", str(job), "--var", f"day={day}", "--var", "note=n"]) == 1, day
        assert "the value of --var day holds a ';', a quote, a comment or a line break" in capsys.readouterr().out, day
        assert main(["sql", "run", "--dry-run", str(job), "--var", f"day={day}", "--var", "note=n"]) == 1, day
        assert "nothing was run" in capsys.readouterr().err, day
    # A line break in a value that ends up in a comment would start a statement of its own.
    assert main(["sql", "run", "--dry-run", str(job), "--var", "day=d", "--var", "note=n\nDROP TABLE kplex.t"]) == 1
    assert "the value of --var note holds" in capsys.readouterr().err
    assert main(["sql", "run", "--dry-run", str(job), "--var", "day=2026;01", "--var", "note=it''s"]) == 0
    assert "WHERE d = '2026;01';\n\nSELECT 'it''s';" in capsys.readouterr().out


def test_a_file_saved_with_a_byte_order_mark_and_crlf_checks_clean_and_keeps_its_bootstrap_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kplex.sqltools.bootstrap import bootstrap_directive
    from kplex.sqltools.script import read_script

    job = tmp_path / "windows.sql"
    job.write_bytes("\ufeff-- kplex.bootstrap = broker:9092\r\nSELECT 1;\r\nSELECT 'a;b';\r\n".encode("utf-8"))
    assert main(["sql", "check", str(job)]) == 0
    script = read_script(job)
    assert len(script.statements) == 2 and bootstrap_directive(script.text) == "broker:9092"
    assert bootstrap_directive("-- kplex.bootstrap = broker:9092\r\nSELECT 1;") == "broker:9092"


def test_a_file_that_is_not_utf8_is_an_error_exit_naming_the_byte(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    job = tmp_path / "latin1.sql"
    job.write_bytes(b"SELECT 1;\n-- caf\xe9\n")
    for command in (["sql", "check"], ["sql", "run", "--dry-run"]):
        assert main([*command, str(job)]) == 2
        assert capsys.readouterr().err.strip() == f"error: {job}: not UTF-8 (byte 0xe9 at offset 16)"
