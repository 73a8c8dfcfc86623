"""Streaming re-keying, side by side: kplex's Structured Streaming sink (exactly once and
at least once), Spark's own Kafka sink, and Kafka Streams with exactly_once_v2, on one
local broker and the same generated pageviews. Prints a table; never asserts a time.

    python bench/streaming/run.py                     # 1M backlog, then 90 + 30 s at a fixed rate
    python bench/streaming/run.py --smoke             # 5k backlog, 10 s at 200/s: exit 0 when all passed
    python bench/streaming/run.py --records 1000000 --rate 2000 --only kplex_eo,kstreams_eos
    python bench/streaming/run.py --repeat 3          # three rounds at one rate: medians beside each round's
    python bench/streaming/run.py --only kplex_eo --profile-live   # and each JVM's CPU by thread, live phase only

Each contender, one after another and each in its own process, gets a fresh source topic
holding the same N-record backlog (kplex.testing.datagen, 3 partitions keyed by page) and
re-keys it by userid into a fresh 3-partition output, until the harness closes its stdin:

1. **Sustained throughput**: the running contender's rate over the backlog: the records
   that became visible after its first commit, per second from that commit until a
   read_committed consumer sees all N (the Spark queries read it ``maxOffsetsPerTrigger``
   at a time, a tenth by default). Also N / seconds from launching the process (start-up
   included), and the time to the first visible record (start-up).
2. **Latency at a fixed rate**: then R records/s for S + D seconds, each value's ``viewtime``
   its produce time; each record's latency is when it became visible (read_committed) minus
   that. R defaults to half of kplex exactly-once's sustained rate, at most 100,000/s. The p50
   and p99 are of the records of the last D seconds (30): a stream runs for days, and the
   first S (``--settle``, 90) are its JVM compiling the code and the micro-batches after the
   backlog catching up; their p50 is reported beside, *while settling*.

The Spark queries (kplex source, the next micro-batch as soon as the last one is done,
``local[2]``, adaptive execution off) also write their StreamingQueryProgress, summarised per micro-batch. Outputs
are checked: every record there (once, for the exactly-once contenders), and for kplex each
virtual partition in order (``kplex.vp``/``kplex.order`` headers, G2). The table and the
breakdown go to stdout and to bench/streaming/RESULTS.md (``--smoke``: into the work dir),
with the command and the date, and the same figures as data to the ``.json`` beside it (which
bench/targets.py reads). Contenders' logs stay in the work dir.

One run's sustained rate swings by about ±10% from one run to the next. ``--repeat N`` runs
every chosen contender N times, round after round on the one broker, each round with its own
topics and its own ``round-<n>`` folder of the work dir, and every round at the live rate the
first round fixed. Each round's table is printed when it ends; RESULTS.md then puts a summary
above the last round's table: per contender, the medians across rounds of the ratio to Kafka
Streams EOS (of the same round), p50, p99 and sustained rate, and each round's figures.
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import shlex
import signal
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path
from typing import Sequence

HERE = Path(__file__).resolve().parent
sys.path.append(str(HERE.parent))  # bench/prepare.py: Spark's Kafka connector, the kplex snapshot

from contenders import BASELINE, RATE_SETTER, Contender, Settings, select  # noqa: E402
from harness import Load, Result, run_contender, say  # noqa: E402
from kstreams import build_rekey_streams  # noqa: E402
from live_profile import INTERVAL_MS  # noqa: E402
from prepare import connector_jars, kplex_snapshot, machine  # noqa: E402
from tables import (  # noqa: E402
    breakdown_table,
    live_cpu_table,
    problems,
    results_document,
    results_summary,
    results_table,
    rounds_problems,
    rounds_table,
    startup_table,
)

from kplex.class_archive import ENV as ARCHIVE_ENV  # noqa: E402
from kplex.class_archive import turned_off  # noqa: E402
from kplex.testing.datagen import pageview_records  # noqa: E402
from kplex.testing.local_kafka import LocalKafka  # noqa: E402

#: The default live rate is half of kplex exactly-once's sustained rate, within these bounds.
RATE_CAP, RATE_FLOOR = 100_000.0, 50.0
#: Live seconds before the measured ones. On 2 cores a kplex query's live micro-batches took
#: 441, 279, 212 and 196 ms in its first four 30-s spans after a 1M backlog, then 144 ms.
SETTLE_S = 90.0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true",
                   help="5,000 records, 10 s at 200/s; exit 0 when every contender ran and wrote every record")
    p.add_argument("--records", type=int, default=1_000_000, help="backlog records (N)")
    p.add_argument("--rate", type=float, help="live records/s (R); default: half of kplex exactly-once's"
                                              f" sustained rate, at most {RATE_CAP:,.0f}")
    p.add_argument("--duration", type=float, default=30.0,
                   help="measured seconds of the live phase (D), after its settling ones; 0: no live phase")
    p.add_argument("--settle", type=float, default=SETTLE_S, metavar="S",
                   help="seconds of live records before the measured ones, their latencies reported apart (a"
                        " stream runs for days; its JVM's first minutes compile its code, and a micro-batch"
                        f" right after the backlog reads what piled up meanwhile); default {SETTLE_S:.0f}, 0: none")
    p.add_argument("--only", default="", help="comma-separated contenders: kplex_eo,kplex_alo,spark_kafka,kstreams_eos")
    p.add_argument("--users", type=int, default=1000, help="distinct userids")
    p.add_argument("--seed", type=int, default=42, help="of the generated backlog")
    p.add_argument("--v", type=int, default=9, help="kplex.virtual_partitions")
    p.add_argument("--p", type=int, default=3, help="partitions of every source and output")
    p.add_argument("--max-delay-ms", type=int, default=1000, help="kplex.max_delay_ms")
    p.add_argument("--idle-release-ms", type=int, default=1000,
                   help="kplex source's idleReleaseMs: how long after the input goes idle the sink "
                        "releases the records it holds back (the end of the backlog)")
    p.add_argument("--trigger", default="0 seconds",
                   help="Spark processing-time trigger (default: none, each micro-batch right after the last)")
    p.add_argument("--max-offsets-per-trigger", type=int,
                   help="the Spark queries' maxOffsetsPerTrigger (default: a tenth of the backlog, at least"
                        " 1,000, so that the backlog is read over several micro-batches as a running query"
                        " reads its input; 0: none)")
    p.add_argument("--memory", default="1g", help="spark.driver.memory, and Kafka Streams' -Xmx")
    p.add_argument("--streams-threads", type=int, default=2, help="Kafka Streams num.stream.threads")
    p.add_argument("--drain-timeout", type=float, default=900.0, help="seconds to wait for the backlog")
    p.add_argument("--tail-timeout", type=float, default=120.0,
                   help="seconds to wait for the last live records after the live phase")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run every chosen contender N times, round after round at one live rate, and report"
                        " the medians across rounds beside each round's figures")
    p.add_argument("--empty-partition", action="store_true",
                   help="then run the kplex contenders again on a source with one more partition that no"
                        " record goes to, at the same live rate, and report their latency beside the (last) run")
    p.add_argument("--profile-live", action="store_true",
                   help=f"attach async-profiler (CPU, every {INTERVAL_MS} ms, per thread) to each contender's JVM for the live"
                        " phase only: <workdir>/<contender>/live.collapsed, and a CPU table by kind of thread")
    p.add_argument("--workdir", type=Path, help="broker data, checkpoints, logs (default: a new dir in /tmp)")
    p.add_argument("--out", type=Path, help="results file (default bench/streaming/RESULTS.md;"
                                            " with --smoke, RESULTS-smoke.md in the work dir)")
    args = p.parse_args(argv)
    if args.repeat < 1:
        p.error("--repeat: at least 1")
    if args.settle < 0:
        p.error(f"--settle: at least 0 seconds, not {args.settle:g}")
    if args.smoke:
        args.records, args.rate, args.duration, args.settle = 5_000, 200.0, 10.0, 0.0
        args.drain_timeout = min(args.drain_timeout, 300.0)
    if args.max_offsets_per_trigger is None:
        args.max_offsets_per_trigger = max(1_000, args.records // 10)
    return args


class RatePolicy:
    """The live phase's rate: ``--rate``, or fixed by the first drained contender (kplex
    exactly once, which runs first) as half its sustained rate within the bounds. Once fixed
    it stays: with ``--repeat`` every round runs at the rate of the first."""

    def __init__(self, fixed: float | None) -> None:
        self.rate = fixed

    def __call__(self, result: Result) -> float:
        if self.rate is None:
            sustained = result.sustained or RATE_FLOOR * 2
            self.rate = max(RATE_FLOOR, min(RATE_CAP, sustained / 2))
            if result.contender.slug != RATE_SETTER:
                say(f"  {RATE_SETTER} did not run first: the live rate comes from {result.contender.slug}")
        return self.rate


def spark_kafka_jars(kplex_python: Path) -> str:
    """Spark's Kafka connector for spark.jars, with its own kafka-clients (kplex's is
    relocated inside kplex's jar: the two never clash)."""
    import pyspark

    return ",".join(connector_jars(pyspark.__version__))


