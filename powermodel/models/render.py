"""Rendering a segmented timeline onto a time grid as exact interval means.

Each segment has a *shape*: a quantity tabulated as piecewise-constant cells over one unit of a
shape coordinate ``x`` that advances at ``rate`` per second from 0 at the segment start (iteration
phase for running segments, ramp progress for ramps, seconds for constant states). The integral of
a shape is known exactly at any ``x`` (cumulative table, periodic continuation), so the integral of
the whole timeline is known exactly at every grid edge, and the interval mean is a difference of
integrals divided by the step: energy is exact at any resolution and nothing aliases.

With step-to-step variation (:class:`Steps`), a periodic shape's segments are cut into drawn
steps instead: each step runs the shape's unit once at its own length and levels, the last cut by
the segment's end, and the integral stays exact (a running sum over the steps before, the table
within the step).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from powermodel.models.events import Windows
from powermodel.models.signal import group_ranks

# Grid edges per pass: its temporaries stay in the CPU cache (8.6 M edges: 0.23 s, at 1 << 15 0.38)
CHUNK = 1 << 14


def cumulative_tables(cells: np.ndarray) -> np.ndarray:
    """Cumulative integral over one unit of ``x`` of cell values ``(..., n_shapes, n_cells)``.

    Returns an array ``(..., n_shapes, n_cells + 1)`` starting at 0. [unit of the cells × unit
    of ``x``]
    """
    n_cells = cells.shape[-1]
    cum = np.cumsum(cells, axis=-1) / n_cells
    return np.concatenate((np.zeros(cum.shape[:-1] + (1,)), cum), axis=-1)


@dataclass(frozen=True)
class Steps:
    """Drawn steps of the segments of one periodic shape (from
    :func:`powermodel.models.variation.draw_steps`).

    A segment of that shape starts ``count`` steps from index ``first`` in ``bound``, the last
    cut by its end (or, should its steps end before it, runs the shape at its mean for what is
    left). Step ``j`` lasts ``bound[j+1] − bound[j]`` units of the shape's coordinate and draws
    ``base_q + (scale_jq − 1)·variable_q`` of quantity ``q``, where ``level[uses[q], j+1] −
    level[uses[q], j]`` is its length times ``scale_jq − 1``. A render of fewer quantities
    (the first of them) leaves the others out.
    """

    shape: int
    first: np.ndarray  # per segment: index of its first step (int64)
    count: np.ndarray  # per segment: the steps it starts, 0 in segments of other shapes (int64)
    bound: np.ndarray  # step boundaries in the job's step coordinate, then the last end
    level: np.ndarray  # (n_levels, n + 1): running sums of length · (scale − 1), at boundaries
    variable: np.ndarray  # (n_quantities, n_cells + 1): cumulative table of the scaled part
    uses: np.ndarray  # (n_quantities,): the row of ``level`` that scales each quantity (int64)


def interval_means(
    seg_start: np.ndarray,
    seg_shape: np.ndarray,
    shape_rate: np.ndarray,
    cumulative: np.ndarray,
    edges: np.ndarray,
    steps: Steps | None = None,
) -> np.ndarray:
    """Mean of each quantity over each interval ``[edges[i], edges[i+1])``.

    Parameters
    ----------
    seg_start
        Start of each segment, increasing, the first at or before ``edges[0]``. [s]
    seg_shape
        Shape index of each segment.
    shape_rate
        Rate of each shape's coordinate. [1/s]
    cumulative
        ``(n_quantities, n_shapes, n_cells + 1)`` from :func:`cumulative_tables`.
    edges
        Interval edges, increasing. [s]
    steps
        Drawn steps of one periodic shape's segments; none: every step at the mean.

    Returns
    -------
    numpy.ndarray
        ``(n_quantities, edges.size - 1)``.
    """
    seg_end = np.append(seg_start[1:], edges[-1])
    every = np.arange(seg_start.size)
    seg_integral = _integral_in_segment(
        cumulative, seg_shape, shape_rate[seg_shape], seg_end - seg_start, every, steps
    )
    before = np.concatenate(
        (np.zeros((cumulative.shape[0], 1)), np.cumsum(seg_integral, axis=1)[:, :-1]), axis=1
    )
    out = np.empty((cumulative.shape[0], edges.size - 1))
    for lo in range(0, edges.size - 1, CHUNK):  # bounded temporaries on long runs
        chunk = edges[lo : lo + CHUNK + 1]
        seg = segment_of(seg_start, chunk)
        shape = seg_shape[seg]
        total = _integral_in_segment(
            cumulative, shape, shape_rate[shape], chunk - seg_start[seg], seg, steps
        )
        total += before.take(seg, axis=1)
        means = out[:, lo : lo + chunk.size - 1]
        np.subtract(total[:, 1:], total[:, :-1], out=means)
        means /= np.diff(chunk)
    return out


def window_sums(
    seg_start: np.ndarray,
    seg_shape: np.ndarray,
    shape_rate: np.ndarray,
    cumulative: np.ndarray,
    windows: Windows,
    dt: float,
    lo: int,
    hi: int,
    steps: Steps | None = None,
    own_rate: np.ndarray | None = None,
    own_cumulative: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """What a timeline renders within each of ``windows``, and what the windows' own timelines
    render (on ``own_rate`` and ``own_cumulative``, by default the timeline's), summed over the
    windows on each interval of a grid of step ``dt`` [s] from step ``lo`` to ``hi`` (interval
    means: integrals over ``dt``).

    Returns two arrays ``(n_quantities, hi - lo)``: the timeline's (``seg_start``,
    ``seg_shape``, ``steps`` as :func:`interval_means` takes them) over the windows, counted once
    for each window that covers an instant, then the windows'. Their difference, scaled by the
    share of the job a window stands for, is what the windows change of the timeline's means:
    exact at any ``dt`` as :func:`interval_means` is, each window cut where grid edges fall.
    """
    out = np.zeros((2, cumulative.shape[0], hi - lo))
    t0, t1 = lo * dt, hi * dt
    pick = (windows.begin < t1) & (windows.end > t0)
    begin, end = np.maximum(windows.begin[pick], t0), np.minimum(windows.end[pick], t1)
    keep = end > begin
    begin, end = begin[keep], end[keep]
    if begin.size == 0:
        return out[0], out[1]
    edges, owner, inner, where = _window_edges(begin, end, dt)
    # the timeline: once on every cut of the windows' edges, weighed by the windows over each
    cuts = np.unique(edges)
    covering = np.searchsorted(np.sort(begin), cuts[:-1], side="right") - np.searchsorted(
        np.sort(end), cuts[:-1], side="right"
    )
    means = interval_means(seg_start, seg_shape, shape_rate, cumulative, cuts, steps)
    bins = np.floor((cuts[:-1] + cuts[1:]) / (2.0 * dt)).astype(np.int64) - lo
    _add_into_bins(out[0], means * (np.diff(cuts) * covering), bins, covering > 0)
    # the windows: each on its own axis, where it starts at its origin
    shift = (windows.origin[pick][keep] - windows.begin[pick][keep])[owner]
    own = edges + shift
    means = interval_means(
        windows.seg_start,
        windows.seg_state,
        shape_rate if own_rate is None else own_rate,
        cumulative if own_cumulative is None else own_cumulative,
        own,
    )
    _add_into_bins(out[1], means * np.diff(own), where - lo, inner)
    out /= dt
    return out[0], out[1]


def _window_edges(
    begin: np.ndarray, end: np.ndarray, dt: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Each window ``[begin, end)`` [s] cut at the grid edges (multiples of ``dt`` [s]) inside
    it, one after the other: the edges, the window of each edge, which intervals between
    consecutive edges lie inside a window (the others join one window to the next), and the
    grid interval each lies in."""
    k1 = np.floor(begin / dt).astype(np.int64) + 1
    k1 += k1 * dt <= begin  # the first grid edge strictly after the window's start
    k2 = np.ceil(end / dt).astype(np.int64) - 1
    k2 -= k2 * dt >= end  # the last strictly before its end
    count = np.maximum(k2 - k1 + 1, 0) + 2
    owner, index = group_ranks(count)
    edges = (k1[owner] + index - 1) * dt
    first, last = index == 0, index == count[owner] - 1
    edges[first], edges[last] = begin, end
    return edges, owner, ~last[:-1], (k1[owner] - 1 + index)[:-1]


