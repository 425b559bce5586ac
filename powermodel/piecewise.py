"""Chunk-wise statistics, for a run measured piece by piece (a run streamed in parts, or one
in memory read in cache-sized blocks; issue 13).

Each stage takes a run's samples piece after piece (``x`` from the run's sample ``at``) and
returns what its in-memory counterpart of :mod:`powermodel.models.signal` returns for those
samples, carrying the state the next piece needs: exact, the same operations in the same order,
so bit-identical where the first piece holds at least a window (the reflected readings at the
run's start are then the in-memory ones). :class:`powermodel.analysis.StreamedMetrics` and the
rules' streamed check (:mod:`powermodel.rules.streamed`) are built of them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from powermodel.models import signal


class RollingMean:
    """:func:`powermodel.models.signal.rolling_mean` over ``n`` samples, piece by piece: the
    run's cumulative sum is continued across pieces (one accumulate from its last value, as
    ``np.cumsum`` adds over the whole run), so each quotient is the in-memory one to the bit."""

    def __init__(self, n: int) -> None:
        self.n, self.sums = n, np.zeros(1)  # the cumulative sums up to the piece, the last n + 1

    def __call__(self, x: np.ndarray, at: int) -> np.ndarray:
        n, held = self.n, self.sums.size
        c = np.empty(held + x.size)
        c[:held], c[held:] = self.sums, x
        np.cumsum(c[held - 1 :], out=c[held - 1 :])  # from the last sum: the run's sums
        out = np.empty(x.size)
        head = max(min(n - at, x.size), 0)  # readings over fewer samples, at the run's start
        np.divide(c[held : held + head], np.arange(at + 1, at + head + 1), out=out[:head])
        # c[held + i] is the sum to sample at + i; the sum n before it is n places back
        np.subtract(c[held + head :], c[held + head - n : c.size - n], out=out[head:])
        out[head:] /= n
        self.sums = c[-(n + 1) :] if c.size > n + 1 else c
        return out


class Lagged:
    """:func:`powermodel.models.signal.net_change` over ``n`` samples, piece by piece."""

    def __init__(self, n: int) -> None:
        self.n, self.tail = n, np.empty(0)

    def __call__(self, x: np.ndarray, at: int) -> np.ndarray:
        n, tail, k = self.n, self.tail, self.tail.size
        x = np.asarray(x, np.float64)
        out = np.empty(x.size)
        first = min(max(n - at, 0), x.size)  # zero for the run's first n samples
        out[:first] = 0.0
        # the sample n before: in the tail for the piece's first n, else in the piece
        mid = max(min(n, x.size), first)
        np.subtract(x[first:mid], tail[k + first - n : k + mid - n], out=out[first:mid])
        np.subtract(x[mid:], x[mid - n : x.size - n], out=out[mid:])
        self.tail = x[-n:].copy() if x.size >= n else np.concatenate((tail, x))[-n:]
        return out

    def some(self, x: np.ndarray, at: int) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`__call__`'s readings made only where they are read: the state carried now,
        the readings at the piece's samples ``index`` when read (``read(index)``)."""
        n, tail, k = self.n, self.tail, self.tail.size
        x = np.asarray(x, np.float64)
        first = min(max(n - at, 0), x.size)
        self.tail = x[-n:].copy() if x.size >= n else np.concatenate((tail, x))[-n:]

        def read(index: np.ndarray) -> np.ndarray:
            out = np.zeros(index.size)  # zero for the run's first n samples
            late = np.flatnonzero(index >= first)
            now = index[late]
            back = now - n
            before = back < 0  # the sample n before is in the tail
            lagged = np.empty(now.size)
            lagged[before], lagged[~before] = tail[k + back[before]], x[back[~before]]
            out[late] = x[now] - lagged
            return out

        return read


