"""Serve the powermodel dashboard: ``python app.py [--host HOST] [--port PORT] [--debug]``.

The same server as ``powermodel dashboard`` (:mod:`powermodel.webapp.serve`, where its limits
and hardening are described): waitress on 127.0.0.1 unless ``--host`` says otherwise, its
memory, simulations and uploads bounded, its working folder removed on every way out (Ctrl-C
and SIGTERM exit with the shell's codes, 130 and 143).
"""

from __future__ import annotations

import argparse
import sys

from powermodel.errors import PowerModelError
from powermodel.webapp import REFERENCE_SCENARIO
from powermodel.webapp.serve import CannotServe, add_arguments, check_arguments, serve


def main(argv: list[str] | None = None) -> int:
    """Serve until stopped; the exit code (0, or 128 + the signal that stopped it)."""
    parser = argparse.ArgumentParser(
        description="Serve the powermodel dashboard.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    add_arguments(parser)
    parser.add_argument("--preset", default=REFERENCE_SCENARIO, help="scenario shown first")
    args = parser.parse_args(argv)
    refused = check_arguments(args)
    if refused:
        parser.error(refused)
    try:
        return serve(args, args.preset)
    except CannotServe as exc:
        parser.exit(1, f"powermodel: {exc}\n")
    except PowerModelError as exc:  # a preset or --set that does not load: in its words
        parser.error(str(exc))


if __name__ == "__main__":
    sys.exit(main())
