"""The job timeline: start-up, checkpoints, failures, restarts, planned maintenance.

The job alternates between *up* periods (training, broken by periodic checkpoint stalls) and
*down* sequences after each interruption. Interruptions are Poisson processes in up time, one per
cause; an unexpected one loses the work since the last completed checkpoint. Everything is drawn
in a few vectorised batches: there is no loop over events or checkpoints.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import NamedTuple

import numpy as np

from powermodel.models.signal import group_ranks
from powermodel.models.variation import mean_one


class State(IntEnum):
    """Job states; the codes are stored in ``job_state``."""

    RUNNING = 0
    CHECKPOINT = 1
    STALLED = 2
    FAILED_IDLE = 3
    MAINTENANCE = 4
    LOADING = 5
    RAMP = 6
    STARTING = 7  # appended: the codes before it keep their meaning


# What each state says of a change of power, strongest first: a restart, a failure,
# maintenance, a checkpoint, training (indexed by the state's value). A restart comes first
# because a window holding it may still hold the idle time of the failure before it. The rules
# attribute a violation to the strongest state in its window; a campus shows, at each instant,
# its workloads' strongest.
_RANK = {
    State.STARTING: 0,
    State.LOADING: 0,
    State.RAMP: 0,
    State.STALLED: 1,
    State.FAILED_IDLE: 1,
    State.MAINTENANCE: 2,
    State.CHECKPOINT: 3,
    State.RUNNING: 4,
}
STATE_RANK = np.array([_RANK[State(v)] for v in range(len(State))], np.int8)


@dataclass(frozen=True)
class Recovery:
    """What follows one kind of interruption: ``(state, duration [s])`` in order."""

    steps: tuple[tuple[State, float], ...]
    loses_work: bool

    @property
    def duration(self) -> float:
        return sum(d for _, d in self.steps)

    @property
    def starting(self) -> float:
        """The length of its start-up (its ``STARTING`` states) [s]."""
        return sum(d for s, d in self.steps if s == State.STARTING)


@dataclass(frozen=True)
class Timeline:
    """A job's states over ``[0, duration)`` and its interruptions.

    Segment ``i`` spans ``[start[i], start[i+1])``; the last one ends at ``duration``.
    """

    start: np.ndarray
    state: np.ndarray
    duration: float
    event_time: np.ndarray
    event_cause: np.ndarray
    event_lost_work: np.ndarray
    running_time: float
    lost_work: float

    @property
    def effective_training_time(self) -> float:
        """Training time kept, as a fraction of the run."""
        return (self.running_time - self.lost_work) / self.duration


@dataclass(frozen=True)
class Windows:
    """Stretches ``[begin, end)`` in which one replica of a job follows its own recovery
    instead of the job's states, each laid out for rendering on a time axis of its own.

    Window ``i``'s states are segments (``seg_start``, ``seg_state``) on an axis where it begins
    at ``origin[i]``; the windows follow each other there in order, apart, each closed by a
    segment of the state ``closed``. So overlapping windows render in one pass, each at its own
    phase (:func:`powermodel.models.render.window_sums`).
    """

    begin: np.ndarray  # [s]
    end: np.ndarray  # [s]
    origin: np.ndarray  # [s] on the windows' own axis
    seg_start: np.ndarray  # [s] on the windows' own axis, increasing
    seg_state: np.ndarray


def replica_windows(
    line: Timeline,
    sequences: list[tuple[tuple[State, float], ...]],
    step: float,
    closed: int,
) -> Windows:
    """The recovery of the failed replica at each of ``line``'s interruptions whose cause has a
    sequence in ``sequences`` (the first ones; the rest, planned stops, take the whole job):
    :func:`recovery_windows` from each failure, its cause's sequence.

    Parameters
    ----------
    line
        The job's timeline (the others' states).
    sequences
        ``(state, duration [s])`` of a replica's recovery, per cause.
    step
        The job's step time. [s]
    closed
        State index that closes each window on its own axis (a shape of nothing).
    """
    mine = line.event_cause < len(sequences)
    return recovery_windows(
        line, line.event_time[mine], sequences, line.event_cause[mine], step, closed
    )


def recovery_windows(
    line: Timeline,
    begin: np.ndarray,
    sequences: list[tuple[tuple[State, float], ...]],
    which: np.ndarray,
    step: float,
    closed: int,
) -> Windows:
    """Windows from each of ``begin`` [s] (in order) in which a share of the job goes through
    the sequence ``sequences[which[i]]`` instead of the job's states, then rejoins it.

    The sequence's last state is a ramp to the running level. The share rejoins at the start of
    the job's next step (the others' training steps do not wait for it): where the job is
    training when the sequence ends, the share waits loaded (the state before the ramp lasts
    longer) until the ramp ends on a step boundary of the job. Windows end at the run's end at
    the latest. ``step`` [s] is the job's step; ``closed`` the state index that closes each
    window on its own axis (a shape of nothing).
    """
    ramps = [seq[-1][1] if seq and seq[-1][0] == State.RAMP else 0.0 for seq in sequences]
    heads = [seq[:-1] if ramp > 0 else seq for seq, ramp in zip(sequences, ramps, strict=True)]
    ramp = np.array(ramps)[which]
    due = begin + np.array([sum(d for _, d in seq) for seq in sequences])[which]
    # the job's segment at the rejoin: training there, the rejoin waits for its next step
    seg = np.clip(np.searchsorted(line.start, due, side="right") - 1, 0, line.start.size - 1)
    seg_end = np.append(line.start[1:], line.duration)[seg]
    training = line.state[seg] == State.RUNNING
    boundary = line.start[seg] + np.ceil((due - line.start[seg]) / step - 1e-9) * step
    rejoin = np.where(training, np.minimum(boundary, seg_end), due)
    end = np.minimum(rejoin, line.duration)
    length = end - begin
    origin = _origins(length)
    head_start, head_state = _sequence_segments(origin, heads, which)
    has_ramp = ramp > 0
    ramp_start = (origin + np.maximum(rejoin - begin - ramp, 0.0))[has_ramp]
    start = np.concatenate((head_start, ramp_start))
    state = np.concatenate((head_state, np.full(ramp_start.size, State.RAMP, np.int8)))
    return _closed_windows(begin, end, origin, start, state, closed)


def clipped_windows(line: Timeline, begin: np.ndarray, end: np.ndarray, closed: int) -> Windows:
    """Windows ``[begin, end)`` [s] (in order, apart) holding the job's own states, each from
    the state it is in at ``begin`` (a running segment there starts its step afresh), for a
    share of the job rendered with other tables (a clock locked for a flexibility event)."""
    end = np.minimum(end, line.duration)
    first = np.clip(np.searchsorted(line.start, begin, side="right") - 1, 0, None)
    last = np.searchsorted(line.start, end, side="left")  # segments starting before the end
    count = np.maximum(last - first, 1)
    owner, rank = group_ranks(count)
    index = np.repeat(first, count) + rank
    origin = _origins(end - begin)
    offset = np.maximum(line.start[index] - begin[owner], 0.0)  # the first from the window's start
    return _closed_windows(begin, end, origin, origin[owner] + offset, line.state[index], closed)


def trimmed(windows: Windows, keep: np.ndarray, end: np.ndarray, closed: int) -> Windows:
    """The ``windows`` where ``keep``, each ending at ``end`` [s] (no later than it did)."""
    w = windows
    owner = np.searchsorted(w.origin, w.seg_start, side="right") - 1
    body = (w.seg_state != closed) & keep[owner]
    end = np.minimum(end, w.end)
    return _closed_windows(
        w.begin[keep], end[keep], w.origin[keep], w.seg_start[body], w.seg_state[body], closed
    )


def at_most(begin: np.ndarray, end: np.ndarray, most: int) -> np.ndarray:
    """Which of the windows ``[begin, end)`` (by ``begin``, in order) to keep so that no more
    than ``most`` overlap: a window that would make one more is dropped (its replica is one of
    those already down)."""
    keep = np.ones(begin.size, bool)
    if begin.size == 0:
        return keep
    ended = np.searchsorted(np.sort(end), begin, side="right")
    if np.max(np.arange(begin.size) - ended) < most:  # never that many at once: all kept
        return keep
    down: list[float] = []  # the ends of the windows open, a heap; a rare, short pass
    for i, (b, e) in enumerate(zip(begin, end, strict=True)):
        while down and down[0] <= b:
            heapq.heappop(down)
        if len(down) >= most:
            keep[i] = False
        else:
            heapq.heappush(down, e)
    return keep


def _origins(length: np.ndarray) -> np.ndarray:
    """Where windows of ``length`` [s] begin on their own axis, one after the other, apart."""
    return np.concatenate(([0.0], np.cumsum(length + WINDOW_GAP)))[:-1]


def _closed_windows(
    begin: np.ndarray,
    end: np.ndarray,
    origin: np.ndarray,
    start: np.ndarray,
    state: np.ndarray,
    closed: int,
) -> Windows:
    """Windows from their segments on their own axis, each cut at its length (a window the run's
    end cuts short) and closed by the state ``closed``."""
    length = end - begin
    owner = np.searchsorted(origin, start, side="right") - 1
    within = start < origin[owner] + length[owner]
    start = np.concatenate((start[within], origin + length))
    state = np.concatenate((state[within], np.full(begin.size, closed, np.int8)))
    order = np.argsort(start, kind="stable")
    return Windows(begin, end, origin, start[order], state[order].astype(np.int64))


# Space between windows on their own axis [s]: each window's last interval stays apart from the
# next one's first
WINDOW_GAP = 1.0


def within(begin: np.ndarray, end: np.ndarray, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Which of ``times`` [s] fall in one of the stretches ``[begin, end)`` [s] (in order,
    apart), and the index of the last stretch begun at each (-1 before the first)."""
    at = np.searchsorted(begin, times, side="right") - 1
    return times < np.append(end, -np.inf)[at], at  # before the first: the -inf appended


