"""``kplex advise``: choose V and P from the data, with a table in the terminal and a chart.

    $ kplex advise pageviews --key /userid --order /viewtime --consumers 9 --chart sizing.png
    $ kplex advise pageviews --key /userid --sample 0 --json          # the whole topic, as JSON
    $ kplex advise clicks --since 1732500000000 --until 1732503600000 --candidates 12,24,48
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

from kplex.advise import Advice, Candidate, advise
from kplex.cli import at_least
from kplex.kafka import config as kafka_config

__all__ = ["register", "render", "draw_chart"]


def render(advice: Advice) -> str:
    """The advice as the terminal shows it: the source, the candidates, the hottest keys, the verdict."""
    lines = [f"topic {advice.topic}: {advice.records:,} records sampled over {advice.source_partitions} partitions,"
             f" {advice.distinct_keys:,} distinct keys",
             f"now: records per source partition {list(advice.per_source_partition)}"
             f" (busiest {advice.source_imbalance:.2f}x the mean)",
             "",
             f"{'V':>5} {'P':>4} {'vp max/mean':>12} {'empty vps':>10} {'busy consumers':>15} {'P max/mean':>11}"]
    best = advice.recommended
    for c in advice.candidates:
        mark = "  <- advised" if c is best else ""
        lines.append(f"{c.virtual_partitions:>5} {c.physical_partitions:>4} {c.vp_imbalance:>12.2f}"
                     f" {c.empty_virtual:>10} {c.busy_consumers:>15} {c.physical_imbalance:>11.2f}{mark}")
    lines += ["", "hottest keys:"]
    lines += [f"  {k.to_dict()['key']!r:<30} {k.records:>10,}  {k.share:7.2%}" for k in advice.hot_keys]
    d = advice.max_delay_ms
    lines += ["", "disorder (how far a record trails its partition's largest order value, ms): "
              + ", ".join(f"{name} {value:,}" for name, value in d.items()),
              f"partitions' largest order values at the end lie {advice.partition_spread_ms:,} ms apart", ""]
    lines += [f"advice: {r}" for r in advice.reasons]
    lines += [f"warning: {w}" for w in advice.warnings]
    return "\n".join(lines)


def require_chart(path: Path) -> None:
    """What ``--chart`` needs, checked before the topic is read: matplotlib, a ``.png`` or
    ``.svg`` name, a folder to write it in."""
    try:
        import matplotlib  # noqa: F401 - only whether it is there
    except ImportError as error:
        raise SystemExit("kplex advise --chart needs matplotlib: pip install 'kplex-spark[advise]'") from error
    if path.suffix.lower() not in (".png", ".svg"):
        raise SystemExit(f"kplex advise --chart: {path} must end in .png or .svg")
    if not path.parent.is_dir():
        raise SystemExit(f"kplex advise --chart: no folder {path.parent} to write {path.name} in")


def draw_chart(advice: Advice, path: Path) -> Path:
    """Load per partition now (source partitions) next to the advised virtual partitions,
    coloured by the physical partition each lands on; PNG or SVG by ``path``'s suffix."""
    require_chart(path)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    best: Candidate | None = advice.recommended
    fig, (now, proposed) = plt.subplots(1, 2, figsize=(12, 4.5), gridspec_kw={"width_ratios": [1, 2.5]})
    source = advice.per_source_partition
    now.bar(range(len(source)), source, color="#8c8c8c")
    now.axhline(sum(source) / max(1, len(source)), color="black", linestyle="--", linewidth=1, label="mean")
    now.set_title(f"now: {advice.topic}, {len(source)} partitions\nbusiest {advice.source_imbalance:.2f}x the mean")
    now.set_xticks(range(len(source)))
    now.set_xlabel("source partition")
    now.set_ylabel("records")
    now.legend(loc="lower right")
    if best is not None:
        colours = plt.get_cmap("tab10")
        per_vp = best.per_virtual
        proposed.bar(range(len(per_vp)), per_vp,
                     color=[colours(vp % best.physical_partitions % 10) for vp in range(len(per_vp))])
        proposed.axhline(sum(per_vp) / len(per_vp), color="black", linestyle="--", linewidth=1, label="mean")
        proposed.set_title(f"advised: V = {best.virtual_partitions}, P = {best.physical_partitions}"
                           f" (colour: physical partition)\nbusiest {best.vp_imbalance:.2f}x the mean,"
                           f" keeps {best.busy_consumers} consumers busy")
        proposed.set_xlabel("virtual partition")
        from matplotlib.patches import Patch

        shown = min(best.physical_partitions, 10)
        proposed.legend(handles=[Patch(color=colours(p), label=f"partition {p}") for p in range(shown)]
                        + proposed.get_legend_handles_labels()[0], loc="upper left", bbox_to_anchor=(1.0, 1.0),
                        fontsize="small")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


