"""Signal processing for measurement chains: energy, filters, lags, rolling statistics, spectra.

Signals are interval means on a uniform grid of step ``dt`` (held over each interval), as
powermodel writes them and as meters report them.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from powermodel.durations import format_duration
from powermodel.errors import PowerModelError
from powermodel.models import iir

FINEST_STEP = 1e-3  # s: the finest step the model simulates (scenario's floor of dt)
BLOCK = 1 << 15  # samples a block of a rolling filter: its scratch arrays stay in the CPU cache
SHORT_SEGMENT = 8  # segment_max takes this many samples of a segment an offset at a time


def check_seconds(value: float, what: str) -> None:
    """Raise a :class:`~powermodel.errors.PowerModelError` unless ``value`` is a positive,
    finite number of seconds; ``what`` names it in the message ("the grid step"). [s]"""
    if not (np.isfinite(value) and value > 0.0):
        raise PowerModelError(f"{what} must be a positive number of seconds, got {value}")


def nyquist(dt: float) -> float:
    """Nyquist frequency of a grid. [Hz]"""
    return 0.5 / dt


def resolved(dt: float) -> float:
    """Highest frequency a grid resolves for a verdict: half the Nyquist frequency. [Hz]

    Between half and the whole Nyquist frequency a sinusoid's interval means lose more than
    a third of its amplitude (sinc(0.5) = 0.64), so band content there cannot be trusted.
    """
    return 0.5 * nyquist(dt)


def step_for(frequency: float) -> float:
    """A round step [s] (1, 2 or 5 × 10^k) whose grid resolves ``frequency`` [Hz] (> 0)."""
    finest = 0.25 / frequency
    decade = 10.0 ** np.floor(np.log10(finest))
    return float(max(m for m in (1.0, 2.0, 5.0) if m * decade <= finest * (1 + 1e-9)) * decade)


def step_advice(frequency: float) -> str:
    """The step of a profile that resolves ``frequency`` [Hz], in words: "a profile at dt <=
    50ms", or why no profile of the model does (it needs a step below :data:`FINEST_STEP`)."""
    finest = 0.25 / frequency
    if not finest >= FINEST_STEP:  # also a frequency so high that the step is 0
        return (
            f"no profile resolves it: that needs a step under the model's finest, "
            f"{format_duration(FINEST_STEP)}"
        )
    return f"a profile at dt <= {format_duration(step_for(frequency))} resolves it"


def energy(power: np.ndarray, dt: float) -> float:
    """Energy of a power signal held over each step. [unit of ``power`` × h]

    Parameters
    ----------
    power
        Interval means of power (a numpy or xarray array). [W, MW, ...]
    dt
        Step. [s]

    Notes
    -----
    ``E = Σ P_i · dt / 3600``: interval means integrate exactly, whatever the step.
    """
    return float(power.sum() * dt / 3600.0)


def first_order_lag(
    signal: np.ndarray, dt: float, tau: float, initial: float | np.ndarray | None = None
) -> np.ndarray:
    """First-order lag ``dy/dt = (u − y) / τ`` of a step-held signal, discretised exactly.

    Parameters
    ----------
    signal
        Input ``u``, held constant over each step; time on the last axis.
    dt
        Step. [s]
    tau
        Time constant; 0 passes the signal through. [s]
    initial
        Output at the start of the first step; by default the first input (steady state).

    Returns
    -------
    numpy.ndarray
        ``y`` at the end of each step: ``y[k] = y((k + 1)·dt)``, the shape of ``signal``.

    Notes
    -----
    Over a step the exact solution is ``y[k] = a·y[k−1] + (1 − a)·u[k]`` with
    ``a = exp(−dt/τ)`` (zero-order-hold discretisation), evaluated as an IIR filter. For a periodic
    input the periodic output has the input's mean: the lag moves energy in time, not in total.
    """
    u = np.asarray(signal, dtype=float)
    a = lag_pole(dt, tau)
    y0 = u[..., :1] if initial is None else np.broadcast_to(initial, u.shape[:-1])[..., None]
    return lag_filter(u, a, a * y0)[0]


def lag_pole(dt: float, tau: float) -> float:
    """The pole ``a = exp(−dt/τ)`` of :func:`first_order_lag` on steps of ``dt`` with the time
    constant ``tau`` [s] (0 for none) [1]."""
    if dt <= 0.0 or tau < 0.0:
        raise ValueError(f"need dt > 0 and tau ≥ 0, got dt={dt:g}, tau={tau:g}")
    return np.exp(-dt / tau) if tau > 0.0 else 0.0


