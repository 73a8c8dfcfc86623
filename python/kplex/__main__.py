import sys

from kplex.cli import main

sys.exit(main())
