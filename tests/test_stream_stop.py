"""A graceful stop (issue #35): a running query writes what it holds, as at the end of its
input, then stops; from PySpark (`kplex.streaming.stop_gracefully`) and from the command line
(`kplex stream stop --checkpoint DIR`). Checked with a plain read_committed consumer: every
record produced before the stop written once, each virtual partition in order, none held back;
an INSERT after it loses nothing either.
"""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from test_stream_idle import LiveProducer, late, written
from test_streaming import SELECT, assert_exactly_once_in_order, create, stream, stream_job

from kplex.streaming import recent_progress, stop_gracefully
from kplex.testing import datagen, verify

ROOT = Path(__file__).resolve().parents[1]


def test_a_graceful_stop_writes_every_held_record_then_stops_and_an_insert_after_it_loses_nothing(
        spark, bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("stop_src"), fresh_name("stop_by_user")
    datagen.ensure_topic(bootstrap, source, 3)
    create(spark, target, delay_ms=5_000)
    query = stream(spark, source, target, tmp_path / "chk").trigger(processingTime="1 second").start()
    try:
        with LiveProducer(bootstrap, source, {0, 1, 2}) as producer:
            time.sleep(8)
        held = [int((p.sink.metrics or {}).get("heldRecords", "0")) for p in recent_progress(query)]
        assert max(held) > 0, "the test needs records held back when it stops"
        stop_gracefully(spark, query, timeout=120)
        assert not query.isActive
        assert query.exception() is None
    finally:
        if query.isActive:
            query.stop()
    assert late(query) == 0
    assert_exactly_once_in_order(bootstrap, source, target, producer.sent)

    # The table goes on: an INSERT of later records after the stop.
    more = fresh_name("stop_more")
    datagen.generate_pageviews(bootstrap, more, 300, partitions=3, users=13, seed=5,
                               start_ms=int(time.time() * 1000) + 60_000)
    spark.sql(f"INSERT INTO kplex.{target} SELECT {', '.join(SELECT)} FROM kplex.{more}")
    assert written(bootstrap, target) == producer.sent + 300


def test_kplex_stream_stop_ends_the_cli_stream_on_that_checkpoint_after_it_wrote_what_it_holds(
        bootstrap, fresh_name, tmp_path):
    source, target = fresh_name("stop_cli_src"), fresh_name("stop_cli_by_user")
    datagen.generate_pageviews(bootstrap, source, 2_000, partitions=3, users=15, seed=23, out_of_order_ms=3_000)
    job = stream_job(tmp_path, source, target)
    checkpoint = tmp_path / "chk"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    running = subprocess.Popen([sys.executable, "-m", "kplex", "stream", str(job), "--bootstrap", bootstrap,
                                "--checkpoint", str(checkpoint), "--trigger", "1 second", "--master", "local[2]",
                                "--conf", "spark.sql.shuffle.partitions=3"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    def visible() -> int:
        try:
            return written(bootstrap, target)
        except ValueError:  # the stream has not created its table yet
            return 0

    try:
        deadline = time.time() + 240
        while visible() == 0 and time.time() < deadline and running.poll() is None:
            time.sleep(2)
        assert 0 < written(bootstrap, target) < 2_000, "the stream should hold the records of its last 5 s"
        asked = subprocess.run([sys.executable, "-m", "kplex", "stream", "stop", "--checkpoint", str(checkpoint)],
                               capture_output=True, text=True, timeout=120, env=env)
        assert asked.returncode == 0, asked.stderr[-2000:]
        out, err = running.communicate(timeout=240)
    finally:
        if running.poll() is None:
            running.kill()
            running.communicate()
    assert running.returncode == 0, (out + err)[-3000:]
    assert "stopping query" in out and "gracefully" in out, out[-2000:]
    assert not (checkpoint / "kplex" / "stop-requested").exists()
    report = verify.check_derived_topic(bootstrap, source, target, 9, 3)
    assert report.ok, report.summary()
    assert report.derived_count == 2_000