def lag_filter(u: np.ndarray, a: float, zi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`first_order_lag`'s filter (pole ``a``) over ``u`` from the state ``zi``, and its
    state after the last sample: a signal filtered in parts, each from the state the part
    before ended in, is the signal filtered whole, sample for sample."""
    return iir.lfilter([1.0 - a], [1.0, -a], u, zi)


def high_pass(x: np.ndarray, dt: float, cutoff: float) -> np.ndarray:
    """First-order high-pass at ``cutoff`` [Hz], sampled at the start of each interval.

    Notes
    -----
    ``H(s) = s·τ / (1 + s·τ)``, ``τ = 1/(2π·f_c)``, equal to the signal less its first-order
    low-pass. For a signal held over each interval the low-pass is exact at the interval starts
    (``lp[n] = a·lp[n−1] + (1 − a)·x[n−1]``, ``a = e^{−dt/τ}``), so a step passes whole at its
    instant and decays as ``e^{−t/τ}``: the closed forms (through a 0.1-Hz high-pass a step keeps
    100 %, a 2-s ramp 57 %, a 60-s ramp 3 %) hold at any ``dt`` short against ``τ``.
    """
    low, _ = first_order_filter(x, *first_order(dt, cutoff, high=True))
    return x - low


def low_pass(x: np.ndarray, dt: float, cutoff: float) -> np.ndarray:
    """First-order low-pass at ``cutoff`` [Hz], at the end of each held interval (exact)."""
    return first_order_filter(x, *first_order(dt, cutoff, high=False))[0]


def first_order(dt: float, cutoff: float, high: bool) -> tuple[list[float], list[float]]:
    """``lfilter``'s numerator and denominator of the first-order low-pass at ``cutoff`` [Hz]
    on steps of ``dt`` [s]: at the end of each held interval (``high`` False), or at its start
    (``high`` True: the low-pass a high-pass subtracts). ``a = e^{−2π·f_c·dt}``."""
    a = np.exp(-dt * 2.0 * np.pi * cutoff)
    return ([0.0, 1.0 - a] if high else [1.0 - a]), [1.0, -a]


def first_order_filter(
    x: np.ndarray, b: list[float], den: list[float], zi: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The filter over ``x`` and its final state, from ``zi`` (default: steady on ``x[0]``)."""
    return iir.lfilter(b, den, x, iir.lfilter_zi(b, den) * x[0] if zi is None else zi)


def band_stages(
    dt: float, low: float | None, high: float | None
) -> list[tuple[list[float], list[float], bool]]:
    """The first-order filters of :func:`band`, in order: numerator, denominator, and whether
    the signal less the filter's output passes (a high-pass). A ``high`` at or above what the
    grid resolves is left out: the interval means already hold nothing above it."""
    stages = []
    if low is not None:
        stages.append((*first_order(dt, low, high=True), True))
    if high is not None and high < resolved(dt):
        stages.append((*first_order(dt, high, high=False), False))
    return stages


def band(x: np.ndarray, dt: float, low: float | None, high: float | None) -> np.ndarray:
    """First-order band filter: a high-pass at ``low`` then a low-pass at ``high`` (either may
    be None; :func:`band_stages`)."""
    for b, den, passes_high in band_stages(dt, low, high):
        out, _ = first_order_filter(x, b, den)
        x = x - out if passes_high else out
    return x


def samples(window: float, dt: float, what: str = "window") -> int:
    """Samples in a window; an error when the window is shorter than five steps."""
    n = int(round(window / dt))
    if window < 5.0 * dt - 1e-9:
        raise PowerModelError(
            f"a {what} of {format_duration(window)} is shorter than five steps of "
            f"{format_duration(dt)}: the profile cannot support that verdict; "
            f"{step_advice(1.25 / window)}"
        )
    return n


def rolling_range(x: np.ndarray, n: int) -> np.ndarray:
    """Max − min of the ``n`` samples ending at each sample (the first ``n − 1`` are partial)."""
    out = rolling_max(x, n)
    out -= rolling_min(x, n)
    return out


def rolling_max(x: np.ndarray, n: int) -> np.ndarray:
    """Largest of the ``n`` samples ending at each sample; the first ``n − 1`` read the start
    mirrored (scipy.ndimage's ``reflect``), as :func:`scipy.ndimage.maximum_filter1d` does."""
    return _trailing(x, n, np.maximum, "maximum_filter1d")


def rolling_min(x: np.ndarray, n: int) -> np.ndarray:
    """Least of the ``n`` samples ending at each sample, as :func:`rolling_max`."""
    return _trailing(x, n, np.minimum, "minimum_filter1d")


def _trailing(x: np.ndarray, n: int, best_of: np.ufunc, name: str) -> np.ndarray:
    """A trailing max or min filter, equal to scipy's (``scipy.ndimage.<name>``) to the bit
    at a fraction of its cost.

    Notes
    -----
    In blocks of :data:`BLOCK` outputs (or four windows), each block's sparse table held in a
    cache-sized scratch: the per-sample cost stays the same from a day at 1 s to months (a
    table over the whole signal ran three times slower per sample once its arrays outgrew the
    cache). Max and min are exact whatever the order, so the values are scipy's (of a -0 and
    a 0 in one window, either may be kept, as equal as scipy's). The first
    ``n − 1`` samples read the start mirrored: sample ``i``'s window is the first
    ``max(i + 1, n − 1 − i)`` samples, the best of a running best. Left to scipy (imported
    then only): signals with NaN (whose order scipy's comparisons depend on), a start with a
    -0 (which of -0 and 0 is kept is scipy's choice) and signals shorter than a window
    less one (whose mirror is longer than they are).
    """
    x = np.asarray(x)
    floats = x.dtype.kind in "fc"
    if n < 2 or x.size < n - 1 or (floats and np.isnan(x).any()):
        return _scipy(name)(x, n, origin=(n - 1) // 2)  # the window ends at the sample
    out = np.empty_like(x)
    head = x[: n - 1]
    if floats and (np.signbit(head) & (head == 0)).any():  # a -0 (never in a profile)
        out[: n - 1] = _scipy(name)(x[: 2 * n], n, origin=(n - 1) // 2)[: n - 1]
    else:
        i = np.arange(n - 1)
        out[: n - 1] = best_of.accumulate(head)[np.maximum(i + 1, n - 1 - i) - 1]
    block = max(BLOCK, 4 * n)
    scratch = np.empty((2, block + n - 1), x.dtype)
    for start in range(n - 1, x.size, block):
        stop = min(start + block, x.size)
        _sparse_table(x[start - n + 1 : stop], n, best_of, scratch, out[start:stop])
    return out


def _scipy(name: str) -> Callable:
    """``scipy.ndimage``'s filter ``name``, imported at its first use (a tenth of a second)."""
    from scipy import ndimage  # noqa: PLC0415 - see _trailing

    return getattr(ndimage, name)


def _sparse_table(
    x: np.ndarray, n: int, best_of: np.ufunc, scratch: np.ndarray, out: np.ndarray
) -> None:
    """``out[i]``: the best of ``x[i : i + n]``, for each whole window of ``x``.

    The best of the last ``k`` samples for ``k = 1, 2, 4, …`` (each from two of the last,
    alternating between the two rows of ``scratch``), then the best of two overlapping
    ``k``-windows covers ``n``. Entries of a ``k``-table before its first whole window are
    never read.
    """
    best, k, row = x, 1, 0
    while 2 * k <= n:
        wider = scratch[row, : x.size]
        best_of(best[k:], best[:-k], out=wider[k:])
        best, k, row = wider, 2 * k, 1 - row
    best_of(best[n - 1 :], best[k - 1 : x.size - (n - k)], out=out)


def range_reduce(ufunc: np.ufunc, x: np.ndarray, begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """``ufunc.reduce(x[b:e])`` for each range ``[b, e)``, ``b < e`` (in any order, overlapping
    or not), reading each value of ``x`` once: the ranges' edges cut ``x`` into pieces, each
    reduced once, and each range reduces its pieces."""
    if begin.size == 0:
        return np.zeros(0, x.dtype)
    edges = np.unique(np.concatenate([begin, end[end < x.size]]))
    pieces = ufunc.reduceat(x, edges)
    # reduceat over (first, stop) pairs of pieces reduces each [first, stop); the pad gives a
    # range ending at the last piece a valid stop
    pairs = np.stack([np.searchsorted(edges, begin), np.searchsorted(edges, end)], axis=1)
    return ufunc.reduceat(np.r_[pieces, pieces[-1]], pairs.ravel())[::2]


def group_ranks(count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For groups of ``count[i]`` items laid end to end, each item's group and its rank in it
    (0 for a group's first item). [1]"""
    group = np.repeat(np.arange(count.size), count)
    return group, np.arange(group.size) - np.repeat(np.cumsum(count) - count, count)


def segment_max(x: np.ndarray, start: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """The largest of ``x[start[i] : stop[i]]`` for each segment (none empty), to the bit.

    Notes
    -----
    A rule violated every iteration has hundreds of thousands of short segments a week, and
    ``np.maximum.reduceat`` costs about 35 ns a segment. The first :data:`SHORT_SEGMENT`
    samples of every segment are taken an offset at a time, over the segments that long; only
    what the longer ones hold beyond is reduced. Measured here on 26,214 segments of 2-3
    samples: 0.31 ms, against 0.96 ms reduced.
    """
    out = x[start]
    length = stop - start
    longer = np.flatnonzero(length > 1)
    for offset in range(1, SHORT_SEGMENT):
        if not longer.size:
            return out
        out[longer] = np.maximum(out[longer], x[start[longer] + offset])
        longer = longer[length[longer] > offset + 1]
    if longer.size:  # [start, stop) pairs from the offset on: the segments between dropped
        bounds = np.column_stack([start[longer] + SHORT_SEGMENT, stop[longer]]).ravel()
        bounds = bounds[:-1] if bounds[-1] == x.size else bounds  # the last then runs to the end
        out[longer] = np.maximum(out[longer], np.maximum.reduceat(x, bounds)[::2])
    return out


def net_change(x: np.ndarray, n: int) -> np.ndarray:
    """``x[i] − x[i − n]``; zero for the first ``n`` samples."""
    out = np.empty_like(x)
    out[:n] = 0
    np.subtract(x[n:], x[:-n], out=out[n:])
    return out


def rolling_mean(x: np.ndarray, n: int) -> np.ndarray:
    """Mean of the ``n`` samples ending at each sample (over fewer at the start)."""
    # slices of one cumulative sum: the same sums and quotients as (c[i] - c[i - n]) / n
    c = np.empty(x.size + 1)
    c[0] = 0.0
    np.cumsum(x, dtype=np.float64, out=c[1:])
    head = min(n, x.size)
    out = np.empty(x.size)
    np.divide(c[1 : head + 1], np.arange(1, head + 1), out=out[:head])
    np.subtract(c[head + 1 :], c[1 : x.size - head + 1], out=out[head:])
    out[head:] /= n
    return out


def average_slope(x: np.ndarray, n: int) -> np.ndarray:
    """Change of the window average from the window before, per window: ``(mean of the last n
    samples − mean of the n before) / 1 window``; zero until two whole windows have passed."""
    m = rolling_mean(x, n)
    return net_change(m, n) if x.size > n else np.zeros_like(x)


def spectrum(
    x: np.ndarray, dt: float, segment: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """One-sided power spectral density by Welch's method (Hann, 50 % overlap, mean removed).

    Returns frequencies [Hz] and density [unit²/Hz]; its integral over all frequencies is the
    variance of ``x``.
    """
    nperseg = x.size if segment is None else min(x.size, max(8, int(round(segment / dt))))
    from scipy import signal as sps  # noqa: PLC0415 - scipy.signal costs 1.4 s to import

    return sps.welch(x, fs=1.0 / dt, nperseg=nperseg, detrend="constant", scaling="density")


def band_variance(
    x: np.ndarray, dt: float, low: float, high: float, segment: float | None = None
) -> float:
    """Variance of ``x`` in the band ``[low, high)`` Hz, from its spectrum. [unit²]

    Raises an error for a band above half the Nyquist frequency: interval means cannot tell
    what lies there.
    """
    if high > resolved(dt) + 1e-12:
        raise PowerModelError(
            f"the band {low:g}-{high:g} Hz reaches above half the Nyquist frequency of a "
            f"{format_duration(dt)} profile ({resolved(dt):g} Hz): {step_advice(high)}"
        )
    f, p = spectrum(x, dt, segment)
    df = f[1] - f[0]
    return float(p[(f >= low) & (f < high)].sum() * df)
