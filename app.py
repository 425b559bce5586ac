"""Serve the powermodel dashboard: ``python app.py [--host HOST] [--port PORT] [--debug]``.

It listens on 127.0.0.1 (this machine only) unless ``--host`` says otherwise, served by
waitress, a production WSGI server (Flask's own server is for development: ``--debug`` uses it,
with Dash's dev tools and reloader). The dashboard runs simulations on request and has no
log-in: its memory is bounded by ``--cache-gb`` and its simulations queue (``--simulations`` at
once).
"""

from __future__ import annotations

import argparse

import waitress

from powermodel.allocator import return_freed_memory
from powermodel.errors import PowerModelError
from powermodel.scenario import parse_overrides
from powermodel.webapp import APP_OVERRIDES, REFERENCE_SCENARIO, UPLOAD_LIMIT, create_app
from powermodel.webapp.cache import DEFAULT_BYTES, QUEUE, SIMULATIONS

# requests served at once: a summary waiting for its run's turn holds one, so there are enough
# for a full queue and, beside it, the quick callbacks (pans, tab changes, the queue's position)
THREADS = QUEUE + 16


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Serve the powermodel dashboard.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    parser.add_argument("--port", type=int, default=8050, help="port to listen on")
    parser.add_argument("--debug", action="store_true", help="Dash dev tools and reloader")
    parser.add_argument("--preset", default=REFERENCE_SCENARIO, help="scenario shown first")
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
    args = parser.parse_args(argv)
    if not (0 < args.cache_gb < 1e4 and 0 < args.upload_mb < 1e4 and args.simulations >= 1):
        parser.error("--cache-gb and --upload-mb must be positive, --simulations at least 1")
    try:
        app = create_app(
            args.preset,
            APP_OVERRIDES | parse_overrides(args.overrides),
            cache_bytes=int(args.cache_gb * 2**30),
            upload_limit=int(args.upload_mb * 1e6),
            simulations=args.simulations,
            warm=True,  # the opening scenario simulated while the browser opens the page
        )
    except PowerModelError as exc:  # a preset or --set that does not load: in its words
        parser.error(str(exc))
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"powermodel: serving on {args.host}: anyone who can reach it can run simulations")
    if args.debug:
        app.run(host=args.host, port=args.port, debug=True)
        return
    print(f"powermodel dashboard on http://{args.host}:{args.port}/")
    return_freed_memory()  # freed runs go back to the system: memory follows the cache's bound
    waitress.serve(
        app.server,
        host=args.host,
        port=args.port,
        threads=args.threads,
        max_request_body_size=app.server.config["MAX_CONTENT_LENGTH"],
    )


if __name__ == "__main__":
    main()
