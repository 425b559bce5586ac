"""Figures and tables of the dashboard: pure functions of simulated Datasets.

Time series over a whole run are :class:`plotly_resampler.FigureResampler` figures: the browser
gets about :data:`SHOWN` points per trace, re-chosen on the server for each zoom (min-max LTTB),
so a 54-day 1-s run pans smoothly and a 30-s window shows every sample. The callbacks keep these
figures server-side and answer each zoom with :meth:`FigureResampler.construct_update_data_patch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import xarray as xr
from plotly.subplots import make_subplots
from plotly_resampler import FigureResampler

from powermodel import rules as rules_mod
from powermodel.analysis import SWING_WINDOW, diurnal_throughput, local_hours, step_seconds
from powermodel.models import signal
from powermodel.models.events import State

SHOWN = 2000  # points per trace sent to the browser at any zoom
TEMPLATE = "plotly_white"
COLORS = {
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


def _resampler(rows: int = 1, **kwargs: Any) -> FigureResampler:
    base = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=0.06, **kwargs)
    return FigureResampler(base, default_n_shown_samples=SHOWN, show_mean_aggregation_size=False)


def _style(fig: go.Figure) -> go.Figure:
    # No uirevision: a new figure (another scenario) arrives with its whole-run overview, so
    # keeping an old zoom would show that overview's few points as if they were the window's.
    fig.update_layout(
        template=TEMPLATE,
        margin={"l": 64, "r": 16, "t": 36, "b": 36},
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
) -> None:
    """A full-resolution line that plotly-resampler thins to the window shown."""
    line = {"width": 1, **({"color": color} if color else {})}
    fig.add_trace(go.Scattergl(name=name, mode="lines", line=line), hf_x=x, hf_y=y, row=row, col=1)


def event_marks(ds: xr.Dataset) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Times and hover labels of failures, planned maintenance, restarts and checkpoints.

    Failures and maintenance come from the event table; restarts are the starts of loading
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
    for name, code in (("restart", State.LOADING), ("checkpoint", State.CHECKPOINT)):
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
) -> None:
    """A row of markers at height ``y`` on the top row: events or violations, never thinned."""
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
            text=list(labels),
            name=f"{name} ({len(times)})",
            hovertemplate="%{x}<br>%{text}<extra></extra>",
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


def power_figure(ds: xr.Dataset) -> FigureResampler:
    """Facility, IT and grid power over the run, with failures, maintenance, restarts and
    checkpoints marked in rows above the traces."""
    fig = _resampler()
    times = ds["time"].values
    for name in ("facility_power", "it_power", "grid_power"):
        if name in ds:
            _line(fig, times, ds[name].values, ds[name].attrs["long_name"], color=COLORS[name])
    top = float(max(ds[n].max() for n in ("facility_power", "it_power", "grid_power") if n in ds))
    _marks(fig, ds, top)
    fig.update_yaxes(title_text="power [MW]", rangemode="tozero")
    return _style(fig)


THERMAL_ROWS = (
    (("temp_air", "temp_wetbulb", "supply_temp"), "°C"),
    (("gpu_temp",), "°C"),
    (("clock_factor",), "1"),
    (("pue",), "1"),
)


def thermal_figure(ds: xr.Dataset) -> FigureResampler:
    """Outdoor dry- and wet-bulb with the plant's supply; mean GPU die temperature; clock of the
    slowest GPU; PUE of each clock hour."""
    rows = [r for r in THERMAL_ROWS if all(v in ds for v in r[0])]
    fig = _resampler(len(rows))
    times = ds["time"].values
    for i, (names, unit) in enumerate(rows, start=1):
        for name in names:
            _line(
                fig, times, ds[name].values.astype(np.float64), ds[name].attrs["long_name"], row=i
            )
        title = "clock" if names == ("clock_factor",) else names[0].replace("_", " ").split(" ")[0]
        fig.update_yaxes(
            title_text=f"{'temperature' if unit == '°C' else title} [{unit}]", row=i, col=1
        )
    return _style(fig)


def diurnal_figure(ds: xr.Dataset) -> go.Figure:
    """Training throughput by local hour of day, relative to its daily mean, with the mean
    outdoor temperature of each hour."""
    profile = diurnal_throughput(ds)
    relative = 100.0 * (profile / np.nanmean(profile) - 1.0)
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
    fig.update_xaxes(title_text=f"hour of day ({ds.attrs.get('site_timezone', 'UTC')})", dtick=3)
    fig.update_yaxes(title_text="throughput [%]", secondary_y=False)
    fig.update_yaxes(title_text="dry-bulb [°C]", secondary_y=True, showgrid=False)
    return _style(fig)


def grid_figure(ds: xr.Dataset, results: Sequence[rules_mod.RuleResult] = ()) -> FigureResampler:
    """P and Q at the connection and the rolling 5-s peak-to-peak of P; on the P row, the job's
    events and each rule's violations, marked at their start."""
    fig = _resampler(3, row_heights=[0.5, 0.25, 0.25])
    times, dt = ds["time"].values, step_seconds(ds)
    p = ds["grid_power"].values
    _line(fig, times, p, "P at the connection [MW]", color=COLORS["grid_power"])
    _line(
        fig,
        times,
        ds["grid_reactive_power"].values,
        "Q at the connection [Mvar]",
        row=2,
        color=COLORS["grid_reactive_power"],
    )
    n = round(SWING_WINDOW / dt)
    if n >= 2:
        _line(
            fig,
            times,
            signal.rolling_range(p, n),
            f"max − min in {SWING_WINDOW:g} s, unfiltered [MW]",
            row=3,
            color="#6c3483",
        )
    top = float(p.max())
    used = _marks(fig, ds, top)  # the events, to see what each violation follows
    for i, result in enumerate(results, start=used):
        v, rule = result.violations, result.rule
        labels = [
            f"{rule.name}: {w:.3g} {rule.unit} ({c})"
            for w, c in zip(v["worst"], v["cause"], strict=True)
        ]
        _mark_row(fig, v["start"].values, labels, f"{rule.name} violations", _level(top, i))
    fig.update_yaxes(title_text="P [MW]", row=1, col=1)
    fig.update_yaxes(title_text="Q [Mvar]", row=2, col=1)
    fig.update_yaxes(title_text="5-s swing [MW]", row=3, col=1, rangemode="tozero")
    return _style(fig)


