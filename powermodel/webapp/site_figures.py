"""The site's figures: a campus's workloads stacked, and the site through its grid disturbances.

The campus view's stacked IT power of each workload (and hall) over :data:`CAMPUS_POINTS`
intervals, with its flexibility events; the grid-events view's whole span of disturbances and
one of them close up, with the fitted dynamic model over it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import xarray as xr
from plotly.subplots import make_subplots

from powermodel.analysis import (
    step_seconds,
)
from powermodel.webapp.plotting import (
    styled,
)

CAMPUS_POINTS = 2000  # the stacked campus figure's intervals over the whole run


def campus_figure(ds: xr.Dataset, picked: list[str] | None = None) -> go.Figure:
    """A campus's IT power, each workload stacked (``picked``: those shown, by default all),
    and each hall's facility power below where it has halls, as means over at most
    :data:`CAMPUS_POINTS` intervals (stacked areas must share their times, so the run is
    averaged, not thinned); flexibility events shaded."""
    names = [str(n) for n in ds["workload"].values]
    picked = [n for n in (picked or names) if n in names] or names
    halls = "hall" in ds.dims
    fig = make_subplots(rows=2 if halls else 1, cols=1, shared_xaxes=True, vertical_spacing=0.08)
    n = ds.sizes["time"]
    factor = max(1, -(-n // CAMPUS_POINTS))
    usable = n // factor * factor
    times = ds["time"].values[:usable:factor]

    def binned(values: np.ndarray) -> np.ndarray:
        return values[:usable].reshape(-1, factor).mean(axis=1)

    for name in picked:
        fig.add_trace(
            go.Scatter(
                x=times, y=binned(ds["workload_it_power"].sel(workload=name).values),
                name=name, stackgroup="workloads", mode="lines", line={"width": 0.5},
            ),
            row=1, col=1,
        )  # fmt: skip
    if halls:
        for name in ds["hall"].values:
            fig.add_trace(
                go.Scatter(
                    x=times, y=binned(ds["hall_facility_power"].sel(hall=name).values),
                    name=f"hall {name}", stackgroup="halls", mode="lines", line={"width": 0.5},
                ),
                row=2, col=1,
            )  # fmt: skip
        fig.update_yaxes(title_text="hall facility [MW]", row=2, col=1)
    for i in range(ds.sizes.get("flex", 0)):
        start = ds["flex_start"].values[i]
        end = start + np.timedelta64(int(ds["flex_duration"].values[i] * 1e9), "ns")
        fig.add_vrect(
            x0=start, x1=end, fillcolor="#f1c40f", opacity=0.2, line_width=0,
            annotation_text=str(ds["flex_name"].values[i]), annotation_position="top left",
        )  # fmt: skip
    fig.update_yaxes(title_text="IT power [MW]", row=1, col=1)
    step = factor * step_seconds(ds)
    fig.update_xaxes(title_text=f"UTC; means over {step / 60:.3g} min", row=2 if halls else 1)
    return styled(fig)


GRID_EVENT_POINTS = 2000  # the grid-events figure's intervals over the disturbances' span


def grid_events_figure(ds: xr.Dataset) -> go.Figure:
    """The site at the connection through its disturbances: what the grid carries, what the
    generators and the UPS batteries carry, the recharge after; from five minutes before the
    first disturbance to ten after the last effect, as means over at most
    :data:`GRID_EVENT_POINTS` intervals; each disturbance marked at the bottom."""
    dt = float(ds.attrs["dt"])
    start = ds["time"].values[0]
    first = int(((ds["disturbance_time"].values.min() - start) / np.timedelta64(1, "s")) // dt)
    acting = np.flatnonzero(ds["grid_event"].values)
    last = int(acting[-1]) if acting.size else first
    lo = max(first - int(300 / dt), 0)
    hi = min(last + int(600 / dt), ds.sizes["time"])
    factor = max(1, -(-(hi - lo) // GRID_EVENT_POINTS))
    hi = lo + (hi - lo) // factor * factor
    times = ds["time"].values[lo:hi:factor]
    fig = go.Figure()
    for name, label in (
        ("grid_power", "grid"),
        ("generator_power", "generators"),
        ("ups_battery_power", "UPS batteries"),
        ("recharge_power", "recharge"),
    ):
        values = ds[name].values[lo:hi].reshape(-1, factor).mean(axis=1)
        fig.add_trace(go.Scatter(x=times, y=values, name=label, mode="lines"))
    kinds = ds["disturbance_kind"].values
    fig.add_trace(
        go.Scatter(
            x=ds["disturbance_time"].values,
            y=np.zeros(kinds.size),
            mode="markers",
            marker={"symbol": "triangle-up", "size": 12, "color": "#c0392b"},
            name="disturbances",
            text=[
                f"frequency: {f:.4g} Hz"
                if k == "frequency"
                else f"{k}: worst phase {w:.3g} p.u., positive sequence {p:.3g} p.u."
                for k, w, p, f in zip(
                    kinds,
                    ds["disturbance_connection_worst"].values,
                    ds["disturbance_connection_positive"].values,
                    ds["disturbance_frequency"].values,
                    strict=True,
                )
            ],
            hoverinfo="text+x",
        )
    )
    fig.update_layout(
        title="the site at the connection through the disturbances",
        yaxis_title="power [MW]",
        legend={"orientation": "h"},
        margin={"t": 50},
    )
    return fig


def disturbance_figure(
    response: pd.DataFrame, model: tuple[np.ndarray, np.ndarray] | None = None
) -> go.Figure:
    """One disturbance on a fine step: the positive-sequence voltage and the frequency at the
    connection, the site's P and Q, and the fitted dynamic model's P and Q re-simulated on the
    same times (``model``, or None: not fitted)."""
    t = response["time"].to_numpy()
    fig = make_subplots(
        rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06, row_heights=[0.25, 0.2, 0.55]
    )
    fig.add_trace(
        go.Scatter(x=t, y=response["voltage"], name="voltage (positive sequence)"), row=1, col=1
    )
    fig.add_trace(go.Scatter(x=t, y=response["frequency"], name="frequency"), row=2, col=1)
    fig.add_trace(go.Scatter(x=t, y=response["p"], name="P, the site"), row=3, col=1)
    fig.add_trace(go.Scatter(x=t, y=response["q"], name="Q, the site"), row=3, col=1)
    if model is not None:
        dash = {"dash": "dash"}
        fig.add_trace(go.Scatter(x=t, y=model[0], name="P, fitted model", line=dash), row=3, col=1)
        fig.add_trace(go.Scatter(x=t, y=model[1], name="Q, fitted model", line=dash), row=3, col=1)
    fig.update_yaxes(title_text="[p.u.]", row=1, col=1)
    fig.update_yaxes(title_text="[Hz]", row=2, col=1)
    fig.update_yaxes(title_text="[MW], [Mvar]", row=3, col=1)
    fig.update_xaxes(title_text="time from the disturbance [s]", row=3, col=1)
    fig.update_layout(legend={"orientation": "h"}, margin={"t": 30})
    return fig
