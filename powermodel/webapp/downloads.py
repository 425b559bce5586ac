"""Downloads of the dashboard, served by Flask so that a 54-day profile streams from a file
instead of travelling base64-encoded through a callback.

Nothing a request carries names a file on the server: a download is found by the key of a
scenario the server has checked and shown, written under fixed names into a folder of its own
inside the dashboard's working folder, opened, and deleted before the first byte is sent (the
open file streams on; the disk is freed when the response closes). The name the browser saves
it under is made from the scenario's name by :func:`safe_name`.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

import flask
import pandas as pd
import xarray as xr

from powermodel.analysis import resample_factor, step_seconds
from powermodel.errors import PowerModelError
from powermodel.export import DATASET_FILES, TOOLS, export_tool
from powermodel.rules import shipped, write_violations
from powermodel.scenario import Scenario, format_duration, parse_duration, shorten
from powermodel.webapp.cache import Busy, SimulationCache
from powermodel.webapp.uploads import WeatherUploads, safe_name

ROUTE = "/download"
INTERVALS = ("10s", "1min", "15min", "1h")
VIOLATIONS = "violations"  # every violation of the chosen rules, as CSV
FORMATS = (*TOOLS, "toml", VIOLATIONS)
EXPORTS = 2  # downloads written at once; more wait their turn
WAIT = 10.0  # s a download waits for a turn before it is refused (a thread waits meanwhile)


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


def href(key: str, fmt: str, interval: str | None, rules: tuple[str, ...] = ()) -> str:
    """The link that downloads a scenario's profile in a format at a resolution (or the
    violations of ``rules``)."""
    query = [f"interval={interval}"] if interval else []
    query += [f"rules={','.join(rules)}"] if rules else []
    return f"{ROUTE}/{key}/{fmt}" + ("?" + "&".join(query) if query else "")


def scenario_file(scenario: Scenario) -> tuple[str, str]:
    """The scenario's TOML and the name to save it as (give it :meth:`WeatherUploads.portable`'s
    scenario: no path of the server's in it)."""
    return scenario.to_toml(), f"{safe_name(scenario.name)}.toml"


def write_export(
    ds: xr.Dataset | None, scenario: Scenario, fmt: str, interval: str | None, folder: Path
) -> tuple[Path, str]:
    """Write one download into ``folder`` under a fixed name: a data file, a zip of a grid
    tool's files (of the run ``ds``), or the scenario's TOML (``ds`` unused). ``interval``
    None (or the run's step) keeps the step. Returns the file and the name to save it as."""
    name = safe_name(scenario.name)
    if fmt == "toml":
        text, saved_as = scenario_file(scenario)
        path = folder / "scenario.toml"
        path.write_text(text)
        return path, saved_as
    if interval is not None and abs(parse_duration(interval) - step_seconds(ds)) < 1e-9:
        interval = None
    files = export_tool(ds, fmt, folder / "export", interval)
    if fmt in DATASET_FILES:
        return files[0], f"{name}-{files[0].name}"
    path = folder / "export.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in files:
            archive.write(file, file.name)
    return path, f"{name}-{fmt}.zip"


def register(
    server: flask.Flask,
    cache: SimulationCache,
    folder: Path,
    violations: Callable[[Scenario, tuple[str, ...]], pd.DataFrame],
    uploads: WeatherUploads,
) -> None:
    """Serve ``/download/<key>/<format>?interval=...`` for the scenarios the page has shown,
    writing into ``folder``; ``violations(scenario, rule names)`` gives the violations table.
    What leaves names an uploaded weather file as it came, never by its path here
    (``uploads``)."""
    turns = threading.BoundedSemaphore(EXPORTS)

    # a doubled slash is no download (werkzeug would redirect it to one, HTTP 308)
    @server.route(f"{ROUTE}/<key>/<fmt>", merge_slashes=False)
    def download(key: str, fmt: str) -> flask.Response:
        scenario = cache.scenarios.get(key)
        if scenario is None:
            return _refuse(404, "this scenario is not on the server any more: reload the page")
        if fmt not in FORMATS:
            return _refuse(400, f"unknown format {shorten(fmt)}: use one of {', '.join(FORMATS)}")
        sim = scenario.simulation
        offered = intervals(sim.dt, sim.n_steps)
        interval = flask.request.args.get("interval") or None
        if interval is not None and interval not in offered:
            return _refuse(
                400, f"resolution {shorten(interval)}: choose one of {', '.join(offered)}"
            )
        try:
            rules = shipped([n for n in flask.request.args.get("rules", "").split(",") if n])
        except PowerModelError as exc:
            return _refuse(400, str(exc))
        if not turns.acquire(timeout=WAIT):
            return _refuse(503, "the server is busy writing other downloads: try again shortly")
        try:
            handle, name = _written(
                cache, scenario, fmt, interval, rules, folder, violations, uploads
            )
        except Busy as exc:
            return _refuse(503, str(exc))
        except PowerModelError as exc:
            return _refuse(400, uploads.public(str(exc)))
        finally:
            turns.release()
        return flask.send_file(handle, as_attachment=True, download_name=name)


def _written(
    cache: SimulationCache,
    scenario: Scenario,
    fmt: str,
    interval: str | None,
    rules: tuple[str, ...],
    folder: Path,
    violations: Callable[[Scenario, tuple[str, ...]], pd.DataFrame],
    uploads: WeatherUploads,
) -> tuple[BinaryIO, str]:
    """The download, written, opened and deleted: the open file streams on, and its disk is
    freed when the response closes it, whatever becomes of the request."""
    work = Path(tempfile.mkdtemp(prefix="download-", dir=folder))
    try:
        if fmt == VIOLATIONS:
            path = work / "violations.csv"
            write_violations(violations(scenario, rules), path)
            name = f"{safe_name(scenario.name)}-violations.csv"
        else:  # the scenario's own TOML needs no run
            ds = None if fmt == "toml" else cache.get(scenario).ds
            shown = uploads.portable(scenario)
            if ds is not None and shown is not scenario:  # the files' metadata carry it
                weather = uploads.public(ds.attrs.get("weather", ""))
                ds = ds.assign_attrs(scenario=shown.to_json(), weather=weather)
            path, name = write_export(ds, shown, fmt, interval, work)
        return path.open("rb"), name
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _refuse(status: int, message: str) -> flask.Response:
    return flask.Response(message + "\n", status=status, mimetype="text/plain")
