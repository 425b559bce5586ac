"""What the dashboard's figures are drawn with: resampled figures, their style, lines, marks.

A long trace goes into a :class:`plotly_resampler.FigureResampler` (:func:`resampler`), which
sends the browser about :data:`SHOWN` points of it at any zoom (:func:`add_line`); a power trace
is drawn light at full resolution and bold as its :data:`MEAN_WINDOW` block means
(:func:`add_series`). Events (failures, maintenance, restarts, checkpoints) are rows of markers
above the traces (:func:`add_marks`). Each view's figures (``figures``, ``site_figures``,
``upload_figures``) are made of these.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import plotly.graph_objects as go
import xarray as xr
from plotly.subplots import make_subplots
from plotly_resampler import FigureResampler

from powermodel import deadline
from powermodel.analysis import (
    State,
)

SHOWN = 2000  # points per trace sent to the browser at any zoom
TEMPLATE = "plotly_white"
COLORS = {
    "gpu_power": "#5d6d7e",
    "facility_power": "#1f4e79",
    "it_power": "#2e86c1",
    "grid_power": "#117a65",
    "grid_reactive_power": "#b9770e",
    "before": "#7f8c8d",
    "after": "#117a65",
}
# marker rows above the traces: what, colour, symbol
MARKS = {
    "failure": ("#c0392b", "triangle-down"),
    "planned maintenance": ("#8e44ad", "triangle-down"),
    "restart": ("#27ae60", "triangle-up"),
    "checkpoint": ("#7f8c8d", "line-ns-open"),
}
# s: the bold line's block means. Ten iterations of the reference's 6.13-s step, so the swing
# averages out; the means are those of a 1-min export (analysis.resample) and of the 1-min ramp
# rules' averaging.
MEAN_WINDOW = 60.0
LIGHT = 0.4  # opacity of a full-resolution line drawn under its means
SWING_COLOR = "#6c3483"
SENSOR_COLOR = "#d35400"  # a sensor's reading, over the exact lines
HOVER_TIME = "%Y-%m-%d %H:%M:%S UTC"


def resampler(rows: int = 1, **kwargs: Any) -> FigureResampler:
    """An empty figure of ``rows`` rows sharing one time axis, whose traces are resampled."""
    base = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06, **kwargs)
    # no "[R]" before a thinned trace's name (plotly-resampler's default mark): every long
    # trace is thinned, and the x-axis title says how the lines read
    return FigureResampler(
        base,
        default_n_shown_samples=SHOWN,
        show_mean_aggregation_size=False,
        resampled_trace_prefix_suffix=("", ""),
    )


def styled(fig: go.Figure) -> go.Figure:
    """``fig`` in the dashboard's style: its template, margins, legend and hover."""
    # No uirevision: a new figure (another scenario) arrives with its whole-run overview, so
    # keeping an old zoom would show that overview's few points as if they were the window's.
    fig.update_layout(
        template=TEMPLATE,
        # the legend sits on the plot; above it, room for the mode bar, which would cover it
        margin={"l": 64, "r": 16, "t": 72, "b": 36},
        legend={"orientation": "h", "x": 0, "y": 1.0, "yanchor": "bottom"},
        hovermode="x",
    )
    return fig


def add_line(
    fig: FigureResampler,
    x: np.ndarray,
    y: np.ndarray,
    name: str,
    row: int = 1,
    color: str | None = None,
    width: float = 1.0,
    **trace: Any,
) -> None:
    """A full-resolution line that plotly-resampler thins to the window shown; a figure
    built past its request's deadline stops here (:mod:`powermodel.deadline`)."""
    deadline.check()
    line = {"width": width, **({"color": color} if color else {})}
    fig.add_trace(
        go.Scattergl(name=name, mode="lines", line=line, **trace), hf_x=x, hf_y=y, row=row, col=1
    )


