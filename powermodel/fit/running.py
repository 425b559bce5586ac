"""The running state's shape: step time, compute share, compute and communication
levels, edge duration and the step-to-step spread (:func:`_running_shape`, through
:mod:`powermodel.fit.fold`); and where the trace does not resolve the step, the step written
instead and the trough depth bounded so that the written iteration swings no more than the trace
(:func:`_unresolved_step`). A stage of :func:`powermodel.fit.pipeline._quantities`, between
the held levels and the timing.
"""

from __future__ import annotations

import math

import numpy as np

from powermodel.durations import format_duration
from powermodel.engine.derive import derive
from powermodel.fit.fold import (
    FOLD_BINS,
    FOLD_SAMPLES,
    ITERATION_CELLS,
    _aliased,
    _best_period,
    _chain_spectrum,
    _coarse_period,
    _fold,
    _interior,
    _seen_through,
    _square_fit,
    _stands_out,
    _stands_out_inside,
)
from powermodel.fit.result import Quantity
from powermodel.fit.sensor import RESOLVE_WINDOWS, StepResponse
from powermodel.fit.states import EDGE_SHARE, _noise
from powermodel.fit.timeline import Timeline, _between_stalls, _neighbours, _segment_of
from powermodel.models import workload
from powermodel.models.events import State
from powermodel.scenario import Scenario

# The golden ratio: a step a sensor that samples instantly does not resolve is written one
# sampling period over it, whose samples sweep the iteration's phase most evenly
GOLDEN = (1.0 + math.sqrt(5.0)) / 2.0
# An unresolved step's swing is the running samples' spread about their rolling mean over this
# many of the written steps (and this long at least): a slower drift is no step's
TREND_STEPS = 5
TREND_MIN = 30.0  # s


