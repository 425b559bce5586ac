"""The figures of the model pages (``docs/model/*.md``), computed from the model at each build.

Every curve comes from powermodel itself: the reference scenario (``llama3-405b-16k-h100``), its
``simulate`` output, or the ``powermodel.models`` functions the pages state as equations, never
from numbers typed in here. :func:`main` writes each figure as a plotly HTML fragment,
``model-<page>-<what>.html``, that the page embeds with ``{raw} html`` and ``:file:``.

The captions under the figures quote numbers read off these figures; :func:`main` checks each
quoted number (``_check``), so a change of the model that moves one fails the build until the
caption is updated. Run ``python docs/_ext/model_figures.py [folder]`` to print them.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np
import plotly.graph_objects as go
import xarray as xr

from powermodel import load_scenario, simulate
from powermodel.analysis import resample
from powermodel.calibration import CALIBRATION_YEAR
from powermodel.engine.facility import design_it_power
from powermodel.models import electrical, render, signal, thermal, workload
from powermodel.models.events import State
from powermodel.rules import load_rules, measure
from powermodel.scenario import Scenario, catalogue

PRESET = "llama3-405b-16k-h100"
DAY = {"simulation.duration": "1d"}  # the reference's first day, at its 1-s step
WAVEFORM_DT = 0.01  # s: the iteration at 10 ms resolves its 0.16 s edges
CAP = 600.0  # W: a power cap on the H100 (700 W TDP), for the workload and thermal figures
LOCK = 0.9  # a clock locked at 90 % of nominal
# The shipped plants, each on the electrical chain tests/test_facility.py pairs it with
PLANTS = {
    "meta-outside-air-evaporative": "standby",
    "liquid-dry-cooler": "double-conversion",
    "liquid-tower": "double-conversion",
    "modern-chilled-water": "double-conversion",
    "enterprise-chilled-water": "double-conversion",
}
HIGH_PASS = 0.1  # Hz: the low edge of ERCOT's 0.1-55 Hz band (rule ercot-5s)
FILTER_DT = 0.01  # s: short against the high-pass's 1.6 s time constant
STATE_COLOURS = {
    State.CHECKPOINT: "#1f77b4",
    State.STALLED: "#d62728",
    State.FAILED_IDLE: "#7f7f7f",
    State.MAINTENANCE: "#7f7f7f",
    State.STARTING: "#17becf",
    State.LOADING: "#2ca02c",
    State.RAMP: "#ff7f0e",
}

# States named over the shading (ramp follows loading within 3 s: one label; checkpoints: one)
STATE_LABELS = {
    State.STALLED: "stalled",
    State.FAILED_IDLE: "failed_idle",
    State.MAINTENANCE: "maintenance",
    State.STARTING: "starting",
    State.LOADING: "loading, ramp",
}


def main(out: pathlib.Path) -> list[str]:
    """Compute every model-page figure, check the numbers the captions quote, write the
    fragments into ``out``; returns the file names written."""
    figures, numbers = build()
    _check(numbers)
    out.mkdir(parents=True, exist_ok=True)
    names = []
    for what, fig in figures.items():
        name = f"model-{what}.html"
        html = fig.to_html(full_html=False, include_plotlyjs=False)
        (out / name).write_text(html, encoding="utf-8")
        names.append(name)
    for stale in out.glob("model-*.html"):  # a renamed figure's old fragment
        if stale.name not in names:
            stale.unlink()
    return names


def build() -> tuple[dict[str, go.Figure], dict[str, float]]:
    """The figures by ``<page>-<what>``, and the numbers their captions quote."""
    reference = load_scenario(PRESET)
    day = simulate(load_scenario(reference, DAY))
    numbers: dict[str, float] = {}
    figures = {
        "workload-iteration": _iteration(reference, numbers),
        "timeline-day": _day(day, numbers),
        "timeline-failure": _failure(day, numbers),
        "thermal-clock": _clock(reference, numbers),
        "cooling-pue": _pue(reference, numbers),
        "electrical-converters": _converters(reference, day, numbers),
        "grid-high-pass": _high_pass(numbers),
        "grid-ercot-crash": _crash(day, numbers),
    }
    return figures, numbers


def _check(n: dict[str, float]) -> None:
    """The numbers the model pages' captions quote, within the precision they are quoted to."""

    wrong = []

    def near(key: str, value: float, tol: float) -> None:
        if not abs(n[key] - value) <= tol:
            wrong.append(f"{key} = {n[key]:.4g}, the caption says {value:g}")

    # workload: 700 W compute, 490 W communication, 0.16 s edges, a 6.13 s step; a 600 W cap
    # clips the peaks only; a 90 % clock lowers both and stretches the step
    near("compute_w", 700.0, 0.5)
    near("trough_w", 490.0, 0.5)
    near("edge_s", 0.16, 0.005)
    near("step_s", 6.13, 0.005)
    near("capped_peak_w", 600.0, 0.5)
    near("locked_peak_w", 535.0, 1.0)
    near("locked_trough_w", 450.0, 1.0)
    near("locked_step_s", 6.59, 0.005)
    near("lock_leakage_w", 92.0, 0.5)
    # timeline: the first day's interruptions and levels
    near("day_unexpected", 9, 0)
    near("day_planned", 2, 0)
    near("day_checkpoint_mw", 9.5, 0.1)
    near("day_swing_mw", 3.5, 0.05)
    near("day_top_low_mw", 16.8, 0.05)
    near("day_top_high_mw", 18.8, 0.05)
    near("failure_stalled_mw", 9.6, 0.1)
    near("failure_idle_mw", 5.8, 0.1)
    near("failure_starting_mw", 8.8, 0.1)
    near("failure_lost_s", 66.0, 1.0)
    # thermal: the clock of the slowest GPU against the inlet
    near("hottest_above_mean_k", 11.9, 0.05)
    near("board_w", 632.0, 0.5)
    near("clock_28_5", 0.981, 0.001)
    near("throughput_28_5", 0.987, 0.001)
    near("clock_35", 0.945, 0.001)
    near("throughput_35", 0.962, 0.001)
    near("capped_clock_24", 0.951, 0.001)
    # cooling: annual PUE at Sterling by plant
    near("pue_meta-outside-air-evaporative", 1.080, 0.001)
    near("pue_liquid-dry-cooler", 1.133, 0.001)
    near("pue_liquid-tower", 1.126, 0.001)
    near("pue_modern-chilled-water", 1.204, 0.001)
    near("pue_enterprise-chilled-water", 1.549, 0.001)
    for plant, low, high in (
        ("meta-outside-air-evaporative", 1.077, 1.100),
        ("liquid-dry-cooler", 1.118, 1.281),
        ("liquid-tower", 1.126, 1.128),
        ("modern-chilled-water", 1.144, 1.287),
        ("enterprise-chilled-water", 1.535, 1.594),
    ):
        near(f"pue_low_{plant}", low, 0.001)
        near(f"pue_high_{plant}", high, 0.001)
    # electrical: where the reference runs on the converter curves
    near("psu_load_low", 0.33, 0.005)
    near("psu_load_high", 0.41, 0.005)
    near("psu_efficiency_mean", 0.979, 0.001)
    near("psu_efficiency_2pc", 0.81, 0.005)
    near("ups_load_mean", 0.59, 0.005)
    near("ups_efficiency_standby", 0.99, 0.0005)
    near("ups_efficiency_double-conversion", 0.958, 0.0005)
    # grid: the closed forms through a 0.1 Hz high-pass, and the ERCOT 5-s range of a crash
    near("high_pass_step", 1.0, 0.001)
    near("high_pass_ramp_2s", 0.57, 0.005)
    near("high_pass_ramp_60s", 0.027, 0.001)
    near("iteration_range_mw", 5.9, 0.1)
    near("checkpoint_range_mw", 13.8, 0.1)
    near("crash_range_mw", 9.2, 0.1)
    near("checkpoint_before_failure_s", 69.0, 1.0)
    if wrong:
        raise AssertionError("update the model pages' captions: " + "; ".join(wrong))


