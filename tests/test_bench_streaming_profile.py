"""bench/streaming/run.py --profile-live (live_profile.py): async-profiler attached to a
contender's JVM for the live phase, and its samples summed per kind of thread.

The attach is tested on a real JVM started as the harness starts a contender (a process group
of its own), whose busy thread is named as Spark names its task threads and whose other thread
sleeps: the profile must find that JVM from the group alone and give the busy thread most of the
CPU. No Spark, no broker."""
from __future__ import annotations

import datetime as dt
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench" / "streaming"))

from contenders import select  # noqa: E402
from harness import Result  # noqa: E402
from live_profile import OTHER, LiveProfile, jvm_of, kind_of, thread_shares  # noqa: E402
from tables import live_cpu_table, results_document  # noqa: E402

(KPLEX_EO,) = select("kplex_eo")

BUSY_JVM = """
public class Busy {
    public static void main(String[] args) throws Exception {
        Thread worker = new Thread(() -> {
            long x = 0;
            while (true) { x = x * 31 + System.nanoTime(); if (x == 42) System.out.println(x); }
        }, "Executor task launch worker for task 0.0 in stage 1.0 (TID 3)");
        worker.setDaemon(true);
        worker.start();
        System.out.println("ready");
        Thread.sleep(120_000);
    }
}
"""


def test_threads_are_summed_by_kind_largest_first_and_the_rest_last():
    collapsed = "\n".join([
        "[Executor task launch worker for task 1.0 in stage 2.0 (TID 5) tid=71];a;b 400",
        "[Executor task launch worker for task 0.0 in stage 2.0 (TID 4) tid=70];a 200",
        "[C2 CompilerThread0 tid=14];x 150",
        "[C1 CompilerThread0 tid=15];x 50",
        "[stream execution thread for q [id = 1, runId = 2] tid=80];p 100",
        "[main tid=1];m 60",
        "[kplex-commit t tid=90];c 40",
        "",
    ])
    shares = thread_shares(collapsed, 5)
    assert [k for k, _, _ in shares] == ["tasks", "JIT compiler C2", "stream thread (planning, offsets, checkpoint)",
                                         "JIT compiler C1", "kplex's commit", OTHER]
    assert shares[0] == ("tasks", 3.0, 0.6)
    assert abs(sum(s for _, _, s in shares) - 1) < 1e-3
    assert thread_shares("", 5) == []
    assert kind_of("[some-app-StreamThread-1 tid=3]") == "Kafka Streams stream threads"


def test_the_profile_finds_the_jvm_of_a_process_group_and_gives_its_busy_thread_the_cpu(tmp_path):
    (tmp_path / "Busy.java").write_text(BUSY_JVM)
    # A shell launches the JVM, as spark-submit does: the group is the shell's, the JVM a child.
    proc = subprocess.Popen(["sh", "-c", f"cd {tmp_path} && java Busy.java"], stdout=subprocess.PIPE,
                            start_new_session=True, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        java = jvm_of(proc.pid)
        assert java is not None and java != proc.pid
        assert jvm_of(proc.pid + 10_000_000) is None
        profile = LiveProfile(proc.pid, tmp_path / "live.collapsed")
        profile.start()
        assert profile.problem is None and profile.pid == java
        time.sleep(3)
        shares = profile.stop()
        assert profile.problem is None, profile.problem
        assert shares, "no samples"
        kind, cpu_s, share = shares[0]
        assert kind == "tasks" and share > 0.5 and cpu_s > 1.0, shares
        assert "Executor task launch worker" in (tmp_path / "live.collapsed").read_text()
    finally:
        proc.kill()
        subprocess.run(["pkill", "-KILL", "-g", str(proc.pid)], check=False)


def test_a_group_without_a_jvm_is_a_note_not_a_failure(tmp_path):
    proc = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        profile = LiveProfile(proc.pid, tmp_path / "live.collapsed")
        profile.start()
        assert profile.stop() is None
        assert profile.problem == f"--profile-live: no JVM in process group {proc.pid}"
    finally:
        proc.kill()


def test_results_document_carries_the_cpu_table_only_when_profiled():
    r = Result(KPLEX_EO, backlog=1, backlog_seen=1)
    doc = results_document([r], "kstreams_eos", command="c", started=dt.datetime(2026, 12, 2), parameters={}, machine={})
    assert "--profile-live" not in doc and live_cpu_table([r]) == ""
    r.live_cpu = [("tasks", 10.9, 0.39), ("JIT compiler C2", 3.3, 0.118)]
    doc = results_document([r], "kstreams_eos", command="c", started=dt.datetime(2026, 12, 2), parameters={}, machine={})
    assert "CPU during the live phase (`--profile-live`" in doc
    assert "| kplex streaming, exactly once | tasks | 10.9 | 39% |" in doc
    assert "| kplex streaming, exactly once | JIT compiler C2 | 3.3 | 12% |" in doc
