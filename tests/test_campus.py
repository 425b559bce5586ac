"""Campuses: several workloads behind one connection, each the scenario's job with its own
keys, their IT power summed before the site's facility and connection (issue 14).

Expected values are the model's own conservation laws and statistics: a sum of independent
jobs' swings grows as the square root of their number; aligned identical jobs add exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from powermodel import load_scenario, metrics, simulate
from powermodel.analysis import part
from powermodel.engine.facility import design_day, design_it_power
from powermodel.engine.preflight import check_memory
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.rules import check, load_rules
from powermodel.simulate import memory_estimate

REFERENCE = "llama3-405b-16k-h100"


def _campus(aligned: bool, duration: str = "2d", dt: str = "1s", **extra):
    workloads = [{"name": "a"}, {"name": "b"}]
    return load_scenario(
        REFERENCE,
        {
            "simulation.duration": duration,
            "simulation.dt": dt,
            "campus": {"aligned": aligned, "workloads": workloads},
            **extra,
        },
    )


def _swing_5s(values: np.ndarray, steps: int) -> float:
    """Worst rolling peak-to-peak over ``steps`` samples."""
    window = np.lib.stride_tricks.sliding_window_view(values, steps)
    return float((window.max(axis=1) - window.min(axis=1)).max())


@pytest.fixture(scope="module")
def week():
    """One job and two identical ones, independent and aligned, a week at 100 ms."""
    base = {"simulation.duration": "7d", "simulation.dt": "100ms"}
    return {
        "one": simulate(load_scenario(REFERENCE, base)),
        "independent": simulate(_campus(False, "7d", "100ms")),
        "aligned": simulate(_campus(True, "7d", "100ms")),
    }


def test_independent_jobs_add_their_variance(week):
    one, pair = week["one"].it_power.values, week["independent"].it_power.values
    # independent: variances add, so the standard deviation grows by √2 (within 5 %: each job
    # draws its own failures, so their variances differ a little)
    assert_allclose(pair.std() / one.std(), np.sqrt(2.0), rtol=0.05)
    # energy: the total is its workloads' sum exactly, each about the one job's (their own
    # failures: 57 against ~50 in the week)
    parts = week["independent"].workload_it_power.values
    assert_allclose(pair.sum(), parts.sum(), rtol=1e-12)
    assert_allclose(pair.sum() / one.sum(), 2.0, rtol=0.01)
    # independent swings partly cancel: the worst 5-s swing is less than twice one job's
    assert _swing_5s(pair, 50) < 1.9 * _swing_5s(one, 50)


def test_aligned_identical_jobs_add_exactly(week):
    one, pair = week["one"], week["aligned"]
    # the same draws and start: every step of the IT and GPU power is twice one job's
    for name in ("it_power", "gpu_power", "throughput"):
        assert_allclose(pair[name].values, 2.0 * one[name].values, rtol=1e-12)
    assert_allclose(
        _swing_5s(pair.it_power.values, 50), 2.0 * _swing_5s(one.it_power.values, 50), rtol=1e-12
    )
    assert_allclose(float(pair.goodput), 2.0 * float(one.goodput), rtol=1e-12)
    # at the connection too: the site is sized for both (design IT power twice one job's), so
    # losses, cooling and misc loads are each twice one job's site
    assert_allclose(pair.grid_power.values, 2.0 * one.grid_power.values, rtol=1e-9)


def test_workloads_are_dimensions_that_sum_to_the_totals():
    scenario = load_scenario(
        REFERENCE,
        {
            "simulation.duration": "1d",
            "campus": {
                "workloads": [
                    {"name": "pretrain"},
                    {
                        "name": "gb300",
                        "set": {
                            "cluster.gpu": "GB300",
                            "cluster.n_gpus": 4096,
                            "workload.tokens_per_step": 4194304,
                            "reliability.scope": "replica",
                        },
                    },
                ]
            },
        },
    )
    ds = simulate(scenario)
    assert list(ds.workload.values) == ["pretrain", "gb300"]
    for name in ("gpu_power", "it_power", "throughput"):
        assert_allclose(ds[f"workload_{name}"].sum("workload").values, ds[name].values, rtol=1e-12)
    assert ds.workload_gpus.values.tolist() == [16384, 4096]
    # the site is sized for both: design IT power is the sum of the workloads'
    parts = scenario.parts
    assert_allclose(design_it_power(scenario), sum(design_it_power(p) for p in parts))
    # each event is its workload's, and goodput sums
    assert set(ds.event_workload.values) <= {"pretrain", "gb300"}
    assert_allclose(float(ds.goodput), ds.workload_goodput.values.sum(), rtol=1e-12)
    assert 0 < float(ds.effective_training_time) <= 1
    # facility >= IT, PUE >= 1 over the campus
    assert np.all(ds.facility_power.values >= ds.it_power.values)


@pytest.mark.parametrize(
    ("workloads", "message"),
    [
        ([{"name": "a", "set": {"cooling.plant": "liquid-tower"}}], "the site's"),
        ([{"name": "a", "set": {"mitigation.storage": []}}], "batteries"),
        ([{"name": "a"}, {"name": "a"}], "repeats"),
        # 100 GPUs are a job of 96 and 4 idle (tests/test_any_count.py); 4 are under a node
        ([{"name": "a", "set": {"cluster.n_gpus": 4}}], "'a'.*less than one node of 8"),
        ([], "at least 1"),
    ],
)
def test_a_campus_refuses_what_cannot_be(workloads, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(REFERENCE, {"campus": {"workloads": workloads}})


def test_halls_have_their_own_plants_and_add_up_to_the_site():
    halls = [
        {"name": "hopper"},
        {"name": "blackwell", "set": {"cooling.plant": "liquid-dry-cooler"}},
    ]
    gb200 = {"cluster.gpu": "GB200", "cluster.n_gpus": 8192, "workload.tokens_per_step": 8388608}
    workloads = [{"name": "a"}, {"name": "b", "hall": "blackwell", "set": gb200}]
    scenario = load_scenario(
        REFERENCE,
        {"simulation.duration": "1d", "campus": {"halls": halls, "workloads": workloads}},
    )
    # each workload is built in its hall: the GB200 job on the liquid plant
    assert [p.cooling.type for p in scenario.parts] == ["outside-air-evaporative", "liquid"]
    ds = simulate(scenario)
    for key in ("it_power", "cooling_power", "facility_power"):
        assert_allclose(ds[f"hall_{key}"].sum("hall").values, ds[key].values, rtol=1e-12)
    # a hall's IT power is its workloads'
    assert_allclose(
        ds.hall_it_power.sel(hall="blackwell").values,
        ds.workload_it_power.sel(workload="b").values,
        rtol=1e-12,
    )
    assert list(ds.workload_hall.values) == ["hopper", "blackwell"]
    # the site's design day adds the halls' plants at their workloads' nameplate
    day = design_day(scenario)
    one = design_day(scenario.halls[0], nameplate=design_it_power(scenario.parts[0]))
    two = design_day(scenario.halls[1], nameplate=design_it_power(scenario.parts[1]))
    assert_allclose(day["peak_facility_mw"], one["peak_facility_mw"] + two["peak_facility_mw"])


@pytest.mark.parametrize(
    ("campus", "message"),
    [
        ({"halls": [{"name": "h", "set": {"cluster.n_gpus": 8}}]}, "not a hall's"),
        ({"halls": [{"name": "h"}, {"name": "h"}]}, "repeats"),
        ({"halls": [{"name": "h"}, {"name": "empty"}]}, "no workload runs there"),
        ({"workloads": [{"name": "a", "hall": "nowhere"}]}, "no hall 'nowhere'"),
    ],
)
def test_a_hall_that_cannot_be_is_refused(campus, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(REFERENCE, {"campus": {"workloads": [{"name": "a"}], **campus}})


def test_a_part_reads_as_a_run_and_the_parts_add_up():
    # a workload or a hall as a run of its own: metrics, rules and exports read it
    ds = simulate(load_scenario("mixed-campus-hopper-blackwell", {"simulation.duration": "6h"}))
    workloads = [part(ds, workload=str(w)) for w in ds.workload.values]
    halls = [part(ds, hall=str(h)) for h in ds.hall.values]
    for parts in (workloads, halls):
        for name in ("it_power", "facility_power", "cooling_power"):
            assert_allclose(sum(p[name].values for p in parts), ds[name].values, rtol=1e-12)
    chat = workloads[3]
    assert_allclose(chat.it_power.values, ds.workload_it_power.sel(workload="chat").values)
    assert chat.event.size == 0 and float(chat.effective_training_time) == 1.0
    llama = workloads[0]
    assert llama.event.size == int((ds.event_workload.values == "llama3-405b").sum())
    assert_allclose(metrics(llama)["it_mean_mw"], ds.workload_it_power.values[0].mean())
    assert "workload" not in llama.dims
    # its voltage: the change its own load makes, less than the whole site's
    own, site = (np.abs(d.grid_voltage.values - 1.0).max() for d in (chat, ds))
    assert 0 < own < site
    with pytest.raises(PowerModelError, match="one workload or one hall"):
        part(ds)
    with pytest.raises(PowerModelError, match="no workload 'x'.*choose one of"):
        part(ds, workload="x")


@pytest.mark.parametrize(
    ("campus", "message"),
    [
        ({"workloads": [{"name": "f", "kind": "inference"}]}, "training workload at least"),
        (
            {"workloads": [{"name": "a", "set": {"mitigation": {"storage": []}}}]},
            "mitigation.storage",
        ),
        (
            {"halls": [{"name": "h", "set": {"cooling.dt": "5min"}}], "workloads": [{"name": "a"}]},
            "cooling.dt",
        ),
    ],
)
def test_a_campus_refuses_more_that_cannot_be(campus, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(REFERENCE, {"campus": campus})


def test_the_sites_rack_batteries_are_shared_by_nameplate():
    battery = {"location": "rack", "power": 3.0, "energy": 0.05}
    base = {"cluster.gpu": "GB300", "mitigation.storage": [battery], "simulation.duration": "2h"}
    pair = {"aligned": True, "workloads": [{"name": "a"}, {"name": "b"}]}
    one = simulate(load_scenario(REFERENCE, base))
    two = simulate(load_scenario(REFERENCE, {**base, "campus": pair}))
    # the same 3 MW battery in front of twice the racks: each workload's half of it
    assert_allclose(one.rack_storage_power.values.max(), 3.0)
    assert_allclose(two.rack_storage_power.values.max(), 3.0)


def test_the_rules_attribute_a_swing_to_the_workload_that_made_it():
    # the big job never stops; the small one fails and checkpoints: the campus's job_state is
    # its workloads' strongest at each instant, so the small job's failures are failures
    quiet = {"reliability.rate_scale": 0.0, "reliability.planned_count": 0}
    small = {"cluster.n_gpus": 12288, "workload.tokens_per_step": 12582912}
    small["reliability.rate_scale"] = 5.0
    campus = {"workloads": [{"name": "big"}, {"name": "small", "set": small}]}
    ds = simulate(
        load_scenario(REFERENCE, {"simulation.duration": "1d", **quiet, "campus": campus})
    )
    states = ds.workload_job_state.values
    started = np.argmax(states[0] == 0)  # after the big job's first start it never stops
    assert np.all(states[0][started:] == 0) and np.any(states[1] == 3)  # the small one fails
    failing = (states[1] == 3) & (np.arange(states.shape[1]) >= started)
    assert failing.any() and np.all(ds.job_state.values[failing] == 3)
    (result,) = check(ds, load_rules("ercot-5s"))
    assert result.by_cause.get("failure", 0) > 0 and result.by_cause.get("restart", 0) > 0


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"campus": {"workloads": [{"name": "a"}, {"name": "a\u0000"}]}}, "control character"),
        ({"campus": {"workloads": [{"name": "  "}]}}, "blank"),
        ({"reliability.spare_nodes": 10_000_000}, "more than the job's 2,048 nodes"),
        (
            {"campus": {"workloads": [
                {"name": f"w{i}", "set": {"cluster.n_gpus": 9_999_360,
                                           "workload.tokens_per_step": 10_239_344_640}}
                for i in range(2)
            ]}},
            "more than 10,000,000",
        ),
    ],
)  # fmt: skip
def test_labels_spares_and_the_campus_size_are_bounded(overrides, message):
    with pytest.raises(ScenarioError, match=message):
        load_scenario(REFERENCE, overrides)


def test_a_nested_set_table_merges_key_by_key():
    # {"mitigation": {"clock_lock": 0.8}} sets the lock alone, as "mitigation.clock_lock" does
    scenario = load_scenario(
        REFERENCE,
        {
            "mitigation.power_cap": 600.0,
            "campus": {"workloads": [{"name": "a", "set": {"mitigation": {"clock_lock": 0.8}}}]},
        },
    )
    (part,) = scenario.parts
    assert part.mitigation.power_cap == 600.0 and part.mitigation.clock_lock == 0.8


def test_an_inference_fleets_own_series_count_in_the_memory_refusal():
    fleet = {"name": "b", "kind": "inference", "inference": {"variation_step": "1ms"}}
    scenario = load_scenario(
        REFERENCE, {"simulation.duration": "2d", "campus": {"workloads": [{"name": "a"}, fleet]}}
    )
    # 172.8 M utilisation steps of 160 B
    assert memory_estimate(scenario) > 2.7e10
    with pytest.raises(ScenarioError, match="inference.variation_step"):
        check_memory(scenario, budget=8e9)


def test_a_workloads_part_carries_its_own_job():
    # its step, checkpoints and clock are its own, not the largest job's: the Llama 3 job in
    # the mixed campus reads as the job alone does
    ds = simulate(load_scenario("mixed-campus-hopper-blackwell", {"simulation.duration": "6h"}))
    llama = part(ds, workload="llama3-405b")
    alone = simulate(load_scenario(REFERENCE, {"simulation.duration": "6h"}))
    for key in ("step_time", "checkpoint_interval", "token_rate", "compute_share"):
        assert_allclose(llama.attrs[key], alone.attrs[key], rtol=1e-12)
    assert ds.attrs["step_time"] != llama.attrs["step_time"]  # the campus's: the GB200 job's
    assert_allclose(
        metrics(llama)["throughput_lost_to_heat"],
        metrics(alone)["throughput_lost_to_heat"],
        atol=0.002,  # the same weather on the same plant type; its hall's plant heat differs
    )
