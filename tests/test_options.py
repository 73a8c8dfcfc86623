"""Settings as data: python/kplex/options.json declares every setting of kplex (type, range,
default, where it may be set) for the JVM plugin (spec/OptionSpecs, which OptionSpecsTest
keeps KplexOptions to) and for this package (kplex.settings). What each side
accepts as a table property is pinned by tests/vectors/table_properties.json
(test_vectors.py, TablePropertiesTest); here, that the Python side reads the file whole."""
from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from kplex import settings
from kplex.settings import OPTIONS, PROPERTIES, RELEASE_AT_END, session_key

ROOT = Path(__file__).parent.parent
SPEC: list[dict[str, Any]] = json.loads((ROOT / "python" / "kplex" / "options.json").read_text())["options"]


def test_the_table_properties_are_the_settings_a_table_may_carry_in_the_files_order():
    assert list(PROPERTIES) == [o["name"] for o in SPEC if "table" in o["set_as"]]


@pytest.mark.parametrize("entry", SPEC, ids=lambda o: o["name"])
def test_each_setting_reads_as_the_file_declares_it(entry: dict[str, Any]) -> None:
    spec = OPTIONS[entry["name"]]
    assert (spec.kind, spec.minimum, spec.maximum, spec.also, spec.choices, spec.default, spec.required) == (
        entry["type"], entry.get("min"), entry.get("max"), entry.get("also"), tuple(entry.get("choices", ())),
        entry.get("default"), entry.get("required", False))
    assert spec.bits == (64 if entry["type"] == "long" else 32)
    assert set(spec.set_as) <= {"table", "write", "read", "catalog", "session", "server"}


def test_the_session_keys_and_read_time_defaults_read_as_declared() -> None:
    for entry in SPEC:
        spec = OPTIONS[entry["name"]]
        assert (spec.session_key, spec.read_time_default) == (entry.get("session_key"), entry.get("read_time_default"))
    assert session_key(RELEASE_AT_END) == "kplex.stream.releaseAtEnd"


def test_the_starting_offsets_that_resume_from_the_table_are_the_declared_special_value() -> None:
    """(The JVM's ReadBounds.FROM_TABLE reads the same entry: OptionSpecsTest.)"""
    declared = next(e for e in SPEC if e["name"] == settings.STARTING_OFFSETS)["special_values"]
    assert settings.RESUME_FROM_TABLE == declared["resume_from_table"] == "table"


def test_every_setting_name_the_package_reads_is_declared() -> None:
    names = {k: v for k, v in vars(settings).items() if k.isupper() and isinstance(v, str) and k != "RESUME_FROM_TABLE"}
    assert names and {k: v for k, v in names.items() if v not in OPTIONS} == {}


def test_a_setting_s_default_is_a_value_it_accepts():
    for spec in OPTIONS.values():
        if spec.default is not None:
            assert spec.problem(spec.default) is None, spec.name


def test_the_readers_late_policies_are_the_settings_choices():
    from kplex.reader import LATE_POLICIES

    assert LATE_POLICIES == OPTIONS["kplex.late_policy"].choices


def test_the_jar_carries_the_same_file():
    jar = ROOT / "python" / "kplex" / "jars" / "kplex-spark.jar"
    with zipfile.ZipFile(jar) as z:
        inside = json.loads(z.read("io/kplex/spark/spec/options.json"))
    assert inside == json.loads((ROOT / "python" / "kplex" / "options.json").read_text())
