#!/usr/bin/env bash
# Runs the core tests (write, read, exactly once, streaming, one writer per table, the SQL
# functions, the errors) against
# another Spark than the one in requirements.txt, e.g. `bash scripts/test_spark_version.sh 4.0.1`:
# a virtual environment of its own (.cache/venv-pyspark-<version>) with that pyspark, the
# other requirements and this checkout's kplex (the same plugin jar: one jar serves Spark
# 4.0 and 4.1), against the same kind of broker. scripts/test.sh runs it for every extra
# version that kplex supports.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:?usage: test_spark_version.sh PYSPARK_VERSION [pytest args]}
shift
PYTHON=${PYTHON:-python3}
VENV=.cache/venv-pyspark-$VERSION
if [ ! -x "$VENV/bin/python" ]; then
  echo "test: making $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
echo "test: installing pyspark $VERSION and the requirements into $VENV" >&2
grep -v '^pyspark' requirements.txt > "$VENV/requirements.txt"
"$VENV/bin/pip" install -q --disable-pip-version-check "pyspark==$VERSION" -r "$VENV/requirements.txt"
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e python
echo "test: core tests on pyspark $VERSION" >&2
if [ $# -eq 0 ]; then
  set -- tests/test_repartition.py tests/test_read_roundtrip.py tests/test_read_virtual.py tests/test_errors.py \
    tests/test_bad_input.py tests/test_kplex_json.py tests/test_exactly_once.py tests/test_spark_version.py \
    tests/test_streaming.py tests/test_concurrent_writes.py \
    -k "not speculative and not executor_jvm and not broker_stopped and not separate_executor_jvms and not running_query_repartitions and not killed_mid_stream and not cli_runs_the_streaming_job and not declarative_pipeline and not twenty_inserts"
fi
KPLEX_EXPECT_SPARK=$VERSION exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
