"""A whole run measured in blocks (issue 13): ``metrics`` and ``check`` read an in-memory run
in cache-sized blocks through the streamed accumulators. Checked here against whole-array
references written out in the test (the statistics of ``powermodel.models.signal`` over the
whole signal, the causes decided over the whole run), with blocks small enough that hundreds
of cuts fall inside windows, filters' memories, checkpoints and violations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import REFERENCE

from powermodel import analysis, load_scenario, metrics, simulate
from powermodel.analysis import max_swing, ramps, step_seconds
from powermodel.models import signal
from powermodel.models.events import State
from powermodel.rules import check, load_rules, measure
from powermodel.rules.measurement import _STATE_CODE, LABELS, _attribute, _judgeable, _warm_up
from powermodel.rules.median import _histogram, _medians, _running_median

# 2 days at 1 s, failures three times as often, variation on; and a day of 99,968 GPUs, whose
# iteration swing alone breaks ERCOT's and IESO's limits (where the plant's moves are blamed on
# the weather): between them every cause occurs
TWO_DAYS = {
    "simulation.duration": "2d",
    "reliability.rate_scale": 3.0,
    "workload.variation": {"step_cv": 0.05},
}
LARGE = {"simulation.duration": "1d", "reliability.rate_scale": 3.0, "cluster.n_gpus": 99968}
EVENTS = {"failure", "restart", "checkpoint", "maintenance"}
BLAMED = {"two days": EVENTS, "99,968 GPUs": EVENTS | {"iteration swing", "weather"}}
RULES = "ercot-5s,nprr1191,ieso,caiso-10min,atc-5s,aeso-1min"


@pytest.fixture(scope="module")
def two_days():
    return simulate(load_scenario(REFERENCE, TWO_DAYS))


@pytest.fixture(scope="module", params=["two days", "99,968 GPUs"])
def runs(request, two_days):
    if request.param == "two days":
        return request.param, two_days
    return request.param, simulate(load_scenario(REFERENCE, LARGE))


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of 1,009 samples (a prime: cuts fall at every phase of the iterations)."""
    monkeypatch.setattr(analysis, "BLOCK_STEPS", 1009)


def test_blocks_cover_the_run_once_with_the_next_sample(two_days, small_blocks):
    size = two_days.sizes["time"]
    pieces = list(analysis.blocks(two_days, ("grid_power", "cooling_power"), least=2000))
    starts = [at for _, at, _ in pieces]
    assert starts == list(range(0, size, 2000))  # least wins over a smaller block
    joined = np.concatenate([c["cooling_power"] for c, _, _ in pieces])
    np.testing.assert_array_equal(joined, two_days["cooling_power"].values)
    for (columns, at, after), nxt in zip(pieces, pieces[1:] + [None], strict=True):
        assert columns["time"][0] == two_days["time"].values[at]
        if nxt is None:
            assert after is None
        else:
            assert after["grid_power"][0] == nxt[0]["grid_power"][0]


def test_metrics_in_blocks_are_the_whole_arrays(two_days, small_blocks):
    ds, dt = two_days, 1.0
    got = metrics(ds)
    grid, it = ds["grid_power"].values, ds["it_power"].values
    running = ds["job_state"].values == State.RUNNING
    running[1:-1] &= running[:-2] & running[2:]  # running samples either side
    exact = {
        "it_peak_mw": it.max(),
        "it_min_mw": it.min(),
        "it_swing_5s_mw": max_swing(it, dt),
        "grid_peak_mw": grid.max(),
        "grid_min_mw": grid.min(),
        "grid_swing_5s_mw": max_swing(grid, dt),
        "grid_swing_5s_training_mw": max_swing(grid, dt, where=running),
        "facility_peak_mw": ds["facility_power"].values.max(),
        "grid_voltage_swing_5s_pct": 100.0 * max_swing(ds["grid_voltage"].values, dt),
        **{f"grid_ramp_1min_{k}_mw": v for k, v in ramps(grid, dt, 60.0).items()},
    }
    for key, value in exact.items():  # maxima and minima are exact however the run is cut
        assert got[key] == value, key
    it_mwh = signal.energy(it, dt)
    summed = {
        "it_energy_mwh": it_mwh,
        "grid_energy_mwh": signal.energy(grid, dt),
        "grid_mean_mw": grid.mean(),
        "pue": signal.energy(ds["facility_power"].values, dt) / it_mwh,
        "cooling_energy_mwh": signal.energy(ds["cooling_power"].values, dt),
        "wue_l_per_kwh": ds["water_use"].values.astype(float).sum() * dt / (it_mwh * 1000.0),
        "grid_reactive_mean_mvar": ds["grid_reactive_power"].values.mean(),
    }
    for key, value in summed.items():  # sums added block by block, not pairwise: 1e-12
        assert got[key] == pytest.approx(value, rel=1e-12), key
    assert got["unexpected_interruptions"] == int((ds["event_kind"] == "unexpected").sum())


