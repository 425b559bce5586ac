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
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import textwrap
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from powermodel import allocator, export, fit_report, output, reproduce, rules, sizing, sweep
from powermodel._version import __version__
from powermodel.analysis import (
    flexibility,
    metrics,
    part,
    resample_factor,
    sensor_swings,
    workloads,
)
from powermodel.engine.derive import derive
from powermodel.engine.facility import design_conditions, design_day, idle_gpus
from powermodel.engine.preflight import available_memory, check_memory, preflight, streamable
from powermodel.errors import PowerModelError
from powermodel.fit import REFERENCE, summary
from powermodel.fit_report import comparison_table, fit_trace
from powermodel.iotools.telemetry import FORMATS
from powermodel.reference import keys as scenario_keys
from powermodel.reference import text as keys_text
from powermodel.rules import describe, load_rules, rule_names
from powermodel.scenario import (
    format_duration,
    load_scenario,
    parse_duration,
    parse_overrides,
    presets,
    shorten,
)
from powermodel.sensitivity import (
    Runner,
    check_seeds,
    check_sensitivity,
    seed_count,
    sensitivity,
)
from powermodel.simulate import SENSORS, memory_estimate, simulate


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
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
        names = [args.model + suffix for suffix in (".dyr", ".aux")] if args.model else []
    else:
        names = [getattr(args, key, None) for key in ("output", "violations", "report")]
    return [name for name in names if name]