def background_writes(
    line: Timeline,
    write: float,
    cut: bool = True,
    paused: tuple[np.ndarray, np.ndarray] = (np.empty(0), np.empty(0)),
) -> tuple[np.ndarray, np.ndarray]:
    """When an asynchronous checkpoint's background write runs: from the end of each
    checkpoint stall for ``write`` [s], a write waiting for the one before to finish (a planned
    stop's checkpoint can follow a write still in flight); with ``cut`` cut short where a
    failure stops the job first (its processes die with it; where a failure stops one replica,
    the others write on), and where a pause of the job (``paused``: its starts and ends [s])
    stops it; none starts while paused.

    Returns a timeline of two states: segment starts [s] and whether a write runs (1) or not
    (0), from 0 (nothing written yet).
    """
    seg_end = np.append(line.start[1:], line.duration)
    ready = seg_end[line.state == State.CHECKPOINT]
    # each write ends a write-time after the later of its checkpoint and the write before
    index = np.arange(ready.size)
    queued = np.maximum.accumulate(ready - index * write) + index * write  # when each can start
    waits = queued > ready + 1e-9 * write
    begin = np.where(waits, queued, ready)
    end = begin + write
    stops = line.start[line.state == State.STALLED] if cut else np.empty(0)
    stops = np.sort(np.concatenate((stops, paused[0])))
    outside = ~within(*paused, begin)[0]
    begin, end = begin[outside], end[outside]
    first = np.searchsorted(stops, begin, side="left")
    stop = np.append(stops, np.inf)[first]
    end = np.minimum(np.minimum(end, stop), line.duration)
    keep = end > begin
    start = np.concatenate(([0.0], np.column_stack((begin[keep], end[keep])).ravel()))
    state = np.concatenate(([0], np.tile([1, 0], int(keep.sum()))))
    return start, state


