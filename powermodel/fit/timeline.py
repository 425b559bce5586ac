"""The job's states found in a trace, as segments (:class:`Timeline`), made well formed
(:func:`well_formed`), and the queries every stage makes of them: which segment a sample falls
in, the samples a state holds once the sensor settled, their mean or median, the training
between two stalls, the segments seen whole. Written by :mod:`powermodel.fit.states`, read by
every stage after it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from powermodel.errors import PowerModelError
from powermodel.models.events import State


@dataclass(frozen=True)
class Timeline:
    """The job states found in a trace: segment ``i`` spans ``[start[i], start[i+1])`` [s from
    the trace's first sample], with :class:`~powermodel.models.events.State` codes; idle before
    and between runs is ``FAILED_IDLE``, a start-up level above idle ``LOADING``."""

    start: np.ndarray
    state: np.ndarray
    duration: float

    def lengths(self) -> np.ndarray:
        return np.diff(np.append(self.start, self.duration))

    def count(self, state: State) -> int:
        return int(np.count_nonzero(self.state == state))


def well_formed(line: Timeline) -> tuple[Timeline, tuple[str, ...]]:
    """``line`` as a timeline the model can render: the first segment from 0, starts strictly
    increasing within ``[0, duration)``, every length above 0, no two segments of one state in
    a row; with a warning for each kind of repair.

    A segment whose start is not finite, or that a later one starts at or before (a zero or
    negative length: crossed boundaries), is dropped and the segments either side of it meet;
    segments that begin at or after the trace's end are dropped; a first segment that starts
    late or early starts at 0. A state that is no job state, or a duration that is not a
    positive number, is refused: no repair could say what the trace held there.
    """
    start, state = np.asarray(line.start, float), np.asarray(line.state)
    codes = np.array([s.value for s in State])
    if not (np.isfinite(line.duration) and line.duration > 0):
        raise PowerModelError(
            f"the fitted timeline spans {line.duration!r} s: no trace of positive length was "
            "fitted; check the trace's times"
        )
    if start.size == 0 or start.shape != state.shape or not np.isin(state, codes).all():
        bad = sorted(set(state[~np.isin(state, codes)].tolist()))
        raise PowerModelError(
            f"the fitted timeline holds {start.size} start(s) for {state.size} state(s)"
            + (f", and state code(s) {bad} that are no job state" if bad else "")
            + ": it cannot be written; report this trace to the project"
        )
    said: list[str] = []
    ok = np.isfinite(start) & (start < line.duration)
    if not ok.any():
        raise PowerModelError(
            f"the fitted timeline has no segment within the trace's {line.duration:.6g} s: it "
            "cannot be written; report this trace to the project"
        )
    if not ok.all():
        said.append(
            f"{int((~ok).sum())} segment(s) starting at no time or at or after the trace's end "
            f"({line.duration:.6g} s) dropped"
        )
    start, state = start[ok], state[ok]
    if np.any(start < 0.0):
        said.append(f"{int((start < 0).sum())} segment(s) starting before the trace: from 0")
        start = np.maximum(start, 0.0)
    # a segment that a later one begins at or before holds nothing (crossed boundaries): it is
    # dropped and its neighbours meet; what is kept then starts strictly in order
    end = np.minimum.accumulate(np.append(start[1:], line.duration)[::-1])[::-1]
    keep = end > start
    if not keep.all():
        lost = ", ".join(sorted({State(v).name.lower() for v in state[~keep].tolist()}))
        said.append(
            f"{int((~keep).sum())} segment(s) of zero or negative length ({lost}) dropped, "
            "their neighbours meeting"
        )
    start, state = start[keep], state[keep]
    if start[0] != 0.0:
        said.append(f"the first segment began {start[0]:.6g} s into the trace: from 0")
        start = np.concatenate(([0.0], start[1:]))
    new = np.append(True, state[1:] != state[:-1])
    if not new.all():
        said.append(f"{int((~new).sum())} segment(s) joined to the one before, of the same state")
    fixed = Timeline(
        start=start[new], state=state[new].astype(line.state.dtype), duration=line.duration
    )
    return fixed, tuple(f"the fitted timeline: {s}" for s in said)


def _segment_of(line: Timeline, times: np.ndarray) -> np.ndarray:
    """The index of the segment of ``line`` each of ``times`` [s] falls in (before the first:
    the first)."""
    return np.clip(np.searchsorted(line.start, times, side="right") - 1, 0, line.start.size - 1)


def _neighbours(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The code before and after each of ``codes`` (segments' states, runs' labels), -1 past
    either end."""
    return np.concatenate(([-1], codes[:-1])), np.concatenate((codes[1:], [-1]))


def _whole(line: Timeline) -> np.ndarray:
    """Which of ``line``'s segments are seen whole: all but the two the trace's start and end
    cut (whose lengths are unknown)."""
    whole = np.ones(line.state.size, bool)
    whole[0] = whole[-1] = False
    return whole


def _segment_medians(times: np.ndarray, x: np.ndarray, line: Timeline, settle: float) -> np.ndarray:
    """Median of each segment's samples once the sensor settled in it (all its samples where
    none settled) [W]; NaN for a segment with no sample."""
    seg = _segment_of(line, times)
    settled = times >= line.start[seg] + settle
    both = pd.Series(x).groupby(seg).median()
    late = pd.Series(x[settled]).groupby(seg[settled]).median()
    out = np.full(line.start.size, np.nan)
    out[both.index.to_numpy()] = both.to_numpy()
    out[late.index.to_numpy()] = late.to_numpy()
    return out


def _state_levels(
    state: np.ndarray, running: float, idle: float, stalled: float, start_up: float
) -> np.ndarray:
    """The level [W] each segment (or run) holds by its ``state``: ``idle`` while idle,
    ``stalled`` in a checkpoint stall or a teardown, ``start_up`` in a start-up, ``running``
    in the rest (running, a ramp)."""
    out = np.full(state.size, running)
    out[state == State.FAILED_IDLE] = idle
    out[state == State.LOADING] = start_up
    out[np.isin(state, (State.CHECKPOINT, State.STALLED))] = stalled
    return out


def _settled_in(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    state: State,
    settle: float,
    later_half: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Which samples (at ``times`` [s], values ``x``) lie in ``state`` segments once the chain
    settled in them (``settle`` [s]; or only in their later half), NaN samples (no channel
    reported) none; and each sample's segment."""
    seg = _segment_of(line, times)
    ends = np.append(line.start[1:], line.duration)
    begin = line.start + settle
    if later_half:
        begin = np.maximum(begin, 0.5 * (line.start + ends))
    inside = (line.state[seg] == state) & (times >= begin[seg]) & (times < ends[seg])
    return inside & np.isfinite(x), seg


def _settled_level(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    state: State,
    settle: float,
    *,
    average: Callable[[np.ndarray], Any],
    later_half: bool = False,
) -> tuple[float, int]:
    """The ``average`` (``np.mean``, ``np.median``) of the samples of ``state`` segments once
    the sensor settled in them (``settle`` [s]; or only in their later half) and their count;
    NaN samples (no channel reported) are none."""
    inside, _ = _settled_in(times, x, line, state, settle, later_half)
    return (float(average(x[inside])) if inside.any() else np.nan), int(inside.sum())


def _between_stalls(line: Timeline, mask: bool = False) -> np.ndarray:
    """Lengths [s] of the training between two stalls: the running segments with a checkpoint
    stall either side (the stalls' own lengths, which vary, stay out of them); or, with
    ``mask``, which segments those are."""
    state = line.state
    prev, nxt = _neighbours(state)
    inner = (state == State.RUNNING) & (prev == State.CHECKPOINT) & (nxt == State.CHECKPOINT)
    return inner if mask else line.lengths()[inner]


def _whole_startups(line: Timeline) -> np.ndarray:
    """Which of ``line``'s segments are start-ups seen whole (one cut by the trace's start or
    end has no length)."""
    return (line.state == State.LOADING) & _whole(line)
