"""Inference fleets on a campus: utilisation follows demand, power the GPU's curve
(powermodel.models.inference; issue 14, acceptance 5).

The expected energy is integrated here, independently of the engine: the demand curve evaluated
on the variation's steps, through the power curve, summed."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from powermodel import load_scenario, simulate
from powermodel.models import inference

REFERENCE = "llama3-405b-16k-h100"
FLEET = {
    "name": "chat",
    "kind": "inference",
    # no leakage: the board power is the curve's alone; no short-term variation
    "set": {"cluster.n_gpus": 4096, "gpu.leakage_ref": 0.0},
    "inference": {"variation_cv": 0.0, "peak_hour": 14.0, "busy_power": 0.7},
}


def _run(dt: str = "1s", overrides: dict | None = None, **fleet):
    scenario = load_scenario(
        REFERENCE,
        {
            "simulation.duration": "7d",
            "simulation.dt": dt,
            "campus": {"workloads": [{"name": "train"}, {**FLEET, **fleet}]},
            **(overrides or {}),
        },
    )
    return scenario, simulate(scenario)


def test_the_fleet_peaks_at_the_configured_hour():
    scenario, ds = _run()
    power = ds.workload_gpu_power.sel(workload="chat").to_series()
    local = power.tz_localize("UTC").tz_convert("America/New_York")
    # each weekday's (1-5 July 2024) largest minute mean is at 14:00 local
    minutes = local.resample("1min").mean()
    for day, values in minutes.groupby(minutes.index.date):
        if pd.Timestamp(day).dayofweek < 5 and values.size == 1440:
            peak = values.idxmax()
            assert abs(peak.hour * 60 + peak.minute - 14 * 60) <= 1, peak


@pytest.mark.parametrize("dt", ["1s", "100ms"])
def test_fleet_energy_is_utilisation_through_the_power_curve(dt):
    scenario, ds = _run(dt, inference={**FLEET["inference"], "variation_step": "10s"})
    part = scenario.parts[1]
    gpu, n = part.gpu, part.cluster.n_gpus
    # the demand curve on 10-s steps from the run's start, in local time: 1 July 2024 00:00
    # UTC is Sunday 30 June 20:00 EDT, hour 164 of the week from Monday
    hours = 6 * 24 + 20 + (np.arange(7 * 8640) + 0.5) * 10.0 / 3600.0
    u = inference.demand(hours, 0.35, 0.85, 14.0, 0.8)
    watts = gpu.idle + (0.7 * gpu.tdp - gpu.idle) * u  # the power curve [W per GPU]
    expected = watts.sum() * 10.0 * n / 3.6e9  # MWh
    got = ds.workload_gpu_power.sel(workload="chat").values.sum() * ds.attrs["dt"] / 3600
    assert_allclose(got, expected, rtol=1e-9)
    # served tokens: utilisation times the full-batch rate, 2,500 tokens/s a GPU [A]
    served = ds.workload_goodput.sel(workload="chat").item()
    assert_allclose(served, (u * 2500.0 * n).sum() * 10.0, rtol=1e-9)


def test_a_lower_clock_serves_the_same_demand_at_less_dynamic_power():
    _, nominal = _run()
    _, locked = _run(inference={**FLEET["inference"], "clock": 0.9})
    a = nominal.workload_gpu_power.sel(workload="chat").values
    b = locked.workload_gpu_power.sel(workload="chat").values
    # utilisation up by 1/0.9 (the peak 0.85 stays below 0.9: nothing refused), the dynamic
    # part by 0.9³: 0.81 of the energy above idle
    served = [ds.workload_goodput.sel(workload="chat").item() for ds in (nominal, locked)]
    assert_allclose(served[1], served[0], rtol=1e-9)
    idle = 4096 * 80.0 / 1e6  # the H100's idle, 80 W
    assert_allclose((b - idle).sum() / (a - idle).sum(), 0.9**2, rtol=1e-9)


def test_demand_above_what_the_clock_serves_is_refused():
    _, nominal = _run()
    _, slow = _run(inference={**FLEET["inference"], "clock": 0.8})
    served = [ds.workload_goodput.sel(workload="chat").item() for ds in (nominal, slow)]
    # demand above 0.8 of a full batch at the nominal clock cannot be served at 0.8: the
    # tokens lost are that excess, integrated here on the 1-s steps
    hours = 6 * 24 + 20 + (np.arange(7 * 86400) + 0.5) / 3600.0
    u = inference.demand(hours, 0.35, 0.85, 14.0, 0.8)
    lost = np.maximum(u - 0.8, 0.0).sum() * 2500.0 * 4096
    assert lost > 0
    assert_allclose(served[0] - served[1], lost, rtol=1e-9)


def test_short_term_variation_keeps_its_mean_and_spread():
    rng = np.random.default_rng(1)
    mean = np.full(200_000, 0.5)
    u = inference.utilisation(mean, 0.05, 60.0, 1.0, rng)
    assert_allclose(u.mean(), 0.5, rtol=0.01)
    assert_allclose(u.std() / 0.5, 0.05, rtol=0.1)
    # a first-order process: lag-60 correlation exp(-1)
    c = np.corrcoef(u[:-60], u[60:])[0, 1]
    assert_allclose(c, np.exp(-1.0), atol=0.05)


def test_the_fleet_holds_the_jobs_power_cap_and_clock_lock():
    flat = {"base_level": 1.0, "peak_level": 1.0, "weekend_level": 1.0, "variation_cv": 0.0}
    shown = {}
    for name, extra in (("free", {}), ("cap", {"mitigation.power_cap": 350.0}),
                        ("lock", {"mitigation.clock_lock": 0.6})):  # fmt: skip
        _, ds = _run(**{"inference": {**FLEET["inference"], **flat}}, overrides=extra)
        board = ds.workload_gpu_power.sel(workload="chat").values * 1e6 / 4096
        shown[name] = (board.max(), ds.workload_goodput.sel(workload="chat").item())
    # no leakage in this fleet: the cap holds the board at 350 W exactly, the clock it leaves
    # serves less; a lock at 0.6 serves 0.6 of the demand
    assert_allclose(shown["cap"][0], 350.0, rtol=1e-9)
    assert shown["cap"][1] < shown["free"][1]
    assert_allclose(shown["lock"][1] / shown["free"][1], 0.6, rtol=1e-9)
