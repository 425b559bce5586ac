"""Rendering a segmented timeline onto a time grid as exact interval means.

Each segment has a *shape*: a quantity tabulated as piecewise-constant cells over one unit of a
shape coordinate ``x`` that advances at ``rate`` per second from 0 at the segment start (iteration
phase for running segments, ramp progress for ramps, seconds for constant states). The integral of
a shape is known exactly at any ``x`` (cumulative table, periodic continuation), so the integral of
the whole timeline is known exactly at every grid edge, and the interval mean is a difference of
integrals divided by the step: energy is exact at any resolution and nothing aliases.
"""

from __future__ import annotations

import numpy as np

CHUNK = 1 << 20  # grid edges per pass


def cumulative_tables(cells: np.ndarray) -> np.ndarray:
    """Cumulative integral over one unit of ``x`` of cell values ``(..., n_shapes, n_cells)``.

    Returns an array ``(..., n_shapes, n_cells + 1)`` starting at 0.
    """
    n_cells = cells.shape[-1]
    cum = np.cumsum(cells, axis=-1) / n_cells
    return np.concatenate((np.zeros(cum.shape[:-1] + (1,)), cum), axis=-1)


def interval_means(
    seg_start: np.ndarray,
    seg_shape: np.ndarray,
    shape_rate: np.ndarray,
    cumulative: np.ndarray,
    edges: np.ndarray,
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

    Returns
    -------
    numpy.ndarray
        ``(n_quantities, edges.size - 1)``.
    """
    seg_end = np.append(seg_start[1:], edges[-1])
    seg_integral = _integral(cumulative, seg_shape, shape_rate[seg_shape], seg_end - seg_start)
    before = np.concatenate(
        (np.zeros((cumulative.shape[0], 1)), np.cumsum(seg_integral, axis=1)[:, :-1]), axis=1
    )
    out = np.empty((cumulative.shape[0], edges.size - 1))
    for lo in range(0, edges.size - 1, CHUNK):  # bounded temporaries on long runs
        chunk = edges[lo : lo + CHUNK + 1]
        seg = np.searchsorted(seg_start, chunk, side="right") - 1
        total = before[:, seg] + _integral(
            cumulative, seg_shape[seg], shape_rate[seg_shape[seg]], chunk - seg_start[seg]
        )
        out[:, lo : lo + chunk.size - 1] = np.diff(total, axis=1) / np.diff(chunk)
    return out


def _integral(
    cumulative: np.ndarray, shape: np.ndarray, rate: np.ndarray, elapsed: np.ndarray
) -> np.ndarray:
    """Integral over time of each quantity from a segment's start to ``elapsed`` seconds into it."""
    n_cells = cumulative.shape[-1] - 1
    x = rate * elapsed
    whole = np.floor(x)
    pos = (x - whole) * n_cells
    cell = np.minimum(pos.astype(np.int64), n_cells - 1)
    frac = pos - cell
    lower = cumulative[:, shape, cell]
    upper = cumulative[:, shape, cell + 1]
    within = lower + frac * (upper - lower)
    return (whole * cumulative[:, shape, -1] + within) / rate


def state_at(seg_start: np.ndarray, seg_state: np.ndarray, times: np.ndarray) -> np.ndarray:
    """State of the segment holding each time."""
    return seg_state[np.searchsorted(seg_start, times, side="right") - 1]
