#!/usr/bin/env bash
# Installs everything, starts the local Kafka broker, and runs the seed article's
# example: pageviews (3 partitions, keyed by page) repartitioned by user onto 9
# virtual partitions ordered by viewtime, then checked with a plain consumer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
BOOTSTRAP=${KPLEX_BOOTSTRAP:-$(bash scripts/kafka.sh start)}
echo "demo: Kafka at $BOOTSTRAP (stop it with: bash scripts/kafka.sh stop)" >&2
exec "${PYTHON:-python3}" -m kplex demo --bootstrap "$BOOTSTRAP" "$@"
