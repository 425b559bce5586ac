"""The job's timing: the start-up ramps fitted to the rises into running (through the
sensor's response), then the checkpoints (count, stall lengths and their spread, interval),
failures (teardown, restart wait), start-ups (length, spread) and the job's end, each a
:class:`~powermodel.fit.result.Quantity`. A stage of :func:`powermodel.fit.pipeline._quantities`,
after the levels and the running shape.
"""

from __future__ import annotations

import numpy as np

from powermodel.durations import format_duration
from powermodel.fit.sensor import StepResponse
from powermodel.fit.timeline import Timeline, _between_stalls, _neighbours, _whole, _whole_startups
from powermodel.models.events import State

RAMP_SAMPLES = 20_000  # samples of the rises a start-up ramp is fitted to, at most
RAMPS = np.concatenate(([0.0], np.geomspace(0.1, 3600.0, 120)))  # start-up ramps tried [s]
MIN_SPELLS = 3  # stalls whose lengths' spread is fitted, at least
# start-ups whose lengths' spread is fitted, at least: a job restarts a few times a trace, and
# two give a spread (the sample CV of two lengths is uncertain by about three quarters of
# itself, the standard deviation of |Z| over its mean: said so)
MIN_STARTUPS = 2


def _ramp_length(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    response: StepResponse,
    running: float,
    levels: np.ndarray,
) -> tuple[float, float]:
    """Length [s] of the start-up ramp and the shift [s] of its middle from the midpoint
    crossings (the RAMP segments' starts): the linear ramp, from the level before it to the
    running mean, whose view through the chain best fits every rise by least squares. The
    length over a grid refined by a parabola, then the shift, then the length again."""
    ramp = np.flatnonzero(line.state == State.RAMP)
    if ramp.size == 0 or not np.isfinite(running):
        return np.nan, 0.0
    ends = np.append(line.start[1:], line.duration)
    middle = line.start[ramp]
    before = levels[np.maximum(ramp - 1, 0)]
    span = min(float(np.max(ends[ramp] - middle)), 0.5 * RAMPS.max()) + response.full
    fine = max(min(response.dt * 10.0, 0.05), span / 20_000.0)  # a bounded fine grid
    tau = np.arange(-span - 2.0 * response.full, span + response.full, fine)  # from the middle
    kernel = response.kernel(fine)
    lo = np.searchsorted(times, middle - span)
    hi = np.searchsorted(times, middle + np.minimum(ends[ramp] - middle, span))
    k = np.repeat(np.arange(ramp.size), hi - lo)
    i = np.arange(k.size) - np.repeat(np.cumsum(hi - lo) - (hi - lo), hi - lo) + lo[k]
    every = max(1, k.size // RAMP_SAMPLES)  # samples compared, at most about RAMP_SAMPLES
    k, i = k[::every], i[::every]
    keep = np.isfinite(x[i])
    k, i = k[keep], i[keep]
    rel = times[i] - middle[k]

    def misfit(lengths: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        shape = np.clip(
            (tau[None, :] - shifts[:, None]) / np.maximum(lengths, 1e-9)[:, None] + 0.5, 0.0, 1.0
        )
        padded = np.concatenate((np.zeros((lengths.size, kernel.size)), shape), axis=1)
        from scipy.signal import fftconvolve  # noqa: PLC0415 - scipy.signal costs a second

        seen = fftconvolve(padded, kernel[None, :], axes=1)[:, kernel.size : kernel.size + tau.size]
        pos = (rel - tau[0]) / fine
        cell = np.clip(pos.astype(np.int64), 0, tau.size - 2)
        frac = pos - cell
        unit = seen[:, cell] * (1.0 - frac) + seen[:, cell + 1] * frac
        return (((before[k] + (running - before[k]) * unit) - x[i]) ** 2).sum(axis=1)

    def best_length(shift: float) -> float:
        errors = misfit(RAMPS, np.full(RAMPS.size, shift))
        j = int(np.argmin(errors))
        if 0 < j < RAMPS.size - 1 and RAMPS[j - 1] > 0:  # parabola in log length
            y0, y1, y2 = errors[j - 1 : j + 2]
            curve = y0 - 2.0 * y1 + y2
            step = 0.5 * (y0 - y2) / curve if curve > 0 else 0.0
            return float(np.exp(np.log(RAMPS[j]) + step * np.log(RAMPS[j + 1] / RAMPS[j])))
        return float(RAMPS[j])

    length = best_length(0.0)
    shifts = np.linspace(-1.0, 1.0, 81) * max(response.window, 0.1 * length)
    shift = float(shifts[np.argmin(misfit(np.full(shifts.size, length), shifts))])
    return best_length(shift), shift


def _with_ramps(line: Timeline, ramp: float, shift: float) -> Timeline:
    """The timeline with each rise as a ramp of length ``ramp`` [s] about its middle (the RAMP
    segment's start moved by ``shift`` [s]), then running: the idle before it ends where the
    ramp starts."""
    at = np.flatnonzero(line.state == State.RAMP)
    if at.size == 0 or not np.isfinite(ramp):
        return line
    start = line.start.copy()
    start[at] += shift
    if ramp <= 0.0:  # a step into running: no ramp segment of no length
        state = np.where(line.state == State.RAMP, State.RUNNING, line.state).astype(
            line.state.dtype
        )
        return Timeline(start=start, state=state, duration=line.duration)
    ends = np.append(start[1:], line.duration)
    lo = np.where(at > 0, start[np.maximum(at - 1, 0)], 0.0)  # the segment before the rise
    start[at] = np.maximum(start[at] - 0.5 * ramp, lo)
    run = np.minimum(line.start[at] + shift + 0.5 * ramp, ends[at])
    starts = np.insert(start, at + 1, run)
    states = np.insert(line.state, at + 1, State.RUNNING)
    return Timeline(start=starts, state=states, duration=line.duration)


def _sharp(line: Timeline, sampled: np.ndarray, period: float, window: float) -> np.ndarray:
    """Whether each segment's two boundaries lie where samples were measured (``sampled``,
    their times [s]) closer than two sampling periods and half the sensor's ``window`` [s]
    apart: a boundary in a slow poll's gap (a line a GPU every second or so, for up to 9 s)
    is placed anywhere in it, and the spells it bounds read seconds short."""
    bounds = line.start[1:]
    after = np.clip(np.searchsorted(sampled, bounds), 1, max(sampled.size - 1, 1))
    gap = sampled[after] - sampled[after - 1] if sampled.size > 1 else np.full(bounds.size, np.inf)
    ok = gap <= max(2.0 * period, 0.5 * window)
    return np.concatenate(([False], ok)) & np.concatenate((ok, [False]))


def _timing(add, line: Timeline, period: float, sharp: np.ndarray, settle: float) -> None:
    """Checkpoint count, stall lengths (their mean and spread), interval, teardown, restart,
    start-up times and the job's end; ``period`` the sampling step [s]; the training between
    stalls from the spells whose boundaries were measured closely (``sharp``, :func:`_sharp`)
    where :data:`MIN_SPELLS` of them are, else from all (a spell's error, seconds in a 10-s
    spell, is a stall's small share and goes both ways: the stalls keep all). A teardown
    shorter than the sensor's ``settle`` [s] is the fall's own smear, no survivors spinning."""
    _stall_timing(add, line, period)
    _interval_timing(add, line, sharp)
    ended, tail = _job_end(add, line)
    _failure_timing(add, line, settle, ended, tail)
    _startup_timing(add, line, period)


def _stall_timing(add, line: Timeline, period: float) -> None:
    """The checkpoint stalls seen whole: their count, mean length and lengths' spread."""
    lengths = line.lengths()
    stalls = lengths[_whole(line) & (line.state == State.CHECKPOINT)]
    n_ck = stalls.size
    add("checkpoint count", n_ck, "1", "stalls between two running runs", resolved=True)
    edges = (
        "each from where the sensor's view reaches the stalled level (less its window) to where "
        "it leaves it"
    )
    add(
        "checkpoint stall",
        float(stalls.mean()) if n_ck else None,
        "s",
        f"mean of {n_ck} stalls (median {np.median(stalls):.3g} s, {stalls.min():.3g} to "
        f"{stalls.max():.3g} s), {edges}"
        if n_ck
        else "no stall between two running runs seen",
        "checkpoint.blocking_time",
    )
    add(
        "checkpoint stall spread",
        _length_spread(stalls, period),
        "1",
        f"coefficient of variation of the {n_ck} stalls' lengths, less what placing each edge "
        "within a sample gives"
        if n_ck >= MIN_SPELLS
        else f"{n_ck} stall(s) seen; a spread needs {MIN_SPELLS}",
        "checkpoint.blocking_cv",
    )


def _interval_timing(add, line: Timeline, sharp: np.ndarray) -> None:
    """The checkpoint interval: the median training between two stalls, of the spells whose
    edges were sampled closely (``sharp``) where :data:`MIN_SPELLS` are."""
    lengths, state = line.lengths(), line.state
    inner = _between_stalls(line, mask=True)
    every = int(inner.sum())
    if np.count_nonzero(inner & sharp) >= MIN_SPELLS:
        inner &= sharp
    up = lengths[inner]
    which = f" of the {every}, whose edges were sampled closely" if up.size < every else ""
    trained = float(lengths[np.isin(state, (State.RUNNING, State.RAMP))].sum())
    add(
        "checkpoint interval",
        float(np.median(up)) if up.size else None,
        "s",
        f"median of {up.size} running spells between two stalls{which}"
        if up.size
        else "no running spell between two stalls seen"
        if np.any(state == State.CHECKPOINT)
        else f"unseen: no checkpoint in the {format_duration(round(trained, 1))} of training the "
        "trace shows (the interval is longer)",
        "checkpoint.interval",
    )


def _job_end(add, line: Timeline) -> tuple[bool, np.ndarray]:
    """The job's end, if the trace shows it; returns whether it does and which segments follow
    the last training (its tail)."""
    # the job's end: the trace's last training, then idle to its end with no restart (a final
    # save or teardown at a held level may come between): an end, not a failure. A start-up
    # after that idle, cut by the trace's end, trains nothing the trace shows: the next job's
    # (a node's log runs on into the next job's initialisation), or a restart not seen
    state = line.state
    active = np.flatnonzero(np.isin(state, (State.RUNNING, State.RAMP, State.CHECKPOINT)))
    tail = np.arange(state.size) > (active[-1] if active.size else state.size)
    idle_end = state[-1] == State.FAILED_IDLE
    next_job = state.size > 1 and state[-1] == State.LOADING and state[-2] == State.FAILED_IDLE
    ended = bool(tail.any() and (idle_end or (next_job and tail[-2])))
    end = float(line.start[active[-1] + 1]) if ended else None
    add(
        "job end",
        end,
        "s",
        f"the last training ends {end:.4g} s into the trace; idle follows"
        + (
            " to its end"
            if idle_end
            else ", then a start-up cut by the trace's end (the next job's: no training seen)"
        )
        + ", no restart: the job's end, not a failure"
        if ended
        else "the job trains (or stalls) to the trace's end",
    )
    return ended, tail


def _failure_timing(add, line: Timeline, settle: float, ended: bool, tail: np.ndarray) -> None:
    """A failure's teardown (survivors spinning) and the idle wait before the restart, as
    medians of the spells seen whole before the job's ``tail`` (``ended``: the job's end is
    seen)."""
    lengths, state = line.lengths(), line.state
    prev, _ = _neighbours(state)
    whole = _whole(line)  # a segment cut by the trace's ends has no length

    def spells(name: str, use: np.ndarray, what: str, none: str, key=None) -> None:
        found = lengths[use]
        how = f"median of {found.size} {what}" if found.size else none
        add(name, float(np.median(found)) if found.size else None, "s", how, key)

    # a job that stops mid-trace and starts again: idle after a teardown, or straight after
    # training (a crash that kills the processes at once leaves no survivors spinning)
    stopped = np.isin(prev, (State.STALLED, State.RUNNING, State.CHECKPOINT, State.RAMP))
    smear = (state == State.STALLED) & (lengths < settle)
    came = np.concatenate(([False], smear[:-1]))  # the spell after a smear came from training
    straight = (state == State.FAILED_IDLE) & ((prev != State.STALLED) | came)
    straight &= stopped & ~tail & whole
    spells(
        "teardown",
        (state == State.STALLED) & whole & ~tail & ~smear,
        "spells of survivors spinning after a fault",
        f"no teardown seen: the job stopped straight from training to idle "
        f"{int(straight.sum())} time(s), and restarted"
        if straight.any()
        else "no failure seen" + (" (the job's end is no failure)" if ended else ""),
        "reliability.stall_time",
    )
    spells(
        "restart wait",
        (state == State.FAILED_IDLE) & stopped & ~tail & whole,
        "idle spells after a teardown or a stop straight from training, before a restart",
        "no restart after a failure seen",
        "reliability.restart_time",
    )


def _startup_timing(add, line: Timeline, period: float) -> None:
    """The start-ups seen whole: their mean length and their lengths' spread."""
    starts = line.lengths()[_whole_startups(line)]
    add(
        "start-up time",
        float(starts.mean()) if starts.size else None,
        "s",
        f"mean of {starts.size} start-up(s), each one state from leaving idle to the rise into "
        "running"
        if starts.size
        else "the start-up seen is cut by the trace's start or end: its length is unknown"
        if np.any(line.state == State.LOADING)
        else "no start-up level above idle seen (processes loading at idle)",
    )
    add(
        "start-up spread",
        _length_spread(starts, period, MIN_STARTUPS),
        "1",
        f"coefficient of variation of the {starts.size} start-ups' lengths, less what placing "
        "each edge within a sample gives"
        + (" (two: uncertain by about three quarters of itself)" if starts.size == 2 else "")
        if starts.size >= MIN_STARTUPS
        else f"{starts.size} start-up(s) seen; a spread needs {MIN_STARTUPS}",
        "workload.startup_cv",
    )


def _length_spread(lengths: np.ndarray, period: float, least: int = MIN_SPELLS) -> float:
    """Coefficient of variation of spell ``lengths`` [s], less the variance that placing each of
    a spell's two edges within a sample of ``period`` [s] gives (uniform: ``period² / 12``
    each); NaN for fewer than ``least``."""
    if lengths.size < least:
        return np.nan
    var = max(float(np.var(lengths, ddof=1)) - period**2 / 6.0, 0.0)
    return float(np.sqrt(var) / np.mean(lengths))
