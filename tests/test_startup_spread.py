"""Start-ups of varied length (issue 27, "Stall lengths vary ... Fit their distribution (and the
start-up's) and write it into the scenario as seeded variation"): ``workload.startup_cv`` draws
each start-up's length from a lognormal of mean ``workload.startup_time``, from a seeded stream
of its own, and ``powermodel fit`` writes it from the start-ups a trace shows.

Expected values: the draws' mean and CV are the parameters themselves, within tolerances derived
from the sample size (below); the hashes are the engine's own output, recorded on commit e469096
before the key existed; the fitted spread is the known timeline's own (its start-ups drawn by the
engine, rendered and read through NVML as ``tests/test_fit_timeline.py`` does).
"""

from __future__ import annotations

import hashlib
import tomllib

import numpy as np
import pyarrow.parquet as pq
import pytest
from test_fit_timeline import IDLE_AFTER, IDLE_BEFORE, STARTUP, _board, _fit, _job

from powermodel import load_scenario, simulate
from powermodel.engine.derive import derive
from powermodel.engine.timeline import timeline
from powermodel.errors import ScenarioError
from powermodel.export import write
from powermodel.fit import REFERENCE, fitted_toml
from powermodel.models import events
from powermodel.models.events import State, running_before
from powermodel.scenario import loads_scenario
from powermodel.stream import stream

PRESET = "llama3-405b-16k-h100"
# 4 days with failures (about 80 interruptions), as tests/test_pinned.py's short cases
FAILING = {"simulation.duration": "4d", "reliability.rate_scale": 3.0}
# sha256 (first 16 hex digits) of each timeline's start, state, event_time, event_cause and
# event_lost_work, recorded on commit e469096 (before workload.startup_cv existed)
BEFORE = {
    "failures": ({}, "d376d3c4437e0931"),
    "failures-stalls": ({"checkpoint.blocking_cv": 0.5}, "782ad145ff9cf9ce"),
}


def _digest(line: events.Timeline) -> str:
    h = hashlib.sha256()
    for a in (line.start, line.state, line.event_time, line.event_cause, line.event_lost_work):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _lengths(line: events.Timeline, state: State) -> np.ndarray:
    """The lengths [s] of ``line``'s segments in ``state``, none cut by the run's end."""
    lengths = np.diff(np.append(line.start, line.duration))[:-1]
    return lengths[line.state[:-1] == state]


def _lognormal_kurtosis(cv: float) -> float:
    """Excess kurtosis of a lognormal of coefficient of variation ``cv``. [1]"""
    w = 1.0 + cv**2  # exp(sigma^2)
    return w**4 + 2.0 * w**3 + 3.0 * w**2 - 6.0


def _tolerances(cv: float, n: int) -> tuple[float, float]:
    """Four standard errors of a sample of ``n`` lognormal lengths, relative: of the mean
    (``cv / sqrt(n)``) and of the coefficient of variation (the sample standard deviation's,
    ``sqrt((kurtosis + 2) / n) / 2`` by the delta method on the sample variance, with the
    mean's added in quadrature)."""
    mean = cv / np.sqrt(n)
    spread = np.hypot(0.5 * np.sqrt((_lognormal_kurtosis(cv) + 2.0) / n), mean)
    return 4.0 * mean, 4.0 * spread


@pytest.mark.parametrize("cv", [0.2, 0.5, 1.5])
def test_drawn_start_ups_have_the_given_mean_and_spread(cv):
    # about 20,000 restarts (a failure every 500 s of up time over 1.4e7 s), each a teardown,
    # an idle wait, the start-up (100 s, the length drawn) and the checkpoint read (20 s, fixed)
    starting, reload = 100.0, 20.0
    recovery = events.Recovery(
        (
            (State.STALLED, 5.0),
            (State.FAILED_IDLE, 10.0),
            (State.STARTING, starting),
            (State.LOADING, reload),
        ),
        loses_work=True,
    )
    line = events.job_timeline(
        duration=600.0 * 20_000,
        rates=np.array([1.0 / 500.0]),
        recoveries=[recovery],
        startup=((State.STARTING, starting), (State.LOADING, reload)),
        interval=1e30,
        checkpoint_stall=0.0,
        checkpoint_done=0.0,
        rng=np.random.default_rng(1),
        startup_cv=cv,
        startup_rng=np.random.default_rng(2),
    )
    drawn = _lengths(line, State.STARTING)
    n = drawn.size
    assert n > 15_000
    on_mean, on_cv = _tolerances(cv, n)  # cv 0.5: 1.4 % and 3.9 %; cv 1.5: 4.2 % and 30 %
    assert drawn.mean() == pytest.approx(starting, rel=on_mean)
    assert drawn.std(ddof=1) / drawn.mean() == pytest.approx(cv, rel=on_cv)
    # the rest of each restart is as given: the read, the teardown, the wait
    np.testing.assert_allclose(_lengths(line, State.LOADING), reload, rtol=1e-9)
    np.testing.assert_allclose(_lengths(line, State.FAILED_IDLE), 10.0, rtol=1e-9)
    # the segments follow each other (none of negative length)
    assert np.all(np.diff(line.start) > 0)