def _progress(enabled: bool) -> Callable[[int], Callable[[int], None]] | None:
    if not enabled:
        return None
    from tqdm import tqdm

    def start(total: int) -> Callable[[int], None]:
        bar = tqdm(total=total, unit="rec", unit_scale=True, desc="kplex advise: reading", file=sys.stderr,
                   disable=None, leave=False)
        return bar.update

    return start


def _candidates(text: str) -> tuple[int, ...]:
    """A ``--candidates`` value: V >= 1 separated by commas, else argparse's usage error naming it.

    >>> _candidates("6,9,12")
    (6, 9, 12)
    """
    try:
        candidates = tuple(int(v) for v in text.split(",") if v.strip())
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--candidates takes numbers separated by commas, got {text!r}") from error
    if any(v < 1 for v in candidates):
        raise argparse.ArgumentTypeError(f"every V of --candidates must be >= 1, got {text!r}")
    return candidates


def _advise(args: argparse.Namespace) -> int:
    if args.chart:
        require_chart(Path(args.chart))  # before a read that may take minutes
    bootstrap, settings = kafka_config.from_args(args)
    advice = advise(bootstrap, args.topic, key=args.key, order=args.order, sample=args.sample,
                    candidates=args.candidates or (), consumers=args.consumers, start_timestamp=args.since,
                    end_timestamp=args.until, top=args.top,
                    config=kafka_config.librdkafka(settings, kafka_config.settings_file(args.kafka_config))
                    if settings else None,
                    progress=_progress(not args.no_progress))
    if args.chart:
        draw_chart(advice, args.chart)
    if args.json:
        out: dict[str, Any] = advice.to_dict()
        out["chart"] = str(args.chart) if args.chart else None
        print(json.dumps(out, indent=2))
    else:
        print(render(advice))
        if args.chart:
            print(f"chart: {args.chart}")
    return 0


def register(subparsers: Any) -> None:
    """Add ``advise`` to the ``kplex`` command's sub-commands."""
    cmd = subparsers.add_parser(
        "advise", help="choose V and P from a topic's data (load, hot keys, disorder, a chart)",
        description="Sample a topic, evaluate its key and order as a table definition would, and report"
                    " for candidate V (with P dividing V) the load per virtual and physical partition, the"
                    " hottest keys, the consumers the data keeps busy, the max_delay_ms its disorder needs,"
                    " and a recommendation.")
    cmd.add_argument("topic", help="the source topic")
    kafka_config.add_arguments(cmd)
    cmd.add_argument("--key", default="key", help="key expression (Spark SQL) or JSON pointer, e.g. /userid"
                                                  " (default: the record's key)")
    cmd.add_argument("--order", default="timestamp", help="order expression or JSON pointer, e.g. /viewtime"
                                                          " (default: the record's timestamp)")
    cmd.add_argument("--sample", type=at_least(0), default=100_000,
                     help="read the last N records, shared over the partitions (0: all; default 100000)")
    cmd.add_argument("--since", type=int, metavar="MS", help="read from this timestamp (epoch ms) instead")
    cmd.add_argument("--until", type=int, metavar="MS", help="read up to this timestamp (epoch ms)")
    cmd.add_argument("--candidates", type=_candidates, help="V to try, e.g. 6,9,12 (default: 3 to 128)")
    cmd.add_argument("--consumers", type=at_least(1), help="how many consumers the derived topic should keep busy")
    cmd.add_argument("--top", type=int, default=10, help="how many hot keys to list")
    cmd.add_argument("--chart", type=Path, help="draw load per partition, now and advised (.png or .svg)")
    cmd.add_argument("--json", action="store_true", help="print the advice as JSON")
    cmd.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    cmd.set_defaults(handler=_advise)