def running_before(line: Timeline, times: np.ndarray) -> np.ndarray:
    """Time the job spent training before each of ``times`` [s]. [s]"""
    seg_end = np.append(line.start[1:], line.duration)
    training = line.state == State.RUNNING
    before = np.concatenate(([0.0], np.cumsum(np.where(training, seg_end - line.start, 0.0))))
    seg = np.searchsorted(line.start, times, side="right") - 1
    inside = np.where(seg >= 0, times - line.start[np.maximum(seg, 0)], 0.0)
    return before[np.maximum(seg, 0)] + np.where(training[np.maximum(seg, 0)], inside, 0.0)


def young_daly_interval(mtbf: float, checkpoint_time: float) -> float:
    """Checkpoint period that minimises expected lost time: ``√(2·MTBF·C)``.

    Parameters
    ----------
    mtbf
        Mean time between interruptions of the job. [s]
    checkpoint_time
        Time to write one checkpoint. [s]

    References
    ----------
    .. [young] Young, J. W., "A first order approximation to the optimum checkpoint interval",
       Communications of the ACM 17(9), 530-531 (1974). https://doi.org/10.1145/361147.361115
    .. [daly] Daly, J. T., "A higher order estimate of the optimum checkpoint interval for
       restart dumps", Future Generation Computer Systems 22(3), 303-312 (2006).
       https://doi.org/10.1016/j.future.2004.11.016
    """
    return float(np.sqrt(2.0 * mtbf * checkpoint_time))


