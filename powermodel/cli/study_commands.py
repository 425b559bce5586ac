"""``powermodel check``, ``sweep``, ``size`` and ``export``: a scenario (or a measured trace)
measured by the utilities' rules, run over swept keys and seeds, sized by its mitigations,
or written for a grid tool.
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from powermodel import export, output, rules, sizing, sweep
from powermodel.analysis import resample_factor
from powermodel.cli.codes import NO_RUN, VIOLATED
from powermodel.cli.common import (
    _check_parallel,
    _given_rules,
    _loaded,
    _running,
    _runs,
    _simulated,
    _warn,
    _wrote,
)
from powermodel.cli.tables import TERMINAL, _table
from powermodel.errors import PowerModelError
from powermodel.rules import describe
from powermodel.scenario import parse_overrides, shorten
from powermodel.sensitivity import Runner, check_seeds, check_sensitivity, seed_count

MAX_SUMMARY_ROWS = 50  # points the sweep's summary prints; the results file holds them all


# What ``check`` is given that is neither a scenario nor a trace it reads, and the fix
NOT_A_TARGET = {
    ".gz": "compressed: decompress it to .csv first (gunzip)",
    ".zip": "an archive: extract the .csv from it first",
    ".bz2": "compressed: decompress it to .csv first (bunzip2)",
    ".xz": "compressed: decompress it to .csv first (unxz)",
    ".parquet": "a Parquet file: write the profile as .csv (powermodel run -o FILE.csv)",
    ".nc": "a NetCDF file: write the profile as .csv (powermodel run -o FILE.csv)",
}


def _check_target(target: str) -> bool:
    """Whether ``check``'s target is a measured trace (a ``.csv``) rather than a scenario;
    a file it can read as neither is refused, saying what it takes."""
    suffix = Path(target).suffix.lower()
    if suffix in NOT_A_TARGET:
        raise PowerModelError(
            f"check takes a preset name, a .toml scenario or a measured trace as a .csv (time, "
            f"P [MW]); {shorten(target, 200)} is {NOT_A_TARGET[suffix]}"
        )
    return suffix == ".csv"


def _check(args: argparse.Namespace) -> int:
    given = _given_rules(args)
    seed_count(args.seeds)
    trace = _check_target(args.target)
    if args.violations:
        rules.check_violations_path(args.violations)
    if trace and (
        args.sensitivity or args.seeds > 1 or args.overrides or args.workers or args.scheduler
    ):
        raise PowerModelError(
            "--sensitivity, --seeds, --set, --workers and --scheduler vary or run a scenario; "
            "a measured trace has none"
        )
    _check_parallel(args)
    # read what is to be checked before saying anything: a bad input is one line
    measured = rules.read_trace(args.target, args.power) if trace else None
    if measured is not None and measured.attrs.get("skipped"):
        _warn([measured.attrs["skipped"]])
    scenario = None if trace else _loaded(args.target, args.overrides)
    rule_list = given or rules.site_rules(scenario)
    with ExitStack() as stack:  # a cluster asked for is up before anything is said
        runner = None if trace else stack.enter_context(_runs(args, scenario))[0]
        return _print_check(args, rule_list, measured, scenario, runner)


def _print_check(
    args: argparse.Namespace,
    rule_list: list[rules.Rule],
    measured: Any,
    scenario: Any,
    runner: Runner | None,
) -> int:
    demand = args.registered_demand
    trace = scenario is None
    for rule in rule_list:
        print(f"{rule.name} [{rule.status}]: {describe(rule)}")
        if rule.choices:
            print(f"  choices: {rule.choices}")
    print()
    if trace:
        results, refused = rules.check_each(measured, rule_list, demand)
        per_seed = [results]
    else:
        per_seed, refused = check_seeds(scenario, rule_list, args.seeds, demand, runner)
    print(_table(rules.summary(per_seed, refused), TERMINAL))
    causes = rules.by_cause(per_seed)
    if not causes.empty:
        print("\nviolations by cause:")
        print(_table(causes, TERMINAL))
    if args.violations:
        rules.write_violations(rules.violations_table(per_seed), args.violations)
        _wrote(args.violations)
    judged = [r.rule for r in per_seed[0]]
    if args.sensitivity and not trace and judged:
        print()
        table = check_sensitivity(scenario, judged, demand, runner)
        print(_table(table))
    if any(not r.passed for rs in per_seed for r in rs):
        return VIOLATED
    if refused:
        raise PowerModelError("no verdict: " + "; ".join(no.reason for no in refused))
    return 0


def _sweep(args: argparse.Namespace) -> int:
    _check_parallel(args)
    if args.seeds is not None:
        seed_count(args.seeds)
    spec = sweep.read_sweep(args.file)
    output = sweep.check_output(args.output)
    started = time.perf_counter()
    ds = sweep.sweep(
        spec.base,
        spec.grid,
        spec.seeds if args.seeds is None else args.seeds,
        overrides={**spec.overrides, **parse_overrides(args.overrides)},
        rules=spec.rules if args.rules is None else args.rules,
        registered_demand=spec.registered_demand,
        series=spec.series,
        workers=args.workers,
        scheduler=args.scheduler,
        progress=sys.stderr.isatty(),
    )
    elapsed = time.perf_counter() - started
    path = sweep.write(ds, output)  # first: what ran is kept whatever printing meets
    table = sweep.summary(ds)
    shown = table.head(MAX_SUMMARY_ROWS)
    print(_table(shown))
    if len(table) > len(shown):
        print(f"... {len(table) - len(shown):,} more points in {path}")
    for note in table.attrs.get("notes", []):
        print(note)
    failed = int((ds["error"] != "").sum())
    runs = ds["error"].size
    print(f"\n{runs - failed:,} of {runs:,} runs ran in {elapsed:.1f} s")
    _wrote(path)
    if note := sweep.dropped_series(ds, path):
        print(note)
    if failed:
        _warn([f"{failed:,} of {runs:,} runs failed: their reasons are in the error variable"])
    return NO_RUN if failed == runs else 0


def _size(args: argparse.Namespace) -> int:
    given = _given_rules(args)
    _check_parallel(args)
    scenario = _loaded(args.scenario, args.overrides)
    rule_list = given or rules.site_rules(scenario)
    base = _simulated(scenario)  # before a local cluster's workers fork: they start warm
    with _runs(args, scenario) as (runner, width):
        table = sizing.size(
            scenario,
            rule_list,
            args.registered_demand,
            progress=_running,
            runner=runner,
            width=width,
            base=base,
        )
    print(_table(sizing.printable(table)))
    return 0


def _export(args: argparse.Namespace) -> int:
    output.check_directory(args.output)
    scenario = _loaded(args.scenario, args.overrides)
    step = args.resample or export.TOOLS[args.to].step
    if step is not None:
        resample_factor(scenario.simulation.n_steps, scenario.simulation.dt, step)
    _wrote(*export.export_tool(_simulated(scenario), args.to, args.output, args.resample))
    return 0