def settings(args: argparse.Namespace, workdir: Path, bootstrap: str) -> Settings:
    kplex_python = kplex_snapshot(workdir)
    return Settings(bootstrap=bootstrap, workdir=workdir, kplex_python=kplex_python,
                    spark_kafka_jars=spark_kafka_jars(kplex_python), streams=build_rekey_streams(say),
                    v=args.v, p=args.p, max_delay_ms=args.max_delay_ms, idle_release_ms=args.idle_release_ms,
                    trigger=args.trigger, max_offsets_per_trigger=args.max_offsets_per_trigger,
                    memory=args.memory, streams_threads=args.streams_threads, profile_live=args.profile_live)


#: The backlog of the untimed run that writes the kplex sessions' JVM class archive.
WARMUP_RECORDS = 20_000


def write_class_archive(chosen: Sequence[Contender], setup: Settings, args: argparse.Namespace) -> bool:
    """Run the first kplex contender once, untimed, on a small backlog and a short live phase,
    as a machine's first kplex session: its JVM writes the class archive (kplex.class_archive,
    in the work dir unless ``KPLEX_CLASS_ARCHIVE`` says otherwise) that every later kplex
    session maps. Returns whether it ran."""
    first = next((c for c in chosen if c.slug.startswith("kplex")), None)
    if first is None or turned_off(os.environ[ARCHIVE_ENV]):
        return False
    say(f"{first.name}: once, untimed, so that its JVM writes the class archive")
    small = Load(records=WARMUP_RECORDS, users=args.users, seed=args.seed + 1, duration_s=2.0,
                 drain_timeout_s=args.drain_timeout, tail_timeout_s=args.tail_timeout,
                 backlog_values=Counter(hash(value) for _, value in
                                        pageview_records(WARMUP_RECORDS, users=args.users, seed=args.seed + 1)))
    run_contender(first, dataclasses.replace(setup, workdir=setup.workdir / "class-archive", profile_live=False), small,
                  uuid.uuid4().hex[:8] + "w", lambda _: RATE_FLOOR)
    return True


