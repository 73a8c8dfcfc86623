"""Read-time tables: what a read costs as V grows, next to a plain scan and the INSERT.

    python bench/readtime/run.py                  # 200,000 records, 4 partitions, 3 rounds
    python bench/readtime/run.py --smoke          # 20,000 records, 1 round

One Spark session (local[2], as users start one), one local broker (or KPLEX_BOOTSTRAP),
one source topic of generated pageviews (out of order by up to 3 s). Contenders, timed
in rounds (every contender once per round, after one untimed warm-up round), median
reported:

- plain scan: ``SELECT count(*) FROM kplex.<source>``;
- read-time table, V in {9, 96, 1000}: ``SELECT count(*)`` and a full read (every row
  through the plan: scan, shuffle by virtual partition, sort; counted in the JVM);
- INSERT of the same definition into a kplex table (V = 12, P = 4): read, shuffle, sort,
  write exactly once;
- ``SELECT count(*)`` of the table the first INSERT wrote: one task per virtual partition,
  each reading its physical partition up to the last transaction marker.

Prints a table and the target ratios, and writes bench/readtime/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEY = 'get_json_object(CAST(value AS STRING), "$.userid")'
ORDER = 'CAST(get_json_object(CAST(value AS STRING), "$.viewtime") AS BIGINT)'
INSERT = """INSERT INTO kplex.{target}
SELECT kplex_key(get_json_object(CAST(value AS STRING), '$.userid')),
       kplex_order(CAST(get_json_object(CAST(value AS STRING), '$.viewtime') AS BIGINT)), value
