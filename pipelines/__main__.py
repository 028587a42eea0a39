"""`python -m pipelines <command>`: the command-line entry (pipelines.cli)."""

import sys

from pipelines.cli import main

sys.exit(main())
