"""``kplex advise`` against the real broker: its predictions checked through other doors.

The load it predicts per virtual and physical partition is compared with what a kplex
INSERT at the advised V and P really writes (a plain consumer counts the headers); its hot
keys with what the generator produced; its ``max_delay_ms`` with what the reader outside
Spark finds late at that bound and just below it.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from read_support import INSERT

from kplex.advise import advise, read_sample
from kplex.reader import TableReader
from kplex.testing import datagen, verify

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def skewed(bootstrap: str) -> tuple[str, datagen.PageviewsSummary]:
    """3 partitions, 12 users of whom User_1 makes 30% of the views, up to 2 s out of order."""
    topic = f"advise_{os.getpid()}_{id(object()):x}"
    summary = datagen.generate_pageviews(bootstrap, topic, 3_000, partitions=3, users=12, seed=11, skew=0.3,
                                         out_of_order_ms=2_000)
    return topic, summary


def test_the_advised_load_per_partition_is_what_a_kplex_insert_writes(spark, bootstrap, skewed, fresh_name):
    topic, _ = skewed
    advice = advise(bootstrap, topic, key="/userid", order="/viewtime", sample=0, candidates=(6, 9), consumers=3)
    best = advice.recommended
    assert best is not None and best.virtual_partitions >= 3
    assert best.virtual_partitions % best.physical_partitions == 0
    table = fresh_name("advised")
    spark.sql(f"CREATE TABLE kplex.{table} TBLPROPERTIES ('kplex.virtual_partitions' = '{best.virtual_partitions}',"
              f" 'kplex.physical_partitions' = '{best.physical_partitions}')")
    spark.sql(INSERT.format(target=table, source=topic))
    written = verify.read_topic(bootstrap, table)
    per_vp = Counter(int(r.headers["kplex.vp"]) for r in written)
    per_partition = Counter(r.partition for r in written)
    assert [per_vp[vp] for vp in range(best.virtual_partitions)] == list(best.per_virtual)
    assert [per_partition[p] for p in range(best.physical_partitions)] == list(best.per_physical)
    assert advice.records == 3_000 and sum(advice.per_source_partition) == 3_000


def test_the_hottest_key_and_its_share_are_those_produced(bootstrap, skewed):
    topic, summary = skewed
    advice = advise(bootstrap, topic, key="/userid", order="/viewtime", sample=0, consumers=9)
    user, count = max(summary.per_user.items(), key=lambda kv: kv[1])
    hottest = advice.hot_keys[0]
    assert (hottest.key.decode(), hottest.records) == (user, count)
    assert hottest.share == pytest.approx(count / 3_000)
    assert advice.distinct_keys == len(summary.per_user)
    # 30% on one key is more than one of 9 consumers' share: said, with what to do.
    warning = next(w for w in advice.warnings if user in w)
    assert "finer key" in warning and "two stages" in warning


def test_the_advised_max_delay_keeps_every_record_on_time_and_one_ms_less_does_not(bootstrap, skewed):
    topic, _ = skewed
    advice = advise(bootstrap, topic, key="/userid", order="/viewtime", sample=0)
    needed = advice.max_delay_ms["max"]
    assert needed > 0
    assert advice.max_delay_ms["p50"] <= advice.max_delay_ms["p99"] <= needed

    def late(bound: int) -> int:
        reader = TableReader(bootstrap, topic, key="/userid", order="/viewtime", max_delay_ms=bound,
                             late_policy="drop")
        for _ in reader:
            pass
        return reader.stats.late_dropped

    assert late(needed) == 0
    assert late(needed - 1) > 0


def test_a_sample_reads_the_last_records_of_each_partition(bootstrap, skewed):
    topic, _ = skewed
    advice = advise(bootstrap, topic, key="/userid", order="/viewtime", sample=30)
    assert advice.records == 30 and list(advice.per_source_partition) == [10, 10, 10]


def test_a_sample_ends_once_its_records_are_read_not_when_the_stall_timeout_is_up(bootstrap, skewed):
    """librdkafka's consume() waits for a whole batch (1000) or its whole timeout: a read of 30
    records must not wait out the 60 s meant for a broker that stopped answering."""
    topic, _ = skewed
    started = time.monotonic()
    records, partitions = read_sample(bootstrap, topic, key="/userid", order="/viewtime", sample=30, timeout=60)
    assert (len(records), partitions) == (30, 3)
    assert time.monotonic() - started < 30


def run_cli(*args: str, bootstrap: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"), KPLEX_BOOTSTRAP=bootstrap)
    return subprocess.run([sys.executable, "-m", "kplex", "advise", *args], capture_output=True, text=True,
                          timeout=180, env=env, cwd=ROOT)


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".svg", b"<svg")])
def test_the_cli_prints_the_table_and_draws_the_chart(bootstrap, skewed, tmp_path, suffix, magic):
    topic, _ = skewed
    chart = tmp_path / f"sizing{suffix}"
    done = run_cli(topic, "--key", "/userid", "--order", "/viewtime", "--consumers", "3", "--chart", str(chart),
                   bootstrap=bootstrap)
    assert done.returncode == 0, done.stderr
    assert "<- advised" in done.stdout and "hottest keys:" in done.stdout and "advice: V = " in done.stdout
    assert magic in chart.read_bytes()[:400]


def test_the_cli_answers_json_equal_to_the_library(bootstrap, skewed):
    topic, _ = skewed
    done = run_cli(topic, "--key", "/userid", "--order", "/viewtime", "--candidates", "6,9", "--json",
                   bootstrap=bootstrap)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    expected = advise(bootstrap, topic, key="/userid", order="/viewtime", candidates=(6, 9)).to_dict()
    assert got["recommended"] == expected["recommended"]
    assert got["max_delay_ms"] == expected["max_delay_ms"]


@pytest.mark.parametrize("args, culprit", [
    (("--candidates", "0,9"), "candidate"),
    (("--consumers", "0"), "consumers"),
    (("--order", "CAST(value AS STRING)"), "kplex.order"),
])
def test_bad_input_is_named(bootstrap, skewed, args, culprit):
    topic, _ = skewed
    done = run_cli(topic, "--key", "/userid", *args, bootstrap=bootstrap)
    assert done.returncode == 2 and culprit in done.stderr, done.stderr


def test_an_unknown_topic_is_named(bootstrap):
    done = run_cli("no_such_topic_for_advise", bootstrap=bootstrap)
    assert done.returncode == 2 and "no_such_topic_for_advise" in done.stderr, done.stderr


@pytest.mark.parametrize("chart, said", [("sizing.jpg", "must end in .png or .svg"),
                                         ("missing/sizing.png", "no folder")])
def test_a_chart_that_cannot_be_written_is_refused_before_the_topic_is_read(tmp_path, chart, said):
    """--chart's name is checked first: a read of a large topic is not spent on a chart that
    cannot be written (here no broker answers at all, and the refusal still comes)."""
    done = run_cli("no_such_topic", "--key", "/userid", "--chart", str(tmp_path / chart), bootstrap="127.0.0.1:1")
    assert done.returncode != 0 and said in done.stderr, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
