"""``kplex read``: virtual partitions to FIFOs for ``xargs -P``, to files, to stdout.

Runs the real command (``python -m kplex read``) in a real shell pipeline; what each
consumer received is compared with what a plain consumer reads from a materialized
table of the same definition.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from read_support import (
    clickstream,
    consumer_sequences,
    create_materialized,
    create_virtual,
    pageviews,
    produce,
)

ROOT = Path(__file__).resolve().parents[1]
KPLEX = f"{sys.executable} -m kplex read"


def run(command: str, bootstrap: str, timeout: float = 240, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), KPLEX_BOOTSTRAP=bootstrap)
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True,
                          timeout=timeout, env=env, cwd=cwd)


@pytest.fixture(scope="module")
def tables(spark, bootstrap: str) -> dict[str, str]:
    """A pageviews source, its V=9 materialized table and the same as a read-time table."""
    source = f"read_cli_{uuid.uuid4().hex[:8]}"
    pageviews(bootstrap, source, 600, out_of_order_ms=2_000)
    create_materialized(spark, f"{source}_stored", source, 9, 3)
    create_virtual(spark, f"{source}_live", source, 9, max_delay_ms="2000")
    return {"source": source, "stored": f"{source}_stored", "live": f"{source}_live"}


@pytest.fixture(scope="module")
def expected_values(bootstrap: str, tables) -> dict[int, list[bytes]]:
    seqs = consumer_sequences(bootstrap, tables["stored"])
    return {vp: [value for _, value, _ in seqs.get(vp, [])] for vp in range(9)}


def lines(values: list[bytes]) -> bytes:
    return b"".join(v + b"\n" for v in values)


# Runs `kplex` counting, per topic, every record any consumer of the process hands out: a
# door of its own, apart from the reader's ReadStats.
COUNTING_KPLEX = """
import atexit, collections, json, sys
import kplex.kafka.clients
from kplex.cli import main

received = collections.Counter()


class Counting(kplex.kafka.clients._Consumer):
    def consume(self, *args, **kwargs):
        messages = super().consume(*args, **kwargs)
        received.update(m.topic() for m in messages if m.error() is None)
        return messages

    def poll(self, *args, **kwargs):
        message = super().poll(*args, **kwargs)
        if message is not None and message.error() is None:
            received[message.topic()] += 1
        return message


