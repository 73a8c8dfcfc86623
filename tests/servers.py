"""Real Spark servers for the tests: `kplex server connect|thrift`, each a Spark driver JVM
of its own, started in a scratch directory and stopped (SIGTERM) when the test is done."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

START_TIMEOUT_S = 180.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def kplex_server(kind: str, bootstrap: str, workdir: Path, *conf: str) -> Iterator[int]:
    """Starts `kplex server <kind>` on a free port and yields the port once it listens."""
    port = free_port()
    log = workdir / f"{kind}-server.log"
    argv = [sys.executable, "-m", "kplex", "server", kind, "--bootstrap", bootstrap, "--port", str(port),
            "--master", "local[2]"]
    for item in conf:
        argv += ["--conf", item]
    with open(log, "wb") as out:
        server = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True, env=dict(os.environ, SPARK_LOCAL_IP="127.0.0.1"))
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(port):
            if server.poll() is not None:
                raise RuntimeError(f"the {kind} server exited with {server.returncode}:\n{log.read_text()[-4000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the {kind} server did not listen on {port} in {START_TIMEOUT_S} s:\n"
                                   f"{log.read_text()[-4000:]}")
            time.sleep(1)
        yield port
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
