"""Figures and tables of the dashboard: pure functions of simulated Datasets.

Time series over a whole run are :class:`plotly_resampler.FigureResampler` figures: the browser
gets about :data:`SHOWN` points per trace, re-chosen on the server for each zoom (min-max LTTB),
so a 54-day 1-s run pans smoothly and a 30-s window shows every sample. The callbacks keep these
figures server-side and answer each zoom with :meth:`FigureResampler.construct_update_data_patch`.

A power trace is drawn twice: thin and light at full resolution, which zoomed out is the min–max
band of the samples behind each point (the 6-s iteration swing fills it), and bold as its
:data:`MEAN_WINDOW` block means, the line the eye follows. Time axes are UTC, as ``time`` is.
"""

from __future__ import annotations

import functools
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import xarray as xr
from plotly.colors import hex_to_rgb, qualitative
from plotly.subplots import make_subplots
from plotly_resampler import FigureResampler

from powermodel import analysis, deadline, sizing
from powermodel import rules as rules_mod
from powermodel.analysis import (
    SWING_WINDOW,
    State,
    diurnal_throughput,
    local_hours,
    step_seconds,
    swing_resolved,
)
from powermodel.errors import PowerModelError
from powermodel.simulate import SENSORS, sensor_view

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
SPECTRUM_SEGMENT = 3600.0  # s: Welch segments of an hour resolve down to 0.3 mHz
# s: the bold line's block means. Ten iterations of the reference's 6.13-s step, so the swing
# averages out; the means are those of a 1-min export (analysis.resample) and of the 1-min ramp
# rules' averaging.
MEAN_WINDOW = 60.0
LIGHT = 0.4  # opacity of a full-resolution line drawn under its means
SWING_COLOR = "#6c3483"
SENSOR_COLOR = "#d35400"  # a sensor's reading, over the exact lines
EXACT = "exact"  # the sensor choice that overlays nothing: the interval means themselves
HOVER_TIME = "%Y-%m-%d %H:%M:%S UTC"
LINE_COLORS = qualitative.Plotly  # the sweep view's lines, one per combination of other keys
BANDS = ("#f5b041", "#5dade2", "#af7ac5", "#58d68d", "#ec7063")  # rules' bands on the spectrum


def _resampler(rows: int = 1, **kwargs: Any) -> FigureResampler:
    base = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06, **kwargs)
    # no "[R]" before a thinned trace's name (plotly-resampler's default mark): every long
    # trace is thinned, and the x-axis title says how the lines read
    return FigureResampler(
        base,
        default_n_shown_samples=SHOWN,
        show_mean_aggregation_size=False,
        resampled_trace_prefix_suffix=("", ""),
    )


def _style(fig: go.Figure) -> go.Figure:
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


