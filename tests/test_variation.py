"""Step-to-step variation (workload.variation): drawn step lengths and levels, rendered exactly."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REFERENCE
from numpy.testing import assert_allclose, assert_array_equal

from powermodel import ScenarioError, load_scenario, simulate
from powermodel.models import render, signal, variation
from powermodel.models.events import State
from powermodel.simulate import (
    BYTES_PER_ITERATION,
    drawn_steps,
    memory_estimate,
    preflight,
    timeline,
)

DAY_100MS = {"simulation.duration": "1d", "simulation.dt": "100ms"}
# Compute at 80 % of TDP: 25 % of headroom, five times the widest level spread drawn here, so
# no step reaches the power limit and none is clipped (the reference computes at TDP).
BELOW_LIMIT = {"workload.compute_power": 0.8}
NO_FAILURES = {"reliability.rate_scale": 0.0, "reliability.planned_count": 0.0}


def rendered(scenario):
    """The rendered means (gpu_power, it_power [MW], throughput) and the drawn steps."""
    derived, cells, rate = preflight(scenario)
    line = timeline(scenario, derived)
    steps = drawn_steps(scenario, derived, line, cells)
    sim = scenario.simulation
    edges = np.arange(sim.n_steps + 1) * sim.dt
    cumulative = render.cumulative_tables(cells)
    means = render.interval_means(
        line.start, line.state.astype(np.int64), rate, cumulative, edges, steps
    )
    return means, steps, line, derived


def step_lengths_and_scales(steps):
    length = np.diff(steps.bound)
    return length, 1.0 + np.diff(steps.level) / length


@pytest.mark.parametrize("distribution", ["lognormal", "gamma"])
def test_drawn_step_lengths_have_the_configured_spread(distribution):
    # Closed form: mean-one draws of coefficient of variation cv. Sampling error of a standard
    # deviation from n near-normal draws is σ/√(2n) (0.16 % here); renormalising one stretch of n
    # steps to its length moves it by about 1/n. Tolerance: 5 standard errors.
    n, cv, level_cv = 200_000, 0.05, 0.02
    bound, level = variation.draw_steps(
        np.array([n]), np.random.default_rng(1), distribution, step_cv=cv, level_cv=level_cv
    )
    length = np.diff(bound)
    scale = 1.0 + np.diff(level) / length
    assert bound[-1] == n  # the stretch keeps its length exactly
    assert length.mean() == pytest.approx(1.0, rel=1e-12)
    assert length.std() == pytest.approx(cv, rel=5 / np.sqrt(2 * n))
    assert scale.std() == pytest.approx(level_cv, rel=5 / np.sqrt(2 * n))
    assert np.dot(length, scale) == pytest.approx(n, rel=1e-12)  # time-weighted mean level one


def test_stragglers_and_evaluations_are_drawn_as_configured():
    # Stragglers: a share p of steps lengthened by d mean steps; before renormalisation the mean
    # step is 1 + p·d. Binomial sampling error of the share: √(p(1−p)/n). Evaluations: every
    # N-th step E times as long at the level scale, exactly (no length or level spread here).
    n, p, d = 100_000, 0.02, 1.0
    bound, _ = variation.draw_steps(
        np.array([n]),
        np.random.default_rng(2),
        step_cv=0.01,
        straggler_probability=p,
        straggler_delay=d,
    )
    length = np.diff(bound) * (1 + p * d)  # back to drawn units
    delayed = np.mean(length > 1 + d / 2)
    assert delayed == pytest.approx(p, abs=5 * np.sqrt(p * (1 - p) / n))
    every, long, level = 50, 8.0, 0.6
    bound, sums = variation.draw_steps(
        np.array([1000]),
        np.random.default_rng(3),
        evaluation_every=every,
        evaluation_length=long,
        evaluation_level=level,
    )
    length = np.diff(bound)
    scale = 1.0 + np.diff(sums) / length
    evaluating = np.arange(1000) % every == every - 1
    assert_allclose(length[evaluating] / length[~evaluating].mean(), long, rtol=1e-12)
    assert_allclose(scale[evaluating] / scale[~evaluating].mean(), level, rtol=1e-12)


def test_stretches_are_drawn_in_one_job_wide_step_coordinate():
    # Stretch r fills [first_r, first_r + count_r) exactly, stretches without whole steps take none.
    counts = np.array([3, 0, 5, 1])
    bound, level = variation.draw_steps(counts, np.random.default_rng(4), step_cv=0.3, level_cv=0.1)
    assert bound.size == level.size == counts.sum() + 1
    assert_array_equal(bound[[0, 3, 8, 9]], [0.0, 3.0, 8.0, 9.0])
    assert np.all(np.diff(bound) > 0)
    assert_allclose(level[[0, 3, 8, 9]], 0.0, atol=1e-14)  # each stretch's level sum closes


def test_without_spread_the_drawn_steps_render_as_the_mean_step():
    # With no spread every drawn step is the mean step: the stepped integral must give the
    # periodic one (to rounding), including failures that cut steps and checkpoint stretches.
    # Rounding: interval means are differences of running integrals reaching 1e11 tokens by
    # the second day, so they agree to about 1e-9 of their value, not to the last bit.
    base = {"simulation.duration": "2d", "simulation.dt": "1s", "reliability.rate_scale": 3.0}
    off, _, _, _ = rendered(load_scenario(REFERENCE, base))
    flat = {"step_cv": 0.0, "level_cv": 0.0}
    on, steps, _, _ = rendered(load_scenario(REFERENCE, {**base, "workload.variation": flat}))
    assert steps.count.sum() > 20_000  # about 2 days of 6.1-s steps
    assert_allclose(on, off, rtol=1e-8)


def test_variation_keeps_the_timeline_and_the_energy_at_any_resolution():
    # Renormalised per running stretch: the failures' stream, the timeline and every quantity's
    # energy are those of the run without variation (to rounding, 1e-9 relative), and the
    # integral is exact at any output step (1 s and 1 min agree).
    base = {
        "simulation.duration": "2d",
        "simulation.dt": "1s",
        "reliability.rate_scale": 3.0,
        **BELOW_LIMIT,
    }
    spread = {"step_cv": 0.1, "level_cv": 0.05, "straggler_probability": 0.02}
    off, _, line_off, _ = rendered(load_scenario(REFERENCE, base))
    on, _, line_on, _ = rendered(load_scenario(REFERENCE, {**base, "workload.variation": spread}))
    assert_array_equal(line_on.start, line_off.start)
    assert_array_equal(line_on.event_time, line_off.event_time)
    assert line_off.event_time.size > 10  # failures cut running stretches mid-step
    assert_allclose(on.sum(axis=1), off.sum(axis=1), rtol=1e-9)
    assert np.max(np.abs(on[0] - off[0])) > 0.1  # MW: the variation is there
    coarse, _, _, _ = rendered(
        load_scenario(REFERENCE, {**base, "simulation.dt": "1min", "workload.variation": spread})
    )
    assert_allclose(coarse.sum(axis=1) * 60.0, on.sum(axis=1), rtol=1e-9)


def test_a_day_at_100ms_has_a_spread_of_ramps():
    # Reference, failures and checkpoints as usual. Without variation every step is the same:
    # the 1-s down-ramps over steady running windows sit at the iteration's swing S0 up to their
    # 99th percentile. With it each step's level scale a_k multiplies its waveform, so a step's
    # largest down-ramp is a_k·S0 (closed form): their spread is the configured level CV
    # (renormalising each ~40-step stretch lowers it by about 1/80; sampling error of 13K steps
    # 0.6 %: tolerance 10 %), and the P99 of all ramps lies between S0 and the largest.
    level_cv = 0.01
    off = simulate(load_scenario(REFERENCE, {**DAY_100MS, **BELOW_LIMIT}))
    spread = {"workload.variation": {"level_cv": level_cv}}
    scenario = load_scenario(REFERENCE, {**DAY_100MS, **BELOW_LIMIT, **spread})
    on = simulate(scenario)
    down_off, _ = _steady_down_ramps(off)
    down_on, steady = _steady_down_ramps(on)
    _, cells, _ = preflight(scenario)
    swing = np.ptp(cells[0, State.RUNNING])  # MW: the iteration's swing S0
    assert np.percentile(down_off[steady], 99) == pytest.approx(swing, rel=1e-6)
    p99, largest = np.percentile(down_on[steady], 99), down_on[steady].max()
    assert swing * (1 + level_cv) < p99 < largest - 0.01 * swing
    _, steps, line, derived = rendered(scenario)
    per_step = _largest_per_step(down_on * steady, steps, line, derived.step_time, 0.1)
    ratio = per_step[per_step > 0.5 * swing] / swing
    assert ratio.size > 10_000
    assert ratio.std() == pytest.approx(level_cv, rel=0.1)
    assert ratio.mean() == pytest.approx(1.0, abs=1e-3)


def test_no_step_draws_above_the_power_limit_or_below_a_floor():
    # The reference computes at TDP, its limit [P, choukse]: a step cannot draw more, so its
    # steps vary only downwards. Evaluations (every 50 steps, 10 steps long at 0.7) would raise
    # the other steps to keep the energy; the limit holds them, so the run's GPU energy falls,
    # by about 1 − (49 + 10·0.7)/59 = 5 %, and exactly by Σ s_j(a_j − 1) mean-step energies.
    base = {"simulation.duration": "6h", "simulation.dt": "100ms", **NO_FAILURES}
    spread = {"workload.variation": {"level_cv": 0.05, "evaluation_every": 50}}
    off, _, _, _ = rendered(load_scenario(REFERENCE, base))
    scenario = load_scenario(REFERENCE, {**base, **spread})
    on, steps, _, derived = rendered(scenario)
    per_gpu = on[0] * 1e6 / scenario.cluster.n_gpus
    assert per_gpu.max() <= scenario.gpu.tdp * (1 + 1e-9)
    _, scale = step_lengths_and_scales(steps)
    assert scale.max() == pytest.approx(1.0, abs=1e-9) and scale.min() < 0.8
    _, cells, _ = preflight(scenario)
    mean_step = cells[0, State.RUNNING].mean() * derived.step_time  # MW·s
    lost = (off[0].sum() - on[0].sum()) * 0.1  # MW·s
    assert lost == pytest.approx(-steps.level[-1] * mean_step, rel=1e-9)
    assert 0.04 < lost / (off[0].sum() * 0.1) < 0.06
    # Software burn to 90 % of TDP fills every step's trough: nothing goes below it
    floor = {"mitigation.software_burn": 0.9}
    held = load_scenario(REFERENCE, {**base, **spread, **floor})
    on, _, line, _ = rendered(held)
    middle = (np.arange(on.shape[1]) + 0.5) * 0.1
    running = render.state_at(line.start, line.state, middle) == State.RUNNING
    burnt = on[0, running] * 1e6 / held.cluster.n_gpus
    assert burnt.min() >= 0.9 * held.gpu.tdp * (1 - 1e-9)


def _steady_down_ramps(ds):
    """1-s down-ramps [MW] of gpu_power and the windows wholly within running (a sample clear)."""
    p, running = ds["gpu_power"].values, ds["job_state"].values == State.RUNNING
    n = 10  # 1 s at 100 ms
    steady = np.convolve(~running, np.ones(n + 2), "full")[1 : p.size + 1] == 0
    return -signal.net_change(p, n), steady


def _largest_per_step(values, steps, line, step_time, dt):
    """Largest of ``values`` (on the grid of ``dt`` [s]) within each drawn step."""
    segment = np.repeat(np.arange(steps.count.size), steps.count)
    begin = line.start[segment] + (steps.bound[:-1] - steps.first[segment]) * step_time
    index = np.unique(np.minimum(np.ceil(begin / dt).astype(np.int64), values.size - 1))
    return np.maximum.reduceat(values, index)


@pytest.mark.parametrize("cv", [0.05, 0.1])
def test_the_step_line_broadens_as_a_diffusing_phase(cv):
    # Closed form [D; S, demir]: independent step lengths of CV c make the step count a random
    # walk, Var N(t) = c²·t/T, so the fundamental's phase diffuses and its line is a Lorentzian of
    # half width γ = π·c²/T [Hz]. Its power within ±γ of the line is then 1/2 of the total, and
    # within ±10γ 2/π·atan(10) = 0.937: measured ratio 0.534 expected. Welch's Hann window
    # (4-h segments, γ ≥ 18 bins) and the non-Lorentzian pedestal of a stretched waveform move
    # it by a few %: tolerance 10 %. Without variation the line lies within ±γ (ratio > 0.99).
    over = {**DAY_100MS, **NO_FAILURES}
    off = simulate(load_scenario(REFERENCE, over))
    on = simulate(
        load_scenario(REFERENCE, {**over, "workload.variation": {"step_cv": cv, "level_cv": 0.0}})
    )
    period = on.attrs["step_time"]
    half_width = np.pi * cv**2 / period
    expected = 0.5 / (2 / np.pi * np.arctan(10.0))

    def share(ds):
        f, density = signal.spectrum(ds["gpu_power"].values, 0.1, segment=4 * 3600)
        near = np.abs(f - 1.0 / period)
        return density[near <= half_width].sum() / density[near <= 10 * half_width].sum()

    assert share(on) == pytest.approx(expected, rel=0.1)
    assert share(off) > 0.99


def test_the_cost_does_not_grow_with_gpus():
    # The steps are drawn once for the job: 8 and 16,384 GPUs at the same step time and
    # timeline draw the same number of steps and the same tables, and expect the same memory
    # (the reference's fixed phase shares: its layout would move the step with the GPUs).
    plain = {
        **NO_FAILURES,
        "simulation.duration": "1d",
        "simulation.dt": "1min",
        "workload.step_time": "6s",
        "workload.parallelism": None,
    }
    drawn, sizes = {}, {}
    for gpus in (8, 16_384):
        off = load_scenario(REFERENCE, {**plain, "cluster.n_gpus": gpus})
        on = load_scenario(off, {"workload.variation": {}})
        _, steps, line, _ = rendered(on)
        whole = int(line.running_time // 6.0)  # the running day after start-up, in 6-s steps
        sizes[gpus] = (steps.bound.size - 1, steps.level.size - 1, steps.variable.shape, whole)
        drawn[gpus] = memory_estimate(on) - memory_estimate(off)
    assert sizes[8] == sizes[16_384]
    assert sizes[8][:3] == (sizes[8][3], sizes[8][3], (3, 4097))
    # (86,400 s less the start-up: 2 min, the 2.8-s checkpoint read, the 10-s ramp) / 6 s = 14,378
    assert 14_372 < sizes[8][3] < 14_382
    assert drawn[8] == drawn[16_384] == pytest.approx(14_400 * BYTES_PER_ITERATION, rel=1e-9)


def test_without_variation_no_steps_are_drawn():
    assert load_scenario(REFERENCE).workload.variation is None
    scenario = load_scenario(REFERENCE, {"simulation.duration": "1h"})
    derived, cells, _ = preflight(scenario)
    assert drawn_steps(scenario, derived, timeline(scenario, derived), cells) is None


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        ("step_cv", 2.0, "step_cv"),
        ("distribution", "normal", "distribution"),
        ("evaluation_every", 1, "evaluation_every"),
        ("level_cv", -0.1, "level_cv"),
    ],
)
def test_bad_variation_keys_are_refused_by_name(key, value, says):
    with pytest.raises(ScenarioError, match=says):
        load_scenario(REFERENCE, {"workload.variation": {key: value}})


def test_the_widest_spread_keeps_every_step_positive():
    # Gamma of CV 1 is exponential: of 10 M draws about 10 fall below 1e-6 of a step (the
    # chance that none does is e^-10), and near 1e7 steps the job's step coordinate cannot tell
    # 2e-9 apart: draws are held at SHORTEST (renormalising scales them by 1 ± 1e-3).
    counts = np.array([10_000_000])
    bound, level = variation.draw_steps(counts, np.random.default_rng(5), "gamma", step_cv=1.0)
    assert np.diff(bound).min() == pytest.approx(variation.SHORTEST, rel=1e-2)
    assert np.all(np.isfinite(level))
