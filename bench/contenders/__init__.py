"""The contenders of bench/run.py. Each is a script run in its own process (a fresh
JVM for the Spark ones, so memory is measured per contender) that does one job and
prints one ``BENCH_RESULT {json}`` line; see :mod:`contenders.common`."""