def _add_into_bins(out: np.ndarray, values: np.ndarray, bins: np.ndarray, keep: np.ndarray) -> None:
    """Add each column of ``values`` where ``keep`` into ``out``'s column ``bins``."""
    bins = np.clip(bins[keep], 0, out.shape[1] - 1)  # a cut's middle rounded past the grid
    for row, part in zip(out, values, strict=True):
        row += np.bincount(bins, part[keep], minlength=row.size)


def _integral_in_segment(
    cumulative: np.ndarray,
    shape: np.ndarray,
    rate: np.ndarray,
    elapsed: np.ndarray,
    seg: np.ndarray,
    steps: Steps | None,
) -> np.ndarray:
    """Integral over time of each quantity from the start of segment ``seg`` to ``elapsed``
    seconds into it (its shape ``shape`` at ``rate``)."""
    x = rate * elapsed
    if steps is None:
        out = _periodic_integral(cumulative, shape, x)
        out /= rate
        return out
    mine = shape == steps.shape
    first = steps.first[seg[mine]]
    last = first + steps.count[seg[mine]]
    covered = np.zeros(x.size)
    covered[mine] = steps.bound[last] - steps.bound[first]
    drawn = mine & (x < covered)
    rest = ~drawn
    out = np.empty((cumulative.shape[0], x.size))
    out[:, rest] = _periodic_integral(cumulative, shape[rest], x[rest] - covered[rest]) / rate[rest]
    # past a segment's drawn steps (never, unless they ran out): all of them, then mean steps
    after = rest[mine]
    if np.any(after):
        n_q = cumulative.shape[0]
        done = steps.level[:, last[after]] - steps.level[:, first[after]]
        whole = cumulative[:, steps.shape, -1:] * covered[mine][after]
        whole += steps.variable[:n_q, -1:] * done[steps.uses[:n_q]]
        out[:, np.flatnonzero(mine)[after]] += whole / rate[mine][after]
    out[:, drawn] = (
        _drawn_steps_integral(cumulative[:, steps.shape], steps, seg[drawn], x[drawn]) / rate[drawn]
    )
    return out