# --- workload ---------------------------------------------------------------------------------


def _waveform(scenario: Scenario, window: np.ndarray) -> tuple[np.ndarray, float]:
    """Per-GPU board power [W] over the intervals of ``window`` [s], phase 0 at 0 s, and the
    step time [s]: the page's equations by the model's functions, before aggregation."""
    wl, gpu, cl = scenario.workload, scenario.gpu, scenario.cluster
    step = workload.derived_step_time(
        wl.model_params, wl.tokens_per_step, cl.n_gpus, gpu.peak_flops, wl.mfu
    ) * float(
        thermal.step_time_factor(scenario.mitigation.clock_lock or 1.0, scenario.compute_share)
    )
    shares, watts = scenario.phase_powers(capped=False, locked=True)
    per_gpu = workload.iteration_waveform(shares, watts, step, wl.edge_rate * gpu.tdp)
    if scenario.mitigation.power_cap is not None:  # P ← min(P, P_cap), per GPU
        per_gpu = np.minimum(per_gpu, scenario.mitigation.power_cap)
    cells = workload.aggregate(per_gpu, workload.offset_kernel(step, wl.offset_spread, wl.jitter))
    cumulative = render.cumulative_tables(cells[None, None, :])
    start = np.array([step * np.floor(window[0] / step)])  # phase 0 at 0 s and a step before
    means = render.interval_means(start, np.array([0]), np.array([1.0 / step]), cumulative, window)
    return means[0], step


