"""What the commands share: the scenario loaded with its notes and warnings said, the run
simulated after its memory is checked, and where a command's runs go.

Below the commands' modules (``powermodel.cli.*_commands``) and above the API they call.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

from powermodel import sweep
from powermodel.engine.preflight import check_memory
from powermodel.rules import load_rules
from powermodel.scenario import load_scenario
from powermodel.sensitivity import Runner
from powermodel.simulate import memory_estimate, simulate


@contextmanager
def _runs(args: argparse.Namespace, scenario: Any) -> Iterator[tuple[Runner | None, int]]:
    """What maps a scenario's runs and how many it runs at once: dask as ``--workers``/
    ``--scheduler`` ask (one cluster for the whole command), else None (in turn, dask.distributed
    not imported)."""
    with sweep.cluster(
        args.workers or 0, args.scheduler, memory=memory_estimate(scenario)
    ) as client:
        if client is None:
            yield None, 1
        else:
            yield (
                partial(sweep.run_all, client=client, progress=sys.stderr.isatty()),
                sweep.threads(client),
            )


def _check_parallel(args: argparse.Namespace) -> None:
    """``--workers`` and ``--scheduler``, before anything is read or run."""
    sweep.check_placement(args.workers, args.scheduler)


def _warn(warnings: list[str]) -> None:
    """Each warning, one line on stderr."""
    for warning in warnings:
        print(f"powermodel: warning: {warning}", file=sys.stderr)


def _loaded(source: str, overrides: list[str]) -> Any:
    """The scenario a command runs, with what loading chose (the job in the hall, the node a
    GPU brings) and kept against it said on stderr."""
    scenario = load_scenario(source, overrides)
    for note in scenario.notes:
        print(f"powermodel: note: {note}", file=sys.stderr)
    _warn(scenario.warnings)
    return scenario


def _name_of(scenario: Any, source: str) -> str:
    """What a command's output calls the scenario: its name, else as it was given."""
    return scenario.name or source


def _simulated(scenario: Any, sensors: Sequence[str] = (), budget: float | None = None) -> Any:
    """The scenario's run (with ``sensors``' views), its memory checked first against ``budget``
    [B] (None: what the machine has available): a run that would not fit is one line before
    any work."""
    check_memory(scenario, len(sensors), budget)
    return simulate(scenario, sensors=sensors)


def _given_rules(args: argparse.Namespace) -> list[Any] | None:
    """The rules ``--rules`` names, read before any work (a bad name is one line); None: the
    scenario's own."""
    return None if args.rules is None else load_rules(args.rules)


def _progress(text: str) -> None:
    """A step of a long command, on stderr under its command line."""
    print(f"  {text}", file=sys.stderr)


def _running(step: str) -> None:
    """A run a command makes, as its progress."""
    _progress(f"running {step}")


def _wrote(*paths: Any) -> None:
    """Each file or folder written, one line (a path not given: none)."""
    for path in paths:
        if path:
            print(f"wrote {path}")