def _trace_arguments(parser: argparse.ArgumentParser) -> None:
    """How a trace is read, the same for ``fit`` and ``predict``."""
    parser.add_argument("--format", choices=FORMATS, help="the trace's format (default: detected)")
    parser.add_argument("--period", help="sampling period, e.g. 100ms (needed by dcgmi dmon)")
    parser.add_argument(
        "--gpus-per-node", type=int, help="GPUs behind each channel of a meter trace"
    )
    parser.add_argument(
        "--gpus",
        type=int,
        help="GPUs per poll of an nvidia-smi log without index (default: inferred from the "
        "per-GPU memory, temperature or idle power)",
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="powermodel",
        description="Power and thermal fluctuations of AI training datacenters.",
    )
    parser.add_argument("--version", action="version", version=f"powermodel {__version__}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", help="show tracebacks")
    scenario_keys = argparse.ArgumentParser(add_help=False)
    scenario_keys.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a scenario key, e.g. --set cluster.n_gpus=131072 (repeatable; any GPU "
        "count of a node or more: the job takes the whole replicas of its layout the hall "
        "holds, the rest idle; cluster.gpu brings the GPU's node; notes on stderr say what was "
        "chosen)",
    )
    with_scenario = [common, scenario_keys]
    rule_args = argparse.ArgumentParser(add_help=False)
    rule_args.add_argument(
        "--rules",
        help="comma-separated rule or group names, or .toml rule files (default: the scenario's "
        "grid.rules): " + ", ".join(rule_names()),
    )
    rule_args.add_argument("--registered-demand", type=float, help="MW, overrides the scenario's")
    parallel = argparse.ArgumentParser(add_help=False)
    parallel.add_argument(
        "--workers",
        type=int,
        help="run on a local dask cluster of this many processes (0: one run after another in "
        "this process); sweep's default: in turn when the runs together take under two million "
        "steps, else the cores (as many as the memory holds); other commands: in turn",
    )
    parallel.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the dask cluster of this scheduler, e.g. tcp://10.0.0.5:8786 (not with "
        "--workers)",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="command")

    run = sub.add_parser("run", parents=with_scenario, help="simulate a scenario")
    run.add_argument("scenario", help="preset name or path to a .toml scenario")
    run.add_argument("-o", "--output", help="write the profile: .csv, .parquet or .nc")
    run.add_argument("--resample", help="write interval means with min and max, e.g. 1min")
    run.add_argument(
        "--timezone",
        metavar="ZONE",
        help="a CSV: add the local time beside UTC, as spreadsheets read it; an IANA name "
        "(America/Chicago) or 'site' (the scenario's site.timezone)",
    )
    run.add_argument(
        "--sensitivity",
        action="store_true",
        help="also rerun at the low and high end of each sourced range and tabulate",
    )
    run.add_argument(
        "--sensor",
        dest="sensors",
        action="append",
        default=[],
        choices=list(SENSORS),
        help="also write the signal as this instrument reports it (repeatable): "
        + "; ".join(f"{k}: {c.variable}, {c.label}" for k, c in SENSORS.items()),
    )
    run.add_argument(
        "--part",
        metavar="workload=NAME|hall=NAME",
        help="a campus: summarise and write one workload or hall as a run of its own (its share "
        "of the site's losses and plant allocated by its IT power; powermodel.analysis.part)",
    )
    run.add_argument(
        "--memory-gb",
        type=float,
        help="memory the run may take [GB] (default: what the machine has available); a larger "
        "run is streamed to -o FILE.parquet or .csv in parts",
    )
    run.set_defaults(func=_run)

    validate = sub.add_parser("validate", parents=with_scenario, help="check a scenario, no run")
    validate.add_argument("scenario")
    validate.set_defaults(func=_validate)

    check = sub.add_parser(
        "check",
        parents=[*with_scenario, rule_args, parallel],
        help="measure a scenario or a CSV trace by utility rules (exit 0 pass, 3 violated)",
    )
    check.add_argument("target", help="preset name, .toml scenario, or .csv trace (time, P [MW])")
    check.add_argument("--seeds", type=int, default=1, help="run this many seeds; P50 and P95")
    check.add_argument(
        "--sensitivity",
        action="store_true",
        help="also check at both ends of the scenario's sensitivity ranges (trough depth ...)",
    )
    check.add_argument(
        "--power", help="trace column of active power, by its header (e.g. 'P_meter [kW]')"
    )
    check.add_argument("--violations", help="write every violation to this CSV file")
    check.set_defaults(func=_check)

    sweeping = sub.add_parser(
        "sweep",
        parents=[*with_scenario, parallel],
        help="run a scenario over swept keys and seeds, on dask (docs: guides/sweeps)",
    )
    sweeping.add_argument(
        "file",
        help="the sweep: a .toml file with base, [grid] or [[points]] (exit 0, or 3 when no run "
        "ran)",
    )
    sweeping.add_argument(
        "-o", "--output", required=True, help="results: .nc (NetCDF) or .csv (one row per run)"
    )
    sweeping.add_argument("--seeds", type=int, help="runs per point (overrides the file's)")
    sweeping.add_argument("--rules", help="rules to check, comma-separated (overrides the file's)")
    sweeping.set_defaults(func=_sweep)

    size = sub.add_parser(
        "size",
        parents=[*with_scenario, rule_args, parallel],
        help="for each rule, the gentlest setting of each mitigation that makes it pass",
    )
    size.add_argument("scenario", help="preset name or .toml scenario")
    size.set_defaults(func=_size)

    exporting = sub.add_parser(
        "export", parents=with_scenario, help="write what the grid sees for a grid tool"
    )
    exporting.add_argument("scenario", help="preset name or .toml scenario")
    exporting.add_argument(
        "--to",
        required=True,
        choices=list(export.TOOLS),
        help="; ".join(f"{k}: {v.description}" for k, v in export.TOOLS.items()),
    )
    exporting.add_argument("-o", "--output", required=True, help="directory to write into")
    exporting.add_argument(
        "--resample", help="step of the export (default: the tool's; envelopes when coarser)"
    )
    exporting.set_defaults(func=_export)

    fitting = sub.add_parser(
        "fit",
        parents=[common],
        help="calibrate a scenario on a measured GPU or meter trace (docs: guides/fit)",
    )
    fitting.add_argument(
        "trace",
        help="nvidia-smi log, dcgmi dmon, dcgm-exporter, rocm-smi or amd-smi CSV, meter CSV or "
        "MLPerf power log",
    )
    _trace_arguments(fitting)
    fitting.add_argument("--preset", default=REFERENCE, help=f"preset to extend ({REFERENCE})")
    fitting.add_argument(
        "--gpu",
        help="the GPU the trace was recorded on, from the catalogue (default: the preset's, or "
        "one built from the trace when its levels lie outside that GPU's idle to TDP)",
    )
    fitting.add_argument(
        "--sensor",
        help="the chain the trace was read through (default: NVML's 1-s average, or an "
        "instantaneous sample for power.draw.instant)",
    )
    fitting.add_argument("-o", "--output", required=True, help="the fitted scenario (.toml)")
    fitting.add_argument(
        "--report", help="write an HTML report of the trace against the prediction and the replay"
    )
    fitting.add_argument(
        "--holdout",
        default=str(fit_report.HOLDOUT),
        help="share of the trace held out at its end: fit the rest, predict it "
        f"(default {fit_report.HOLDOUT:g}; 0 for none)",
    )
    fitting.set_defaults(func=_fit)
    predicting = sub.add_parser(
        "predict",
        parents=with_scenario,
        help="predict another run of a job: a fitted scenario, with the key changed between the "
        "runs (--set), run afresh against that run's trace (docs: guides/fit)",
    )
    predicting.add_argument("scenario", help="the fitted .toml (or any scenario)")
    predicting.add_argument("trace", help="the other run's trace, as `fit` reads it")
    _trace_arguments(predicting)
    predicting.add_argument("--sensor", help="the chain the trace was read through")
    predicting.add_argument("--report", help="write an HTML report of the trace and prediction")
    predicting.set_defaults(func=_predict)
    again = sub.add_parser(
        "reproduce",
        parents=[common],
        help="the model against every published anchor (exit 0 all pass, 3 some fail)",
        description="Run the model against every public anchor in the references, print the "
        "table and write an HTML report with the plot behind each anchor.",
    )
    again.add_argument(
        "-o",
        "--output",
        default="reproduce.html",
        help="the HTML report (default: reproduce.html in the current folder)",
    )
    again.set_defaults(func=_reproduce)

    riding = sub.add_parser(
        "ride-through",
        parents=with_scenario,
        help="a scenario's grid disturbances: the site's response, the requirements, the "
        "planners' dynamic model (exit 0 pass, 3 a requirement failed)",
    )
    riding.add_argument("scenario", help="preset name or .toml scenario with [disturbance]")
    riding.add_argument(
        "--requirements", help="a .toml requirements file (default: the shipped ones)"
    )
    riding.add_argument(
        "--model",
        metavar="PREFIX",
        help="fit PERC1 and RATLLE's oscillation to the site's response and write PREFIX.dyr "
        "(PSS/E) and PREFIX.aux (PowerWorld)",
    )
    riding.add_argument(
        "--disturbance",
        type=int,
        default=0,
        help="the disturbance the model is fitted to, by its number in the report (default 0)",
    )
    riding.add_argument("--bus", type=int, default=1, help="the bus the records put the load on")
    riding.set_defaults(func=_ride_through)

    screening = sub.add_parser(
        "screen",
        parents=with_scenario,
        help="screen a scenario's forced oscillations against grid modes (exit 0 clear, 3 a "
        "mode flagged)",
    )
    screening.add_argument("scenario", help="preset name or .toml scenario")
    screening.add_argument(
        "--modes", required=True, help="grid modes: .toml ([[mode]] tables) or .csv"
    )
    screening.add_argument("--signal", default="grid_power", help="the variable to screen")
    screening.add_argument(
        "--pmu",
        choices=["pmu30", "pmu60"],
        help="also show what this PMU reports of the line nearest each mode",
    )
    screening.set_defaults(func=_screen)

    starting = sub.add_parser(
        "init",
        parents=[common],
        help="write a site's own scenario to edit: a preset's keys a site engineer changes "
        "first, with their units and choices",
    )
    starting.add_argument(
        "preset", nargs="?", default=REFERENCE, help=f"the preset it extends (default {REFERENCE})"
    )
    starting.add_argument("-o", "--output", required=True, help="the .toml file to write (new)")
    starting.set_defaults(func=_init)

    designing = sub.add_parser(
        "design",
        parents=with_scenario,
        help="the largest site of a preset's kind whose design peak stays within a grid "
        "connection; writes it as a scenario (docs: guides/scenarios)",
    )
    designing.add_argument(
        "preset", help="the kind of site: a single job grows in whole nodes, a campus by a factor"
    )
    designing.add_argument(
        "--grid-mw", type=float, required=True, help="the connection's rating [MW]"
    )
    designing.add_argument(
        "-o", "--output", required=True, help="the scenario to write (.toml): extends PRESET"
    )
    designing.set_defaults(func=_design)

    # the dashboard's options are the server's own (powermodel.webapp.serve, as app.py takes
    # them), parsed when the command runs so that building this parser imports no web stack
    serving = sub.add_parser(
        "dashboard",
        add_help=False,
        prefix_chars="+",  # every word, options too, left for the server's parser
        help="serve the dashboard at http://127.0.0.1:8050 (powermodel dashboard --help)",
    )
    serving.add_argument("argv", nargs="*")
    serving.format_help = _dashboard_help  # the reference's page shows the server's options
    serving.set_defaults(func=_dashboard)

    listing = sub.add_parser("presets", parents=[common], help="list the shipped presets")
    listing.set_defaults(func=_presets)
    reference = sub.add_parser(
        "keys", parents=[common], help="the scenario's keys: type, unit, default, bounds"
    )
    reference.add_argument("prefix", nargs="?", default="", help="only keys starting so")
    reference.set_defaults(func=_keys)
    parser.set_defaults(debug=False)
    return parser


