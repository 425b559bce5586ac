"""The orchestrated simulation: calibration, validation, conservation, reproducibility."""

from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import REFERENCE, TWO_DAYS
from numpy.testing import assert_allclose

from powermodel import load_scenario, metrics, simulate
from powermodel.calibration import exposure_gpu_hours
from powermodel.engine.derive import derive
from powermodel.engine.timeline import recoveries, timeline
from powermodel.models.events import State

N_SEEDS = 200


@pytest.fixture(scope="module")
def seeds():
    """Timelines of the reference 54 days for 200 seeds (the timeline is what the counts test)."""
    base = load_scenario(REFERENCE)
    n_causes = len(base.reliability.causes)
    lines = [timeline(load_scenario(base, {"simulation.seed": s})) for s in range(N_SEEDS)]
    return base, n_causes, lines


def test_calibration_reproduces_llama3_interruption_counts(seeds):
    # Calibration: Llama 3 paper, 54-day snapshot: 419 unexpected, 47 planned interruptions.
    base, n_causes, lines = seeds
    unexpected = np.array([np.count_nonzero(line.event_cause < n_causes) for line in lines])
    planned = np.array([np.count_nonzero(line.event_cause == n_causes) for line in lines])
    assert unexpected.mean() == pytest.approx(419, abs=5)
    assert planned.mean() == pytest.approx(47, abs=3)
    # Poisson spread: standard deviation about √419 ≈ 20.
    assert unexpected.std() == pytest.approx(np.sqrt(419), rel=0.2)


def test_calibration_shares_by_cause_follow_table_5_counts(seeds):
    # Llama 3 paper, Table 5: share = count / 419 (not the misprinted 30.1 % for faulty GPUs).
    base, n_causes, lines = seeds
    causes = np.concatenate([line.event_cause for line in lines])
    unexpected = causes[causes < n_causes]
    total = unexpected.size
    for index, cause in enumerate(base.reliability.causes):
        expected = cause.count / 419
        share = np.count_nonzero(unexpected == index) / total
        stderr = np.sqrt(expected * (1 - expected) / total)
        assert abs(share - expected) < 3 * stderr, cause.name
    faulty = np.count_nonzero(unexpected == 0) / total
    assert faulty == pytest.approx(148 / 419, abs=0.01)
    assert abs(faulty - 0.301) > 0.04


def test_prediction_effective_training_time_above_90_percent(seeds):
    # Prediction, not fitted: Llama 3 paper reports "higher than 90 % effective training time".
    _, _, lines = seeds
    ett = np.array([line.effective_training_time for line in lines])
    assert ett.mean() > 0.90
    assert np.median(ett) > 0.90


def test_stored_exposure_is_the_calibration_result():
    sc = load_scenario(REFERENCE)
    assert sc.reliability.exposure_gpu_hours == pytest.approx(exposure_gpu_hours(sc), rel=1e-6)


def test_young_daly_interval_in_whole_steps():
    sc = load_scenario(REFERENCE)
    d = derive(sc)
    mtbf = 1.0 / d.rates[:-1].sum()  # unexpected interruptions only: planned ones lose no work
    # Young (1974) √(2·MTBF·C), C = 5,670 GB / 2,000 GB/s = 2.835 s; rounded to whole steps.
    assert d.checkpoint_stall == pytest.approx(2.835)
    assert d.checkpoint_interval == pytest.approx(np.sqrt(2 * mtbf * 2.835), abs=d.step_time / 2)
    assert d.checkpoint_interval / d.step_time == pytest.approx(
        round(d.checkpoint_interval / d.step_time), abs=1e-9
    )


@pytest.fixture(scope="module")
def week():
    """Two days at 1 s, checkpoints a day apart: failures interrupt long running stretches."""
    # Server fans at nominal speed and leakage independent of temperature: the plateaus then
    # isolate the GPU and node changes from the weather's (tested in test_facility.py).
    sc = load_scenario(REFERENCE, {**TWO_DAYS, "gpu.leakage_coefficient": 0.0})
    return sc, simulate(sc)


