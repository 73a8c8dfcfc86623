"""``kplex server`` and the servers ``kplex pipeline run`` starts, around a stand-in spark-submit
(a Python script in a fake Spark home): no JVM. The catalog's credentials go to spark-submit in a
file only its user can read, which is gone once the server listens, or exited."""
from __future__ import annotations

import socket
import stat
import sys
import tempfile
import time
from pathlib import Path

import pytest

from kplex import servers
from kplex.cli import main

JAAS = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="kplex" password="s3cr3t";'

#: A spark-submit that reads its properties file, says whether the JAAS line was in it, then
#: exits (``exits``) or listens on the Connect port it was given until it is stopped.
SPARK_SUBMIT = """#!{python}
import socket, sys, time
args = sys.argv[1:]
with open(args[args.index("--properties-file") + 1]) as properties:
    print("read the JAAS line:", "sasl.jaas.config=" in properties.read(), flush=True)
if {exits}:
    print("Error: Failed to load class org.apache.spark.sql.connect.service.SparkConnectServer.", flush=True)
    sys.exit(3)
port = next(int(a.split("=")[1]) for a in args if a.startswith("spark.connect.grpc.binding.port="))
listening = socket.create_server(("127.0.0.1", port))
time.sleep(600)
"""


def fake_spark(home: Path, monkeypatch: pytest.MonkeyPatch, exits: bool) -> None:
    script = home / "bin" / "spark-submit"
    script.parent.mkdir(parents=True)
    script.write_text(SPARK_SUBMIT.format(python=sys.executable, exits=exits))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(servers, "spark_home", lambda: home)
    monkeypatch.setenv("SPARK_HOME", str(home))  # exec_server sets it for the server: undone after the test
    monkeypatch.setattr(servers, "jars", lambda: [str(home / "kplex-spark.jar")])
    (home / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(home / "tmp"))  # where the credentials file goes


def properties_dirs() -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob("kplex-server-*"))


def test_a_server_that_exits_as_it_starts_is_reported_with_its_log_and_leaves_no_credentials(tmp_path, monkeypatch):
    fake_spark(tmp_path / "spark", monkeypatch, exits=True)
    with pytest.raises(servers.ServerDidNotStart) as failed:
        with servers.running_server("connect", "broker:9093", tmp_path, master="local[1]",
                                    kafka_options={"sasl.jaas.config": JAAS}):
            raise AssertionError("the server listened")
    assert str(failed.value).startswith("the connect server exited with 3:")
    assert "read the JAAS line: True" in str(failed.value) and "Failed to load class" in str(failed.value)
    assert properties_dirs() == []


def test_a_servers_credentials_file_is_gone_once_it_listens(tmp_path, monkeypatch):
    fake_spark(tmp_path / "spark", monkeypatch, exits=False)
    with servers.running_server("connect", "broker:9093", tmp_path, master="local[1]",
                                kafka_options={"sasl.jaas.config": JAAS}) as port:
        assert properties_dirs() == []
        assert "read the JAAS line: True" in (tmp_path / "connect-server.log").read_text()
        assert servers._listening(port)  # noqa: SLF001
    assert not servers._listening(port)  # noqa: SLF001 - stopped


def test_kplex_server_leaves_a_process_that_removes_the_credentials_file_once_the_server_listens(
        tmp_path, monkeypatch):
    """`kplex server` becomes the server (exec): a process it leaves behind removes the file."""
    fake_spark(tmp_path / "spark", monkeypatch, exits=False)
    execs: list[list[str]] = []
    monkeypatch.setattr(servers.os, "execv", lambda path, argv: execs.append(argv))
    port = servers.free_port()
    servers.exec_server("connect", "broker:9093", port, "127.0.0.1", "local[1]", [],
                        kafka_options={"sasl.jaas.config": JAAS})
    [argv] = execs
    written = Path(argv[argv.index("--properties-file") + 1])
    assert written.read_text().startswith("spark.sql.catalog.kplex.kafka.sasl.jaas.config=")  # until it listens
    with socket.create_server(("127.0.0.1", port)):  # the server, as it listens
        deadline = time.monotonic() + 30
        while written.parent.exists():
            assert time.monotonic() < deadline, f"{written} is still there"
            time.sleep(0.2)
    assert JAAS not in " ".join(argv)


def test_pipeline_run_says_why_its_server_did_not_start_without_a_traceback(tmp_path, monkeypatch, capsys):
    fake_spark(tmp_path / "spark", monkeypatch, exits=True)
    spec = tmp_path / "spark-pipeline.yml"
    spec.write_text("name: p\n")
    config = tmp_path / "client.properties"
    config.write_text(f"sasl.jaas.config={JAAS}\n")
    assert main(["pipeline", "run", str(spec), "--bootstrap", "broker:9093", "--kafka-config", str(config)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kplex pipeline run: the connect server exited with 3:") and "Failed to load class" in err
    assert properties_dirs() == []


def test_kplex_server_on_a_port_something_listens_on_says_so_and_starts_nothing(tmp_path, monkeypatch):
    """The file would go as soon as the port answers, before spark-submit read it."""
    fake_spark(tmp_path / "spark", monkeypatch, exits=False)
    monkeypatch.setattr(servers.os, "execv", lambda path, argv: pytest.fail("the server was started"))
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]
        with pytest.raises(SystemExit) as stopped:
            servers.exec_server("connect", "broker:9093", port, "127.0.0.1", "local[1]", [],
                                kafka_options={"sasl.jaas.config": JAAS})
    assert str(stopped.value) == (f"kplex server: something listens on 127.0.0.1:{port} already: stop it,"
                                  " or give another --port")
    assert properties_dirs() == []


def test_kplex_server_is_restricted_unless_started_unrestricted_and_a_pipelines_own_server_is_not(
        tmp_path, monkeypatch):
    """A server is shared by default (`spark.kplex.server.restricted=true` on its command line,
    which the plugin reads from its SparkConf: tests/test_connect.py and test_thrift.py check
    what it refuses); `--unrestricted` and the server `kplex pipeline run` starts for its own run
    leave the switch out; a --conf of the user's wins."""
    fake_spark(tmp_path / "spark", monkeypatch, exits=False)
    execs: list[list[str]] = []
    monkeypatch.setattr(servers.os, "execv", lambda path, argv: execs.append(argv))
    for flags in ([], ["--unrestricted"], ["--conf", "spark.kplex.server.restricted=false"]):
        assert main(["server", "thrift", "--bootstrap", "broker:9093", "--port", str(servers.free_port()), *flags]) in (0, None)
    restricted = [[a for a in argv if a.startswith(servers.RESTRICTED_KEY)] for argv in execs]
    assert restricted == [[f"{servers.RESTRICTED_KEY}=true"], [], [f"{servers.RESTRICTED_KEY}=false"]], restricted
    assert f"{servers.RESTRICTED_KEY}=true" not in servers.command("connect", "broker:9093", restricted=False)
