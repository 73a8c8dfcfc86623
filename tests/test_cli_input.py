"""Bad input to the command line is refused before anything slow starts (a read, a JVM, a
Spark): a usage error naming the flag (exit 2), or kplex's error naming the file and the
setting. No Spark and no broker: a command that got past its check would read, start a JVM or
wait, and those doors are shut here (monkeypatched to fail), or pointed at 127.0.0.1:1."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kplex.cli import main
from kplex.errors import KafkaFailureError, OptionError
from kplex.settings import OPTIONS

NO_BROKER = "127.0.0.1:1"


@pytest.fixture
def no_jvm(monkeypatch):
    """What would start kplex's JVM (status, recover) fails the test instead."""
    def started(*args, **kwargs):
        raise AssertionError("the JVM started")

    monkeypatch.setattr("kplex.admin.run_admin", started)
    monkeypatch.setattr("kplex.admin.recover", started)


def usage_error(capsys, argv: list[str]) -> str:
    """argparse's usage error of ``argv`` (exit 2): its message."""
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


# --- 1. a --kafka-config file librdkafka refuses ----------------------------------------------

# file says                                        -> the error names
# librdkafka.bogus.prop=1                             'librdkafka.bogus.prop' (as written, not bogus.prop)
# SASL_PLAINTEXT + SCRAM-SHA-256, no JAAS line        'sasl.jaas.config' (what gives librdkafka's username)
SETTINGS = {
    "bogus": ("librdkafka.bogus.prop=1\n", "refuse 'librdkafka.bogus.prop'"),
    "scram": ("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n", "need 'sasl.jaas.config'"),
}
COMMANDS = {
    "read": ["read", "t", "--bootstrap", NO_BROKER],
    "advise": ["advise", "t", "--bootstrap", NO_BROKER, "--no-progress"],
    "status --count": ["status", "t", "--bootstrap", NO_BROKER, "--count"],
    "sql explain": ["sql", "explain", "{job}", "--bootstrap", NO_BROKER, "--timeout", "1"],
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("settings", SETTINGS)
def test_a_kafka_config_file_librdkafka_refuses_is_an_error_naming_the_file_and_the_setting_as_written(
        command, settings, tmp_path, capsys, no_jvm):
    text, named = SETTINGS[settings]
    config = tmp_path / "client.properties"
    config.write_text(text)
    job = tmp_path / "job.sql"
    job.write_text("SELECT 1;\n")
    argv = [arg.replace("{job}", str(job)) for arg in COMMANDS[command]] + ["--kafka-config", str(config)]
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "[KPLEX_BAD_OPTION]" in captured.err and str(config) in captured.err and named in captured.err, captured.err
    assert '"bogus.prop"' not in captured.err and captured.out == ""


def test_a_consumer_of_settings_librdkafka_refuses_names_the_setting_as_given():
    from kplex.kafka.clients import consumer

    with pytest.raises(KafkaFailureError, match="refuse 'bogus.prop'"):
        consumer(NO_BROKER, {"bogus.prop": "1"})


# --- 2. a boolean setting in `kplex sql check` ------------------------------------------------

@pytest.mark.parametrize("value, problem", [
    ("true", None),
    ("FALSE", None),
    ("'true'", "must be true or false, got ''true'' (SET keeps quotes: write it without them)"),
    ("yes", "must be true or false, got 'yes'"),
])
def test_sql_check_holds_a_boolean_setting_to_true_or_false(value, problem, tmp_path, capsys):
    job = tmp_path / "job.sql"
    job.write_text(f"SET kplex.stream.releaseAtEnd = {value};\n")
    done = main(["sql", "check", str(job)])
    out = capsys.readouterr().out
    if problem is None:
        assert done == 0, out
    else:
        assert done == 1 and "kplex.stream.releaseAtEnd" in out and problem in out, out


# --- 3. --release-at-end without --available-now ---------------------------------------------

def test_stream_release_at_end_without_available_now_is_a_usage_error(tmp_path, capsys):
    err = usage_error(capsys, ["stream", str(tmp_path / "job.sql"), "--checkpoint", str(tmp_path / "chk"),
                               "--release-at-end"])
    assert "--release-at-end needs --available-now" in err, err


def test_the_python_api_refuses_a_release_at_end_without_available_now_before_running_anything(tmp_path):
    from kplex.streaming import run_stream_file, start_stream

    with pytest.raises(OptionError, match="'releaseAtEnd' = 'true' is invalid: .*AvailableNow"):
        run_stream_file(tmp_path / "job.sql", None, str(tmp_path / "chk"), release_at_end=True)
    with pytest.raises(OptionError, match="'releaseAtEnd'"):
        start_stream(None, None, str(tmp_path / "chk"), release_at_end=True)


# --- 4. `kplex stream stop` on a directory without a checkpoint ------------------------------

@pytest.mark.parametrize("holds, stopped", [(None, False), ("metadata", True), ("offsets/", True)])
def test_stream_stop_refuses_a_directory_that_holds_no_spark_checkpoint(holds, stopped, tmp_path, capsys):
    checkpoint = tmp_path / "chk"
    checkpoint.mkdir()
    if holds == "metadata":
        (checkpoint / "metadata").write_text('{"id":"q"}\n')
    elif holds:
        (checkpoint / holds).mkdir()
    done = main(["stream", "stop", "--checkpoint", str(checkpoint)])
    err = capsys.readouterr().err
    assert (done == 0) is stopped and (checkpoint / "kplex" / "stop-requested").exists() is stopped, err
    if not stopped:
        assert done == 2 and f"{checkpoint} holds no Spark checkpoint" in err, err


# --- 5. --late-topic without late_policy side_topic -------------------------------------------

def stored(late_policy: str) -> dict[str, bytes]:
    """A read-time table t over topic src, storing its late policy."""
    return {"t": json.dumps({"format": "kplex-table", "version": 1, "name": "t", "topic": "src",
                             "virtual_partitions": 2, "physical_partitions": 1,
                             "properties": {"kplex.source": "src", "kplex.late_policy": late_policy}}).encode()}


# stored policy  --late-policy  -> the late topic
# drop           (none)            refused: the table's policy is drop
# drop           side_topic        taken
# side_topic     (none)            taken: the table's policy is side_topic
# side_topic     fail              refused
@pytest.mark.parametrize("table_policy, read_policy, taken", [
    ("drop", None, False),
    ("drop", "side_topic", True),
    ("side_topic", None, True),
    ("side_topic", "fail", False),
])
def test_a_late_topic_is_taken_only_under_the_resolved_late_policy_side_topic(
        table_policy, read_policy, taken, monkeypatch):
    from kplex.reader import open_table

    monkeypatch.setattr("kplex.reader.read_stored_values", lambda *args, **kwargs: stored(table_policy))
    read = lambda: open_table(NO_BROKER, "t", late_policy=read_policy, late_topic="late")  # noqa: E731
    if taken:
        assert read().late_topic == "late"
    else:
        with pytest.raises(OptionError, match="option 'late_topic' = 'late' is invalid: .*late_policy 'side_topic'"):
            read()


def test_read_with_a_late_topic_the_policy_does_not_use_is_an_error_naming_it(monkeypatch, capsys):
    monkeypatch.setattr("kplex.reader.read_stored_values", lambda *args, **kwargs: stored("drop"))
    assert main(["read", "t", "--bootstrap", NO_BROKER, "--late-topic", "late"]) == 2
    err = capsys.readouterr().err
    assert "option 'late_topic' = 'late' is invalid" in err and "late_policy is 'drop'" in err, err


# --- 6.-8. numbers argparse holds to their minimum --------------------------------------------

CLAIM = OPTIONS["kplex.writer_claim_timeout_ms"].minimum


@pytest.mark.parametrize("argv, said", [
    (["advise", "t", "--consumers", "0"], "argument --consumers: must be a whole number >= 1, got '0'"),
    (["advise", "t", "--candidates", "6,0"], "argument --candidates: every V of --candidates must be >= 1"),
    (["advise", "t", "--sample", "-5"], "argument --sample: must be a whole number >= 0, got '-5'"),
    (["recover", "--table", "t", "--claim-timeout-ms", "0"], f">= {CLAIM} (kplex.writer_claim_timeout_ms's"),
    (["recover", "--table", "t", "--claim-timeout-ms", "-1"], f">= {CLAIM} (kplex.writer_claim_timeout_ms's"),
    (["recover", "--table", "t", "--claim-timeout-ms", str(CLAIM - 1)], "argument --claim-timeout-ms"),
    (["control-plane", "spread", "--claim-timeout-ms", "0"], "argument --claim-timeout-ms"),
    (["sql", "explain", "job.sql", "--timeout", "-1"], "argument --timeout: must be a number of seconds > 0"),
    (["sql", "explain", "job.sql", "--timeout", "0"], "argument --timeout: must be a number of seconds > 0"),
])
def test_a_number_below_its_minimum_is_a_usage_error_naming_the_flag_before_anything_runs(
        argv, said, monkeypatch, capsys, no_jvm):
    def ran(*args, **kwargs):
        raise AssertionError("the command ran")

    monkeypatch.setattr("kplex.cli.advise.advise", ran)
    monkeypatch.setattr("kplex.cli.sql.explain_file", ran)
    err = usage_error(capsys, argv + ["--bootstrap", NO_BROKER])
    assert said in err, err


def test_the_numbers_at_their_minimum_are_taken():
    from kplex.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["recover", "--table", "t", "--claim-timeout-ms", str(CLAIM)]).claim_timeout_ms == CLAIM
    advise = parser.parse_args(["advise", "t", "--consumers", "1", "--candidates", "1,9", "--sample", "0"])
    assert (advise.consumers, advise.candidates, advise.sample) == (1, (1, 9), 0)
    assert parser.parse_args(["sql", "explain", str(Path("job.sql")), "--timeout", "0.5"]).timeout == 0.5
