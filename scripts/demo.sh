#!/usr/bin/env bash
# Installs everything, starts the local Kafka broker, and runs the seed article's
# example: pageviews (3 partitions, keyed by page) repartitioned by user onto 9
# virtual partitions ordered by viewtime, then checked with a plain consumer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [ -n "${KPLEX_BOOTSTRAP:-}" ]; then
  # Someone's cluster: the demo's topics there are replaced only when asked (--replace).
  BOOTSTRAP=$KPLEX_BOOTSTRAP
  REPLACE=()
else
  # The project's own local broker: the demo's topics there are the demo's.
  BOOTSTRAP=$(bash scripts/kafka.sh start)
  REPLACE=(--replace)
  echo "demo: Kafka at $BOOTSTRAP (stop it with: bash scripts/kafka.sh stop)" >&2
fi
exec "${PYTHON:-python3}" -m kplex demo --bootstrap "$BOOTSTRAP" "${REPLACE[@]}" "$@"
