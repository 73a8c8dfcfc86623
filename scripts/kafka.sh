#!/usr/bin/env bash
# The local Apache Kafka broker for tests, the demo and benchmarks.
#
#   scripts/kafka.sh start [--brokers N] [--dir DIR]   # prints only the bootstrap address
#   scripts/kafka.sh status [--dir DIR]                # prints it, or exits 1
#   scripts/kafka.sh stop [--dir DIR]
#   scripts/kafka.sh jars                              # prints the broker jars' directory
#
# All the work is in kplex.testing.local_kafka (python/kplex/testing/local_kafka.py).
set -euo pipefail
exec "${PYTHON:-python3}" "$(dirname "${BASH_SOURCE[0]}")/local_kafka.py" "$@"