def _iteration(reference: Scenario, n: dict) -> go.Figure:
    window = np.arange(-0.5, 12.5 + WAVEFORM_DT / 2, WAVEFORM_DT)
    runs = {
        "reference": reference,
        f"power cap {CAP:g} W": load_scenario(reference, {"mitigation.power_cap": CAP}),
        f"clock locked at {LOCK:.0%}": load_scenario(reference, {"mitigation.clock_lock": LOCK}),
    }
    x = window[:-1].astype(np.float32)  # each interval's start
    fig = go.Figure()
    for label, scenario in runs.items():
        power, step = _waveform(scenario, window)
        fig.add_trace(go.Scatter(x=x, y=power.astype(np.float32), name=label, mode="lines"))
        if label == "reference":
            n["compute_w"], n["trough_w"], n["step_s"] = power.max(), power.min(), step
            gpu = scenario.gpu
            n["edge_s"] = (power.max() - power.min()) / (scenario.workload.edge_rate * gpu.tdp)
            n["lock_leakage_w"] = scenario.gpu.leakage(scenario.nominal_die())
        elif "cap" in label:
            n["capped_peak_w"] = power.max()
        else:
            n["locked_peak_w"], n["locked_trough_w"], n["locked_step_s"] = (
                power.max(),
                power.min(),
                step,
            )
    fig.update_layout(
        title="Per-GPU power through two steps of the reference (10-ms means)",
        xaxis_title="time from the start of a compute phase [s]",
        yaxis_title="GPU board power [W]",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


# --- timeline ---------------------------------------------------------------------------------


def _day(day: xr.Dataset, n: dict) -> go.Figure:
    """The reference's first day: 1-min min and max of the 1-s IT power, interruptions marked."""
    minutes = resample(day, "1min")
    start = day["time"].values[0]
    t = _hours(minutes["time"].values, start)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=t,
            y=minutes["it_power_max"].values.astype(np.float32),
            line_width=0.5,
            name="max of each minute",
            line_color="#1f77b4",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=t,
            y=minutes["it_power_min"].values.astype(np.float32),
            line_width=0.5,
            fill="tonexty",
            name="min of each minute",
            line_color="#1f77b4",
        )
    )
    kinds = day["event_kind"].values
    unexpected = kinds == "unexpected"
    events = _hours(day["event_time"].values, start)
    for when, surprise in zip(events, unexpected, strict=True):
        colour = "#d62728" if surprise else "#7f7f7f"
        fig.add_vline(x=when, line_dash="dot", line_color=colour, line_width=1)
    fig.add_trace(
        go.Scatter(
            x=events,
            y=np.full(unexpected.size, float(minutes["it_power_max"].max()) + 1.0),
            mode="markers",
            marker={"color": np.where(unexpected, "#d62728", "#7f7f7f"), "symbol": "triangle-down"},
            text=[f"{k}: {c}" for k, c in zip(kinds, day["event_cause"].values, strict=True)],
            hoverinfo="text",
            name="interruption (red unexpected, grey planned)",
        )
    )
    fig.update_layout(
        title="The reference's first day: IT power, 1-s values as each minute's range",
        xaxis_title="hours from midnight UTC, 1 July",
        yaxis_title="IT power [MW]",
        legend={"orientation": "h", "y": -0.2},
    )
    checkpoint = day["it_power"].values[day["job_state"].values == State.CHECKPOINT]
    n["day_unexpected"], n["day_planned"] = int(unexpected.sum()), int((~unexpected).sum())
    n["day_checkpoint_mw"] = float(np.median(checkpoint))
    whole = minutes["share_running"].values == 1.0  # minutes of training only
    swing = minutes["it_power_max"].values - minutes["it_power_min"].values
    n["day_swing_mw"] = float(np.median(swing[whole]))
    top = minutes["it_power_max"].values[whole]
    n["day_top_low_mw"], n["day_top_high_mw"] = top.min(), top.max()
    return fig


