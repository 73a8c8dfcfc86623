"""What the JIT compiler compiled while an INSERT ran, by the code it compiled.

A fresh JVM's INSERT shares the two cores with its own JIT compiler (issue #37). Whether some of
that compiling could be spared depends on what it compiles: the per-record path (Kafka's
clients, Spark's shuffle and sort, generated code, kplex's own) is what the INSERT runs hot and
must be compiled; the planning and set-up code is not. This reads the ``jdk.Compilation``
events of a Java Flight Recorder recording and sums each compile task's time by area.

The JDK's settings record only compilations over one second, so the recording needs settings
without that threshold, which ``--settings`` writes from the JDK's own ``default.jfc``:

    python bench/jit_summary.py --settings /tmp/compilations.jfc
    python bench/contenders/kplex_insert.py ... --workdir W --jfr F.jfr --jfr-settings /tmp/compilations.jfc
    python bench/jit_summary.py F.jfr W            # W: the event log dir, for the INSERT's window
    python bench/jit_summary.py F.jfr FROM TO      # or a window in epoch seconds

A compile task's time is the compiler thread's wall time: on a busy machine it also waits for
a core, so the figures are shares of the compiler's time, not CPU seconds.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from jfr_summary import sql_window  # noqa: E402

__all__ = ["Compilation", "area", "read_compilations", "report", "write_settings"]

# The first area whose marker a compiled method's class name contains. Kafka's clients come
# before kplex's own code: kplex ships them shaded under io.kplex.shaded.
AREAS = [
    ("Kafka's clients (producer, consumer, records)", ("org.apache.kafka.",)),
    ("Spark's generated code", ("GeneratedClass",)),
    ("Spark's sort", ("org.apache.spark.util.collection.", "org.apache.spark.sql.execution.UnsafeExternalRowSorter",
                      "org.apache.spark.unsafe.")),
    ("Spark's shuffle (serializer, files, lz4)", ("org.apache.spark.shuffle.", "org.apache.spark.storage.",
                                                  "org.apache.spark.sql.execution.UnsafeRowSerializer",
                                                  "org.apache.spark.io.", "net.jpountz.")),
    ("kplex", ("io.kplex.",)),
    ("Spark's expressions outside generated code", ("org.apache.spark.sql.catalyst.expressions.",)),
    ("the recording itself (JFR)", ("jdk.jfr.", "jdk.internal.org.objectweb.asm.")),
    ("planning, Janino, class loading and task set-up",
     ("org.apache.spark.sql.catalyst.", "org.apache.spark.sql.execution.", "org.codehaus.", "org.antlr.",
      "scala.", "java.io.ObjectInputStream", "java.io.ObjectStreamClass", "org.apache.hadoop.",
      "com.fasterxml.", "org.apache.xbean.", "org.apache.logging.", "java.lang.invoke.", "java.util.regex.",
      "java.util.jar.", "sun.security.", "jdk.internal.", "java.lang.reflect.")),
]
OTHER = "other (the JDK's collections and buffers, Spark's core)"

_DURATION = re.compile(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:([\d.]+)S)?$")


@dataclass(frozen=True)
class Compilation:
    epoch: float       # when the compile task started
    seconds: float     # how long it took (the compiler thread's wall time)
    tier: int          # 1-3: C1, 4: C2
    method: str        # class.method


def area(class_name: str) -> str:
    for name, markers in AREAS:
        if any(m in class_name for m in markers):
            return name
    return OTHER


def _seconds(iso: str) -> float:
    m = _DURATION.match(iso)
    if not m:
        raise ValueError(f"not a JFR duration: {iso!r}")
    hours, minutes, secs = m.groups()
    return int(hours or 0) * 3600 + int(minutes or 0) * 60 + float(secs or 0)


def _epoch(iso: str) -> float:
    """JFR's JSON times are UTC with nanoseconds; Python 3.11 reads microseconds."""
    m = re.match(r"(.*T\d\d:\d\d:\d\d)(\.\d+)?Z$", iso)
    if not m:
        raise ValueError(f"not a JFR time: {iso!r}")
    whole = dt.datetime.fromisoformat(m.group(1)).replace(tzinfo=dt.timezone.utc).timestamp()
    return whole + float(m.group(2) or 0)


