"""Step-to-step variation (workload.variation): drawn step lengths and levels, rendered exactly."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REFERENCE
from numpy.testing import assert_allclose, assert_array_equal
from scipy.stats import norm

from powermodel import ScenarioError, load_scenario, simulate
from powermodel.engine.preflight import BYTES_PER_ITERATION, preflight
from powermodel.engine.timeline import timeline
from powermodel.engine.waveform import drawn_steps, with_trained
from powermodel.models import render, signal, variation
from powermodel.models.events import State
from powermodel.simulate import memory_estimate

DAY_100MS = {"simulation.duration": "1d", "simulation.dt": "100ms"}
# Compute at 80 % of TDP: 25 % of headroom, five times the widest level spread drawn here, so
# no step reaches the power limit and none is clipped (the reference computes at TDP).
BELOW_LIMIT = {"workload.compute_power": 0.8}
NO_FAILURES = {"reliability.rate_scale": 0.0, "reliability.planned_count": 0.0}


def rendered(scenario):
    """The rendered means (gpu_power, it_power [MW], the running share at the nominal token
    rate [tokens/s], and with variation the tokens trained [tokens/s]) and the drawn steps."""
    derived, cells, rate = preflight(scenario)
    line = timeline(scenario, derived)
    steps = drawn_steps(scenario, derived, line, cells)
    sim = scenario.simulation
    edges = np.arange(sim.n_steps + 1) * sim.dt
    cumulative = render.cumulative_tables(with_trained(cells, steps is not None))
    means = render.interval_means(
        line.start, line.state.astype(np.int64), rate, cumulative, edges, steps
    )
    return means, steps, line, derived


def step_lengths_and_scales(steps):
    length = np.diff(steps.bound)
    return length, 1.0 + np.diff(steps.level[0]) / length


def training(steps):
    """Which drawn steps train: their token yield ``1/length`` (an evaluation's is 0)."""
    return np.diff(steps.level[1]) + np.diff(steps.bound) > 0.5


def one_stretch(n, seed, **keys):
    """The steps of one running stretch of ``n`` mean steps: lengths, scales, training."""
    count, bound, level = variation.draw_steps(
        np.array([float(n)]), np.array([0]), np.random.default_rng(seed), **keys
    )
    length = np.diff(bound)
    assert bound[-2] < n <= bound[-1]  # the stretch holds its steps, the last cut by its end
    train = np.diff(level[1]) + length > 0.5
    return length, 1.0 + np.diff(level[0]) / length, train


@pytest.mark.parametrize("distribution", ["lognormal", "gamma"])
def test_drawn_step_lengths_have_the_configured_spread(distribution):
    # Closed form: mean-one draws of coefficient of variation cv, nothing renormalised. Sampling
    # error of a mean from n draws: cv/√n; of a standard deviation from n near-normal draws:
    # σ/√(2n) (0.16 % here). Tolerance: 5 standard errors.
    n, cv, level_cv = 200_000, 0.05, 0.02
    length, scale, train = one_stretch(
        n, 1, distribution=distribution, step_cv=cv, level_cv=level_cv
    )
    assert train.all()
    assert length.size == pytest.approx(n, abs=5 * cv * np.sqrt(n) + 1)  # renewal count
    assert length.mean() == pytest.approx(1.0, abs=5 * cv / np.sqrt(n))
    assert length.std() == pytest.approx(cv, rel=5 / np.sqrt(2 * n))
    assert scale.mean() == pytest.approx(1.0, abs=5 * level_cv / np.sqrt(n))
    assert scale.std() == pytest.approx(level_cv, rel=5 / np.sqrt(2 * n))


def test_stragglers_and_evaluations_are_drawn_as_configured():
    # Stragglers: a share p of steps lengthened by d mean steps, the others keep their mean
    # of one. Binomial sampling error of the share: √(p(1−p)/n). Evaluations: every N-th step
    # of the step counter E times as long at the level scale, exactly (no spread here).
    n, p, d, cv = 100_000, 0.02, 1.0, 0.01
    length, _, _ = one_stretch(n, 2, step_cv=cv, straggler_probability=p, straggler_delay=d)
    delayed = length > 1 + d / 2
    assert delayed.mean() == pytest.approx(p, abs=5 * np.sqrt(p * (1 - p) / length.size))
    assert length[~delayed].mean() == pytest.approx(1.0, abs=5 * cv / np.sqrt(length.size))
    every, long, level = 50, 8.0, 0.6
    length, scale, train = one_stretch(
        1000, 3, evaluation_every=every, evaluation_length=long, evaluation_level=level
    )
    evaluating = np.arange(length.size) % every == every - 1
    assert_array_equal(train, ~evaluating)
    assert_allclose(length[evaluating], long, rtol=1e-12)
    assert_allclose(length[~evaluating], 1.0, rtol=1e-12)
    assert_allclose(scale[evaluating], level, rtol=1e-12)
    # 1000 mean steps: 17 cycles of 49 training steps and an evaluation of 8 (969), then 31
    # training steps, the last ending at the stretch's end
    assert length.size == 17 * 50 + 31


def test_stretches_are_drawn_in_one_job_wide_step_coordinate():
    # Each stretch starts a fresh step at its start and holds the steps it starts, the last one
    # cut by its end; a stretch of no length takes none. Steps follow on in one coordinate.
    extent = np.array([3.0, 0.0, 5.5, 1.0])
    count, bound, level = variation.draw_steps(
        extent, np.array([0, 3, 3, 8]), np.random.default_rng(4), step_cv=0.3, level_cv=0.1
    )
    assert bound.size == level.shape[1] == count.sum() + 1
    assert count[1] == 0 and np.all(count[[0, 2, 3]] > 0)
    first = np.cumsum(count) - count
    held = bound[first + count] - bound[first]
    cut = bound[first + count - 1] - bound[first]
    assert np.all(held[count > 0] >= extent[count > 0])
    assert np.all(cut[count > 0] < extent[count > 0])
    assert np.all(np.diff(bound) > 0)


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
    assert_allclose(on[:3], off, rtol=1e-8)
    assert_allclose(on[3], off[2], rtol=1e-8)  # every step trains, at the mean rate


def test_variation_keeps_the_timeline_and_the_energy_at_any_resolution():
    # The timeline is in seconds: the failures' stream and every segment are those of the run
    # without variation; its steps vary within it. The integral is exact at any output step
    # (1 s and 1 min agree to rounding, 1e-9 relative). The levels keep mean one, so the
    # energy is that of the run without variation to the level's sampling error (0.05/√23,600
    # = 3e-4) and the cut step closing each of the ~480 stretches, which runs the opening
    # phases of a step, not its mean: tolerance 3e-3. Stragglers add p·δ = 0.01 mean steps to
    # each training step, so the tokens fall to 1/1.01 (closed form), less what the cut steps
    # take: tolerance 2e-3.
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
    assert_allclose(on[:3].sum(axis=1), off.sum(axis=1), rtol=3e-3)
    assert on[2].sum() == pytest.approx(off[2].sum(), rel=1e-12)  # the running time
    assert on[3].sum() / on[2].sum() == pytest.approx(1 / (1 + 0.02 * 0.5), abs=2e-3)
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
    # (sampling error of 13K steps 0.6 %: tolerance 10 %), and the P99 of all ramps lies
    # between S0 and the largest.
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
    # steps vary only downwards: a training step's scale min(Y, 1), of mean 2Φ(−σ/2) for a
    # lognormal Y of mean one (σ² = ln(1 + cv²)), an evaluation's 0.7·Y (below the limit). In
    # every 59 mean steps 49 train and 10 evaluate, so the running energy's dynamic part (the
    # scales act on it; the leakage follows the die, 92 W a GPU at the nominal die) falls by
    # 1 − (49·2Φ(−σ/2) + 10·0.7)/59 = 6.74 % (closed form), the whole by that times the dynamic
    # share (85 %); sampling error of 3,000 steps at cv 0.05 and the evaluations' count within
    # 6 h (±1 of 60): tolerance 0.3 points.
    base = {"simulation.duration": "6h", "simulation.dt": "100ms", **NO_FAILURES}
    spread = {"workload.variation": {"level_cv": 0.05, "evaluation_every": 50}}
    off, _, _, _ = rendered(load_scenario(REFERENCE, base))
    scenario = load_scenario(REFERENCE, {**base, **spread})
    on, steps, _, _ = rendered(scenario)
    per_gpu = on[0] * 1e6 / scenario.cluster.n_gpus
    assert per_gpu.max() <= scenario.gpu.tdp * (1 + 1e-9)
    _, scale = step_lengths_and_scales(steps)
    assert scale.max() == pytest.approx(1.0, abs=1e-9) and scale.min() < 0.8
    sigma = np.sqrt(np.log1p(0.05**2))
    expected = 1 - (49 * 2 * norm.cdf(-sigma / 2) + 10 * 0.7) / 59
    shares, watts = scenario.phase_powers()
    mean = float(shares @ watts)
    dynamic = (mean - scenario.gpu.leakage(scenario.nominal_die())) / mean
    assert 0.8 < dynamic < 0.9
    assert 1 - on[0].sum() / off[0].sum() == pytest.approx(expected * dynamic, abs=3e-3)
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
    """Largest of ``values`` (on the grid of ``dt`` [s]) within each drawn step that runs
    whole (not the one each stretch's end cuts)."""
    segment = np.repeat(np.arange(steps.count.size), steps.count)
    origin = steps.bound[steps.first[segment]]
    begin = line.start[segment] + (steps.bound[:-1] - origin) * step_time
    cut = np.zeros(begin.size, dtype=bool)
    cut[(steps.first + steps.count - 1)[steps.count > 0]] = True
    index, at = np.unique(
        np.minimum(np.ceil(begin / dt).astype(np.int64), values.size - 1), return_index=True
    )
    return np.maximum.reduceat(values, index)[~cut[at]]


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
        kept = steps.bound.size - 1
        sizes[gpus] = (kept, steps.level.shape, steps.variable.shape, whole)
        drawn[gpus] = memory_estimate(on) - memory_estimate(off)
    assert sizes[8] == sizes[16_384]
    kept, level, variable, whole = sizes[8]
    assert level == (2, kept + 1) and variable == (4, 4097)
    # (86,400 s less the start-up: 2 min, the 2.8-s checkpoint read, the 10-s ramp) / 6 s = 14,378
    assert 14_372 < whole < 14_382
    # the steps run: those lengths at a 2 % spread (±0.02·√14,378 = ±2.4) and a cut step
    # closing each stretch (one a checkpoint interval)
    stretches, spread = np.count_nonzero(steps.count), 5 * 0.02 * np.sqrt(whole)
    assert -spread < kept - whole < stretches + spread
    # what is drawn: a day of 6-s steps, with the margin that covers every stretch
    assert drawn[8] == drawn[16_384]
    assert 14_400 * BYTES_PER_ITERATION < drawn[8] < 1.1 * 14_400 * BYTES_PER_ITERATION


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
    # 2e-9 apart: draws are held at SHORTEST (the coordinate rounds them by 2e-3 of it).
    extent = np.array([10_000_000.0])
    _, bound, level = variation.draw_steps(
        extent, np.array([0]), np.random.default_rng(5), "gamma", step_cv=1.0
    )
    assert np.diff(bound).min() == pytest.approx(variation.SHORTEST, rel=1e-2)
    assert np.all(np.isfinite(level))


def test_training_steps_keep_their_mean_with_evaluations_and_stragglers():
    # The reviewer's cases: evaluations (10 steps every 50) and stragglers (5 % delayed by 3
    # steps) add their time; they used to be taken out of the training steps (0.847 of a step
    # with the evaluations, a median step of 0.88 with the stragglers). A training step keeps
    # mean one (sampling error cv/√n, 5 of them); the undelayed steps' median is the
    # lognormal's, exp(−σ²/2) = 0.9998 at cv 0.02.
    n, cv = 200_000, 0.02
    length, _, train = one_stretch(n, 6, step_cv=cv, evaluation_every=50, evaluation_length=10.0)
    assert length[train].mean() == pytest.approx(1.0, abs=5 * cv / np.sqrt(n))
    assert length[~train].mean() == pytest.approx(10.0, abs=5 * 10 * cv / np.sqrt(n / 50))
    # n mean steps hold n·50/59 steps: (N − 1)/(N − 1 + E) of the time trains (renewal)
    assert train.sum() == pytest.approx(n * 49 / 59, rel=1e-3)
    length, _, train = one_stretch(
        n, 7, step_cv=cv, straggler_probability=0.05, straggler_delay=3.0
    )
    assert train.all()
    plain = length < 2.0
    assert np.median(length[plain]) == pytest.approx(np.exp(-np.log1p(cv**2) / 2), abs=1e-3)
    assert length[plain].mean() == pytest.approx(1.0, abs=5 * cv / np.sqrt(n))
    assert length.mean() == pytest.approx(1.15, abs=5 * np.sqrt(0.05 * 0.95 * 9 / n))


def test_evaluations_keep_the_fundamental_at_the_step_frequency():
    # Closed form: a training step lasts step_time on average, so gpu_power's fundamental stays
    # at 1/step_time with evaluations on (the old renormalisation moved it 18 % up, to
    # 59/50 of it). Welch's resolution at 4-h segments is 7e-5 Hz: tolerance 0.5 %.
    over = {**DAY_100MS, **NO_FAILURES}
    evaluating = {"workload.variation": {"evaluation_every": 50, "evaluation_length": 10.0}}
    ds = simulate(load_scenario(REFERENCE, {**over, **evaluating}))
    base = 1.0 / ds.attrs["step_time"]
    f, density = signal.spectrum(ds["gpu_power"].values, 0.1, segment=4 * 3600)
    near = (f > 0.5 * base) & (f < 1.5 * base)
    assert f[near][np.argmax(density[near])] == pytest.approx(base, rel=5e-3)


def test_tokens_fall_by_the_evaluations_time_share():
    # Closed form (renewal): N − 1 training steps of one mean step and an evaluation of E per
    # cycle, so training takes (N − 1)/(N − 1 + E) of the running time: 49/59 = 0.8305 at
    # N = 50, E = 10, and the tokens and goodput fall to it. Stretches of 23 steps (the
    # reference's checkpoint interval) close with a cut step, an evaluation cut more often
    # (it is longer), and the count of evaluations in two days varies by a few: tolerance 1 %.
    over = {"simulation.duration": "2d", "simulation.dt": "1min", **NO_FAILURES}
    evaluating = {"workload.variation": {"evaluation_every": 50, "evaluation_length": 10.0}}
    off = simulate(load_scenario(REFERENCE, over))
    on = simulate(load_scenario(REFERENCE, {**over, **evaluating}))
    share = on["throughput"].sum() / off["throughput"].sum()
    assert float(share) == pytest.approx(49 / 59, rel=1e-2)
    assert float(on["goodput"] / off["goodput"]) == pytest.approx(float(share), rel=1e-9)
    assert float(on["effective_training_time"]) == float(off["effective_training_time"])


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ({"evaluation_every": 2, "evaluation_length": 1e4}, "evaluation_length"),
        ({"straggler_probability": 0.5, "straggler_delay": 2.0}, "straggler_delay"),
        (
            {"evaluation_every": 10, "evaluation_length": 4.0, "straggler_probability": 0.25},
            "evaluation_every",
        ),
    ],
)
def test_events_that_leave_no_training_are_refused(events, says):
    # evaluation_length/evaluation_every + straggler_probability·straggler_delay above 0.5
    # (here 5000, 1 and 0.4 + 0.25·0.5 = 0.525): refused, naming the keys
    with pytest.raises(ScenarioError, match=says):
        load_scenario(REFERENCE, {"workload.variation": events})
    assert variation.MOST_EVENT_SHARE == 0.5
    fine = {"evaluation_every": 50, "evaluation_length": 10.0, "straggler_probability": 0.05}
    load_scenario(REFERENCE, {"workload.variation": fine})  # 0.2 + 0.025: accepted


