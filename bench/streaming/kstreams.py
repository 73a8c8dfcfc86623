"""The Kafka Streams contender's program: Kafka Streams resolved with Maven (pom.xml next
to this file), RekeyStreams.java compiled with javac, both cached under
``${KPLEX_CACHE:-<repo>/.cache}/bench-streams/`` and redone only when the source or the
pom changes.

>>> build = build_rekey_streams()  # doctest: +SKIP
>>> build.command("127.0.0.1:9092", "src", "dst", "app-1", Path("/tmp/state"))  # doctest: +SKIP
['java', '-Xmx1g', ..., 'RekeyStreams', '127.0.0.1:9092', 'src', 'dst', 'app-1', '/tmp/state', '2']
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SOURCE = HERE / "RekeyStreams.java"
POM = HERE / "pom.xml"
MAVEN_SETTINGS = REPO / "bench" / "maven-settings.xml"


@dataclass(frozen=True)
class StreamsBuild:
    """A compiled RekeyStreams and the jars it runs with."""

    classes: Path
    libs: Path

    def command(self, bootstrap: str, source: str, target: str, application_id: str,
                state_dir: Path, threads: int = 2, heap: str = "1g") -> list[str]:
        """The command line that runs the contender until its stdin closes."""
        classpath = f"{self.classes}{os.pathsep}{self.libs}/*"
        return ["java", f"-Xmx{heap}", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "-cp", classpath, "RekeyStreams",
                bootstrap, source, target, application_id, str(state_dir), str(threads)]


def cache_dir() -> Path:
    return Path(os.environ.get("KPLEX_CACHE") or REPO / ".cache") / "bench-streams"


def _digest(*files: Path) -> str:
    return hashlib.sha256(b"\0".join(f.read_bytes() for f in files)).hexdigest()[:16]


def _resolve(libs: Path) -> None:
    """Kafka Streams and its runtime jars into ``libs`` (replaced whole)."""
    staging = libs.with_name(libs.name + f".partial-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    run = subprocess.run(
        ["mvn", "-B", "-q", "-Dstyle.color=never", "-s", str(MAVEN_SETTINGS), "-f", str(POM),
         "dependency:copy-dependencies", f"-DoutputDirectory={staging}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if run.returncode != 0:
        raise SystemExit(f"mvn could not resolve Kafka Streams:\n{run.stdout[-3000:]}")
    shutil.rmtree(libs, ignore_errors=True)
    staging.rename(libs)


def _compile(classes: Path, libs: Path) -> None:
    shutil.rmtree(classes, ignore_errors=True)
    classes.mkdir(parents=True)
    run = subprocess.run(["javac", "--release", "17", "-d", str(classes), "-cp", f"{libs}/*", str(SOURCE)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if run.returncode != 0:
        raise SystemExit(f"javac could not compile {SOURCE.name}:\n{run.stdout[-3000:]}")


def build_rekey_streams(say: Callable[[str], None] = print) -> StreamsBuild:
    """Resolve (when the pom changed) and compile (when the source changed) once; later
    calls reuse the cache."""
    root = cache_dir()
    libs, classes = root / "libs", root / "classes"
    libs_stamp, classes_stamp = root / ".libs-complete", root / ".classes-complete"
    root.mkdir(parents=True, exist_ok=True)
    pom, source = _digest(POM), _digest(POM, SOURCE)
    if not (libs_stamp.is_file() and libs_stamp.read_text().strip() == pom):
        say(f"resolving Kafka Streams into {libs}")
        classes_stamp.unlink(missing_ok=True)
        _resolve(libs)
        libs_stamp.write_text(pom + "\n")
    if not (classes_stamp.is_file() and classes_stamp.read_text().strip() == source):
        say(f"compiling {SOURCE.name} into {classes}")
        _compile(classes, libs)
        classes_stamp.write_text(source + "\n")
    return StreamsBuild(classes, libs)
