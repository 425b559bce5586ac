"""Step-to-step variation: the length and running level of every step of a job.

A synchronous job's steps start together on every GPU, so their variation is drawn once for the
job, whatever its size. A training step keeps its own length distribution (mean one step);
stragglers and evaluations add their time. Each running stretch of the timeline (its length is
fixed in seconds by checkpoints and interruptions) holds as many drawn steps as fit in it, the
last one cut by the stretch's end, so a stretch with evaluations or stragglers holds fewer
training steps and yields fewer tokens than the run without variation.
"""

from __future__ import annotations

import numpy as np

# A draw shorter than this is this long [mean steps]: the job's step coordinate reaches 1e7,
# where consecutive boundaries must still differ (float64 spacing there is 2e-9).
SHORTEST = 1e-6
# Highest share of running time evaluations and stragglers may take in expectation [1]: beyond,
# training vanishes from the run (the scenario refuses it).
MOST_EVENT_SHARE = 0.5
# Draws taken per stretch beyond its expected steps, in standard deviations of their count: a
# stretch outlasts its draws with a chance below 1e-23 (Gaussian tail; the rest would run at
# the mean step, exactly rendered).
MARGIN_SIGMAS = 10.0


def event_share(
    straggler_probability: float = 0.0,
    straggler_delay: float = 0.0,
    evaluation_every: int | None = None,
    evaluation_length: float = 1.0,
) -> float:
    """Expected extra time of stragglers and evaluations per training step [mean steps].

    Notes
    -----
    ``p·δ + E/N`` for a straggler probability ``p`` of delay ``δ`` and an evaluation of ``E``
    mean steps every ``N`` steps (``N − 1`` training steps and one evaluation).
    """
    evaluations = 0.0 if evaluation_every is None else evaluation_length / evaluation_every
    return straggler_probability * straggler_delay + evaluations


def mean_length(
    straggler_probability: float = 0.0,
    straggler_delay: float = 0.0,
    evaluation_every: int | None = None,
    evaluation_length: float = 1.0,
) -> float:
    """Expected length of a drawn step, training or evaluation [mean steps].

    Notes
    -----
    ``(1 + p·δ)·(N − 1 + E)/N``: ``N − 1`` training steps and an evaluation ``E`` times as long
    in every ``N``, each lengthened by a straggler's ``δ`` with probability ``p`` (``N = ∞``
    without evaluations). A stretch's share of training time is then ``(N − 1)/(N − 1 + E)``
    and its training steps ``(N − 1)/N`` of ``x/μ`` for ``x`` mean steps of running time.
    """
    every = evaluation_every or np.inf
    return (1.0 + straggler_probability * straggler_delay) * (
        1.0 + (evaluation_length - 1.0) / every
    )


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


def pool_sizes(
    extent: np.ndarray,
    step_cv: float = 0.0,
    straggler_probability: float = 0.0,
    straggler_delay: float = 0.0,
    evaluation_every: int | None = None,
    evaluation_length: float = 1.0,
) -> np.ndarray:
    """Steps to draw for running stretches of ``extent`` mean steps: the most they can hold,
    up to ``MARGIN_SIGMAS`` standard deviations of their count, and one for the cut step.

    Notes
    -----
    A step lasts at least ``μ = 1 − (1 − E)/N`` mean steps on average (``E < 1``) and at least 1
    otherwise; its standard deviation is at most ``σ = max(E, 1)·(c + δ·√p) + |E − 1|/√N``.
    Renewal theory gives a count of mean ``x/μ`` and standard deviation ``σ·√(x/μ³)``.
    """
    every = evaluation_every or np.inf
    mu = 1.0 - max(1.0 - evaluation_length, 0.0) / every
    sigma = max(evaluation_length, 1.0) * (
        step_cv + straggler_delay * np.sqrt(straggler_probability)
    ) + abs(evaluation_length - 1.0) / np.sqrt(every)
    x = np.asarray(extent, dtype=np.float64)
    size = x / mu + MARGIN_SIGMAS * (sigma * np.sqrt(x / mu**3) + sigma**2 / mu**2) + 2.0
    return np.where(x > 0, np.ceil(size), 0).astype(np.int64)


