"""Errors as data: python/kplex/error_conditions.json declares every error condition of
kplex; the Python classes, the codes the Python package raises and the jar's copy of the
file are held to it (the JVM's codes: ErrorConditionsTest)."""
from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path
from typing import Iterator

import pytest
from pyspark.errors import PySparkException

from kplex import errors

ROOT = Path(__file__).resolve().parents[1]


def test_every_condition_is_raised_as_the_class_it_names():
    """(The SQL tools' errors print without their prefix, as a command line shows them.)"""
    from kplex.sqltools.errors import SqlToolError

    assert len(errors.CONDITIONS) > 40
    for name, condition in errors.CONDITIONS.items():
        cls = getattr(errors, condition["python"])
        assert issubclass(cls, errors.KplexError), name
        assert errors._BY_CODE[name.removeprefix("KPLEX_")] is cls  # noqa: SLF001
        raised = errors.translate(RuntimeError(f"Job aborted: [{name}] what went wrong\n\tat ..."))
        assert type(raised) is cls and raised.getCondition() == name and raised.getSqlState() == condition["sqlState"]
        assert raised.getMessage() == f"[{name}] what went wrong"
        assert str(raised) == ("what went wrong" if issubclass(cls, SqlToolError) else f"[{name}] what went wrong")
        for sub in condition.get("subClass", {}):  # Spark's form of a sub-class's prefix reads as well
            raised = errors.translate(RuntimeError(f"Job aborted: [{name}.{sub}] what went wrong\n\tat ..."))
            assert type(raised) is cls and raised.getCondition() == f"{name}.{sub}", (name, sub)
            assert raised.getSqlState() == condition["sqlState"]
            assert raised.getMessage() == f"[{name}.{sub}] what went wrong"


def test_every_condition_has_a_template_or_sub_classes_each_with_one():
    for name, condition in errors.CONDITIONS.items():
        subs = condition.get("subClass", {})
        assert isinstance(condition["message"], list), name
        if not subs:
            assert errors.template(name), name
        else:
            assert errors.template(name) is None, f"{name} has sub-classes: it is raised by one"
            assert all(re.fullmatch(r"[A-Z][A-Z0-9_]*", sub) and errors.template(f"{name}.{sub}") for sub in subs), name


def test_a_template_renders_its_parameters_and_fails_loudly_without_one():
    assert errors.render("BAD_OPTION.VALUE", {"option": "o", "value": None, "expected": "e"}) \
        == "option 'o' = 'null' is invalid: e."
    assert "kplex.<source>" in errors.render("STREAM", {"table": "t"})  # \\< is a literal <
    assert errors.template_parameters(errors.template("TABLE_BUSY")) == ["table", "query"]
    with pytest.raises(KeyError, match="<query>"):
        errors.render("TABLE_BUSY", {"table": "t"})
    for undeclared in ("NO_SUCH", "BAD_OPTION", "BAD_OPTION.NO_SUCH"):
        with pytest.raises(KeyError):
            errors.render(undeclared, {})


def test_the_jvm_and_python_render_a_template_by_the_same_rules():
    """ErrorConditions.java and kplex.errors agree on the rules their docs state: lines joined
    with a space, a sub-class after its condition, <name> a parameter, \\< a literal <."""
    java = (ROOT / "jvm" / "src" / "main" / "java" / "io" / "kplex" / "spark" / "errors" / "ErrorConditions.java")
    text = java.read_text()
    assert 'String.join(" ", out)' in text and '"\\\\\\\\<|<([a-z][a-z0-9_]*)>"' in text
    assert errors._PLACEHOLDER.pattern == r"\\<|<([a-z][a-z0-9_]*)>"  # noqa: SLF001


_RAISED = re.compile(r'kplex_error\(\s*"([A-Z_]+(?:\.[A-Z0-9_]+)?)"')


def test_every_code_the_python_package_raises_is_declared():
    used = set()
    for source in (ROOT / "python" / "kplex").rglob("*.py"):
        text = source.read_text()
        used |= set(re.findall(r"\[KPLEX_([A-Z_]+)\]", text)) | set(_RAISED.findall(text))
    used.discard("CODE")  # the docstrings' placeholder
    assert used and not {f"KPLEX_{c.partition('.')[0]}" for c in used} - set(errors.CONDITIONS)
    assert [c for c in used if "." in c and errors.template(c) is None] == []


