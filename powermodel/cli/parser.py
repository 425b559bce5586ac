"""The command line's parser: the options every command shares, one function a group of
commands (their names and help, in the order ``powermodel --help`` lists them), and one a
command (its options and its function: ``_<command>_arguments``).

Built by :func:`powermodel.cli.entry.main` (and by the docs for the reference page of every
command's ``--help``); each command's function is its group's module's
(``powermodel.cli.*_commands``).

Building it imports nothing of the numeric stack (issue 30: ``--version`` and ``--help`` cost
what the interpreter does): each command is a :class:`_Command`, its options (some of whose
choices and help come from the model: the sensors, rules, formats, tools) added, and its
command's module imported, the first time that command parses or shows its help.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, NamedTuple

from powermodel._version import __version__


class _Command(argparse.ArgumentParser):
    """A command's parser whose ``arguments`` (a function of the parser: its options and its
    ``func``) are added when it first parses or formats its help or usage."""

    def __init__(self, *args: Any, arguments: Callable[[_Command], None], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._arguments: Callable[[_Command], None] | None = arguments

    def _complete(self) -> None:
        arguments, self._arguments = self._arguments, None
        if arguments is not None:
            arguments(self)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        self._complete()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._complete()
        return super().format_help()

    def format_usage(self) -> str:
        self._complete()
        return super().format_usage()


def _trace_arguments(parser: argparse.ArgumentParser) -> None:
    """How a trace is read, the same for ``fit`` and ``predict``."""
    from powermodel.iotools.telemetry import FORMATS  # noqa: PLC0415 - when it runs

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


Commands = argparse._SubParsersAction  # what add_parser makes each command on


class _Parents(NamedTuple):
    """The options commands share, as argparse parents: ``--debug`` (every command), with it
    ``--set`` (a command of a scenario). The rules' options and where runs go are added with
    the command's own (:func:`_rule_arguments`, :func:`_parallel_arguments`): the rules' help
    names the shipped rules."""

    common: argparse.ArgumentParser
    with_scenario: list[argparse.ArgumentParser]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="powermodel",
        description="Power and thermal fluctuations of AI training datacenters.",
    )
    parser.add_argument("--version", action="version", version=f"powermodel {__version__}")
    shared = _parents()
    sub = parser.add_subparsers(
        dest="command", required=True, metavar="command", parser_class=_Command
    )
    for add_commands in (
        _add_run_commands,
        _add_study_commands,
        _add_measurement_commands,
        _add_dynamics_commands,
        _add_site_commands,
    ):
        add_commands(sub, shared)
    parser.set_defaults(debug=False)
    return parser


def _parents() -> _Parents:
    """The shared options, each group once."""
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
    return _Parents(common, [common, scenario_keys])


def _rule_arguments(parser: argparse.ArgumentParser) -> None:
    """Which rules, the same for ``check`` and ``size``."""
    from powermodel.rules import rule_names  # noqa: PLC0415 - when it runs

    parser.add_argument(
        "--rules",
        help="comma-separated rule or group names, or .toml rule files (default: the scenario's "
        "grid.rules): " + ", ".join(rule_names()),
    )
    parser.add_argument("--registered-demand", type=float, help="MW, overrides the scenario's")


def _parallel_arguments(parser: argparse.ArgumentParser) -> None:
    """Where a command's runs go, the same for ``check``, ``sweep`` and ``size``."""
    parser.add_argument(
        "--workers",
        type=int,
        help="run on a local dask cluster of this many processes (0: one run after another in "
        "this process); sweep's default: in turn when the runs together take under two million "
        "steps, else the cores (as many as the memory holds); other commands: in turn",
    )
    parser.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run on the dask cluster of this scheduler, e.g. tcp://10.0.0.5:8786 (not with "
        "--workers)",
    )


def _add_run_commands(sub: Commands, shared: _Parents) -> None:
    """``run`` and ``validate``: a scenario simulated, or checked without a run."""
    sub.add_parser(
        "run", parents=shared.with_scenario, help="simulate a scenario", arguments=_run_arguments
    )

    sub.add_parser(
        "validate",
        parents=shared.with_scenario,
        help="check a scenario, no run",
        arguments=_validate_arguments,
    )