def _hours(times: np.ndarray, start: np.datetime64) -> np.ndarray:
    """Hours since ``start``, float32: a day of minutes in a few kB of the fragment."""
    return ((times - start) / np.timedelta64(1, "h")).astype(np.float32)


def _failure(day: xr.Dataset, n: dict) -> go.Figure:
    """Eighteen minutes at 1 s around the day's first failure, each job state shaded."""
    dt = float(day.attrs["dt"])
    seconds = (day["time"].values - day["time"].values[0]) / np.timedelta64(1, "s")
    first = int(np.argmax(day["event_kind"].values == "unexpected"))
    at = (day["event_time"].values[first] - day["time"].values[0]) / np.timedelta64(1, "s")
    span = (seconds >= at - 240.0) & (seconds < at + 840.0)
    x = (seconds[span] - at) / 60.0
    state = day["job_state"].values[span]
    it = day["it_power"].values[span]
    fig = go.Figure(go.Scatter(x=x, y=it.astype(np.float32), name="IT power", mode="lines"))
    change = np.flatnonzero(np.diff(state) != 0) + 1
    starts, ends = np.r_[0, change], np.r_[change, state.size]
    labelled = set()
    for a, b in zip(starts, ends, strict=True):
        s = State(int(state[a]))
        if s == State.RUNNING:
            continue
        fig.add_vrect(
            x0=x[a], x1=x[b - 1] + dt / 60.0, fillcolor=STATE_COLOURS[s], opacity=0.25, line_width=0
        )
        if s not in labelled and s in STATE_LABELS:
            labelled.add(s)
            fig.add_annotation(
                x=x[a],
                y=1.0,
                yref="paper",
                text=STATE_LABELS[s],
                showarrow=False,
                xanchor="left",
                yanchor="bottom",
                textangle=-30,
            )
    fig.add_annotation(
        x=x[state == State.CHECKPOINT][0],
        y=1.0,
        yref="paper",
        text="checkpoints",
        showarrow=False,
        xanchor="left",
        yanchor="bottom",
        textangle=-30,
    )
    fig.update_layout(
        title=f"The first failure ({day['event_cause'].values[first]}), at 1 s",
        xaxis_title="minutes from the failure",
        yaxis_title="IT power [MW]",
        margin={"t": 90},
    )
    n["failure_stalled_mw"] = float(np.median(it[state == State.STALLED]))
    n["failure_idle_mw"] = float(np.median(it[state == State.FAILED_IDLE]))
    n["failure_starting_mw"] = float(np.median(it[state == State.STARTING]))
    n["failure_lost_s"] = float(day["event_lost_work"].values[first])
    return fig


# --- thermal ----------------------------------------------------------------------------------


def _clock(reference: Scenario, n: dict) -> go.Figure:
    """Clock of the slowest GPU at its cap against the inlet, relative to the nominal inlet."""
    gpu, cl = reference.gpu, reference.cluster
    inlet = np.arange(10.0, 40.001, 0.25)
    hotter = thermal.slowest_of(cl.temp_spread, cl.n_gpus)  # the hottest GPU over the mean

    def clock(die: np.ndarray, cap: float) -> np.ndarray:
        return thermal.clock_factor(
            die + hotter, cap, gpu.leakage_ref, gpu.temp_ref, gpu.leakage_coefficient, gpu.tdp
        )

    nominal = clock(reference.nominal_die(), gpu.tdp)
    shares, watts = reference.phase_powers()
    fig = go.Figure()
    curves = {}
    for cap in (gpu.tdp, CAP):
        board = float(shares @ np.minimum(watts, cap))  # the mean board power while running
        die = thermal.steady_gpu_temperature(inlet, board, gpu.thermal_resistance)
        curves[cap] = clock(die, cap) / nominal
        label = f"at the {cap:g} W TDP" if cap == gpu.tdp else f"under a {cap:g} W cap"
        fig.add_trace(go.Scatter(x=inlet, y=curves[cap], name=label, mode="lines"))
    held = reference.cooling.supply_setpoint + reference.cooling.inlet_offset
    fig.add_vrect(
        x0=held,
        x1=reference.cooling.supply_max + reference.cooling.inlet_offset,
        fillcolor="grey",
        opacity=0.15,
        line_width=0,
    )
    fig.update_layout(
        title="Clock of the slowest of 16,384 H100s at its power cap",
        xaxis_title="GPU inlet temperature [°C]",
        yaxis_title="clock, relative to a 24 °C inlet at TDP [1]",
        legend={"orientation": "h", "y": -0.2},
    )

    def at(curve: np.ndarray, temp: float) -> float:
        return float(np.interp(temp, inlet, curve))

    share = reference.compute_share
    n["hottest_above_mean_k"] = hotter
    n["board_w"] = float(shares @ watts)
    for temp, key in ((28.5, "28_5"), (35.0, "35")):
        n[f"clock_{key}"] = at(curves[gpu.tdp], temp)
        n[f"throughput_{key}"] = 1.0 / float(thermal.step_time_factor(n[f"clock_{key}"], share))
    n["capped_clock_24"] = at(curves[CAP], 24.0)
    return fig


