"""Serve the powermodel dashboard: ``python app.py [--host HOST] [--port PORT] [--debug]``."""

from __future__ import annotations

import argparse

from powermodel.webapp import create_app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Serve the powermodel dashboard.")
    parser.add_argument("--host", default="127.0.0.1", help="interface to listen on")
    parser.add_argument("--port", type=int, default=8050, help="port to listen on")
    parser.add_argument("--debug", action="store_true", help="Dash dev tools and reloader")
    args = parser.parse_args(argv)
    create_app().run(host=args.host, port=args.port, debug=args.debug)


if __name__ == "__main__":
    main()