FROM kplex.{source}"""
VS = (9, 96, 1000)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="20,000 records, one round; exit 0 if all ran")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args(argv)
    if args.smoke:
        args.records, args.rounds = 20_000, 1
    if os.environ.get("KPLEX_BOOTSTRAP"):
        return run(os.environ["KPLEX_BOOTSTRAP"], args)
    from kplex.testing.local_kafka import LocalKafka

    with LocalKafka(brokers=1) as cluster:
        return run(cluster.bootstrap, args)


def run(bootstrap: str, args: argparse.Namespace) -> int:
    from kplex import kplex_session
    from kplex.session import read_metrics
    from kplex.testing import datagen

    run_id = uuid.uuid4().hex[:6]
    source = f"bench_rt_source_{run_id}"
    print(f"bench: {args.records:,} pageviews into {source} ({args.partitions} partitions)", file=sys.stderr)
    datagen.generate_pageviews(bootstrap, source, args.records, partitions=args.partitions, users=1000,
                               seed=5, out_of_order_ms=3_000)
    spark = kplex_session(bootstrap, master="local[2]", app_name="kplex-bench-readtime",
                          conf={"spark.driver.memory": "2g", "spark.ui.enabled": "false"})
    spark.sparkContext.setLogLevel("ERROR")
    for v in VS:
        spark.sql(f"CREATE TABLE kplex.bench_rt_v{v}_{run_id} TBLPROPERTIES ('kplex.source' = '{source}',"
                  f" 'kplex.virtual_partitions' = '{v}', 'kplex.key' = '{KEY}', 'kplex.order' = '{ORDER}',"
                  " 'kplex.max_delay_ms' = '3000')")
    inserts = []

    def insert() -> None:
        target = f"bench_rt_insert_{run_id}_{len(inserts)}"
        inserts.append(target)
        spark.sql(f"CREATE TABLE kplex.{target} TBLPROPERTIES ('kplex.virtual_partitions' = '12',"
                  f" 'kplex.physical_partitions' = '{args.partitions}')")
        spark.sql(INSERT.format(target=target, source=source))

    reads: dict[str, int] = {}

    def count(table: str, name: str):
        def go() -> None:
            df = spark.table(f"kplex.{table}")
            n = df.count()
            assert n == args.records, f"{name}: {n} rows, not {args.records}"
        return go

    def full(table: str, name: str):
        def go() -> None:
            df = spark.table(f"kplex.{table}")
            n = df._jdf.queryExecution().toRdd().count()  # every row through the plan, in the JVM
            assert n == args.records, f"{name}: {n} rows, not {args.records}"
            reads[name] = read_metrics(df).get("kplexRecordsRead", -1)
        return go

    contenders = [("plain scan: count(*)", count(source, "scan"))]
    for v in VS:
        contenders.append((f"read-time V={v}: count(*)", count(f"bench_rt_v{v}_{run_id}", f"V={v}")))
        contenders.append((f"read-time V={v}: full read", full(f"bench_rt_v{v}_{run_id}", f"V={v} full")))
    contenders.append(("INSERT (V=12, exactly once)", insert))

    def written() -> None:  # the first INSERT's table: each virtual partition read off its physical one
        n = spark.table(f"kplex.{inserts[0]}").count()
        assert n == args.records, f"the INSERT's table: {n} rows, not {args.records}"

    contenders.append(("kplex table the INSERT wrote (V=12): count(*)", written))

    times: dict[str, list[float]] = {name: [] for name, _ in contenders}
    for rnd in range(args.rounds + 1):  # round 0 warms the JVM up, untimed
        for name, go in contenders:
            start = time.perf_counter()
            go()
            if rnd > 0:
                times[name].append(time.perf_counter() - start)
        print(f"bench: round {rnd} done" + (" (warm-up)" if rnd == 0 else ""), file=sys.stderr)
    spark.stop()

    med = {name: statistics.median(ts) for name, ts in times.items()}
    lines = [
        "# Read-time tables: one read of the source, whatever V",
        "",
        f"`python bench/readtime/run.py{' --smoke' if args.smoke else ''}` on {time.strftime('%Y-%m-%d')},"
        f" {platform.machine()}, {os.cpu_count()} cores, local[2]: {args.records:,} pageviews on"
        f" {args.partitions} partitions, out of order by up to 3 s (`kplex.max_delay_ms` = 3000)."
        f" Median of {args.rounds} round(s) after a warm-up round, all in one Spark session.",
        "",
        "| read | median s | runs (s) | source records read |",
        "| --- | ---: | --- | ---: |",
    ]
    for name, _ in contenders:
        read = reads.get(name.split(": ")[0].replace("read-time ", "") + " full", "") if "full" in name else ""
        runs = ", ".join(f"{t:.2f}" for t in times[name])
        lines.append(f"| {name} | {med[name]:.2f} | {runs} | {f'{read:,}' if read != '' else ''} |")
    v9, v1000 = med["read-time V=9: count(*)"], med["read-time V=1000: count(*)"]
    f9, f1000 = med["read-time V=9: full read"], med["read-time V=1000: full read"]
    ins = med["INSERT (V=12, exactly once)"]
    lines += [
        "",
        "| target | ratio | met |",
        "| --- | ---: | --- |",
        f"| V=1000 within 1.3x of V=9 (count) | {v1000 / v9:.2f}x | {'yes' if v1000 <= 1.3 * v9 else 'no'} |",
        f"| V=1000 within 1.3x of V=9 (full read) | {f1000 / f9:.2f}x | {'yes' if f1000 <= 1.3 * f9 else 'no'} |",
        f"| V=9 within 1.5x of the INSERT (count) | {v9 / ins:.2f}x | {'yes' if v9 <= 1.5 * ins else 'no'} |",
        f"| V=9 within 1.5x of the INSERT (full read) | {f9 / ins:.2f}x | {'yes' if f9 <= 1.5 * ins else 'no'} |",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.smoke:
        args.out.write_text(text)
        print(f"bench: wrote {args.out}", file=sys.stderr)
    ok = all(r == args.records for r in reads.values())
    if not ok:
        print(f"bench: a read-time read did not read each source record once: {reads}", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
