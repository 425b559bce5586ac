"""The Llama 3 405B reference, step by step: 16,384 H100 GPUs for the 54 days of [llama3].

What the model says about the run Meta reported: the step time, one minute of the iteration
waveform with a checkpoint, the interruptions against Table 5, the effective training time, the
diurnal throughput swing, IT, facility and grid power, PUE and the largest 5-s swing.

Run ``python examples/llama3_reference.py [folder]``: the figures are written as HTML fragments
into the folder (a temporary one when none is given) and the headline numbers printed.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np
import plotly.graph_objects as go
import xarray as xr

from powermodel import load_scenario, metrics, simulate
from powermodel.analysis import diurnal_swing, diurnal_throughput, resample
from powermodel.engine.timeline import timeline
from powermodel.models.events import State

EXAMPLE = "llama3_reference"
PRESET = "llama3-405b-16k-h100"
SEEDS = 100  # job timelines (no rendering, a few ms each) for the spread of the counts

# [llama3] Table 5: unexpected interruptions by category over the 54 days (the counts, which
# sum to 419; the printed 30.1 % for faulty GPUs is a misprint of 148/419 = 35.3 %)
TABLE5 = {
    "GPU": 148 + 72 + 19 + 17 + 6 + 6,
    "Dependency": 54 + 2,
    "Network": 35,
    "Unplanned maintenance": 32,
    "Host": 7 + 3 + 3 + 2 + 2 + 2 + 2,
    "Unknown": 7,
}


def main(out: pathlib.Path) -> dict[str, float]:
    """Simulate the reference, check it against the paper, write the figures into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    scenario = load_scenario(PRESET)
    ds = simulate(scenario)
    m = metrics(ds)
    swing, trough_hour = diurnal_swing(ds)
    state = ds["job_state"].values
    counts = _seed_counts(scenario)
    numbers = {
        "step_time_s": float(ds.attrs["step_time"]),
        "checkpoint_interval_s": float(ds.attrs["checkpoint_interval"]),
        "checkpoint_stall_s": float(ds.attrs["checkpoint_stall"]),
        "checkpoint_share": float(np.mean(state == State.CHECKPOINT)),
        "unexpected_interruptions": float(m["unexpected_interruptions"]),
        "planned_interruptions": float(m["planned_interruptions"]),
        "unexpected_mean_over_seeds": float(np.mean(counts)),
        "unexpected_p5_over_seeds": float(np.percentile(counts, 5)),
        "unexpected_p95_over_seeds": float(np.percentile(counts, 95)),
        "gpu_share_of_unexpected": m["interruptions_by_category"].get("GPU", 0)
        / m["unexpected_interruptions"],
        **{
            f"seed0_{category.lower().replace(' ', '_')}": float(count)
            for category, count in m["interruptions_by_category"].items()
        },
        "effective_training_time": m["effective_training_time"],
        "diurnal_swing": swing,
        "diurnal_trough_hour": float(trough_hour),
        "it_mean_mw": m["it_mean_mw"],
        "it_peak_mw": m["it_peak_mw"],
        "it_min_mw": m["it_min_mw"],
        "facility_mean_mw": float(ds["facility_power"].mean()),
        "facility_peak_mw": m["facility_peak_mw"],
        "grid_mean_mw": m["grid_mean_mw"],
        "grid_peak_mw": m["grid_peak_mw"],
        "grid_min_mw": m["grid_min_mw"],
        "facility_energy_mwh": m["facility_energy_mwh"],
        "cooling_energy_mwh": m["cooling_energy_mwh"],
        "pue": m["pue"],
        "throughput_lost_to_heat": m["throughput_lost_to_heat"],
        "grid_energy_per_token_j": m["grid_energy_per_token_j"],
        "grid_swing_5s_mw": m["grid_swing_5s_mw"],
        "grid_swing_5s_training_mw": m["grid_swing_5s_training_mw"],
        "tokens": m["tokens"],
    }
    _check(numbers)
    minute = _minute_of_waveform(scenario)
    figures = {
        "waveform": _waveform_figure(minute),
        "day": _day_figure(ds),
        "diurnal": _diurnal_figure(diurnal_throughput(ds)),
    }
    for name, fig in figures.items():
        html = fig.to_html(full_html=False, include_plotlyjs=False)
        (out / f"{EXAMPLE}-{name}.html").write_text(html, encoding="utf-8")
    return numbers