def _add_study_commands(sub: Commands, shared: _Parents) -> None:
    """``check``, ``sweep``, ``size`` and ``export``: rules, sweeps, sizing, grid tools' files."""
    sub.add_parser(
        "check",
        parents=shared.with_scenario,
        help="measure a scenario or a CSV trace by utility rules (exit 0 pass, 3 violated)",
        arguments=_check_arguments,
    )

    sub.add_parser(
        "sweep",
        parents=shared.with_scenario,
        help="run a scenario over swept keys and seeds, on dask (docs: guides/sweeps)",
        arguments=_sweep_arguments,
    )

    sub.add_parser(
        "size",
        parents=shared.with_scenario,
        help="for each rule, the gentlest setting of each mitigation that makes it pass",
        arguments=_size_arguments,
    )

    sub.add_parser(
        "export",
        parents=shared.with_scenario,
        help="write what the grid sees for a grid tool",
        arguments=_export_arguments,
    )


def _add_measurement_commands(sub: Commands, shared: _Parents) -> None:
    """``fit``, ``predict`` and ``reproduce``: the model against measurements."""
    sub.add_parser(
        "fit",
        parents=[shared.common],
        help="calibrate a scenario on a measured GPU or meter trace (docs: guides/fit)",
        arguments=_fit_arguments,
    )
    sub.add_parser(
        "predict",
        parents=shared.with_scenario,
        help="predict another run of a job: a fitted scenario, with the key changed between the "
        "runs (--set), run afresh against that run's trace (docs: guides/fit)",
        arguments=_predict_arguments,
    )
    sub.add_parser(
        "reproduce",
        parents=[shared.common],
        help="the model against every published anchor (exit 0 all pass, 3 some fail)",
        description="Run the model against every public anchor in the references, print the "
        "table and write an HTML report with the plot behind each anchor.",
        arguments=_reproduce_arguments,
    )


def _add_dynamics_commands(sub: Commands, shared: _Parents) -> None:
    """``ride-through`` and ``screen``: grid disturbances and forced oscillations."""
    sub.add_parser(
        "ride-through",
        parents=shared.with_scenario,
        help="a scenario's grid disturbances: the site's response, the requirements, the "
        "planners' dynamic model (exit 0 pass, 3 a requirement failed)",
        arguments=_ride_through_arguments,
    )

    sub.add_parser(
        "screen",
        parents=shared.with_scenario,
        help="screen a scenario's forced oscillations against grid modes (exit 0 clear, 3 a "
        "mode flagged)",
        arguments=_screen_arguments,
    )


def _add_site_commands(sub: Commands, shared: _Parents) -> None:
    """``init``, ``design``, ``dashboard``, ``presets`` and ``keys``: a site's own, the lists."""
    sub.add_parser(
        "init",
        parents=[shared.common],
        help="write a site's own scenario to edit: a preset's keys a site engineer changes "
        "first, with their units and choices",
        arguments=_init_arguments,
    )

    sub.add_parser(
        "design",
        parents=shared.with_scenario,
        help="the largest site of a preset's kind whose design peak stays within a grid "
        "connection; writes it as a scenario (docs: guides/scenarios)",
        arguments=_design_arguments,
    )

    # the dashboard's options are the server's own (powermodel.webapp.serve, as app.py takes
    # them), parsed when the command runs so that building this parser imports no web stack
    serving = sub.add_parser(
        "dashboard",
        add_help=False,
        prefix_chars="+",  # every word, options too, left for the server's parser
        help="serve the dashboard at http://127.0.0.1:8050 (powermodel dashboard --help)",
        arguments=_dashboard_arguments,
    )
    serving.format_help = _dashboard_help  # the reference's page shows the server's options

    sub.add_parser(
        "presets",
        parents=[shared.common],
        help="list the shipped presets",
        arguments=_presets_arguments,
    )
    sub.add_parser(
        "keys",
        parents=[shared.common],
        help="the scenario's keys: type, unit, default, bounds",
        arguments=_keys_arguments,
    )


def _run_arguments(run: argparse.ArgumentParser) -> None:
    """``run``'s options and function."""
    from powermodel.cli.run_commands import _run  # noqa: PLC0415 - when it runs
    from powermodel.simulate import SENSORS  # noqa: PLC0415 - when it runs

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


def _validate_arguments(validate: argparse.ArgumentParser) -> None:
    """``validate``'s options and function."""
    from powermodel.cli.run_commands import _validate  # noqa: PLC0415 - when it runs

    validate.add_argument("scenario")
    validate.set_defaults(func=_validate)


def _check_arguments(check: argparse.ArgumentParser) -> None:
    """``check``'s options and function."""
    from powermodel.cli.study_commands import _check  # noqa: PLC0415 - when it runs

    _rule_arguments(check)
    _parallel_arguments(check)
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


