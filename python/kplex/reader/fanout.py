"""Stream virtual partitions to standard output, to files, or to named pipes.

The shape of the original kplex's parallel consumers, one consumer per pipe, all at
once (``-P`` = V, the number of virtual partitions)::

    kplex read pageviews_by_user --out-dir /tmp/vps --fifo | xargs -P9 -n2 ./consumer

:func:`serve_fifos` makes one FIFO per virtual partition, announces ``<vp> <path>``
lines (two arguments per consumer for ``xargs -n2``), then reads the table ONCE (one
:class:`~kplex.reader.TableReader` over all the virtual partitions, as
:func:`write_partition_files` does: a read-time table's source is read once, not V
times) and pushes each record into the bounded queue of its virtual partition
(:data:`QUEUE_RECORDS` records at most); one writer thread per FIFO drains its queue
into the FIFO, in order. The push has a price, back-pressure: when a queue is full the
reader waits, so the slowest consumer sets the pace of every pipe, and a consumer that
never opens its pipe (``xargs -P`` smaller than V) stalls all the others once its
queue is full. Run one consumer per pipe concurrently. A consumer that stops early
(``head``) ends only its own pipe: its queue is dropped from then on, the others go on
to the end. :func:`write_partition_files` fills regular files instead (no consumer to
wait for); :func:`write_records` writes one stream.

Formats, one record per line: ``value`` (the value bytes as they are; values that
contain newlines need ``json``) and ``json``
(``{"vp":3,"order":1565606197468,"key":"User_6","value":"{...}","topic":...,
"partition":0,"offset":17,"timestamp":...}``; bytes that are not UTF-8 appear
as ``key_base64`` / ``value_base64`` instead).
"""

from __future__ import annotations

import base64
import errno
import json
import os
import stat
import threading
import time
from collections import deque
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable

from kplex.reader import KplexRecord, ReadStats, TableInfo, TableReader

__all__ = ["FORMATS", "QUEUE_RECORDS", "format_record", "serve_fifos", "write_partition_files",
           "write_records"]

FORMATS = ("value", "json")


def _text_field(out: dict[str, Any], name: str, value: bytes | None) -> None:
    if value is None:
        out[name] = None
        return
    try:
        out[name] = value.decode("utf-8")
    except UnicodeDecodeError:
        out[f"{name}_base64"] = base64.b64encode(value).decode("ascii")


