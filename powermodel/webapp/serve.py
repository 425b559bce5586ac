"""Serve the dashboard: what ``powermodel dashboard`` and ``python app.py`` run.

It listens on 127.0.0.1 (this machine only) unless ``--host`` says otherwise, served by
waitress, a production WSGI server (Flask's own server is for development: ``--debug`` uses it,
with Dash's dev tools and reloader). The dashboard runs simulations on request and has no
log-in: its memory is bounded by ``--cache-gb`` (runs, uploads and the views built from them,
and the work in flight), its simulations queue (``--simulations`` at once), and its views and
uploads are built in a few slots, one kept for the cheap views, each build under a deadline
(``powermodel.webapp.cache``).

Its working folder (uploads, downloads being written) is removed on every way out: a normal
exit, an error in start-up, Ctrl-C, and SIGTERM, which stops the server as Ctrl-C does; the exit
code is then the shell's for the signal (130, 143).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import waitress
from threadpoolctl import threadpool_limits

from powermodel.allocator import return_freed_memory
from powermodel.errors import PowerModelError
from powermodel.output import interruptible
from powermodel.scenario import parse_overrides, presets
from powermodel.webapp import APP_OVERRIDES, REFERENCE_SCENARIO, UPLOAD_LIMIT, create_app
from powermodel.webapp.cache import DEFAULT_BYTES, QUEUE, SIMULATIONS

__all__ = [
    "CannotServe",
    "THREADS",
    "add_arguments",
    "check_arguments",
    "dashboard_parser",
    "serve",
]

# requests served at once: a summary waiting for its run's turn holds one, so there are enough
# for a full queue and, beside it, the quick callbacks (pans, tab changes, the queue's position)
# and views waiting for a build slot (at most SLOT_WAIT each)
THREADS = QUEUE + 16


class CannotServe(PowerModelError):
    """The server cannot listen where it was asked: the port taken, the host not this
    machine's."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The server's options (every one but the scenario shown first, which ``app.py`` takes as
    ``--preset`` and ``powermodel dashboard`` as its argument)."""
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    parser.add_argument("--port", type=int, default=8050, help="port to listen on")
    parser.add_argument("--debug", action="store_true", help="Dash dev tools and reloader")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a scenario key every preset opens with, over the opening period "
        f"{APP_OVERRIDES['simulation.duration']} (repeatable), e.g. --set simulation.duration=1d",
    )
    parser.add_argument(
        "--cache-gb",
        type=float,
        default=DEFAULT_BYTES / 2**30,
        help="memory kept for simulations, their figures and the runs in flight [GiB]",
    )
    parser.add_argument(
        "--simulations", type=int, default=SIMULATIONS, help="simulations run at once"
    )
    parser.add_argument(
        "--upload-mb", type=float, default=UPLOAD_LIMIT / 1e6, help="largest upload [MB]"
    )
    parser.add_argument("--threads", type=int, default=THREADS, help="requests served at once")


def dashboard_parser(prog: str = "powermodel dashboard") -> argparse.ArgumentParser:
    """``powermodel dashboard``'s parser: the server's options and the preset shown first."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve the dashboard (waitress, the production server python app.py runs).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "scenario",
        nargs="?",
        default=REFERENCE_SCENARIO,
        metavar="SCENARIO",
        help="the preset shown first (powermodel presets lists them; a .toml scenario is "
        "uploaded in the sidebar)",
    )
    add_arguments(parser)
    return parser


def check_arguments(args: argparse.Namespace) -> str | None:
    """Why the options cannot be served, or None."""
    if not (0 < args.cache_gb < 1e4 and 0 < args.upload_mb < 1e4 and args.simulations >= 1):
        return "--cache-gb and --upload-mb must be positive, --simulations at least 1"
    if not 0 < args.port <= 65535:
        return f"--port {args.port} is not a port: give one from 1 to 65535"
    if args.threads < 1:
        return f"--threads {args.threads}: give at least 1"
    return None


def serve(args: argparse.Namespace, preset: str = REFERENCE_SCENARIO) -> int:
    """Serve the dashboard opening on ``preset`` with the options of :func:`add_arguments`
    until stopped; the exit code (0, or 128 + the signal that stopped it).

    Raises
    ------
    PowerModelError
        The preset or an override does not load (in its own words).
    CannotServe
        The port is taken or the host is not this machine's.
    """
    # from the start: a signal during start-up unwinds too, and the working folder with it
    with interruptible() as received:
        try:
            _serve(args, preset)
        except KeyboardInterrupt:  # stopped before the server's loop, which takes its own
            pass
    return 128 + received[-1] if received else 0


def _serve(args: argparse.Namespace, preset: str) -> None:
    if preset not in presets():
        if preset.endswith(".toml") or Path(preset).exists():
            raise PowerModelError(
                f"the dashboard opens on a preset, not a file ({preset}): start it on the "
                "preset the file extends and upload the file in the sidebar's scenario upload"
            )
        raise PowerModelError(
            f"unknown preset {preset!r}: the dashboard opens on one of {', '.join(presets())}"
        )
    return_freed_memory()  # freed runs go back to the system: memory follows the cache's bound
    app = create_app(
        preset,
        APP_OVERRIDES | parse_overrides(args.overrides),
        cache_bytes=int(args.cache_gb * 2**30),
        upload_limit=int(args.upload_mb * 1e6),
        simulations=args.simulations,
        warm=True,  # the opening scenario simulated while the browser opens the page
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"powermodel: serving on {args.host}: anyone who can reach it can run simulations")
    if args.debug:
        app.run(host=args.host, port=args.port, debug=True)
        return
    print(f"powermodel dashboard on http://{args.host}:{args.port}/", flush=True)
    # one BLAS thread a request: the requests run in parallel already, and OpenBLAS's threads
    # spinning beside them on a 2-core machine made two grid-events views at once (a scipy
    # least-squares fit each) take 13 and 32 s, 1.0 and 1.4 s on one thread each
    threadpool_limits(1)
    try:
        waitress.serve(
            app.server,
            host=args.host,
            port=args.port,
            threads=args.threads,
            max_request_body_size=app.server.config["MAX_CONTENT_LENGTH"],
        )
    except OSError as exc:  # the port taken, the host not this machine's
        raise CannotServe(
            f"cannot serve on {args.host}:{args.port}: {exc.strerror or exc}: choose another "
            "--port (or stop what listens there)"
        ) from None
