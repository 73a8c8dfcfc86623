"""The kplex command line itself: a sub-command module that cannot load is an error naming
it, never a silently missing command."""
from __future__ import annotations

import subprocess
import sys

import pytest

from kplex import cli


def test_every_subcommand_is_offered() -> None:
    done = subprocess.run([sys.executable, "-m", "kplex", "--help"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for command in ("demo", "datagen", "recover", "sql", "translate", "read"):
        assert command in done.stdout


@pytest.mark.parametrize("module", cli.COMMAND_MODULES)
def test_a_command_module_that_fails_to_import_stops_the_cli_naming_it(monkeypatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # importing it now raises ImportError
    with pytest.raises(SystemExit) as stopped:
        cli.build_parser()
    assert module in str(stopped.value) and "halted" in str(stopped.value)
