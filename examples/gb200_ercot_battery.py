"""How large a battery does a 100,000-GPU GB200 site need for ERCOT's 5-s proposal, and what
does GB200 power smoothing (a floor and ramp rates) cost instead?

The reference Llama 3 job [llama3] moved to 100,000 GB200 [nvidia_blackwell] on liquid cooling,
measured as ERCOT's large-load proposal [ercot_lli] measures it (rule ``ercot-5s``: 0.1-55 Hz,
max - min in any 5 s at most 10 MW), for three hours at 100 ms.

Run ``python examples/gb200_ercot_battery.py [folder]``: the figures are written as HTML
fragments into the folder (a temporary one when none is given) and the headline numbers printed.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np
import plotly.graph_objects as go
import xarray as xr
from plotly.subplots import make_subplots

from powermodel import load_scenario, metrics, simulate
from powermodel.models.events import State
from powermodel.rules import check, load_rules
from powermodel.sizing import costs, ramp_limit, size

EXAMPLE = "gb200_ercot_battery"
# a 100,000-GPU site: the job runs on whole replicas of Llama 3's 128-GPU layout (TP 8, PP 16
# [llama3]), 781 of them; a hall of 100,000 would leave 32 idle: the site is the job's 99,968
N_GPUS = 99_968
SITE = {
    "cluster.gpu": "GB200",
    "cluster.n_gpus": N_GPUS,
    # Llama 3's 16M-token batch over 99,968 GPUs would be 168 tokens a GPU, under one 8,192-token
    # sequence, and a 0.4 s step: keep its batch per GPU instead (weak scaling, as large jobs
    # grow the global batch with the cluster): 102M tokens, a 2.4 s step
    "workload.tokens_per_step": 16_777_216 * N_GPUS / 16_384,
    "cooling.plant": "liquid-dry-cooler",  # GB200 NVL72 racks are liquid-cooled
    # three hours hold seven crashes at the reference's failure rates per
    # GPU-hour (about 2.3 an hour at this size): no rate_scale needed
    "simulation.duration": "3h",
    # 100 ms resolves the 2.4 s iterations and ERCOT's band up to 2.5 Hz; at 1 s the interval
    # means hide part of both (see the 1-s sizing below)
    "simulation.dt": "0.1s",
}
FLOORS = (0.0, 0.3, 0.5, 0.7, 0.9)  # fractions of TDP; NVML allows 0-90 %
BISECTIONS = 7


def main(out: pathlib.Path) -> dict[str, float]:
    """Size a battery and a smoothing floor for ``ercot-5s``; write the figures into ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    rules = load_rules("ercot-5s")
    scenario = load_scenario("llama3-405b-16k-h100", SITE)
    base = simulate(scenario)
    m = metrics(base)
    unmitigated = check(base, rules)[0]
    # the shipped sizing, at 100 ms and at the 1 s a first look would use
    battery_lever = "site battery (15 min)"
    fine = size(scenario, rules).set_index("lever").loc[battery_lever]
    coarse = size(load_scenario(scenario, {"simulation.dt": "1s"}), rules)
    coarse = coarse.set_index("lever").loc[battery_lever]
    # the same controller with a converter that answers within the step
    ramp = 0.8 * ramp_limit(rules[0], base.attrs["registered_demand"])
    battery, battery_run, battery_scenario = _size_fast_battery(scenario, base, rules, ramp)
    battery_cost = costs(battery_scenario, base, battery_run)
    # power smoothing: ramp rates from the rule, each floor in turn
    rate = 0.8 * rules[0].limit / rules[0].window * 1e6 / N_GPUS  # W/s a GPU
    floors = {f: _smoothed(scenario, f, rate) for f in FLOORS}
    floor_results = {
        f: (check(ds, rules)[0], costs(sc, base, ds)) for f, (sc, ds) in floors.items()
    }
    top_result, top_cost = floor_results[FLOORS[-1]]
    numbers = {
        "step_time_s": float(base.attrs["step_time"]),
        "unexpected_interruptions": float(m["unexpected_interruptions"]),
        "it_mean_mw": m["it_mean_mw"],
        "facility_peak_mw": m["facility_peak_mw"],
        "registered_demand_mw": float(base.attrs["registered_demand"]),
        "unmitigated_worst_mw": unmitigated.worst,
        "training_swing_5s_mw": m["grid_swing_5s_training_mw"],
        "battery_1s_power_mw": float(coarse["setting"]),
        "battery_100ms_default_passes": float(fine["verdict"] == "pass"),
        "battery_100ms_default_worst_mw": float(fine["worst"]),
        "battery_power_mw": battery,
        "battery_energy_mwh": battery * 0.25,
        "battery_soc_swing": float(battery_run["bess_soc"].max() - battery_run["bess_soc"].min()),
        "battery_grid_energy_cost": battery_cost["grid_energy_cost"],
        "battery_cycles_per_day": battery_cost["storage_cycles_per_day"],
        "smoothing_rate_w_per_s": rate,
        "floor_0_worst_mw": floor_results[0.0][0].worst,
        "floor_0_throughput_cost": floor_results[0.0][1]["throughput_cost"],
        "floor_0_grid_energy_cost": floor_results[0.0][1]["grid_energy_cost"],
        "floor_top_worst_mw": top_result.worst,
        "floor_top_violations_by_restart": float(top_result.by_cause.get("restart", 0)),
        "floor_top_violations": float(len(top_result.violations)),
        "floor_top_host_steps": float(_host_steps(scenario, base, top_result.violations)),
        "floor_top_grid_energy_cost": top_cost["grid_energy_cost"],
        "floor_top_grid_energy_mwh_per_day": top_cost["grid_energy_mwh_per_day"],
        "floor_top_throughput_cost": top_cost["throughput_cost"],
    }
    for f, (result, cost) in floor_results.items():  # each floor's row of the page's table
        numbers[f"floor_{f:.0%}_worst_mw"] = result.worst
        numbers[f"floor_{f:.0%}_grid_energy_cost"] = cost["grid_energy_cost"]
        numbers[f"floor_{f:.0%}_throughput_cost"] = cost["throughput_cost"]
    _check(numbers)
    figures = {
        "failure": _event_figure(base, battery_run, floors[FLOORS[-1]][1]),
        "costs": _cost_figure(battery, battery_cost, floor_results),
    }
    for name, fig in figures.items():
        html = fig.to_html(full_html=False, include_plotlyjs=False)
        (out / f"{EXAMPLE}-{name}.html").write_text(html, encoding="utf-8")
    return numbers


