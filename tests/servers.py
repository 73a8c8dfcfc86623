"""Real Spark servers for the tests: `kplex server connect|thrift`, each a Spark driver JVM
of its own, started in a scratch directory and stopped (SIGTERM) when the test is done."""
from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kplex.servers import free_port, running_server

START_TIMEOUT_S = 180.0

__all__ = ["START_TIMEOUT_S", "free_port", "kplex_server"]


@contextmanager
def kplex_server(kind: str, bootstrap: str, workdir: Path, *conf: str) -> Iterator[int]:
    """Starts `kplex server <kind>` on a free port and yields the port once it listens."""
    with running_server(kind, bootstrap, workdir, conf, start_timeout=START_TIMEOUT_S) as port:
        yield port
