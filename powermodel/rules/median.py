"""The running median of a signal over a run, exactly, without the run held whole: the
histogram of its running samples' sortable keys taken in one pass, the values in the middle
buckets found in another (each distinct value once, with its count).

What :mod:`powermodel.rules.streamed` holds a checkpoint's stalls at, to tell whether the
checkpoint caused a violation (:func:`powermodel.rules.measurement._attribute`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from powermodel.models.events import State


def _running_median(x: np.ndarray, running: np.ndarray) -> float | None:
    """``np.median`` of the running samples, in float64 (as :func:`_medians`); NaN if none;
    None if one is NaN (which :func:`_medians` orders, past the infinities)."""
    values = x[running].astype(np.float64, copy=False)
    if np.isnan(values).any():
        return None
    return float(np.median(values, overwrite_input=True)) if values.size else float("nan")


BUCKET = 44  # bits of a value's sortable key below its histogram bucket (20 bits above)
_HALF = np.int64(1 << (63 - BUCKET))  # the bucket of +0.0


def _buckets(x: np.ndarray) -> np.ndarray:
    """The histogram bucket of each float64 value: the top bits of a key that sorts as the
    values do (the IEEE 754 bits, the negatives' inverted, the others' with the sign set),
    from the bits shifted with their sign (a negative value's inverted, a positive one's
    offset by half the buckets)."""
    shifted = np.ascontiguousarray(x, np.float64).view(np.int64) >> np.int64(BUCKET)
    negative = shifted < 0
    if negative.any():
        return np.where(negative, ~shifted, shifted + _HALF)
    shifted += _HALF
    return shifted


def _histogram(histograms: dict[str, np.ndarray], columns: dict, names: set[str]) -> None:
    """Add a piece's running samples of each signal in ``names`` to its histogram of keys
    (:data:`BUCKET`), for :func:`_medians`."""
    running = columns["job_state"] == State.RUNNING
    for name in names:
        top = _buckets(np.asarray(columns[name], np.float64)[running])
        if top.size:  # the piece's few buckets counted, then added to the run's
            lo = int(top.min())
            counts = np.bincount(top - lo)
            if name not in histograms:
                histograms[name] = np.zeros(1 << (64 - BUCKET), np.int64)
            histograms[name][lo : lo + counts.size] += counts


def _medians(
    replay: Callable[[], Iterator[tuple[dict, int, dict | None]]],
    histograms: dict[str, np.ndarray],
    names: set[str],
) -> dict[str, float]:
    """``np.median`` of each signal's running samples over the run, exactly: the buckets of
    the middle ranks from the ``histograms`` of their keys (:func:`_histogram`), the values in
    them from a pass, each value kept once with its count (the iterations' plateaus repeat
    their values: a week of the reference at 100 ms has 210,628 running samples in the middle
    bucket, 12,024 of them distinct; a year held them all, 2.8 GB); NaN for a signal never
    running."""
    wanted = {}
    for name in names:
        counts = histograms.get(name, np.zeros(1, np.int64))
        total = int(counts.sum())
        ranks = [] if total == 0 else sorted({(total - 1) // 2, total // 2})
        below = np.concatenate(([0], np.cumsum(counts)))
        buckets = [int(np.searchsorted(below, r, side="right")) - 1 for r in ranks]
        wanted[name] = (ranks, buckets, below, _Tally())
    for columns, _, _ in replay():
        running = columns["job_state"] == State.RUNNING
        for name, (_, buckets, _, found) in wanted.items():
            x = np.asarray(columns[name], np.float64)[running]
            found.add(x[np.isin(_buckets(x), buckets)])
    out = {}
    for name, (ranks, buckets, below, found) in wanted.items():
        if not ranks:
            out[name] = float("nan")
            continue
        values, counts = found.merged()
        first = below[min(buckets)]  # the rank of the first value found
        at = np.searchsorted(np.cumsum(counts), np.array(ranks) - first, side="right")
        out[name] = float(np.mean(values[at]))
    return out


class _Tally:
    """Values seen, each distinct value once with how often: memory grows with the distinct
    values, not with the samples."""

    MERGE = 1 << 20  # values held apart at least before they are merged

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.held = 0
        self.bound = self.MERGE

    def add(self, x: np.ndarray) -> None:
        self.parts.append(np.unique(x, return_counts=True))
        self.held += self.parts[-1][0].size
        if self.held > self.bound:
            self.parts = [self.merged()]
            self.held = self.parts[0][0].size
            # twice what was left distinct: merges stay as few as the doublings of the values
            self.bound = max(self.MERGE, 2 * self.held)

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct values, sorted, and their counts."""
        if not self.parts:
            return np.empty(0), np.empty(0, np.int64)
        values, where = np.unique(np.concatenate([v for v, _ in self.parts]), return_inverse=True)
        counts = np.bincount(where, weights=np.concatenate([c for _, c in self.parts]))
        return values, counts.astype(np.int64)