# --- cooling ----------------------------------------------------------------------------------


def _pue(reference: Scenario, n: dict) -> go.Figure:
    """Hourly PUE of a year of the reference at Sterling on each shipped plant, by the hour's
    outdoor dry-bulb (means over 2-K bins holding at least 10 hours)."""
    fig = go.Figure()
    for plant, chain in PLANTS.items():
        year = simulate(
            load_scenario(
                reference,
                {**CALIBRATION_YEAR, "cooling.plant": plant, "electrical.chain": chain},
            )
        )
        per_hour = int(round(3600.0 / float(year.attrs["dt"])))
        pue = year["pue"].values[::per_hour]  # held over each clock hour
        temp = year["temp_air"].values.reshape(-1, per_hour).mean(axis=1)
        bins = np.floor(temp / 2.0).astype(int)
        edges = np.unique(bins)
        hours = np.array([np.count_nonzero(bins == b) for b in edges])
        means = np.array([pue[bins == b].mean() for b in edges])
        keep = hours >= 10
        fig.add_trace(
            go.Scatter(x=2.0 * edges[keep] + 1.0, y=means[keep], name=plant, mode="lines+markers")
        )
        n[f"pue_low_{plant}"], n[f"pue_high_{plant}"] = means[keep].min(), means[keep].max()
        facility = float(year["facility_power"].sum())
        n[f"pue_{plant}"] = facility / float(year["it_power"].sum())
    fig.update_layout(
        title="PUE against the outdoor dry-bulb: a year of the reference at Sterling",
        xaxis_title="outdoor dry-bulb, the hour's mean (2-K bins) [°C]",
        yaxis_title="hourly PUE, mean of the bin [1]",
        legend={"orientation": "h", "y": -0.25},
    )
    return fig


# --- electrical -------------------------------------------------------------------------------


def _converters(reference: Scenario, day: xr.Dataset, n: dict) -> go.Figure:
    """Efficiency against load of the server supplies and of the shipped chains' UPS."""
    psu, cl = reference.cluster.psu, reference.cluster
    load = np.linspace(0.02, 1.0, 99)
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=100 * load,
            y=100 * load * psu.capacity / psu.input_power(load * psu.capacity),
            name="server supplies (Titanium shape, MLPerf losses)",
            mode="lines",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=100 * np.array(psu.load),
            y=100 * np.array(psu.efficiency),
            mode="markers",
            name="curve points",
            marker={"size": 9, "color": "black"},
        )
    )
    for chain, e in catalogue("electrical").items():
        at = load[load >= 0.05]  # below, the double-conversion curve falls off the axis
        ups = at / electrical.input_power(at, 1.0, np.array(e["ups_load"]), e["ups_efficiency"])
        fig.add_trace(go.Scatter(x=100 * at, y=100 * ups, name=f"UPS, {chain}", mode="lines"))
    shares, watts = reference.phase_powers()
    node = cl.gpus_per_node * watts + cl.rest_power_active  # W DC, each phase
    fig.add_vrect(
        x0=100 * node.min() / psu.capacity,
        x1=100 * node.max() / psu.capacity,
        fillcolor="grey",
        opacity=0.2,
        line_width=0,
    )
    fig.update_layout(
        title="Converter efficiency against load: one curve through the published points",
        xaxis_title="load, output over installed capacity [%]",
        yaxis_title="efficiency, output over input [%]",
        yaxis_range=[60, 100],
        legend={"orientation": "h", "y": -0.2},
    )
    mean_dc = float(cl.gpus_per_node * shares @ watts + cl.rest_power_active)
    n["psu_load_low"], n["psu_load_high"] = node.min() / psu.capacity, node.max() / psu.capacity
    n["psu_efficiency_mean"] = mean_dc / float(psu.input_power(mean_dc))
    n["psu_efficiency_2pc"] = 0.02 * psu.capacity / float(psu.input_power(0.02 * psu.capacity))
    capacity = reference.electrical.design_margin * design_it_power(reference) / 1e6
    n["ups_load_mean"] = float(day["it_power"].mean()) / capacity
    for chain, e in catalogue("electrical").items():
        curve = (np.array(e["ups_load"]), np.array(e["ups_efficiency"]))
        n[f"ups_efficiency_{chain}"] = n["ups_load_mean"] / float(
            electrical.input_power(n["ups_load_mean"], 1.0, *curve)
        )
    return fig


