"""Mitigations against closed forms (issue 4, acceptances 2 and 3): floors, ramps, clock locks,
the battery's energy balance, rack storage."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import QUIET, REFERENCE

from powermodel import load_scenario, simulate
from powermodel.errors import PowerModelError
from powermodel.models import mitigation
from powermodel.models.events import State
from powermodel.sizing import costs

SQUARE = {
    **QUIET,
    # the closed form is of the electrical waveform: hold the dies' leakage and the fans out of
    # it (a floor also heats the dies, which then leak more: a second, thermal, cost)
    "gpu.leakage_coefficient": 0.0,
    "cluster.fans.slope": 0.0,
    "simulation.duration": "2h",
    "workload.edge_rate": 1000.0,  # TDP per second: edges of 0.3-0.7 ms, a square wave
    "workload.compute_power": 1.0,  # 700 W on the H100
    "workload.trough_depth": 0.5,  # 350 W
    "workload.phases": [
        {"name": "compute", "kind": "compute", "share": 0.6},
        {"name": "exchange", "kind": "communication", "share": 0.4},
    ],
    "workload.startup_ramp": "0s",
}


@pytest.mark.parametrize("dt", ["0.1s", "1min"])
def test_floor_energy_overhead_is_the_closed_form_at_any_dt(dt):
    # Square wave 700 W (60 %) / 350 W (40 %), floor 490 W (70 % of TDP):
    # closed form 0.4·(490-350) / (0.6·700 + 0.4·350) = 56/560 = 10 %.
    over = {**SQUARE, "simulation.dt": dt}
    base = simulate(load_scenario(REFERENCE, over))
    floored = simulate(load_scenario(REFERENCE, {**over, "mitigation.software_burn": 0.7}))
    sc = load_scenario(REFERENCE, over)
    step = float(base.attrs["dt"])
    running = float(np.sum(base["job_state"].values == State.RUNNING)) * step
    loading = 7200.0 - running  # the start: checkpoint reload, no ramp
    extra = float((floored["gpu_power"] - base["gpu_power"]).sum()) * step * 1e6
    per_gpu = extra / (sc.cluster.n_gpus * (7200.0 - loading))
    assert mitigation.floor_overhead(350.0, 700.0, 0.6, 490.0) == pytest.approx(0.10)
    assert per_gpu / 560.0 == pytest.approx(0.10, rel=2e-3)


def test_smoothing_floor_matches_the_software_floor_with_fast_ramps():
    over = {**SQUARE, "simulation.dt": "1s", "cluster.gpu": "GB200"}
    burn = simulate(load_scenario(REFERENCE, {**over, "mitigation.software_burn": 0.7}))
    smooth = simulate(
        load_scenario(
            REFERENCE,
            {**over, "mitigation.smoothing": {"floor": 0.7, "ramp_up": 1e7, "ramp_down": 1e7}},
        )
    )
    running = burn["job_state"].values == State.RUNNING
    np.testing.assert_allclose(
        smooth["gpu_power"].values[running], burn["gpu_power"].values[running], rtol=1e-6
    )


@pytest.mark.parametrize("dt", ["0.1s", "1s"])
def test_ramp_limited_power_never_exceeds_the_set_rate(dt):
    # GB200 power smoothing at 2,000 W/s up and 500 W/s down, with crashes and restarts
    sc = load_scenario(
        REFERENCE,
        {
            "simulation.duration": "6h",
            "simulation.dt": dt,
            "reliability.rate_scale": 3.0,
            "cluster.gpu": "GB200",
            "mitigation.smoothing": {"floor": 0.3, "ramp_up": 2000.0, "ramp_down": 500.0},
        },
    )
    ds = simulate(sc)
    step = float(ds.attrs["dt"])
    per_gpu = ds["gpu_power"].values * 1e6 / sc.cluster.n_gpus
    rate = np.diff(per_gpu) / step
    assert rate.max() <= 2000.0 * (1 + 1e-9) and -rate.min() <= 500.0 * (1 + 1e-9)
    assert (ds["event_kind"].values == "unexpected").sum() > 3  # it saw crashes


def test_clock_lock_lowers_peaks_and_troughs_and_stretches_compute():
    # Patel et al. [S, patel]: capping lowers peaks, not troughs; locking the clock lowers
    # everything. Locked at 0.8 the compute phases take 1/0.8 as long; communication does not.
    # Patel's are steady iterations: the job starts at once, not after the 2-min start-up whose
    # cooled dies boost the free run's clocks (and shorten its compute) for its first minutes
    over = {**QUIET, "simulation.duration": "2h", "workload.startup_time": "0s"}
    free = simulate(load_scenario(REFERENCE, over))
    capped = simulate(load_scenario(REFERENCE, {**over, "mitigation.power_cap": 500.0}))
    locked = simulate(load_scenario(REFERENCE, {**over, "mitigation.clock_lock": 0.8}))
    run = free["job_state"].values == State.RUNNING

    def peak(ds):
        return ds["gpu_power"].values[run].max()

    def trough(ds):
        return ds["gpu_power"].values[run].min()

    assert peak(capped) < peak(free) and trough(capped) == pytest.approx(trough(free), rel=0.02)
    assert peak(locked) < peak(free) and trough(locked) < 0.9 * trough(free)
    # the free run's clocks already sag in the July heat; the locked one holds 0.8 throughout
    from powermodel.models.thermal import step_time_factor

    share = free.attrs["compute_share"]
    assert np.all(locked["clock_factor"].values == pytest.approx(0.8))
    tokens = locked["throughput"].values[run].mean() / free["throughput"].values[run].mean()
    clock = free["clock_factor"].values[run].astype(float)
    expected = (1 / step_time_factor(0.8, share)) / np.mean(1 / step_time_factor(clock, share))
    assert tokens == pytest.approx(expected, rel=1e-3)


def test_ramp_limit_within_an_iteration_throttles_and_costs_throughput():
    cells = np.where(np.arange(4096) < 2458, 700.0, 350.0)  # 60/40 square over a 6 s step
    limited = mitigation.smooth_periodic(cells, 6.0, 1000.0, 1000.0, 0.0)
    dcell = 6.0 / 4096
    assert np.abs(np.diff(limited)).max() <= 1000.0 * dcell * (1 + 1e-9)
    # the rise takes 0.35 s at 1,000 W/s: a triangle of 0.5·350·0.35 J short of demand, made
    # up at 700 - 350 W above the trough: 0.175 s more a 6 s step
    assert mitigation.throttled_share(limited, cells) == pytest.approx(0.175 / 6.0, rel=0.02)


def test_battery_energy_balance_soc_limits_and_cycles():
    sc = load_scenario(
        REFERENCE,
        {
            "simulation.duration": "12h",
            "reliability.rate_scale": 3.0,
            "mitigation.storage": [
                {"location": "site", "power": 6.0, "energy": 0.5, "efficiency": 0.88, "tau": "2min"}
            ],
        },
    )
    ds = simulate(sc)
    unit = sc.mitigation.storage[0]
    dt = float(ds.attrs["dt"])
    hours = dt / 3600.0
    p = ds["bess_power"].values
    eta = np.sqrt(unit.efficiency)
    losses = (np.clip(p, 0, None) * (1 / eta - 1) + np.clip(-p, 0, None) * (1 - eta)).sum() * hours
    stored = (ds["bess_soc"].values[-1] - unit.soc_initial) * unit.energy
    grid = ds["grid_power"].sum().item() * hours
    facility = ds["facility_power"].sum().item() * hours
    # what the grid delivers = what the site used + what the battery lost + what it kept
    assert grid == pytest.approx(facility + losses + stored, rel=1e-6)
    soc = ds["bess_soc"].values
    assert soc.min() >= unit.soc_min - 1e-12 and soc.max() <= unit.soc_max + 1e-12
    assert soc.min() == pytest.approx(unit.soc_min, abs=1e-6)  # this small battery hits its floor
    assert np.abs(p).max() <= unit.power + 1e-12
    cost = costs(sc, simulate(load_scenario(sc, {"mitigation.storage": []})), ds)
    cycles = np.abs(p).sum() * hours / 2 / unit.energy / 0.5  # per day of a 12 h run
    assert cost["storage_cycles_per_day"] == pytest.approx(cycles)
    assert cycles > 1


def test_rack_batteries_only_where_the_hardware_has_them():
    # GB300 power shelves store energy [P, nvidia_gb300_power]; an H100 rack has none to configure
    rack = {"location": "rack", "power": 3.0, "energy": 0.05, "tau": "10s"}
    with pytest.raises(PowerModelError, match="has no energy storage"):
        load_scenario(REFERENCE, {"mitigation.storage": [rack]})
    over = {
        **QUIET,
        "simulation.duration": "1h",
        "cluster.gpu": "GB300",
        "cooling.plant": "liquid-dry-cooler",
    }
    free = simulate(load_scenario(REFERENCE, over))
    shelved = simulate(load_scenario(REFERENCE, {**over, "mitigation.storage": [rack]}))
    run = free["job_state"].values == State.RUNNING

    def swing(ds):  # peak-to-peak of the running IT power, past the battery's first minutes
        return np.ptp(ds["it_power"].values[run][600:])

    assert swing(shelved) < 0.8 * swing(free)
    assert np.abs(shelved["rack_storage_power"].values).max() <= 3.0 + 1e-12