def ramp_figure(ds: xr.Dataset, bins: int = 60) -> go.Figure:
    """Distributions of the ramp at the connection: the 1-min net change, the change of the
    1-min average, and max − min within 5 s (REFERENCES §8 on why they differ)."""
    p, dt = ds["grid_power"].values, step_seconds(ds)
    readings = {}
    if 120.0 <= p.size * dt and dt <= 12.0:
        n = signal.samples(60.0, dt)
        readings["1-min net change"] = signal.net_change(p, n)[n:]
        readings["1-min average slope"] = signal.average_slope(p, n)[2 * n :]
    if round(SWING_WINDOW / dt) >= 2:
        readings["5-s max − min"] = signal.rolling_range(p, round(SWING_WINDOW / dt))
    fig = go.Figure()
    for name, values in readings.items():
        counts, edges = np.histogram(values, bins=bins)
        share = counts / max(values.size, 1)
        fig.add_trace(
            go.Bar(
                x=0.5 * (edges[1:] + edges[:-1]),
                y=share,
                width=np.diff(edges),
                name=name,
                opacity=0.6,
                hovertemplate="%{x:.2f} MW: %{y:.2e} of the time<extra></extra>",
            )
        )
    fig.update_layout(barmode="overlay")
    fig.update_xaxes(title_text="MW per window")
    fig.update_yaxes(title_text="share of time", type="log")
    return _style(fig)


