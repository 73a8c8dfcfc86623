"""Errors as data: python/kplex/error_conditions.json declares every error condition of
kplex; the Python classes, the codes the Python package raises and the jar's copy of the
file are held to it (the JVM's codes: ErrorConditionsTest)."""
from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

import pytest
from pyspark.errors import PySparkException

from kplex import errors

ROOT = Path(__file__).resolve().parents[1]


def test_every_condition_is_raised_as_the_class_it_names():
    assert len(errors.CONDITIONS) > 40
    for name, condition in errors.CONDITIONS.items():
        cls = getattr(errors, condition["python"])
        assert issubclass(cls, errors.KplexError), name
        assert errors._BY_CODE[name.removeprefix("KPLEX_")] is cls  # noqa: SLF001
        raised = errors.translate(RuntimeError(f"Job aborted: [{name}] what went wrong\n\tat ..."))
        assert type(raised) is cls and raised.getCondition() == name and raised.getSqlState() == condition["sqlState"]
        assert str(raised) == f"[{name}] what went wrong"


def test_every_code_the_python_package_raises_is_declared():
    used = set()
    for source in (ROOT / "python" / "kplex").rglob("*.py"):
        text = source.read_text()
        used |= set(re.findall(r"\[KPLEX_([A-Z_]+)\]", text)) | set(re.findall(r'kplex_error\("([A-Z_]+)"', text))
    used.discard("CODE")  # the docstrings' placeholder
    assert used and not {f"KPLEX_{c}" for c in used} - set(errors.CONDITIONS)


def test_an_error_made_by_its_condition_is_the_declared_class_with_its_parameters():
    error = errors.kplex_error("UNKNOWN_TOPIC", "no topic named 'views'.", topic="views")
    assert type(error) is errors.UnknownTableError and str(error) == "[KPLEX_UNKNOWN_TOPIC] no topic named 'views'."
    assert error.getCondition() == "KPLEX_UNKNOWN_TOPIC" and error.getMessageParameters() == {"topic": "views"}
    with pytest.raises(KeyError):
        errors.kplex_error("NO_SUCH_CONDITION", "x")


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
    """Every kplex error the Python package raises is made by kplex_error(CODE, message,
    **parameters): a condition, its parameters, its class; none constructed bare."""
    classes = {name for name, value in vars(errors).items()
               if isinstance(value, type) and issubclass(value, errors.KplexError)}
    bare = []
    for source in (ROOT / "python" / "kplex").rglob("*.py"):
        if source == ROOT / "python" / "kplex" / "errors.py":
            continue
        for number, line in enumerate(source.read_text().splitlines(), 1):
            if re.search(r"\b(" + "|".join(sorted(classes)) + r")\(", line) and not re.search(
                    r"isinstance|except|issubclass", line):
                bare.append(f"{source.relative_to(ROOT)}:{number}: {line.strip()}")
    assert bare == []


def test_an_expression_kplex_cannot_evaluate_outside_spark_names_its_property():
    from kplex.expressions import compile_key, compile_order

    with pytest.raises(errors.ExpressionError) as order:
        compile_order("CAST(value AS STRING)")
    assert order.value.getCondition() == "KPLEX_BAD_EXPRESSION"
    assert order.value.getMessageParameters() == {"property": "kplex.order"}
    with pytest.raises(errors.ExpressionError) as key:
        compile_key("nosuchcolumn")
    assert key.value.getMessageParameters() == {"property": "kplex.key"} and "nosuchcolumn" in str(key.value)