def block_means(x: np.ndarray, y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Means of ``y`` over consecutive blocks of ``n`` samples (the last may be shorter), each
    placed at the middle of its block's ``x``; energy-exact, as :func:`analysis.resample`."""
    starts, last = _blocks(y.size, n)
    means = np.add.reduceat(y.astype(np.float64), starts) / (last - starts + 1)
    return x[starts] + (x[last] - x[starts]) / 2, means


def block_maxima(x: np.ndarray, y: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Largest ``y`` in each block of ``n`` samples, placed as :func:`block_means` places its
    means: the upper edge of a band that thins to a solid block when zoomed out."""
    starts, last = _blocks(y.size, n)
    return x[starts] + (x[last] - x[starts]) / 2, np.maximum.reduceat(y, starts)


def _blocks(size: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """First and last sample of each block of ``n`` (the last block may be shorter)."""
    starts = np.arange(0, size, n)
    return starts, np.minimum(starts + n, size) - 1


def add_series(
    fig: FigureResampler,
    x: np.ndarray,
    dt: float,
    series: Sequence[tuple[np.ndarray, str, str, int]],
) -> str:
    """Each ``(values, name, colour, row)`` light at full resolution under its bold
    :data:`MEAN_WINDOW` block means, the window rounded to whole steps (or alone, when the step
    is half the window or longer).

    Every full-resolution line comes first: trace ``i`` is series ``i`` (the browser tests and
    the zoom read them so). A line and its means share a legend entry, the means'. Returns how
    the lines read, for the time axis's title.
    """
    n = round(MEAN_WINDOW / dt)
    for values, name, color, row in series:
        add_line(
            fig,
            x,
            values,
            name,
            row,
            color,
            1.5,
            opacity=LIGHT if n >= 2 else 1.0,
            legendgroup=name,
            showlegend=n < 2,
        )
    if n < 2:
        return ""
    window = f"{n * dt / 60:.3g}-min"  # whole steps: 1.05-min at a 7-s step
    for values, name, color, row in series:
        centres, means = block_means(x, values, n)
        add_line(fig, centres, means, f"{name}, {window} mean", row, color, 2.5, legendgroup=name)
    return f"bold: {window} means · light: every sample, zoomed out the band of its min and max"


def time_axis(fig: go.Figure, rows: int, reading: str = "", title: str = "time (UTC)") -> None:
    """Title the shared time axis (on the bottom row) with its clock and how the lines read;
    hover times say UTC too."""
    if title.endswith("(UTC)"):
        fig.update_xaxes(hoverformat=HOVER_TIME)
    fig.update_xaxes(title_text=" · ".join(filter(None, (title, reading))), row=rows, col=1)


def event_marks(ds: xr.Dataset) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Times and hover labels of failures, planned maintenance, restarts and checkpoints.

    Failures and maintenance come from the event table; restarts are the starts of start-up
    after an interruption, checkpoints the starts of a checkpoint stall (``job_state``).
    """
    kinds = ds["event_kind"].values
    out = {
        "failure": (
            ds["event_time"].values[kinds == "unexpected"],
            ds["event_cause"].values[kinds == "unexpected"],
        ),
        "planned maintenance": (
            ds["event_time"].values[kinds == "planned"],
            ds["event_cause"].values[kinds == "planned"],
        ),
    }
    state = ds["job_state"].values
    starts = np.flatnonzero(np.diff(state) != 0) + 1
    times = ds["time"].values
    for name, code in (("restart", State.STARTING), ("checkpoint", State.CHECKPOINT)):
        at = starts[state[starts] == int(code)]
        if name == "restart":
            at = at[at > 0]
        out[name] = (times[at], np.full(at.size, name, dtype=object))
    return out


def add_mark_row(
    fig: go.Figure,
    times: np.ndarray,
    labels: Sequence[str],
    name: str,
    y: float,
    color: str | None = None,
    symbol: str = "x-thin-open",
    counted: str = "",
) -> None:
    """A row of markers at height ``y`` on the top row: events or violations, never thinned;
    the legend counts them (or says ``counted``)."""
    line = {"width": 2 if color is None else 1, **({"color": color} if color else {})}
    fig.add_trace(
        go.Scattergl(
            x=times,
            y=np.full(len(times), y),
            mode="markers",
            marker={
                "symbol": symbol,
                "size": 8,
                "line": line,
                **({"color": color} if color else {}),
            },
            # an array, not a list: plotly validates and encodes a list item by item (57,000
            # violations on the 54-day reference took seconds)
            text=np.asarray(labels, dtype=object),
            name=f"{name} ({counted or len(times)})",
            hovertemplate="%{x|" + HOVER_TIME + "}<br>%{text}<extra></extra>",
        ),
        row=1,
        col=1,
        max_n_samples=max(len(times), 1),
    )


def add_marks(fig: go.Figure, ds: xr.Dataset, top: float) -> int:
    """Failures, maintenance, restarts and checkpoints in rows above ``top``; returns the
    number of rows used."""
    marks = event_marks(ds)
    for i, (name, (times, labels)) in enumerate(marks.items()):
        add_mark_row(fig, times, labels, name, mark_level(top, i), *MARKS[name])
    return len(marks)


def mark_level(top: float, row: int) -> float:
    """The height of marker row ``row`` above a plot whose traces reach ``top``."""
    return top * (1.03 + 0.035 * row)


def empty_figure(message: str) -> dict[str, Any]:
    """A view with nothing to draw yet: no axes, and what to do instead, in their place (in
    lines of at most 90 characters: an annotation does not wrap). The figure as Dash sends
    it, not a ``go.Figure``: the page's layout holds four, and the first ``go.Figure`` of a
    process loads plotly's validators (0.5 s), which the server's start need not wait for."""
    hidden = {"visible": False}
    lines = textwrap.wrap(message, 90)
    return {
        "data": [],
        "layout": {
            "xaxis": hidden,
            "yaxis": hidden,
            "plot_bgcolor": "rgba(0,0,0,0)",
            "annotations": [
                {
                    "text": "<br>".join(lines),
                    "xref": "paper",
                    "yref": "paper",
                    "x": 0.5,
                    "y": 0.5,
                    "showarrow": False,
                    "font": {"size": 15, "color": "#555"},
                }
            ],
        },
    }