def _run(args: argparse.Namespace) -> int:
    scenario = _loaded(args.scenario, args.overrides)
    if args.timezone == "site":
        args.timezone = scenario.site.timezone
    if args.timezone is not None and not args.output:
        raise PowerModelError("--timezone is a column of the output: give -o FILE.csv")
    if args.output:
        export.check_timezone(args.timezone, export.check_path(args.output))
    if args.resample:
        sim = scenario.simulation
        resample_factor(sim.n_steps, sim.dt, args.resample)
    budget = _memory_budget(args.memory_gb)
    limit = available_memory() if budget is None else budget
    if memory_estimate(scenario, len(args.sensors)) > limit and _streams(args, scenario):
        return _stream(args, scenario, limit)
    check_memory(scenario, len(args.sensors), budget)
    started = time.perf_counter()
    ds = simulate(scenario, sensors=args.sensors)
    elapsed = time.perf_counter() - started
    if args.part:
        ds = part(ds, **_part(args.part))
    seen = _sensor_rows(ds, args.sensors)
    _print_summary(scenario.name or args.scenario, metrics(ds), ds.attrs, elapsed, seen)
    for title, table in (("workloads", workloads(ds)), ("flexibility", flexibility(ds))):
        if not table.empty:
            print(f"\n{title}:\n{_table(table)}")
    if "disturbance_time" in ds:
        from powermodel import ride_through  # noqa: PLC0415 - only a disturbed run needs it

        print("\ngrid disturbances (powermodel ride-through for each and the requirements):")
        _print_ride_through(ride_through.summary(ds))
    if args.output:
        path = export.write(ds, args.output, resample=args.resample, timezone=args.timezone)
        print(f"wrote {path}")
    if args.sensitivity:
        table = sensitivity(scenario, progress=lambda s: print(f"  running {s}", file=sys.stderr))
        print()
        print(_table(table.drop(columns="source")))
        print("\nranges:")
        for key, source in table[["key", "source"]].drop_duplicates().values[1:]:
            print(f"  {key}: {source}")
    return 0


