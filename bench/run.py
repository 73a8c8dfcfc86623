"""kplex against what users would pick instead, side by side, in one run.

    python bench/run.py                 # 1M and 10M records: the full table in bench/RESULTS.md
    python bench/run.py --smoke         # 20k records, every contender once: exits 0 when all ran and passed
    python bench/run.py --sizes 1000000 --vs 9,1000 --profile
    python bench/run.py --sizes 1000000 --vs 1000 --deliveries exactly_once --only '=kplex exactly_once' \
        --spark 3.5.7,4.0.1,4.1.1,4.2.0,4.3.0  # the kplex rows on each Spark line

One command sets everything up: the kplex jars (built with gradle if missing,
then snapshotted so a rebuild elsewhere cannot change a run midway), Spark's
Kafka connector (resolved with Maven into ``.cache/``), a local Kafka broker
(kplex.testing.local_kafka) and, per size, one source topic of ~150-byte pageviews
(bench/source.py). Every contender then reads that topic (or, for the ceiling,
writes as many records of the same size) into a fresh topic, in its own process:

==========================  =========================================================
ceiling                     Kafka's ProducerPerformance, kplex's producer settings
ceiling (kplex's records)   the same payloads sent as kplex's writer sends them: key,
                            its two headers, placement, one transaction (not in --smoke)
spark-sink                  Spark's Kafka source + sink, same rows, partition, headers
                            and per-vp sort as kplex (producer defaults)
spark-sink (kplex conf)     the same with kplex's producer settings (not in --smoke)
python                      a hand-written confluent-kafka consume/re-produce loop
kplex at_least_once, V=..   INSERT INTO ... SELECT, 'kplex.delivery'='at_least_once'
kplex exactly_once, V=..    the same, exactly once (the default)
==========================  =========================================================

With ``--spark 3.5.7,4.1.1,...`` every kplex row runs once per listed pyspark, each in a
Python of its own (the installed one for its own pyspark, else the virtual environment of
``scripts/test_spark_version.sh VERSION --prepare``), named ``..., Spark VERSION``; the
others run once, on the installed pyspark. The targets then add each line's rate over the
installed pyspark's.

kplex's sessions map a JVM class archive (kplex.class_archive), kept in the work dir:
before the timed runs, each Spark line's first kplex contender runs once, untimed, on
20,000 records, and writes it, as a machine's first kplex session does for the later
ones. ``KPLEX_CLASS_ARCHIVE=off`` measures without one.

Each row gets records/s and MiB/s (value bytes over the job's own time), the
job and wall times, the peak memory of the contender's process tree (sampled
from /proc; the Spark driver JVM is also the executor in local mode) and of the
broker, Spark's spill, and the output's G1-G5 checks (bench/check.py). The
tables and the target ratios go to bench/RESULTS.md, with the machine and how
loaded it was.
"""
from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import shlex
import signal
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from kplex.errors import UnsupportedError
from kplex.session import check_spark_version
from kplex.testing.local_kafka import LocalKafka, kafka_libs

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "contenders"))  # common.py, shared with the contender scripts

