#!/usr/bin/env bash
# Installs what kplex needs on a fresh Debian machine with Java 17, Python 3 and Maven:
# Gradle (Debian's package), the Python packages, the plugin jar (built into
# python/kplex/jars) and the Kafka broker jars (resolved from Maven Central).
# Safe to run again: each step is skipped when already done.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

if ! command -v gradle >/dev/null 2>&1; then
  echo "setup: installing gradle (Debian package)" >&2
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq gradle >/dev/null
fi

echo "setup: installing Python packages" >&2
"$PYTHON" -m pip install -q --disable-pip-version-check -r requirements.txt

echo "setup: building the JVM plugin" >&2
gradle -q --offline bundleJars 2>/dev/null || gradle -q bundleJars

echo "setup: installing the kplex package" >&2
"$PYTHON" -m pip install -q --disable-pip-version-check --no-deps -e python

echo "setup: resolving the Kafka broker jars" >&2
bash scripts/kafka.sh jars >/dev/null
echo "setup: done" >&2