# How long survivors spin after a fault [s]. On one node the launcher sees a dead worker at its
# next check and stops the rest: 5 s, the check interval of NVIDIA's torchrun-based launcher
# [P, nvidia_resiliency]. Across nodes the other nodes' ranks learn of it only when their
# collectives fail: 60 s [A], between a link error seen at once and the 10-min NCCL watchdog
# timeout [P, pytorch].
TEARDOWN_ONE_NODE = 5.0
TEARDOWN_MULTI_NODE = 60.0


def teardown_time(n_nodes: int) -> float:
    """Time survivors spin in blocked collectives after a fault, before the job is torn down.

    Parameters
    ----------
    n_nodes
        Nodes (servers) of the job. [1]

    Returns
    -------
    float
        Teardown time. [s]

    Notes
    -----
    One node: the launcher's own check of its workers, 5 s [nvidia_resiliency]_. More nodes: 60 s,
    an assumption between an error seen at once and the NCCL watchdog timeout of 10 min that a
    hang waits for [pytorch]_.

    References
    ----------
    .. [nvidia_resiliency] NVIDIA, "NVIDIA Resiliency Extension: fault tolerance configuration",
       nvidia-resiliency-ext documentation (2025).
       https://nvidia.github.io/nvidia-resiliency-ext/fault_tolerance/api/config.html
    .. [pytorch] PyTorch, "torch.distributed.init_process_group", PyTorch documentation (2024).
       https://pytorch.org/docs/stable/distributed.html
    """
    return TEARDOWN_ONE_NODE if n_nodes == 1 else TEARDOWN_MULTI_NODE


def expected_up_time(
    duration: float,
    startup: float,
    counts: np.ndarray,
    downtimes: np.ndarray,
) -> float:
    """Up time [s] of a run of ``duration`` [s] with a start-up of ``startup`` [s] that saw
    ``counts`` [1] interruptions with the given down times [s].

    Inverts the renewal balance ``duration = startup + up + Σ counts·downtime``: the calibration
    that turns published interruption counts into rates per running GPU-hour.
    """
    return duration - startup - float(np.dot(counts, downtimes))


def job_timeline(
    duration: float,
    rates: np.ndarray,
    recoveries: list[Recovery],
    startup: tuple[tuple[State, float], ...],
    interval: float,
    checkpoint_stall: float,
    checkpoint_done: float,
    rng: np.random.Generator,
    phase: float = 0.0,
    crashes: Sequence[tuple[float, tuple[tuple[State, float], ...]]] = (),
    stall_cv: float = 0.0,
    stall_rng: np.random.Generator | None = None,
    startup_cv: float = 0.0,
    startup_rng: np.random.Generator | None = None,
) -> Timeline:
    """Draw one job timeline.

    Parameters
    ----------
    duration
        Length of the run. [s]
    rates
        Interruption rate of each cause, per second of up time. [1/s]
    recoveries
        The recovery sequence of each cause.
    startup
        States at the job's first start, before it trains.
    interval
        Training time between checkpoints. [s]
    checkpoint_stall
        Time the job stalls to take a checkpoint. [s]
    checkpoint_done
        Time from the start of that stall until the checkpoint is durable (equal to the stall when
        blocking; longer when the write continues in the background). [s]
    rng
        Random generator of this job's failures.
    phase
        Training time into its checkpoint cycle the job is at its first start (less than
        ``interval``: its first checkpoint comes that much sooner). [s]
    crashes
        Interruptions that do not come from the job's own failures (a grid disturbance that
        takes the servers' power): each at a time [s], in increasing order, with the states
        the job goes through after it. Each loses the work since the last durable checkpoint,
        whatever the job was doing, and is an event of cause ``len(recoveries)``; the draws
        go on after its states as after a start.
    stall_cv
        Coefficient of variation of each checkpoint stall's length: each drawn from a lognormal
        of mean ``checkpoint_stall`` (the time to durable moves with it), from ``stall_rng``;
        0, every stall ``checkpoint_stall`` long. [1]
    stall_rng
        Random generator of the stalls' lengths (the job's own stream: drawing them leaves the
        failures' draws as they were); needed when ``stall_cv`` is above 0.
    startup_cv
        Coefficient of variation of each start-up's length (every ``STARTING`` state: in
        ``startup``, in each recovery, after each crash): each one's given length times a
        lognormal factor of mean 1, from ``startup_rng``, so that the start-ups' mean stays the
        given length; 0, every start-up as given. [1]
    startup_rng
        Random generator of the start-ups' lengths (a stream of their own: drawing them leaves
        the failures' and the stalls' draws as they were); needed when ``startup_cv`` is above 0.
    """
    stalls = _Stalls(checkpoint_stall, stall_cv, stall_rng)
    starts = _Startups(startup_cv, startup_rng)
    rates = np.asarray(rates, dtype=float)
    job = _Job(rates, recoveries, interval, stalls, checkpoint_done, starts, rng)
    if not crashes:
        return _crash_free_timeline(job, duration, startup, phase)[0]
    return _joined(_pieces_between_crashes(job, duration, startup, phase, crashes), job, duration)