def _check(n: dict[str, float]) -> None:
    # [llama3] step at 16,384 H100 is 6.13 s; the same tokens a GPU on GB200 (2.5 vs 0.989
    # PFLOP/s dense BF16, same MFU) take 6.13 · 0.989 / 2.5 = 2.43 s
    assert abs(n["step_time_s"] - 6.134 * 989.4 / 2500.0) < 0.01
    assert n["unexpected_interruptions"] >= 3  # the run must hold crashes to size against
    # model output pinned at this commit: a crash of a ~200 MW site drops well over 100 MW
    # within 5 s; the iterations alone (1,200 W compute against a 30 % lower trough [ko_zhu],
    # 36 MW of boards) swing about 50 MW at the connection
    assert 150.0 < n["unmitigated_worst_mw"] < 190.0
    assert abs(n["training_swing_5s_mw"] - 49.8) < 2.0
    # model output pinned at this commit: at 1 s the shipped sizing finds a 15-min battery of
    # about 85 MW (the bisection's resolution is 4 %; 97 MW before restarts began with a
    # start-up above idle, which shortens the restart's step and moves the crashes) ...
    assert abs(n["battery_1s_power_mw"] - 85.3) < 5.0
    # ... but at 100 ms no battery with the default 100 ms response passes: the state changes
    # (checkpoint stall, restart) step within one interval and the battery answers one late
    assert n["battery_100ms_default_passes"] == 0.0
    assert n["battery_100ms_default_worst_mw"] > 10.0
    # with a response inside the step the battery must absorb nearly the whole crash: model
    # output pinned at this commit (the bisection's resolution is 4 %), and never more than
    # the facility's peak
    assert abs(n["battery_power_mw"] - 96.5) < 5.0  # 104.9 MW before the start-up state
    assert n["battery_power_mw"] < n["facility_peak_mw"]
    # a battery costs its round-trip losses (90 %) on what it moves, no tokens
    assert 0.0 < n["battery_grid_energy_cost"] < 0.05
    # derivation: 0.8 · 10 MW / 5 s over 99,968 GPUs = 16.005 W/s a GPU
    assert abs(n["smoothing_rate_w_per_s"] - 0.8 * 10e6 / 5 / 99_968) < 1e-9
    # model output pinned at this commit: even NVML's highest floor leaves the hosts' own
    # steps, when 12,500 of them go from active to idle at the end of a crash's stall and back
    # at its start-up (rest-of-node power, which GPU smoothing does not reach); every other
    # violation is gone: each one left starts at one of those steps
    assert n["floor_top_worst_mw"] > 10.0 and n["floor_top_violations_by_restart"] > 0
    assert n["floor_top_violations"] == n["floor_top_host_steps"] > 0
    # closed form for the burn: a 90 % floor raises the 840 W trough (32.5 % of the step) to
    # 1,080 W and the smoothing holds the GPUs through stalls; model output pinned at this
    # commit for the whole site: about +10 % grid energy, and the 16 W/s rise throttles work
    assert 0.08 < n["floor_top_grid_energy_cost"] < 0.13
    assert 0.05 < n["floor_top_throughput_cost"] < 0.10
    assert n["floor_top_throughput_cost"] < n["floor_0_throughput_cost"]