def _sweep_arguments(sweeping: argparse.ArgumentParser) -> None:
    """``sweep``'s options and function."""
    from powermodel.cli.study_commands import _sweep  # noqa: PLC0415 - when it runs

    _parallel_arguments(sweeping)
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


def _size_arguments(size: argparse.ArgumentParser) -> None:
    """``size``'s options and function."""
    from powermodel.cli.study_commands import _size  # noqa: PLC0415 - when it runs

    _rule_arguments(size)
    _parallel_arguments(size)
    size.add_argument("scenario", help="preset name or .toml scenario")
    size.set_defaults(func=_size)


def _export_arguments(exporting: argparse.ArgumentParser) -> None:
    """``export``'s options and function."""
    from powermodel import export  # noqa: PLC0415 - when it runs
    from powermodel.cli.study_commands import _export  # noqa: PLC0415 - when it runs

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


def _fit_arguments(fitting: argparse.ArgumentParser) -> None:
    """``fit``'s options and function."""
    from powermodel import fit_report  # noqa: PLC0415 - when it runs
    from powermodel.cli.measurement_commands import _fit  # noqa: PLC0415 - when it runs
    from powermodel.fit import REFERENCE  # noqa: PLC0415 - when it runs

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


def _predict_arguments(predicting: argparse.ArgumentParser) -> None:
    """``predict``'s options and function."""
    from powermodel.cli.measurement_commands import _predict  # noqa: PLC0415 - when it runs

    predicting.add_argument("scenario", help="the fitted .toml (or any scenario)")
    predicting.add_argument("trace", help="the other run's trace, as `fit` reads it")
    _trace_arguments(predicting)
    predicting.add_argument("--sensor", help="the chain the trace was read through")
    predicting.add_argument("--report", help="write an HTML report of the trace and prediction")
    predicting.set_defaults(func=_predict)


def _reproduce_arguments(again: argparse.ArgumentParser) -> None:
    """``reproduce``'s options and function."""
    from powermodel.cli.measurement_commands import _reproduce  # noqa: PLC0415 - when it runs

    again.add_argument(
        "-o",
        "--output",
        default="reproduce.html",
        help="the HTML report (default: reproduce.html in the current folder)",
    )
    again.set_defaults(func=_reproduce)


def _ride_through_arguments(riding: argparse.ArgumentParser) -> None:
    """``ride-through``'s options and function."""
    from powermodel.cli.dynamics_commands import _ride_through  # noqa: PLC0415 - when it runs

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


def _screen_arguments(screening: argparse.ArgumentParser) -> None:
    """``screen``'s options and function."""
    from powermodel.cli.dynamics_commands import _screen  # noqa: PLC0415 - when it runs

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


def _init_arguments(starting: argparse.ArgumentParser) -> None:
    """``init``'s options and function."""
    from powermodel.cli.site_commands import _init  # noqa: PLC0415 - when it runs
    from powermodel.fit import REFERENCE  # noqa: PLC0415 - when it runs

    starting.add_argument(
        "preset", nargs="?", default=REFERENCE, help=f"the preset it extends (default {REFERENCE})"
    )
    starting.add_argument("-o", "--output", required=True, help="the .toml file to write (new)")
    starting.set_defaults(func=_init)


def _design_arguments(designing: argparse.ArgumentParser) -> None:
    """``design``'s options and function."""
    from powermodel.cli.site_commands import _design  # noqa: PLC0415 - when it runs

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


def _dashboard_arguments(serving: argparse.ArgumentParser) -> None:
    """``dashboard``'s options and function."""
    from powermodel.cli.site_commands import _dashboard  # noqa: PLC0415 - when it runs

    serving.add_argument("argv", nargs="*")
    serving.set_defaults(func=_dashboard)


def _presets_arguments(listing: argparse.ArgumentParser) -> None:
    """``presets``'s options and function."""
    from powermodel.cli.site_commands import _presets  # noqa: PLC0415 - when it runs

    listing.set_defaults(func=_presets)


def _keys_arguments(reference: argparse.ArgumentParser) -> None:
    """``keys``'s options and function."""
    from powermodel.cli.site_commands import _keys  # noqa: PLC0415 - when it runs

    reference.add_argument("prefix", nargs="?", default="", help="only keys starting so")
    reference.set_defaults(func=_keys)


def _dashboard_help() -> str:
    """``dashboard --help``: the server's options (its web stack imported to print them)."""
    from powermodel.cli.site_commands import _dashboard_help  # noqa: PLC0415 - when it runs

    return _dashboard_help()