def _running_samples(
    times: np.ndarray, x: np.ndarray, line: Timeline, response: StepResponse
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples to fold, away from the chain's memory of the state before: those of the running
    segments that begin at a step boundary (after a checkpoint), whose phases line up; or, with
    none, of the longest running segment alone. Times [s], values and each one's segment start
    [s] (the phase origin), the longest segments first up to :data:`FOLD_SAMPLES`."""
    ends = np.append(line.start[1:], line.duration)
    prev, _ = _neighbours(line.state)
    running = line.state == State.RUNNING
    use = running & (prev == State.CHECKPOINT)
    seg = _segment_of(line, times)
    settled = (times >= line.start[seg] + response.settle) & (times < ends[seg]) & np.isfinite(x)
    if not np.any(use[seg] & settled) and running.any():
        use = np.arange(line.state.size) == np.argmax(np.where(running, ends - line.start, -1))
    ok = use[seg] & settled
    order = np.argsort(-(ends - line.start)[seg[ok]], kind="stable")[:FOLD_SAMPLES]
    chosen = np.sort(np.flatnonzero(ok)[order])
    return times[chosen], x[chosen], line.start[seg[chosen]]


def _step_spread(
    t: np.ndarray,
    x: np.ndarray,
    origin: np.ndarray,
    step: float,
    mid: float,
    sigma: float,
    slope: float,
) -> tuple[float, float]:
    """Step-to-step coefficients of variation of the step's length and of its mean level.

    Each step runs from one rising crossing of the swing's midpoint to the next within a running
    segment (a crossing within half a step of the one before is the noise's, and dropped). The
    spreads are those of the steps' lengths and mean levels less what the noise alone gives: a
    timing jitter ``σ / slope`` at each crossing, ``σ² / n`` on a mean of ``n`` samples.
    """
    y = x - mid
    up = np.flatnonzero((y[:-1] < 0) & (y[1:] >= 0) & (origin[:-1] == origin[1:]))
    when = t[up] + -y[up] / (y[up + 1] - y[up]) * (t[up + 1] - t[up])
    # the first crossing of each cluster is kept (a trace may cross none: no mask of one)
    first = np.ones(up.size, bool)
    first[1:] = (np.diff(when) > 0.5 * step) | (origin[up][1:] != origin[up][:-1])
    up, when = up[first], when[first]
    same = origin[up][1:] == origin[up][:-1]
    gap = np.diff(when)
    one = same & (gap < 1.5 * step)  # a whole step, none missed between
    if np.count_nonzero(one) < 5:
        return np.nan, np.nan
    gap = gap[one]
    jitter = 2.0 * (sigma / slope) ** 2 if slope > 0 else 0.0
    length_cv = np.sqrt(max(np.var(gap) - jitter, 0.0)) / np.mean(gap)
    c = np.concatenate(([0.0], np.cumsum(x)))
    n = np.diff(up)[one]
    level = (c[up[1:] + 1] - c[up[:-1] + 1])[one] / n
    level_cv = np.sqrt(max(np.var(level) - np.mean(sigma**2 / n), 0.0)) / np.mean(level)
    return float(length_cv), float(level_cv)


def _too_few_to_fold(line: Timeline, n: int) -> str:
    """Why ``n`` running samples were too few to fold, naming the samples that were sought."""
    running = line.state == State.RUNNING
    if not running.any():
        return "no running state seen to fold"
    after = running & np.concatenate(([False], line.state[:-1] == State.CHECKPOINT))
    where = (
        "running after a checkpoint"
        if after.any()
        else "running in the longest running spell (no checkpoint seen)"
    )
    return f"{n:,} settled samples {where}; folding needs {4 * FOLD_BINS:,}"


def _running_shape(q, add, times, x, line, found, response, scenario, mean, stamps=None) -> None:
    """Step time, compute share, levels, edges and step spread of the running state;
    ``stamps`` the samples as stamped (:func:`_aliased`), the grid's when None. A sensor that
    samples instantly averages nothing: its hold between reports is no window, and a step of
    :data:`RESOLVE_WINDOWS` sampling periods is resolved (or aliased: :func:`_aliased`)."""
    w = 0.0 if response.instant else response.window
    t, y, origin = _running_samples(times, x, line, response)
    floor = RESOLVE_WINDOWS * max(w, found["period"])
    if t.size < 4 * FOLD_BINS:
        why = _too_few_to_fold(line, t.size)
        _none_resolved(add, why)
        _unresolved_step(q, y, line, response, scenario, mean, found["period"], why)
        return
    coarse = _coarse_period(t, y, origin, found["period"])
    step = _best_period(t, y, origin, coarse) if np.isfinite(coarse) else np.nan
    if not np.isfinite(step) or step < floor:
        seen = f"a swing of about {step:.2f} s" if np.isfinite(step) else "no periodic swing"
        why = (
            f"unresolved: {seen} is shorter than {RESOLVE_WINDOWS:g} averaging windows of the "
            f"sensor ({format_duration(w)}) or sampling periods; the running mean is fitted"
        )
        _none_resolved(add, why)
        _unresolved_step(q, y, line, response, scenario, mean, found["period"], why)
        return
    profile, counts, _ = _fold(t, y, origin, np.array([step]))
    shape = _square_fit(profile[0], counts[0], step, response)
    stamped = (times, x, np.zeros(times.size, np.int64)) if stamps is None else stamps
    strong, how = _step_seen(
        (t, y, origin), counts[0], step, shape, stamped, line, found, response, mean
    )
    add("step time", step, "s", how, "workload.step_time", resolved=strong)
    if not strong:
        _unresolved_step(q, y, line, response, scenario, mean, found["period"], how)
    add("compute share", shape["share"], "1", how, "workload.phases", resolved=strong)
    add("compute level", shape["high"], "W", how, "workload.compute_power", resolved=strong)
    add("communication level", shape["low"], "W", how, "workload.trough_depth", resolved=strong)
    edge_ok = strong and shape["edge"] >= max(0.25 * w, 2.0 * found["period"])
    add(
        "edge duration",
        shape["edge"],
        "s",
        "the fitted edge of the folded step"
        if edge_ok
        else f"unresolved: edges faster than a quarter of the sensor's {format_duration(w)} "
        "window (or two samples) are smoothed away",
        "workload.edge_rate",
        resolved=edge_ok,
    )
    _spread_quantities(add, (t, y, origin), step, shape, strong, w, found)


def _none_resolved(add, why: str) -> None:
    """The running shape's quantities, each unresolved for ``why``: the trace shows no step to
    fold (:func:`_unresolved_step` then writes the step the trace allows)."""
    for name, unit in (
        ("step time", "s"),
        ("compute share", "1"),
        ("compute level", "W"),
        ("communication level", "W"),
        ("edge duration", "s"),
        ("step-time spread", "1"),
        ("step-level spread", "1"),
    ):
        add(name, None, unit, why, resolved=False)


def _step_seen(
    samples: tuple[np.ndarray, np.ndarray, np.ndarray],
    counts: np.ndarray,
    step: float,
    shape: dict[str, float],
    stamps: tuple[np.ndarray, np.ndarray, np.ndarray],
    line: Timeline,
    found: dict[str, float],
    response: StepResponse,
    mean: float,
) -> tuple[bool, str]:
    """Whether the ``step`` [s] folded from the running ``samples`` (times, values, spell
    origins; ``counts`` per phase bin) into ``shape`` is the iteration's, and how it was found
    or why not: its swing stands out of the noise (:func:`_stands_out`), also a step away from
    the spells' ends (:func:`_stands_out_inside`), and it is no alias on the samples' ``stamps``
    (:func:`_aliased`)."""
    t, y, origin = samples
    inner = _interior(t, origin, step)
    if not _stands_out(shape, counts, found["noise"]):
        return False, (
            f"unresolved: the folded swing does not stand out of the noise (R² {shape['r2']:.2f})"
        )
    if not _stands_out_inside(t[inner], y[inner], origin[inner], step, response, found["noise"]):
        return False, (
            f"unresolved: the {step:.3g}-s swing folded from {t.size:,} running samples is not "
            "seen a step away from the running spells' ends (it is their rise and fall, which "
            "fold at any period that divides the spells, not an iteration's)"
        )
    aliased = _aliased(stamps, line, step, found["period"], response, shape, mean)
    if aliased:
        return False, f"unresolved: {aliased}"
    return True, (
        f"epoch folding of {t.size:,} running samples; a two-level step through the sensor's "
        f"response fits the folded profile (R² {shape['r2']:.3f})"
    )


def _spread_quantities(
    add,
    samples: tuple[np.ndarray, np.ndarray, np.ndarray],
    step: float,
    shape: dict[str, float],
    strong: bool,
    window: float,
    found: dict[str, float],
) -> None:
    """The step-to-step spreads of the steps' lengths and levels (:func:`_step_spread`) of a
    resolved (``strong``) step; NaN, unresolved, where it is not. ``window`` [s]: the sensor's
    averaging window (0 for one that samples instantly)."""
    mid = 0.5 * (shape["high"] + shape["low"])
    slope = shape["seen_swing"] / max(window, found["period"])
    t, y, origin = samples
    lengths, levels = (
        _step_spread(t, y, origin, step, mid, found["noise"], slope) if strong else (np.nan,) * 2
    )
    how = "between successive rising crossings of the swing's midpoint, less what noise gives"
    add(
        "step-time spread",
        lengths,
        "1",
        f"coefficient of variation of the step lengths {how}",
        "workload.variation.step_cv",
    )
    add(
        "step-level spread",
        levels,
        "1",
        f"coefficient of variation of the steps' mean levels {how}",
        "workload.variation.level_cv",
    )


def _unresolved_step(
    q: dict[str, Quantity],
    y: np.ndarray,
    line: Timeline,
    response: StepResponse,
    scenario: Scenario,
    mean: float,
    period: float,
    why: str,
) -> None:
    """The step a fit writes where the trace does not resolve it (``why``), as ``step time``
    (not resolved), and the trough bounded at it (:func:`_bound_trough`).

    The trace shows no step (one shorter than :data:`RESOLVE_WINDOWS` averaging windows or
    sampling ``period`` [s], or a swing lost in the noise): the preset's step is kept if the
    sensor could not resolve it either, else one averaging window (a moving average over a
    whole iteration sees its mean alone: no swing), or one sampling period for a sensor that
    does not average; a preset step the sensor would resolve contradicts the trace (issue 27:
    a 6.13-s step written for a 0.23-s one drew a ±75 W swing). It is then shortened to fit
    the training between two stalls (the median, to 10 ms as :func:`fitted_toml` writes it) a
    whole number of times: the engine rounds the checkpoint interval to whole steps, and a 2-s
    interval would run as one 6.13-s step. A sensor that samples instantly hides no step: any
    step shows, at its own period or as an alias, so it gets ``period / φ`` (φ the golden
    ratio), whose samples sweep the iteration's phase most evenly (no two samples at one phase,
    no run of them in its trough: no swing or dip the trace does not have, the mean kept)."""
    if response.instant:
        step = period / GOLDEN
        kept = "one sampling period over the golden ratio, as short as"
    else:
        unit = response.window if response.window > 0.0 else period
        preset = derive(scenario).step_time
        step = preset if preset < RESOLVE_WINDOWS * max(response.window, period) else unit
        kept = "the preset's, as short as" if step == preset else "one sensor window, as short as"
    between = _between_stalls(line)
    fitted = ""
    if between.size:
        interval = round(float(np.median(between)), 2)
        step = interval / math.ceil(interval / step - 1e-9)
        fitted = f", {interval / step:.0f} in the {interval:g}-s training between two stalls"
    q["step time"] = Quantity(
        "step time",
        step,
        "s",
        False,
        f"{step:.4g} s written ({kept} the trace allows{fitted}); {why}",
        "workload.step_time",
    )
    _bound_trough(q, y, response, scenario, mean, period, step)


def _bound_trough(
    q: dict[str, Quantity],
    y: np.ndarray,
    response: StepResponse,
    scenario: Scenario,
    mean: float,
    period: float,
    step: float,
) -> None:
    """The trough depth a fit writes where the trace does not resolve the step: the deepest, at
    most the preset's, whose iteration (the preset's phases at the written ``step`` [s], at
    the running ``mean`` [W]) seen through the sensor swings no more than the running samples
    ``y`` [W], every ``period`` [s], do about their :data:`TREND_STEPS`-step rolling mean (a
    slow drift, the die warming, is no step's swing) beyond their noise; added to ``q`` as
    ``trough depth`` (the preset's depth would draw a swing the trace does not have: a 6.13-s
    step with a 30 % trough seen as ±75 W where a 0.23-s step left a flat trace)."""
    if not np.isfinite(mean) or y.size < 2:
        return
    window = max(TREND_STEPS * step, TREND_MIN)
    from scipy.ndimage import uniform_filter1d  # noqa: PLC0415 - scipy costs its import

    trend = uniform_filter1d(y, max(1, min(round(window / period), y.size)), mode="nearest")
    spread, noise = float(np.std(y - trend)), _noise(y)
    target = math.sqrt(max(spread**2 - noise**2, 0.0))
    depths = np.linspace(0.0, scenario.workload.trough_depth, 101)
    seen = _seen_spread(scenario, depths, mean, response, step)
    depth = float(depths[seen <= target].max(initial=0.0))
    q["trough depth"] = Quantity(
        "trough depth",
        depth,
        "1",
        False,
        f"bounded, not resolved: the written {step:.3g}-s step has its trough at most "
        f"{depth:.3g} (the preset's {scenario.workload.trough_depth:g}), so that seen through the "
        f"sensor it swings by at most the trace's running spread, {spread:.3g} W (std about its "
        f"{format_duration(round(window, 1))} rolling mean) less its {noise:.3g}-W noise",
        "workload.trough_depth",
    )


def _mean_levels(
    scenario: Scenario, depth: np.ndarray, mean: float
) -> tuple[np.ndarray, np.ndarray]:
    """The compute level (one per trough ``depth``) that makes the scenario's phases average
    ``mean`` [W], and the phase levels (depth × phase), both as fractions of TDP (levels are
    affine in the compute level; phases of their own power keep it)."""
    wl, gpu = scenario.workload, scenario.gpu
    kinds, powers = [p.kind for p in wl.phases], [p.power for p in wl.phases]
    shares = scenario.phase_shares()
    depth = np.atleast_1d(depth)
    zero = np.array([workload.phase_levels(kinds, powers, 0.0, d) for d in depth])
    one = np.array([workload.phase_levels(kinds, powers, 1.0, d) for d in depth])
    compute = (mean / gpu.tdp - zero @ shares) / ((one - zero) @ shares)
    return compute, zero + compute[:, None] * (one - zero)


def short_step_edge_rate(scenario: Scenario, step: float, mean: float) -> float:
    """The edge rate [fraction of TDP per s] of ``scenario``'s phases at its trough depth,
    levels set to average ``mean`` [W], in an unresolved iteration of ``step`` [s]: the
    preset's, or, where its edges would each take more than :data:`EDGE_SHARE` of a step
    written short (one sensor window, one sampling period), the rate that makes them that
    share (the model refuses an edge longer than its step; the edges are as unresolved as the
    step)."""
    levels = _mean_levels(scenario, np.array([scenario.workload.trough_depth]), mean)[1][0]
    swing = float(np.abs(levels - np.roll(levels, 1)).max())
    need = math.ceil(swing / (EDGE_SHARE * step) * 1e4) / 1e4
    return max(scenario.workload.edge_rate, need)


def _seen_spread(
    scenario: Scenario, depth: np.ndarray, mean: float, response: StepResponse, step: float
) -> np.ndarray:
    """Standard deviation [W] of the scenario's iteration of ``step`` [s] at each trough
    ``depth``, levels set to average ``mean`` [W], seen through the chain (convolved circularly
    with its response)."""
    spectrum = _chain_spectrum(response, step)
    shares = scenario.phase_shares()
    rate = short_step_edge_rate(scenario, step, mean)
    shapes = np.array(
        [  # one waveform per candidate depth: a hundred, each vectorised
            workload.iteration_waveform(shares, levels, step, rate, ITERATION_CELLS)
            for levels in _mean_levels(scenario, depth, mean)[1]
        ]
    )
    return _seen_through(shapes, spectrum).std(axis=1) * scenario.gpu.tdp