# what a summary's value that was not seen means (powermodel.ride_through.summary)
NOT_SEEN = {"return ramp [s]": "none: the site never left the grid (its share never fell to 1 %)"}


def _print_ride_through(summary: dict[str, float]) -> None:
    """The disturbances' summary, one line each; a value not seen says why."""
    for key, value in summary.items():
        if isinstance(value, float) and not np.isfinite(value):
            shown = NOT_SEEN.get(key, "not measured")
        else:
            shown = _fmt(value) if isinstance(value, float) else value
        print(f"  {key}: {shown}")


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
        from powermodel.engine import disturbances  # noqa: PLC0415 - only a model needs the count

        for suffix in (".dyr", ".aux"):  # both places, before the run
            output.check_folder(args.model + suffix)
        count = disturbances.response(scenario).triggers.time.size
        if not 0 <= args.disturbance < count:
            raise PowerModelError(
                f"--disturbance {args.disturbance}: the scenario has {count} disturbances "
                f"(0 to {count - 1}): give one of them"
            )
    check_memory(scenario)
    ds = simulate(scenario)
    report = ride_through.report(ds)
    print(f"{scenario.name or args.scenario}: {len(report)} disturbances\n")
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
            for suffix, text in ((".dyr", fit.dyr), (".aux", fit.aux)):
                (stage / (model.name + suffix)).write_text(text, encoding="utf-8")
        for suffix in (".dyr", ".aux"):
            print(f"wrote {args.model + suffix}")
    return 3 if (verdicts["verdict"] == "fail").any() else 0