import check  # noqa: E402
import jfr_summary  # noqa: E402
import procmon  # noqa: E402
import source as sourcegen  # noqa: E402
from cases import PARSE_VARIANTS, Contender, contenders, on_spark_lines  # noqa: E402
from prepare import broker_pid, connector_jars, kplex_snapshot, machine, say, spark_lines  # noqa: E402
from report import Meta, render, write_results  # noqa: E402
from runner import Bench, Row, round_order  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--smoke", action="store_true",
                   help="20k records, V=9, each contender once; exit 0 when all ran and their checks pass")
    p.add_argument("--sizes", default="1000000,10000000", help="records per run, comma-separated")
    p.add_argument("--vs", default="3,9,96,1000", help="kplex virtual partition counts")
    p.add_argument("--deliveries", default="at_least_once,exactly_once")
    p.add_argument("--only", default="", help="run only contenders whose name contains one of these (comma-separated; =NAME: exactly)")
    p.add_argument("--large-vs", default="", help="kplex V values for sizes above 1M (default: --vs)")
    p.add_argument("--large-only", default="", help="--only for sizes above 1M (default: --only)")
    p.add_argument("--reference-v", type=int, default=9, help="V of the non-kplex contenders")
    p.add_argument("--repeat", type=int, default=1,
                   help="runs of every contender; the table shows the median run and the spread")
    p.add_argument("--large-repeat", type=int, default=0, help="--repeat for sizes above 1M (default: --repeat)")
    p.add_argument("--repeat-only", default="",
                   help="repeat only the contenders these select (as --only); the others run once")
    p.add_argument("--spark", default="", metavar="VERSIONS",
                   help="run the kplex contenders on each of these pyspark versions (comma-separated, e.g. "
                        "3.5.7,4.0.1,4.1.1,4.2.0,4.3.0), each in its own virtual environment "
                        "(scripts/test_spark_version.sh VERSION --prepare); default: the installed pyspark only")
    p.add_argument("--partitions", type=int, default=3, help="P, of the source and of every output")
    p.add_argument("--users", type=int, default=100_000)
    p.add_argument("--memory", default="1g", help="spark.driver.memory of every Spark contender")
    p.add_argument("--full-check-up-to", type=int, default=200_000)
    p.add_argument("--timeout", type=float, default=3600, help="seconds per contender")
    p.add_argument("--workdir", type=Path, help="logs, broker data (default: a new dir in /tmp)")
    p.add_argument("--out", type=Path, help="results file (default bench/RESULTS.md; with --smoke, in the workdir)")
    p.add_argument("--keep-topics", action="store_true")
    p.add_argument("--uncompressed", action="store_true",
                   help="add kplex runs (V=reference) with compression.type=none instead of kplex's lz4 default")
    p.add_argument("--warm", action="store_true",
                   help="add kplex runs (V=reference) timed as the second INSERT of their session")
    p.add_argument("--parse-variants", default="",
                   help="add kplex runs (V=reference) whose query reads the JSON with Spark's own functions "
                        f"instead of kplex_json: comma-separated, of {','.join(PARSE_VARIANTS)}")
    p.add_argument("--render", type=Path, metavar="RESULTS.json",
                   help="only rewrite the Markdown of an earlier run from its JSON")
    p.add_argument("--profile", action="store_true",
                   help="also record one kplex exactly-once run (largest size, V=reference) with JFR "
                        "into bench/PROFILE.md")
    args = p.parse_args(argv)
    args.parse_variants = tuple(v for v in args.parse_variants.split(",") if v)
    unknown = set(args.parse_variants) - set(PARSE_VARIANTS)
    if unknown:
        p.error(f"--parse-variants: unknown {sorted(unknown)}; choose from {','.join(PARSE_VARIANTS)}")
    args.spark = list(dict.fromkeys(v.strip() for v in args.spark.split(",") if v.strip()))
    for version in args.spark:
        try:
            check_spark_version(version)
        except UnsupportedError as e:
            p.error(f"--spark {version}: {e}")
    if args.smoke:
        args.sizes, args.vs, args.deliveries = "20000", str(args.reference_v), "at_least_once,exactly_once"
        args.users = min(args.users, 2000)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.render:
        return render(args.render, args.out)
    # A plain SIGTERM would skip the clean-up that stops the broker.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    command = "python bench/run.py " + shlex.join(argv if argv is not None else sys.argv[1:])
    started = dt.datetime.now(dt.timezone.utc)
    load_start = procmon.loadavg()
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="kplex-bench-"))).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    out = args.out or (workdir / "RESULTS-smoke.md" if args.smoke else BENCH / "RESULTS.md")
    say(f"work dir {workdir}")
    python_path = kplex_snapshot(workdir)
    jar_shas = {jar.name: hashlib.sha256(jar.read_bytes()).hexdigest()
                for jar in sorted((python_path / "kplex" / "jars").glob("*.jar"))}
    lines = spark_lines(args.spark)
    import pyspark
    jars = ",".join(connector_jars(pyspark.__version__))  # kplex's kafka-clients is relocated: no clash
    libs = kafka_libs()
    info = machine()
    sizes = [int(s) for s in args.sizes.split(",") if s]
    vs = [int(v) for v in args.vs.split(",") if v]
    deliveries = [d for d in args.deliveries.split(",") if d]
    rows: list[Row] = []
    sources: list[sourcegen.Source] = []
    archived: set[str] = set()  # the Spark lines whose class archive is written
    warmup: sourcegen.Source | None = None
    with LocalKafka(brokers=1, workdir=workdir / "broker") as cluster:
        bench = Bench(args, workdir, cluster.bootstrap, broker_pid(cluster), python_path)
        args.class_archive = (
            "*kplex* sessions map their JVM's class archive (`kplex.class_archive`), written before the timed "
            f"runs by an untimed run of each Spark line's first kplex contender on {WARMUP_RECORDS:,} records, as a "
            "machine's first kplex session writes it for the later ones; `KPLEX_CLASS_ARCHIVE=off` measures "
            "without it." if bench.class_archives else
            "*kplex* sessions ran without a JVM class archive (`KPLEX_CLASS_ARCHIVE=off`).")
        for size in sizes:
            say(f"generating the {size:,}-record source")
            src = sourcegen.make_source(cluster.bootstrap, f"pageviews_{size}", size,
                                        partitions=args.partitions, users=args.users)
            sources.append(src)
            say(f"  {src.records:,} records of {src.mean_value_bytes:.1f} bytes in {src.seconds:.0f} s")
            fingerprint = (check.source_fingerprint(cluster.bootstrap, src.topic)
                           if size > args.full_check_up_to else None)
            large = size > 1_000_000
            size_vs = [int(v) for v in args.large_vs.split(",") if v] if large and args.large_vs else vs
            only = args.large_only if large and args.large_only else args.only
            chosen = on_spark_lines(
                [c for c in contenders(size_vs, deliveries, args.reference_v, args.smoke, jars,
                                       args.parse_variants, args.uncompressed, args.warm, libs)
                 if not only or any(_selects(o, c.name) for o in only.split(",") if o)], lines)
            if bench.class_archives and any(c.kplex_table and c.python not in archived for c in chosen):
                warmup = warmup or sourcegen.make_source(cluster.bootstrap, "pageviews_warmup", WARMUP_RECORDS,
                                                         partitions=args.partitions, users=args.users)
                archived |= set(bench.write_class_archives([c for c in chosen if c.python not in archived], warmup))
            # Repeats go round the contenders (all once, then all again), so that a
            # slow spell of the machine does not land on one contender's every run, and every
            # other round the other way round, so that a machine slowing (or warming) through
            # the run does not favour the contenders that come first in every round.
            repeats = args.large_repeat if large and args.large_repeat else args.repeat
            runs: list[list[Row]] = [[] for _ in chosen]
            for repeat in range(repeats):
                for i, c in round_order(chosen, repeat):
                    if repeat and not all(r.passed for r in runs[i]):
                        continue  # a failed contender is reported as it failed, not rerun
                    if repeat and args.repeat_only and not any(
                            _selects(o, c.name) for o in args.repeat_only.split(",") if o):
                        continue
                    runs[i].append(bench.run_one(c, size, src, fingerprint))
                    done = [median_run(r) for r in runs if r]
                    write_results(out, rows + done, meta(args, command, started, info, load_start, jar_shas, sources))
            rows += [median_run(r) for r in runs if r]
            if args.profile and size == max(sizes):
                run_profile(bench, src, args, workdir)
        del bench.admin  # before the broker stops, or librdkafka logs the disconnect
    write_results(out, rows, meta(args, command, started, info, load_start, jar_shas, sources))
    print(out.read_text())
    say(f"results in {out}")
    failed = [r for r in rows if not r.passed]
    for r in failed:
        say(f"FAILED: {r.size:,} {r.label} V={r.v}: {'; '.join(r.examples)}")
    return 1 if failed or not rows else 0