def read_compilations(recording: Path, window: tuple[float, float] | None = None) -> list[Compilation]:
    """The recording's compile tasks (those that succeeded); with ``window`` (epoch s), those that
    started in it."""
    text = subprocess.run(["jfr", "print", "--json", "--events", "jdk.Compilation", str(recording)],
                          check=True, stdout=subprocess.PIPE, text=True).stdout
    out = []
    for event in json.loads(text)["recording"]["events"]:
        v = event["values"]
        if not v.get("succeded", True):  # sic: the JDK's spelling
            continue
        method = v["method"]
        c = Compilation(_epoch(v["startTime"]), _seconds(v["duration"]), int(v["compileLevel"]),
                        method["type"]["name"].replace("/", ".") + "." + method["name"])
        if window is None or window[0] <= c.epoch <= window[1]:
            out.append(c)
    return out


def report(compilations: list[Compilation], top: int = 15) -> str:
    if not compilations:
        return "no compilations in the window (were the recording's jdk.Compilation events on, without a threshold?)"
    total = sum(c.seconds for c in compilations)
    c2 = [c for c in compilations if c.tier == 4]
    by_area: Counter[str] = Counter()
    c2_by_area: Counter[str] = Counter()
    tasks: Counter[str] = Counter()
    for c in compilations:
        a = area(c.method.rsplit(".", 1)[0])
        by_area[a] += c.seconds
        tasks[a] += 1
        if c.tier == 4:
            c2_by_area[a] += c.seconds
    lines = [f"{len(compilations):,} compile tasks, {total:.2f} s: C2 {len(c2):,} tasks "
             f"{sum(c.seconds for c in c2):.2f} s, C1 {len(compilations) - len(c2):,} tasks "
             f"{sum(c.seconds for c in compilations if c.tier != 4):.2f} s", "",
             "| what was compiled | tasks | s | of which C2 | share |", "| --- | ---: | ---: | ---: | ---: |"]
    for name, seconds in by_area.most_common():
        lines.append(f"| {name} | {tasks[name]:,} | {seconds:.2f} | {c2_by_area[name]:.2f} | "
                     f"{100 * seconds / total:.1f}% |")
    per_method: Counter[str] = Counter()
    for c in c2:
        per_method[c.method] += c.seconds
    lines += ["", f"The {top} methods C2 took longest over:", "", "| method | s |", "| --- | ---: |"]
    lines += [f"| {m} | {s:.3f} |" for m, s in per_method.most_common(top)]
    return "\n".join(lines)


def write_settings(out: Path) -> None:
    """The JDK's default recording settings with every compilation recorded."""
    java = shutil.which("java")
    if not java:
        sys.exit("no java on PATH: the JDK's default.jfc is needed")
    home = Path(java).resolve().parents[1]
    default = home / "lib" / "jfr" / "default.jfc"
    text = default.read_text()
    event = re.search(r'(<event name="jdk.Compilation">.*?</event>)', text, re.S)
    if not event:
        sys.exit(f"{default} has no jdk.Compilation event")
    changed = re.sub(r'(<setting name="threshold"[^>]*>)[^<]*(</setting>)', r"\g<1>0 ms\g<2>", event.group(1))
    out.write_text(text.replace(event.group(1), changed))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("recording", nargs="?", type=Path)
    p.add_argument("window", nargs="*", help="an event log dir (the last SQL execution), or FROM TO epoch seconds")
    p.add_argument("--settings", type=Path, metavar="OUT.jfc", help="write recording settings that keep every compilation")
    p.add_argument("--top", type=int, default=15)
    args = p.parse_args()
    if args.settings:
        write_settings(args.settings)
        print(args.settings)
        return
    if not args.recording:
        p.error("a recording (or --settings)")
    if len(args.window) == 2:
        window: tuple[float, float] | None = (float(args.window[0]), float(args.window[1]))
    elif len(args.window) == 1:
        window = sql_window(Path(args.window[0]))
    elif not args.window:
        window = None
    else:
        p.error("the window is an event log dir or FROM TO")
    print(report(read_compilations(args.recording, window), args.top))


if __name__ == "__main__":
    main()