def _screen(args: argparse.Namespace) -> int:
    from powermodel import oscillation  # noqa: PLC0415 - only this command needs it

    modes = oscillation.load_modes(args.modes)
    scenario = _loaded(args.scenario, args.overrides)
    check_memory(scenario)
    ds = simulate(scenario)
    table = oscillation.screen_dataset(ds, modes, args.signal)
    units = table.attrs["units"]
    print(f"{scenario.name or args.scenario}: {args.signal} against {len(modes)} grid modes\n")
    named = {c: f"{c} [{u}]" for c, u in units.items() if u not in ("", "unit")}
    print(_table(table.rename(columns=named)))
    if args.pmu:
        view = oscillation.pmu_table(ds, table["line_frequency"].to_numpy(), args.pmu, args.signal)
        print(f"\nwhat {args.pmu} reports of each mode's strongest line:")
        print(_table(view))
    return 3 if (table["verdict"] == "flag").any() else 0


def _memory_budget(gigabytes: float | None) -> float | None:
    """The memory a run may take [B] by ``--memory-gb``; None: what the machine has available."""
    if gigabytes is None:
        return None
    if not (np.isfinite(gigabytes) and gigabytes > 0):
        raise PowerModelError(f"--memory-gb must be a number of GB > 0, got {gigabytes:g}")
    return gigabytes * 1e9


def _streams(args: argparse.Namespace, scenario: Any) -> bool:
    """Whether a run over its memory budget can be streamed to its output file in parts."""
    from powermodel.stream import STREAMED

    if not args.output or Path(args.output).suffix not in STREAMED:
        return False
    if streamable(scenario, len(args.sensors)) is not None:
        return False
    if args.resample or args.sensitivity:
        option = "--resample" if args.resample else "--sensitivity"
        raise PowerModelError(
            f"the run is over its memory budget and streams to {args.output} in parts, which "
            f"{option} cannot follow: leave out {option} (resample the file afterwards), or "
            "shorten simulation.duration"
        )
    return True


def _stream(args: argparse.Namespace, scenario: Any, budget: float) -> int:
    """Stream a run too large for memory to its output file, with a progress bar."""
    from tqdm import tqdm

    from powermodel import stream

    print(f"powermodel: {stream.describe(scenario, budget)}", file=sys.stderr)
    steps = 2 * scenario.simulation.n_steps  # two passes: the plant's means, then the profile
    bar = tqdm(total=steps, unit="step", unit_scale=True, delay=2.0, file=sys.stderr)
    measures = stream.Measures()  # the metrics accumulated chunk by chunk, as in memory
    started = time.perf_counter()
    with bar:
        path = stream.stream(
            scenario, args.output, stream.chunk_steps(budget), bar.update, measures, args.timezone
        )
    elapsed = time.perf_counter() - started
    _print_summary(scenario.name or args.scenario, measures.metrics, measures.attrs, elapsed)
    print(f"wrote {path}")
    return 0


def _validate(args: argparse.Namespace) -> int:
    scenario = _loaded(args.scenario, args.overrides)
    derived, _, _ = preflight(scenario)

    def checkpoints(derived: Any) -> str:
        every = format_duration(round(derived.checkpoint_interval))
        return (
            f"checkpoint every {every} ({derived.checkpoint_stall:.1f} s stall)"
            if derived.checkpoints
            else "no checkpoints (no failures expected)"
        )

    if scenario.campus is None:
        print(
            f"{scenario.name or args.scenario}: ok — {_gpus(scenario)}, step "
            f"{derived.step_time:.2f} s, {checkpoints(derived)}"
        )
    else:
        print(f"{scenario.name or args.scenario}: ok — a campus of {len(scenario.parts)} workloads")
        for w, part in zip(scenario.campus.workloads, scenario.parts, strict=True):
            d = derive(part)
            what = (
                f"step {d.step_time:.2f} s, {checkpoints(d)}"
                if w.kind == "training"
                else "inference fleet"
            )
            print(f"  {w.name}: {_gpus(part)}, {what}")
    if design_conditions(scenario) is not None:
        day = design_day(scenario)
        print(
            # four significant digits: a 25 MW hall's to 10 kW, one node's to 10 W
            "ASHRAE 0.4 % cooling design day ({design_temp_air:.1f} °C), nameplate IT: facility "
            "peak {peak_facility_mw:.4g} MW (cooling {peak_cooling_mw:.4g} MW, PUE "
            "{peak_pue:.3f}), supply up to {max_supply_temp:.1f} °C".format(**day)
        )
    elif scenario.grid.registered_demand is None:
        print(
            f"weather {scenario.site.weather!r} has no ASHRAE design day, so no registered "
            "demand: rules relative to it (nprr1191, ieso-sso) need grid.registered_demand"
        )
    return 0