def _check(n: dict[str, float]) -> None:
    # [llama3] Table 4 gives 400 TFLOP/s per GPU at 16M tokens a step: 6·405e9·16.8e6 /
    # (16,384·400e12) = 6.2 s; the model's 6·N·D from 41 % MFU of 989 TFLOP/s is within 2 %
    assert abs(n["step_time_s"] / 6.2 - 1.0) < 0.02, n["step_time_s"]
    # Young/Daly: sqrt(2·MTBF·C), MTBF = 1,208.6 running hours / 419 = 10,384 s (the preset's
    # calibrated exposure), C = 5.67 TB at 2 TB/s = 2.835 s: 242.6 s; the model counts the
    # running time between checkpoints of the simulated timeline, within 3 %
    assert n["checkpoint_stall_s"] == 5670.0 / 2000.0
    assert abs(n["checkpoint_interval_s"] / np.sqrt(2 * 10384.0 * 2.835) - 1.0) < 0.03
    # [llama3]: 419 unexpected and 47 planned interruptions in 54 days. One run is one Poisson
    # draw: within three standard deviations (sqrt(419) = 20.5, sqrt(47) = 6.9) ...
    assert abs(n["unexpected_interruptions"] - 419) < 3 * np.sqrt(419)
    assert abs(n["planned_interruptions"] - 47) < 3 * np.sqrt(47)
    # ... and the mean of 100 seeds within 3 % of 419 (the rates are calibrated on it; the
    # standard error of the mean is 2)
    assert abs(n["unexpected_mean_over_seeds"] / 419 - 1.0) < 0.03
    # [llama3] Table 5: GPUs 268 of 419 (64 %); one run, binomial spread about 2.3 %
    assert abs(n["gpu_share_of_unexpected"] - 268 / 419) < 0.07
    # [llama3]: "higher than 90 % effective training time"
    assert 0.90 < n["effective_training_time"] < 0.95
    # [llama3]: a 1-2 % diurnal throughput swing (the leakage coefficient is calibrated on it,
    # so this checks the calibration holds, not a prediction); the trough after mid-day
    assert 0.01 <= n["diurnal_swing"] <= 0.02
    assert 11 <= n["diurnal_trough_hour"] <= 18
    # [latif] an 8-GPU node peaks at 8.4 kW: 2,048 nodes are at most 17.2 MW of servers, plus
    # network (0.5 MW) and storage: IT peak under 19.5 MW; model output pinned at this commit
    assert n["it_peak_mw"] < 19.5
    assert abs(n["it_mean_mw"] - 16.20) < 0.1  # model output pinned at this commit
    # Meta fleet PUE 1.08 (the outside-air plant's fan share is calibrated on it over a
    # year at Sterling); July and August run above the annual figure, so 1.08-1.10
    assert 1.08 <= n["pue"] <= 1.10
    # model output pinned at this commit: a crash drops about 13 MW within 5 s, while the
    # iterations alone swing about 4.4 MW
    assert abs(n["grid_swing_5s_mw"] - 13.3) < 0.5
    assert abs(n["grid_swing_5s_training_mw"] - 4.4) < 0.3


def _seed_counts(scenario) -> np.ndarray:
    """Unexpected interruptions of the 54 days over :data:`SEEDS` seeds (timelines only)."""
    planned = len(scenario.reliability.causes)  # the planned cause follows the listed ones
    return np.array(
        [
            np.sum(timeline(load_scenario(scenario, {"simulation.seed": s})).event_cause < planned)
            for s in range(SEEDS)
        ]
    )


def _minute_of_waveform(scenario) -> xr.Dataset:
    """One minute at 100 ms ending 20 s after the run's first checkpoint stall begins."""
    ds = simulate(
        load_scenario(scenario, {"simulation.duration": "15min", "simulation.dt": "0.1s"})
    )
    first = int(np.argmax(ds["job_state"].values == State.CHECKPOINT))
    return ds.isel(time=slice(first - 400, first + 200))


def _waveform_figure(ds: xr.Dataset) -> go.Figure:
    seconds = (ds["time"].values - ds["time"].values[0]) / np.timedelta64(1, "s")
    fig = go.Figure()
    for name, label in (("grid_power", "grid"), ("it_power", "IT"), ("gpu_power", "GPU boards")):
        fig.add_trace(go.Scatter(x=seconds, y=ds[name].values, name=label, mode="lines"))
    stall = seconds[ds["job_state"].values == State.CHECKPOINT]
    fig.add_vrect(x0=stall.min(), x1=stall.max() + 0.1, fillcolor="grey", opacity=0.2, line_width=0)
    fig.update_layout(
        title="One minute of training at 100 ms: iterations, then a checkpoint stall (grey)",
        xaxis_title="time [s]",
        yaxis_title="power [MW]",
    )
    return fig


def _day_figure(ds: xr.Dataset) -> go.Figure:
    """The day with most interruptions, as 1-min means with each minute's min and max."""
    start = ds["time"].values[0]
    day_of = ((ds["event_time"].values - start) // np.timedelta64(1, "D")).astype(int)
    busiest = int(np.bincount(day_of).argmax())
    steps = 86400 // int(ds.attrs["dt"])
    day = resample(ds.isel(time=slice(busiest * steps, (busiest + 1) * steps)), "1min")
    t = day["time"].values
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=t, y=day["grid_power_max"].values, line_width=0, showlegend=False))
    fig.add_trace(
        go.Scatter(
            x=t,
            y=day["grid_power_min"].values,
            fill="tonexty",
            line_width=0,
            name="grid, min-max of each minute",
        )
    )
    fig.add_trace(go.Scatter(x=t, y=day["grid_power"].values, name="grid, 1-min mean"))
    on_day = day_of == busiest
    for when, kind, cause in zip(
        ds["event_time"].values[on_day],
        ds["event_kind"].values[on_day],
        ds["event_cause"].values[on_day],
        strict=True,
    ):
        fig.add_vline(x=when, line_dash="dot", line_color="red" if kind == "unexpected" else "grey")
        fig.add_annotation(x=when, y=1.0, yref="paper", text=cause, textangle=-90, showarrow=False)
    fig.update_layout(
        title=f"Day {busiest + 1} of 54, the one with most interruptions (UTC)",
        yaxis_title="grid power [MW]",
    )
    return fig


def _diurnal_figure(profile: np.ndarray) -> go.Figure:
    relative = 100.0 * (profile / np.nanmean(profile) - 1.0)
    fig = go.Figure(go.Bar(x=np.arange(24), y=relative))
    fig.update_layout(
        title="Throughput by local hour, against the day's mean (running time only)",
        xaxis_title="local hour (America/New_York)",
        yaxis_title="throughput against the mean [%]",
    )
    return fig


if __name__ == "__main__":
    folder = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(tempfile.mkdtemp())
    for key, value in main(folder).items():
        print(f"{key:32s} {value:,.6g}")
    print(f"figures in {folder}")
