"""GPU temperature, leakage, clocks and the pace of synchronous training.

A GPU in a compute phase sits at its power cap: firmware holds ``P_cap = P_leak(T) + P_dyn`` with
``P_dyn ∝ C·V²·f``, roughly ``∝ f³`` near the top of the voltage–frequency curve, where V ∝ f.
A hotter chip leaks more, so at the same cap its clock falls — continuously, with no threshold.
Off the cap (communication, memory-bound phases) clocks hold and power rises a little when hot.
"""

from __future__ import annotations

import numpy as np

DYNAMIC_EXPONENT = 3.0  # P_dyn ∝ f³ near the top of the V–f curve (C·V²·f with V ∝ f)


def steady_gpu_temperature(
    temp_inlet: np.ndarray, power: np.ndarray, thermal_resistance: float
) -> np.ndarray:
    """Die temperature once the heat sink has settled: ``T = T_inlet + R_th·P``.

    Parameters
    ----------
    temp_inlet
        Air inlet or coolant supply temperature at the GPU. [°C]
    power
        GPU board power. [W]
    thermal_resistance
        Die-to-inlet thermal resistance. [K/W]
    """
    return np.asarray(temp_inlet) + thermal_resistance * np.asarray(power)


def leakage_power(
    temp_gpu: np.ndarray, leakage_ref: float, temp_ref: float, coefficient: float
) -> np.ndarray:
    """Static (leakage) power, exponential in die temperature.

    ``P_leak(T) = P_ref · exp(k·(T − T_ref))``

    Parameters
    ----------
    temp_gpu
        Die temperature. [°C]
    leakage_ref
        Leakage at ``temp_ref``. [W]
    temp_ref
        Reference die temperature. [°C]
    coefficient
        ``k``: relative growth of leakage per kelvin. [1/K]

    Notes
    -----
    Sub-threshold leakage grows roughly exponentially with temperature; rules of thumb have it
    doubling every 10–30 K (k ≈ 0.023–0.069 /K). ``k`` is the coefficient powermodel calibrates
    on the Llama 3 diurnal throughput swing (0.041 /K: doubling every 17 K); it is labelled so
    in the presets.
    """
    return leakage_ref * np.exp(coefficient * (np.asarray(temp_gpu) - temp_ref))


def clock_factor(
    temp_gpu: np.ndarray,
    power_cap: float,
    leakage_ref: float,
    temp_ref: float,
    coefficient: float,
    power_ref: float | None = None,
    exponent: float = DYNAMIC_EXPONENT,
) -> np.ndarray:
    """Clock of a GPU held at its power cap, relative to that at ``temp_ref`` and ``power_ref``.

    ``f / f_ref = ((P_cap − P_leak(T)) / (P_ref − P_leak(T_ref)))^(1/exponent)``

    Parameters
    ----------
    temp_gpu
        Die temperature. [°C]
    power_cap
        Power the firmware holds in compute phases. [W]
    leakage_ref, temp_ref, coefficient
        As in :func:`leakage_power`.
    power_ref
        Cap at which the reference clock was set (the TDP); ``power_cap`` if None. [W]
    exponent
        Dynamic power against clock: 3 near the top of the V–f curve.

    Returns
    -------
    numpy.ndarray
        Clock factor (1 at the reference); continuous in temperature and cap.
    """
    power_ref = power_cap if power_ref is None else power_ref
    dynamic = power_cap - leakage_power(temp_gpu, leakage_ref, temp_ref, coefficient)
    dynamic_ref = power_ref - leakage_ref
    if np.any(dynamic <= 0):
        raise ValueError("leakage reaches the power cap: the GPU cannot run at this temperature")
    return (dynamic / dynamic_ref) ** (1.0 / exponent)