@pytest.mark.parametrize("seed", range(20))
def test_the_interruptions_drawn_reach_the_runs_end_with_the_start_ups_as_drawn(seed):
    # the failures' batches are sized by the given start-up length; with start-ups drawn (a CV
    # of 3: most far shorter than their mean, a few far longer) they are drawn on until the
    # last interruption, its start-up as drawn, comes after the run's end, so the job trains
    # after every restart the run holds (a shortfall would leave its last state to the end)
    down, starting, horizon = np.array([100.0]), np.array([100.0]), 2e5
    starts = events._Startups(3.0, np.random.default_rng(seed + 100))
    up, cause, factor = events._draw_interruptions(
        horizon, np.array([0.1]), down, np.random.default_rng(seed), (starting, starts, horizon)
    )
    each = down[cause] + starting[cause] * (factor - 1.0)
    assert factor.size == up.size and np.all(each > 0)
    assert float(np.sum(up + each) - each[-1]) > horizon


def test_the_scenario_key_draws_every_start_up():
    # the preset's job with failures for 30 days: each start-up (the first, each restart after
    # a failure or a planned stop) of mean startup_time (120 s) and CV 0.5
    sc = load_scenario(
        PRESET,
        {"simulation.duration": "30d", "reliability.rate_scale": 5.0, "workload.startup_cv": 0.5},
    )
    line = timeline(sc)
    drawn = _lengths(line, State.STARTING)
    n = drawn.size
    assert n == line.event_time.size + 1  # every interruption restarts, and the first start
    on_mean, on_cv = _tolerances(0.5, n)  # about 900 start-ups: 6.7 % and 18 %
    assert drawn.mean() == pytest.approx(sc.workload.startup_time, rel=on_mean)
    assert drawn.std(ddof=1) / drawn.mean() == pytest.approx(0.5, rel=on_cv)


@pytest.mark.parametrize("case", sorted(BEFORE))
def test_at_zero_the_timeline_is_bit_identical_to_before(case):
    keys, digest = BEFORE[case]
    for extra in ({}, {"workload.startup_cv": 0.0}):  # the default and 0 written out
        line = timeline(load_scenario(PRESET, {**FAILING, **keys, **extra}))
        assert _digest(line) == digest
        assert np.all(_lengths(line, State.STARTING) == 120.0)  # every one startup_time


def test_at_zero_every_output_is_the_defaults():
    short = {"simulation.duration": "1d", "reliability.rate_scale": 5.0, "cooling.dt": "16min"}
    default = simulate(load_scenario(PRESET, short))
    zero = simulate(load_scenario(PRESET, {**short, "workload.startup_cv": 0.0}))
    assert list(zero.data_vars) == list(default.data_vars)
    for name in default.data_vars:
        np.testing.assert_array_equal(zero[name].values, default[name].values, err_msg=name)


