"""The run's figures: power, thermal, grid (with the rules), ramps, spectrum, before/after, compare.

Pure functions of simulated Datasets, drawn with ``plotting``'s pieces; the tables beside them
are ``tables``', the campus and grid-events figures ``site_figures``', the fit's and the sweep's
``upload_figures``'. Time series over a whole run are :class:`plotly_resampler.FigureResampler`
figures: the browser gets about :data:`~powermodel.webapp.plotting.SHOWN` points per trace,
re-chosen on the server for each zoom (min-max LTTB), so a 54-day 1-s run pans smoothly and a
30-s window shows every sample. The callbacks keep these figures server-side and answer each
zoom with :meth:`FigureResampler.construct_update_data_patch`.

A power trace is drawn twice: thin and light at full resolution, which zoomed out is the min–max
band of the samples behind each point (the 6-s iteration swing fills it), and bold as its
:data:`~powermodel.webapp.plotting.MEAN_WINDOW` block means, the line the eye follows. Time axes
are UTC, as ``time`` is.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import xarray as xr
from plotly.subplots import make_subplots
from plotly_resampler import FigureResampler

from powermodel import analysis
from powermodel import rules as rules_mod
from powermodel.analysis import (
    SWING_WINDOW,
    diurnal_throughput,
    local_hours,
    step_seconds,
    swing_resolved,
)
from powermodel.errors import PowerModelError
from powermodel.simulate import SENSORS, sensor_view
from powermodel.webapp.plotting import (
    COLORS,
    LIGHT,
    MEAN_WINDOW,
    SENSOR_COLOR,
    SWING_COLOR,
    add_line,
    add_mark_row,
    add_marks,
    add_series,
    block_maxima,
    mark_level,
    resampler,
    styled,
    time_axis,
)
from powermodel.webapp.tables import violation_events

SPECTRUM_SEGMENT = 3600.0  # s: Welch segments of an hour resolve down to 0.3 mHz
EXACT = "exact"  # the sensor choice that overlays nothing: the interval means themselves
BANDS = ("#f5b041", "#5dade2", "#af7ac5", "#58d68d", "#ec7063")  # rules' bands on the spectrum
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
    fig = resampler()
    lines = power_lines(ds)
    watched = SENSORS[sensor].variable if sensor in SENSORS else None
    drawn = {n for n, _ in lines} | ({"grid_power"} if lines[0][1] == FACILITY_IS_GRID else set())
    if watched is not None and watched not in drawn:
        lines.append((watched, ds[watched].attrs["long_name"]))
    reading = add_series(
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
            add_line(fig, ds["time"].values, view.values, view.attrs["long_name"], 1, SENSOR_COLOR)
    add_marks(fig, ds, float(max(ds[n].max() for n, _ in lines)))
    fig.update_yaxes(title_text="power [MW]", rangemode="tozero")
    time_axis(fig, 1, reading)
    return styled(fig)


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
    fig = resampler(len(rows))
    times = ds["time"].values
    for i, (names, title) in enumerate(rows, start=1):
        for name in names:
            clock = name == "clock_factor"
            add_line(
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
    time_axis(fig, len(rows))
    return styled(fig)


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
    return styled(fig)


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
    events: pd.DataFrame | None = None,
) -> FigureResampler:
    """P and Q at the connection and the rolling 5-s peak-to-peak of P (``swing``, computed
    here when not given); on the P row, the job's events and each rule's violations grouped
    into events (:func:`violation_events`: ``events``, those of every rule's violations,
    grouped here when not given), marked at their start."""
    fig = resampler(3, row_heights=[0.5, 0.25, 0.25])
    times, dt = ds["time"].values, step_seconds(ds)
    p, q = ds["grid_power"].values, ds["grid_reactive_power"].values
    reading = add_series(
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
        add_line(fig, times, swing, f"{name} [MW]", 3, SWING_COLOR, opacity=LIGHT, legendgroup=name)
        # what matters of the swing is its top: the largest in each minute, bold
        centres, largest = block_maxima(times, swing, minute)
        add_line(fig, centres, largest, f"{name}, largest a minute [MW]", 3, SWING_COLOR, 2.5,
              legendgroup=name)  # fmt: skip
    top = float(p.max())
    used = add_marks(fig, ds, top)  # the events, to see what each violation follows
    for i, result in enumerate(results, start=used):
        # one marker an event, as the table lists them (a week marked 12,936 violations)
        rule = result.rule
        if events is None:
            v = violation_events(result.violations.assign(rule=rule.name, unit=rule.unit))
        else:  # the events of one rule are grouped as that rule's alone
            v = events[events["rule"].to_numpy() == rule.name]
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
        add_mark_row(fig, v["start"].values, labels, name, mark_level(top, i), counted=counted)
    fig.update_yaxes(title_text="P [MW]", row=1, col=1)
    # the sign rides in the legend: an axis title longer than its panel runs into the next
    fig.update_yaxes(title_text="Q [Mvar]", row=2, col=1)
    fig.update_yaxes(title_text="5-s swing [MW]", row=3, col=1, rangemode="tozero")
    time_axis(fig, 3, reading)
    return styled(fig)


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
    return styled(fig)


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
    return styled(fig)


def before_after_figure(before: xr.Dataset, after: xr.Dataset) -> FigureResampler:
    """Grid power without and with the mitigation, one above the other on one time axis."""
    fig = resampler(2)
    runs = ((before, "before", "without"), (after, "after", "with"))
    reading = add_series(
        fig,
        before["time"].values,
        step_seconds(before),
        [
            (ds["grid_power"].values, f"P {label} mitigation", COLORS[name], row)
            for row, (ds, name, label) in enumerate(runs, start=1)
        ],
    )
    fig.update_yaxes(title_text="P [MW]")
    time_axis(fig, 2, reading)
    low = float(min(before["grid_power"].min(), after["grid_power"].min()))
    high = float(max(before["grid_power"].max(), after["grid_power"].max()))
    pad = 0.05 * (high - low or 1.0)
    fig.update_yaxes(range=[low - pad, high + pad])
    return styled(fig)


def compare_figure(a: xr.Dataset, b: xr.Dataset, names: tuple[str, str]) -> FigureResampler:
    """Grid power of two runs against hours since each run's start, one above the other."""
    fig, reading = resampler(2), ""
    for row, (ds, color) in enumerate(
        ((a, COLORS["grid_power"]), (b, COLORS["facility_power"])), start=1
    ):
        hours = (ds["time"].values - ds["time"].values[0]) / np.timedelta64(3600, "s")
        series = [(ds["grid_power"].values, names[row - 1], color, row)]
        reading = add_series(fig, hours, step_seconds(ds), series) or reading
    fig.update_yaxes(title_text="P [MW]")
    time_axis(fig, 2, reading, "hours since each run's start")
    return styled(fig)