#: The records of the untimed run that writes a Spark line's JVM class archive (Bench.write_class_archives).
WARMUP_RECORDS = 20_000


def meta(args: argparse.Namespace, command: str, started: dt.datetime, info: dict[str, str],
         load_start: float, jar_shas: dict[str, str], sources: list[sourcegen.Source]) -> Meta:
    return Meta(command=command, started=started.isoformat(),
                finished=dt.datetime.now(dt.timezone.utc).isoformat(), info=info, load_start=load_start,
                load_end=procmon.loadavg(), jar_sha=jar_shas.get("kplex-spark.jar", ""), jar_shas=jar_shas,
                sources=[asdict(s) for s in sources],
                partitions=args.partitions, users=args.users, memory=args.memory,
                reference_v=args.reference_v, full_check_up_to=args.full_check_up_to,
                class_archive=getattr(args, "class_archive", ""))


def median_run(runs: list[Row]) -> Row:
    """The run that stands for a contender: a failed one if any failed, else the one with
    the median records/s (the lower middle of an even count); ``runs`` lists them all."""
    failed = [r for r in runs if not r.passed]
    row = failed[0] if failed else sorted(runs, key=lambda r: r.records_per_s)[(len(runs) - 1) // 2]
    row.runs = [r.records_per_s for r in runs if r.ok_run]
    return row


def _selects(token: str, name: str) -> bool:
    """``--only`` matching: a substring of the name, or the exact name after ``=``."""
    return name == token[1:] if token.startswith("=") else token in name


def run_profile(bench: Bench, src: sourcegen.Source, args: argparse.Namespace, workdir: Path) -> None:
    recording = workdir / "kplex.jfr"
    c = Contender("kplex exactly_once (JFR)", "kplex_insert.py", v=args.reference_v, delivery="exactly_once",
                  args=["--delivery", "exactly_once", "--jfr", str(recording)], claims=(), kplex_table=True,
                  checked=False, verify="none")
    row = bench.run_one(c, src.records, src, None)
    if not recording.is_file():
        say("the JFR recording was not written")
        return
    window = (row.result["job_start_epoch"], row.result["job_end_epoch"]) if row.ok_run else None
    text = jfr_summary.report(jfr_summary.read_samples(recording, window=window))
    (BENCH / "PROFILE.md").write_text(
        "# Where a kplex write spends its time\n\n"
        f"`python bench/run.py --profile`: one kplex INSERT (exactly once, V={args.reference_v}, "
        f"P={args.partitions}) of {src.records:,} records, `local[2]`, driver memory {args.memory}, recorded "
        "with Java Flight Recorder (`-XX:StartFlightRecording=settings=profile`); only the samples taken "
        "while the INSERT ran (not the JVM and session start-up) are counted. "
        f"Job {row.job_s:.1f} s ({row.records_per_s:,.0f} records/s with the recorder on), load {row.load:.1f}. "
        "Aggregated by bench/jfr_summary.py from `jfr print --events jdk.ExecutionSample`.\n\n" + text + "\n")
    say(f"profile in {BENCH / 'PROFILE.md'} (recording {recording})")


if __name__ == "__main__":
    sys.exit(main())