def format_record(record: KplexRecord, fmt: str = "value") -> bytes:
    """One output line.

    >>> r = KplexRecord(3, 42, b"User_6", b'{"a":1}', "t", 0, 17, 5)
    >>> format_record(r)
    b'{"a":1}\\n'
    >>> format_record(r, "json")
    b'{"vp":3,"order":42,"key":"User_6","value":"{\\\\"a\\\\":1}","topic":"t","partition":0,"offset":17,"timestamp":5}\\n'
    """
    if fmt == "value":
        return (record.value or b"") + b"\n"
    out: dict[str, Any] = {"vp": record.vp, "order": record.order}
    _text_field(out, "key", record.key)
    _text_field(out, "value", record.value)
    out.update(topic=record.topic, partition=record.partition, offset=record.offset,
               timestamp=record.timestamp)
    return json.dumps(out, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def write_records(records: Iterable[KplexRecord], out: BinaryIO, fmt: str = "value") -> int:
    """Write records to a binary stream, one line each; returns how many."""
    n = 0
    for record in records:
        out.write(format_record(record, fmt))
        n += 1
    out.flush()
    return n


def partition_path(out_dir: Path, table: str, vp: int) -> Path:
    """``<out_dir>/<table>.<vp>``."""
    return Path(out_dir) / f"{table}.{vp}"


def write_partition_files(bootstrap: str, table: str | TableInfo, out_dir: str | Path,
                          vps: Iterable[int] | None = None, fmt: str = "value",
                          **options: Any) -> tuple[dict[int, Path], ReadStats]:
    """Read the table once and write each virtual partition to ``<out_dir>/<table>.<vp>``.

    Each file is written beside its name (``<table>.<vp>.part``) and takes it once the whole read
    succeeded: a read that fails (a late record under ``fail``, a stall) leaves no truncated file
    under a partition's name, and a file of an earlier read stays as it was."""
    reader = TableReader(bootstrap, table, vps=vps, **options)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {vp: partition_path(out_dir, reader.info.name, vp) for vp in sorted(reader.vps)}
    for path in paths.values():  # a name the files cannot take fails now, not after the read
        if path.is_dir():
            raise IsADirectoryError(f"{path} is a directory; remove it or pick another --out-dir.")
    parts = {vp: path.with_name(path.name + ".part") for vp, path in paths.items()}
    files: dict[int, Any] = {}
    done = False
    try:
        for vp, part in parts.items():
            files[vp] = open(part, "wb")  # noqa: SIM115 - closed below
        for record in reader:
            files[record.vp].write(format_record(record, fmt))
        done = True
    finally:
        for f in files.values():
            f.close()
        for vp, part in parts.items():
            if done:
                part.replace(paths[vp])
            else:
                part.unlink(missing_ok=True)
    return paths, reader.stats


class _Pipe:
    """One FIFO's bounded queue: the reader puts records, the FIFO's writer thread takes them.

    ``put`` waits while ``limit`` records wait (back-pressure); once the writer is gone
    (``drop``: its consumer stopped reading, or the fan-out is over) ``put`` discards.
    ``take`` hands the writer every waiting record at once, so one FIFO holds at most
    ``2 * limit`` records in memory: its queue, and the batch its writer is writing.

    >>> pipe = _Pipe(limit=2)
    >>> pipe.put("a"); pipe.put("b"); pipe.finish()
    >>> pipe.take(), pipe.take(), pipe.max_queued
    (['a', 'b'], None, 2)
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.queue: deque[Any] = deque()
        self.ready = threading.Condition()
        self.finished = False  # the reader has put its last record
        self.dropped = False  # nobody takes records any more
        self.max_queued = 0

    def put(self, item: Any) -> None:
        with self.ready:
            while len(self.queue) >= self.limit and not self.dropped:
                self.ready.wait()
            if self.dropped:
                return
            self.queue.append(item)
            self.max_queued = max(self.max_queued, len(self.queue))
            self.ready.notify_all()

    def take(self) -> list[Any] | None:
        """Every record waiting (waits for one), or None after the last one (or a drop)."""
        with self.ready:
            while not self.queue and not self.finished and not self.dropped:
                self.ready.wait()
            if self.dropped or not self.queue:
                return None
            items = list(self.queue)
            self.queue.clear()
            self.ready.notify_all()
            return items

    def finish(self) -> None:
        with self.ready:
            self.finished = True
            self.ready.notify_all()

    def drop(self) -> None:
        """No more records: the queue is emptied, ``put`` never waits again, ``take`` ends."""
        with self.ready:
            self.dropped = True
            self.queue.clear()
            self.ready.notify_all()


#: How many records the queue of one FIFO holds at most before the reader waits.
QUEUE_RECORDS = 10_000
#: How often a FIFO's writer looks again for its consumer, in seconds.
OPEN_POLL_S = 0.02


def _open_fifo(path: Path, pipe: _Pipe) -> int | None:
    """Open ``path`` for writing once its consumer has opened it; None if ``pipe`` is
    dropped first (see :func:`_retire` for a consumer still waiting then)."""
    while not pipe.dropped:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:  # ENXIO: no consumer yet
                raise
            time.sleep(OPEN_POLL_S)
            continue
        os.set_blocking(fd, True)
        return fd
    return None


def _retire(path: Path, keep: bool, wake: bool) -> None:
    """Remove the FIFO at ``path`` unless ``keep``. With ``wake`` (the fan-out failed),
    first hold it open for reading and writing while it goes: a consumer waiting to open
    it gets it, then sees its end, instead of waiting for ever."""
    try:
        held = os.open(path, os.O_RDWR | os.O_NONBLOCK) if wake else None
    except FileNotFoundError:
        return
    try:
        if not keep:
            path.unlink(missing_ok=True)
    finally:
        if held is not None:
            os.close(held)


def _drain(path: Path, pipe: _Pipe, fmt: str) -> None:
    """The writer thread of one FIFO: its queue, in order, into the FIFO, then close it."""
    fd = _open_fifo(path, pipe)
    if fd is None:
        return
    try:
        while (items := pipe.take()) is not None:
            data = memoryview(b"".join(format_record(record, fmt) for record in items))
            while data:
                data = data[os.write(fd, data):]
    except BrokenPipeError:
        pipe.drop()  # the consumer stopped reading: its choice; the others go on
    finally:
        os.close(fd)


def serve_fifos(bootstrap: str, table: str | TableInfo, out_dir: str | Path,
                vps: Iterable[int] | None = None, fmt: str = "value",
                announce: Callable[[int, Path], None] | None = None, keep: bool = False,
                queue_records: int = QUEUE_RECORDS, **options: Any) -> ReadStats:
    """Make a FIFO per virtual partition, announce each, then read the table once and
    push each record to its FIFO through a queue of at most ``queue_records`` records.

    One writer thread per FIFO opens it (waiting for its consumer to open the other end)
    and drains its queue into it. When a queue is full the reader waits for it: the
    slowest consumer sets the pace of all, and a consumer that never opens its FIFO
    stalls the others once its queue is full, so run one consumer per FIFO at the same
    time (``xargs -P V``). A consumer that stops reading (``head``) ends only its own
    FIFO; its records are dropped from then on.

    Returns when every FIFO has been written and closed, with the reader's stats (and
    ``max_queued``, the deepest any queue got). An error of the reader, or of writing a
    FIFO (but a closed consumer), closes every FIFO so that their consumers see the end,
    and is raised. The FIFOs are removed at the end unless ``keep``.

    >>> stats = serve_fifos("localhost:9092", "pageviews_by_user", "/tmp/vps",
    ...                     announce=lambda vp, path: print(vp, path))  # doctest: +SKIP
    0 /tmp/vps/pageviews_by_user.0
    ...
    """
    if queue_records < 1:
        raise ValueError(f"queue_records must be >= 1, got {queue_records}.")
    reader = TableReader(bootstrap, table, vps=vps, **options)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {vp: partition_path(out_dir, reader.info.name, vp) for vp in sorted(reader.vps)}
    for path in paths.values():  # all checked before any FIFO is made: a refusal leaves none
        if path.exists() and not stat.S_ISFIFO(path.stat().st_mode):
            raise FileExistsError(f"{path} exists and is not a FIFO; remove it or pick another --out-dir.")
    for path in paths.values():
        if not path.exists():
            os.mkfifo(path)
    pipes = {vp: _Pipe(queue_records) for vp in paths}
    errors: list[BaseException] = []

    def write(vp: int) -> None:
        try:
            _drain(paths[vp], pipes[vp], fmt)
        except BaseException as e:  # noqa: BLE001 - raised by serve_fifos
            errors.append(e)
            for pipe in pipes.values():  # stop everything: the reader sees errors and ends
                pipe.drop()

    writers = [threading.Thread(target=write, args=(vp,), name=f"kplex-fifo-{vp}", daemon=True)
               for vp in paths]
    read = False
    try:
        for vp, path in paths.items():
            if announce:
                announce(vp, path)
        for writer in writers:
            writer.start()
        records = iter(reader)
        try:
            for record in records:
                pipes[record.vp].put(record)
                if errors:
                    break
        finally:
            records.close()  # type: ignore[attr-defined] - a generator: closes its consumer
        read = not errors
    finally:
        for pipe in pipes.values():
            if read:
                pipe.finish()
            else:
                pipe.drop()
        for writer in writers:
            if writer.ident is not None:
                writer.join()
        for path in paths.values():
            _retire(path, keep, wake=not read or bool(errors))
    if errors:
        raise errors[0]
    stats = reader.stats
    stats.max_queued = max((pipe.max_queued for pipe in pipes.values()), default=0)
    return stats