# --- grid -------------------------------------------------------------------------------------


def _high_pass(n: dict) -> go.Figure:
    """A 1 MW step, a 2-s ramp and a 60-s ramp through the 0.1 Hz first-order high-pass."""
    t = np.arange(0.0, 90.0, FILTER_DT)
    fig = go.Figure()
    for label, ramp in (("step", 0.0), ("2-s ramp", 2.0), ("60-s ramp", 60.0)):
        middle = t + FILTER_DT / 2.0 - 10.0  # each interval's mean of the ramp
        x = (middle >= 0).astype(float) if ramp == 0.0 else np.clip(middle / ramp, 0.0, 1.0)
        y = signal.high_pass(x, FILTER_DT, HIGH_PASS)
        every = int(round(0.1 / FILTER_DT))  # drawn at 0.1 s
        fig.add_trace(
            go.Scatter(
                x=t[::every], y=(100 * y[::every]).astype(np.float32), name=label, mode="lines"
            )
        )
        n["high_pass_" + ("step" if ramp == 0.0 else f"ramp_{ramp:g}s")] = float(y.max())
    fig.update_layout(
        title=f"A 100 % change of load through a {HIGH_PASS:g} Hz first-order high-pass",
        xaxis_title="time [s] (the change starts at 10 s)",
        yaxis_title="high-passed signal, % of the change",
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def _crash(day: xr.Dataset, n: dict) -> go.Figure:
    """Grid power and the ``ercot-5s`` measurement around the day's first failure and the
    checkpoint before it."""
    rule = load_rules("ercot-5s")[0]
    dt = float(day.attrs["dt"])
    grid_power = day["grid_power"].values
    reading = measure(grid_power, rule, dt)
    seconds = (day["time"].values - day["time"].values[0]) / np.timedelta64(1, "s")
    state = day["job_state"].values
    first = int(np.argmax(day["event_kind"].values == "unexpected"))
    at = (day["event_time"].values[first] - day["time"].values[0]) / np.timedelta64(1, "s")
    checkpoint = seconds[(state == State.CHECKPOINT) & (seconds < at)]
    stall = checkpoint[checkpoint > checkpoint.max() - 60.0].min()  # the last one's start
    span = (seconds >= stall - 25.0) & (seconds < at + 35.0)
    x = seconds[span] - at
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=grid_power[span], name="grid power (1-s means)"))
    fig.add_trace(
        go.Scatter(x=x, y=reading[span], name="5-s range of the 0.1 Hz high-passed power")
    )
    fig.add_hline(y=rule.limit, line_dash="dash", line_color="#d62728")
    for where, text in ((stall - at, "checkpoint"), (0.0, "failure")):
        fig.add_annotation(x=where, y=1.0, yref="paper", text=text, showarrow=False)
    fig.update_layout(
        title=f"A checkpoint and a crash, measured by ERCOT's proposal ({rule.limit:g} MW limit)",
        xaxis_title="seconds from the failure",
        yaxis_title="[MW]",
        legend={"orientation": "h", "y": -0.2},
    )

    def peak(lo: float, hi: float) -> float:
        return float(reading[(seconds >= lo) & (seconds < hi)].max())

    n["iteration_range_mw"] = peak(stall - 60.0, stall)  # windows of running only
    n["checkpoint_range_mw"] = peak(stall, stall + 10.0)
    n["crash_range_mw"] = peak(at, at + 10.0)
    n["checkpoint_before_failure_s"] = at - stall
    return fig


if __name__ == "__main__":
    folder = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(tempfile.mkdtemp())
    for key, value in build()[1].items():
        print(f"{key:36s} {value:,.6g}")
    for written in main(folder):
        print(f"{written:40s} {(folder / written).stat().st_size / 1e3:8.1f} kB")
