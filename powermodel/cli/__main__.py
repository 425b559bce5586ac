"""``python -m powermodel.cli``: the console entry point, as ``powermodel`` runs it."""

import sys

from powermodel.cli.entry import main

sys.exit(main())