def _running_gpu_power(sc):
    """Per-GPU power averaged over an iteration [W]: compute at TDP (Choukse et al.), communication
    30 % lower (Ko & Zhu Table I), the preset's shares. Edges are centred, so they keep the mean."""
    shares = np.array([p.share for p in sc.workload.phases])
    levels = np.where([p.kind == "compute" for p in sc.workload.phases], 1.0, 1.0 - 0.30)
    return float(shares @ levels) * sc.gpu.tdp


def _psu(dc, sc):
    x = dc / sc.cluster.psu.capacity
    load, eff = np.array(sc.cluster.psu.load), np.array(sc.cluster.psu.efficiency)
    return dc + sc.cluster.psu.capacity * np.interp(x, load, load * (1 / eff - 1))


def test_failure_drops_it_power_to_stalled_then_idle(week):
    sc, ds = week
    t = (ds["time"].values - ds["time"].values[0]) / np.timedelta64(1, "s")
    power = ds["it_power"].values
    state = ds["job_state"].values
    events = (ds["event_time"].values - ds["time"].values[0]) / np.timedelta64(1, "s")
    unexpected = events[
        (ds["event_kind"].values == "unexpected")
        & (ds["event_cause"].values != "NCCL watchdog timeouts")
    ]
    # the first failure preceded by 10 minutes of uninterrupted running
    fail = next(
        e for e in unexpected if e > 700 and np.all(state[(t >= e - 600) & (t < e - 1)] == 0)
    )
    before = power[(t >= fail - 600) & (t < np.floor(fail))]
    stall, restart = sc.stall_time, sc.reliability.restart_time
    stalled = power[(t >= np.ceil(fail)) & (t < np.floor(fail + stall))]
    idle = power[(t >= np.ceil(fail + stall)) & (t < np.floor(fail + stall + restart))]
    # Constant levels, reached in the first whole second after each transition (times: the
    # layout's 60 s teardown across nodes [A], restart_time 8 min [D, kokolis], from the preset).
    assert np.ptp(stalled) < 1e-9 and np.ptp(idle) < 1e-9
    assert stalled.size == pytest.approx(stall, abs=1) and idle.size == pytest.approx(
        restart, abs=1
    )

    gpu = _running_gpu_power(sc)
    per_gpu = gpu - sc.gpu.stalled  # 631.75 W → 150 W (the H100 catalogue's stalled level [A])
    n, per_node = sc.cluster.n_gpus, sc.cluster.gpus_per_node
    gpu_drop = ds["gpu_power"].values
    assert np.mean(gpu_drop[(t >= fail - 600) & (t < np.floor(fail))]) - gpu_drop[
        (t >= np.ceil(fail)) & (t < np.floor(fail + stall))
    ].mean() == pytest.approx(n * per_gpu / 1e6, rel=0.01)
    # At the rack input: the same change through the server supplies (80 PLUS Titanium curve);
    # the rest of each node stays at its active power while the job is stalled.
    node_run = per_node * gpu + sc.cluster.rest_power_active
    node_stalled = per_node * sc.gpu.stalled + sc.cluster.rest_power_active
    expected = n / per_node * (_psu(node_run, sc) - _psu(node_stalled, sc)) / 1e6
    drop = before.mean() - stalled.mean()
    assert drop == pytest.approx(expected, rel=0.01)
    # Issue 2 asked for at least 8 MW here, with the 80 PLUS Titanium floor's losses (8.10 MW);
    # with the supplies' measured losses (AC/DC 1.021 [D, mlperf_training_v4_smc]) it is 7.99 MW:
    # still more than the GPUs' own DC drop, which the supplies' losses can only add to
    assert n * per_gpu / 1e6 < drop < 1.03 * n * per_gpu / 1e6
    # then to idle: GPUs at idle, the rest of each node at its idle power
    node_idle = per_node * sc.gpu.idle + sc.cluster.rest_power_idle
    assert stalled.mean() - idle.mean() == pytest.approx(
        n / per_node * (_psu(node_stalled, sc) - _psu(node_idle, sc)) / 1e6, rel=0.01
    )


