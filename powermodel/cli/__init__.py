"""Command line: parse, call the API, print, exit code. No model logic here.

Errors print one line and exit with code 1; ``--debug`` shows the traceback instead. Ctrl-C and
SIGTERM stop a command the same way (its unfinished output removed, one line naming it) with the
shell's codes, 130 and 143. Every output appears whole or not at all (:mod:`powermodel.output`),
its folder checked before any work. ``check``
exits 0 when every rule passes and 3 when some rule is violated (2 is argparse's usage error);
``reproduce`` exits 0 when every published anchor passes and 3 when some fails; ``sweep`` exits
0 when some run ran and 3 when none did (their errors are in the results file).
A defect of powermodel itself (an exception that is not about the input) is one line too, with
exit code 70.

The package: :mod:`~powermodel.cli.entry` (:func:`main`), :mod:`~powermodel.cli.parser` (the
options, one function a group of commands), the commands by group
(:mod:`~powermodel.cli.run_commands`, :mod:`~powermodel.cli.study_commands`,
:mod:`~powermodel.cli.measurement_commands`, :mod:`~powermodel.cli.dynamics_commands`,
:mod:`~powermodel.cli.site_commands`), what they share (:mod:`~powermodel.cli.common`) and how
they print (:mod:`~powermodel.cli.tables`); the exit codes are :mod:`~powermodel.cli.codes`.
"""

from __future__ import annotations

from powermodel.cli.entry import main

__all__ = ["main"]