kplex.kafka.clients._Consumer = Counting
atexit.register(lambda: print("received " + json.dumps(received), file=sys.stderr))
sys.exit(main())
"""


@pytest.mark.parametrize("kind", ["stored", "live"], ids=["kplex-written", "read-time"])
def test_fifos_feed_one_xargs_consumer_per_virtual_partition_in_order(
        bootstrap, tables, expected_values, tmp_path, kind):
    fifos, got = tmp_path / "fifos", tmp_path / "got"
    got.mkdir()
    consumer = f"""sh -c 'cat "$1" > {got}/vp-$0'"""
    done = run(f"{KPLEX} {tables[kind]} --out-dir {fifos} --fifo | xargs -P9 -n2 {consumer}", bootstrap)
    assert done.returncode == 0, done.stderr
    for vp in range(9):
        assert (got / f"vp-{vp}").read_bytes() == lines(expected_values[vp]), vp
    assert not any(fifos.iterdir())  # the FIFOs are gone


def test_fifos_of_a_read_time_table_read_its_source_once(bootstrap, tables, expected_values, tmp_path):
    (tmp_path / "counting_kplex.py").write_text(COUNTING_KPLEX)
    fifos, got = tmp_path / "fifos", tmp_path / "got"
    got.mkdir()
    consumer = f"""sh -c 'cat "$1" > {got}/vp-$0'"""
    done = run(f"{sys.executable} {tmp_path / 'counting_kplex.py'} read {tables['live']} --out-dir {fifos}"
               f" --fifo --stats | xargs -P9 -n2 {consumer}", bootstrap)
    assert done.returncode == 0, done.stderr
    received = json.loads(done.stderr.split("received ", 1)[1].splitlines()[0])
    assert received[tables["source"]] == 600  # the source's 600 records, not 9 x 600
    assert "600 records out of 600 read" in done.stderr
    for vp in range(9):
        assert (got / f"vp-{vp}").read_bytes() == lines(expected_values[vp]), vp


def test_a_consumer_that_stops_early_ends_only_its_own_fifo(bootstrap, tmp_path):
    topic = f"read_cli_head_{uuid.uuid4().hex[:8]}"
    records = clickstream(3, 1_500, max_lag_ms=1_000, seed=5)
    for rec in (r for part in records.values() for r in part):
        rec["pad"] = "x" * 1_000  # ~0.5 MB per virtual partition: more than a pipe holds
    produce(bootstrap, topic, records)
    view = f"{KPLEX} {topic} --order /_time --key /userid --max-delay-ms 1000 --virtual-partitions 3"
    files = run(f"{view} --out-dir {tmp_path / 'files'}", bootstrap)
    assert files.returncode == 0, files.stderr
    expected = {vp: (tmp_path / "files" / f"{topic}.{vp}").read_bytes() for vp in range(3)}
    assert min(map(len, expected.values())) > 4 * 65_536

    got = tmp_path / "got"
    got.mkdir()
    consumer = f"""sh -c 'if [ "$0" = 1 ]; then head -n1 "$1"; else cat "$1"; fi > {got}/vp-$0'"""
    done = run(f"{view} --out-dir {tmp_path / 'fifos'} --fifo | xargs -P3 -n2 {consumer}", bootstrap, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (got / "vp-1").read_bytes() == expected[1].split(b"\n", 1)[0] + b"\n"
    assert (got / "vp-0").read_bytes() == expected[0]
    assert (got / "vp-2").read_bytes() == expected[2]


def test_a_full_queue_holds_the_reader_back_and_bounds_what_it_holds(
        bootstrap, tables, expected_values, tmp_path):
    fifos, got = tmp_path / "fifos", tmp_path / "got"
    got.mkdir()
    consumer = f"""sh -c 'sleep 2; cat "$1" > {got}/vp-$0'"""  # nobody reads for 2 s
    done = run(f"{KPLEX} {tables['live']} --out-dir {fifos} --fifo --fifo-queue 4 --stats"
               f" | xargs -P9 -n2 {consumer}", bootstrap)
    assert done.returncode == 0, done.stderr
    for vp in range(9):
        assert (got / f"vp-{vp}").read_bytes() == lines(expected_values[vp]), vp
    # ~67 records per virtual partition, and each queue filled up to its bound and no further
    assert "at most 4 records queued for one FIFO" in done.stderr


def test_a_read_error_closes_every_fifo_and_is_an_error_exit(bootstrap, tmp_path):
    topic = f"read_cli_fifo_late_{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, {0: [{"_time": t, "userid": u} for u, t in enumerate((1_000, 5_000, 2_000))]})
    got = tmp_path / "got"
    got.mkdir()
    consumer = f"""sh -c 'cat "$1" > {got}/vp-$0 2>/dev/null; true'"""
    done = run(f"{KPLEX} {topic} --order /_time --key /userid --max-delay-ms 1000 --virtual-partitions 3"
               f" --out-dir {tmp_path / 'fifos'} --fifo | xargs -P3 -n2 {consumer}", bootstrap, timeout=60)
    assert done.returncode == 2, done.stderr  # kplex's own exit status, through pipefail
    assert "KPLEX_LATE_RECORD" in done.stderr and "offset 2" in done.stderr
    assert not any((tmp_path / "fifos").iterdir())


def test_files_hold_one_virtual_partition_each_and_are_announced_for_xargs(
        bootstrap, tables, expected_values, tmp_path):
    done = run(f"{KPLEX} {tables['live']} --out-dir {tmp_path / 'out'} --stats", bootstrap)
    assert done.returncode == 0, done.stderr
    pairs = [line.split(" ", 1) for line in done.stdout.splitlines()]
    assert [int(vp) for vp, _ in pairs] == list(range(9))
    for vp, path in pairs:
        assert Path(path).read_bytes() == lines(expected_values[int(vp)])
    assert "600 records out of 600 read; late: 0 dropped" in done.stderr


def test_one_virtual_partition_goes_to_stdout_as_json(bootstrap, tables, expected_values):
    vp = max(expected_values, key=lambda n: len(expected_values[n]))
    done = run(f"{KPLEX} {tables['stored']} --vp {vp} --format json", bootstrap)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["value"].encode() for r in records] == expected_values[vp]
    assert {r["vp"] for r in records} == {vp}
    assert [r["order"] for r in records] == sorted(r["order"] for r in records)


def test_the_seed_articles_check_passes_on_a_cross_partition_timeline(bootstrap, tmp_path):
    topic = f"read_cli_clicks_{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, clickstream(6, 600, max_lag_ms=1_000, seed=9))
    extract = f"""{sys.executable} -c 'import sys, json; [print(json.loads(l)["_time"]) for l in sys.stdin]'"""
    done = run(f"{KPLEX} {topic} --order /_time --max-delay-ms 1000 | {extract} > times"
               " && wc -l < times && diff times <(sort -n times)", bootstrap, cwd=tmp_path)  # times goes there
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "600"  # diff printed nothing


def test_a_late_record_under_the_fail_policy_is_an_error_exit(bootstrap, tmp_path):
    topic = f"read_cli_late_{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, {0: [{"_time": t, "userid": 1} for t in (1_000, 5_000, 2_000)]})
    done = run(f"{KPLEX} {topic} --order /_time --max-delay-ms 1000", bootstrap)
    assert done.returncode == 2
    assert "KPLEX_LATE_RECORD" in done.stderr and "offset 2" in done.stderr
    dropped = run(f"{KPLEX} {topic} --order /_time --max-delay-ms 1000 --late-policy drop --stats", bootstrap)
    assert dropped.returncode == 0 and len(dropped.stdout.splitlines()) == 2
    assert "1 dropped" in dropped.stderr


def test_fewer_than_one_virtual_partition_is_an_error_exit_naming_the_option(bootstrap):
    topic = f"read_cli_v_{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, {0: [{"_time": t, "userid": 1} for t in (1_000, 2_000)]})
    for v in ("0", "-2"):
        done = run(f"{KPLEX} {topic} --order /_time --virtual-partitions {v}", bootstrap, timeout=60)
        assert done.returncode == 2, done.stderr[-2000:]
        assert done.stderr.strip().splitlines()[-1] == (
            f"kplex: [KPLEX_BAD_OPTION] virtual_partitions must be >= 1, got {v}."), done.stderr[-2000:]
        assert done.stdout == ""


def test_a_name_no_topic_can_have_is_an_error_exit_naming_it(bootstrap):
    # librdkafka's answer is "Broker: Invalid topic", naming neither the topic nor why.
    for command in ("read", "advise"):
        done = run(f"{sys.executable} -m kplex {command} 'page views'", bootstrap, timeout=60)
        assert done.returncode == 2, done.stderr[-2000:]
        assert done.stderr.strip().splitlines()[-1] == (
            "kplex: [KPLEX_BAD_TOPIC_NAME] 'page views' cannot be a Kafka topic's name: it contains ' '. A topic's"
            " name is 1 to 249 ASCII letters, digits, '.', '_' and '-', and not '.' or '..'."), done.stderr[-2000:]


@pytest.mark.parametrize("name", ["pageviews", "a.b-c_D9", "x" * 249, "x" * 250, "", ".", "..", "...", "bad name!",
                                  "ünïcode", "a/b", "tab\there"])
def test_the_python_side_says_of_a_topic_name_what_the_plugin_says(spark, name):
    from kplex.settings import topic_name_problem

    assert topic_name_problem(name) == spark._jvm.io.kplex.spark.kafka.TopicNames.problem(name)  # noqa: SLF001


def test_files_of_a_read_that_fails_are_not_left_truncated_and_a_bad_out_dir_is_named(bootstrap, tmp_path):
    """--out-dir without --fifo: a read that fails (a late record under `fail`) leaves no file under
    a virtual partition's name, and a file of an earlier read as it was; --out-dir naming a file,
    or holding a file where a FIFO goes, is refused naming it (no traceback, no FIFO made)."""
    topic = f"read_cli_files_late_{uuid.uuid4().hex[:8]}"
    produce(bootstrap, topic, {0: [{"_time": t, "userid": u} for u, t in enumerate((1_000, 5_000, 2_000))]})
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{topic}.0").write_bytes(b"an earlier read\n")
    done = run(f"{KPLEX} {topic} --order /_time --key /userid --max-delay-ms 1000 --virtual-partitions 3"
               f" --out-dir {out}", bootstrap)
    assert done.returncode == 2 and "KPLEX_LATE_RECORD" in done.stderr, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"{topic}.0"]
    assert (out / f"{topic}.0").read_bytes() == b"an earlier read\n"
    # The same read that succeeds takes the names.
    done = run(f"{KPLEX} {topic} --order /_time --key /userid --max-delay-ms 1000 --virtual-partitions 3"
               f" --late-policy drop --out-dir {out}", bootstrap)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"{topic}.{vp}" for vp in range(3)]
    assert sum(len(p.read_bytes().splitlines()) for p in out.iterdir()) == 2

    blocked = tmp_path / "blocked"
    (blocked / f"{topic}.1").mkdir(parents=True)  # a virtual partition's name taken by a folder
    done = run(f"{KPLEX} {topic} --order /_time --key /userid --max-delay-ms 1000 --virtual-partitions 3"
               f" --late-policy drop --out-dir {blocked}", bootstrap)
    assert done.returncode == 2 and "is a directory" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert sorted(p.name for p in blocked.iterdir()) == [f"{topic}.1"]
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    done = run(f"{KPLEX} {topic} --order /_time --max-delay-ms 9000 --out-dir {a_file}", bootstrap)
    assert done.returncode == 2 and str(a_file) in done.stderr and "Traceback" not in done.stderr, done.stderr
    fifos = tmp_path / "fifos"
    fifos.mkdir()
    (fifos / f"{topic}.2").write_text("mine")
    done = run(f"{KPLEX} {topic} --order /_time --max-delay-ms 9000 --virtual-partitions 3 --out-dir {fifos} --fifo",
               bootstrap)
    assert done.returncode == 2 and "is not a FIFO" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert sorted(p.name for p in fifos.iterdir()) == [f"{topic}.2"]
