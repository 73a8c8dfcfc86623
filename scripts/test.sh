#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), runs the JVM unit tests (gradle test: JUnit,
# no Spark job, no broker), then the whole pytest suite against a real Kafka broker (the
# local one, or $KPLEX_BOOTSTRAP) and real Spark, then the core tests on the other Spark
# versions kplex supports ($KPLEX_OTHER_SPARK, default 3.5.7 4.3.0 4.0.1; empty to skip), each
# in a virtual environment made in the background meanwhile (scripts/test_spark_version.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OTHER_SPARK=${KPLEX_OTHER_SPARK-3.5.7 4.3.0 4.0.1}
if [ $# -eq 0 ] && [ -n "$OTHER_SPARK" ]; then
  (for version in $OTHER_SPARK; do bash scripts/test_spark_version.sh "$version" --prepare; done) &
  PREPARING=$!
fi
echo "test: lint (ruff: Python lint and import order; checkstyle: Java)" >&2
"${PYTHON:-python3}" -m ruff check --config python/pyproject.toml .
gradle -q --offline checkstyleMain checkstyleTest 2>/dev/null || gradle -q checkstyleMain checkstyleTest
echo "test: JVM unit tests (gradle test)" >&2
gradle -q --offline test 2>/dev/null || gradle -q test
"${PYTHON:-python3}" -m pytest tests -q -p no:cacheprovider "$@"
# Then the core tests on every other Spark kplex supports (not when pytest got arguments).
if [ -n "${PREPARING:-}" ]; then
  wait "$PREPARING"
  for version in $OTHER_SPARK; do
    bash scripts/test_spark_version.sh "$version"
  done
fi
