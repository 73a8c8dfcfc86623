"""What exactly once costs beyond at least once, phase by phase (issue #37):
`python bench/eo_phases.py`.

Starts a local broker, writes `--records` pageviews, then runs the same 3M-record INSERT
(`bench/contenders/kplex_insert.py`, V = 9, each in a fresh JVM as a `spark-submit` does) at least
once and exactly once, `--rounds` times, every other round in the other order; with `--base REV`,
also exactly once with the plugin built from that git revision (a worktree under the work dir),
so that a change to the commit is measured beside the code before it on the same machine in the
same minutes. Each run's INSERT is split into phases from its Spark event log
(`eventlog_stages.insert_phases`: before the first job, the map stage, between the stages, the
write stage, after the last job: the commit on the driver). Prints, per contender, the median of
each phase and every run's figures, to stdout and `--out`. The phases after the last job are
what exactly once adds on its own; the stages move by a second between runs of the same code.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import uuid
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path[:0] = [str(REPO / "python"), str(BENCH), str(BENCH / "contenders")]

import source as sourcegen  # noqa: E402
from common import RESULT_PREFIX, positive  # noqa: E402
from eventlog_stages import PHASES, insert_phases  # noqa: E402
from prepare import kplex_snapshot, say  # noqa: E402
from runner import round_order  # noqa: E402

from kplex.testing.local_kafka import LocalKafka  # noqa: E402


def base_snapshot(rev: str, workdir: Path) -> Path:
    """The kplex package with the plugin jars built from git revision ``rev``."""
    tree = workdir / f"base-{rev}"
    if tree.exists():
        subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=REPO, check=True,
                   stdout=subprocess.DEVNULL)
    say(f"building the plugin of {rev}")
    subprocess.run(["gradle", "-q", "--offline", "bundleJars"], cwd=tree, check=True)
    target = workdir / "pkg-base"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(tree / "python" / "kplex", target / "kplex", ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO, check=False)
    return target


def run_insert(bootstrap: str, source: str, records: int, delivery: str, python_path: Path,
               workdir: Path) -> dict[str, float]:
    """One INSERT in a fresh JVM: its phases (ms) and job seconds."""
    target = f"eo_phases_{delivery}_{uuid.uuid4().hex[:8]}"
    env = {**os.environ, "KPLEX_PYTHON": str(python_path), "PYTHONUNBUFFERED": "1"}
    out = subprocess.run([sys.executable, str(BENCH / "contenders" / "kplex_insert.py"), "--bootstrap", bootstrap,
                          "--source", source, "--target", target, "--records", str(records),
                          "--delivery", delivery, "--workdir", str(workdir)],
                         env=env, cwd=workdir, capture_output=True, text=True)
    lines = [line for line in out.stdout.splitlines() if line.startswith(RESULT_PREFIX)]
    if out.returncode or not lines:
        raise SystemExit(f"{delivery} INSERT failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
    result = json.loads(lines[-1][len(RESULT_PREFIX):])
    logs = sorted(p for p in (workdir / f"eventlog-kplex-{target}").rglob("*")
                  if p.is_file() and not p.name.startswith("appstatus"))
    phases = insert_phases(logs[-1].read_text().splitlines())
    if phases is None:
        raise SystemExit(f"no INSERT in the event log {logs[-1]}")
    return {**phases, "job s": result["job_s"]}


def table(runs: dict[str, list[dict[str, float]]]) -> list[str]:
    head = "| contender | " + " | ".join(f"{p}, ms" for p in PHASES) + " | runs: after the last job, ms | runs: total, ms |"
    lines = [head, "|" + " --- |" * (len(PHASES) + 3)]
    for name, rs in runs.items():
        medians = [f"{statistics.median(r[p] for r in rs):,.0f}" for p in PHASES]
        each = [" / ".join(f"{r[p]:,.0f}" for r in rs) for p in ("after the last job", "total")]
        lines.append(f"| {name} | " + " | ".join(medians) + " | " + " | ".join(each) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=positive, default=3_000_000)
    p.add_argument("--rounds", type=positive, default=4)
    p.add_argument("--base", help="a git revision: also run exactly once with the plugin built from it")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/kplex-eo-phases"))
    p.add_argument("--out", type=Path, default=BENCH / "RESULTS-eo-phases.md")
    args = p.parse_args(argv)
    workdir = args.workdir.resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    current = kplex_snapshot(workdir)
    packages = {"at least once": ("at_least_once", current), "exactly once": ("exactly_once", current)}
    if args.base:
        packages[f"exactly once, {args.base}"] = ("exactly_once", base_snapshot(args.base, workdir))
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in packages}
    with LocalKafka(brokers=1, workdir=workdir / "broker") as cluster:
        src = sourcegen.make_source(cluster.bootstrap, "pageviews_eo_phases", args.records)
        for r in range(args.rounds):
            for _, name in round_order(list(packages), r):
                delivery, python_path = packages[name]
                phases = run_insert(cluster.bootstrap, src.topic, args.records, delivery, python_path, workdir)
                say(f"round {r + 1}, {name}: {phases['total']:,.0f} ms, after the last job "
                    f"{phases['after the last job']:,.0f} ms")
                runs[name].append(phases)
    command = "python bench/eo_phases.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = "\n".join([f"# Exactly once beyond at least once, phase by phase\n\n`{command}`, "
                      f"{args.records:,} records, V = 9, {args.rounds} rounds, medians:\n", *table(runs), ""])
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
