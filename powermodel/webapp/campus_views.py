"""The campus and grid-events views: the workloads of a site, and the site through its
disturbances.

The campus view stacks the workloads' IT power (and each hall's) with the flexibility events;
the grid-events view reads each disturbance against the run, simulates one close up and fits
the dynamic load model over it (:mod:`powermodel.ride_through`), which takes
:data:`~powermodel.webapp.cache.SECONDS_PER_DISTURBANCE` more a disturbance.
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from typing import Any

import dash
import pandas as pd
import plotly.graph_objects as go
from dash import Input, Output

from powermodel import ride_through
from powermodel.analysis import flexibility, workloads
from powermodel.errors import PowerModelError
from powermodel.scenario import (
    load_scenario,
    presets,
)
from powermodel.webapp import ids, plotting, site_figures, tables
from powermodel.webapp.cache import (
    SECONDS_PER_DISTURBANCE,
    Entry,
    Work,
)
from powermodel.webapp.plumbing import (
    OPEN_TAB,
    READY_STATE,
    Board,
    only_when_open,
    parts_of,
    telling,
)

# what a view's callback sends of it, in its outputs' order
PARTS = {
    "campus": ("note", "options", "figure", "workloads", "flex"),
    "grid events": ("note", "options", "figure", "close", "table", "summary", "checks", "model"),
}


class CampusViews(Board):
    """The campus view and the grid-events view of a ready run."""

    def campus(self, state: dict | None, tab: str, picked: Any) -> tuple:
        """The campus view: a note, the workloads to pick from, their stacked IT power (and
        each hall's), each workload's numbers, the flexibility events."""
        only_when_open(tab, "campus")
        chosen = (
            sorted({p for p in picked if isinstance(p, str)})[:64]
            if isinstance(picked, list)
            else []
        )
        with self.refusing():
            v = self.cache.view(
                self.entry(state), f"campus:{json.dumps(chosen)}", lambda e: _campus(e, chosen)
            )
        return parts_of(v, PARTS["campus"])

    def grid_events(self, state: dict | None, tab: str, picked: Any) -> tuple:
        """The grid-events view: the site through its disturbances, one of them close up with
        the fitted dynamic model over it, the tables."""
        only_when_open(tab, "grid events")
        number = isinstance(picked, str) and picked.isascii() and picked.isdigit()
        index = int(picked) if number and len(picked) <= 6 else 0
        with self.refusing():
            entry = self.entry(state)
            index = min(index, max(entry.ds.sizes.get("disturbance", 1) - 1, 0))
            v = self.cache.view(
                entry,
                f"grid-events:{index}",
                lambda e: _grid_events(e, index),
                work=_events_work(entry),
            )
        return parts_of(v, PARTS["grid events"])

    def _register_campus_views(self, app: dash.Dash) -> None:
        """The campus and grid-events views' callbacks."""
        app.callback(
            Output(ids.CAMPUS_NOTE, "children"),
            Output(ids.CAMPUS_PICK, "options"),
            Output(ids.CAMPUS_GRAPH, "figure"),
            Output(ids.CAMPUS_WORKLOADS, "rowData"),
            Output(ids.CAMPUS_FLEX, "rowData"),
            READY_STATE,
            OPEN_TAB,
            Input(ids.CAMPUS_PICK, "value"),
        )(telling(self.campus))
        app.callback(
            Output(ids.GRID_EVENTS_NOTE, "children"),
            Output(ids.GRID_EVENTS_PICK, "options"),
            Output(ids.GRID_EVENTS_GRAPH, "figure"),
            Output(ids.GRID_EVENTS_CLOSE, "figure"),
            Output(ids.GRID_EVENTS_TABLE, "rowData"),
            Output(ids.GRID_EVENTS_SUMMARY, "rowData"),
            Output(ids.GRID_EVENTS_CHECKS, "rowData"),
            Output(ids.GRID_EVENTS_MODEL, "rowData"),
            READY_STATE,
            OPEN_TAB,
            Input(ids.GRID_EVENTS_PICK, "value"),
        )(telling(self.grid_events))


def _events_work(entry: Entry) -> Work:
    """What the grid-events view of a run takes: the run's view, and
    :data:`~powermodel.webapp.cache.SECONDS_PER_DISTURBANCE` more for each disturbance (each
    is read against the run; one is simulated close up and fitted)."""
    run = entry.work
    count = entry.ds.sizes.get("disturbance", 0)
    return replace(
        run,
        seconds=run.seconds + count * SECONDS_PER_DISTURBANCE,
        size=f"{count:,} disturbances over {run.size}",
        fix="give fewer disturbances (disturbance.sags) or a shorter simulation.duration",
    )


def _campus(entry: Entry, picked: list[str]) -> dict[str, Any]:
    """What the campus view shows of a run (``picked``: the workloads stacked, none: all)."""
    ds = entry.ds
    if "workload" not in ds.dims:
        scenario = entry.scenario
        name = scenario.name or "this scenario"
        note = (
            f"{name} runs one job of {scenario.cluster.n_gpus:,} GPUs, not a campus of "
            "workloads: its power is in the power view. The presets with workloads are "
            f"{' and '.join(campus_presets())}; or upload a scenario with [campus] workloads"
        )
        return {
            "note": note,
            "options": [],
            "figure": plotting.empty_figure(note),
            "workloads": [],
            "flex": [],
        }
    names = [str(n) for n in ds["workload"].values]
    flex = flexibility(ds)
    shown = f"{len(names)} workloads" + (
        f" in {ds.sizes['hall']} halls" if "hall" in ds.dims else ""
    )
    return {
        "note": shown + (f"; {len(flex)} flexibility events, shaded" if len(flex) else ""),
        "options": [{"label": n, "value": n} for n in names],
        "figure": site_figures.campus_figure(ds, picked),
        "workloads": tables.rounded_rows(tables.in_percent(workloads(ds), "training time kept")),
        "flex": tables.rounded_rows(flex),
    }


@functools.cache
def campus_presets() -> tuple[str, ...]:
    """The shipped presets with campus workloads (a preset named campus may run one job)."""
    return tuple(p for p in presets() if load_scenario(p).campus is not None)


def _grid_events(entry: Entry, index: int) -> dict[str, Any]:
    """What the grid-events view shows of a run (``index``: the disturbance close up)."""
    ds = entry.ds
    report = ride_through.report(ds) if "disturbance_time" in ds else pd.DataFrame()
    if report.empty:  # this scenario's own answer, never the last one's view
        hidden = {"visible": False}
        clear = "rgba(0,0,0,0)"  # no grey plot area where there is nothing to plot
        empty = go.Figure(
            layout={"xaxis": hidden, "yaxis": hidden, "height": 120, "plot_bgcolor": clear}
        )
        why = (
            "its sequence disturbs nothing (the frequency stays within the deadband, no sag)"
            if "disturbance_time" in ds
            else "it has none"
        )
        return {
            "note": f"this scenario has no grid disturbance: {why}; choose one in the sidebar "
            "(grid disturbance), open the preset nerc-2024-07-virginia-1500mw-campus, or give "
            "[disturbance] in a scenario file",
            "options": [],
            "figure": empty,
            "close": empty,
            "table": [],
            "summary": [],
            "checks": [],
            "model": [],
        }
    index = min(max(index, 0), len(report) - 1)
    response = ride_through.event_response(ds, index)
    try:
        fit = ride_through.site_model(ds, index)
        model, fitted = tables.rounded_rows(fit.comparison), (fit.perc1_fit.p, fit.perc1_fit.q)
    except PowerModelError as exc:  # a response the load model cannot take: say so
        model = [{"quantity": f"not fitted: {exc}", "rmse": "", "rmse_share_of_p0": ""}]
        fitted = None
    summary = ride_through.summary(ds)
    checks = ride_through.check(ds, ride_through.load_requirements())
    return {
        "note": f"{len(report)} disturbances; the site's chain, the requirements and the fitted "
        "model below (powermodel ride-through writes the model's .dyr and .aux)",
        "options": [
            {"label": f"{i}: {pd.Timestamp(t).isoformat()} ({k})", "value": str(i)}
            for i, (t, k) in enumerate(zip(report["time"], report["kind"], strict=True))
        ],
        "figure": site_figures.grid_events_figure(ds),
        "close": site_figures.disturbance_figure(response, fitted),
        "table": tables.rounded_rows(
            report.assign(
                time=tables.times_text(report["time"]),
                duration=report["duration [s]"].map(tables.duration_text),
                **{"back after": report["back after [s]"].map(tables.duration_text)},
            ).drop(columns=["duration [s]", "back after [s]"])
        ),
        "summary": [tables.quantity_row(k, v) for k, v in summary.items()],
        "checks": tables.rounded_rows(checks),
        "model": model,
    }
