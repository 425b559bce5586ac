"""The console entry point, ``powermodel`` (:func:`main`): parse, run the command, turn what it
raised into one line and an exit code.

The top of the command line: the parser (:mod:`powermodel.cli.parser`) names the command's
function in ``args.func``; errors of the input exit 1, an interrupt 130 or 143, a broken pipe
141, a defect of powermodel's 70.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

from powermodel.cli.codes import BROKEN_PIPE, INTERNAL, MODEL_SUFFIXES
from powermodel.cli.parser import _parser
from powermodel.errors import PowerModelError


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)  # --version and --help exit here, before the imports below
    from powermodel import allocator, output  # noqa: PLC0415 - ctypes and tempfile: 10 ms

    allocator.keep_freed_memory()  # a batch process: its temporaries' pages serve the next ones
    try:
        # SIGTERM unwinds as Ctrl-C does; an interrupt names the outputs it kept from being made
        with output.interruptible(), output.recorded() as written:
            return args.func(args)
    except BrokenPipeError:  # the reader stopped early (`| head`): not an error of the input
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush is silent too
        return BROKEN_PIPE
    except (PowerModelError, OSError) as exc:
        if args.debug:
            raise
        print(f"powermodel: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt as exc:
        made = {os.path.abspath(path) for path in written}
        lost = [name for name in _outputs(args) if os.path.abspath(name) not in made]
        said = f": {' and '.join(lost)} {'was' if len(lost) == 1 else 'were'} not written"
        print(f"powermodel: interrupted{said if lost else ''}", file=sys.stderr)
        return exc.code if isinstance(exc, output.Interrupted) else 128 + signal.SIGINT
    except Exception as exc:  # a defect of powermodel's, not of the input: one line still
        if args.debug:
            raise
        print(
            f"powermodel: internal error: {type(exc).__name__}: {exc} (a defect: please report "
            "it with the output of --debug)",
            file=sys.stderr,
        )
        return INTERNAL


def _outputs(args: argparse.Namespace) -> list[str]:
    """The files (for an export, the folder) the command was asked to write, as named."""
    if args.command == "ride-through":
        names = [args.model + suffix for suffix in MODEL_SUFFIXES] if args.model else []
    else:
        names = [getattr(args, key, None) for key in ("output", "violations", "report")]
    return [name for name in names if name]