def _size_fast_battery(
    scenario, base: xr.Dataset, rules, ramp: float
) -> tuple[float, xr.Dataset, object]:
    """The smallest 15-min site battery that passes, answering within the step: a log
    bisection between 1 % and 2x the design power of the GPUs, as the shipped sizing does."""

    def run(power: float):
        storage = {"location": "site", "power": power, "energy": 0.25 * power}
        sc = load_scenario(
            scenario,
            {"mitigation.storage": [{**storage, "tau": "0s", "ramp": ramp, "delay": "0s"}]},
        )
        ds = simulate(sc)
        return check(ds, rules)[0].passed, ds, sc

    design = N_GPUS * scenario.gpu.tdp / 1e6
    gentle, strong = 0.01 * design, 2.0 * design
    assert run(strong)[0], "even a battery of twice the GPUs' power fails"
    for _ in range(BISECTIONS):
        mid = float(np.sqrt(gentle * strong))
        gentle, strong = (gentle, mid) if run(mid)[0] else (mid, strong)
    _, ds, sc = run(strong)
    return strong, ds, sc


def _host_steps(scenario, base: xr.Dataset, violations) -> int:
    """Violations that start within a second of a crash's hosts stepping: the end of its stall
    (active to idle) or the start of its start-up (idle to active)."""
    crash = base["event_time"].values[base["event_kind"].values == "unexpected"]
    stall, idle = scenario.stall_time, scenario.reliability.restart_time
    steps = np.concatenate([crash + _seconds(stall), crash + _seconds(stall + idle)])
    start = violations["start"].values
    near = np.abs(start[:, None] - steps[None, :]) <= _seconds(1.0)
    return int(near.any(axis=1).sum())


def _seconds(s: float) -> np.timedelta64:
    return np.timedelta64(int(round(s * 1e9)), "ns")


def _smoothed(scenario, floor: float, rate: float):
    sc = load_scenario(
        scenario, {"mitigation.smoothing": {"floor": floor, "ramp_up": rate, "ramp_down": rate}}
    )
    return sc, simulate(sc)


def _event_figure(base: xr.Dataset, battery: xr.Dataset, floor: xr.Dataset) -> go.Figure:
    """Grid power around the first crash and around the restart that follows it."""
    start = base["time"].values[0]
    crash = base["event_time"].values[base["event_kind"].values == "unexpected"][0]
    state = base["job_state"].values
    after = (base["time"].values > crash) & (state == State.LOADING)
    restart = base["time"].values[np.argmax(after)]
    fig = make_subplots(
        rows=1, cols=2, shared_yaxes=True, subplot_titles=("the crash", "the restart")
    )
    runs = (
        ("unmitigated", base),
        ("site battery", battery),
        (f"smoothing, floor {FLOORS[-1]:.0%}", floor),
    )
    for col, at in ((1, crash), (2, restart)):
        window = (base["time"].values >= at - np.timedelta64(20, "s")) & (
            base["time"].values < at + np.timedelta64(100, "s")
        )
        seconds = (base["time"].values[window] - at) / np.timedelta64(1, "s")
        for i, (name, ds) in enumerate(runs):
            fig.add_trace(
                go.Scatter(
                    x=seconds,
                    y=ds["grid_power"].values[window],
                    name=name,
                    legendgroup=name,
                    showlegend=col == 1,
                    line_color=("#636efa", "#00cc96", "#ef553b")[i],
                ),
                row=1,
                col=col,
            )
        fig.update_xaxes(title_text="seconds from the event", row=1, col=col)
    hours = (crash - start) / np.timedelta64(1, "h")
    fig.update_layout(
        title=f"Grid power at 100 ms around the first crash ({hours:.1f} h in) and its restart",
        yaxis_title="grid power [MW]",
    )
    return fig


def _cost_figure(battery: float, battery_cost: dict, floors: dict) -> go.Figure:
    names = [f"battery {battery:.0f} MW"] + [f"floor {f:.0%}" for f in floors]
    passed = ["passes"] + [
        "passes" if r.passed else f"fails, {r.worst:.0f} MW" for r, _ in floors.values()
    ]
    energy = [battery_cost["grid_energy_cost"]] + [
        c["grid_energy_cost"] for _, c in floors.values()
    ]
    tokens = [battery_cost["throughput_cost"]] + [c["throughput_cost"] for _, c in floors.values()]
    labels = [f"{n}<br>({p})" for n, p in zip(names, passed, strict=True)]
    fig = go.Figure(
        [
            go.Bar(x=labels, y=100.0 * np.array(energy), name="extra grid energy [%]"),
            go.Bar(x=labels, y=100.0 * np.array(tokens), name="tokens lost [%]"),
        ]
    )
    fig.update_layout(
        barmode="group",
        title="What each mitigation costs against the unmitigated run (ERCOT 5-s rule verdict)",
        yaxis_title="% of the unmitigated run",
    )
    return fig


if __name__ == "__main__":
    folder = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(tempfile.mkdtemp())
    for key, value in main(folder).items():
        print(f"{key:36s} {value:,.6g}")
    print(f"figures in {folder}")
