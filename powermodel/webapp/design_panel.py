"""The sidebar's "design from the connection" (issue 28): a connection's MW in, the largest site
of the chosen preset's kind within it out (:func:`powermodel.design.design`: its GPU count,
design peak, margin and what binds), and a button that loads the designed scenario as an
uploaded one (the upload's own path: its checks and limits).

The design's runs go through the dashboard's simulation queue and memory bound and its limits
(:meth:`Dashboard.check_limits`); one design at a time in the server, a second is told to wait.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import dash
from dash import Input, Output, State, html

from powermodel.design import connection_mw, design, scenario_toml
from powermodel.errors import PowerModelError
from powermodel.scenario import presets
from powermodel.webapp import ids

MW = "design-mw"  # the connection's rating [MW]
RUN = "design-run"
RESULT = "design-result"
STORE = "design-scenario"  # store: the designed scenario's file name and TOML text
LOAD = "design-load"
SHOWN = ("GPUs", "design peak at the connection", "margin", "binds", "note")


def panel() -> html.Details:
    """The control: MW in, the design out, a button to load it."""
    return html.Details(
        [
            html.Summary("design from the connection"),
            html.Div(
                [
                    html.Label("grid connection [MW]", htmlFor=MW),
                    dash.dcc.Input(
                        id=MW,
                        type="number",
                        min=0,
                        step="any",
                        placeholder="e.g. 50",
                        debounce=True,
                    ),
                ],
                className="control",
            ),
            html.Button("design the largest site of this preset's kind", id=RUN, n_clicks=0),
            html.Div("", id=RESULT, className="message", role="status"),
            html.Button("load the designed site", id=LOAD, n_clicks=0, disabled=True),
            dash.dcc.Store(id=STORE),
        ],
        open=False,
    )


def register(app: dash.Dash, board: Any) -> None:
    """The panel's callbacks on ``app``, its runs through ``board``'s cache and limits."""
    one = threading.BoundedSemaphore(1)

    def simulated(scenario: Any) -> Any:
        board.check_limits(scenario)
        return board.cache.get(scenario).ds

    def designed(clicks: Any, grid_mw: Any, preset: Any) -> tuple:
        if not clicks:
            raise dash.exceptions.PreventUpdate
        if not isinstance(preset, str) or preset not in presets():
            return "choose a preset first", None, True
        try:
            grid_mw = connection_mw(grid_mw)
        except PowerModelError as exc:
            return board.said(exc), None, True
        if not one.acquire(blocking=False):
            return (
                "another design is running on this server: try again in a few seconds",
                None,
                True,
            )
        try:
            found = design(preset, float(grid_mw), simulator=simulated)
        except PowerModelError as exc:
            return board.said(exc), None, True
        finally:
            one.release()
        rows = [html.Div(f"{label}: {value}") for label, value in found.summary() if label in SHOWN]
        name = f"{found.overrides['name']}.toml"
        # it opens on the period the design simulated: the preset's, at most the first week
        # (the dashboard's opening period), so the page shows the design's own run
        opened = replace(
            found, overrides={**found.overrides, "simulation.duration": found.design_period}
        )
        return rows, {"filename": name, "toml": scenario_toml(opened)}, False

    app.callback(
        Output(RESULT, "children"),
        Output(STORE, "data"),
        Output(LOAD, "disabled"),
        Input(RUN, "n_clicks"),
        State(MW, "value"),
        State(ids.PRESET, "value"),
        prevent_initial_call=True,
    )(designed)
    # in the browser: the designed file handed to the scenario upload, as if the user had
    # uploaded it (the server reads it as it reads any upload)
    app.clientside_callback(
        """function(clicks, stored) {
            const none = window.dash_clientside.no_update;
            if (!clicks || !stored || typeof stored.toml !== "string") { return [none, none]; }
            const bytes = new TextEncoder().encode(stored.toml);
            let text = "";
            bytes.forEach(function (b) { text += String.fromCharCode(b); });
            return ["data:application/toml;base64," + btoa(text), stored.filename];
        }""",
        Output(ids.UPLOAD_SCENARIO, "contents"),
        Output(ids.UPLOAD_SCENARIO, "filename"),
        Input(LOAD, "n_clicks"),
        State(STORE, "data"),
        prevent_initial_call=True,
    )