@dataclass(frozen=True)
class _Job:
    """What each stretch of a job's timeline is drawn from (:func:`job_timeline`'s arguments
    of the same names): the interruption rate of each cause [1/s] and its recovery, the
    training time between checkpoints [s], the checkpoint stalls, the time from a stall's start
    until its checkpoint is durable [s], the start-ups and the generator of the failures."""

    rates: np.ndarray
    recoveries: list[Recovery]
    interval: float
    stalls: _Stalls
    checkpoint_done: float
    starts: _Startups
    rng: np.random.Generator


def _pieces_between_crashes(
    job: _Job,
    duration: float,
    startup: tuple[tuple[State, float], ...],
    phase: float,
    crashes: Sequence[tuple[float, tuple[tuple[State, float], ...]]],
) -> list[tuple[float, Timeline, float]]:
    """The job's timeline drawn stretch by stretch between the ``crashes`` (each at a time [s]
    with the states after it) over ``duration`` [s]: each stretch's start [s], its timeline
    from there, and the work it loses if a crash ends it [s]."""
    pieces: list[tuple[float, Timeline, float]] = []
    at, states = 0.0, startup
    for when, following in [*crashes, (duration, ())]:
        when = min(float(when), duration)
        line, tail = _crash_free_timeline(job, when - at, states, phase if at == 0.0 else 0.0)
        pieces.append((at, line, tail))
        at, states = when, following
        if when >= duration:
            break
    return pieces


def _joined(pieces: list[tuple[float, Timeline, float]], job: _Job, duration: float) -> Timeline:
    """One timeline of ``duration`` [s] from the stretches between crashes
    (:func:`_pieces_between_crashes`): every stretch but the last ends in a crash, an event of
    cause ``len(job.recoveries)`` that loses the stretch's unsaved work."""
    crashed = len(pieces) - 1  # every piece but the last ends in a crash

    def events(own, crash) -> np.ndarray:
        """Each piece's events (``own(at, line)``), each crash's after them (``crash(at, line,
        tail)``: every piece's but the last)."""
        return np.concatenate(
            [
                np.r_[own(at, line), crash(at, line, tail)] if i < crashed else own(at, line)
                for i, (at, line, tail) in enumerate(pieces)
            ]
        )

    return Timeline(
        start=np.concatenate([line.start + at for at, line, _ in pieces]),
        state=np.concatenate([line.state for _, line, _ in pieces]),
        duration=duration,
        event_time=events(
            lambda at, line: line.event_time + at, lambda at, line, _: at + line.duration
        ),
        event_cause=events(lambda _, line: line.event_cause, lambda *_: len(job.recoveries)).astype(
            np.int64
        ),
        event_lost_work=events(lambda _, line: line.event_lost_work, lambda *piece: piece[2]),
        running_time=sum(line.running_time for _, line, _ in pieces),
        lost_work=sum(line.lost_work for _, line, _ in pieces)
        + sum(tail for _, _, tail in pieces[:crashed]),
    )