def load(args: argparse.Namespace) -> Load:
    backlog = Counter(hash(value) for _, value in pageview_records(args.records, users=args.users, seed=args.seed))
    return Load(records=args.records, users=args.users, seed=args.seed, duration_s=args.duration,
                drain_timeout_s=args.drain_timeout, tail_timeout_s=args.tail_timeout, backlog_values=backlog,
                settle_s=args.settle if args.duration > 0 else 0.0)


def parameters(args: argparse.Namespace, rate: float | None, archived: bool = False) -> dict[str, str]:
    return {
        "backlog": f"{args.records:,} records",
        "live rate": "none" if not rate else (f"{rate:,.0f}/s for {args.settle + args.duration:.0f} s, latencies"
                                              f" measured in the last {args.duration:.0f} s" if args.settle > 0
                                              else f"{rate:,.0f}/s for {args.duration:.0f} s"),
        "V/P": f"{args.v}/{args.p}",
        "kplex.max_delay_ms": str(args.max_delay_ms),
        "idleReleaseMs": str(args.idle_release_ms),
        "trigger": args.trigger,
        "maxOffsetsPerTrigger": f"{args.max_offsets_per_trigger:,}" if args.max_offsets_per_trigger else "none",
        "Spark": f"local[2], spark.driver.memory={args.memory}, spark.sql.shuffle.partitions={args.p},"
                 " spark.sql.adaptive.enabled=false",
        "Kafka Streams": f"3.9.1, {args.streams_threads} stream threads, -Xmx{args.memory}",
        "JVM class archive": (f"written before the rounds by an untimed kplex run ({WARMUP_RECORDS:,}-record backlog), "
                              "mapped by every Spark JVM (kplex_session)" if archived else "none"),
    }


