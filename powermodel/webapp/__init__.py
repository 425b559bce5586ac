"""The dashboard: ``create_app()`` builds it (``create_dashboard()`` with its cache and working
folder), ``powermodel dashboard`` and ``python app.py`` serve it
(:mod:`powermodel.webapp.serve`)."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import dash
import flask

from powermodel.scenario import load_scenario, parse_overrides
from powermodel.webapp import design_panel, downloads
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
    return create_dashboard(
        scenario_name, overrides, cache_bytes, upload_limit, simulations, warm
    ).app


def create_dashboard(
    scenario_name: str = REFERENCE_SCENARIO,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    cache_bytes: int = DEFAULT_BYTES,
    upload_limit: int = UPLOAD_LIMIT,
    simulations: int = SIMULATIONS,
    warm: bool = False,
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
    warm
        Simulate the opening scenario at once, in the background (:meth:`Dashboard.warm`),
        while the app is made and the server starts.

    The working folder (uploaded weather, downloads being written) is a temporary folder
    deleted with the dashboard (which the app's callbacks hold), and at the latest when the
    process exits.
    """
    # as a table whatever their form (["key=value", ...] as --set gives them): the page's
    # bases open with it
    defaults = parse_overrides(APP_OVERRIDES if overrides is None else overrides)
    load_scenario(scenario_name, defaults)  # a bad preset or override fails here, not in a page
    cache = SimulationCache(cache_bytes, simulations)
    workdir = tempfile.TemporaryDirectory(prefix="powermodel-dashboard-")
    board = Dashboard(cache, scenario_name, defaults, workdir, upload_limit)
    if warm:  # first: the run overlaps the making of the app
        board.warm()
    app = dash.Dash(
        __name__,
        title="powermodel",
        assets_folder=str(Path(__file__).parent / "assets"),
        suppress_callback_exceptions=False,
    )
    # A request carries an upload base64-encoded (4/3 of it) with the rest of the callback.
    app.server.config["MAX_CONTENT_LENGTH"] = 2 * upload_limit + 1_000_000
    app.layout = board.first_page  # with the opening run once warm has it
    # Dash would put the whole page in the index again to check callbacks against (a layout
    # made per load may lack components): this one always has them all
    app.validation_layout = None
    board.register(app)
    design_panel.register(app, board)
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
# a pattern id's wildcards, as Dash writes them in the callback map
WILDCARDS = ('["ALL"]', '["ALLSMALLER"]', '["MATCH"]')
GROUPS = ('["ALL"]', '["ALLSMALLER"]')  # wildcards whose input is a list of components


def _callback_shape(app: dash.Dash) -> tuple[str, int] | None:
    """Refuse a callback request whose shape no page of this app sends (Dash itself answers
    those with HTTP 500, and a callback fails on a value of the wrong type): a known server
    callback; its outputs, inputs and state as many as it declares, each naming the component
    and property it declares (a pattern's group as a list of such components), each input of
    its component's type (:data:`PROP_TYPES`); no text in it that is not text (a lone
    surrogate, which no browser sends, fails the answer's encoding); and its changed
    properties among its inputs."""
    request = flask.request
    if request.path != CALLBACK_ROUTE or request.method != "POST":
        return None
    body = request.get_json(silent=True)
    output = body.get("output") if isinstance(body, dict) else None
    spec = app.callback_map.get(output) if isinstance(output, str) else None
    if spec is None or spec.get("callback") is None:  # unknown, or clientside (never sent here)
        return _refused()
    declared = spec["output"] if isinstance(spec["output"], list) else [spec["output"]]
    outputs = body.get("outputs")
    outputs = outputs if isinstance(spec["output"], list) else [outputs]
    shaped = (
        _matches(
            outputs,
            [{"id": o.component_id_str(), "property": o.component_property} for o in declared],
            typed=False,
        )
        and _matches(body.get("inputs"), spec["inputs"], typed=True)
        and _matches(body.get("state", []), spec["state"], typed=True)
        and _text(body)
        and _changed(body.get("changedPropIds", []), body["inputs"])
    )
    return None if shaped else _refused()


def _refused() -> tuple[str, int]:
    return "not a request this page sends\n", 400


def _matches(sent: Any, declared: list[dict], typed: bool) -> bool:
    """Whether ``sent`` lists, for each declared component, what a page sends for it: an item
    naming it (a list of items for a pattern's group)."""
    if not isinstance(sent, list) or len(sent) != len(declared):
        return False
    for item, spec in zip(sent, declared, strict=True):
        pattern = _pattern(spec["id"])
        if pattern is not None and any(json.dumps(v) in GROUPS for v in pattern.values()):
            if not isinstance(item, list) or not all(_item(i, spec, pattern, typed) for i in item):
                return False
        elif not _item(item, spec, pattern, typed):
            return False
    return True


def _pattern(cid: str) -> dict | None:
    """A pattern-matching id's keys and values (wildcards as lists), or None for a plain id."""
    return json.loads(cid) if cid.startswith("{") else None


def _item(item: Any, spec: dict, pattern: dict | None, typed: bool) -> bool:
    """Whether one sent item names the declared component (a pattern: the same keys, its fixed
    values, a wildcard's a string or number) and property (an output's with the ``@hash`` Dash
    gives a duplicate), an input's value of its type (``typed``)."""
    if not isinstance(item, dict) or not isinstance(item.get("property"), str):
        return False
    prop = item["property"] if typed else item["property"].split("@")[0]  # an output's @hash
    if prop != spec["property"]:
        return False
    cid = item.get("id")
    if pattern is None:
        named = cid == spec["id"]
    else:
        named = (
            isinstance(cid, dict)
            and cid.keys() == pattern.keys()
            and all(
                _wildcard_value(cid[k]) if json.dumps(v) in WILDCARDS else cid[k] == v
                for k, v in pattern.items()
            )
        )
    return named and (not typed or _typed(item))


def _wildcard_value(value: Any) -> bool:
    return isinstance(value, str | int | float) and not isinstance(value, bool)


def _typed(item: dict) -> bool:
    """Whether a callback input holds what its component sends."""
    value, kind = item.get("value"), PROP_TYPES.get(item["property"])
    return value is None or kind is None or (isinstance(value, kind) and type(value) is not bool)


def _changed(changed: Any, inputs: list) -> bool:
    """Whether the properties said to have changed are inputs of the request, each as Dash
    names it (``id.property``, a pattern's id as compact JSON of sorted keys): the callback
    reads the one that fired off it (``ctx.triggered_id``)."""
    items = [i for item in inputs for i in (item if isinstance(item, list) else [item])]
    named = {f"{_id_text(i['id'])}.{i['property']}" for i in items}
    return isinstance(changed, list) and all(isinstance(c, str) and c in named for c in changed)


def _id_text(cid: str | dict) -> str:
    return json.dumps(cid, sort_keys=True, separators=(",", ":")) if isinstance(cid, dict) else cid


def _text(value: Any) -> bool:
    """Whether every string in a request (keys too) is text that encodes (JSON's ``\\ud800``
    escape decodes to a lone surrogate, which no page sends and no answer can encode)."""
    stack = [value]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            try:
                value.encode()
            except UnicodeEncodeError:
                return False
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return True


def _too_deep(_: RecursionError) -> tuple[str, int]:
    """A request nested deeper than Python parses (no page of this dashboard sends one)."""
    return "the request is nested too deeply to read\n", 400