def draw_steps(
    extent: np.ndarray,
    counter: np.ndarray,
    rng: np.random.Generator,
    distribution: str = "lognormal",
    step_cv: float = 0.0,
    straggler_probability: float = 0.0,
    straggler_delay: float = 0.0,
    level_cv: float = 0.0,
    evaluation_every: int | None = None,
    evaluation_length: float = 1.0,
    evaluation_level: float = 1.0,
    scale_range: tuple[float, float] = (0.0, np.inf),
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Draw the steps of a job's running stretches.

    Parameters
    ----------
    extent
        Length of each running stretch, in time order. [mean steps]
    counter
        The job's step counter at each stretch's start, which places its evaluations. [1]
    rng, distribution
        Random generator of this job's steps, and the law of a step's length: ``"lognormal"``
        or ``"gamma"``.
    step_cv, level_cv
        Coefficient of variation of a step's length, and of its level scale (lognormal). [1]
    straggler_probability, straggler_delay
        Share of steps a straggler delays [1], and what it adds to its step [mean steps].
    evaluation_every, evaluation_length, evaluation_level
        Steps from one evaluation to the next (the step counter's multiples), or None; the
        length [mean steps] and the level scale [1] of an evaluation step.
    scale_range
        Lowest and highest level scale the hardware lets a step reach: its power floor and its
        power limit over the running waveform's trough and peak. [1]

    Returns
    -------
    count : numpy.ndarray
        Steps each stretch starts (int64), the last one cut by the stretch's end. [1]
    bound : numpy.ndarray
        ``count.sum() + 1`` step boundaries in the job's step coordinate: stretch ``r`` starts
        at ``bound[first_r]``, ``first_r`` the steps of the stretches before it; its last step
        ends past its extent, by what the cut took off. [mean steps]
    level : numpy.ndarray
        ``(2, count.sum() + 1)``: running sums over the job's steps of ``length_j·(scale_j − 1)``
        (the power's scale, row 0) and of ``length_j·(yield_j − 1)`` (the tokens', row 1: ``1 /
        length_j`` for a training step, 0 for an evaluation). [mean steps]

    Notes
    -----
    A training step ``j`` lasts ``s_j = X_j + δ·B_j`` mean steps (``X_j`` of mean 1 and
    coefficient of variation ``step_cv``, ``B_j`` a straggler's Bernoulli draw) and runs at the
    level scale ``a_j = Y_j`` (mean 1, ``level_cv``); the step counter's every
    ``evaluation_every``-th step is an evaluation, ``s_j`` times ``evaluation_length``, ``a_j``
    times ``evaluation_level``. A stretch of ``x_r`` mean steps holds the steps it starts:

    ``K_r = min{k : Σ_{j<k} s_j ≥ x_r}``,

    the last cut by its end, so its expected training steps are ``x_r / (1 + p·δ + E/N)``
    (renewal theory, ``N`` the evaluation's period and ``E`` its length). A training step's
    tokens accrue evenly over its length (yield ``1/s_j`` of the mean rate), an evaluation's are
    none. Each scale is clipped to ``scale_range``: no step draws above the GPUs' power limit (a
    job at its cap or TDP varies only downwards) or below a power floor.
    """
    extent = np.asarray(extent, dtype=np.float64)
    law = (step_cv, straggler_probability, straggler_delay, evaluation_every, evaluation_length)
    pool = pool_sizes(extent, *law)
    if int(pool.sum()) == 0:
        return np.zeros(extent.size, dtype=np.int64), np.zeros(1), np.zeros((2, 1))
    stretch = np.repeat(np.arange(extent.size), pool)  # each drawn step's stretch
    first = np.cumsum(pool) - pool  # each stretch's first drawn step
    length, scale, training = _drawn_steps(
        stretch, first, counter, rng, distribution, law, level_cv, evaluation_level
    )
    runs = _started_in_stretch(extent, length, stretch, first)
    count = np.bincount(stretch, runs, extent.size).astype(np.int64)
    del stretch
    bound, level = _running_sums(length[runs], scale[runs], training[runs], scale_range)
    return count, bound, level


def _drawn_steps(
    stretch: np.ndarray,
    first: np.ndarray,
    counter: np.ndarray,
    rng: np.random.Generator,
    distribution: str,
    law: tuple[float, float, float, int | None, float],
    level_cv: float,
    evaluation_level: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each drawn step's length [mean steps] and level scale [1], and whether it trains.

    ``stretch`` is each step's stretch, ``first`` each stretch's first step, ``law``
    :func:`draw_steps`'s ``(step_cv, straggler_probability, straggler_delay, evaluation_every,
    evaluation_length)``. A training step lasts ``X_j + δ·B_j`` (at least :data:`SHORTEST`
    before the straggler's delay) at the scale ``Y_j``; the step counter's every
    ``evaluation_every``-th step is an evaluation, its length times ``evaluation_length``, its
    scale times ``evaluation_level``. The draws come in that order: lengths, scales, stragglers.
    """
    step_cv, straggler_probability, straggler_delay, evaluation_every, evaluation_length = law
    n = stretch.size
    length = mean_one(n, step_cv, distribution, rng)
    scale = mean_one(n, level_cv, "lognormal", rng)
    np.maximum(length, SHORTEST, out=length)
    if straggler_probability > 0.0:
        length += straggler_delay * (rng.random(n) < straggler_probability)
    training = np.ones(n, dtype=bool)
    if evaluation_every is not None:
        step = np.arange(n) - first[stretch] + np.asarray(counter, dtype=np.int64)[stretch]
        training = step % evaluation_every != evaluation_every - 1
        length[~training] *= evaluation_length
        scale[~training] *= evaluation_level
    return length, scale, training


def _started_in_stretch(
    extent: np.ndarray, length: np.ndarray, stretch: np.ndarray, first: np.ndarray
) -> np.ndarray:
    """Which drawn steps (``length`` [mean steps], of the stretches ``stretch``, each
    stretch's from ``first``) start before their stretch of ``extent`` [mean steps] ends:
    ``K_r = min{k : Σ_{j<k} s_j ≥ x_r}`` steps, the last cut by the end."""
    # a step runs if its stretch has not ended when it starts
    within = np.cumsum(length)
    within -= np.concatenate(([0.0], within))[first][stretch]  # each step's end in its stretch
    return within - length < extent[stretch]


def _running_sums(
    length: np.ndarray, scale: np.ndarray, training: np.ndarray, scale_range: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`draw_steps`'s ``bound`` and ``level`` from the steps that run, in order: their
    lengths [mean steps], level scales [1] (clipped here to ``scale_range``, the hardware's
    power floor and limit; overwritten) and whether each trains."""
    np.clip(scale, *scale_range, out=scale)
    bound = np.concatenate(([0.0], np.cumsum(length)))
    length = np.diff(bound)  # as the renderer will read it back
    scale -= 1.0
    scale *= length
    level = np.zeros((2, bound.size))
    np.cumsum(scale, out=level[0, 1:])
    np.cumsum(np.where(training, 1.0, 0.0) - length, out=level[1, 1:])
    return bound, level
