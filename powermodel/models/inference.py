"""Inference fleets: GPU utilisation that follows user demand, and the power it draws.

Demand has a daily shape (a smooth curve peaking at a set local hour, or hourly data), a weekly
one (weekend days lower) and short-term variation (a first-order autoregressive process on a
fixed step: requests arrive in bursts). A GPU's power is linear in its utilisation between idle
and its power at a full batch, scaled by the clock: a batch that is not full leaves the GPU
waiting on memory and on requests [S, polca]. Everything is piecewise constant on the
variation's own step, so any profile step averages the same function: energy is exact at every
resolution.

References
----------
.. [polca] Patel, P., Choukse, E., Zhang, C., Goiri, I., Warrier, B., Mahalingam, N.,
   Bianchini, R. (Microsoft Azure), "Characterizing Power Management Opportunities for LLMs in
   the Cloud (POLCA: Power Oversubscription in LLM Cloud Providers)", ASPLOS 2024;
   arXiv:2308.12908 (2024). https://arxiv.org/abs/2308.12908
"""

from __future__ import annotations

import numpy as np

from powermodel.models import iir

HOURS_A_WEEK = 168


def daily_shape(hour: np.ndarray, base: float, peak: float, peak_hour: float) -> np.ndarray:
    """Utilisation over the day: a raised cosine from ``base`` at ``peak_hour`` + 12 h to
    ``peak`` at ``peak_hour`` [h, local]. [1]"""
    return base + (peak - base) * 0.5 * (1.0 + np.cos(2.0 * np.pi * (hour - peak_hour) / 24.0))


def demand(
    hour_of_week: np.ndarray,
    base: float,
    peak: float,
    peak_hour: float,
    weekend_level: float,
    hourly: np.ndarray | None = None,
) -> np.ndarray:
    """Mean utilisation at each local hour of the week (0 at Monday 00:00) [1].

    ``hourly`` (24 values, a day repeated, or 168, a week from Monday) replaces the curve: each
    hour's value holds over it. Otherwise the daily curve (:func:`daily_shape`), times
    ``weekend_level`` on Saturdays and Sundays.
    """
    hour_of_week = np.mod(hour_of_week, HOURS_A_WEEK)
    if hourly is not None:
        hourly = np.asarray(hourly, dtype=float)
        return hourly[np.floor(hour_of_week).astype(np.int64) % hourly.size]
    level = daily_shape(np.mod(hour_of_week, 24.0), base, peak, peak_hour)
    weekend = hour_of_week >= 120.0  # Saturday 00:00 onwards
    return np.where(weekend, level * weekend_level, level)


def utilisation(
    mean: np.ndarray, cv: float, correlation: float, step: float, rng: np.random.Generator
) -> np.ndarray:
    """Utilisation on steps of ``step`` [s]: the ``mean`` [1] on each step times a first-order
    autoregressive factor (coefficient of variation ``cv``, correlation time ``correlation``
    [s]), held between 0 and 1. [1]"""
    if cv == 0.0:
        return np.clip(mean, 0.0, 1.0)
    a = np.exp(-step / correlation) if correlation > 0 else 0.0
    shocks = rng.standard_normal(mean.size) * cv * np.sqrt(1.0 - a * a)
    first = rng.standard_normal() * cv  # the process in its steady state from the start
    noise, _ = iir.lfilter([1.0], [1.0, -a], shocks, [a * first])
    return np.clip(mean * (1.0 + noise), 0.0, 1.0)


def gpu_power(u: np.ndarray, idle: float, busy: float, clock: float = 1.0) -> np.ndarray:
    """Board power of a GPU at utilisation ``u`` [1] (of what it serves at its ``clock``): from
    ``idle`` [W] to ``busy`` [W] (a full batch at the nominal clock), the dynamic part scaled by
    the clock cubed (P ≈ C·V²·f with the voltage following the clock). [W]"""
    return idle + (busy - idle) * clock**3 * u
