"""Stream virtual partitions to standard output, to files, or to named pipes.

The shape of the original kplex's parallel consumers::

    kplex read pageviews_by_user --out-dir /tmp/vps --fifo | xargs -P9 -n2 ./consumer

:func:`serve_fifos` makes one FIFO per virtual partition, announces ``<vp> <path>``
lines (two arguments per consumer for ``xargs -n2``) and then feeds each FIFO from
its own reader thread, in order. The threads are independent: a consumer that
starts late (``xargs -P`` smaller than V) only delays its own partition, and one
that stops early (``head``) ends only its own. The price: each thread reads what
its virtual partition needs (a read-time table: the whole source; a kplex-written
table: one physical partition). :func:`write_partition_files` reads once and fills
regular files; :func:`write_records` writes one stream.

Formats, one record per line: ``value`` (the value bytes as they are; values that
contain newlines need ``json``) and ``json``
(``{"vp":3,"order":1565606197468,"key":"User_6","value":"{...}","topic":...,
"partition":0,"offset":17,"timestamp":...}``; bytes that are not UTF-8 appear
as ``key_base64`` / ``value_base64`` instead).
"""

from __future__ import annotations

import base64
import json
import os
import stat
import threading
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable

from kplex.reader import KplexRecord, ReadStats, TableInfo, TableReader

__all__ = ["FORMATS", "format_record", "serve_fifos", "write_partition_files", "write_records"]

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
    """Read the table once and write each virtual partition to ``<out_dir>/<table>.<vp>``."""
    reader = TableReader(bootstrap, table, vps=vps, **options)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {vp: partition_path(out_dir, reader.info.name, vp) for vp in sorted(reader.vps)}
    files = {vp: open(path, "wb") for vp, path in paths.items()}  # noqa: SIM115 - closed below
    try:
        for record in reader:
            files[record.vp].write(format_record(record, fmt))
    finally:
        for f in files.values():
            f.close()
    return paths, reader.stats


def serve_fifos(bootstrap: str, table: str | TableInfo, out_dir: str | Path,
                vps: Iterable[int] | None = None, fmt: str = "value",
                announce: Callable[[int, Path], None] | None = None, keep: bool = False,
                **options: Any) -> ReadStats:
    """Make a FIFO per virtual partition, announce each, then feed them all concurrently.

    Returns when every FIFO has been written and closed; raises the first error of any
    partition (its FIFO is closed first, so its consumer sees the end). The FIFOs are
    removed at the end unless ``keep``.
    """
    first = TableReader(bootstrap, table, vps=vps, **options)
    info = first.info
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {vp: partition_path(out_dir, info.name, vp) for vp in sorted(first.vps)}
    for path in paths.values():
        if path.exists() and not stat.S_ISFIFO(path.stat().st_mode):
            raise FileExistsError(f"{path} exists and is not a FIFO; remove it or pick another --out-dir.")
        if not path.exists():
            os.mkfifo(path)
    for vp, path in paths.items():
        if announce:
            announce(vp, path)
    stats = ReadStats()
    errors: list[BaseException] = []
    lock = threading.Lock()

    def feed(vp: int, path: Path) -> None:
        reader = TableReader(bootstrap, info, vps=[vp], **_reader_options(options))
        try:
            with open(path, "wb") as fifo:  # blocks until the consumer opens its end
                try:
                    write_records(reader, fifo, fmt)
                except BrokenPipeError:
                    pass  # the consumer stopped reading: its choice
        except BaseException as e:  # noqa: BLE001 - reported by the caller
            with lock:
                errors.append(e)
        with lock:
            stats.__iadd__(reader.stats)

    threads = [threading.Thread(target=feed, args=(vp, path), name=f"kplex-vp-{vp}", daemon=True)
               for vp, path in paths.items()]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        if not keep:
            for path in paths.values():
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass
    if errors:
        raise errors[0]
    return stats


def _reader_options(options: dict[str, Any]) -> dict[str, Any]:
    """Options for readers built from an already opened TableInfo (no table lookups)."""
    return {k: v for k, v in options.items()
            if k in ("start_timestamp", "end_timestamp", "config", "timeout")}
