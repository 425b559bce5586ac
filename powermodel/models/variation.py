"""Step-to-step variation: the length and running level of every training step of a job.

A synchronous job's steps start together on every GPU, so their variation is drawn once for the
job, whatever its size. Each running stretch keeps its length and energy: the drawn steps are
renormalised to fill it, and their levels to average one over it (weighted by time), so the
timeline (checkpoints, failures, tokens) and the energy are those of the run without variation;
only how time and power are spread within each running stretch changes.
"""

from __future__ import annotations

import numpy as np

# A stretch of whole steps within this share of a step of a whole number is that whole number:
# the checkpoint interval is a whole number of steps up to rounding.
WHOLE = 1e-6
# A draw shorter than this is this long [mean steps]: the job's step coordinate reaches 1e7,
# where consecutive boundaries must still differ (float64 spacing there is 2e-9).
SHORTEST = 1e-6


def whole_steps(length: np.ndarray, step_time: float) -> np.ndarray:
    """Whole steps in each running stretch of ``length`` [s] at a mean step of ``step_time``
    [s]; what is left over is a partial step at the end, drawn at its mean."""
    return np.floor(np.asarray(length) / step_time + WHOLE).astype(np.int64)


def mean_one(n: int, cv: float, distribution: str, rng: np.random.Generator) -> np.ndarray:
    """``n`` positive draws of mean one and coefficient of variation ``cv``.

    Notes
    -----
    Lognormal: ``exp(μ + σ·Z)`` with ``σ² = ln(1 + cv²)`` and ``μ = −σ²/2``. Gamma: shape
    ``1/cv²``, scale ``cv²``. Both have mean 1 and standard deviation ``cv``.
    """
    if cv == 0.0:
        return np.ones(n)
    if distribution == "gamma":
        return rng.gamma(1.0 / cv**2, cv**2, n)
    sigma2 = np.log1p(cv**2)
    draws = rng.standard_normal(n)  # in place: numpy's lognormal is twice as slow
    draws *= np.sqrt(sigma2)
    draws -= 0.5 * sigma2
    return np.exp(draws, out=draws)


def draw_steps(
    counts: np.ndarray,
    rng: np.random.Generator,
    distribution: str = "lognormal",
    step_cv: float = 0.0,
    straggler_probability: float = 0.0,
    straggler_delay: float = 0.0,
    level_cv: float = 0.0,
    evaluation_every: int | None = None,
    evaluation_length: float = 1.0,
    evaluation_level: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw the steps of a job's running stretches.

    Parameters
    ----------
    counts
        Whole steps of each running stretch, in time order. [1]
    rng
        Random generator of this job's steps.
    distribution
        ``"lognormal"`` or ``"gamma"``: the law of a step's length.
    step_cv
        Coefficient of variation of a step's length. [1]
    straggler_probability
        Share of steps a straggler delays. [1]
    straggler_delay
        What a straggler adds to its step. [mean steps]
    level_cv
        Coefficient of variation of a step's level scale (lognormal). [1]
    evaluation_every
        Steps from one evaluation to the next (counted over the whole job), or None.
    evaluation_length
        Length of an evaluation step. [mean steps]
    evaluation_level
        Level scale of an evaluation step. [1]

    Returns
    -------
    bound : numpy.ndarray
        ``counts.sum() + 1`` step boundaries in the job's step coordinate: stretch ``r`` fills
        ``[first_r, first_r + counts_r)``, ``first_r`` the steps of the stretches before it
        (exact integers). [mean steps]
    level : numpy.ndarray
        ``counts.sum() + 1`` running sums of ``length_j · (scale_j − 1)`` over the job's steps,
        zero over each stretch. [mean steps]

    Notes
    -----
    A step ``j`` of stretch ``r`` with drawn length ``s_j`` (mean one, plus the straggler's
    delay with its probability, times the evaluation's length every ``evaluation_every``-th
    step) and drawn scale ``a_j`` (likewise) is renormalised to

    ``s_j ← s_j · n_r / Σ_r s``,  ``a_j ← a_j · n_r / Σ_r s·a``,

    so the stretch lasts its ``n_r`` mean steps and ``Σ_r s·(a − 1) = 0``: its energy and time
    are those of ``n_r`` mean steps whatever the draws.
    """
    counts = np.asarray(counts, dtype=np.int64)
    n = int(counts.sum())
    if n == 0:
        return np.zeros(1), np.zeros(1)
    stretch = np.repeat(np.arange(counts.size), counts)
    length = mean_one(n, step_cv, distribution, rng)
    scale = mean_one(n, level_cv, "lognormal", rng)
    np.maximum(length, SHORTEST, out=length)
    if straggler_probability > 0.0:
        length += straggler_delay * (rng.random(n) < straggler_probability)
    if evaluation_every is not None:
        evaluating = slice(evaluation_every - 1, None, evaluation_every)
        length[evaluating] *= evaluation_length
        scale[evaluating] *= evaluation_level
    first = np.cumsum(counts) - counts
    end = _renormalised_ends(length, stretch, counts, first)
    bound = np.concatenate(([0.0], end))
    length = np.diff(bound)  # as the renderer will read it back
    scale *= (counts / np.maximum(np.bincount(stretch, length * scale, counts.size), 1e-300))[
        stretch
    ]
    level = np.concatenate(([0.0], np.cumsum(length * (scale - 1.0))))
    return bound, level


def _renormalised_ends(
    length: np.ndarray, stretch: np.ndarray, counts: np.ndarray, first: np.ndarray
) -> np.ndarray:
    """End of each step in the job's step coordinate, each stretch's lengths scaled to fill
    ``counts`` mean steps, its end exactly ``first + counts``."""
    within = np.cumsum(length)
    before = np.concatenate(([0.0], within))[first]  # the sum over the stretches before
    within -= before[stretch]
    total = np.bincount(stretch, length, counts.size)
    end = first[stretch] + within * (counts / np.maximum(total, 1e-300))[stretch]
    last = (first + counts - 1)[counts > 0]
    end[last] = (first + counts)[counts > 0]
    return end