def locked_phases(
    shares: np.ndarray, power: np.ndarray, compute: np.ndarray, clock: float, leakage: float
) -> tuple[np.ndarray, np.ndarray]:
    """Shares of the step and board power of each phase with the clock locked at ``clock``.

    Parameters
    ----------
    shares
        Share of the step of each phase at the reference clock. [1]
    power
        Board power of each phase at the reference clock. [W]
    compute
        True for a compute phase, False for communication, memory-bound and other phases.
    clock
        Locked clock, relative to the reference. [1]
    leakage
        Leakage the GPU keeps at any clock. [W]

    Returns
    -------
    shares : numpy.ndarray
        Share of the (longer) locked step of each phase. [1]
    power : numpy.ndarray
        Board power of each phase. [W]

    Notes
    -----
    ``P = P₀ + (P_ref − P₀)·f^n`` with ``P₀ = min(P_leak, P_ref)``, ``n = DYNAMIC_EXPONENT`` (3)
    in compute phases and 1 elsewhere; compute phases take ``1/f`` as long, so their shares grow
    as ``s/f`` before the shares are scaled back to a sum of 1.

    A locked clock ``f`` scales the power above leakage by ``f³`` in compute phases (dynamic
    power ``∝ C·V²·f`` with the voltage following the clock near the top of the V–f curve) and
    by ``f`` elsewhere [A] (communication and memory-bound phases run near the voltage floor):
    frequency locking lowers troughs as well as peaks, where a power cap lowers only the peaks
    [patel]. A locked GPU draws its scaled dynamic power plus its leakage, never less than
    nothing.

    References
    ----------
    .. [patel] Patel, P., Choukse, E., Zhang, C., Goiri, Í., Warrier, B., Mahalingam, N. and
       Bianchini, R., "Characterizing Power Management Opportunities for LLMs in the Cloud",
       ASPLOS '24 (2024). https://doi.org/10.1145/3620666.3651329
    """
    base = np.minimum(leakage, power)
    power = base + (power - base) * clock ** np.where(compute, DYNAMIC_EXPONENT, 1.0)
    # compute phases take 1/f as long: their share of the (longer) step grows
    shares = np.where(compute, shares / clock, shares)
    return shares / shares.sum(), power


def slowest_of(spread: float, n: int) -> float:
    """Expected clock deficit of the slowest of ``n`` GPUs whose clocks spread by ``spread`` (σ).

    Synchronous training waits for the slowest GPU. The largest of ``n`` standard Gaussian draws
    has the expectation ``∫ x · n·φ(x)·Φ(x)^(n−1) dx``, which grows like ``√(2 ln n)``; the
    integral is evaluated on a fixed grid, so the cost does not grow with ``n``.

    Returns
    -------
    float
        Relative clock deficit of the slowest GPU, ``spread`` times that expectation. [1]
    """
    if n < 2:
        return 0.0
    x = np.linspace(-3.0, 4.0 + np.sqrt(2.0 * np.log(n)), 8001)
    log_pdf = -0.5 * x * x - 0.5 * np.log(2.0 * np.pi)
    from scipy.special import log_ndtr  # noqa: PLC0415 - scipy's import is paid by what uses it

    density = np.exp(np.log(n) + log_pdf + (n - 1) * log_ndtr(x))
    return spread * float(np.sum(x * density) * (x[1] - x[0]))


def step_time_factor(clock: np.ndarray, compute_share: float) -> np.ndarray:
    """Step time relative to the reference when compute runs at ``clock``: compute stretches,
    communication does not.

    ``t / t_ref = s / c + (1 − s)``, ``s`` the compute share of the reference step [1], ``c``
    the clock relative to the reference's [1]. [1]
    """
    return compute_share / np.asarray(clock) + (1.0 - compute_share)


def step_stretch(clock: np.ndarray, reference: float, compute_share: float) -> np.ndarray:
    """Step time at ``clock`` relative to the step time at the ``reference`` clock.

    Parameters
    ----------
    clock
        Clock of the compute phases, relative to the clock the step was measured at. [1]
    reference
        Clock, on the same scale, of the step to compare with (a locked clock, or the clock
        with the plant at its setpoint). [1]
    compute_share
        Share of the step spent in compute phases at clock 1. [1]

    Returns
    -------
    numpy.ndarray
        ``t(clock) / t(reference)``: above 1 where the clock is slower. [1]

    Notes
    -----
    ``t(c) / t(c_ref) = (s / c + 1 − s) / (s / c_ref + 1 − s)`` (:func:`step_time_factor`
    at each clock).
    """
    return step_time_factor(clock, compute_share) / step_time_factor(reference, compute_share)