def _whole(ds, rule, limit, lookback):
    """One rule's samples over the limit and their causes, over the whole run at once."""
    dt = step_seconds(ds)
    x = ds[rule.signal].values
    value = measure(x, rule, dt)
    if rule.averaging:  # the first readings average fewer samples
        value[: lookback - 1] = -np.inf
    state = ds["job_state"].values
    code = _STATE_CODE[state]
    np.minimum(code[:-1], code[1:], out=code[:-1])  # an interval holds the next state's start
    warm = _warm_up(ds, dt)
    restart = code == _STATE_CODE[State.RAMP]
    code[signal.rolling_max(restart, warm + 1)] = _STATE_CODE[State.RAMP]
    checkpoint = state == State.CHECKPOINT
    stalled = checkpoint.copy()
    stalled[1:] |= checkpoint[:-1]
    stalled[:-1] |= checkpoint[1:]
    held = np.where(stalled, np.median(x[state == State.RUNNING]), x)
    plant = rule.signal in ("grid_power", "facility_power")
    over = value > limit
    cause = _attribute(
        signal.rolling_min(code, lookback + 1),
        over,
        limit,
        lambda: measure(held, rule, dt),
        lambda: measure(x - ds["cooling_power"].values, rule, dt) if plant else value,
    )
    return value, np.where(over, cause, -1).astype(np.int8)


def test_verdicts_in_blocks_are_the_whole_runs(runs, small_blocks):
    name, ds = runs
    chosen = load_rules(RULES)
    results = check(ds, chosen)
    assert len(results) == len(chosen)
    size, dt = ds.sizes["time"], step_seconds(ds)
    blamed = set()
    for result in results:
        rule = result.rule
        limit, lookback = _judgeable(rule, ds, size, dt, ds.attrs["registered_demand"])
        value, cause = _whole(ds, rule, limit, lookback)
        at = int(np.argmax(value))
        assert (result.worst, result.worst_time) == (value[at], ds["time"].values[at]), rule.name
        counts = np.bincount(cause[cause >= 0], minlength=len(LABELS))
        seconds = {str(LABELS[c]): float(counts[c] * dt) for c in np.flatnonzero(counts)}
        assert result.seconds_by_cause == seconds, rule.name
        # each run of samples over the limit with one cause, and its worst value
        edges = np.flatnonzero(np.diff(cause)) + 1
        first, stop = np.r_[0, edges], np.r_[edges, cause.size]
        kept = cause[first] >= 0
        first, stop = first[kept], stop[kept]
        times, labels = ds["time"].values, LABELS[cause[first]]
        expected = pd.DataFrame(
            {
                "start": times[first],
                "end": times[stop - 1],
                "worst": [value[a:b].max() for a, b in zip(first, stop, strict=True)],
                "cause": pd.Categorical(labels, categories=LABELS),
            }
        )
        pd.testing.assert_frame_equal(result.violations, expected, check_dtype=False)
        runs = pd.Series(labels, dtype=object).value_counts()
        assert result.by_cause == runs.to_dict(), rule.name
        assert list(result.by_cause.values()) == sorted(runs, reverse=True)  # most first
        blamed |= set(result.by_cause)
    # the cuts fell among violations of every cause (and the checkpoints' running median)
    assert blamed == BLAMED[name]
    assert sum(len(r.violations) for r in results) > 1000


@pytest.mark.parametrize("size", [10_001, 10_000])  # an odd and an even count of running
def test_the_streamed_median_is_numpys_in_memory_bounded_by_distinct_values(size, monkeypatch):
    # a plateau's values repeat: the middle bucket's values are kept once with their counts,
    # merged when over a bound (here 50, so that merging happens many times)
    from powermodel.rules.median import _Tally

    monkeypatch.setattr(_Tally, "MERGE", 50)
    rng = np.random.default_rng(3)
    x = np.round(24.0 + rng.normal(scale=0.02, size=size), 4)  # few distinct values
    state = np.where(rng.random(size) < 0.9, State.RUNNING, State.CHECKPOINT).astype(np.int8)
    x[state != State.RUNNING] = 1e3  # not running: not counted

    def pieces():
        for at in range(0, size, 997):
            yield {"grid_power": x[at : at + 997], "job_state": state[at : at + 997]}, at, None

    histograms: dict = {}
    for columns, _, _ in pieces():
        _histogram(histograms, columns, {"grid_power"})
    median = _medians(pieces, histograms, {"grid_power"})["grid_power"]
    assert median == np.median(x[state == State.RUNNING])
    assert np.isnan(_medians(pieces, {}, {"grid_power"})["grid_power"])  # never running