def _crash_free_timeline(
    job: _Job, duration: float, startup: tuple[tuple[State, float], ...], phase: float
) -> tuple[Timeline, float]:
    """:func:`job_timeline` over ``duration`` [s] without crashes, from the states ``startup``
    and ``phase`` [s] into the checkpoint cycle, and the work the job would lose if it crashed
    at ``duration`` (trained since its last durable checkpoint there) [s]."""
    up = _up_periods(job, duration, startup)
    n_events = up.cause.size
    run_start, run_state, running, saved = _checkpoint_cycles(job, up.start, up.end, phase)
    loses = np.array([r.loses_work for r in job.recoveries], dtype=bool)[up.cause]
    lost = np.where(loses, running[:n_events] - saved[:n_events], 0.0)

    run_start = np.maximum(run_start, up.ready)  # the first running segment from the start
    rec_start, rec_state = _sequence_segments(
        up.failure, [r.steps for r in job.recoveries], up.cause, up.factor
    )
    init_start, init_state = _sequence_segments(np.zeros(1), [up.startup])
    start = np.concatenate((init_start, run_start, rec_start))
    state = np.concatenate((init_state, run_state, rec_state))
    keep = start < duration
    order = np.argsort(start[keep], kind="stable")
    tail = float(max(running[n_events] - saved[n_events], 0.0)) if running.size > n_events else 0.0
    return Timeline(
        start=start[keep][order],
        state=state[keep][order],
        duration=duration,
        event_time=up.failure,
        event_cause=up.cause,
        event_lost_work=lost,
        running_time=float(running.sum()),
        lost_work=float(lost.sum()),
    ), tail


class _UpPeriods(NamedTuple):
    """A stretch's interruptions and the up periods between them (:func:`_up_periods`)."""

    startup: tuple[tuple[State, float], ...]  # its start-up's states, their lengths as drawn
    ready: float  # [s] when the start-up ends
    start: np.ndarray  # [s] each up period's start
    end: np.ndarray  # [s] and end, the last cut at the stretch's end
    failure: np.ndarray  # [s] each interruption before the stretch's end
    cause: np.ndarray  # its cause
    factor: np.ndarray | None  # the factor on its start-up; None where start-ups are as given


def _up_periods(job: _Job, duration: float, startup: tuple[tuple[State, float], ...]) -> _UpPeriods:
    """The interruptions of a stretch of ``duration`` [s] that begins with ``startup``, and
    the up periods between them."""
    down = np.array([r.duration for r in job.recoveries])
    t0 = sum(d for _, d in startup)
    if job.starts.cv > 0.0:
        # this start's own length drawn first, then one for each interruption's restart; the
        # failures' batches sized as at the given lengths (their stream as it was)
        startup = job.starts.scaled(startup, job.starts.factors(1)[0])
        drawn = sum(d for _, d in startup)
        starting = np.array([r.starting for r in job.recoveries])
        varied = (starting, job.starts, max(duration - drawn, 0.0))
        up, cause, factor = _draw_interruptions(
            max(duration - t0, 0.0), job.rates, down, job.rng, varied
        )
        down_each = down[cause] + starting[cause] * (factor - 1.0)
        t0 = drawn
    else:
        up, cause, _ = _draw_interruptions(max(duration - t0, 0.0), job.rates, down, job.rng)
        factor, down_each = None, down[cause]
    period_start = t0 + np.concatenate(([0.0], np.cumsum(up + down_each)))[:-1]
    failure = period_start + up
    n_events = int(np.searchsorted(failure, duration))
    period_start = period_start[: n_events + 1]
    period_end = np.minimum(failure[: n_events + 1], duration)
    period_end = np.maximum(period_end, period_start)
    factor = None if factor is None else factor[:n_events]
    return _UpPeriods(
        startup, t0, period_start, period_end, failure[:n_events], cause[:n_events], factor
    )


