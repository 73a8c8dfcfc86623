"""kplex's SQL workflows: check, explain and run kplex SQL files, translate
original kplex job files into kplex SQL.

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

from kplex.sqltools.check import CheckResult, check_file, check_script, check_text  # noqa: E402
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
from kplex.sqltools.script import Script, Statement, load_script, read_script  # noqa: E402

__all__ = [
    "BrokerUnavailable",
    "CheckFailed",
    "CheckResult",
    "Diagnostic",
    "NoBootstrap",
    "Script",
    "SessionUnavailable",
    "SqlToolError",
    "Statement",
    "StatementFailed",
    "UntranslatableJob",
    "check_file",
    "check_script",
    "check_text",
    "load_script",
    "read_script",
]