def test_restart_ramp_follows_the_start_up_ramp(week):
    sc, ds = week
    state, power = ds["job_state"].values, ds["it_power"].values

    def ramps():
        inside = state == State.RAMP
        starts = np.flatnonzero(inside & ~np.roll(inside, 1))
        return [power[s + 1 : s + int(sc.workload.startup_ramp) - 1] for s in starts]

    first, *later = ramps()
    assert later, "the two days should contain a restart"
    slope = np.diff(first).mean()
    # linear ramp from loaded to running mean over the start-up ramp time
    for ramp in later:
        assert_allclose(np.diff(ramp), slope, rtol=0.01)
    loaded = power[(state == State.LOADING)][1]
    assert slope * sc.workload.startup_ramp == pytest.approx(
        power[state == State.RUNNING].mean() - loaded, rel=0.1
    )


def test_energy_same_at_100ms_and_1min():
    # Principle 2 (docs/model/index.md): interval means make energy exact at any dt (PSU curve on).
    base = {"simulation.duration": "6h", "simulation.seed": 11, "reliability.rate_scale": 20.0}
    fine = simulate(load_scenario(REFERENCE, {**base, "simulation.dt": "100ms"}))
    coarse = simulate(load_scenario(REFERENCE, {**base, "simulation.dt": "1min"}))
    assert fine.sizes["time"] == 216000 and coarse.sizes["time"] == 360
    assert len(fine["event_time"]) > 5  # the window holds failures and restarts, not just running
    e_fine = metrics(fine)["it_energy_mwh"]
    e_coarse = metrics(coarse)["it_energy_mwh"]
    assert e_coarse == pytest.approx(e_fine, rel=1e-3)
    assert e_coarse == pytest.approx(e_fine, rel=1e-9)  # exact up to rounding
    # and the PSU losses are in it: rack input exceeds the DC sum of GPUs
    assert np.all(fine["it_power"].values > fine["gpu_power"].values)
    # the 1-min means are the means of the 100-ms ones
    assert_allclose(
        fine["it_power"].values.reshape(360, 600).mean(axis=1), coarse["it_power"].values, rtol=1e-9
    )


def test_same_seed_same_bytes_other_seed_other_failures():
    over = {"simulation.duration": "2d"}
    a = simulate(load_scenario(REFERENCE, over))
    b = simulate(load_scenario(REFERENCE, over))
    assert a.identical(b)
    c = simulate(load_scenario(REFERENCE, {**over, "simulation.seed": 1}))
    assert not np.array_equal(a["event_time"].values[:3], c["event_time"].values[:3])


def test_failure_times_do_not_depend_on_dt():
    over = {"simulation.duration": "2d", "simulation.seed": 5}
    a = simulate(load_scenario(REFERENCE, {**over, "simulation.dt": "1s"}))
    b = simulate(load_scenario(REFERENCE, {**over, "simulation.dt": "1h"}))
    assert np.array_equal(a["event_time"].values, b["event_time"].values)
    assert float(a["effective_training_time"]) == float(b["effective_training_time"])
    # Goodput also follows the weather through the plant, whose step is cooling.dt (1 min) or dt,
    # the coarser: at any dt up to the plant step it is the same.
    c = simulate(load_scenario(REFERENCE, {**over, "simulation.dt": "1min"}))
    assert float(c["goodput"]) == pytest.approx(float(a["goodput"]), rel=1e-12)


def test_dataset_has_units_names_and_the_scenario():
    sc = load_scenario(REFERENCE, {"simulation.duration": "1h"})
    ds = simulate(sc)
    for name, units in [("gpu_power", "MW"), ("it_power", "MW"), ("throughput", "token/s")]:
        assert ds[name].attrs["units"] == units
        assert ds[name].attrs["long_name"]
    assert ds["job_state"].dtype == np.int8
    assert ds["job_state"].attrs["flag_meanings"].split()[0] == "running"
    assert ds.sizes["time"] == 3600
    assert load_scenario(type(sc).model_validate(json.loads(ds.attrs["scenario"]))) == sc
    assert ds.attrs["site_timezone"] == "America/New_York"
    # running throughput: 16M tokens per 6.13 s step, the compute part stretched by the clock
    state = ds["job_state"].values
    running = (state == State.RUNNING) & (np.roll(state, 1) == State.RUNNING)
    running &= np.roll(state, -1) == State.RUNNING  # whole seconds of training
    share, clock = ds.attrs["compute_share"], ds["clock_factor"].values[running]
    nominal = 16 * 2**20 / ds.attrs["step_time"]
    assert_allclose(
        ds["throughput"].values[running],
        nominal / (share / clock + 1 - share),
        rtol=1e-6,  # clock_factor is stored in float32
    )