def _checkpoint_cycles(
    job: _Job, period_start: np.ndarray, period_end: np.ndarray, phase: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The training and checkpoint segments of each up period ``[period_start, period_end)``
    [s], the first one's cycles counted from ``phase`` [s] before its start (none of that
    trained); with each period's running time [s] and the work its durable checkpoints saved
    [s]."""
    stalls, interval = job.stalls, job.interval
    checkpoint_stall = stalls.mean
    cycle = interval + checkpoint_stall
    # the first period's cycles counted from ``phase`` before its start: none of that trained
    ahead = np.zeros(period_start.size)
    ahead[0] = phase
    length = period_end - (period_start - ahead)
    if stalls.cv > 0.0:
        run_start, run_state, running, durable = _varied_up_segments(
            period_start - ahead, length, interval, stalls, job.checkpoint_done - checkpoint_stall
        )
        running = running - ahead
    else:
        n_full = np.floor(length / cycle)
        rest = length - n_full * cycle
        running = n_full * interval + np.minimum(rest, interval) - ahead
        durable = np.maximum(np.floor((length - interval - job.checkpoint_done) / cycle) + 1.0, 0.0)
        run_start, run_state = _up_segments(
            period_start - ahead, length, n_full, rest, interval, cycle
        )
    saved = np.maximum(durable * interval - ahead, 0.0)
    return run_start, run_state, running, saved


def expected_interruptions(horizon: float, rates: np.ndarray, down: np.ndarray) -> float:
    """Mean number of interruptions in ``horizon`` [s] of a renewal process that alternates
    exponential up times (``rates`` per cause [1/s]) with each cause's down time [s].

    Down times bound the count whatever the rates: at most ``horizon / min(down)`` events.
    """
    total = float(np.sum(rates))
    if total <= 0.0:
        return 0.0
    cycle = 1.0 / total + float(np.dot(rates, down)) / total  # mean up + mean down
    return horizon / cycle


def _draw_interruptions(
    horizon: float,
    rates: np.ndarray,
    down: np.ndarray,
    rng: np.random.Generator,
    varied: tuple[np.ndarray, _Startups, float] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Up times and causes of enough interruptions to pass ``horizon`` [s], drawn in batches
    sized by the expected count (so memory follows the events, not the rates).

    With start-ups of drawn length, ``varied`` holds each cause's start-up length [s], the
    start-ups' draws and the horizon [s] from the start as drawn: each batch's start-ups are
    drawn with it (a factor on each interruption's start-up, returned third; else None), and
    batches are drawn until the last interruption, its down time as drawn, passes that horizon.
    The batches stay those of ``down``'s, so the failures' stream is as it was.
    """
    if not (np.all(np.isfinite(down)) and np.all(down >= 0) and np.all(np.isfinite(rates))):
        raise ValueError("down times must be finite and non-negative, rates finite")
    total = rates.sum()
    if total <= 0.0:
        factor = None if varied is None else varied[1].factors(1)
        return np.array([np.inf]), np.zeros(1, dtype=np.int64), factor
    p = rates / total
    expected = expected_interruptions(horizon + down.max(), rates, down)
    batch = int(expected * 1.2 + 10.0 * np.sqrt(expected) + 16)
    starting, starts, reach = (None, None, horizon + down.max()) if varied is None else varied
    up_parts, cause_parts, factor_parts = [], [], []
    elapsed = last = 0.0  # the time drawn, and where the last interruption drawn comes [s]
    # the last up period must reach past the horizon: as drawn, its interruption with start-ups
    while (elapsed if starts is None else last) <= reach:
        up = rng.exponential(1.0 / total, batch)
        cause = rng.choice(rates.size, size=batch, p=p)
        each = down[cause]
        if starts is not None:
            factor = starts.factors(batch)
            each = each + starting[cause] * (factor - 1.0)
            factor_parts.append(factor)
        up_parts.append(up)
        cause_parts.append(cause)
        last = elapsed + float(np.sum(up + each)) - float(each[-1])
        elapsed += float(np.sum(up + each))
    factor = None if starts is None else np.concatenate(factor_parts)
    return np.concatenate(up_parts), np.concatenate(cause_parts), factor


