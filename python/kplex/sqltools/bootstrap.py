"""Which Kafka cluster a SQL file runs against.

Precedence, first found wins: the ``--bootstrap`` option, the environment
variable ``KPLEX_BOOTSTRAP``, then a directive comment in the file itself::

    -- kplex.bootstrap = localhost:9092

(``kplex translate`` writes that comment from the job's ``kafka.broker``.)

>>> resolve_bootstrap(None, "-- kplex.bootstrap = localhost:9092\\nSELECT 1;", environ={})
('localhost:9092', 'the kplex.bootstrap comment of the file')
>>> resolve_bootstrap("b:9092", "", environ={"KPLEX_BOOTSTRAP": "e:9092"})
('b:9092', '--bootstrap')
"""

from __future__ import annotations

import os
import re
from typing import Mapping

__all__ = ["ENV_VAR", "resolve_bootstrap", "bootstrap_directive"]

ENV_VAR = "KPLEX_BOOTSTRAP"
_DIRECTIVE = re.compile(r"^[ \t]*--[ \t]*kplex\.bootstrap[ \t]*[=:][ \t]*(\S+(?:[ \t]*,[ \t]*\S+)*)[ \t]*\r?$",
                        re.MULTILINE)


def bootstrap_directive(text: str) -> str | None:
    """The address of the first ``-- kplex.bootstrap = ...`` line, if any: a list of servers
    may have blanks after its commas, as Kafka's clients allow.

    >>> bootstrap_directive("-- kplex.bootstrap = a:9092, b:9092\\nSELECT 1;")
    'a:9092,b:9092'
    """
    match = _DIRECTIVE.search(text)
    return re.sub(r"[ \t]*,[ \t]*", ",", match.group(1)) if match else None


def resolve_bootstrap(
    explicit: str | None, text: str, environ: Mapping[str, str] | None = None
) -> tuple[str | None, str]:
    """(bootstrap servers or None, where they came from)."""
    environ = os.environ if environ is None else environ
    if explicit:
        return explicit, "--bootstrap"
    if environ.get(ENV_VAR):
        return environ[ENV_VAR], ENV_VAR
    found = bootstrap_directive(text)
    if found:
        return found, "the kplex.bootstrap comment of the file"
    return None, "nowhere"
