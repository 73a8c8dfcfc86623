"""The one loader of the data-driven SQL cases.

Each folder holds inputs and, beside each, ``<input file name>.expected``: what the tool
prints for it.

- ``check/<name>.sql``: the findings of ``kplex sql check`` (``ok`` when none)
- ``explain/<name>.sql``: the text of ``kplex sql explain``; an optional
  ``<name>.stored.jsonl`` holds the ``_kplex_tables`` record values (one JSON
  per line, keyed by their ``name``) that a broker would return
- ``translate/<name>.toml|json``: the SQL of ``kplex translate``, or
  ``error: ...``

A first line ``-- case: dialect=trino var.NAME=VALUE`` (``# case: ...`` in
TOML, ``physical_partitions=N``) passes options to the tool.

To write the expectations from the tools' current output, after checking it
by eye: ``KPLEX_UPDATE_CASES=1 pytest tests/test_sql_check.py ...``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
UPDATE = os.environ.get("KPLEX_UPDATE_CASES") == "1"

_OPTIONS = re.compile(r"^(?:--|#)\s*case:(.*)$")


@dataclass(frozen=True)
class Case:
    """One input file and the file of its expected output."""

    input: Path
    expected: Path

    @property
    def name(self) -> str:
        return self.input.stem

    def text(self) -> str:
        return self.input.read_text(encoding="utf-8")

    def options(self) -> dict[str, str]:
        """``key=value`` pairs of the ``case:`` line, if the file has one."""
        first = self.text().split("\n", 1)[0]
        match = _OPTIONS.match(first.strip())
        if not match:
            return {}
        return dict(item.split("=", 1) for item in match.group(1).split())

    def variables(self) -> dict[str, str]:
        return {k[4:]: v for k, v in self.options().items() if k.startswith("var.")}

    def sidecar(self, suffix: str) -> Path:
        return self.input.with_name(self.input.stem + suffix)

    def assert_output(self, actual: str) -> None:
        """Compare with the expectation; when updating, write it and fail if it changed (a run
        that rewrote an expectation has checked nothing: review the diff and run again)."""
        actual = actual.rstrip("\n") + "\n"
        if UPDATE and (not self.expected.exists() or self.expected.read_text(encoding="utf-8") != actual):
            self.expected.write_text(actual, encoding="utf-8")
            pytest.fail(f"{self.expected} written: review it, then run again without KPLEX_UPDATE_CASES")
        assert self.expected.exists(), f"{self.expected} is missing: run with KPLEX_UPDATE_CASES=1 and review it"
        assert actual == self.expected.read_text(encoding="utf-8")


def cases(folder: str, *suffixes: str) -> list:
    """A pytest parameter per input of ``folder`` with one of ``suffixes``."""
    found = sorted(p for p in (HERE / folder).iterdir() if p.suffix in suffixes)
    assert found, f"no cases in {HERE / folder}"
    return [pytest.param(Case(p, p.with_name(p.name + ".expected")), id=p.name) for p in found]

