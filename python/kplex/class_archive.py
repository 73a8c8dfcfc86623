"""A class archive for the JVM of a local kplex session (the JDK's dynamic AppCDS).

A local session's JVM loads about 20,000 classes: Spark, Scala, Hadoop, Kafka's client.
Loading, parsing and verifying them is most of the 4 seconds it takes a session to start
and a large part of the first statement's time. The JDK can map classes it loaded once
from an archive file instead (class data sharing): on 2 cores a session starts in 2.4 s
instead of 4.0 and its first ``SHOW TABLES`` takes 0.8 s instead of 1.5, and a 3M-record
INSERT in a fresh session 6.7-7.1 s instead of 7.4-8.0 (docs/performance.md).

How it is built and used (:func:`plan`, :func:`started`):

- The first local session whose JVM has no archive yet writes one: kplex adds
  ``-XX:ArchiveClassesAtExit`` and, when this Python process exits, closes the JVM's
  stdin (the way pyspark ends it), waits for it to write the archive, and renames the
  finished file into place. A JVM that maps a half-written archive crashes (SIGBUS), so
  the name it is used under appears only once the writing JVM exited cleanly. That
  first session runs slower (the JDK records more per class while it archives) and its
  exit takes a few seconds longer.
- Every later session whose JVM would load the same classes from the same files maps
  it (``-XX:SharedArchiveFile``). The archive's name is a digest of what decides that:
  the ``java`` that spark-submit runs and its version, the Spark jars (names, sizes,
  modification times), the driver's memory, class path and Java options. When any of
  them changes, the name changes, and the next session writes a new archive.
- One session at a time writes an archive of a name (a lock file holding its process
  id; a lock whose process is gone is taken over). If the JDK could not write one (a
  non-empty directory on the class path, say), or three sessions started one and none
  finished (processes killed before their exit hook ran), a ``.failed`` marker stops
  later sessions from trying again.
- :func:`kplex.configure_spark_with_kplex` maps an archive that exists (written by a
  ``kplex_session`` or a ``kplex`` command with the same JVM settings); it never writes
  one. The three most recently used archives are kept (about 150 MB each); older ones
  are deleted.
- Nothing is done on a cluster master, on Windows, on JDKs older than 13, where the user
  chose a class sharing option (``-Xshare``, ``SharedArchiveFile``,
  ``ArchiveClassesAtExit``, ``AutoCreateSharedArchive``, or a JDK 24+ AOT cache's
  ``AOTCache``, ``AOTCacheOutput``, ``AOTConfiguration`` or ``AOTMode``), where the JVM
  runs an agent (``-javaagent``, ``-agentlib`` such as a debugger's ``jdwp``,
  ``-agentpath``: the JDK refuses to start a JVM that would archive classes with one) or
  a flight recording (which the JDK would turn off in that JVM), when the session's JVM
  is running already (started by an earlier session, or by spark-submit before this
  process), or when ``KPLEX_CLASS_ARCHIVE=off``. ``KPLEX_CLASS_ARCHIVE=<directory>``
  moves the archives out of the default ``$XDG_CACHE_HOME/kplex/class-archives``
  (``~/.cache/...``).
- If the JVM that was to write an archive does not start, the session starts it again
  without and leaves a ``.failed`` marker, so that an option kplex does not know to
  keep the JDK from archiving costs one extra start, once.
- The JDK's own messages about the archive (each class it skips, an archive it cannot
  map) are turned off with ``-Xlog:cds*=off``: a JVM that cannot map one runs as
  without it.

>>> plan("yarn", {}) is None
True
"""
from __future__ import annotations

import atexit
import hashlib
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