class Windowed:
    """A trailing filter over ``n`` samples (``rolling_range``, ``rolling_max``,
    ``rolling_min``, or any of the ``n`` samples ending at each), piece by piece: each piece
    with the ``n − 1`` before it, whose readings are whole windows (max and min are exact in
    any order)."""

    def __init__(
        self,
        statistic: Callable[[np.ndarray, int], np.ndarray],
        n: int,
        each: Callable[[np.ndarray], np.ndarray] | None = None,
    ) -> None:
        # each: the statistic of whole windows (their samples on the last axis), where the
        # filter's readings of whole windows are exactly it (max and min: in any order)
        self.statistic, self.n, self.tail, self.each = statistic, n, None, each

    def __call__(self, x: np.ndarray, at: int) -> np.ndarray:
        joined = x if self.tail is None else np.concatenate((self.tail, x))
        out = self.statistic(joined, self.n)[joined.size - x.size :]
        self.tail = joined[max(joined.size - (self.n - 1), 0) :]
        return out

    def some(self, x: np.ndarray, at: int) -> Callable[[np.ndarray], np.ndarray]:
        """:meth:`__call__`'s readings made only where they are read (``read(index)``, the
        piece's samples ``index``, increasing): from their windows alone (``each``) where the
        piece and the samples before it hold whole windows without NaN and few are read,
        else from the filter over the piece, as :meth:`__call__` makes it."""
        n, whole = self.n, self.tail is not None and self.tail.size == self.n - 1
        joined = x if self.tail is None else np.concatenate((self.tail, x))
        self.tail = joined[max(joined.size - (n - 1), 0) :]
        held, made = joined.size - x.size, []

        def read(index: np.ndarray) -> np.ndarray:
            few = whole and self.each is not None and index.size * n <= joined.size
            if few and joined.size >= 2 * n and not np.isnan(joined).any():
                return self.each(joined[index[:, None] + (held - n + 1 + np.arange(n))])
            if not made:  # the whole piece's readings, made once however often read
                made.append(self.statistic(joined, n)[held:])
            return made[0][index]

        return read


class Filtered:
    """:func:`powermodel.models.signal.band` piece by piece: each first-order filter's state
    (scipy's ``lfilter`` ``zi``) carried from one piece to the next, from the steady state on
    the run's first sample as the in-memory filters start."""

    def __init__(self, dt: float, low: float | None, high: float | None) -> None:
        self.filters = signal.band_stages(dt, low, high)
        self.state: list[np.ndarray | None] = [None] * len(self.filters)

    def __call__(self, x: np.ndarray, at: int) -> np.ndarray:
        for i, (b, den, passes_high) in enumerate(self.filters):
            out, self.state[i] = signal.first_order_filter(x, b, den, self.state[i])
            x = np.subtract(x, out, out=out) if passes_high else out
        return x


class Chained:
    """Stages applied in turn, piece by piece."""

    def __init__(self, *stages: Callable[[np.ndarray, int], np.ndarray]) -> None:
        self.stages = stages

    def __call__(self, x: np.ndarray, at: int) -> np.ndarray:
        for stage in self.stages:
            x = stage(x, at)
        return x

    def some(self, x: np.ndarray, at: int) -> Callable[[np.ndarray], np.ndarray]:
        """The readings made only where they are read (``read(index)``): the stages before
        the last that can (a lag, a window's statistic) over the whole piece, that one and
        those after it (elementwise: :class:`Scaled`) at the samples read."""
        cut = max(i for i, stage in enumerate(self.stages) if hasattr(stage, "some"))
        for stage in self.stages[:cut]:
            x = stage(x, at)
        read, after = self.stages[cut].some(x, at), self.stages[cut + 1 :]
        assert all(isinstance(stage, Scaled) for stage in after)

        def later(index: np.ndarray) -> np.ndarray:
            values = read(index)
            for stage in after:
                values = stage(values, at)
            return values

        return later


class Scaled:
    """Readings scaled, ``x * by / over`` (a reading per window as one per minute): sample by
    sample, so it may be made at some samples only (:meth:`Chained.some`)."""

    def __init__(self, by: float, over: float) -> None:
        self.by, self.over = by, over

    def __call__(self, x: np.ndarray, at: int) -> np.ndarray:
        return x * self.by / self.over


def ramp_stages(n: int) -> dict[str, Callable[[np.ndarray, int], np.ndarray]]:
    """The chunk-wise stages of :data:`RAMPS` over ``n`` samples (each run longer than two
    windows, as :func:`ramps` and the rules measure)."""
    return {
        "net_change": Lagged(n),
        "average_slope": Chained(RollingMean(n), Lagged(n)),
        "range": Windowed(signal.rolling_range, n, _range),
    }


class Neighbours:
    """A per-sample flag's neighbours either side, piece by piece: each piece is given with the
    run's sample after it (None at the run's end) and keeps its last for the next."""

    def __init__(self) -> None:
        self.before: np.ndarray = np.empty(0, bool)

    def __call__(
        self, flag: np.ndarray, after: np.ndarray | None, end: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Each sample's flag before it and after it, ``end`` where the run has no sample."""
        first = self.before if self.before.size else np.array([end])
        before = np.concatenate((first, flag[:-1])).astype(bool)
        behind = np.concatenate((flag[1:], [end] if after is None else after)).astype(bool)
        self.before = flag[-1:]
        return before, behind


def _range(windows: np.ndarray) -> np.ndarray:
    """Max − min of each window (its samples on the last axis), as
    :func:`powermodel.models.signal.rolling_range` reads a whole window."""
    out = windows.max(axis=-1)
    out -= windows.min(axis=-1)
    return out
