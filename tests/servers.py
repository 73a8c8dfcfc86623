"""Real Spark servers for the tests: `kplex server connect|thrift`, each a Spark driver JVM
of its own, started in a scratch directory and stopped (SIGTERM) when the test is done."""
from __future__ import annotations

import os
import signal
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from kplex.servers import free_port, running_server

START_TIMEOUT_S = 180.0

__all__ = ["START_TIMEOUT_S", "free_port", "kill_connect_server", "kplex_server"]


@contextmanager
def kplex_server(kind: str, bootstrap: str, workdir: Path, *conf: str) -> Iterator[int]:
    """Starts `kplex server <kind>` on a free port and yields the port once it listens."""
    with running_server(kind, bootstrap, workdir, conf, start_timeout=START_TIMEOUT_S) as port:
        yield port


def kill_connect_server(port: int) -> int:
    """Kills the Spark Connect server JVM that listens on ``port`` with SIGKILL, as a crash or
    the kernel's out-of-memory killer would (no shutdown hook runs), and returns its pid."""
    needle = f"spark.connect.grpc.binding.port={port}".encode()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:  # gone meanwhile
            continue
        if argv and argv[0].endswith(b"java") and needle in argv:
            os.kill(int(proc.name), signal.SIGKILL)
            return int(proc.name)
    raise AssertionError(f"no Spark Connect server JVM listens on port {port}")
