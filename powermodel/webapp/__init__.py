"""The dashboard: ``create_app()`` builds it (``create_dashboard()`` with its cache and working
folder), ``python app.py`` serves it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import dash
import flask

from powermodel.scenario import load_scenario
from powermodel.webapp import downloads, layout
from powermodel.webapp.cache import DEFAULT_BYTES, SIMULATIONS, SimulationCache
from powermodel.webapp.callbacks import Dashboard

REFERENCE_SCENARIO = "llama3-405b-16k-h100"
# The dashboard opens at most the first week of a preset: the period the responsiveness targets
# are set for (issue 5); the period control lengthens it to the whole run. A shorter preset
# opens whole.
APP_OVERRIDES = {"simulation.duration": "7d"}
UPLOAD_LIMIT = 5_000_000  # bytes: a typical-year EPW is 1.6 MB, a scenario a few kB


def create_app(
    scenario_name: str = REFERENCE_SCENARIO,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    cache_bytes: int = DEFAULT_BYTES,
    upload_limit: int = UPLOAD_LIMIT,
    simulations: int = SIMULATIONS,
    warm: bool = False,
) -> dash.Dash:
    """The dashboard's Dash app, opening on a preset (:func:`create_dashboard`'s ``app``);
    ``warm``: simulate the opening scenario and build its views at once, in the background,
    so that the first page finds them (what ``app.py`` serves)."""
    board = create_dashboard(scenario_name, overrides, cache_bytes, upload_limit, simulations)
    if warm:
        board.warm()
    return board.app


def create_dashboard(
    scenario_name: str = REFERENCE_SCENARIO,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    cache_bytes: int = DEFAULT_BYTES,
    upload_limit: int = UPLOAD_LIMIT,
    simulations: int = SIMULATIONS,
) -> Dashboard:
    """The dashboard, opening on a preset: its callbacks (a :class:`Dashboard`), holding the
    Dash app they are registered on (``app``), the simulation cache they share with the
    download route (``cache``) and the working folder (``workdir``).

    Parameters
    ----------
    scenario_name
        The preset shown first.
    overrides
        Dotted overrides every preset opens with; by default :data:`APP_OVERRIDES`.
    cache_bytes
        Bound of the simulations (and their figures) kept in memory, and of those in flight. [B]
    upload_limit
        Largest scenario or weather file accepted. [B]
    simulations
        Simulations run at once; the others queue.

    The working folder (uploaded weather, downloads being written) is a temporary folder
    deleted with the dashboard (which the app's callbacks hold), and at the latest when the
    process exits.
    """
    defaults = APP_OVERRIDES if overrides is None else overrides
    load_scenario(scenario_name, defaults)  # a bad preset or override fails here, not in a page
    cache = SimulationCache(cache_bytes, simulations)
    workdir = tempfile.TemporaryDirectory(prefix="powermodel-dashboard-")
    app = dash.Dash(
        __name__,
        title="powermodel",
        assets_folder=str(Path(__file__).parent / "assets"),
        suppress_callback_exceptions=False,
    )
    # A request carries an upload base64-encoded (4/3 of it) with the rest of the callback.
    app.server.config["MAX_CONTENT_LENGTH"] = 2 * upload_limit + 1_000_000
    app.layout = layout.page(scenario_name, upload_limit)
    board = Dashboard(cache, scenario_name, defaults, workdir, upload_limit)
    board.register(app)
    downloads.register(app.server, cache, board.downloads, board.violations, board.uploads)
    app.server.before_request(lambda: _callback_shape(app))
    app.server.register_error_handler(RecursionError, _too_deep)
    return board


CALLBACK_ROUTE = "/_dash-update-component"
# The type of each property the callbacks read whose type the page fixes (None aside): the
# components' own. ``data`` and ``value`` vary by control; the callbacks check those.
PROP_TYPES: dict[str, type] = {
    "search": str,
    "date": str,
    "contents": str,
    "filename": str,
    "n_clicks": int,
    "n_intervals": int,
    "relayoutData": dict,
    "selectedRows": list,
}


def _typed(item: Any) -> bool:
    """Whether a callback input (or a pattern's list of them) holds what its component sends."""
    if isinstance(item, list):
        return all(_typed(i) for i in item)
    if not isinstance(item, dict):
        return False
    value, kind = item.get("value"), PROP_TYPES.get(item.get("property"))
    return value is None or kind is None or (isinstance(value, kind) and type(value) is not bool)


def _callback_shape(app: dash.Dash) -> tuple[str, int] | None:
    """Refuse a callback request whose shape no page of this app sends (Dash itself answers
    those with HTTP 500, and a callback fails on a value of the wrong type): a known server
    callback, its inputs and state as lists, its outputs as many as it has, each input of its
    component's type (:data:`PROP_TYPES`)."""
    request = flask.request
    if request.path != CALLBACK_ROUTE or request.method != "POST":
        return None
    body = request.get_json(silent=True)
    output = body.get("output") if isinstance(body, dict) else None
    spec = app.callback_map.get(output) if isinstance(output, str) else None
    if spec is not None and spec.get("callback") is None:
        spec = None  # a clientside callback: it runs in the browser, never here
    outputs = body.get("outputs") if spec is not None else None
    declared = spec["output"] if spec is not None else ()
    count = len(declared) if isinstance(declared, list) else 1
    shaped = (
        spec is not None
        and isinstance(body.get("inputs"), list)
        and len(body["inputs"]) == len(spec["inputs"])
        and isinstance(body.get("state", []), list)
        and len(body.get("state", [])) == len(spec["state"])
        and (isinstance(outputs, dict) if count == 1 else isinstance(outputs, list))
        and (count == 1 or len(outputs) == count)
        and _typed(body["inputs"])
        and _typed(body.get("state", []))
    )
    return None if shaped else ("not a request this page sends\n", 400)


def _too_deep(_: RecursionError) -> tuple[str, int]:
    """A request nested deeper than Python parses (no page of this dashboard sends one)."""
    return "the request is nested too deeply to read\n", 400
