#!/usr/bin/env bash
# Installs everything (scripts/setup.sh), then runs the whole test suite against a
# real Kafka broker (the local one, or $KPLEX_BOOTSTRAP) and real Spark.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec "${PYTHON:-python3}" -m pytest tests -q -p no:cacheprovider "$@"
