"""``powermodel init``, ``design``, ``presets``, ``keys`` and ``dashboard``: a site's own
scenario written or designed within its connection, the presets and keys listed, the
dashboard served.
"""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from powermodel import output
from powermodel.errors import PowerModelError
from powermodel.reference import keys as scenario_keys
from powermodel.reference import text as keys_text
from powermodel.scenario import load_scenario, presets, shorten


def _design(args: argparse.Namespace) -> int:
    from powermodel import design  # noqa: PLC0415 - only this command needs it
    from powermodel.cli.common import _progress  # noqa: PLC0415 - keys, presets: no runs
    from powermodel.cli.tables import _print_rows  # noqa: PLC0415 - keys, presets: no numpy

    if Path(args.output).suffix.lower() != ".toml":
        raise PowerModelError(f"-o {args.output}: a scenario is a .toml file: give site.toml")
    output.check_folder(args.output)
    found = design.design(
        args.preset,
        args.grid_mw,
        args.overrides,
        progress=_progress,
    )
    _print_rows(found.summary())
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
