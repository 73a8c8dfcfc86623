"""The examples in the package's docstrings (``>>>``) run as written: they are how a reader
of ``kplex.settings`` or ``kplex.placement`` learns what a function gives, so they must not
drift from it. None needs Spark or a broker."""
from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import kplex

MODULES = sorted(m.name for m in pkgutil.walk_packages(kplex.__path__, "kplex.") if not m.name.endswith("__main__"))


@pytest.mark.parametrize("name", MODULES)
def test_the_modules_examples_give_what_they_show(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS, report=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (run: python -m doctest)"


def test_the_examples_are_found():
    # A change to how modules are found would otherwise pass every module with none run.
    found = sum(len(test.examples) for name in MODULES for test in doctest.DocTestFinder().find(
        importlib.import_module(name)))
    assert len(MODULES) > 30 and found > 150, (len(MODULES), found)
