"""Folding the running state: epoch folding of the running samples at candidate periods,
the step time found by it, and the two-level iteration whose view through the chain best fits the
folded profile (:func:`_square_fit`); then whether a step folded from samples a sensor did not
average may be an alias of a shorter one (:func:`_aliased`: folded again on the samples' own
stamps). Used by :mod:`powermodel.fit.running`.
"""

from __future__ import annotations

import numpy as np

from powermodel.durations import format_duration
from powermodel.fit.sensor import StepResponse, _gain
from powermodel.fit.timeline import Timeline, _settled_in
from powermodel.models import workload
from powermodel.models.events import State

FOLD_BINS = 64  # phase bins of a folded running profile
FOLD_SAMPLES = 50_000  # samples folded at most (the longest running segments first)
FOLD_CHUNK = 16  # candidate periods folded at once
ITERATION_CELLS = FOLD_BINS * 16  # cells of one iteration seen through the chain
DUTY = np.linspace(0.03, 0.97, 95)  # compute shares tried
EDGES = np.array([0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0])  # edge durations tried [s]
# A period folded from samples that a sensor did not average over their interval dt may be an
# alias of any step T with |1/T - k/dt| = 1/P (k = 1, 2...): the samples of the two are the
# same on a regular grid. The aliases considered are the steps a training job can take: at
# least MIN_STEP (three quarters of the shortest, 0.2 s, of issue 27's real logs [A]), and one
# whose swing, seen through the chain's gain at 1/T, would need a trough below 0 W is none.
# The rest are told apart only by the samples' own stamps (their jitter, slow polls, restarts
# of the poll loop): each candidate is folded on the stamps, and P stands only when every
# alias folds to less than ALIAS_MARGIN of its between-bin variance [A].
MIN_STEP = 0.15  # s
ALIAS_MARGIN = 0.5
ALIAS_BETTER = 1.25  # an alias folding this much better than the step is named the step
ALIAS_BINS = 16  # phase bins of each running spell folded on the stamps
ALIAS_SAMPLES = 20_000  # stamped samples folded at most (an even choice, seeded)
ALIAS_TRIES = 41  # frequencies tried about each candidate


def _coarse_period(t: np.ndarray, x: np.ndarray, origin: np.ndarray, period: float) -> float:
    """The strongest period of the running swing: the peak of the glued segments' spectrum."""
    y = x - x.mean()
    n = int(2 ** np.ceil(np.log2(max(4 * y.size, 256))))
    power = np.abs(np.fft.rfft(y, n)) ** 2
    f = np.fft.rfftfreq(n, period)
    longest = float(np.max(np.bincount(np.unique(origin, return_inverse=True)[1]))) * period
    power[f < 3.0 / max(longest, period)] = 0.0
    return float(1.0 / f[np.argmax(power)]) if power.max() > 0 else np.nan