VIOLATED = 3
NO_RUN = 3  # a sweep none of whose runs ran
MAX_SUMMARY_ROWS = 50  # points the sweep's summary prints; the results file holds them all
INTERNAL = 70  # EX_SOFTWARE of sysexits.h
BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a command whose reader went away


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
    given = None if args.rules is None else load_rules(args.rules)  # a bad name before any work
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
        print(f"powermodel: warning: {measured.attrs['skipped']}", file=sys.stderr)
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
        print(f"wrote {args.violations}")
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
    print(f"wrote {path}")
    if note := sweep.dropped_series(ds, path):
        print(note)
    if failed:
        print(
            f"powermodel: warning: {failed:,} of {runs:,} runs failed: their reasons are in the "
            "error variable",
            file=sys.stderr,
        )
    return NO_RUN if failed == runs else 0


def _size(args: argparse.Namespace) -> int:
    given = None if args.rules is None else load_rules(args.rules)
    _check_parallel(args)
    scenario = _loaded(args.scenario, args.overrides)
    rule_list = given or rules.site_rules(scenario)
    base = simulate(scenario)  # before a local cluster's workers fork: they start warm
    with _runs(args, scenario) as (runner, width):
        table = sizing.size(
            scenario,
            rule_list,
            args.registered_demand,
            progress=lambda s: print(f"  running {s}", file=sys.stderr),
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
    files = export.export_tool(simulate(scenario), args.to, args.output, args.resample)
    for path in files:
        print(f"wrote {path}")
    return 0


def _period(text: str | None) -> float | None:
    """``--period`` in seconds: a duration with its unit, 1 ms to 1 day."""
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except ValueError as exc:
        raise PowerModelError(
            f"--period {text!r}: {exc}; the sampling period, e.g. --period 100ms"
        ) from None
    if not 1e-3 <= seconds <= 86400.0:
        raise PowerModelError(
            f"--period {text!r} is not within 1 ms to 1 day: give the sampling period with its "
            "unit, e.g. --period 100ms"
        )
    return seconds


def _holdout(text: str) -> float:
    """``--holdout``: a finite number (its range is :func:`fit_trace`'s to check)."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not np.isfinite(value):
        raise PowerModelError(
            f"--holdout {text!r} is not a number: give the share of the trace held out at its "
            "end, e.g. --holdout 0.5, or 0 for none"
        )
    return value


def _read_options(args: argparse.Namespace) -> dict[str, Any]:
    """How ``fit`` and ``predict`` read the trace (:func:`_trace_arguments`), its sensor and
    the report: the keywords both take."""
    return {
        "format": args.format,
        "period": _period(args.period),
        "gpus_per_node": args.gpus_per_node,
        "gpus": args.gpus,
        "sensor": args.sensor,
        "report": args.report,
    }


def _warn(warnings: list[str]) -> None:
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


def _gpus(scenario: Any) -> str:
    """The hall's GPUs in words: ``job 896 H100-SXM, 104 idle in the hall``, or ``32,768
    H100-SXM`` where the job takes them all."""
    cl, idle = scenario.cluster, idle_gpus(scenario)
    if not idle:
        return f"{cl.n_gpus:,} {scenario.gpu.name}"
    spares = " (hot spares included)" if scenario.reliability.spare_nodes else ""
    return f"job {cl.n_gpus:,} {scenario.gpu.name}, {idle:,} idle in the hall{spares}"


def _fit(args: argparse.Namespace) -> int:
    run = fit_trace(
        args.trace,
        args.output,
        preset=args.preset,
        gpu=args.gpu,
        holdout=_holdout(args.holdout),
        **_read_options(args),
    )
    _warn(run.result.warnings)
    print(_table(summary(run.result)))
    print(f"\n{fit_report.prediction_words(run.predicted)}")
    print(_table(fit_report.proof_table(run.result, run.predicted, run.replayed)))
    if isinstance(run.holdout, fit_report.Prediction):
        print(f"\nhold-out: {fit_report.holdout_words(run.holdout)}")
        print(_table(comparison_table(run.holdout.numbers)))
    elif run.holdout:
        print(f"\n{run.holdout}")
    print(f"wrote {args.output}")
    if args.report:
        print(f"wrote {args.report}")
    return 0


def _predict(args: argparse.Namespace) -> int:
    run = fit_report.predict_trace(args.scenario, args.trace, args.overrides, **_read_options(args))
    _warn(run.result.warnings)
    changed = f" with {', '.join(args.overrides)}" if args.overrides else ""
    print(f"{args.scenario}{changed} against {args.trace}:")
    print(fit_report.prediction_words(run.predicted))
    print(_table(comparison_table(run.predicted.numbers)))
    if args.report:
        print(f"wrote {args.report}")
    return 0


def _reproduce(args: argparse.Namespace) -> int:
    path = reproduce.check_report_path(args.output)
    anchors = reproduce.run_anchors(
        progress=lambda a: print(f"  {a.name}: {a.seconds:.1f} s", file=sys.stderr)
    )
    print(_table(reproduce.table(anchors)))
    output.write_text(path, reproduce.report_html(anchors))
    passed = sum(a.passed for a in anchors)
    print(f"\n{passed} of {len(anchors)} anchors pass; wrote {path}")
    return 0 if passed == len(anchors) else VIOLATED


def _design(args: argparse.Namespace) -> int:
    from powermodel import design  # noqa: PLC0415 - only this command needs it

    if Path(args.output).suffix.lower() != ".toml":
        raise PowerModelError(f"-o {args.output}: a scenario is a .toml file: give site.toml")
    output.check_folder(args.output)
    found = design.design(
        args.preset,
        args.grid_mw,
        args.overrides,
        progress=lambda s: print(f"  {s}", file=sys.stderr),
    )
    rows = found.summary()
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    print(f"wrote {design.write(found, args.output)} ({found.simulations} design runs)")
    return 0


def _dashboard_parser() -> argparse.ArgumentParser:
    from powermodel.webapp.serve import dashboard_parser  # noqa: PLC0415 - the web stack

    return dashboard_parser("powermodel dashboard")


def _dashboard_help() -> str:
    return _dashboard_parser().format_help()


def _dashboard(args: argparse.Namespace) -> int:
    from powermodel.webapp.serve import check_arguments, serve  # noqa: PLC0415 - the web stack

    options = _dashboard_parser().parse_args(args.argv)
    refused = check_arguments(options)
    if refused:
        raise PowerModelError(refused)
    return serve(options, options.scenario)


def _keys(args: argparse.Namespace) -> int:
    print(keys_text(scenario_keys(args.prefix)))
    return 0


def _init(args: argparse.Namespace) -> int:
    from powermodel.template import site_template  # noqa: PLC0415 - only init writes one

    path = Path(args.output)
    if path.suffix.lower() != ".toml":
        raise PowerModelError(f"init writes a .toml scenario; give -o {path.stem or 'site'}.toml")
    if path.exists():
        raise PowerModelError(
            f"{shorten(str(path), 200)} exists: init writes a new file; choose another name or "
            "remove it"
        )
    output.check_folder(path)
    text = site_template(args.preset, path.stem)
    with output.staged(path) as temporary:
        temporary.write_text(text)
    print(f"wrote {path}: edit it, then `powermodel validate {path}` and `powermodel run {path}`")
    return 0


def _presets(args: argparse.Namespace) -> int:
    names = presets()
    width = max(map(len, names)) + 2  # the longest name sets the column
    for name in names:
        lines = textwrap.wrap(load_scenario(name).description, max(100 - width, 40)) or [""]
        print(f"{name:{width}s}{lines[0]}")
        for line in lines[1:]:
            print(" " * width + line)
    return 0


def _sensor_rows(ds: Any, keys: Sequence[str]) -> list[tuple[str, str]]:
    """For each sensor, the largest 5-s swing of the exact signal beside the sensor's view
    (:func:`powermodel.analysis.sensor_swings`), as the summary prints it."""
    rows = []
    for row in sensor_swings(ds, list(keys)).itertuples():
        label = f"{row.variable} largest 5-s swing, exact / {row.sensor}"
        if not np.isfinite(row.exact):
            rows.append((label, row.not_measured))
        elif not np.isfinite(row.seen):
            rows.append((label, f"{row.exact:.2f} {row.units} / {row.not_measured}"))
        else:
            rows.append((label, f"{row.exact:.2f} / {row.seen:.2f} {row.units}"))
    return rows


def _print_summary(
    name: str,
    result: dict[str, Any],
    attrs: dict,
    elapsed: float,
    extra: Sequence[tuple[str, str]] = (),
) -> None:
    def shown(key: str, unit: str = "MW", digits: int = 2) -> str:
        value = result[key]
        return f"{value:.{digits}f} {unit}" if np.isfinite(value) else result["not_measured"][key]

    idle = float(attrs.get("idle_gpus", 0.0))
    gpus = (
        [
            (
                "GPUs",
                f"job {float(attrs['job_gpus']):,.0f}, {idle:,.0f} idle in the hall "
                f"({float(attrs['idle_power']):.3g} MW idle)",
            )
        ]
        if idle
        else []
    )
    rows = [
        ("scenario", name),
        *gpus,
        ("step time", f"{attrs['step_time']:.2f} s"),
        (
            "checkpoint interval",
            f"{attrs['checkpoint_interval']:.0f} s"
            if np.isfinite(attrs["checkpoint_interval"])
            else "none (no failures expected)",
        ),
        ("IT energy", f"{result['it_energy_mwh']:,.1f} MWh"),
        (
            "IT power mean / peak / min",
            "{it_mean_mw:.2f} / {it_peak_mw:.2f} / {it_min_mw:.2f} MW".format(**result),
        ),
        ("IT largest 5-s swing", shown("it_swing_5s_mw")),
        ("unexpected interruptions", f"{result['unexpected_interruptions']}"),
        ("planned interruptions", f"{result['planned_interruptions']}"),
        (
            "facility energy / peak",
            "{facility_energy_mwh:,.1f} MWh / {facility_peak_mw:.2f} MW".format(**result),
        ),
        ("PUE / WUE", "{pue:.3f} / {wue_l_per_kwh:.3f} L/kWh".format(**result)),
        (
            "grid power mean / peak / min",
            "{grid_mean_mw:.2f} / {grid_peak_mw:.2f} / {grid_min_mw:.2f} MW".format(**result),
        ),
        (
            "grid largest 5-s swing / its ΔV",
            f"{shown('grid_swing_5s_mw')} / {shown('grid_voltage_swing_5s_pct', '%', 3)}"
            if np.isfinite(result["grid_swing_5s_mw"])
            else result["not_measured"]["grid_swing_5s_mw"],
        ),
        ("grid largest 5-s swing while training", shown("grid_swing_5s_training_mw")),
        ("grid energy per token", shown("grid_energy_per_token_j", "J")),
        ("cooling energy", f"{result['cooling_energy_mwh']:,.1f} MWh"),
        ("throughput lost to heat", f"{100 * result['throughput_lost_to_heat']:.2f} %"),
        ("effective training time", f"{100 * result['effective_training_time']:.1f} %"),
        ("tokens trained", f"{result['tokens']:.4g}"),
        *extra,
        ("simulated in", f"{elapsed:.1f} s"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    by_category = result["interruptions_by_category"]
    if by_category:
        print("  by category: " + ", ".join(f"{k} {v}" for k, v in by_category.items()))


def _part(text: str) -> dict[str, str]:
    """``--part workload=NAME`` or ``hall=NAME`` as :func:`powermodel.analysis.part` takes it."""
    kind, _, name = text.partition("=")
    if kind not in ("workload", "hall") or not name:
        raise PowerModelError(f"--part takes workload=NAME or hall=NAME, got {shorten(text)}")
    return {kind: name}


def _fmt(value: float) -> str:
    return f"{value:.4g}"


TERMINAL = 120  # characters a wide table's lines keep to (check, ride-through)


def _table(frame: Any, width: int | None = None) -> str:
    """A table as the terminal shows it: four digits, a blank where there is no value (a
    sensitivity table's base row has no ``value``). With ``width``, a table wider than it is
    shown in blocks of its columns, each block led by the first column (the row's name)."""
    if "value" in frame:
        frame = frame.assign(value=frame["value"].fillna(""))

    def shown(columns: list) -> str:
        return frame[columns].to_string(index=False, float_format=_fmt, na_rep="")

    whole = shown(list(frame.columns))
    if width is None or len(frame.columns) < 3 or _widest(whole) <= width:
        return whole
    first, blocks = frame.columns[0], [[]]
    for column in frame.columns[1:]:
        if blocks[-1] and _widest(shown([first, *blocks[-1], column])) > width:
            blocks.append([])
        blocks[-1].append(column)
    return "\n\n".join(shown([first, *block]) for block in blocks)


def _widest(text: str) -> int:
    return max(map(len, text.splitlines()), default=0)


if __name__ == "__main__":
    sys.exit(main())
