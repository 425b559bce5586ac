"""The fresh-run prediction of frequent-checkpoint traces (issue 27, acceptance 2 and 3): a
fitted scenario run afresh reproduces its trace's energy, checkpoint count, start-up and running
level; the job ends where the trace's did and idles before its start; a step the sensor cannot
resolve is
written as one it cannot resolve either, a whole number of times in the checkpoint interval,
and adds no swing.

The traces are :mod:`test_fit_timeline`'s: a known timeline (30 s idle, a 110-s start-up, 12
stalls of 16-108 s with 2, 10 or 40 s of training between them, 60 s idle after the job's end)
rendered by the engine at a 0.2-s step and read through NVML's 1-s average every 100 ms with
5 W of noise. They are fitted with the reference preset (its 6.13-s step, six of NVML's windows,
is one the sensor would resolve) and, for the step, also with the known job's 0.2-s step as the
preset (one it would not).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from test_fit_timeline import FINE, IDLE_AFTER, NOISE, POLL, STALLS, STARTUP, _board, _job
from test_fit_timeline import _scenario as _known

from powermodel.engine.derive import derive
from powermodel.fit import REFERENCE, fit_cells, fitted_toml
from powermodel.fit.sensor import RESOLVE_WINDOWS
from powermodel.fit_report import job_end, predict
from powermodel.models import sensors
from powermodel.models.events import State
from powermodel.scenario import load_scenario, loads_scenario
from powermodel.simulate import simulate

INTERVALS = [2.0, 10.0, 40.0]  # s of training between two stalls: 10, 50 and 200 steps
WINDOW = 1.0  # s: NVML's averaging window


@functools.cache
def _fitted(interval: float, preset: str = "reference"):
    """The trace of ``interval`` fitted with ``preset`` (the reference, or the known job's),
    its scenario written, and its prediction; and the trace's own timeline and polls."""
    start, state, span = _job(interval, STALLS)
    board = _board(start, state, span)
    at = np.arange(POLL, span - POLL, POLL)
    seen = sensors.read(board, FINE, "nvml", at=at, held_before=True)
    cells = seen[None, :] + np.random.default_rng(1).normal(0.0, NOISE, (2, at.size))
    base = load_scenario(REFERENCE) if preset == "reference" else _known()[0]
    result = fit_cells(at - at[0], cells, 2, {"source": "smi.csv"}, "nvml", base)
    scenario = loads_scenario(fitted_toml(result, REFERENCE, "smi.csv"))
    return result, scenario, predict(result, scenario), (start - at[0], state)


@pytest.mark.parametrize("preset", ["reference", "known"])
@pytest.mark.parametrize("interval", INTERVALS)
def test_an_unresolved_step_is_written_unresolvable_and_whole_in_the_interval(interval, preset):
    # issue 27: the fit kept the preset's 6.13-s step for a 0.2-s one the 1-s average hides,
    # and the engine rounds the checkpoint interval to whole steps: a 2-s interval ran as one
    # 6.13-s step (the running spells three times the trace's, two checkpoints too few)
    result, scenario, _, _ = _fitted(interval, preset)
    assert not result.quantities["step time"].resolved
    derived = derive(scenario)
    assert derived.step_time < RESOLVE_WINDOWS * WINDOW  # the trace says it is shorter
    assert scenario.checkpoint.interval == pytest.approx(interval, abs=POLL)
    # the interval as written is the interval the engine runs: a whole number of steps
    assert derived.checkpoint_interval == pytest.approx(scenario.checkpoint.interval, abs=1e-6)
    steps = scenario.checkpoint.interval / derived.step_time
    assert steps == pytest.approx(round(steps), abs=1e-3)


@pytest.mark.parametrize("interval", INTERVALS)
def test_the_fresh_run_idles_before_the_job_and_after_its_end(interval):
    # the trace idles 30 s before the start-up and 60 s after the job's end: the fresh run
    # compares over the whole trace, at the fitted idle before the job and after its end
    # (it ran on over the last 60 s at the running level, and began compared at 30 s)
    result, scenario, predicted, _ = _fitted(interval)
    n = predicted.numbers
    assert n["from_s"] == result.times[0] and n["samples"] == np.isfinite(result.power).sum()
    end = job_end(result)
    assert end == pytest.approx(result.timeline.duration - IDLE_AFTER, abs=0.5)
    settled = WINDOW + POLL
    after = result.times > end + settled
    before = result.times < 30.0 - settled - POLL
    for idle in (predicted.power[after], predicted.power[before]):
        np.testing.assert_allclose(idle, scenario.gpu.idle, atol=1e-6)


@pytest.mark.parametrize("interval", INTERVALS)
def test_the_fresh_run_reproduces_the_trace_energy(interval):
    # acceptance 3: within 5 % (measured +1.5, +4.8 and +4.9 %; before, with the fresh run
    # training on over the job's end and its 2-s interval run as one 6.13-s step, +26, +12
    # and +5.2 % with the known job's preset). At the fitted scenario's seed: its 12 stalls
    # drawn afresh (cv 0.64) leave more or less training in the job's span, and over seeds
    # 0-7 the error spreads from -2.4 to +1.6 % at 2 s, -7.8 to +5.3 % at 10 s and -9.0 to
    # +8.1 % at 40 s (the count with it, below)
    _, _, predicted, _ = _fitted(interval)
    assert abs(predicted.numbers["energy_error"]) < 0.05


@pytest.mark.parametrize("interval", INTERVALS)
def test_the_fresh_run_reproduces_the_trace_checkpoint_count(interval):
    # acceptance 3: within one of the 12 stalls the trace shows. One fresh run drew its 12
    # stalls afresh from the fitted lognormal (cv 0.64), whose sum over 12 varies by about
    # 18 %, and the count in the job's span with it (seeds 0-7 at 10 s: +2, -2, +2, -1, -3,
    # -1, +1, +2; measured +2 at 2 and 10 s): the prediction shows the median of five seeds
    _, _, predicted, _ = _fitted(interval)
    assert predicted.numbers["dips_measured"].size == STALLS.size
    assert abs(predicted.numbers["checkpoint_error"]) <= 1


@pytest.mark.parametrize("interval", INTERVALS)
def test_the_fresh_run_reproduces_the_trace_start_up(interval):
    # acceptance 2: the start-up within 10 % of the trace's 110 s, as the same detector
    # measures both (measured 110.9 s; before, 0.85 s: the fresh run was compared from its
    # own start, at 30 s, with no idle before it to tell its start-up from)
    _, _, predicted, _ = _fitted(interval)
    n = predicted.numbers
    assert n["startup_measured_s"] == pytest.approx(STARTUP, rel=0.1)
    assert n["startup_predicted_s"] == pytest.approx(n["startup_measured_s"], rel=0.1)


@pytest.mark.parametrize("interval", INTERVALS)
def test_the_fresh_run_reproduces_the_trace_running_level(interval):
    # within 5 % (acceptance 2's bound; measured -0.5, -0.1 and +0.9 %). Before, -9.0, -8.2
    # and -5.3 %: the phases were written at the running level measured, where they hold at
    # the nominal die (steadily running), and a job stalled most of the time runs its die
    # cooler (about 40 C), so the engine's leakage took 52 W off them again
    _, _, predicted, _ = _fitted(interval)
    assert abs(predicted.numbers["running_error"]) < 0.05


def _spread(times, x, start, state, stop) -> float:
    """Standard deviation [W] of ``x`` at ``times`` [s] about each running segment's mean,
    over the samples whose sensor window lies in a running segment (of the timeline
    ``start``, ``state``) that ends before ``stop`` [s]."""
    seg = np.searchsorted(start, times, side="right") - 1
    ends = np.append(start[1:], np.inf)
    inside = (seg >= 0) & (times >= start[seg] + WINDOW + 2 * POLL) & (times < ends[seg])
    inside &= (state[seg] == State.RUNNING) & (ends[seg] < stop)
    seg, x = seg[inside], x[inside]
    means = np.bincount(seg, x) / np.maximum(np.bincount(seg), 1)
    return float(np.std(x - means[seg]))


@pytest.mark.parametrize("preset", ["reference", "known"])
@pytest.mark.parametrize("interval", [10.0, 40.0])  # 2 s of training: no window settles
def test_an_unresolved_step_adds_no_swing_in_the_fresh_run(interval, preset):
    # issue 27: the fitted model drew a swing the trace does not have. The swing the written
    # step adds is what the fresh run's view holds beyond the same run drawing its running
    # mean flat (the same timeline, seeds and heat: its die's warming, held a plant step at
    # a time, is in both): within each running spell, a small share of the trace's noise
    # (measured at most 0.02 W; before, 0.8 W at 40 s with the reference preset, its 6.13-s
    # step's bounded trough, and 86 W with the known job's, the trough bounded at its 0.2-s
    # step and the 6.13-s one written)
    result, scenario, predicted, (start, state) = _fitted(interval, preset)
    shares, watts = scenario.phase_powers()
    level = float(shares @ watts) / scenario.gpu.tdp
    flat = predict(
        result,
        load_scenario(scenario, {"workload.trough_depth": 0.0, "workload.compute_power": level}),
    )
    run = predicted.scenario
    steps = simulate(run)["job_state"].values
    change = np.flatnonzero(np.diff(steps, prepend=-1))
    made = change * run.simulation.dt + predicted.shift
    stop = job_end(result)
    measured = _spread(result.times, result.power, start, state, stop)
    added = _spread(result.times, predicted.power - flat.power, made, steps[change], stop)
    assert 0.5 * NOISE < measured < 1.0 * NOISE  # the trace's running spells: its noise
    assert added < 0.1 * NOISE