def test_an_error_made_by_its_condition_is_the_declared_class_with_its_parameters():
    error = errors.kplex_error("UNKNOWN_TOPIC.ON_BROKER", topic="views", bootstrap="b:9092")
    assert type(error) is errors.UnknownTableError
    assert str(error) == "[KPLEX_UNKNOWN_TOPIC] no topic named 'views' on b:9092."
    assert error.getCondition() == "KPLEX_UNKNOWN_TOPIC.ON_BROKER" and error.getSqlState() == "42P01"
    assert error.getMessageParameters() == {"topic": "views", "bootstrap": "b:9092"}
    assert error.getMessageTemplate() == "no topic named '<topic>' on <bootstrap>."
    with pytest.raises(KeyError):
        errors.kplex_error("NO_SUCH_CONDITION")
    with pytest.raises(KeyError):
        errors.kplex_error("UNKNOWN_TOPIC")  # it has sub-classes: name one
    with pytest.raises(KeyError, match="<bootstrap>"):
        errors.kplex_error("UNKNOWN_TOPIC.ON_BROKER", topic="views")


def test_the_sql_tools_errors_have_conditions_and_print_without_the_prefix():
    from kplex.sqltools import errors as tools

    error = tools.statement_failed("job.sql", 3, 7, "INSERT INTO kplex.t", "boom")
    assert type(error) is tools.StatementFailed and isinstance(error, errors.KplexError)
    assert error.getCondition() == "KPLEX_SQL_STATEMENT_FAILED.LATER" and error.getSqlState() == "40000"
    assert str(error) == ("job.sql:7: statement 3 failed (INSERT INTO kplex.t): boom\n"
                          "stopped at statement 3; statements 1-2 ran and their effects are kept")
    assert (error.number, error.line, error.getMessageParameters()["path"]) == (3, 7, "job.sql")
    for name in tools.__all__:
        cls = getattr(tools, name)
        if isinstance(cls, type) and cls is not tools.SqlToolError:
            assert errors._BY_CODE[next(c for c, d in errors.CONDITIONS.items()  # noqa: SLF001
                                        if d["python"] == name).removeprefix("KPLEX_")] is cls


def test_no_kplex_error_class_shadows_a_kafka_client_name():
    import confluent_kafka

    assert not {name for name in vars(errors) if isinstance(vars(errors)[name], type)
                and issubclass(vars(errors)[name], errors.KplexError)} & set(vars(confluent_kafka))


def test_a_kplex_error_is_a_pyspark_exception_so_an_except_pyspark_exception_catches_it():
    with pytest.raises(PySparkException) as caught:
        raise errors.TableBusyError("[KPLEX_TABLE_BUSY] table t is being written by another query")
    assert caught.value.getCondition() == "KPLEX_TABLE_BUSY" and caught.value.getSqlState() == "40001"
    assert repr(caught.value) == "TableBusyError('[KPLEX_TABLE_BUSY] table t is being written by another query')"


def test_the_jar_carries_the_same_file():
    jar = ROOT / "python" / "kplex" / "jars" / "kplex-spark.jar"
    with zipfile.ZipFile(jar) as z:
        inside = json.loads(z.read("io/kplex/spark/errors/error_conditions.json"))
    assert inside == json.loads((ROOT / "python" / "kplex" / "error_conditions.json").read_text())


def test_the_package_raises_its_errors_by_condition_never_by_constructing_a_class():
    """Every kplex error the Python package raises is made by kplex_error(CONDITION,
    **parameters): a condition, its parameters, its class; none constructed bare (the SQL
    tools' classes included)."""
    from kplex.sqltools import errors as tools

    classes = {name for module in (errors, tools) for name, value in vars(module).items()
               if isinstance(value, type) and issubclass(value, errors.KplexError)}
    assert {"CheckFailed", "StatementFailed", "NoBootstrap", "KplexError"} <= classes
    bare = []
    for source in (ROOT / "python" / "kplex").rglob("*.py"):
        if source in (ROOT / "python" / "kplex" / "errors.py", ROOT / "python" / "kplex" / "sqltools" / "errors.py"):
            continue
        for number, line in enumerate(source.read_text().splitlines(), 1):
            if re.search(r"\b(" + "|".join(sorted(classes)) + r")\(", line) and not re.search(
                    r"isinstance|except|issubclass", line):
                bare.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()}")
    assert bare == []


