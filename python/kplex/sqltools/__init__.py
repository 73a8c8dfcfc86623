"""kplex's SQL workflows: check, explain and run kplex SQL files, translate
original kplex job files into kplex SQL.

- :func:`check_file`: syntax and kplex mistakes, without Spark (``kplex sql check``)
- :func:`explain_file`: what each kplex statement will do (``kplex sql explain``)
- :func:`run_file`: every statement in one Spark session (``kplex sql run``)
- :func:`translate_file`: an original job file as kplex SQL (``kplex translate``)

>>> from kplex.sqltools import check_text
>>> check_text("SELECT kplex_ordr(ts) FROM kplex.pageviews").format()
'<sql>:1:8: error: statement 1: unknown function kplex_ordr; did you mean kplex_order?'
"""

from __future__ import annotations

import logging

# sqlglot logs a warning for each statement it keeps as a raw Command (SHOW,
# REFRESH, ...) and each JSON path it cannot read: Spark accepts those, and
# the findings of kplex come as diagnostics, not log lines.
logging.getLogger("sqlglot").setLevel(logging.ERROR)

from kplex.jsonpointer import PointerError, json_path  # noqa: E402
from kplex.sqltools.check import CheckResult, check_file, check_script, check_text  # noqa: E402
from kplex.sqltools.definitions import read_table_definitions  # noqa: E402
from kplex.sqltools.diagnostics import Diagnostic  # noqa: E402
from kplex.sqltools.errors import (  # noqa: E402
    BrokerUnavailable,
    CheckFailed,
    NoBootstrap,
    SessionUnavailable,
    SqlToolError,
    StatementFailed,
    UntranslatableJob,
)
from kplex.sqltools.explain import explain_file, explain_text  # noqa: E402
from kplex.sqltools.run import RunSummary, run_file  # noqa: E402
from kplex.sqltools.script import Script, Statement, load_script, read_script  # noqa: E402
from kplex.sqltools.translate import translate_file, translate_job  # noqa: E402

__all__ = [
    "BrokerUnavailable",
    "CheckFailed",
    "CheckResult",
    "Diagnostic",
    "NoBootstrap",
    "PointerError",
    "RunSummary",
    "Script",
    "SessionUnavailable",
    "SqlToolError",
    "Statement",
    "StatementFailed",
    "UntranslatableJob",
    "check_file",
    "check_script",
    "check_text",
    "explain_file",
    "explain_text",
    "json_path",
    "load_script",
    "read_script",
    "read_table_definitions",
    "run_file",
    "translate_file",
    "translate_job",
]
