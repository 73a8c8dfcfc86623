#!/usr/bin/env bash
# Runs the core tests (write, read, exactly once, streaming, one writer per table, the SQL
# functions, the errors, Spark's Kafka connector beside kplex; on 3.5 also Spark Connect, the
# Thrift server and the wheel) against another Spark than the one in requirements.txt, e.g.
# `bash scripts/test_spark_version.sh 3.5.7`: a virtual environment of its own with that
# pyspark and the other requirements, running this checkout's kplex (kplex.jars() picks the
# line's plugin jar), against the same kind of broker (of the Kafka version $KPLEX_KAFKA_VERSION
# names, if set). scripts/test.sh runs it for every extra version that kplex supports.
#
# The environment is kept between runs, outside the checkout so that a fresh clone reuses
# it: $KPLEX_CACHE_DIR (default ~/.cache/kplex)/venv-pyspark-<version>; pip runs again only
# when requirements.txt changed (a stamp file records what was installed).
# `test_spark_version.sh VERSION --prepare` only makes the environment (scripts/test.sh
# makes each line's ahead of its turn, while the line before it runs its tests).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${1:?usage: test_spark_version.sh PYSPARK_VERSION [pytest args]}
shift
PYTHON=${PYTHON:-python3}
VENV=${KPLEX_CACHE_DIR:-$HOME/.cache/kplex}/venv-pyspark-$VERSION
STAMP="pyspark[connect]==$VERSION $(grep -v '^pyspark' requirements.txt | sha256sum | cut -c1-16) $("$PYTHON" -V 2>&1)"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$VENV/kplex-stamp" 2>/dev/null)" != "$STAMP" ]; then
  echo "test: installing pyspark $VERSION and the requirements into $VENV" >&2
  rm -rf "$VENV"
  "$PYTHON" -m venv "$VENV"
  grep -v '^pyspark' requirements.txt > "$VENV/requirements.txt"
  # Spark 3.5's Connect client keeps to NumPy 1, which pyarrow >= 18 and pandas 3 no longer take.
  case "$VERSION" in 3.5.*) OLDER="pyarrow<18 pandas<2.3" ;; *) OLDER="" ;; esac
  # shellcheck disable=SC2086
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-compile "pyspark[connect]==$VERSION" -r "$VENV/requirements.txt" $OLDER
  echo "$STAMP" > "$VENV/kplex-stamp"
else
  echo "test: reusing $VENV" >&2
fi
if [ "${1:-}" = "--prepare" ]; then
  exit 0
fi
# This checkout's kplex, whatever another checkout installed into the shared environment.
"$VENV/bin/pip" install -q --disable-pip-version-check --no-deps -e python
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
echo "test: core tests on pyspark $VERSION" >&2
# What runs on a line: its own plugin jar (Spark 3.5's) gets the core tests, the operating
# commands and DESCRIBE, Avro sources, the CLI, secured Kafka, the servers and the wheel; a line
# sharing the default line's jar (4.0, 4.2, 4.3, where only Spark's own classes differ) gets a
# reduced set of the same, one or two tests per feature, and DESCRIBE (whose planner strategy
# meets Spark's own DESCRIBE node), leaving out, but for one test each, those of kplex's own
# logic that meets no Spark API of its own there (kplex_json's answers, read-time tables, the
# operating state but DESCRIBE: the main line and 3.5 run them all), to keep CI within its
# time. 4.3, the newest, adds the wheel, installed with its pyspark into a fresh virtual
# environment, and the tests that start JVMs of their own (a driver killed, a user's own
# collector), which 4.0 and 4.2, whose jar the main line (4.1) and 4.3 test, leave out. Declarative Pipelines (Spark 4.1+, with PyYAML) are tested
# on the main line only.
SLOW="speculative or executor_jvm or broker_stopped or separate_executor_jvms or running_query_repartitions or killed_mid_stream or cli_runs_the_streaming_job or declarative_pipeline or pipeline_run_flags or twenty_inserts"
REDUCED="cli_prints_the_state or article_job or same_input_written_twice or several_source_topics or starts_without_warnings or damaged or at_least_once_mode or recover_command or deleted_from_the_source or outlives"
OWN_JVMS="driver_killed or driver_dead or users_own_collector or unknown_table_is_named"
# Arguments that are all options (-x, --durations=10) go with the default tests; any test path
# or name replaces them.
DEFAULT=yes
for arg in "$@"; do case "$arg" in -*) ;; *) DEFAULT="" ;; esac; done
if [ -n "$DEFAULT" ]; then
  OPTIONS=("$@")
  case "$VERSION" in
    3.5.*)
      set -- tests/test_repartition.py tests/test_read_roundtrip.py tests/test_read_virtual.py tests/test_errors.py \
        tests/test_bad_input.py tests/test_kplex_json.py tests/test_exactly_once.py tests/test_spark_version.py \
        tests/test_streaming.py tests/test_concurrent_writes.py tests/test_read_sources.py tests/test_kafka_connector.py \
        tests/test_status.py tests/test_confluent_sources.py tests/test_cli.py tests/test_secured.py \
        tests/test_connect.py tests/test_thrift.py tests/test_wheel.py -k "not ($SLOW)" "${OPTIONS[@]}" ;;
    4.0.*|4.2.*)
      set -- tests/test_repartition.py tests/test_errors.py tests/test_exactly_once.py tests/test_spark_version.py \
        tests/test_streaming.py tests/test_kafka_connector.py \
        tests/test_read_virtual.py::test_virtual_partitions_read_on_the_fly_match_a_materialized_insert \
        tests/test_status.py::test_describe_extended_shows_the_state_a_plain_consumer_and_producer_see \
        tests/test_status.py::test_plain_describe_shows_only_the_columns \
        -k "not ($SLOW or $REDUCED or $OWN_JVMS)" "${OPTIONS[@]}" ;;
    *)
      set -- tests/test_repartition.py tests/test_errors.py tests/test_exactly_once.py tests/test_spark_version.py \
        tests/test_streaming.py tests/test_kafka_connector.py tests/test_wheel.py \
        tests/test_read_virtual.py::test_virtual_partitions_read_on_the_fly_match_a_materialized_insert \
        tests/test_status.py::test_describe_extended_shows_the_state_a_plain_consumer_and_producer_see \
        tests/test_status.py::test_plain_describe_shows_only_the_columns \
        -k "not ($SLOW or $REDUCED)" "${OPTIONS[@]}" ;;
  esac
fi
# Without the JVM class archive the main suite's sessions map (tests/conftest.py), unless the
# caller chose one: writing it for each line cost its tests more than they gained (2026-12-01,
# the four lines 2.2 minutes slower in all, with the archive written first).
KPLEX_CLASS_ARCHIVE=${KPLEX_CLASS_ARCHIVE:-off} KPLEX_EXPECT_SPARK=$VERSION \
  exec "$VENV/bin/python" -m pytest -q -p no:cacheprovider --durations=15 "$@"
