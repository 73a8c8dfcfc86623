#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), runs the linters and the JVM unit tests (gradle test:
# JUnit, no Spark job, no broker), then the whole pytest suite against a real Kafka broker (the
# local one, or $KPLEX_BOOTSTRAP) and real Spark. Meanwhile, in a second stream, it runs the core
# tests on every other Spark line kplex supports ($KPLEX_OTHER_SPARK, default 3.5.7 4.3.0 4.2.0
# 4.0.1; empty for no second stream), one after the other, each in a virtual environment of its own
# (scripts/test_spark_version.sh), with a broker and a Spark of its own. The Spark 3.5 line's
# broker is Kafka $KPLEX_KAFKA_3 (default 3.6.2; empty for gradle.properties' kafkaVersion), as
# many of that Spark's users run a Kafka 3 broker; the others run the pinned Kafka 4.
#
# Why two streams: a Spark-and-Kafka test waits much of its time (for a JVM to start, a
# transaction to time out, a killed driver's restart), and on 2 cores the main suite alone
# leaves about half the CPU idle. The second stream's output goes to a log, printed once both
# streams are done; the script fails if either stream does. So that the two streams take about as
# long, the main suite's files in $KPLEX_MOVED_TESTS (default: the stream timing, resume and
# idle tests) run in the second stream instead, after the other lines, on this pyspark, with a broker
# of their own. Last in the second stream, the benchmarks run at smoke size (every contender once
# on a small input; they check each output and assert no timing; KPLEX_BENCH_SMOKE= leaves them
# out). With pytest arguments (`bash scripts/test.sh tests/test_streaming.py -x`) only the main
# suite runs, whole.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
OTHER_SPARK=${KPLEX_OTHER_SPARK-3.5.7 4.3.0 4.2.0 4.0.1}
MOVED=${KPLEX_MOVED_TESTS-tests/test_stream_timing.py tests/test_stream_resume.py tests/test_stream_idle.py}
BENCH_SMOKE=${KPLEX_BENCH_SMOKE-yes}
KAFKA_3=${KPLEX_KAFKA_3-3.6.2}
PREPARED=""
if [ $# -eq 0 ] && [ -n "$OTHER_SPARK" ]; then
  PREPARED=$(mktemp -d -t kplex-prepared.XXXXXX)
  (
    # Each line's environment is made ahead of its turn, one after the other, from before the
    # set-up on: on a new machine, installing a line's pyspark overlaps the set-up or the tests
    # of the line before.
    for version in $OTHER_SPARK; do
      if bash scripts/test_spark_version.sh "$version" --prepare > "$PREPARED/$version.log" 2>&1; then
        touch "$PREPARED/$version.ok"
      else
        touch "$PREPARED/$version.failed"  # its turn installs again and shows why it fails
      fi
    done
  ) &
fi
bash scripts/setup.sh
LINES_LOG=""
IGNORED=()
if [ $# -eq 0 ] && [ -n "$OTHER_SPARK" ]; then
  for file in $MOVED; do IGNORED+=("--ignore=$file"); done
  LINES_LOG=$(mktemp -t kplex-lines.XXXXXX)
  (
    failed=""
    for version in $OTHER_SPARK; do
      while [ ! -e "$PREPARED/$version.ok" ] && [ ! -e "$PREPARED/$version.failed" ]; do sleep 2; done
      case "$version" in 3.5.*) kafka=$KAFKA_3 ;; *) kafka="" ;; esac
      line="pyspark $version${kafka:+, Kafka $kafka}"
      echo "test: [$line] started $(date +%T)"
      cat "$PREPARED/$version.log"
      if KPLEX_KAFKA_VERSION=${kafka:-${KPLEX_KAFKA_VERSION:-}} bash scripts/test_spark_version.sh "$version"; then
        echo "test: [$line] passed $(date +%T)"
      else
        echo "test: [$line] FAILED $(date +%T)"
        failed="$failed, $line"
      fi
    done
    if [ -n "$MOVED" ]; then
      echo "test: [moved from the main suite] $MOVED started $(date +%T)"
      # shellcheck disable=SC2086
      if "$PYTHON" -m pytest $MOVED -q -p no:cacheprovider --durations=10; then
        echo "test: [moved from the main suite] passed $(date +%T)"
      else
        echo "test: [moved from the main suite] FAILED $(date +%T)"
        failed="$failed, the main suite's $MOVED"
      fi
    fi
    if [ -n "$BENCH_SMOKE" ]; then
      echo "test: [benchmarks at smoke size] started $(date +%T)"
      if "$PYTHON" bench/run.py --smoke && "$PYTHON" bench/readtime/run.py --smoke; then
        echo "test: [benchmarks at smoke size] passed $(date +%T)"
      else
        echo "test: [benchmarks at smoke size] FAILED $(date +%T)"
        failed="$failed, the benchmarks at smoke size"
      fi
    fi
    [ -z "$failed" ] || { echo "test: the second stream FAILED:${failed#,}"; exit 1; }
  ) > "$LINES_LOG" 2>&1 &
  LINES=$!
  echo "test: the other Spark lines ($OTHER_SPARK), then $MOVED${BENCH_SMOKE:+, then the benchmarks at smoke size}, run meanwhile; their output: $LINES_LOG" >&2
fi

other_lines() {  # waits for the second stream and prints its output; fails if it failed
  [ -n "${LINES:-}" ] || return 0
  local status=0
  wait "$LINES" || status=$?
  echo "test: ---- the other Spark lines ($OTHER_SPARK) ----" >&2
  cat "$LINES_LOG" >&2
  return "$status"
}

main_suite() {
  echo "test: lint (ruff: Python lint and import order; checkstyle: Java)" >&2
  "$PYTHON" -m ruff check --config python/pyproject.toml . || return
  { gradle -q --offline checkstyleMain checkstyleTest 2>/dev/null || gradle -q checkstyleMain checkstyleTest; } || return
  echo "test: JVM unit tests (gradle test)" >&2
  { gradle -q --offline test 2>/dev/null || gradle -q test; } || return
  echo "test: the whole suite on pyspark $("$PYTHON" -c 'import pyspark; print(pyspark.__version__)')" >&2
  "$PYTHON" -m pytest tests -q -p no:cacheprovider --durations=60 ${IGNORED[@]+"${IGNORED[@]}"} "$@"
}

main_status=0
main_suite "$@" || main_status=$?
lines_status=0
other_lines || lines_status=$?
if [ "$main_status" -ne 0 ]; then
  echo "test: the main suite FAILED (exit $main_status)" >&2
  exit "$main_status"
fi
exit "$lines_status"
