"""``scripts/kafka.sh`` runs this: the local Kafka broker's command line, which lives in
:mod:`kplex.testing.local_kafka` (see its docstring)."""
from __future__ import annotations

import sys

from kplex.testing.local_kafka import main

if __name__ == "__main__":
    sys.exit(main())