def spectrum_figure(ds: xr.Dataset, rules: Sequence[rules_mod.Rule] = ()) -> go.Figure:
    """Power spectral density of P at the connection (Welch, hour-long segments) with each
    rule's band shaded and the frequencies the step cannot resolve greyed out."""
    p, dt = ds["grid_power"].values, step_seconds(ds)
    f, density = signal.spectrum(p, dt, min(SPECTRUM_SEGMENT, p.size * dt / 4))
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
    nyquist, resolved = signal.nyquist(dt), signal.resolved(dt)
    for rule in rules:
        if rule.band and rule.band[0] < nyquist:
            fig.add_vrect(
                x0=rule.band[0],
                x1=min(rule.band[1], nyquist),
                fillcolor="#f5b041",
                opacity=0.18,
                line_width=0,
                annotation_text=f"{rule.name} band",
                annotation_position="top left",
            )
    fig.add_vrect(
        x0=resolved,
        x1=nyquist,
        fillcolor="#7f8c8d",
        opacity=0.25,
        line_width=0,
        annotation_text=f"not resolved at {dt:g} s",
        annotation_position="bottom left",
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


def violation_rows(
    results: Sequence[rules_mod.RuleResult], limit: int = 2000
) -> list[dict[str, Any]]:
    """Every violation (the first ``limit`` by time): rule, start, end, worst, cause."""
    frames = [
        r.violations.assign(rule=r.rule.name, unit=r.rule.unit)
        for r in results
        if len(r.violations)
    ]
    if not frames:
        return []
    table = pd.concat(frames).sort_values("start").head(limit)
    return [
        {
            "rule": rule,
            "start": pd.Timestamp(s).strftime("%Y-%m-%d %H:%M:%S"),
            "end": pd.Timestamp(e).strftime("%Y-%m-%d %H:%M:%S"),
            "worst": f"{w:.3g} {u}",
            "cause": c,
        }
        for rule, s, e, w, u, c in zip(
            table["rule"],
            table["start"],
            table["end"],
            table["worst"],
            table["unit"],
            table["cause"],
            strict=True,
        )
    ]


def before_after_figure(before: xr.Dataset, after: xr.Dataset) -> FigureResampler:
    """Grid power without and with the mitigation, one above the other on one time axis."""
    fig = _resampler(2)
    times = before["time"].values
    for row, (ds, name) in enumerate(((before, "before"), (after, "after")), start=1):
        label = "without" if name == "before" else "with"
        _line(
            fig,
            times,
            ds["grid_power"].values,
            f"P {label} mitigation [MW]",
            row=row,
            color=COLORS[name],
        )
        fig.update_yaxes(title_text="P [MW]", row=row, col=1)
    low = float(min(before["grid_power"].min(), after["grid_power"].min()))
    high = float(max(before["grid_power"].max(), after["grid_power"].max()))
    pad = 0.05 * (high - low or 1.0)
    fig.update_yaxes(range=[low - pad, high + pad])
    return _style(fig)


def compare_figure(a: xr.Dataset, b: xr.Dataset, names: tuple[str, str]) -> FigureResampler:
    """Grid power of two runs against hours since each run's start, one above the other."""
    fig = _resampler(2)
    for row, (ds, color) in enumerate(
        ((a, COLORS["grid_power"]), (b, COLORS["facility_power"])), start=1
    ):
        hours = (ds["time"].values - ds["time"].values[0]) / np.timedelta64(3600, "s")
        _line(fig, hours, ds["grid_power"].values, f"{names[row - 1]} [MW]", row=row, color=color)
        fig.update_yaxes(title_text="P [MW]", row=row, col=1)
    fig.update_xaxes(title_text="hours since the start", row=2, col=1)
    return _style(fig)


# Headline numbers of a run, as the summary line and the comparison show them.
METRICS = (
    ("energy_mwh", "IT energy", "MWh", "{:,.0f}"),
    ("mean_mw", "IT power, mean", "MW", "{:.2f}"),
    ("peak_mw", "IT power, peak", "MW", "{:.2f}"),
    ("grid_peak_mw", "grid power, peak", "MW", "{:.2f}"),
    ("grid_swing_5s_mw", "largest 5-s swing at the grid", "MW", "{:.2f}"),
    ("ramp_1min_average_slope_up_mw", "1-min ramp up (average slope)", "MW", "{:.2f}"),
    ("ramp_1min_average_slope_down_mw", "1-min ramp down (average slope)", "MW", "{:.2f}"),
    ("load_factor", "load factor", "", "{:.3f}"),
    ("pue", "PUE", "", "{:.3f}"),
    ("wue_l_per_kwh", "WUE", "L/kWh", "{:.3f}"),
    ("unexpected_interruptions", "unexpected interruptions", "", "{:d}"),
    ("effective_training_time", "effective training time", "", "{:.1%}"),
    ("throughput_lost_to_heat", "throughput lost to heat", "", "{:.2%}"),
    ("tokens", "tokens trained", "", "{:.4g}"),
    ("energy_per_token_j", "energy per token", "J", "{:.2f}"),
)


def metric_rows(metrics: Sequence[dict[str, Any]], names: Sequence[str]) -> list[dict[str, Any]]:
    """A table of :data:`METRICS` for runs side by side; with two runs, the second's change."""
    rows = []
    for key, label, unit, fmt in METRICS:
        values = [m.get(key) for m in metrics]
        if any(v is None for v in values):
            continue
        row = {"metric": f"{label} [{unit}]" if unit else label}
        row |= {column: fmt.format(v) for column, v in zip(names, values, strict=True)}
        if len(values) == 2:
            a, b = (float(v) for v in values)
            row["change"] = f"{(b / a - 1):+.2%}" if a and np.isfinite(a) and np.isfinite(b) else ""
        rows.append(row)
    return rows


def cost_rows(costs: dict[str, float]) -> list[dict[str, str]]:
    """:func:`powermodel.sizing.costs` as table rows."""
    labels = {
        "energy_cost": ("grid energy", "{:+.2%}"),
        "energy_mwh_per_day": ("grid energy per day", "{:+.2f} MWh"),
        "throughput_cost": ("tokens lost", "{:.2%}"),
        "storage_cycles_per_day": ("battery cycles per day", "{:.2f}"),
        "cost_per_year": ("cost per year", "${:,.0f}"),
    }
    return [
        {"cost": labels[k][0], "value": labels[k][1].format(v)}
        for k, v in costs.items()
        if k in labels
    ]