def test_a_signal_with_nan_is_held_at_the_median_a_streamed_run_finds(monkeypatch):
    # the streamed run's histograms (_medians) are the reference: they order NaN past the
    # infinities and give a number where np.median gives NaN; an in-memory check takes theirs
    from powermodel import rules

    ds = simulate(load_scenario(REFERENCE, {**TWO_DAYS, "simulation.duration": "1d"}))
    state = ds["job_state"].values
    assert (state == State.CHECKPOINT).any()
    running = state == State.RUNNING
    grid = ds["grid_power"].values.copy()
    grid[np.flatnonzero(running)[:3]] = np.nan
    ds["grid_power"] = ("time", grid, ds["grid_power"].attrs)
    seen: dict = {}
    use = rules.StreamedCheck.use_medians
    monkeypatch.setattr(
        rules.StreamedCheck, "use_medians", lambda self, m: (seen.update(m), use(self, m))[1]
    )
    rules.check_each(ds, load_rules("ieso"))

    def pieces():
        yield {"grid_power": grid, "job_state": state}, 0, None

    histograms: dict = {}
    _histogram(histograms, {"grid_power": grid, "job_state": state}, {"grid_power"})
    expected = _medians(pieces, histograms, {"grid_power"})["grid_power"]
    assert np.isfinite(expected) and seen["grid_power"] == expected
    assert _running_median(grid, running) is None
    assert _running_median(ds["it_power"].values, running) == np.median(
        ds["it_power"].values[running]
    )


def test_a_streamed_runs_chunks_measured_in_small_pieces_are_the_whole_runs(monkeypatch):
    # a streamed run's chunks (10,007 steps) cut into pieces of 1,009 (the last of a chunk
    # longer), against the whole run in memory in its own blocks: every verdict to the bit
    from powermodel.rules import check_each
    from powermodel.stream import Measures, stream

    scenario = load_scenario(REFERENCE, {**TWO_DAYS, "simulation.duration": "1d"})
    ds = simulate(scenario)
    expected, refused = check_each(ds, load_rules(RULES))
    totals = metrics(ds)
    monkeypatch.setattr(analysis, "BLOCK_STEPS", 1009)
    measures = Measures(load_rules(RULES))
    stream(scenario, None, chunk=10_007, measures=measures)
    assert not refused and not measures.refused
    for mine, theirs in zip(measures.results, expected, strict=True):
        assert (mine.worst, mine.worst_time) == (theirs.worst, theirs.worst_time)
        pd.testing.assert_frame_equal(mine.violations, theirs.violations)
        assert mine.seconds_by_cause == theirs.seconds_by_cause
    for key in ("grid_swing_5s_training_mw", "grid_ramp_1min_range_mw", "it_peak_mw"):
        assert measures.metrics[key] == totals[key], key
    assert measures.metrics["grid_energy_mwh"] == pytest.approx(totals["grid_energy_mwh"], 1e-12)


@pytest.mark.parametrize("kind", ["range", "net_change", "band range", "average_slope per minute"])
def test_readings_made_at_some_samples_are_the_whole_pieces(kind):
    # issue 30: a rule's statistics less the plant and held at the median are made only at the
    # samples read (powermodel.piecewise: Chained.some); each reading is the stage's own over
    # the whole piece (__call__), to the bit: whole windows read alone, the others (the run's
    # first samples, NaN, many read) from the piece's filter, pieces cut inside windows
    from powermodel.piecewise import Chained, Filtered, Scaled, ramp_stages

    rng = np.random.default_rng(30)
    for trial in range(40):
        n = int(rng.integers(2, 30))
        stages = {
            "range": lambda n=n: ramp_stages(n)["range"],
            "net_change": lambda n=n: ramp_stages(n)["net_change"],
            "band range": lambda n=n: Chained(Filtered(0.1, 0.1, 55.0), ramp_stages(n)["range"]),
            "average_slope per minute": lambda n=n: Chained(
                ramp_stages(n)["average_slope"], Scaled(60.0, 7.0)
            ),
        }[kind]
        sizes = rng.integers(2 * n + 1, 8 * n, rng.integers(1, 6))
        x = rng.normal(size=int(sizes.sum()))
        if trial % 5 == 0:
            x[rng.integers(0, x.size)] = np.nan
        whole, some, at = stages(), stages(), 0
        for size in sizes:
            piece = x[at : at + size]
            expected = whole(piece, at)
            index = np.sort(rng.choice(size, size=int(rng.integers(0, size)), replace=False))
            found = some.some(piece, at)(index)
            assert expected[index].tobytes() == np.asarray(found, np.float64).tobytes()
            at += size
