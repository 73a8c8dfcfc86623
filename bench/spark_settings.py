"""Settings kplex could pick for a local session, tried on a fresh JVM's exactly-once INSERT
(bench/contenders/kplex_insert.py): alternating single runs, each in its own process with the
setting given as spark-submit arguments (PYSPARK_SUBMIT_ARGS), beside runs with kplex's own
settings. Prints a table of medians, each as a ratio to kplex's own, and every run.

    python bench/spark_settings.py --records 3000000 --rounds 3     # its own broker and source
    python bench/spark_settings.py --bootstrap B --source S --records N \\
        --setting 'no shuffle compression=--conf spark.shuffle.compress=false'
    python bench/spark_settings.py ... --setting 'JDK 25=JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64' \\
        --setting 'JDK 25, AOT cache=JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64 KPLEX_CLASS_ARCHIVE=off
                   --driver-java-options -XX:AOTCache=/tmp/kplex.aot'

A setting's leading NAME=VALUE words are the process's environment (another JDK by JAVA_HOME,
say), the rest its spark-submit arguments. Each setting's first run is untimed: it writes the
JVM class archive its JVM options map (kplex.class_archive keys archives by them), as a
machine's first session does; for a setting that maps a JDK 25 AOT cache (``-XX:AOTCache=F``,
JEP 483 and 515: classes loaded and linked, and the methods' profiles), that run trains it
(``-XX:AOTCacheOutput=F``) instead.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH / "contenders"))  # common.py, shared with the contender scripts

from common import parse_result, positive  # noqa: E402

from kplex.class_archive import ENV  # noqa: E402

KPLEX = "kplex's own"
# What was tried for issue #37 (docs/performance.md): less CPU per record in the shuffle, or
# in the JIT compiler, which a fresh JVM's INSERT spends a quarter of its CPU in.
SETTINGS = {
    "no shuffle compression": "--conf spark.shuffle.compress=false --conf spark.shuffle.spill.compress=false",
    "shuffle partitions = V": "--conf spark.sql.shuffle.partitions=9",
    "no bypass-merge shuffle writer": "--conf spark.shuffle.sort.bypassMergeThreshold=0",
    "C1 compiler only": "--driver-java-options -XX:TieredStopAtLevel=1",
    "JIT thresholds x2": "--driver-java-options -XX:CompileThresholdScaling=2",
    "JIT thresholds x0.5": "--driver-java-options -XX:CompileThresholdScaling=0.5",
}


@dataclass(frozen=True)
class Run:
    """One process's times: launch to the INSERT's start (imports, the JVM, the session, CREATE
    TABLE: where a setting that moves work to the JVM's start shows), the INSERT, launch to exit."""

    before_s: float
    insert_s: float
    process_s: float


_ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=\S*")
_AOT_CACHE = re.compile(r"-XX:AOTCache=")


def split_setting(text: str) -> tuple[dict[str, str], str]:
    """A setting's environment (its leading NAME=VALUE words) and its spark-submit arguments.

    >>> split_setting("JAVA_HOME=/jdk25 KPLEX_CLASS_ARCHIVE=off --driver-java-options -Xms1g")
    ({'JAVA_HOME': '/jdk25', 'KPLEX_CLASS_ARCHIVE': 'off'}, '--driver-java-options -Xms1g')
    >>> split_setting("--conf spark.x=y")
    ({}, '--conf spark.x=y')
    """
    words = text.split()
    env: dict[str, str] = {}
    while words and _ENV_WORD.fullmatch(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    return env, " ".join(words)


def training(text: str) -> str:
    """The setting for its untimed first run: one that maps a JDK AOT cache writes it instead.

    >>> training("JAVA_HOME=/jdk25 --driver-java-options -XX:AOTCache=/tmp/a.aot")
    'JAVA_HOME=/jdk25 --driver-java-options -XX:AOTCacheOutput=/tmp/a.aot'
    """
    return _AOT_CACHE.sub("-XX:AOTCacheOutput=", text)


def one(args: argparse.Namespace, bootstrap: str, text: str) -> Run:
    # An archive directory per setting: kplex keeps the three archives last used in a directory,
    # so four settings sharing one would each evict another's and write theirs in every run.
    archives = args.workdir / "class-archives" / hashlib.sha256(training(text).encode()).hexdigest()[:12]
    setting_env, submit_args = split_setting(text)
    env = {**os.environ, ENV: str(archives), **setting_env,
           "PYSPARK_SUBMIT_ARGS": f"{submit_args} pyspark-shell".strip()}
    command = [sys.executable, str(BENCH / "contenders" / "kplex_insert.py"), "--bootstrap", bootstrap,
               "--source", args.source, "--target", f"settings_{uuid.uuid4().hex[:8]}", "--records",
               str(args.records), "--v", "9", "--delivery", "exactly_once", "--workdir", str(args.workdir)]
    launched = time.time()
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=1800)
    process_s = time.time() - launched
    result = parse_result(done.stdout)
    if done.returncode != 0 or result is None:
        sys.exit(f"the INSERT with {text or KPLEX!r} failed (exit {done.returncode}):\n{done.stderr[-2000:]}")
    return Run(float(result["job_start_epoch"]) - launched, float(result["job_s"]), process_s)


def setting(text: str) -> tuple[str, str]:
    """One --setting: NAME=SPARK-SUBMIT ARGS, both parts non-empty."""
    name, sep, submit_args = (" ".join(part.split()) for part in text.partition("="))
    if not sep or not name or not submit_args:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=[ENV=VALUE ...] SPARK-SUBMIT ARGS (e.g. 'no shuffle compression=--conf spark.shuffle.compress=false')")
    if name == KPLEX:
        raise argparse.ArgumentTypeError(f"{name!r} names the runs with kplex's own settings; pick another name")
    return name, submit_args


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bootstrap", default=os.environ.get("KPLEX_BOOTSTRAP"),
                   help="a broker (default: $KPLEX_BOOTSTRAP, else a local one started here)")
    p.add_argument("--source", help="a topic of generated pageviews (default: one made here)")
    p.add_argument("--records", type=positive, default=3_000_000)
    p.add_argument("--rounds", type=positive, default=3)
    p.add_argument("--setting", type=setting, action="append", default=[],
                   metavar="NAME=[ENV=VALUE ...] SPARK-SUBMIT ARGS",
                   help="a setting to try (repeatable; default: the ones issue #37 tried); leading ENV=VALUE words"
                        " are its process's environment")
    p.add_argument("--workdir", type=Path)
    args = p.parse_args()
    args.workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="kplex-settings-"))).resolve()
    args.workdir.mkdir(parents=True, exist_ok=True)
    chosen = dict(args.setting) if args.setting else SETTINGS
    settings = {KPLEX: "", **chosen}
    with ExitStack() as stack:
        bootstrap = args.bootstrap
        if not bootstrap:
            from kplex.testing.local_kafka import LocalKafka

            bootstrap = stack.enter_context(LocalKafka(brokers=1, workdir=args.workdir / "broker")).bootstrap
        if not args.source:
            from source import make_source

            args.source = f"settings_source_{uuid.uuid4().hex[:8]}"
            print(f"generating {args.records:,} pageviews into {args.source}", file=sys.stderr)
            make_source(bootstrap, args.source, args.records)
        for name, submit_args in settings.items():
            print(f"untimed first run (writes its class archive or AOT cache): {name}", file=sys.stderr)
            one(args, bootstrap, training(submit_args))
        runs: dict[str, list[Run]] = {name: [] for name in settings}
        for round_ in range(args.rounds):
            for name, submit_args in settings.items():
                run = one(args, bootstrap, submit_args)
                runs[name].append(run)
                print(f"round {round_ + 1}: {name} INSERT {run.insert_s:.2f} s, before it {run.before_s:.2f} s, "
                      f"process {run.process_s:.2f} s", file=sys.stderr)
    print(table(runs, settings, args.records, args.rounds))


def table(runs: dict[str, list[Run]], settings: dict[str, str], records: int, rounds: int) -> str:
    """The medians of each setting's runs, the INSERT's and the whole process's each beside kplex's own."""
    base = {field: statistics.median(getattr(r, field) for r in runs[KPLEX]) for field in ("insert_s", "process_s")}
    lines = [f"{records:,} records, exactly once, V = 9; {rounds} alternating rounds; medians, s",
             "| setting | spark-submit arguments | INSERT | / kplex's own | launch to the INSERT | process "
             "| / kplex's own | INSERT, each run |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |"]
    for name, each in runs.items():
        insert, before, process = (statistics.median(getattr(r, f) for r in each)
                                   for f in ("insert_s", "before_s", "process_s"))
        lines.append(f"| {name} | {settings[name] or '–'} | {insert:.2f} | {insert / base['insert_s']:.2f}x | "
                     f"{before:.2f} | {process:.2f} | {process / base['process_s']:.2f}x | "
                     f"{', '.join(f'{r.insert_s:.2f}' for r in each)} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