def empty_partition_section(pairs: list[tuple[Result, Result]], p: int) -> str:
    """The kplex contenders' live latency with every source partition written, and again with
    one more that stays empty (idle at once, so it must not hold the watermark)."""
    def ms(value: float | None) -> str:
        return "-" if value is None else f"{value:,.0f}"

    rows = ["| contender | source | live rate | p50 ms | p99 ms | sustained rec/s | every record, in order |",
            "|---|---|---:|---:|---:|---:|---|"]
    for normal, empty in pairs:
        for result, source in ((normal, f"{p} partitions"), (empty, f"{p + 1} partitions, partition {p} empty")):
            rows.append(f"| {result.contender.slug} | {source} | {result.rate:,.0f}/s | {ms(result.percentile(50))} |"
                        f" {ms(result.percentile(99))} | {ms(result.sustained)} | {'yes' if result.ok else 'NO'} |")
    return "\n".join(["With one source partition empty (`--empty-partition`): the same backlog and live rate on a"
                      " source with one more partition that no record goes to. kplex's source finds it empty and"
                      " idle at once, so it holds no watermark back (docs/streaming.md, liveness).", ""] + rows)


def run_round(chosen: Sequence[Contender], setup: Settings, the_load: Load, rate: RatePolicy, number: int,
              rounds: int) -> list[Result]:
    """Every chosen contender once, in order, under a run id of its own (and with several
    rounds, in the work dir's ``round-<number>``); prints the round's table."""
    run_id = uuid.uuid4().hex[:8]
    if rounds > 1:
        say(f"round {number} of {rounds}")
        setup = dataclasses.replace(setup, workdir=setup.workdir / f"round-{number}")
    results = [run_contender(contender, setup, the_load, run_id, rate) for contender in chosen]
    if number > 1:
        print()
    if rounds > 1:
        say(f"round {number} of {rounds} done")
        print(f"Round {number} of {rounds}:", "", sep="\n")
    print(results_table(results, BASELINE), flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    chosen = select(args.only)
    # A plain SIGTERM would skip the clean-up that stops the contender and the broker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = "python bench/streaming/run.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    started = dt.datetime.now(dt.timezone.utc)
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="kplex-bench-streaming-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    out = args.out or (workdir / "RESULTS-smoke.md" if args.smoke else HERE / "RESULTS.md")
    say(f"work dir {workdir}")
    rate = RatePolicy(args.rate)
    the_load = load(args)
    rounds: list[list[Result]] = []
    with LocalKafka(brokers=1, workdir=workdir / "broker") as cluster:
        setup = settings(args, workdir, cluster.bootstrap)
        os.environ.setdefault(ARCHIVE_ENV, str(workdir / "class-archives"))
        archived = write_class_archive(chosen, setup, args)
        for number in range(1, args.repeat + 1):
            rounds.append(run_round(chosen, setup, the_load, rate, number, args.repeat))
        results = rounds[-1]  # RESULTS.md in full, and --empty-partition's comparison
        empty: list[tuple[Result, Result]] = []
        if args.empty_partition:
            with_empty = dataclasses.replace(setup, workdir=workdir / "empty-partition", empty_partitions=1)
            run_id = uuid.uuid4().hex[:8] + "e"
            for normal in results:
                if normal.contender.slug.startswith("kplex") and normal.ok:
                    say(f"{normal.contender.name}: again, with source partition {args.p} empty")
                    empty.append((normal, run_contender(normal.contender, with_empty, the_load, run_id,
                                                        lambda _: normal.rate)))
    document = results_document(results, BASELINE, command=command, started=started,
                                parameters=parameters(args, rate.rate, archived), machine=machine(), rounds=rounds)
    if empty:
        document += "\n" + empty_partition_section(empty, args.p) + "\n"
    out.write_text(document)
    summary = results_summary(rounds, BASELINE, command=command, started=started,
                              parameters=parameters(args, rate.rate, archived), machine=machine())
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    if len(rounds) > 1:
        print("", f"Medians over {len(rounds)} rounds (ratios within a round):", "", rounds_table(rounds, BASELINE),
              sep="\n")
    breakdown = breakdown_table(results)
    if breakdown:
        print("", *([f"Per micro-batch, round {len(rounds)}:", ""] if len(rounds) > 1 else []), breakdown, sep="\n")
    print("", "Start-up" + (", medians over the rounds" if len(rounds) > 1 else "") + ":", "",
          startup_table(rounds), sep="\n")
    if empty:
        print("", empty_partition_section(empty, args.p), sep="\n")
    cpu = live_cpu_table(results)
    if cpu:
        print("", "CPU during the live phase (--profile-live):", "", cpu, sep="\n")
    trouble = "\n".join(filter(None, (rounds_problems(rounds), problems([e for _, e in empty]))))
    if trouble:
        print("", trouble, sep="\n")
    say(f"results in {out}")
    passed = (all(len(each) == len(chosen) and all(r.ok for r in each) for each in rounds)
              and all(e.ok for _, e in empty))
    say("every contender ran and wrote every record" if passed else "FAILED: see the table and the problems")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
