"""What the streaming benchmark's harness costs the machine it measures on: the CPU of its
live producer alone, and of the producer beside the output watcher, at the live phase's rate,
on a local broker (or ``KPLEX_BOOTSTRAP``) with no contender running. Prints a table.

    python bench/streaming/harness_cost.py                       # 44,146 records/s for 20 s
    python bench/streaming/harness_cost.py --watch /tmp/watch.py # another watch.py beside this one

The watcher reads the producer's own topic (no contender in between), so its p50 is the
harness's floor: the producer's batching, the broker, the watcher's stamping. ``--watch``
runs a second copy of the measurement with another version of ``watch.py`` (say, an older
commit's: ``git show b22b33a:bench/streaming/watch.py > /tmp/watch.py``), round after round.
"""
from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import time
import uuid
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).resolve().parent

from kplex.testing.datagen import ensure_topic  # noqa: E402
from kplex.testing.local_kafka import LocalKafka  # noqa: E402


def load_watch(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def new_topic(bootstrap: str, stem: str) -> str:
    name = f"{stem}_{uuid.uuid4().hex[:8]}"
    ensure_topic(bootstrap, name, 3)
    return name


def producer_alone(watch: ModuleType, bootstrap: str, rate: float, seconds: float) -> float:
    """The process's CPU share (% of one core) while the producer runs alone."""
    producer = watch.RateProducer(bootstrap, new_topic(bootstrap, "harness_cost_p"), rate, seconds)
    cpu, wall = time.process_time(), time.monotonic()
    producer.start()
    producer.join()
    if producer.error is not None:
        raise producer.error
    return 100 * (time.process_time() - cpu) / (time.monotonic() - wall)


def with_watcher(watch: ModuleType, bootstrap: str, rate: float, seconds: float) -> tuple[float, float, float]:
    """CPU share with the watcher reading the producer's topic until it saw every record; the
    seconds its stop took (checks done then); the p50 from produce to seen, ms."""
    topic = new_topic(bootstrap, "harness_cost_w")
    watcher = watch.OutputWatcher(bootstrap, topic, 0)
    watcher.start()
    time.sleep(2)  # assigned and polling
    producer = watch.RateProducer(bootstrap, topic, rate, seconds)
    cpu, wall = time.process_time(), time.monotonic()
    producer.start()
    producer.join()
    while watcher.snapshot()[1] < producer.produced and watcher.is_alive():
        time.sleep(0.02)
    share = 100 * (time.process_time() - cpu) / (time.monotonic() - wall)
    stopping = time.monotonic()
    watcher.stop(quiet_s=0.2)
    stop_s = time.monotonic() - stopping
    if producer.error is not None or watcher.error is not None:
        raise producer.error or watcher.error
    latencies = sorted(watcher.observed.latencies_ms)
    return share, stop_s, latencies[len(latencies) // 2]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=44_146.0, help="records/s (default: the 2026-12-01 run's live rate)")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--watch", type=Path, help="another watch.py to measure beside this one")
    args = p.parse_args(argv)
    versions = [("this watch.py", load_watch(HERE / "watch.py", "watch_now"))]
    if args.watch:
        versions.append((str(args.watch), load_watch(args.watch, "watch_other")))
    with contextlib.ExitStack() as stack:
        bootstrap = os.environ.get("KPLEX_BOOTSTRAP") or stack.enter_context(LocalKafka(brokers=1)).bootstrap
        rows = []
        for round_no in range(1, args.rounds + 1):
            for label, watch in versions:
                alone = producer_alone(watch, bootstrap, args.rate, args.seconds)
                both, stop_s, p50 = with_watcher(watch, bootstrap, args.rate, args.seconds)
                rows.append(f"| {label} | {round_no} | {alone:.0f} | {both:.0f} | {stop_s:.1f} | {p50:.0f} |")
                print(rows[-1], file=sys.stderr)
    print(f"Harness cost at {args.rate:,.0f} records/s for {args.seconds:.0f} s"
          f" (`python bench/streaming/harness_cost.py {' '.join(argv if argv is not None else sys.argv[1:])}`):\n")
    print("| harness | round | producer alone, % of a core | producer and watcher, % of a core"
          " | watcher's stop s | p50 produce to seen ms |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