#: The environment variable that turns the archive off (``off``) or moves it (a directory).
ENV = "KPLEX_CLASS_ARCHIVE"
#: How many archives (one per JVM, Spark installation and driver options) are kept.
KEEP = 3
#: How many sessions may start writing an archive that none finishes before kplex stops trying
#: (a process whose exit hook never runs, killed by its notebook, say, cannot rename it).
ATTEMPTS = 3
#: How long this process waits, at its exit, for its JVM to write the archive.
WRITE_TIMEOUT_S = 120.0
#: A lock older than this is stale even if a process of its id runs (the id was reused).
LOCK_STALE_S = 24 * 3600.0
#: The JDK's messages about class sharing, off: see the module's doc.
QUIET = "-Xlog:cds*=off"
#: Options by which a user chose class sharing themselves. A JDK 24+ AOT cache (JEP 483, 514,
#: 515) is class sharing too: a JVM given both -XX:AOTCache and -XX:SharedArchiveFile does not
#: start (checked on Temurin 25.0.3).
_CHOSEN = re.compile(r"-Xshare:|-XX:SharedArchiveFile=|-XX:ArchiveClassesAtExit=|-XX:[+-]AutoCreateSharedArchive"
                     r"|-XX:AOT(?:Cache|CacheOutput|Configuration|Mode)=")
#: What a JVM that writes an archive cannot have: an agent (the JDK refuses to start it: "CDS
#: dumping does not support native JVMTI agent", "Must enable AllowArchivingWithJavaAgent"), or
#: a flight recording (the JDK turns it off: "JFR will be disabled during CDS dumping").
_NO_ARCHIVE_WITH = re.compile(r"-javaagent:|-agentlib:|-agentpath:|-XX:StartFlightRecording|-XX:\+FlightRecorder")
#: Java options that do not change which archive a JVM can map (logging: the JVM's, and the
#: driver's log4j configuration, which kplex.session gives the JVMs kplex_session starts).
_NEUTRAL = re.compile(r"-Xlog:\S*|-Dlog4j2?\.configurationFile=\S*")
#: The settings that decide the classes a local session's JVM loads, or whether it can map them.
_KEYS = ("spark.driver.memory", "spark.driver.extraClassPath", "spark.driver.extraJavaOptions",
         "spark.driver.defaultJavaOptions")
#: Where else a JVM started by pyspark takes options from (kplex.session looks there too).
JAVA_OPTION_SOURCES = ("PYSPARK_SUBMIT_ARGS", "SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS",
                       "_JAVA_OPTIONS")
_ENVIRONMENT = (*JAVA_OPTION_SOURCES, "SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH")
_OFF = {"off", "0", "false", "no"}


def turned_off(value: str) -> bool:
    """Whether a ``KPLEX_CLASS_ARCHIVE`` value turns the archive off.

    >>> turned_off(" OFF "), turned_off("/tmp/archives")
    (True, False)
    """
    return value.strip().lower() in _OFF


@dataclass(frozen=True)
class ArchivePlan:
    """What a session does about its JVM's class archive: map ``archive``, or write it
    (through ``part``, under ``lock``)."""

    java_options: str
    archive: Path
    part: Path | None = None
    lock: Path | None = None

    @property
    def writes(self) -> bool:
        return self.part is not None


def archive_dir() -> Path | None:
    """Where archives are kept, or None when ``KPLEX_CLASS_ARCHIVE=off``.

    >>> archive_dir() is None or archive_dir().name == "class-archives" or "KPLEX_CLASS_ARCHIVE" in os.environ
    True
    """
    chosen = os.environ.get(ENV, "").strip()
    if turned_off(chosen):
        return None
    if chosen:
        return Path(chosen).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "kplex" / "class-archives"


def java_home() -> Path | None:
    """The JDK spark-submit runs (``$JAVA_HOME``, else ``java`` on the PATH, as ``spark-class``)."""
    if os.environ.get("JAVA_HOME"):
        return Path(os.environ["JAVA_HOME"]).resolve()
    found = shutil.which("java")
    return Path(found).resolve().parent.parent if found else None


def java_feature(home: Path) -> int | None:
    """The feature version (8, 11, 17, ...) of the JDK at ``home``, from its ``release`` file."""
    try:
        text = (home / "release").read_text(errors="replace")
    except OSError:
        return None
    found = re.search(r'^JAVA_VERSION="(?:1\.)?(\d+)', text, re.MULTILINE)
    return int(found.group(1)) if found else None


def _files(directory: Path) -> list[str]:
    try:
        entries = sorted(directory.iterdir())
    except OSError:
        return []
    out = []
    for entry in entries:
        stat = entry.stat()
        out.append(f"{entry.name}:{stat.st_size}:{stat.st_mtime_ns}")
    return out


