"""Spark Declarative Pipelines (pyspark 4.1's ``spark-pipelines``) whose sinks are kplex tables.

A pipeline runs on a Spark Connect server; kplex's must have kplex's jars, extension and
catalog, which pyspark's own launcher cannot add, so ``kplex pipeline run`` starts one
(``kplex server connect``), or uses ``--remote sc://...``. A pipeline may not run
``CREATE TABLE``: the ``tables.sql`` next to the spec is run first, on the same server.

    $ kplex pipeline run sql/pipeline/spark-pipeline.yml --bootstrap 127.0.0.1:9092

>>> run_pipeline(Path("sql/pipeline/spark-pipeline.yml"), "sc://127.0.0.1:15002")  # doctest: +SKIP
0
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["TABLES_FILE", "run_pipeline"]

#: The file of CREATE TABLE statements next to a pipeline spec, run before the pipeline.
TABLES_FILE = "tables.sql"


def create_tables(spec: Path, remote: str) -> int:
    """Runs the statements of ``tables.sql`` next to ``spec`` on ``remote``; returns how many."""
    from pyspark.sql import SparkSession

    from kplex.sqltools.check import check_script, require_clean
    from kplex.sqltools.run import spark_statements
    from kplex.sqltools.script import read_script

    tables = spec.parent / TABLES_FILE
    if not tables.exists():
        return 0
    script = read_script(tables)
    require_clean(check_script(script))  # as `kplex sql run`: a file with errors runs no statement
    statements = spark_statements(script)
    spark = SparkSession.builder.remote(remote).getOrCreate()
    try:
        for statement in statements:
            spark.sql(statement)
        return len(statements)
    finally:
        # Release the server-side session now: a client left open after its server stops
        # keeps this process from exiting.
        spark.stop()


def run_pipeline(spec: Path, remote: str, configuration: Mapping[str, str] | None = None) -> int:
    """Creates the pipeline's tables, then runs pyspark's pipeline CLI (``spark-pipelines run``)
    against ``remote``; returns its exit status. ``configuration``: session settings added to
    the spec's own for this run (e.g. ``kplex.stream.startingOffsets``), as its
    ``configuration`` block would set them."""
    import pyspark

    from kplex.session import require_spark

    require_spark("Declarative Pipelines (spark-pipelines)", (4, 1))
    create_tables(spec, remote)
    cli = Path(pyspark.__file__).resolve().parent / "pipelines" / "cli.py"
    env = dict(os.environ, SPARK_REMOTE=remote)
    run_spec = with_configuration(spec, configuration) if configuration else spec
    try:
        return subprocess.call([sys.executable, str(cli), "run", "--spec", str(run_spec.resolve())],
                               cwd=spec.resolve().parent, env=env)
    finally:
        if run_spec != spec:
            run_spec.unlink(missing_ok=True)


def with_configuration(spec: Path, configuration: Mapping[str, str]) -> Path:
    """A copy of ``spec`` beside it (its libraries' globs are relative to its folder) whose
    ``configuration`` block has ``configuration`` added; the caller removes it."""
    import yaml  # spark-pipelines' own dependency: it reads the spec with it

    document = yaml.safe_load(spec.read_text()) or {}
    document["configuration"] = {**(document.get("configuration") or {}), **configuration}
    copy = spec.with_name(f".{spec.stem}.kplex-run{spec.suffix}")
    copy.write_text(yaml.safe_dump(document, sort_keys=False))
    return copy
