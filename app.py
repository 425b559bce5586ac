"""Serve the powermodel dashboard: ``python app.py [--host HOST] [--port PORT] [--debug]``.

It listens on 127.0.0.1 (this machine only) unless ``--host`` says otherwise, with Dash's debug
tools off unless ``--debug``: the dashboard runs simulations on request and has no log-in.
"""

from __future__ import annotations

import argparse

from powermodel.webapp import REFERENCE_SCENARIO, UPLOAD_LIMIT, create_app
from powermodel.webapp.cache import DEFAULT_BYTES


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the powermodel dashboard.")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    parser.add_argument("--port", type=int, default=8050, help="port to listen on")
    parser.add_argument("--debug", action="store_true", help="Dash dev tools and reloader")
    parser.add_argument("--preset", default=REFERENCE_SCENARIO, help="scenario shown first")
    parser.add_argument(
        "--cache-gb",
        type=float,
        default=DEFAULT_BYTES / 2**30,
        help="memory kept for simulations and their figures [GiB]",
    )
    parser.add_argument(
        "--upload-mb", type=float, default=UPLOAD_LIMIT / 1e6, help="largest upload [MB]"
    )
    args = parser.parse_args(argv)
    app = create_app(
        args.preset,
        cache_bytes=int(args.cache_gb * 2**30),
        upload_limit=int(args.upload_mb * 1e6),
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"powermodel: serving on {args.host}: anyone who can reach it can run simulations")
    app.run(host=args.host, port=args.port, debug=args.debug)


if __name__ == "__main__":
    main()
