"""Detection: the job's states in a per-GPU power signal (:func:`detect`).

Samples split into bands (Otsu's threshold, the held levels below it as histogram peaks, a band
of the iteration's troughs or of a burn floor's stalls told apart); runs of band labels read as
states by what surrounds them (idle, start-up, ramp, running, checkpoint stall, teardown); each
boundary placed where the sensor's view crosses, leaves or reaches the levels either side, less
the chain's delay. Follows :mod:`powermodel.fit.trace` and :mod:`powermodel.fit.sensor`; its
timeline goes on to :mod:`powermodel.fit.idle` and the level and timing stages.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from powermodel.fit.sensor import StepResponse
from powermodel.fit.timeline import Timeline, _neighbours, _state_levels
from powermodel.fit.trace import MIN_SAMPLES
from powermodel.models.events import State

# A dip below the running band held this many sensor windows at no more than this share of the
# running level is a stall, not an iteration's trough, however often it recurs: an iteration's
# communication trough that lasts 8 windows belongs to a step of 12 s or more (its share is
# about a third [P, ko_zhu Table I]), whose trough holds 0.2-0.8 below compute (the same table);
# both at once (a long step with a trough at half of compute or lower) is read as stalls.
LONG_DIP = 8.0  # sensor windows
DEEP_DIP = 0.5  # of the running band's median level
# A long dip that is shallow (a burn or power-smoothing floor holds the GPUs up through a stall)
# is still a stall when the dips' lengths vary or fill most of the cycle: an iteration's trough
# lasts the same every step (a step's length varies by 0.5-10 % [A], workload.variation), and
# its share of the step is about a third [P, ko_zhu Table I], where stalls' lengths spread (one
# H100 run's from 16 to 108 s, issue 27) and checkpoints every few stall lengths leave the
# training between them shorter than the stalls. Over LONG_DIP windows, placing each edge within
# a window spreads a trough's measured length by under 0.1, a quarter of the margin below [A].
STALL_CV = 0.25  # coefficient of variation of the dips' lengths above which they are stalls
TROUGH_SHARE = 0.6  # share of the cycle (dip start to dip start) above which dips are stalls
IDLE, LOW, HIGH = 0, 1, 2  # sample labels: idle band, stalled band, running band
HELD = (State.FAILED_IDLE, State.CHECKPOINT, State.STALLED, State.LOADING)  # flat levels
# An unresolved step written short gets edges of at most this share of it each (two a step,
# fit.running.short_step_edge_rate); a running band holds two levels only where fewer than
# this share of its samples lie between them (_held_in_running)
EDGE_SHARE = 0.25


def _otsu(x: np.ndarray, bins: int = 256) -> float:
    """Threshold that best splits ``x`` into two classes (Otsu): the largest between-class
    variance over a histogram."""
    counts, edges = np.histogram(x, bins=bins)
    centre = 0.5 * (edges[1:] + edges[:-1])
    w0 = np.cumsum(counts)
    w1 = w0[-1] - w0
    s0 = np.cumsum(counts * centre)
    with np.errstate(all="ignore"):
        m0, m1 = s0 / w0, (s0[-1] - s0) / w1
        between = w0 * w1 * (m0 - m1) ** 2
    return float(edges[1:][np.nanargmax(np.where(w1 > 0, between, -1.0))])


def _low_levels(low: np.ndarray, sigma: float, span: float) -> np.ndarray:
    """Plateau levels among the samples below the running band, lowest first: the (at most
    three) most prominent peaks of their histogram (a level held for a while is a peak; a
    transition through the band is not)."""
    width = max(2.0 * sigma, span / 400.0, 1e-6)
    edges = np.arange(low.min() - width, low.max() + 2.0 * width, width)
    counts, edges = np.histogram(low, bins=edges)
    smooth = np.convolve(counts, np.ones(3) / 3.0, mode="same")
    from scipy.signal import find_peaks  # noqa: PLC0415 - scipy.signal costs a second to import

    peaks, props = find_peaks(
        np.concatenate(([0.0], smooth, [0.0])), prominence=max(3.0, 0.05 * smooth.max())
    )
    peaks -= 1
    top = peaks[np.argsort(props["prominences"])[::-1][:3]]  # idle, start-up, stalled at most
    return np.sort(0.5 * (edges[top] + edges[top + 1]))


def _thirds(x: np.ndarray, start: np.ndarray, length: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The means of the first and of the last third (a sample at least) of each run of ``x``
    (its ``start`` index and ``length``)."""
    c = np.concatenate(([0.0], np.cumsum(x)))
    third = np.maximum(length // 3, 1)
    first = (c[start + third] - c[start]) / third
    last = (c[start + length] - c[start + length - third]) / third
    return first, last


def _flat(x: np.ndarray, start: np.ndarray, length: np.ndarray, tolerance: float) -> np.ndarray:
    """Whether each run holds a level: the means of its first and last thirds agree within
    ``tolerance`` (a ramp crossing a band does not)."""
    first, last = _thirds(x, start, length)
    return np.abs(last - first) <= tolerance


def _runs(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run-length code: start index, length and label of each run."""
    start = np.flatnonzero(np.diff(labels, prepend=labels[0] - 1))
    length = np.diff(np.append(start, labels.size))
    return start, length, labels[start]


def _noise(x: np.ndarray, where: np.ndarray | None = None) -> float:
    """Sample noise of a signal: the median absolute first difference (robust to its steps),
    over the pairs of samples both in ``where`` (held states: no swing to mistake for noise)."""
    d = np.diff(x)
    if where is not None and np.count_nonzero(where[1:] & where[:-1]) > 10:
        d = d[where[1:] & where[:-1]]
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2.0))


@dataclass(frozen=True)
class _Runs:
    """Labelled runs of a trace after the grammar: start index, length, role."""

    start: np.ndarray
    length: np.ndarray
    role: np.ndarray  # State codes; RAMP marks a rise from idle (or start-up) into running


def detect(
    times: np.ndarray, x: np.ndarray, response: StepResponse
) -> tuple[Timeline, dict[str, float]]:
    """The job's states over a per-GPU power signal sampled at ``times`` [s] through a chain of
    step response ``response``.

    Returns the timeline (raw state boundaries: the chain's delay taken off each crossing) and
    the band thresholds and levels found (``run_threshold``, ``idle_level``, ``low_level``,
    ``noise``) [W].

    Notes
    -----
    Samples split into a running band and a low band at Otsu's threshold; the low band's
    histogram peaks are the held levels (idle, stalled). Runs of labels then read as states by
    what surrounds them: low between two running runs is a checkpoint stall; low from running
    into idle is a failure's teardown (survivors spinning); idle is idle; a held level between
    idle and running, longer than three windows, is a start-up; running after idle or start-up
    begins with the start-up ramp. Each boundary is the crossing of the midpoint of the levels
    either side, less the chain's half-step delay (exact for a symmetric averaging window).
    """
    period = float(np.median(np.diff(times)))
    duration = float(times[-1] - times[0] + period)
    from scipy.ndimage import median_filter  # noqa: PLC0415 - as find_peaks

    held = median_filter(x, 5, mode="nearest")  # a lone outlier is no state
    spread = float(held.max() - held.min())
    if not spread > max(10.0 * _noise(x), 0.05 * abs(float(np.median(x)))):
        # one level throughout: no change of state tells idle from running; read as running
        one = Timeline(
            start=np.zeros(1), state=np.full(1, State.RUNNING, np.int8), duration=duration
        )
        found = {"run_threshold": -np.inf, "idle_level": np.nan, "low_level": np.nan}
        return one, {**found, "noise": _noise(x), "period": period}
    t_run = _otsu(x)
    t_run = _held_in_running(x, t_run, period, response.window)
    running = _Runs(np.zeros(1, np.int64), np.full(1, x.size), np.full(1, State.RUNNING, np.int8))
    for _ in range(3):  # at most twice, a band of the iteration's troughs is split off
        labels, runs, levels, two, sigma, high_level = _bands(x, t_run, period, response)
        trough = _trough_level(x, labels, high_level, response.window / period)
        if not np.isfinite(trough):
            break
        # dips a few of their lengths apart are the iteration's troughs, not checkpoint stalls:
        # the running band reaches down to them, and any held level lies well below them
        below = x[x < t_run]
        t_next = _otsu(below) if below.size >= MIN_SAMPLES else np.inf
        if not t_next < trough - max(10.0 * sigma, 0.05 * abs(trough)):
            runs = running  # troughs all the way down: no state but running
            break
        t_run = t_next
    else:
        runs = running
    if not two and levels.size:
        idle_level = low_level = float(levels[0])
    elif two:
        idle_level, low_level = float(levels[0]), float(levels[-1])
    else:
        idle_level = low_level = np.nan
    bounds = _boundaries(times, x, runs, response, high_level, idle_level, low_level, sigma)
    timeline = Timeline(
        start=np.concatenate(([times[0]], bounds)) - times[0],
        state=runs.role.copy(),
        duration=duration,
    )
    found = {
        "run_threshold": t_run,
        "idle_level": idle_level,
        "low_level": low_level,
        "noise": sigma,
        "period": period,
    }
    return timeline, found


def _held_in_running(x: np.ndarray, t_run: float, period: float, window: float) -> float:
    """The running threshold [W]: ``t_run``, or, where the band above it holds a lower level
    of its own, the threshold above that level (a burn or power-smoothing floor holding the
    GPUs up through checkpoint stalls, issue 27: Otsu's threshold on the whole trace falls
    between idle and both of them, and the stalls read as running).

    The band's own Otsu threshold splits it into two levels that stand apart (by ten times the
    noise and 5 % of the upper one), whose samples cross between them quickly (under
    :data:`EDGE_SHARE` of the band's samples lie in the middle half between the levels: a drift
    of the level, a throttle, does not), and whose lower runs between two running runs are held
    (flat) for :data:`LONG_DIP` windows or more (a sampled period, ``period`` [s], at least)
    and read as stalls, not an iteration's troughs (:func:`_trough_level`)."""
    band = x >= t_run
    if np.count_nonzero(band) < 2 * MIN_SAMPLES:
        return t_run
    t_up = _otsu(x[band])
    lower, upper = band & (x < t_up), x >= t_up
    if min(np.count_nonzero(lower), np.count_nonzero(upper)) < MIN_SAMPLES:
        return t_run
    lo, hi = np.median(x[lower]), np.median(x[upper])
    sigma = _noise(x, band)
    apart = hi - lo > max(10.0 * sigma, 0.05 * abs(hi))
    middle = band & (x > lo + 0.25 * (hi - lo)) & (x < hi - 0.25 * (hi - lo))
    if not (apart and np.count_nonzero(middle) < EDGE_SHARE * np.count_nonzero(band)):
        return t_run
    # the dips within the band alone: below it (idle, a start-up) is no part of the question
    labels = np.where(upper | ~band, HIGH, LOW).astype(np.int8)
    start, length, label = _runs(labels)
    inner = np.zeros(label.size, bool)
    inner[1:-1] = label[1:-1] == LOW
    held = inner & _flat(x, start, length, max(6.0 * sigma, 0.1 * (hi - lo)))
    windows = max(window, period) / period
    if not (held.any() and np.median(length[held]) >= LONG_DIP * windows):
        return t_run
    if np.isfinite(_trough_level(x, labels, float(hi), windows)):
        return t_run  # long regular dips of a long step: its troughs, left to the running band
    return float(t_up)


def _trough_level(x: np.ndarray, labels: np.ndarray, high: float, window: float) -> float:
    """The level of the dips below the running band (runs between two running runs) if they
    are the iteration's troughs; NaN if they are not (or too few to tell). [W]

    Troughs recur a few of their own lengths apart (stalls, minutes apart, do not), but so do
    checkpoint stalls when checkpoints come every few stall lengths. What tells them apart is
    their depth and length against the sensor's resolution: a stall lasts many averaging
    windows (:data:`LONG_DIP` or more, ``window`` samples each) and either holds the GPUs near
    a low held level (:data:`DEEP_DIP` of the running level or less) or, held up by a burn
    floor, lasts as it will (lengths spreading by more than :data:`STALL_CV`) or longer than
    the training between (over :data:`TROUGH_SHARE` of the cycle); an iteration's trough does
    none of these with its length.
    """
    start, length, high_run = _runs((labels == HIGH).astype(np.int8))  # any level below: a dip
    dip = np.zeros(high_run.size, bool)
    dip[1:-1] = high_run[1:-1] == 0
    if dip.sum() < 3:
        return np.nan
    cycle = np.median(np.diff(start[dip]))
    lengths = length[dip].astype(float)
    if not cycle < 5 * np.median(lengths):
        return np.nan
    level = float(np.median(x[np.repeat(dip, length)]))
    if np.median(lengths) >= LONG_DIP * max(window, 1.0) and (
        level <= DEEP_DIP * high
        or np.std(lengths) > STALL_CV * np.mean(lengths)
        or np.median(lengths) > TROUGH_SHARE * cycle
    ):
        return np.nan  # long, and deep or as long as they will: checkpoint stalls
    return level


def _bands(
    x: np.ndarray, t_run: float, period: float, response: StepResponse
) -> tuple[np.ndarray, _Runs, np.ndarray, bool, float, float]:
    """Samples labelled by band at the running threshold ``t_run`` [W] and read as states:
    labels, runs, the held levels below the running band, whether idle has another held level
    above it, the noise and the running band's median."""
    sigma = _noise(x, x < t_run)
    low_vals = x[x < t_run]
    high_level = float(np.median(x[x >= t_run]))
    levels = (
        _low_levels(low_vals, sigma, high_level - low_vals.min()) if low_vals.size else np.empty(0)
    )
    # idle is the lowest held level; any distinct one above it (start-up, stalled) is the low
    # band, whose runs read as states by what surrounds them
    apart = np.flatnonzero(
        levels - (levels[0] if levels.size else 0.0) > max(6.0 * sigma, 0.02 * high_level)
    )
    two = apart.size > 0
    t_idle = 0.5 * (levels[0] + levels[apart[0]]) if two else -np.inf
    labels = np.where(x >= t_run, HIGH, np.where(x >= t_idle, LOW, IDLE)).astype(np.int8)
    flat = max(6.0 * sigma, 0.1 * (t_run - x.min()))
    labels = _despeckle(labels, max(1, round(0.2 * response.window / period)))
    labels = _split_rises(labels, x, flat, int(3.0 * response.window / period))
    runs = _idle_stalls(
        _states_by_surroundings(labels, x, two, period, response.window, flat),
        response.window / period,
    )
    return labels, runs, levels, two, sigma, high_level


def _despeckle(labels: np.ndarray, longest: int) -> np.ndarray:
    """Labels with runs of at most ``longest`` samples between two runs of one label given that
    label: noise flickering across a band's edge, not a state."""
    start, length, label = _runs(labels)
    same = np.zeros(label.size, bool)
    same[1:-1] = label[:-2] == label[2:]
    speck = same & (length <= longest)
    fixed = np.where(speck, np.roll(label, 1), label)
    return np.repeat(fixed, length).astype(labels.dtype)


def _split_rises(labels: np.ndarray, x: np.ndarray, flat: float, shortest: int) -> np.ndarray:
    """Labels with the rise out of a held low level into running given to the running band: a
    start-up level and the ramp's lower part fall in the same band, so the run ends where the
    signal last lies within ``flat`` of the level its first third holds, if it held that level
    for ``shortest`` samples (a ramp that crosses the band alone is left to the rise)."""
    start, length, label = _runs(labels)
    prev, nxt = _neighbours(label)
    rising = (label == LOW) & (prev != HIGH) & (nxt == HIGH)
    run = np.repeat(np.arange(start.size), length)
    level, _ = _thirds(x, start, length)
    index = np.arange(x.size)
    held = rising[run] & (np.abs(x - level[run]) <= flat)
    last = np.full(start.size, -1)
    np.maximum.at(last, run[held], index[held])
    out = labels.copy()
    plateau = (last - start >= shortest)[run]
    out[rising[run] & plateau & (index > last[run])] = HIGH
    return out


def _states_by_surroundings(
    labels: np.ndarray, x: np.ndarray, two: bool, period: float, window: float, flat: float
) -> _Runs:
    """Runs of sample labels read as states by what surrounds them (see :func:`detect`)."""
    start, length, label = _runs(labels)
    prev, nxt = _neighbours(label)
    short = length * period < window + 2.0 * period
    if not two:  # one held level: stalls if always between running runs, else idle
        inner = (label == LOW) & (prev >= 0) & (nxt >= 0)
        if np.any(inner & ((prev != HIGH) | (nxt != HIGH))):
            label = np.where(label == LOW, IDLE, label)
        else:  # held from the trace's start or to its end: idle before or after the job
            label = np.where((label == LOW) & ((prev < 0) | (nxt < 0)) & ~short, IDLE, label)
    role = np.full(label.size, State.RUNNING, dtype=np.int8)
    role[label == IDLE] = State.FAILED_IDLE
    low = label == LOW
    # a held low level left back to idle: a start-up that did not go on (a brief one, a flicker)
    role[low] = np.where(short[low], State.FAILED_IDLE, State.LOADING)
    role[low & (prev == HIGH) & (nxt == HIGH)] = State.CHECKPOINT
    role[low & (prev == HIGH) & (nxt != HIGH)] = State.STALLED
    rising = low & (prev != HIGH) & (nxt == HIGH)
    short |= rising & ~_flat(x, start, length, flat)
    role[rising & ~short] = State.LOADING
    role[low & (prev == -1) & (nxt != HIGH)] = State.FAILED_IDLE  # trace starts in a held level
    role[low & (prev == -1) & (nxt == HIGH) & short] = State.CHECKPOINT  # cut by the start
    ramp_after = np.zeros(label.size, bool)
    ramp_after[1:] = (label[1:] == HIGH) & np.isin(role[:-1], (State.FAILED_IDLE, State.LOADING))
    ramp_after[1:] |= (label[1:] == HIGH) & rising[:-1] & short[:-1]
    role[ramp_after] = State.RAMP
    # a short level crossed on the way up is the ramp's, and on the way down from running the
    # fall's (the window's own smear, not survivors spinning): each joins the run before it
    falling = low & (prev == HIGH) & (nxt != HIGH) & short
    # a pause at idle inside a start-up, shorter than the loading either side, is the
    # start-up's: one start-up is one state, from leaving idle to the rise into running
    before = np.concatenate(([0], length[:-1]))
    after = np.concatenate((length[1:], [0]))
    role_prev, role_next = _neighbours(role)
    pause = (
        (role == State.FAILED_IDLE)
        & (role_prev == State.LOADING)
        & (role_next == State.LOADING)
        & (length < np.maximum(before, after))
    )
    return _joined(_Runs(start, length, role), (rising & short) | falling | pause)


def _idle_stalls(runs: _Runs, window: float) -> _Runs:
    """``runs`` with the idle spells that are checkpoint stalls read as such: a stall may hold
    the GPUs at their idle level (waiting on storage), where it reads as an idle spell between
    two training runs. A failure's is followed by a start-up or a ramp and comes at random; a
    checkpoint's is followed by training at once and comes after equal training (every so
    many steps). So an idle spell with training either side, next to a training run between
    two such spells whose length is their median's within two sensor windows (``window``
    samples) or 5 %, is a stall, when two or more such runs are alike; the rise after it is
    running, not a ramp."""
    role = runs.role
    training = np.isin(role, (State.RUNNING, State.RAMP))
    prev = np.concatenate(([False], training[:-1]))
    nxt = np.concatenate((training[1:], [False]))
    spell = (role == State.FAILED_IDLE) & prev & nxt
    # the training runs between two such spells, and whether each is as long as the others
    between = np.zeros(role.size, bool)
    between[1:-1] = training[1:-1] & spell[:-2] & spell[2:]
    if between.sum() < 2:
        return runs
    typical = float(np.median(runs.length[between]))
    alike = between & (np.abs(runs.length - typical) <= max(2.0 * window, 0.05 * typical))
    if alike.sum() < 2:
        return runs
    beside = np.zeros(role.size, bool)
    beside[:-1] |= alike[1:]
    beside[1:] |= alike[:-1]
    stall = spell & beside
    role = role.copy()
    role[stall] = State.CHECKPOINT
    after = np.concatenate(([False], stall[:-1])) & (role == State.RAMP)
    role[after] = State.RUNNING
    return _joined(_Runs(runs.start, runs.length, role), np.zeros(role.size, bool))


def _joined(runs: _Runs, drop: np.ndarray) -> _Runs:
    """``runs`` with each ``drop`` run given to the run before it, and runs of one state in a
    row made one (their lengths summed)."""
    drop = drop.copy()
    drop[0] = False  # the first run has none before it
    index = np.arange(runs.role.size)
    role = runs.role[np.maximum.accumulate(np.where(drop, 0, index))]
    new = np.append(True, role[1:] != role[:-1])
    length = np.bincount(np.cumsum(new) - 1, runs.length).astype(np.int64)
    return _Runs(runs.start[new], length, role[new])


def _boundaries(
    times: np.ndarray,
    x: np.ndarray,
    runs: _Runs,
    response: StepResponse,
    high: float,
    idle: float,
    low: float,
    sigma: float,
) -> np.ndarray:
    """Raw time of each boundary between runs: where the sensor's view crosses the midpoint of
    the levels held either side (measured just outside the transition), less the chain's delay.
    Two passes: the first places the windows the second measures the local levels in."""
    j = runs.start[1:]
    if j.size == 0:
        return np.empty(0)
    period = times[1] - times[0]
    level = _state_levels(runs.role, high, idle, low, low)
    before, after = level[:-1], level[1:]
    w = response.window
    edge = times[j] - response.delay
    run_end = times[np.minimum(runs.start + runs.length, times.size - 1)]
    run_begin = times[runs.start]
    into_ramp = runs.role[1:] == State.RAMP
    c = np.concatenate(([0.0], np.cumsum(x)))
    quarter = runs.length // 4
    middle = (c[runs.start + runs.length - quarter] - c[runs.start + quarter]) / np.maximum(
        runs.length - 2 * quarter, 1
    )
    held_before = np.where(np.isin(runs.role[:-1], HELD), middle[:-1], before)
    for _ in range(2):
        a = _window_median(times, x, edge - 0.5 * w, edge - period, run_begin[:-1], before)
        b = _window_median(
            times, x, edge + w + period, edge + 1.5 * w + period, None, after, run_end[1:]
        )
        # a ramp has no level near its middle: it rises from the level held before it (the
        # middle half of that run) to the running one
        a, b = np.where(into_ramp, held_before, a), np.where(into_ramp, after, b)
        crossing = _crossing(times, x, j, 0.5 * (a + b), np.sign(b - a), w)
        ramps = np.flatnonzero(into_ramp)
        crossing[ramps] = _rise_crossing(times, x, runs, ramps, 0.5 * (a + b)[ramps])
        edge = crossing - response.delay
    held = np.isin(runs.role, HELD)
    return _boundaries_at_held_levels(
        times, x, crossing, a, b, held[:-1] & ~into_ramp, held[1:], sigma, response, edge
    )


def _boundaries_at_held_levels(
    times: np.ndarray,
    x: np.ndarray,
    crossing: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    from_held: np.ndarray,
    to_held: np.ndarray,
    sigma: float,
    response: StepResponse,
    fallback: np.ndarray,
) -> np.ndarray:
    """Boundaries [s] found where the sensor's view leaves or reaches a held level.

    Through an averaging window the view leaves a held level at the raw boundary itself and
    reaches the next held level when the window has filled (``response.full`` later): both
    instants are sharp whatever the signal on the other side does, where the midpoint crossing
    shifts with it. Each is the intercept with the held level of a line through the transition's
    samples within a third of the level change from it (at least three, above the noise, on a
    change of twenty times the noise); the midpoint crossing less the delay where not.
    """
    period = times[1] - times[0]
    n = int(np.ceil(response.full / period)) + 2
    offsets = np.arange(-n, n + 1)
    i0 = np.searchsorted(times, crossing)
    idx = np.clip(i0[:, None] + offsets[None, :], 0, x.size - 1)
    t, y = times[idx], x[idx]
    change = np.where(b - a == 0, 1.0, b - a)[:, None]
    u = (y - a[:, None]) / change  # 0 at the level before, 1 at the level after
    floor = np.clip(3.0 * sigma / np.abs(change), 0.02, 0.2)  # off the level, above its noise
    c = crossing[:, None]
    sharp = (np.abs(b - a) > 20.0 * sigma)[:, None]  # else the noise bends the line
    leave = (
        sharp & from_held[:, None] & (t < c) & (t >= c - response.full) & (u > floor) & (u < 1 / 3)
    )
    reach = (
        sharp
        & to_held[:, None]
        & (t > c)
        & (t <= c + response.full)
        & (u < 1 - floor)
        & (u > 2 / 3)
    )
    t_leave = _intercept(t, u, leave, 0.0)
    t_reach = _intercept(t, u, reach, 1.0) - response.full
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # neither side held: the fallback
        both = np.nanmean(np.stack((t_leave, t_reach)), axis=0)
    return np.where(np.isfinite(both), both, fallback)


def _intercept(t: np.ndarray, u: np.ndarray, use: np.ndarray, at: float) -> np.ndarray:
    """Time where the line fitted (least squares) through the ``use`` samples of each row
    reaches ``u = at``; NaN for a row with fewer than three."""
    n = use.sum(axis=1)
    su, st = np.where(use, u, 0).sum(axis=1), np.where(use, t, 0).sum(axis=1)
    suu = np.where(use, u * u, 0).sum(axis=1)
    stu = np.where(use, t * u, 0).sum(axis=1)
    den = n * suu - su * su
    ok = (n >= 3) & (np.abs(den) > 1e-12)
    slope = np.where(ok, (n * stu - su * st) / np.where(ok, den, 1.0), np.nan)
    with np.errstate(all="ignore"):
        return np.where(ok, st / n + slope * (at - su / n), np.nan)


def _rise_crossing(
    times: np.ndarray, x: np.ndarray, runs: _Runs, ramps: np.ndarray, mid: np.ndarray
) -> np.ndarray:
    """Time [s] each rise first reaches ``mid``, searched from the start of the held run before
    it to the end of its own (a ramp may be long, its middle far from where the band changes);
    linearly between samples."""
    out = np.empty(ramps.size)
    for k, r in enumerate(ramps):  # one per restart
        lo, hi = runs.start[r], runs.start[r + 1] + runs.length[r + 1]
        i = lo + int(np.argmax(x[lo:hi] >= mid[k]))
        i = max(i, 1)
        frac = (mid[k] - x[i - 1]) / (x[i] - x[i - 1]) if x[i] != x[i - 1] else 1.0
        out[k] = times[i - 1] + float(np.clip(frac, 0.0, 1.0)) * (times[i] - times[i - 1])
    return out


def _window_median(
    times: np.ndarray,
    x: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    floor: np.ndarray | None,
    fallback: np.ndarray,
    ceiling: np.ndarray | None = None,
) -> np.ndarray:
    """Median of ``x`` over ``[lo, hi]`` of each boundary, kept inside its run; the run's level
    where the window holds no sample."""
    lo = lo if floor is None else np.maximum(lo, floor)
    hi = hi if ceiling is None else np.minimum(hi, ceiling)
    i0 = np.searchsorted(times, lo)
    i1 = np.searchsorted(times, hi, side="right")
    width = int(np.max(i1 - i0, initial=0))
    if width <= 0:
        return fallback.astype(float)
    idx = i0[:, None] + np.arange(width)[None, :]
    take = x[np.minimum(idx, x.size - 1)]
    take = np.where(idx < i1[:, None], take, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a window with no sample
        med = np.nanmedian(take, axis=1)
    return np.where(np.isfinite(med), med, fallback)


def _crossing(
    times: np.ndarray, x: np.ndarray, j: np.ndarray, mid: np.ndarray, sign: np.ndarray, w: float
) -> np.ndarray:
    """Time [s] where ``x`` crosses ``mid`` in direction ``sign`` nearest sample ``j`` (within
    a window either side), linearly between samples."""
    period = times[1] - times[0]
    n = int(np.ceil(w / period)) + 3
    offsets = np.arange(-n, n)
    idx = np.clip(j[:, None] + offsets[None, :], 0, x.size - 2)
    d = (x[idx] - mid[:, None]) * np.where(sign == 0, 1.0, sign)[:, None]
    d1 = (x[idx + 1] - mid[:, None]) * np.where(sign == 0, 1.0, sign)[:, None]
    cross = (d < 0) & (d1 >= 0)
    dist = np.where(cross, np.abs(offsets)[None, :], 10 * n)
    k = np.argmin(dist, axis=1)
    found = cross[np.arange(j.size), k]
    i = idx[np.arange(j.size), k]
    a, b = d[np.arange(j.size), k], d1[np.arange(j.size), k]
    frac = np.where(found, -a / np.where(b - a == 0, 1.0, b - a), 0.0)
    return np.where(found, times[i] + frac * period, times[j] - 0.5 * period)
