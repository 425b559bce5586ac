"""First run: two days of the reference scenario, its headline numbers and what the grid sees.

Run it as ``python examples/first_run.py OUT_DIR``; the docs build calls ``main`` and embeds the
figure it writes (``docs/examples/first_run.md``).
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import plotly.graph_objects as go

from powermodel import load_scenario, metrics, simulate
from powermodel.analysis import resample

NAME = "first_run"


def main(out: pathlib.Path) -> dict:
    """Simulate two days of Llama 3 405B on 16,384 H100s, check its step time, plot grid power.

    Returns the headline numbers; writes ``first_run-power.html`` into ``out``.
    """
    ds = simulate(load_scenario("llama3-405b-16k-h100", {"simulation.duration": "2d"}))
    m = metrics(ds)
    step = float(ds.attrs["step_time"])
    # Llama 3 paper, Table 4: 405e9 parameters, 16M-token batches on 16,384 GPUs at 41 % MFU give
    # about 6.2 s a step by 6·N·D (989 TFLOP/s dense BF16 peak; the paper's 400 TFLOP/s per GPU);
    # 2 %: the paper's per-GPU rate is rounded
    assert abs(step - 6.2) / 6.2 < 0.02, step
    # the grid sees the facility: never less than IT, and the swing is what the rules measure
    assert m["grid_peak_mw"] >= m["it_peak_mw"], m
    out = pathlib.Path(out)
    out.mkdir(parents=True, exist_ok=True)
    power_figure(ds).write_html(out / f"{NAME}-power.html", full_html=False, include_plotlyjs=False)
    return {
        "step_time_s": step,
        "it_mean_mw": m["it_mean_mw"],
        "grid_peak_mw": m["grid_peak_mw"],
        "grid_swing_5s_mw": m["grid_swing_5s_mw"],
        "pue": m["pue"],
        "unexpected_interruptions": float(m["unexpected_interruptions"]),
    }


def power_figure(ds) -> go.Figure:
    """Grid power as 1-min means with each minute's min and max, and the interruptions."""
    minutes = resample(ds[["grid_power"]], "1min")
    t = minutes["time"].values
    fig = go.Figure()
    fig.add_scatter(
        x=np.concatenate((t, t[::-1])),
        y=np.concatenate(
            (minutes["grid_power_max"].values, minutes["grid_power_min"].values[::-1])
        ),
        fill="toself",
        line={"width": 0},
        fillcolor="rgba(31, 119, 180, 0.25)",
        name="min–max of each minute",
        hoverinfo="skip",
    )
    fig.add_scatter(x=t, y=minutes["grid_power"].values, name="1-min mean", line={"width": 1})
    for when in ds["event_time"].values:
        fig.add_vline(x=when, line={"width": 0.5, "dash": "dot", "color": "grey"})
    fig.update_layout(
        title="Grid power, two days of the reference run (dotted: interruptions)",
        xaxis_title="time (UTC)",
        yaxis_title="grid_power [MW]",
        height=420,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


if __name__ == "__main__":
    print(main(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "out")))
