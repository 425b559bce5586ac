"""Downloads of the dashboard, served by Flask so that a 54-day profile streams from a file
instead of travelling base64-encoded through a callback."""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from pathlib import Path

import flask
import xarray as xr

from powermodel.analysis import resample_factor, step_seconds
from powermodel.errors import PowerModelError
from powermodel.export import DATASET_FILES, TOOLS, export_tool
from powermodel.scenario import Scenario, format_duration, parse_duration
from powermodel.webapp.cache import SimulationCache

ROUTE = "/download"
INTERVALS = ("10s", "1min", "15min", "1h")


def intervals(dt: float, n: int) -> list[str]:
    """Export resolutions of a run of ``n`` steps of ``dt`` [s]: its own step, then each
    coarser one that divides the run."""
    out = [format_duration(dt)]
    for interval in INTERVALS:
        if parse_duration(interval) <= dt:
            continue
        try:
            resample_factor(n, dt, interval)
        except PowerModelError:
            continue
        out.append(interval)
    return out


def href(key: str, fmt: str, interval: str | None) -> str:
    """The link that downloads a scenario's profile in a format at a resolution."""
    return f"{ROUTE}/{key}/{fmt}" + (f"?interval={interval}" if interval else "")


def write_export(
    ds: xr.Dataset, scenario: Scenario, fmt: str, interval: str | None, folder: Path
) -> Path:
    """Write one download into ``folder``: a data file, a zip of a grid tool's files, or the
    scenario's TOML. ``interval`` None (or the run's step) keeps the step."""
    if interval is not None and abs(parse_duration(interval) - step_seconds(ds)) < 1e-9:
        interval = None
    if fmt == "toml":
        path = folder / f"{scenario.name or 'scenario'}.toml"
        path.write_text(scenario.to_toml())
        return path
    files = export_tool(ds, fmt, folder / fmt, interval)
    if fmt in DATASET_FILES:
        return files[0]
    path = folder / f"{scenario.name or 'scenario'}-{fmt}.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            archive.write(file, file.name)
    return path


def register(server: flask.Flask, cache: SimulationCache) -> None:
    """Serve ``/download/<key>/<format>?interval=...`` for the scenarios the page has shown."""

    @server.route(f"{ROUTE}/<key>/<fmt>")
    def download(key: str, fmt: str) -> flask.Response:
        scenario = cache.scenarios.get(key)
        if scenario is None:
            return _refuse(404, "this scenario is not on the server any more: reload the page")
        if fmt not in TOOLS and fmt != "toml":
            return _refuse(400, f"unknown format {fmt!r}: use one of {', '.join(TOOLS)}, toml")
        interval = flask.request.args.get("interval") or None
        folder = Path(tempfile.mkdtemp(prefix="powermodel-download-"))
        try:
            path = write_export(cache.get(scenario).ds, scenario, fmt, interval, folder)
        except (PowerModelError, ValueError) as exc:
            shutil.rmtree(folder, ignore_errors=True)
            return _refuse(400, str(exc))
        response = flask.send_file(path, as_attachment=True, download_name=path.name)
        response.call_on_close(lambda: shutil.rmtree(folder, ignore_errors=True))
        return response


def _refuse(status: int, message: str) -> flask.Response:
    return flask.Response(message + "\n", status=status, mimetype="text/plain")