def _bearing(options: str) -> str:
    """``options`` without those that do not change which archive a JVM can map.

    >>> _bearing("-Xmx1g -Xlog:cds*=off  -XX:+UseParallelGC") == _bearing("-Xmx1g -XX:+UseParallelGC")
    True
    """
    return " ".join(_NEUTRAL.sub("", options).split())


def archive_key(home: Path, spark_home: Path, options: Mapping[str, str],
                environment: Mapping[str, str]) -> str:
    """The digest that names the archive of a JVM: see the module's doc.

    >>> a = archive_key(Path("/jdk"), Path("/spark"), {"spark.driver.memory": "1g"}, {})
    >>> a == archive_key(Path("/jdk"), Path("/spark"), {"spark.driver.memory": "2g"}, {})
    False
    """
    digest = hashlib.sha256()
    libjvm = home / "lib" / "server" / "libjvm.so"
    parts = [str(home), str(libjvm.stat().st_mtime_ns) if libjvm.exists() else "",
             str(spark_home), *_files(spark_home / "jars")]
    parts += [f"{k}={_bearing(options.get(k, ''))}" for k in _KEYS]
    parts += [f"{k}={_bearing(environment.get(k, ''))}" for k in _ENVIRONMENT]
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:24]


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (one of another user's counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _take_lock(lock: Path) -> bool:
    """Whether this process now holds ``lock`` (a lock whose process is gone is taken over)."""
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                holder = int(lock.read_text().strip() or "0")
            except (OSError, ValueError):
                holder = 0
            try:
                fresh = time.time() - lock.stat().st_mtime < LOCK_STALE_S
            except OSError:
                fresh = False
            if holder and fresh and process_alive(holder):
                return False
            lock.unlink(missing_ok=True)
            continue
        with os.fdopen(fd, "w") as out:
            out.write(str(os.getpid()))
        return True
    return False


def plan(master: str | None, options: Mapping[str, str], *, write: bool = True, spark_home: Path | None = None,
         environment: Mapping[str, str] | None = None) -> ArchivePlan | None:
    """What a session on ``master`` whose builder has ``options`` does about its class
    archive, or None (nothing); with ``write=False``, only map one that exists. Writing one
    takes the archive's lock: pass the plan to :func:`started` once the session is up.

    >>> plan("local[2]", {"spark.driver.extraJavaOptions": "-Xshare:off"}) is None
    True
    """
    environment = os.environ if environment is None else environment
    directory = archive_dir()
    if directory is None or os.name == "nt" or not (master == "local" or (master or "").startswith("local[")):
        return None
    if environment.get("PYSPARK_GATEWAY_PORT"):
        return None  # spark-submit started the JVM before this process: its options are set
    chosen = [options.get(k, "") for k in _KEYS] + [environment.get(k, "") for k in _ENVIRONMENT]
    if any(_CHOSEN.search(text) or _NO_ARCHIVE_WITH.search(text) for text in chosen):
        return None
    home = java_home()
    if home is None or (java_feature(home) or 0) < 13:
        return None
    if spark_home is None:
        from pyspark.find_spark_home import _find_spark_home

        spark_home = Path(_find_spark_home())
    conf_dir = Path(environment.get("SPARK_CONF_DIR") or spark_home / "conf")
    if conf_dir.is_dir() and any(conf_dir.iterdir()):
        return None  # the JDK archives no class path with a non-empty directory on it
    key = archive_key(home, spark_home, options, environment)
    archive = directory / f"{key}.jsa"
    if archive.is_file():
        try:
            os.utime(archive)  # most recently used: kept by the pruning
        except OSError:
            pass
        return ArchivePlan(f"-XX:SharedArchiveFile={archive} {QUIET}", archive)
    if not write or (directory / f"{key}.failed").exists():
        return None
    lock = directory / f"{key}.lock"
    try:
        directory.mkdir(parents=True, exist_ok=True)
        if not _take_lock(lock):
            return None
        if _attempts(directory / f"{key}.attempts") >= ATTEMPTS:
            (directory / f"{key}.failed").write_text(f"{ATTEMPTS} sessions started writing it; none finished\n")
            lock.unlink(missing_ok=True)
            return None
        prune(directory)  # parts left by processes that ended before they finished theirs
        part = directory / f"{key}.{os.getpid()}.part"
        part.unlink(missing_ok=True)
    except OSError:
        return None  # a directory this process cannot write: sessions run without an archive
    return ArchivePlan(f"-XX:ArchiveClassesAtExit={part} {QUIET}", archive, part, lock)


def with_plan(options: Mapping[str, str], archive_plan: ArchivePlan) -> str:
    """The driver's default Java options with ``archive_plan``'s added."""
    defaults = options.get("spark.driver.defaultJavaOptions", "")
    return " ".join(o for o in [defaults, archive_plan.java_options] if o)


def started(archive_plan: ArchivePlan, process: Any) -> None:
    """After the session started: if ``process`` (pyspark's JVM, started by this session
    with ``archive_plan``'s options; None if the JVM was running already) writes the
    archive, finish it when this Python process exits."""
    if not archive_plan.writes:
        return
    if process is None:
        finish(archive_plan, None)
        return
    counter = archive_plan.archive.with_suffix(".attempts")
    try:
        counter.write_text(str(_attempts(counter) + 1))
    except OSError:
        pass
    atexit.register(finish, archive_plan, process)


def refused(archive_plan: ArchivePlan) -> None:
    """After a JVM given ``archive_plan``'s options to write an archive did not start, and
    started without them: mark the archive ``.failed``, so that later sessions do not try."""
    try:
        archive_plan.archive.with_suffix(".failed").write_text(
            f"{time.ctime()}: the JVM did not start with {archive_plan.java_options}\n")
    except OSError:
        pass


def _attempts(counter: Path) -> int:
    """How many sessions started writing an archive that none finished (a process killed
    before its exit hook ran, say)."""
    try:
        return int(counter.read_text().strip() or "0")
    except (OSError, ValueError):
        return 0


def finish(archive_plan: ArchivePlan, process: Any, timeout_s: float = WRITE_TIMEOUT_S) -> bool:
    """End ``process`` (closing its stdin, as pyspark does at exit), wait for it to write
    the archive, and rename the finished file into place; release the lock. Returns
    whether the archive is in place."""
    part, lock = archive_plan.part, archive_plan.lock
    assert part is not None and lock is not None
    done = False
    try:
        if process is not None:
            print(f"kplex: the JVM is writing its class archive for later sessions (once): {archive_plan.archive}",
                  file=sys.stderr, flush=True)
            if process.stdin is not None and not process.stdin.closed:
                process.stdin.close()
            try:
                code = process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                code = None
            if code == 0 and part.is_file() and part.stat().st_size > 0:
                os.replace(part, archive_plan.archive)
                archive_plan.archive.with_suffix(".attempts").unlink(missing_ok=True)
                done = True
            elif code == 0:
                # The JVM ended cleanly and wrote nothing: it cannot archive this class path.
                archive_plan.archive.with_suffix(".failed").write_text(time.ctime() + "\n")
    except OSError as e:
        print(f"kplex: no class archive written in {archive_plan.archive.parent}: {e}", file=sys.stderr)
    finally:
        for leftover in (part, lock):
            try:
                leftover.unlink(missing_ok=True)
            except OSError:
                pass
    if done:
        try:
            prune(archive_plan.archive.parent)
        except OSError:
            pass
    return done


def prune(directory: Path, keep: int = KEEP) -> list[Path]:
    """Delete all but the ``keep`` most recently used archives in ``directory``, and parts
    that no live process writes; returns what was deleted."""
    deleted = []
    archives = sorted(directory.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in archives[keep:]:
        old.unlink(missing_ok=True)
        deleted.append(old)
    for part in directory.glob("*.part"):
        pid = part.suffixes[-2].lstrip(".") if len(part.suffixes) >= 2 else ""
        if not pid.isdigit() or not process_alive(int(pid)):
            part.unlink(missing_ok=True)
            deleted.append(part)
    return deleted