def _up_segments(
    start: np.ndarray,
    length: np.ndarray,
    n_full: np.ndarray,
    rest: np.ndarray,
    interval: float,
    cycle: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Running and checkpoint segments of each up period, cut where the period ends."""
    pieces = (2 * n_full + (rest > 0) + (rest > interval)).astype(np.int64)
    pieces[length <= 0] = 0
    owner, index = group_ranks(pieces)
    offset = (index // 2) * cycle + (index % 2) * interval
    state = np.where(index % 2 == 0, State.RUNNING, State.CHECKPOINT).astype(np.int8)
    return start[owner] + offset, state


@dataclass(frozen=True)
class _Stalls:
    """Checkpoint stalls: their ``mean`` length [s], the coefficient of variation ``cv`` of a
    lognormal they are drawn from, and the generator ``rng`` that draws them."""

    mean: float
    cv: float = 0.0
    rng: np.random.Generator | None = None

    def __post_init__(self) -> None:
        if not (np.isfinite(self.cv) and self.cv >= 0.0):
            raise ValueError(f"the stalls' coefficient of variation is {self.cv!r}: give 0 or more")
        if self.cv > 0.0 and self.rng is None:
            raise ValueError("stalls that vary (stall_cv above 0) need their stall_rng")

    def draw(self, n: int) -> np.ndarray:
        """``n`` stall lengths [s], lognormal with mean :attr:`mean` and :attr:`cv`."""
        return self.mean * mean_one(n, self.cv, "lognormal", self.rng)


@dataclass(frozen=True)
class _Startups:
    """Start-ups of drawn length: the coefficient of variation ``cv`` of the lognormal factor
    (mean 1) on each ``STARTING`` state's length, and the generator ``rng`` that draws them."""

    cv: float = 0.0
    rng: np.random.Generator | None = None

    def __post_init__(self) -> None:
        if not (np.isfinite(self.cv) and self.cv >= 0.0):
            raise ValueError(
                f"the start-ups' coefficient of variation is {self.cv!r}: give 0 or more"
            )
        if self.cv > 0.0 and self.rng is None:
            raise ValueError("start-ups that vary (startup_cv above 0) need their startup_rng")

    def factors(self, n: int) -> np.ndarray:
        """``n`` factors on a start-up's length [1], lognormal with mean 1 and :attr:`cv`."""
        return mean_one(n, self.cv, "lognormal", self.rng)

    @staticmethod
    def scaled(
        sequence: tuple[tuple[State, float], ...], factor: float
    ) -> tuple[tuple[State, float], ...]:
        """``sequence`` with each ``STARTING`` state's length times ``factor``."""
        return tuple((s, d * factor if s == State.STARTING else d) for s, d in sequence)


def _varied_up_segments(
    start: np.ndarray, length: np.ndarray, interval: float, stalls: _Stalls, persist: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Running and checkpoint segments of each up period (beginning at ``start``, ``length``
    long [s]), each stall drawn from ``stalls``; with each period's running time [s] and the
    checkpoints it made durable (``persist`` [s] after its stall ends).

    Checkpoint ``k`` of a period begins after ``k + 1`` intervals of training and the ``k``
    stalls before it; a period holds at most ``length / interval + 1`` checkpoints, so that
    many are drawn for it (at once for all periods) and those that begin past its end dropped.
    """
    length = np.maximum(length, 0.0)
    most = np.ceil(length / interval).astype(np.int64) + 1
    owner, k = group_ranks(most)
    drawn = stalls.draw(owner.size)
    # the stalls before each checkpoint of its period: a cumulative sum restarted per period
    total = np.concatenate(([0.0], np.cumsum(drawn)))
    before = total[:-1] - total[np.repeat(np.cumsum(most) - most, most)]
    run_at = k * interval + before
    stall_at = run_at + interval
    trained = np.clip(length[owner] - run_at, 0.0, interval)
    running = np.bincount(owner, trained, minlength=start.size)
    made = stall_at + drawn + persist <= length[owner]
    durable = np.bincount(owner, made, minlength=start.size).astype(float)
    offset = np.ravel(np.column_stack((run_at, stall_at)))
    state = np.tile(np.array([State.RUNNING, State.CHECKPOINT], np.int8), owner.size)
    keep = offset < np.repeat(length[owner], 2)
    return np.repeat(start[owner], 2)[keep] + offset[keep], state[keep], running, durable


def _sequence_segments(
    when: np.ndarray,
    sequences: list[tuple[tuple[State, float], ...]],
    which: np.ndarray | None = None,
    factor: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Segments of ``sequences[which[i]]`` starting at ``when[i]``, each ``STARTING`` state's
    length times ``factor[i]`` where given (a start-up of drawn length); zero-length steps
    dropped; none where no event starts (a scope with no failure causes has no sequences)."""
    if when.size == 0:
        return np.zeros(0), np.zeros(0, dtype=np.int8)
    width = max(len(s) for s in sequences)
    states = np.full((len(sequences), width), -1, dtype=np.int8)
    times = np.zeros((len(sequences), width))
    for row, seq in enumerate(sequences):  # a handful of causes, not events
        for col, (state, seconds) in enumerate(seq):
            states[row, col], times[row, col] = state, seconds
    which = np.zeros(when.size, dtype=np.int64) if which is None else which
    state = states[which]
    if factor is None:
        offsets = np.cumsum(times, axis=1) - times
        start = when[:, None] + offsets[which]
        keep = (state >= 0) & (times[which] > 0)
        return start[keep], state[keep]
    each = np.where(state == State.STARTING, times[which] * factor[:, None], times[which])
    start = when[:, None] + np.cumsum(each, axis=1) - each
    keep = (state >= 0) & (each > 0)
    return start[keep], state[keep]