def test_throughput_integral_matches_goodput_plus_lost_work():
    sc = load_scenario(REFERENCE, {"simulation.duration": "3d", "simulation.seed": 2})
    ds = simulate(sc)
    processed = ds["throughput"].values.sum() * 1.0
    # lost work priced at the training rate when it was lost (the clock of that plant minute)
    at = ((ds["event_time"].values - ds["time"].values[0]) // np.timedelta64(1, "s")).astype(int)
    share, clock = ds.attrs["compute_share"], ds["clock_factor"].values[at].astype(float)
    rate = 16 * 2**20 / ds.attrs["step_time"] / (share / clock + 1 - share)
    lost = np.sum(ds["event_lost_work"].values * rate)
    assert processed - lost == pytest.approx(float(ds["goodput"]), rel=1e-6)


def test_node_power_matches_newkirk_measurement():
    # Validation, not fitted: Newkirk et al. measured intensive training at 76 % of the 10.2 kW
    # rating of an 8 × H100 node; rest_power_active came from Latif's 8.4 kW peak instead.
    sc = load_scenario(REFERENCE)
    node = _psu(8 * _running_gpu_power(sc) + sc.cluster.rest_power_active, sc)
    assert node / 10200 == pytest.approx(0.76, abs=0.02)
    # and the peak (all GPUs at TDP) is Latif's 8.4 kW
    assert _psu(8 * 700 + sc.cluster.rest_power_active, sc) == pytest.approx(8400, rel=0.01)


# --- defaults at four cluster sizes: one node, one rack, 512 GPUs, 16K GPUs ---------------------

SIZES = (8, 32, 512, 16_384)  # one node, one rack of four nodes, a 512-GPU cluster, the reference


def at_size(n_gpus: int, **over) -> object:
    """The reference at ``n_gpus`` for a quiet 10 minutes; below 16,384 GPUs the 6·N·D step of a
    405e9 model at Llama 3's 16M-token batch leaves the model's bounds, so the reference's own
    step (6.13 s [D, llama3]) is given. These tests hold the step and the phases' shares at the
    reference's to test per-GPU levels: without the parallel layout, which would move the shares
    with the size (tests/test_layout.py) and refuses one node or one rack (less than one of its
    128-GPU replicas)."""
    step = {} if n_gpus == 16_384 else {"workload.step_time": "6.13s"}
    base = {
        "simulation.duration": "10min",
        "reliability.rate_scale": 0.0,
        "workload.parallelism": None,
    }
    return load_scenario(REFERENCE, {"cluster.n_gpus": n_gpus, **base, **step, **over})


@pytest.mark.parametrize("n_gpus", SIZES)
def test_storage_and_network_scale_with_the_job(n_gpus):
    # [A] in the preset: storage 15.26 W a GPU (the 0.25 MW assumed before, over 16,384 GPUs) at
    # every size, where the constant 0.25 MW added 31 kW a GPU on one node and 490 W at 512; the
    # scale-out fabric, 30 W a GPU, only when the job spans nodes (one node's GPUs use NVLink).
    sc = at_size(n_gpus)
    bare = load_scenario(sc, {"cluster.storage_power_per_gpu": 0.0, "cluster.network_power": 0.0})
    per_gpu = (simulate(sc)["it_power"] - simulate(bare)["it_power"]).values * 1e6 / n_gpus
    assert_allclose(per_gpu, 0.25e6 / 16_384 + (30.0 if n_gpus > 8 else 0.0), rtol=1e-9)


@pytest.mark.parametrize("n_gpus", SIZES)
@pytest.mark.parametrize(
    ("params", "level"), [(405e9, 1.0), (8e9, 0.64 + 0.36 * np.log(8) / np.log(405))]
)
def test_running_level_follows_the_model_not_the_cluster(n_gpus, params, level):
    # compute phases at the power cap for the 405e9 reference [P, choukse]; log-linear in model
    # size down to 0.64 of TDP at 1e9 parameters [A] (from [D, mlperf_training_v4]): 0.765 for 8e9
    # (the reference's 6.13-s step given: an 8e9 model at 16M tokens a step is 0.12 s on 16K GPUs)
    sc = at_size(n_gpus, **{"workload.model_params": params, "workload.step_time": "6.13s"})
    assert sc.compute_power == pytest.approx(level, rel=1e-12)
    ds = simulate(sc)
    running = ds["job_state"].values == State.RUNNING
    # the running mean: compute 67.5 % of the step at the level, communication 30 % lower
    # [P, ko_zhu]; temperature moves it by its leakage only (within 2 %)
    expected = n_gpus * level * 700.0 * (0.675 + 0.325 * 0.7) / 1e6
    assert ds["gpu_power"].values[running].mean() == pytest.approx(expected, rel=0.02)


@pytest.mark.parametrize("n_gpus", SIZES)
def test_start_up_holds_memory_above_idle_before_the_first_iteration(n_gpus):
    # [A] 2 min from launch to the checkpoint read (BootSeer: start-up takes minutes at
    # production scale [P, bootseer]), at 0.15 of TDP (105 W: above the H100's 80 W idle, below
    # its 150 W stalled level); then the 5,670 GB checkpoint read at 2 TB/s [P, llama3], 2.8 s
    sc = at_size(n_gpus)
    ds = simulate(sc)
    state, gpu = ds["job_state"].values, ds["gpu_power"].values
    starting = np.flatnonzero(state == State.STARTING)
    assert starting[0] == 0 and starting.size == 120
    assert_allclose(gpu[starting], n_gpus * 105.0 / 1e6, rtol=1e-9)
    loading = np.flatnonzero(state == State.LOADING)
    assert loading[0] == 120 and loading.size == pytest.approx(5670 / 2000, abs=1)
    assert np.all(state[: 120 + 3 + 10] != State.RUNNING)  # then the 10-s ramp [A]


@pytest.mark.parametrize("n_gpus", SIZES)
def test_teardown_depends_on_the_layout(n_gpus):
    # one node: the launcher's worker check, 5 s [P, nvidia_resiliency]; across nodes the
    # survivors wait for their collectives to fail, 60 s [A]; a given stall_time wins; the NCCL
    # watchdog cause keeps its own 10 min [P, pytorch]
    expected = 5.0 if n_gpus == 8 else 60.0
    for over, stall in (({}, expected), ({"reliability.stall_time": "30s"}, 30.0)):
        sc = at_size(n_gpus, **over)
        steps = recoveries(sc, derive(sc))
        faulty_gpu = steps[0].steps  # Table 5's first cause [P, llama3]
        assert faulty_gpu[0] == (State.STALLED, stall)
        watchdog = next(i for i, c in enumerate(sc.reliability.causes) if "watchdog" in c.name)
        assert steps[watchdog].steps[0] == (State.STALLED, 600.0)
        # the restart that follows: 8 min idle [D, kokolis], then the start-up, read and ramp
        assert [s for s, _ in faulty_gpu] == [
            State.STALLED,
            State.FAILED_IDLE,
            State.STARTING,
            State.LOADING,
            State.RAMP,
        ]


@pytest.mark.parametrize("dt", [0.005, 0.01, 1 / 3, 1.0, 7.0, 60.0, 3600.0, 7200.0])
def test_hour_starts_are_the_steps_where_the_hour_of_each_step_rises(dt):
    # The reference: the hour of every step, (step · dt) // 3600, and where it rises; the
    # search near where each hour is due must find the same steps (a 2-h step skips hours)
    from powermodel.engine.series import hour_starts

    rng = np.random.default_rng(int(dt * 1000))
    for _ in range(20):
        lo = int(rng.integers(0, 10_000_000 if dt < 1 else 100_000))
        n = int(rng.integers(1, 400_000 if dt < 1 else 20_000))
        hour = ((lo + np.arange(n)) * dt // 3600).astype(np.int64)
        expected = lo + 1 + np.flatnonzero(np.diff(hour))
        np.testing.assert_array_equal(hour_starts(lo, lo + n, dt), expected)
