"""``python -m ragrig`` runs the command line."""

import sys

from ragrig.flows.cli import main

sys.exit(main())
