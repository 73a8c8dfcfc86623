"""The kplex command line itself: a sub-command module that cannot load is an error naming
it, never a silently missing command."""
from __future__ import annotations

import os
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


def test_pipeline_run_flags_become_session_settings_in_a_copy_of_the_spec_beside_it(tmp_path):
    """`kplex pipeline run --resume --release-at-end` adds its settings to the spec's own
    configuration in a copy beside it (its globs are relative to its folder)."""
    import yaml

    from kplex.pipelines import with_configuration

    spec = tmp_path / "spark-pipeline.yml"
    spec.write_text("name: p\nstorage: file:///tmp/s\nlibraries:\n  - glob:\n      include: t/**\n"
                    "configuration:\n  spark.sql.shuffle.partitions: '3'\n")
    copy = with_configuration(spec, {"kplex.stream.startingOffsets": "table"})
    assert copy.parent == spec.parent and copy != spec
    document = yaml.safe_load(copy.read_text())
    assert document["configuration"] == {"spark.sql.shuffle.partitions": "3", "kplex.stream.startingOffsets": "table"}
    assert document["libraries"] == [{"glob": {"include": "t/**"}}] and document["name"] == "p"


def test_a_command_says_where_the_broker_address_that_did_not_answer_came_from(bootstrap, tmp_path):
    """The --kafka-config file's bootstrap.servers go with its credentials: they win over
    $KPLEX_BOOTSTRAP (here a broker that answers, and knows no such table). The file's address has
    no broker, so the command fails as unreachable and says the address was the file's."""
    config = tmp_path / "client.properties"
    config.write_text("bootstrap.servers=127.0.0.1:9\n")
    done = subprocess.run([sys.executable, "-m", "kplex", "status", "no_such_table_anywhere", "--kafka-config", str(config)],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "KPLEX_BOOTSTRAP": bootstrap})
    assert done.returncode == 2, done.stderr[-3000:]
    assert "[KPLEX_UNREACHABLE] no Kafka broker answered at '127.0.0.1:9'" in done.stderr, done.stderr[-3000:]
    assert "kplex: that address is the --kafka-config file's bootstrap.servers" in done.stderr, done.stderr[-3000:]


@pytest.mark.parametrize("command", [
    ["stream", "job.sql", "--checkpoint", "chk"],
    ["pipeline", "run", "sql/pipeline"],
    ["server", "connect"],
])
def test_a_conf_without_a_value_is_a_usage_error_naming_it(command, monkeypatch, capsys) -> None:
    """Before anything starts: no Spark session, no server."""
    with pytest.raises(SystemExit) as stopped:
        cli.main([*command, "--bootstrap", "broker:9092", "--conf", "spark.sql.shuffle.partitions"])
    assert stopped.value.code == 2
    assert "argument --conf: takes KEY=VALUE, got 'spark.sql.shuffle.partitions'" in capsys.readouterr().err


@pytest.mark.parametrize("flags, named", [
    (["--bootstrap", "broker:9092"], "--bootstrap"),
    (["--kafka-config", "client.properties"], "--kafka-config"),
    (["--bootstrap", "broker:9092", "--kafka-config", "client.properties"], "--bootstrap and --kafka-config"),
])
def test_pipeline_run_on_a_remote_server_refuses_the_catalog_flags_it_cannot_apply(
        flags, named, tmp_path, monkeypatch, capsys) -> None:
    """The catalog of a --remote server is the server's: its broker and credentials are given to its
    `kplex server connect`, not dropped silently here."""
    spec = tmp_path / "spark-pipeline.yml"
    spec.write_text("name: p\n")

    def no_run(*args, **kwargs):
        raise AssertionError("the pipeline ran")

    monkeypatch.setattr("kplex.pipelines.run_pipeline", no_run)
    assert cli.main(["pipeline", "run", str(spec), "--remote", "sc://127.0.0.1:15002", *flags]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"kplex pipeline run: {named} set the catalog of the server started for the run;"), err
    assert f"give {named} to its `kplex server connect`" in err


def test_the_demo_runs_and_replaces_its_topics_only_when_told(bootstrap):
    """`kplex demo` runs the seed article's example on the broker and checks every guarantee; on a
    broker where topics of the demo's names exist (maybe a user's own, named as in the README),
    it deletes nothing unless given --replace, and says so. (On a cluster of the user's where they
    exist already, as the suite may run on $KPLEX_BOOTSTRAP, only the refusal is checked: the test
    replaces no topic it did not make.)"""
    from confluent_kafka.admin import AdminClient

    from kplex.testing import verify

    env = {**os.environ, "PYTHONPATH": str(cli.__file__).rsplit("/kplex/", 1)[0]}

    def demo(*flags: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "kplex", "demo", "--bootstrap", bootstrap, "--records", "2000",
                               *flags], capture_output=True, text=True, timeout=600, env=env)

    admin = AdminClient({"bootstrap.servers": bootstrap})

    def state() -> dict:
        there = admin.list_topics(timeout=10).topics
        return {t: sorted((r.partition, r.offset) for r in verify.read_topic(bootstrap, t))
                for t in ("pageviews", "pageviews_by_user") if t in there}

    names = admin.list_topics(timeout=10).topics
    if "pageviews" not in names and "pageviews_by_user" not in names:
        done = demo("--replace")  # the topics it replaces are its own
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        assert "PASS G2 order" in done.stdout and "derived 2000" in done.stdout, done.stdout[-3000:]
        assert len(verify.read_topic(bootstrap, "pageviews_by_user")) == 2000
    kept = state()
    refused = demo()
    assert refused.returncode == 2, (refused.stdout + refused.stderr)[-3000:]
    assert " exist on " in refused.stderr and "--replace" in refused.stderr, refused.stderr
    assert state() == kept


def test_an_operating_command_without_a_java_says_so_without_a_traceback(tmp_path):
    """`kplex recover` runs kplex in a JVM of its own: with no java where JAVA_HOME points, it
    exits 2 naming JAVA_HOME, before any broker is asked."""
    env = {**os.environ, "JAVA_HOME": str(tmp_path / "no-jdk"),
           "PYTHONPATH": str(cli.__file__).rsplit("/kplex/", 1)[0]}
    done = subprocess.run([sys.executable, "-m", "kplex", "recover", "--bootstrap", "127.0.0.1:1", "--table", "t"],
                          capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 2, done.stderr
    assert f"JAVA_HOME={tmp_path / 'no-jdk'} could not be started" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