def test_drawing_start_ups_leaves_failures_and_stalls_where_they_were():
    keys = {**FAILING, "simulation.duration": "10d", "checkpoint.blocking_cv": 0.5}
    fixed = timeline(load_scenario(PRESET, keys))
    varied = timeline(load_scenario(PRESET, {**keys, "workload.startup_cv": 0.8}))
    starts = _lengths(varied, State.STARTING)
    assert starts.std() > 0.3 * starts.mean()  # the start-ups did vary
    n = min(fixed.event_time.size, varied.event_time.size)  # the last may fall past the end
    assert n > 150
    # the same causes in order, each after the same training (its up time drawn as before)
    np.testing.assert_array_equal(varied.event_cause[:n], fixed.event_cause[:n])
    np.testing.assert_allclose(
        running_before(varied, varied.event_time[:n]),
        running_before(fixed, fixed.event_time[:n]),
        rtol=1e-12,
        atol=1e-6,
    )
    # the same stalls in order, but for the last up period's (the run's end cuts it elsewhere)
    last = varied.start[varied.state == State.STARTING][n - 1]
    a = _lengths(fixed, State.CHECKPOINT)
    b = _lengths(varied, State.CHECKPOINT)
    m = int(np.count_nonzero(varied.start[varied.state == State.CHECKPOINT] < last))
    assert m > 1000
    # the same draws: their lengths differ only by the rounding of differences of later times
    np.testing.assert_allclose(b[:m], a[:m], rtol=1e-9)


def test_a_streamed_run_is_the_in_memory_run_with_varied_start_ups(tmp_path):
    # as tests/test_stream.py: hour-aligned chunks of 10,000 steps that fall anywhere between
    # restarts, each start-up its own length
    sc = load_scenario(
        PRESET,
        {
            "simulation.duration": "1d",
            "reliability.rate_scale": 5.0,
            "cooling.dt": "16min",
            "workload.startup_cv": 0.6,
        },
    )
    ds = simulate(sc)
    state = ds.job_state.values
    begins = np.flatnonzero((state == State.STARTING) & (np.roll(state, 1) != State.STARTING))
    assert begins.size >= 10  # many restarts in the day
    ends = np.flatnonzero((state == State.STARTING) & (np.roll(state, -1) != State.STARTING))
    assert np.ptp(ends - begins) > 30  # their lengths differ by more than 30 steps of 1 s
    whole = pq.read_table(write(ds, tmp_path / "whole.parquet"))
    parts = stream(sc, tmp_path / "parts.parquet", chunk=10_000)
    assert pq.ParquetFile(parts).num_row_groups == 9  # 24 h: 2 h, 7 of 3 h, 1 h: it streamed
    assert pq.read_table(parts).equals(whole, check_metadata=True)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (-0.1, "greater than or equal to 0"),
        (3.5, "less than or equal to 3"),
        (float("nan"), "finite number"),
        (float("inf"), "finite number"),
        ("wide", "valid number"),
        (None, "valid number"),
    ],
)
def test_hostile_values_are_refused_with_the_key_and_the_bound(value, says):
    with pytest.raises(ScenarioError) as refused:
        load_scenario(PRESET, {"workload.startup_cv": value})
    message = str(refused.value)
    assert message.startswith("workload.startup_cv: ") and says in message
    assert "\n" not in message and "Traceback" not in message


def test_the_engine_refuses_a_spread_without_its_stream():
    common = dict(
        duration=1000.0,
        rates=np.zeros(1),
        recoveries=[events.Recovery(((State.FAILED_IDLE, 1.0),), True)],
        startup=((State.STARTING, 10.0),),
        interval=100.0,
        checkpoint_stall=1.0,
        checkpoint_done=1.0,
        rng=np.random.default_rng(0),
    )
    with pytest.raises(ValueError, match="need their startup_rng"):
        events.job_timeline(**common, startup_cv=0.3)
    with pytest.raises(ValueError, match="give 0 or more"):
        events.job_timeline(**common, startup_cv=-1.0, startup_rng=np.random.default_rng(0))


def _restarted_job(n: int, cv: float, seed: int = 5) -> tuple[np.ndarray, np.ndarray, float]:
    """A known timeline of ``n`` start-ups drawn by the engine (mean STARTUP, ``cv``): the job
    starts, and its servers lose power every 450 s (a crash: 30 s idle, then a start-up), a
    checkpoint (20 s) every 40 s of training; it ends mid-training, then idles. Returns (start
    [s], state, span [s])."""
    apart = 450.0
    restart = ((State.FAILED_IDLE, 30.0), (State.STARTING, STARTUP))
    line = events.job_timeline(
        duration=apart * n,
        rates=np.zeros(1),
        recoveries=[events.Recovery(((State.FAILED_IDLE, 1.0),), True)],
        startup=((State.FAILED_IDLE, IDLE_BEFORE), (State.STARTING, STARTUP)),
        interval=40.0,
        checkpoint_stall=20.0,
        checkpoint_done=20.0,
        rng=np.random.default_rng(0),
        crashes=[(apart * k, restart) for k in range(1, n)],
        startup_cv=cv,
        startup_rng=np.random.default_rng(seed),
    )
    last = np.flatnonzero(line.state == State.RUNNING)[-1]
    cut = line.start[last] + 10.0  # the job ends mid-training, then idles
    start = np.append(line.start[: last + 1], cut)
    state = np.append(line.state[: last + 1], State.FAILED_IDLE).astype(np.int64)
    return start, state, cut + IDLE_AFTER


