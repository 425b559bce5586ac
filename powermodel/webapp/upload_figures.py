"""The uploads' figures: a measured trace and its fit, and a sweep's metric against a key.

The compare view's trace as measured, the fit's prediction by a fresh run and its replay
through the same sensor; the sweep view's chart of an uploaded sweep's results, a line per
combination of the other swept keys, the axes' units from the schema (:func:`schema_unit`).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.colors import hex_to_rgb, qualitative
from plotly_resampler import FigureResampler

from powermodel.errors import PowerModelError
from powermodel.webapp.plotting import (
    SENSOR_COLOR,
    SWING_COLOR,
    TEMPLATE,
    add_line,
    resampler,
    styled,
    time_axis,
)

MEASURED_COLOR = "#7f8c8d"
FITTED_COLOR = SENSOR_COLOR  # the replay
PREDICTED_COLOR = SWING_COLOR  # the fresh run, the fit's test


def fit_figure(
    start: np.datetime64,
    times: np.ndarray,
    measured: np.ndarray,
    predicted: np.ndarray,
    replayed: np.ndarray,
    sensor: str,
) -> FigureResampler:
    """A measured trace's per-GPU power [W] as its sensor reported it (the mean over its GPUs
    at each sample), the fitted model's prediction (a fresh run) and its replay over the
    trace's own timeline, both through the same sensor, at ``times`` [s after ``start``],
    overlaid."""
    fig = resampler(1)
    x = start + (times * 1e9).astype("timedelta64[ns]")
    add_line(fig, x, measured, f"measured (as the {sensor} reported it)", 1, MEASURED_COLOR, 1.5)
    add_line(
        fig,
        x,
        predicted,
        f"predicted (fresh run), through the same {sensor}",
        1,
        PREDICTED_COLOR,
        1.5,
    )
    add_line(
        fig,
        x,
        replayed,
        f"replay (the trace's own timeline), through the same {sensor}",
        1,
        FITTED_COLOR,
        1.0,
    )
    fig.update_yaxes(title_text="P per GPU [W]")
    time_axis(fig, 1)
    return styled(fig)


LINE_COLORS = qualitative.Plotly  # the sweep view's lines, one per combination of other keys


@functools.lru_cache(maxsize=256)  # a key comes from an uploaded file: bounded
def schema_unit(key: str) -> str:
    """The unit of a scenario key from the schema (:func:`powermodel.reference.keys`), a
    list's item's too (``workload.phases.0.share``: ``workload.phases.N.share``'s); a
    duration's is s (a sweep's results hold it in seconds); "" for none (a count, a name)."""
    from powermodel.reference import keys  # noqa: PLC0415 - the schema's walk, once per key

    general = ".".join("N" if part.isdigit() else part for part in key.split("."))
    try:
        found = next((k for k in keys(general.partition(".N")[0]) if k.key == general), None)
    except PowerModelError:
        return ""
    if found is None:
        return ""
    return "s" if found.kind == "duration" else found.unit


def sweep_figure(
    table: pd.DataFrame, metric: str, key: str, unit: str, key_unit: str = ""
) -> go.Figure:
    """A metric against a swept key (:func:`powermodel.sweep.bands`'s table): per line (the
    other keys' values) its P50 over the seeds, with markers, over its P5-P95 band; the axes
    titled with the metric's ``unit`` and the key's ``key_unit`` ("" for none)."""
    fig = go.Figure()
    numeric = pd.api.types.is_numeric_dtype(table["x"]) and not pd.api.types.is_bool_dtype(
        table["x"]
    )
    for i, (line, rows) in enumerate(table.groupby("line", sort=False)):
        color = LINE_COLORS[i % len(LINE_COLORS)]
        x = rows["x"].to_numpy()
        band = f"rgba({', '.join(map(str, hex_to_rgb(color)))}, 0.18)"
        fig.add_trace(
            go.Scatter(
                x=np.concatenate([x, x[::-1]]),
                y=np.concatenate([rows["p95"].to_numpy(), rows["p5"].to_numpy()[::-1]]),
                mode="lines",
                fill="toself",
                fillcolor=band,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=line,
            )
        )
        fig.add_trace(
            go.Scatter(
                x=x,
                y=rows["p50"],
                mode="lines+markers",
                name=line,
                line={"color": color},
                legendgroup=line,
                customdata=rows[["p5", "p95", "runs", "undefined", "failed"]].to_numpy(),
                hovertemplate=(
                    "P50 %{y:.4g} (P5 %{customdata[0]:.4g}, P95 %{customdata[1]:.4g}) over "
                    "%{customdata[2]} seeds; %{customdata[3]} ran without a value, "
                    "%{customdata[4]} failed<extra>%{fullData.name}</extra>"
                ),
            )
        )
    fig.update_layout(
        title=f"{metric} against {key}: P50 over the seeds, band P5-P95",
        # a key's text values ("1d") carry their own unit
        xaxis_title=f"{key} [{key_unit}]" if key_unit and numeric else key,
        yaxis_title=f"{metric} [{unit}]",
        template=TEMPLATE,
        margin={"l": 64, "r": 16, "t": 72, "b": 48},
        legend={"orientation": "h", "x": 0, "y": -0.15, "yanchor": "top"},
    )
    return fig