def test_no_kplex_error_is_built_from_a_hand_written_message():
    """kplex_error takes a condition and parameters only: no call passes a text (a string
    literal or an f-string) as a positional argument after the condition."""
    written = []
    for source in (ROOT / "python" / "kplex").rglob("*.py"):
        text = source.read_text()
        for call in re.finditer(r"kplex_error\(", text):
            args = text[call.end():call.end() + 400]
            if re.match(r'\s*f?"[^"]*"\s*,\s*f?["\']', args):
                written.append(f"{source.relative_to(ROOT)}:{text[:call.start()].count(chr(10)) + 1}")
    assert written == []


def test_an_expression_kplex_cannot_evaluate_outside_spark_names_its_property():
    from kplex.expressions import compile_key, compile_order

    with pytest.raises(errors.ExpressionError) as order:
        compile_order("CAST(value AS STRING)")
    assert order.value.getCondition() == "KPLEX_BAD_EXPRESSION.ORDER_TYPE"
    assert order.value.getMessageParameters() == {"property": "kplex.order", "expression": "CAST(value AS STRING)",
                                                  "type": "STRING"}
    with pytest.raises(errors.ExpressionError) as key:
        compile_key("nosuchcolumn")
    assert key.value.getMessageParameters()["property"] == "kplex.key" and "nosuchcolumn" in str(key.value)
    assert key.value.getMessageParameters() == {"property": "kplex.key", "expression": "nosuchcolumn",
                                                "column": "nosuchcolumn", "columns": key.value.getMessageParameters()["columns"]}


@pytest.mark.parametrize("expression, sub_class, said", [
    ("t.key", "QUALIFIED_COLUMN", "column t.key"),
    ("1.5", "LITERAL", "the literal 1.5"),
    ("coalesce(key, 1)", "COALESCE", "coalesce over ['BINARY', 'INT']"),
    ("lower(1)", "LOWER_UPPER", "lower() of INT"),
    ("abs(1)", "EXPRESSION", "`ABS(1)`"),
    ("concat(timestamp)", "AS_TEXT", "a TIMESTAMP as text"),
    ("CAST(key AS TIMESTAMP)", "CAST", "CAST of BINARY AS TIMESTAMP"),
    ("get_json_object(value, concat('$.', 'a'))", "JSON_PATH", "a JSON path that is not a literal"),
    ("get_json_object(value, '$.a[*]')", "JSON_PATH_STEP", "the JSON path step [*]"),
])
def test_what_kplex_cannot_evaluate_outside_spark_is_a_sub_class_naming_the_part(expression, sub_class, said):
    from kplex.expressions import compile_key

    with pytest.raises(errors.ExpressionError) as e:
        compile_key(expression)
    assert e.value.getCondition() == f"KPLEX_BAD_EXPRESSION.BEYOND_PYTHON_{sub_class}"
    assert f"'kplex.key' = '{expression}': {said} is beyond what kplex evaluates outside Spark" in str(e.value)


def _calls(text: str, pattern: str) -> Iterator[tuple[int, str]]:
    """Each call matching ``pattern`` (up to its open parenthesis) in Java ``text``: its line and its arguments."""
    for call in re.finditer(pattern, text):
        depth, j = 1, call.end()
        while depth and j < len(text):
            if text[j] == '"':
                j += 1
                while text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
            depth += {"(": 1, ")": -1}.get(text[j], 0)
            j += 1
        yield text[:call.start()].count("\n") + 1, text[call.end():j - 1]


#: Call sites that still pass words of their own to an error factory (an expected type, a
#: function's arguments, a metadata record's kind): file -> how many; to be converted, never grown.
COMPOSED_LEFT: dict[str, int] = {}


def test_no_jvm_error_is_given_words_composed_at_its_call_site():
    """A call of Errors (or AccessErrors) outside the errors package passes culprits, never
    text: no string literal with a space among its arguments, but for the sites listed in
    COMPOSED_LEFT (which may only shrink)."""
    main = ROOT / "jvm" / "src" / "main" / "java" / "io" / "kplex" / "spark"
    found: dict[str, int] = {}
    for source in main.rglob("*.java"):
        if source.parent.name == "errors":
            continue
        for _, args in _calls(source.read_text(), r"\b(?:Errors|AccessErrors)\.[a-z]\w*\("):
            if any(" " in literal for literal in re.findall(r'"((?:[^"\\]|\\.)*)"', args)):
                name = str(source.relative_to(main))
                found[name] = found.get(name, 0) + 1
    assert {name: n for name, n in found.items() if n > COMPOSED_LEFT.get(name, 0)} == {}