def test_a_stretch_that_outlasts_its_draws_runs_on_at_the_mean_step():
    # Should a stretch outlast its drawn steps (a chance below 1e-23 with the draws' margin),
    # its rest runs at the mean step, exactly: flat steps then render as no steps at all (to
    # rounding), and drawn ones agree at 0.1 s and 1 s (the integral is exact at any edge).
    rng = np.random.default_rng(8)
    cells = rng.uniform(1.0, 2.0, (2, 1, 16))
    cumulative = render.cumulative_tables(cells)
    rate, start, shape = np.array([0.5]), np.zeros(1), np.zeros(1, np.int64)  # 2-s steps

    def steps(length, scale):
        bound = np.concatenate(([0.0], np.cumsum(length)))
        level = np.concatenate(([0.0], np.cumsum(length * (scale - 1.0))))[None]
        return render.Steps(
            shape=0,
            first=np.array([0]),
            count=np.array([length.size]),
            bound=bound,
            level=level,
            variable=cumulative[:, 0],
            uses=np.array([0, 0]),
        )

    fine, coarse = np.arange(201) * 0.1, np.arange(21) * 1.0  # 20 s: 10 mean steps
    flat = render.interval_means(
        start, shape, rate, cumulative, fine, steps(np.ones(3), np.ones(3))
    )
    plain = render.interval_means(start, shape, rate, cumulative, fine)
    assert_allclose(flat, plain, rtol=1e-12)
    drawn = steps(np.array([0.7, 1.6, 0.4]), np.array([1.2, 0.8, 1.1]))  # 2.7 of 10 steps
    a = render.interval_means(start, shape, rate, cumulative, fine, drawn)
    b = render.interval_means(start, shape, rate, cumulative, coarse, drawn)
    assert_allclose(a.reshape(2, 20, 10).mean(axis=2), b, rtol=1e-12)
    # closed form: the draws last 2.7 mean steps (5.4 s) of energy Σ s_j·a_j·P̄·2 s; after
    # them the mean step from its phase 0, as the plain render from the start
    split = render.interval_means(start, shape, rate, cumulative, np.array([0.0, 5.4, 20.0]), drawn)
    mean = cells[:, 0].mean(axis=1)
    assert_allclose(split[:, 0] * 5.4, (0.7 * 1.2 + 1.6 * 0.8 + 0.4 * 1.1) * mean * 2, rtol=1e-12)
    rest = render.interval_means(start, shape, rate, cumulative, np.array([0.0, 14.6]))
    assert_allclose(split[:, 1], rest[:, 0], rtol=1e-12)
    assert np.max(np.abs(a - plain)) > 0.01  # the drawn steps are there


def test_leakage_stays_out_of_the_scaled_part():
    # Found by tests/test_hostile.py's hypothesis run: a 0.5 level spread and fans nominal up
    # to a 60 °C inlet (a hot nominal die, 405 W of leakage) drew a cool-die step at a fifth of
    # its activity to -227 W a GPU: the scale acted on the leakage too, which the plant path
    # then took off again. A step's scale acts on the dynamic part; the die sets the leakage.
    hot_nominal = {
        "cluster.fans.temp_nominal": 60.0,
        "workload.variation.level_cv": 0.5,
        "simulation.duration": "10min",
        "simulation.dt": "1s",
    }
    ds = simulate(load_scenario(REFERENCE, hot_nominal))
    assert ds["gpu_power"].values.min() > 0.0