@pytest.mark.parametrize("n", [8, 2])
def test_the_fit_writes_the_spread_of_the_start_ups_it_sees(n):
    start, state, span = _restarted_job(n, 0.4)
    lengths = np.diff(start)
    drawn = lengths[state[:-1] == State.STARTING]
    assert drawn.size == n
    # each start-up goes on into training (none cut by the next crash)
    assert np.all(state[1:][state[:-1] == State.STARTING] == State.RUNNING)
    result = _fit(_board(start, state, span), span)
    q = result.quantities
    assert result.timeline.count(State.LOADING) == n
    # the fit's spread is the drawn start-ups' own (the sample's, ddof 1): each edge placed
    # within half a second of 75-160-s start-ups (as the stalls' in test_fit_timeline.py), so
    # within 3 %. Against the parameter (0.4) a sample of 8 is uncertain by about 40 %
    # (one standard error, a quarter of :func:`_tolerances`), of 2 by about 80 %: what it shows is
    # what is fitted
    cv = drawn.std(ddof=1) / drawn.mean()
    assert q["start-up spread"].value == pytest.approx(cv, rel=0.03)
    assert f"the {n} start-ups' lengths" in q["start-up spread"].how
    assert ("(two: uncertain" in q["start-up spread"].how) == (n == 2)
    assert q["start-up time"].value == pytest.approx(drawn.mean(), abs=0.5)
    # written: the start-up less the preset's checkpoint read, and the spread in seconds over
    # that start-up (the model holds the read fixed), with how many were seen
    text = fitted_toml(result, REFERENCE, "smi.csv")
    raw = tomllib.loads(text)["workload"]
    reload = derive(load_scenario(REFERENCE)).reload_time
    written = drawn.std(ddof=1) / (drawn.mean() - reload)
    assert raw["startup_cv"] == pytest.approx(written, rel=0.03)
    assert f"spread of the {n} start-ups' lengths (lognormal, seeded)" in text
    fitted = loads_scenario(text)
    assert fitted.workload.startup_cv == raw["startup_cv"]
    assert fitted.workload.startup_time == pytest.approx(drawn.mean() - reload, abs=0.5)


def test_one_start_up_writes_no_spread_and_says_so():
    start, state, span = _job(10.0, np.full(4, 30.0))  # tests/test_fit_timeline.py's: one
    result = _fit(_board(start, state, span), span)
    q = result.quantities
    assert q["start-up time"].value == pytest.approx(STARTUP, rel=0.1)
    assert q["start-up spread"].value is None
    assert "1 start-up(s) seen; a spread needs 2" in q["start-up spread"].how
    text = fitted_toml(result, REFERENCE, "smi.csv")
    assert tomllib.loads(text)["workload"]["startup_cv"] == 0.0
    assert "only 1 start-up seen: the spread of start-up lengths is not seen" in text
    assert loads_scenario(text).workload.startup_cv == 0.0


def test_no_whole_start_up_keeps_the_presets_spread_with_why():
    # the log begins inside the start-up: no length, so neither the start-up nor its spread
    start, state, span = _job(10.0, np.full(4, 30.0))
    board = _board(start, state, span)[int(round((IDLE_BEFORE + 60.0) / 0.01)) :]
    result = _fit(board, span - IDLE_BEFORE - 60.0)
    text = fitted_toml(result, REFERENCE, "smi.csv")
    assert "startup_cv" not in tomllib.loads(text).get("workload", {})
    assert "# workload.startup_cv: the preset's value is kept; 0 start-up(s) seen" in text