def _fold(
    t: np.ndarray, x: np.ndarray, origin: np.ndarray, periods: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Folded profiles at each candidate period: bin means ``(n_periods, FOLD_BINS)``, counts,
    and the between-bin variance (epoch folding's statistic); a few periods at a time, so
    that the temporaries stay within ``FOLD_CHUNK × FOLD_SAMPLES``."""
    means, counts = [], []
    for lo in range(0, periods.size, FOLD_CHUNK):  # chunks of candidates, not samples
        chunk = periods[lo : lo + FOLD_CHUNK]
        phase = ((t - origin)[None, :] / chunk[:, None]) % 1.0
        bins = np.minimum((phase * FOLD_BINS).astype(np.int64), FOLD_BINS - 1)
        flat = (bins + FOLD_BINS * np.arange(chunk.size)[:, None]).ravel()
        size = chunk.size * FOLD_BINS
        n = np.bincount(flat, minlength=size).reshape(chunk.size, FOLD_BINS)
        total = np.bincount(flat, np.tile(x, chunk.size), minlength=size)
        with np.errstate(all="ignore"):
            means.append(total.reshape(chunk.size, FOLD_BINS) / n)
        counts.append(n)
    means, counts = np.concatenate(means), np.concatenate(counts)
    between = np.nansum(counts * (means - x.mean()) ** 2, axis=1)
    return means, counts, between


def _best_period(t: np.ndarray, x: np.ndarray, origin: np.ndarray, coarse: float) -> float:
    """The step time: the coarse period (or a multiple, if its harmonic was the strongest)
    refined by epoch folding over ±8 % in 0.05 % steps."""
    multiples = coarse * np.arange(1, 4)
    _, _, between = _fold(t, x, origin, multiples)
    base = (
        multiples[np.argmax(between > 1.25 * between[0])]
        if between.max() > 1.25 * between[0]
        else coarse
    )
    candidates = base * np.linspace(0.92, 1.08, 321)
    _, _, between = _fold(t, x, origin, candidates)
    k = int(np.argmax(between))
    if 0 < k < candidates.size - 1:  # parabola through the peak
        y0, y1, y2 = between[k - 1 : k + 2]
        shift = 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2) if (y0 - 2 * y1 + y2) != 0 else 0.0
        return float(candidates[k] + shift * (candidates[1] - candidates[0]))
    return float(candidates[k])


def _interior(t: np.ndarray, origin: np.ndarray, step: float) -> np.ndarray:
    """Samples a whole ``step`` [s] or more from both ends of their running spell (the spells'
    first and last samples given by ``origin``, each spell's start [s])."""
    spell, where = np.unique(origin, return_inverse=True)
    last = np.full(spell.size, -np.inf)
    np.maximum.at(last, where, t)
    return (t - origin >= step) & (t <= last[where] - step)


def _stands_out(shape: dict[str, float], counts: np.ndarray, noise: float) -> bool:
    """Whether a folded two-level step fits (R² over 0.5) and its swing stands out of the
    noise of its emptiest phase bin's mean (six standard errors)."""
    return bool(
        shape["r2"] > 0.5 and shape["seen_swing"] > 6.0 * noise / np.sqrt(max(counts.min(), 1))
    )


def _stands_out_inside(
    t: np.ndarray,
    y: np.ndarray,
    origin: np.ndarray,
    step: float,
    response: StepResponse,
    noise: float,
) -> bool:
    """Whether the samples a step from their spells' ends (:func:`_interior`) are enough to
    fold and show the step too, out of the ``noise`` [W]: a swing made of the spells' own
    rise and fall does not."""
    if t.size < 4 * FOLD_BINS:
        return False
    profile, counts, _ = _fold(t, y, origin, np.array([step]))
    return _stands_out(_square_fit(profile[0], counts[0], step, response), counts[0], noise)


def _chain_spectrum(response: StepResponse, step: float) -> np.ndarray:
    """The spectrum of the chain's impulse response wrapped onto one iteration of ``step`` [s]
    in :data:`ITERATION_CELLS` cells: multiplying an iteration's spectrum by it convolves the
    iteration (circularly, as if repeated) with the response (:func:`_seen_through`)."""
    n = ITERATION_CELLS
    cell = step / n
    kernel = response.kernel(cell, max(n, int(np.ceil(response.settle / cell)) + 1))
    wrapped = np.bincount(np.arange(kernel.size) % n, kernel, minlength=n)
    return np.fft.rfft(wrapped)


def _seen_through(shapes: np.ndarray, spectrum: np.ndarray) -> np.ndarray:
    """Each row of ``shapes`` (one iteration a row) as the chain of ``spectrum``
    (:func:`_chain_spectrum`) sees it, repeated."""
    return np.fft.irfft(np.fft.rfft(shapes, axis=1) * spectrum, n=shapes.shape[1], axis=1)


def _square_fit(
    profile: np.ndarray, counts: np.ndarray, step: float, response: StepResponse
) -> dict[str, float]:
    """The two-level iteration (compute share, edge duration, compute and communication levels)
    whose view through the chain best matches a folded profile, by least squares.

    For each share and edge duration on a grid, the model's own waveform
    (:func:`~powermodel.models.workload.iteration_waveform`, levels 1 and 0) is convolved
    (circularly) with the chain's impulse response; the levels then enter linearly.
    """
    n = ITERATION_CELLS
    spectrum = _chain_spectrum(response, step)
    shapes, grid = [], []
    for c in DUTY:  # a few hundred candidate shapes, each a vectorised waveform
        for e in EDGES[EDGES < 0.9 * min(c, 1.0 - c) * step]:
            rate = 1.0 / e if e > 0 else 1e9
            shapes.append(
                workload.iteration_waveform(
                    np.array([c, 1 - c]), np.array([1.0, 0.0]), step, rate, n
                )
            )
            grid.append((c, e))
    best = _least_squares(np.array(shapes), spectrum, profile, counts)
    c, e = grid[best["k"]]
    finer = c + np.linspace(-0.01, 0.01, 21)  # the grid's neighbours, a tenth as far apart
    finer = finer[(finer > 0) & (finer < 1) & (e < 0.9 * np.minimum(finer, 1 - finer) * step)]
    rate = 1.0 / e if e > 0 else 1e9
    shapes = [
        workload.iteration_waveform(np.array([f, 1 - f]), np.array([1.0, 0.0]), step, rate, n)
        for f in finer
    ]
    fine = _least_squares(np.array(shapes), spectrum, profile, counts)
    return {**fine, "share": float(finer[fine["k"]]), "edge": float(e)}


def _least_squares(
    shapes: np.ndarray, spectrum: np.ndarray, profile: np.ndarray, counts: np.ndarray
) -> dict[str, float]:
    """The candidate shape (levels 1 and 0, one per row) whose view through the chain (its
    ``spectrum``) best fits the folded profile, with the two levels by weighted least squares."""
    seen = _seen_through(shapes, spectrum)
    u = seen.reshape(shapes.shape[0], FOLD_BINS, -1).mean(axis=2)
    # every circular shift of each shape: a segment's phase origin may be off (or unknown)
    roll = (np.arange(FOLD_BINS)[None, :] - np.arange(FOLD_BINS)[:, None]) % FOLD_BINS
    u = u[:, roll]  # (candidate, shift, bin)
    w = counts.astype(float)
    y = np.where(counts > 0, profile, 0.0)
    sw = w.sum()
    ubar = (u * w).sum(axis=2) / sw
    ybar = (y * w).sum() / sw
    cov = ((u - ubar[..., None]) * (y - ybar) * w).sum(axis=2)
    var = ((u - ubar[..., None]) ** 2 * w).sum(axis=2)
    slope = np.where(var > 0, cov / np.where(var > 0, var, 1.0), 0.0)
    sst = float(((y - ybar) ** 2 * w).sum())
    sse = np.where(slope > 0, sst - slope * cov, np.inf)  # compute above communication
    k, r = np.unravel_index(int(np.argmin(sse)), sse.shape)
    low = ybar - slope[k, r] * ubar[k, r]
    return {
        "k": int(k),
        "high": float(low + slope[k, r]),
        "low": float(low),
        "r2": 1.0 - float(sse[k, r]) / sst if sst > 0 else 0.0,
        "seen_swing": float(slope[k, r] * (u[k, r].max() - u[k, r].min())),
    }


def aliases(step: float, period: float) -> np.ndarray:
    """The steps [s] at least :data:`MIN_STEP` whose samples every ``period`` [s] are those of
    a ``step`` [s] swing, ``1 / |k / period ± 1 / step|`` for k = 1, 2..., shortest last."""
    k = np.arange(1, int(np.ceil(period / MIN_STEP)) + 2)
    f = np.concatenate((k / period - 1.0 / step, k / period + 1.0 / step))
    f = f[f > 0]
    out = 1.0 / f
    return np.sort(out[(out >= MIN_STEP) & (np.abs(out - step) > 1e-6 * step)])[::-1]


def _stamped_fold(t: np.ndarray, x: np.ndarray, spell: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Between-bin share of the variance of ``x`` folded at each frequency ``f`` [Hz] on its
    stamps ``t`` [s], each running ``spell`` (an integer label) folded on its own phase (a
    stall restarts the iterations' phase): :data:`ALIAS_BINS` bins per spell."""
    n_spell = int(spell.max()) + 1
    size = n_spell * ALIAS_BINS
    total = float(np.sum((x - x.mean()) ** 2))
    out = np.empty(f.size)
    for lo in range(0, f.size, FOLD_CHUNK):  # chunks of candidates, not samples
        chunk = f[lo : lo + FOLD_CHUNK]
        phase = (t[None, :] * chunk[:, None]) % 1.0
        bins = np.minimum((phase * ALIAS_BINS).astype(np.int64), ALIAS_BINS - 1)
        flat = (bins + ALIAS_BINS * spell[None, :] + size * np.arange(chunk.size)[:, None]).ravel()
        n = np.bincount(flat, minlength=size * chunk.size).reshape(chunk.size, n_spell, -1)
        s = np.bincount(flat, np.tile(x, chunk.size), minlength=size * chunk.size)
        s = s.reshape(chunk.size, n_spell, -1)
        spell_n = n.sum(axis=2, keepdims=True)
        spell_mean = s.sum(axis=2, keepdims=True) / np.maximum(spell_n, 1)
        with np.errstate(all="ignore"):
            between = np.where(n > 0, s**2 / np.where(n > 0, n, 1), 0.0).sum(axis=(1, 2))
        between -= (spell_n * spell_mean**2).sum(axis=(1, 2))
        out[lo : lo + FOLD_CHUNK] = between / total if total > 0 else 0.0
    return out


def _aliased(
    stamps: tuple[np.ndarray, np.ndarray, np.ndarray],
    line: Timeline,
    step: float,
    period: float,
    response: StepResponse,
    shape: dict[str, float],
    mean: float,
) -> str | None:
    """Why the folded ``step`` [s] may be an alias (None: it is not), sampled every
    ``period`` [s] through ``response``.

    The candidates are :func:`aliases`, less those whose swing would need a trough below 0 W:
    a step T seen through the chain's gain ``g`` swings by the folded swing × g(1/step) /
    g(1/T), which a two-level step of compute share c averaging ``mean`` [W] holds only up to
    ``mean / c``. For each left, the samples as stamped (``stamps``: times [s from the grid's
    start], channel codes, power [W]) in the running spells once the sensor settled, each
    channel less its mean, are folded about the step's frequency and the candidate's
    (:data:`ALIAS_TRIES` frequencies over the larger of ±2 cycles over the longest spell and
    ±0.2 %), and the best of each kept (:func:`_stamped_fold`). On a regular grid every alias
    folds as well as the step (their samples are the same): only the stamps' irregularity
    (jitter, slow polls, a poll loop restarted) tells them apart. The step stands when every
    alias folds to less than :data:`ALIAS_MARGIN` of it; one folding :data:`ALIAS_BETTER` times
    as well or more is named as what the samples show."""
    found = aliases(step, period)
    if found.size == 0:
        return None
    gain = _gain(response, 1.0 / found) / _gain(response, np.array([1.0 / step]))[0]
    swing = shape["seen_swing"] / np.maximum(gain, 1e-12)
    found = found[swing <= mean / max(shape["share"], 1e-3)]
    if found.size == 0:
        return None
    t, channel, x = (np.asarray(a) for a in stamps)
    use, seg = _settled_in(t, x, line, State.RUNNING, response.settle)
    if np.count_nonzero(use) > ALIAS_SAMPLES:
        pick = np.random.default_rng(0).choice(np.flatnonzero(use), ALIAS_SAMPLES, replace=False)
        use = np.zeros(t.size, bool)
        use[pick] = True
    t, channel, x, seg = t[use], channel[use], x[use], seg[use]
    if t.size < 4 * ALIAS_BINS:
        return None
    code = np.unique(channel, return_inverse=True)[1]
    x = x - (np.bincount(code, x) / np.bincount(code))[code]
    spell = np.unique(seg, return_inverse=True)[1]
    first, last = np.full(spell.max() + 1, np.inf), np.full(spell.max() + 1, -np.inf)
    np.minimum.at(first, spell, t)
    np.maximum.at(last, spell, t)
    longest = float(np.max(last - first))
    candidates = np.concatenate(([step], found))
    f0 = 1.0 / candidates
    width = np.maximum(2.0 / max(longest, period), 2e-3 * f0)
    tries = f0[:, None] + width[:, None] * np.linspace(-1.0, 1.0, ALIAS_TRIES)[None, :]
    score = _stamped_fold(t, x, spell, tries.ravel()).reshape(tries.shape).max(axis=1)
    if not score[0] > 0:
        return None
    ratio = score[1:] / score[0]
    if ratio.max() < ALIAS_MARGIN:
        return None
    best = float(found[np.argmax(ratio)])
    shown = ", ".join(f"{a:.3g}" for a in found[:4]) + (", ..." if found.size > 4 else "")
    every = format_duration(round(period, 6))
    if ratio.max() > ALIAS_BETTER:
        return (
            f"the {step:.3g}-s swing folded from samples every {every} is "
            f"an alias: on the samples' stamps a {best:.3g}-s step folds {ratio.max():.3g} x as "
            f"well (|1/T - k/dt| = 1/{step:.3g} s); a step that short is not resolved"
        )
    return (
        f"the {step:.3g}-s swing folded from samples every {every} may be an alias of a step "
        f"of {shown} s (|1/T - k/dt| = "
        f"1/{step:.3g} s): on the samples' stamps the {best:.3g}-s one folds {ratio.max():.2f} x "
        f"as well (at least {ALIAS_MARGIN:g} x: the stamps do not tell them apart)"
    )