def _line(
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


def _series(
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
        _line(
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
        _line(fig, centres, means, f"{name}, {window} mean", row, color, 2.5, legendgroup=name)
    return f"bold: {window} means · light: every sample, zoomed out the band of its min and max"


def _time_axis(fig: go.Figure, rows: int, reading: str = "", title: str = "time (UTC)") -> None:
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


def _mark_row(
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


def _marks(fig: go.Figure, ds: xr.Dataset, top: float) -> int:
    """Failures, maintenance, restarts and checkpoints in rows above ``top``; returns the
    number of rows used."""
    marks = event_marks(ds)
    for i, (name, (times, labels)) in enumerate(marks.items()):
        _mark_row(fig, times, labels, name, _level(top, i), *MARKS[name])
    return len(marks)


def _level(top: float, row: int) -> float:
    return top * (1.03 + 0.035 * row)


FACILITY_IS_GRID = "Facility power = grid power (no site battery)"


def power_lines(ds: xr.Dataset) -> list[tuple[str, str]]:
    """The power variables drawn and their names: facility, IT and grid power, or one line named
    for both facility and grid power where they are equal (no site battery between them)."""
    same = np.array_equal(ds["facility_power"].values, ds["grid_power"].values)
    names = ("facility_power", "it_power") if same else ("facility_power", "it_power", "grid_power")
    return [
        (n, FACILITY_IS_GRID if same and n == "facility_power" else ds[n].attrs["long_name"])
        for n in names
    ]


def sensor_options() -> list[dict[str, str]]:
    """The choices of "as measured by": the exact signal, then each sensor chain."""
    return [{"label": EXACT, "value": EXACT}] + [
        {"label": chain.label, "value": key} for key, chain in SENSORS.items()
    ]


def power_figure(ds: xr.Dataset, sensor: str = EXACT) -> FigureResampler:
    """Facility, IT and grid power over the run (light: every sample; bold: block means), with
    failures, maintenance, restarts and checkpoints marked in rows above the traces.

    With a ``sensor`` (a key of :data:`powermodel.simulate.SENSORS`), its reading of its own
    variable (:func:`powermodel.simulate.sensor_view`) is drawn over the exact lines at every
    sample, the exact variable added where the figure lacks it (GPU power for NVML and DCGM);
    a sensor the run's step cannot resolve is named on the time axis with the step it needs.
    """
    fig = _resampler()
    lines = power_lines(ds)
    watched = SENSORS[sensor].variable if sensor in SENSORS else None
    drawn = {n for n, _ in lines} | ({"grid_power"} if lines[0][1] == FACILITY_IS_GRID else set())
    if watched is not None and watched not in drawn:
        lines.append((watched, ds[watched].attrs["long_name"]))
    reading = _series(
        fig,
        ds["time"].values,
        step_seconds(ds),
        [(ds[n].values, label, COLORS[n], 1) for n, label in lines],
    )
    if watched is not None:
        try:
            view = sensor_view(ds, sensor)
        except PowerModelError as exc:
            reading = " · ".join(filter(None, (reading, f"not shown: {exc}")))
        else:
            _line(fig, ds["time"].values, view.values, view.attrs["long_name"], 1, SENSOR_COLOR)
    _marks(fig, ds, float(max(ds[n].max() for n, _ in lines)))
    fig.update_yaxes(title_text="power [MW]", rangemode="tozero")
    _time_axis(fig, 1, reading)
    return _style(fig)


# variables of each row and the row's axis title
THERMAL_ROWS = (
    (("temp_air", "temp_wetbulb", "supply_temp"), "outdoor, supply [°C]"),
    (("gpu_temp",), "GPU die [°C]"),
    (("clock_factor",), "clock ÷ nominal"),
    (("pue",), "PUE of the hour"),
)
CLOCK_NOTE = (
    "The clock the slowest GPU can hold at its power cap: a cooler die leaks less, leaving more of "
    "the cap to the clock, so it<br>falls in the heat and rises in the cool. It spikes at failures "
    "and stalls, as idle GPUs cool, and settles minutes after the restart."
)
CLOCK_HOVER = "%{y:.3f} × nominal (above 1: cool dies, or idle GPUs)<extra></extra>"


def thermal_figure(ds: xr.Dataset) -> FigureResampler:
    """Outdoor dry- and wet-bulb with the plant's supply; mean GPU die temperature; clock of the
    slowest GPU, with a note on why it rises at failures; PUE of each clock hour."""
    rows = [r for r in THERMAL_ROWS if all(v in ds for v in r[0])]
    fig = _resampler(len(rows))
    times = ds["time"].values
    for i, (names, title) in enumerate(rows, start=1):
        for name in names:
            clock = name == "clock_factor"
            _line(
                fig,
                times,
                ds[name].values.astype(np.float64),
                ds[name].attrs["long_name"],
                row=i,
                hovertemplate=CLOCK_HOVER if clock else None,
            )
            if clock:
                fig.add_annotation(  # in the gap above the row, clear of the spikes
                    text=CLOCK_NOTE,
                    x=0.0,
                    y=1.0,
                    xref="x domain",
                    yref="y domain",
                    xanchor="left",
                    yanchor="bottom",
                    align="left",
                    showarrow=False,
                    font={"size": 10},
                    row=i,
                    col=1,
                )
        fig.update_yaxes(title_text=title, row=i, col=1)
    _time_axis(fig, len(rows))
    return _style(fig)


def diurnal_figure(ds: xr.Dataset) -> go.Figure:
    """Training throughput by local hour of day, relative to its daily mean, with the mean
    outdoor temperature of each hour."""
    profile = diurnal_throughput(ds)
    trained = np.isfinite(profile).any()  # a run that never trains has no bars to draw
    relative = 100.0 * (profile / np.nanmean(profile) - 1.0) if trained else profile
    hours = local_hours(ds)
    temp = np.bincount(hours, ds["temp_air"].values.astype(np.float64), 24) / np.maximum(
        np.bincount(hours, minlength=24), 1
    )
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_trace(
        go.Bar(
            x=np.arange(24),
            y=relative,
            name="throughput vs daily mean [%]",
            marker_color="#2e86c1",
            hovertemplate="%{x}:00 %{y:.2f} %<extra></extra>",
        ),
        secondary_y=False,
    )
    fig.add_trace(
        go.Scatter(
            x=np.arange(24),
            y=temp,
            name="outdoor dry-bulb [°C]",
            mode="lines+markers",
            line={"color": "#c0392b"},
        ),
        secondary_y=True,
    )
    fig.update_xaxes(
        title_text=f"hour of day, site local time ({ds.attrs.get('site_timezone', 'UTC')})",
        dtick=3,
    )
    fig.update_yaxes(title_text="throughput [%]", secondary_y=False)
    fig.update_yaxes(title_text="dry-bulb [°C]", secondary_y=True, showgrid=False)
    return _style(fig)


def five_second_swing(ds: xr.Dataset) -> np.ndarray | None:
    """Max − min of P at the connection within 5 s [MW], or None where the step cannot resolve
    it: what the grid view's figure and its ramp distributions both draw."""
    dt = step_seconds(ds)
    if not swing_resolved(dt):
        return None
    return analysis.rolling_range(ds["grid_power"].values, round(SWING_WINDOW / dt))


def grid_figure(
    ds: xr.Dataset,
    results: Sequence[rules_mod.RuleResult] = (),
    swing: np.ndarray | None = None,
) -> FigureResampler:
    """P and Q at the connection and the rolling 5-s peak-to-peak of P (``swing``, computed
    here when not given); on the P row, the job's events and each rule's violations grouped
    into events (:func:`violation_events`), marked at their start."""
    fig = _resampler(3, row_heights=[0.5, 0.25, 0.25])
    times, dt = ds["time"].values, step_seconds(ds)
    p, q = ds["grid_power"].values, ds["grid_reactive_power"].values
    reading = _series(
        fig,
        times,
        dt,
        [
            (p, "P at the connection", COLORS["grid_power"], 1),
            (q, "Q at the connection (+ absorbed)", COLORS["grid_reactive_power"], 2),
        ],
    )
    swing = five_second_swing(ds) if swing is None else swing
    if swing is not None:
        name = f"max − min in {SWING_WINDOW:g} s, unfiltered"
        minute = round(MEAN_WINDOW / dt)
        _line(fig, times, swing, f"{name} [MW]", 3, SWING_COLOR, opacity=LIGHT, legendgroup=name)
        # what matters of the swing is its top: the largest in each minute, bold
        centres, largest = block_maxima(times, swing, minute)
        _line(fig, centres, largest, f"{name}, largest a minute [MW]", 3, SWING_COLOR, 2.5,
              legendgroup=name)  # fmt: skip
    top = float(p.max())
    used = _marks(fig, ds, top)  # the events, to see what each violation follows
    for i, result in enumerate(results, start=used):
        # one marker an event, as the table lists them (a week marked 12,936 violations)
        rule = result.rule
        v = violation_events(result.violations.assign(rule=rule.name, unit=rule.unit))
        labels = [
            f"{rule.name}: {n} violation{'s' if n > 1 else ''}, worst {w:.3g} {rule.unit} ({c})"
            # plain arrays: iterating the table's columns element by element is ~20x slower
            for n, w, c in zip(
                v["violations"].to_numpy(), v["worst"].to_numpy(), v["cause"].to_numpy(),
                strict=True,
            )
        ]  # fmt: skip
        counted = f"{len(result.violations):,} in {len(v):,} events"
        name = f"{rule.name} violations"
        _mark_row(fig, v["start"].values, labels, name, _level(top, i), counted=counted)
    fig.update_yaxes(title_text="P [MW]", row=1, col=1)
    # the sign rides in the legend: an axis title longer than its panel runs into the next
    fig.update_yaxes(title_text="Q [Mvar]", row=2, col=1)
    fig.update_yaxes(title_text="5-s swing [MW]", row=3, col=1, rangemode="tozero")
    _time_axis(fig, 3, reading)
    return _style(fig)


RAMP_COLORS = ("#8e9bfa", "#f1948a", "#48c9b0")


def ramp_figure(ds: xr.Dataset, bins: int = 60, swing: np.ndarray | None = None) -> go.Figure:
    """Distributions of the ramp at the connection, each reading on its own axis in its own
    unit: the 1-min net change [MW], the 1-min average slope [MW/min] and max − min within 5 s
    [MW] (``swing``, computed here when not given): on a swing of a few seconds the net change
    is near zero, the slope moderate and max − min the whole swing."""
    p, dt = ds["grid_power"].values, step_seconds(ds)
    readings = {}
    if 120.0 <= p.size * dt and dt <= 12.0:
        n = analysis.samples(60.0, dt)
        readings["1-min net change"] = ("MW", analysis.net_change(p, n)[n:])
        readings["1-min average slope"] = ("MW/min", analysis.average_slope(p, n)[2 * n :])
    swing = five_second_swing(ds) if swing is None else swing
    if swing is not None:
        readings["5-s max − min"] = ("MW", swing)
    fig = make_subplots(
        rows=1,
        cols=max(len(readings), 1),
        shared_yaxes=True,
        horizontal_spacing=0.05,
        subplot_titles=list(readings),
    )
    for col, (name, (unit, values)) in enumerate(readings.items(), start=1):
        counts, edges = np.histogram(values, bins=bins)
        fig.add_trace(
            go.Bar(
                x=0.5 * (edges[1:] + edges[:-1]),
                y=counts / max(values.size, 1),
                width=np.diff(edges),
                name=name,
                marker_color=RAMP_COLORS[col - 1],
                showlegend=False,
                hovertemplate=f"%{{x:.2f}} {unit}: %{{y:.2e}} of the time<extra>{name}</extra>",
            ),
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text=unit, row=1, col=col)
    fig.update_annotations(font_size=13)  # the subplot titles
    fig.update_yaxes(type="log", exponentformat="power")
    fig.update_yaxes(title_text="share of time", row=1, col=1)
    return _style(fig)


def spectrum_figure(ds: xr.Dataset, rules: Sequence[rules_mod.Rule] = ()) -> go.Figure:
    """Power spectral density of P at the connection (Welch, hour-long segments) with each
    rule's band shaded and the frequencies the step cannot resolve greyed out."""
    p, dt = ds["grid_power"].values, step_seconds(ds)
    f, density = analysis.spectrum(p, dt, min(SPECTRUM_SEGMENT, p.size * dt / 4))
    keep = f > 0
    fig = go.Figure(
        go.Scattergl(
            x=f[keep],
            y=density[keep],
            mode="lines",
            name="P at the connection",
            line={"color": COLORS["grid_power"], "width": 1},
        )
    )
    nyquist, resolved = analysis.nyquist(dt), analysis.resolved(dt)
    banded = [r for r in rules if r.band and r.band[0] < nyquist]
    for i, rule in enumerate(banded):
        lo, hi = rule.band
        fig.add_vrect(
            x0=lo,
            x1=min(hi, nyquist),
            fillcolor=BANDS[i % len(BANDS)],
            opacity=0.2,
            line_width=0,
            name=f"{rule.name} band, {lo:g}–{hi:g} Hz",
            showlegend=True,
        )
    fig.add_vrect(
        x0=resolved,
        x1=nyquist,
        fillcolor="#7f8c8d",
        opacity=0.3,
        line_width=0,
        name=f"not resolved at a {dt:g}-s step (above {resolved:g} Hz)",
        showlegend=True,
    )
    fig.update_xaxes(
        title_text="frequency [Hz]", type="log", range=[np.log10(f[keep][0]), np.log10(nyquist)]
    )
    fig.update_yaxes(title_text="PSD [MW²/Hz]", type="log", exponentformat="e")
    return _style(fig)


def compliance_rows(results: Sequence[rules_mod.RuleResult]) -> list[dict[str, Any]]:
    """One row per rule: verdict, limit, worst value and when, violations per day by cause."""
    rows = []
    for r in results:
        causes = ", ".join(
            f"{c} {n / r.days:.1f}/d" for c, n in sorted(r.by_cause.items(), key=lambda kv: -kv[1])
        )
        rows.append(
            {
                "rule": r.rule.name,
                "verdict": "violated" if len(r.violations) else "passes",
                "limit": f"{r.limit:.3g} {r.rule.unit}",
                "worst": f"{r.worst:.3g} {r.rule.unit}",
                "when": pd.Timestamp(r.worst_time).strftime("%Y-%m-%d %H:%M:%S"),
                "violations per day": causes or "none",
                "note": f"band cut at {r.resolved_to:g} Hz: a pass is not proven above it"
                if r.resolved_to
                else "",
            }
        )
    return rows


# Violations of one rule with one cause that follow each other within this gap are one event
# [A]: one restart's ramp gave 8 nprr1191-up violations 2 s apart, a week 12,936 rows
EVENT_GAP = 60.0  # [s]


def violation_events(table: pd.DataFrame, gap: float = EVENT_GAP) -> pd.DataFrame:
    """The violations of a table (:func:`powermodel.rules.violations_table`) grouped into
    events: those of one run, rule and cause each starting within ``gap`` [s] of the end of
    the one before. Columns ``rule``, ``start`` (the first's), ``end`` (the last's),
    ``violations`` (how many), ``worst`` (the largest), ``unit``, ``cause``; by start, then
    rule."""
    columns = ["rule", "start", "end", "violations", "worst", "unit", "cause"]
    if not len(table):
        return pd.DataFrame(columns=columns)
    run = table["run"] if "run" in table else pd.Series(1, index=table.index)
    t = table.assign(run=run.to_numpy(), start=pd.to_datetime(table["start"]))
    t = t.assign(end=pd.to_datetime(t["end"])).sort_values(
        ["run", "rule", "cause", "start"], kind="stable"
    )
    same = (
        (t["run"].to_numpy()[1:] == t["run"].to_numpy()[:-1])
        & (t["rule"].to_numpy()[1:] == t["rule"].to_numpy()[:-1])
        & (t["cause"].to_numpy()[1:] == t["cause"].to_numpy()[:-1])
    )
    # the latest end so far of the rule and cause: a long violation covers short ones in it
    keys = t.groupby(["run", "rule", "cause"], sort=False, observed=True)
    ends = keys["end"].cummax().to_numpy()
    after = (t["start"].to_numpy()[1:] - ends[:-1]) / np.timedelta64(1, "s")
    event = np.concatenate([[0], np.cumsum(~(same & (after <= gap)))])
    grouped = t.assign(event=event).groupby("event", sort=False)
    out = grouped.agg(
        rule=("rule", "first"),
        start=("start", "min"),
        end=("end", "max"),
        violations=("rule", "size"),
        worst=("worst", "max"),
        unit=("unit", "first"),
        cause=("cause", "first"),
    )
    return out.sort_values(["start", "rule"], kind="stable").reset_index(drop=True)[columns]


def violation_rows(table: pd.DataFrame, limit: int) -> list[dict[str, Any]]:
    """Rows of a violations table grouped into events (:func:`violation_events`): all of
    them, or the ``limit`` largest where there are more, by start time. ``worst`` is a number
    (its unit beside it), so that the table sorts it as one."""
    events = violation_events(table)
    if len(events) > limit:
        events = events.nlargest(limit, "worst").sort_values("start", kind="stable")
    when = "%Y-%m-%d %H:%M:%S"
    return pd.DataFrame(
        {
            "rule": events["rule"].to_numpy(),
            "start": pd.to_datetime(events["start"]).dt.strftime(when).to_numpy(),
            "end": pd.to_datetime(events["end"]).dt.strftime(when).to_numpy(),
            "violations": events["violations"].astype(int).to_numpy(),
            "worst": [float(f"{w:.4g}") for w in events["worst"]],
            "unit": events["unit"].to_numpy(),
            "cause": events["cause"].to_numpy(),
        }
    ).to_dict("records")


def before_after_figure(before: xr.Dataset, after: xr.Dataset) -> FigureResampler:
    """Grid power without and with the mitigation, one above the other on one time axis."""
    fig = _resampler(2)
    runs = ((before, "before", "without"), (after, "after", "with"))
    reading = _series(
        fig,
        before["time"].values,
        step_seconds(before),
        [
            (ds["grid_power"].values, f"P {label} mitigation", COLORS[name], row)
            for row, (ds, name, label) in enumerate(runs, start=1)
        ],
    )
    fig.update_yaxes(title_text="P [MW]")
    _time_axis(fig, 2, reading)
    low = float(min(before["grid_power"].min(), after["grid_power"].min()))
    high = float(max(before["grid_power"].max(), after["grid_power"].max()))
    pad = 0.05 * (high - low or 1.0)
    fig.update_yaxes(range=[low - pad, high + pad])
    return _style(fig)


def compare_figure(a: xr.Dataset, b: xr.Dataset, names: tuple[str, str]) -> FigureResampler:
    """Grid power of two runs against hours since each run's start, one above the other."""
    fig, reading = _resampler(2), ""
    for row, (ds, color) in enumerate(
        ((a, COLORS["grid_power"]), (b, COLORS["facility_power"])), start=1
    ):
        hours = (ds["time"].values - ds["time"].values[0]) / np.timedelta64(3600, "s")
        series = [(ds["grid_power"].values, names[row - 1], color, row)]
        reading = _series(fig, hours, step_seconds(ds), series) or reading
    fig.update_yaxes(title_text="P [MW]")
    _time_axis(fig, 2, reading, "hours since each run's start")
    return _style(fig)


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
    return _style(fig)


# Headline numbers of a run as the comparison shows them: key, label, unit, format. A fraction
# is shown as a percentage, and its unit says of what.
METRICS = (
    ("it_energy_mwh", "IT energy", "MWh", "{:,.0f}"),
    ("it_mean_mw", "IT power, mean", "MW", "{:.2f}"),
    ("it_peak_mw", "IT power, peak", "MW", "{:.2f}"),
    ("grid_mean_mw", "grid power, mean", "MW", "{:.2f}"),
    ("grid_peak_mw", "grid power, peak", "MW", "{:.2f}"),
    ("grid_swing_5s_mw", "largest 5-s swing at the grid", "MW", "{:.2f}"),
    ("grid_swing_5s_training_mw", "largest 5-s swing at the grid while training", "MW", "{:.2f}"),
    (
        "grid_ramp_1min_average_slope_up_mw",
        "1-min ramp up at the grid (average slope)",
        "MW/min",
        "{:.2f}",
    ),
    (
        "grid_ramp_1min_average_slope_down_mw",
        "1-min ramp down at the grid (average slope)",
        "MW/min",
        "{:.2f}",
    ),
    ("grid_load_factor", "load factor at the grid (mean ÷ peak)", "%", "{:.1%}"),
    ("pue", "PUE (facility ÷ IT energy)", "", "{:.3f}"),
    ("wue_l_per_kwh", "WUE (water ÷ IT energy)", "L/kWh", "{:.3f}"),
    ("unexpected_interruptions", "unexpected interruptions", "count", "{:d}"),
    ("effective_training_time", "effective training time", "% of the run", "{:.1%}"),
    ("throughput_lost_to_heat", "throughput lost to heat", "% of tokens", "{:.2%}"),
    ("tokens", "tokens trained", "tokens", "{:.4g}"),
    ("grid_energy_per_token_j", "grid energy per token", "J", "{:.2f}"),
)


def thermal_numbers(
    metrics: dict[str, Any], swing: float, trough_hour: int | None, timezone: str
) -> list[tuple[str, str, str]]:
    """The thermal view's numbers: what, its value, and what it measures.

    Parameters
    ----------
    metrics
        :func:`powermodel.metrics` of the run.
    swing, trough_hour
        :func:`powermodel.analysis.diurnal_swing`: peak-to-trough over the mean [1], and the
        local hour of the trough (None: the run never trains).
    timezone
        The site's time zone (``site_timezone``), the clock of ``trough_hour``.
    """
    return [
        (
            "PUE over the run",
            f"{metrics['pue']:.3f}",
            "facility energy ÷ IT energy over the whole run (ISO/IEC 30134-2); the excess over 1 "
            "is cooling, electrical losses and other loads",
        ),
        (
            "WUE",
            f"{metrics['wue_l_per_kwh']:.3f} L/kWh",
            "water the cooling plant consumes (evaporation, blowdown) per kWh of IT energy",
        ),
        (
            "chiller hours",
            f"{metrics['chiller_hours']:.0f} h",
            "hours with the chillers running; in the others the plant cools without them",
        ),
        (
            "throughput lost to heat",
            f"{metrics['throughput_lost_to_heat']:.2%}",
            "tokens lost over the whole run because the supply rose above its setpoint and hot "
            "GPUs clocked lower, against the plant holding its setpoint all the time; cool hours "
            "lose nothing, so it is far below the daily swing",
        ),
        (
            "daily throughput swing",
            f"{swing:.2%}, lowest at {trough_hour}:00 ({timezone})"
            if trough_hour is not None
            else "none: the run never trains",
            "tokens per second of running time by local hour of day (the bars): the best hour "
            "less the worst, over the daily mean; one hour against another, not a loss over "
            "the run",
        ),
    ]


def metric_rows(metrics: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """A table of :data:`METRICS` for runs side by side; with two runs, the second's change."""
    rows = []
    for key, label, unit, fmt in METRICS:
        values = [m.get(key) for m in metrics]
        if any(v is None for v in values):
            continue
        row = {"metric": f"{label} [{unit}]" if unit else label}
        # a figure the run cannot give (NaN) says why, not "nan"
        row |= {
            column: fmt.format(v) if np.isfinite(v) else m.get("not_measured", {}).get(key, "")
            for column, v, m in zip(names, values, metrics, strict=True)
        }
        if len(values) == 2:
            a, b = (float(v) for v in values)
            row["change"] = f"{(b / a - 1):+.2%}" if a and np.isfinite(a) and np.isfinite(b) else ""
        rows.append(row)
    return rows


def cost_rows(costs: dict[str, float]) -> list[dict[str, str]]:
    """:func:`powermodel.sizing.costs` as table rows: changes against the run without the
    mitigations, each value with its unit."""
    return [
        {"cost": sizing.COSTS[k][0], "value": sizing.COSTS[k][1].format(v)}
        for k, v in costs.items()
        if k in sizing.COSTS
    ]


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
    fig = _resampler(1)
    x = start + (times * 1e9).astype("timedelta64[ns]")
    _line(fig, x, measured, f"measured (as the {sensor} reported it)", 1, MEASURED_COLOR, 1.5)
    _line(
        fig,
        x,
        predicted,
        f"predicted (fresh run), through the same {sensor}",
        1,
        PREDICTED_COLOR,
        1.5,
    )
    _line(
        fig,
        x,
        replayed,
        f"replay (the trace's own timeline), through the same {sensor}",
        1,
        FITTED_COLOR,
        1.0,
    )
    fig.update_yaxes(title_text="P per GPU [W]")
    _time_axis(fig, 1)
    return _style(fig)


def empty_figure(message: str) -> go.Figure:
    """A view with nothing to draw yet: no axes, and what to do instead, in their place (in
    lines of at most 90 characters: an annotation does not wrap)."""
    hidden = {"visible": False}
    lines = textwrap.wrap(message, 90)
    return go.Figure(
        layout={
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
        }
    )


def duration_text(seconds: float) -> str:
    """A time span as a table shows it: in s below 2 min, in min below 2 h, else in h, to
    three digits; blank where there is none (NaN)."""
    if not np.isfinite(seconds):
        return ""
    if abs(seconds) < 120.0:
        return f"{seconds:.3g} s"
    if abs(seconds) < 7200.0:
        return f"{seconds / 60.0:.3g} min"
    return f"{seconds / 3600.0:.3g} h"


def times_text(times: pd.Series) -> np.ndarray:
    """Instants as a table shows them: to the millisecond, on one line."""
    return pd.to_datetime(times).dt.strftime("%Y-%m-%d %H:%M:%S.%f").str[:-3].to_numpy()


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


def records(table: pd.DataFrame, columns: Sequence[str]) -> list[dict[str, Any]]:
    """A table's ``columns`` as the rows a grid takes, every cell text."""
    return table[list(columns)].astype(str).to_dict("records")


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
