"""``powermodel ride-through`` and ``powermodel screen``: a scenario's grid disturbances (the
site's response, the requirements, the planners' dynamic model) and its forced oscillations
against the grid's modes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from powermodel import output
from powermodel.cli.codes import MODEL_SUFFIXES, VIOLATED
from powermodel.cli.common import _loaded, _name_of, _simulated, _wrote
from powermodel.cli.tables import TERMINAL, _print_ride_through, _table
from powermodel.errors import PowerModelError


def _ride_through(args: argparse.Namespace) -> int:
    from powermodel import ride_through  # noqa: PLC0415 - only this command needs it

    requirements = ride_through.load_requirements(args.requirements)
    scenario = _loaded(args.scenario, args.overrides)
    if scenario.disturbance is None:
        raise PowerModelError(
            f"{args.scenario} has no grid disturbance: give [disturbance] (e.g. --set "
            "disturbance.sequence=nerc-2024-07-virginia --set disturbance.start=...)"
        )
    if args.model:
        from powermodel.engine import disturbances

        for suffix in MODEL_SUFFIXES:  # both places, before the run
            output.check_folder(args.model + suffix)
        count = disturbances.response(scenario).triggers.time.size
        if not 0 <= args.disturbance < count:
            raise PowerModelError(
                f"--disturbance {args.disturbance}: the scenario has {count} disturbances "
                f"(0 to {count - 1}): give one of them"
            )
    ds = _simulated(scenario)
    report = ride_through.report(ds)
    print(f"{_name_of(scenario, args.scenario)}: {len(report)} disturbances\n")
    print(_table(report, TERMINAL))
    print()
    _print_ride_through(ride_through.summary(ds))
    verdicts = ride_through.check(ds, requirements)
    print("\nrequirements:")
    for row in verdicts.itertuples():
        print(f"  {row.requirement} [{row.status}]: {row.verdict}: {row.detail}")
        print(f"    source: {row.source}")
    if args.model:
        fit = ride_through.site_model(ds, args.disturbance, bus=args.bus)
        print(f"\ndynamic model, fitted to disturbance {args.disturbance}:")
        print(_table(fit.comparison))
        model = Path(args.model)
        with output.staged_folder(model.parent) as stage:  # the pair, or neither
            for suffix, text in zip(MODEL_SUFFIXES, (fit.dyr, fit.aux), strict=True):
                (stage / (model.name + suffix)).write_text(text, encoding="utf-8")
        _wrote(*(args.model + suffix for suffix in MODEL_SUFFIXES))
    return VIOLATED if (verdicts["verdict"] == "fail").any() else 0


def _screen(args: argparse.Namespace) -> int:
    from powermodel import oscillation  # noqa: PLC0415 - only this command needs it

    modes = oscillation.load_modes(args.modes)
    scenario = _loaded(args.scenario, args.overrides)
    ds = _simulated(scenario)
    table = oscillation.screen_dataset(ds, modes, args.signal)
    units = table.attrs["units"]
    print(f"{_name_of(scenario, args.scenario)}: {args.signal} against {len(modes)} grid modes\n")
    named = {c: f"{c} [{u}]" for c, u in units.items() if u not in ("", "unit")}
    print(_table(table.rename(columns=named)))
    if args.pmu:
        view = oscillation.pmu_table(ds, table["line_frequency"].to_numpy(), args.pmu, args.signal)
        print(f"\nwhat {args.pmu} reports of each mode's strongest line:")
        print(_table(view))
    return VIOLATED if (table["verdict"] == "flag").any() else 0
