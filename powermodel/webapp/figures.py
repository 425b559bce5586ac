"""Figures of the dashboard: pure functions from a simulated Dataset to a plotly Figure."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import xarray as xr

from powermodel.analysis import resample

MEAN_COLOR = "#1f4e79"
ENVELOPE_COLOR = "rgba(31, 78, 121, 0.25)"
EVENT_COLOR = "#c0392b"


def power_figure(ds: xr.Dataset, interval: str = "1min") -> go.Figure:
    """IT power over the whole run: interval means, min–max envelope, unexpected interruptions.

    Parameters
    ----------
    ds
        A simulated Dataset: ``it_power`` [MW] on ``time``; ``event_time``, ``event_kind``
        and ``event_cause`` on ``event``.
    interval
        Averaging interval of the plotted means; a whole multiple of the step that divides the run.

    Returns
    -------
    go.Figure
        Traces, in order: the interval minima, the interval maxima filled down to them, the
        interval means, and the unexpected interruptions as markers in a row above the envelope,
        each with its cause on hover.

    Notes
    -----
    The means and the markers are WebGL traces. The envelope is an SVG trace, drawn beneath
    them: in plotly.js 4.1 a WebGL ``fill="tonexty"`` draws nothing, and one ``fill="toself"``
    outline of a 54-day run (155,520 vertices) overflows the browser's stack while triangulating.
    SVG simplifies the outline to the pixels it covers.
    """
    coarse = resample(ds, interval)
    units = ds["it_power"].attrs.get("units", "MW")
    start = pd.Timestamp(coarse["time"].values[0])
    end = start + pd.Timedelta(seconds=coarse.sizes["time"] * coarse.attrs["dt"])
    # A regular grid: x0 and dx instead of one date string per point keep the page small.
    grid = {"x0": start.isoformat(), "dx": coarse.attrs["dt"] * 1000.0}  # date axes count in ms
    band = {"mode": "lines", "line": {"width": 0}, "hoverinfo": "skip", "legendgroup": "envelope"}
    top = float(coarse["it_power_max"].max())
    unexpected = ds["event_kind"].values == "unexpected"
    count = int(unexpected.sum())
    fig = go.Figure(
        [
            go.Scatter(y=coarse["it_power_min"].values, **grid, **band, showlegend=False),
            go.Scatter(
                y=coarse["it_power_max"].values,
                **grid,
                **band,
                fill="tonexty",
                fillcolor=ENVELOPE_COLOR,
                name=f"{interval} min–max",
            ),
            go.Scattergl(
                y=coarse["it_power"].values,
                **grid,
                mode="lines",
                line={"width": 1, "color": MEAN_COLOR},
                name=f"{interval} mean",
                hovertemplate=f"%{{x}}<br>%{{y:.2f}} {units}<extra></extra>",
            ),
            go.Scattergl(
                x=ds["event_time"].values[unexpected],
                y=np.full(count, 1.05 * top),
                mode="markers",
                marker={"symbol": "triangle-down", "size": 8, "color": EVENT_COLOR},
                text=ds["event_cause"].values[unexpected],
                name=f"unexpected interruption ({count})",
                hovertemplate="%{x}<br>%{text}<extra></extra>",
            ),
        ]
    )
    fig.update_layout(
        template="plotly_white",
        margin={"l": 60, "r": 20, "t": 30, "b": 40},
        legend={"orientation": "h", "x": 0, "y": 1.02, "yanchor": "bottom", "traceorder": "normal"},
        xaxis={"type": "date", "range": [start.isoformat(), end.isoformat()]},
        yaxis={"title": {"text": f"IT power [{units}]"}, "rangemode": "tozero"},
    )
    return fig