def _periodic_integral(cumulative: np.ndarray, shape: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Integral in units of each shape's coordinate from 0 to ``x``, the shape repeating."""
    n_q, n_shapes, width = cumulative.shape
    whole = np.floor(x)
    pos = (x - whole) * (width - 1)
    cell = np.minimum(pos.astype(np.int64), width - 2)
    frac = pos - cell
    # one index into the flattened tables: a gather along one axis, not a broadcast of two
    cell += shape * width
    tables = cumulative.reshape(n_q, -1)
    lower = tables.take(cell, axis=1)
    within = tables.take(cell + 1, axis=1)
    within -= lower
    within *= frac
    within += lower
    within += whole * cumulative[:, :, -1].take(shape, axis=1)
    return within


def _drawn_steps_integral(
    base: np.ndarray, steps: Steps, seg: np.ndarray, x: np.ndarray
) -> np.ndarray:
    """Integral in units of the shape's coordinate from the start of segment ``seg`` to ``x``
    (within its drawn steps) through its drawn steps; ``base`` is the shape's cumulative
    table ``(n_quantities, n_cells + 1)``."""
    n_q, n_cells = base.shape[0], base.shape[-1] - 1
    variable, uses = steps.variable[:n_q], steps.uses[:n_q]  # the quantities rendered
    first = steps.first[seg]
    origin = steps.bound[first]
    key = origin + x
    j = np.searchsorted(steps.bound, key, side="right") - 1
    j = np.clip(j, first, first + steps.count[seg] - 1)  # rounding at a segment's ends
    start, length = steps.bound[j], steps.bound[j + 1] - steps.bound[j]
    level = steps.level[:, j][uses]
    scaled = (steps.level[:, j + 1][uses] - level) / length  # scale − 1
    pos = np.clip((key - start) / length, 0.0, 1.0) * n_cells
    cell = np.minimum(pos.astype(np.int64), n_cells - 1)
    frac = pos - cell
    tables = np.concatenate((base, variable))  # one gather for both
    lower = tables[:, cell]
    within = lower + frac * (tables[:, cell + 1] - lower)
    within = within[:n_q] + scaled * within[n_q:]
    return (
        base[:, -1:] * (start - origin)
        + variable[:, -1:] * (level - steps.level[:, first][uses])
        + length * within
    )


def state_at(seg_start: np.ndarray, seg_state: np.ndarray, times: np.ndarray) -> np.ndarray:
    """State of the segment holding each time (``seg_start`` and ``times`` [s])."""
    return seg_state[segment_of(seg_start, times)]


def segment_of(seg_start: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Index of the segment holding each time [s] (the last start [s] at or before it; −1
    before the first): ``np.searchsorted(seg_start, times, "right") − 1``. Times in order, as
    a grid's are, find the few segment starts among them instead (the same indices, a running
    count of the starts passed), each time's search through every segment saved."""
    times = np.asarray(times)
    if times.ndim != 1 or times.size < 2 or np.any(times[1:] < times[:-1]):
        return np.searchsorted(seg_start, times, side="right") - 1
    lo, hi = np.searchsorted(seg_start, times[[0, -1]], side="right")
    passed = np.bincount(
        np.searchsorted(times, seg_start[lo:hi], side="left"), minlength=times.size
    )
    out = np.cumsum(passed[: times.size])
    out += lo - 1
    return out
