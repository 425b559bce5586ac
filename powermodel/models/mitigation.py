"""What the hardware and the site can do about the swing: floors, ramp limits, burn, storage.

Per-GPU mitigations act on the per-GPU waveform of one iteration (cells, before the offsets
aggregate it) or on the per-GPU power series around stops; storage acts on the aggregate. The
sequential ones (a slew-rate limiter with hysteresis, a battery with a state of charge) are
compiled with numba: a Python loop over samples is too slow at a year of seconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import numpy as np

from powermodel.models.signal import first_order_lag


def floor(cells: np.ndarray, level: float) -> np.ndarray:
    """A power floor: the GPU burns up to ``level`` whenever its work would draw less.

    NVIDIA power smoothing holds a floor (a percentage of TDP, up to 90 % [nvidia_nvml]);
    software burn fills communication gaps with dummy work to the same effect. Both only ever
    add energy.

    References
    ----------
    .. [nvidia_nvml] NVIDIA, "NVIDIA Management Library (NVML) API Reference and nvidia-smi
       documentation", NVIDIA documentation (2025): power smoothing's floor, ramp rates and
       hysteresis. https://docs.nvidia.com/deploy/nvml-api/
    """
    return np.maximum(cells, level)


def floor_overhead(low: float, high: float, duty: float, level: float) -> float:
    """Closed-form relative energy overhead of a floor on a two-level square wave.

    Parameters
    ----------
    low, high
        The two levels. [W]
    duty
        Share of the period at ``high``. [1]
    level
        Floor. [W]

    Returns
    -------
    float
        Extra energy over the wave's energy. [1]
    """
    mean = duty * high + (1.0 - duty) * low
    raised = duty * max(high, level) + (1.0 - duty) * max(low, level)
    return raised / mean - 1.0


def smooth_periodic(
    cells: np.ndarray, period: float, ramp_up: float, ramp_down: float, hysteresis: float
) -> np.ndarray:
    """Slew-rate limited power of a periodic waveform, in its periodic steady state.

    Parameters
    ----------
    cells
        One period of per-GPU power as equal cells. [W]
    period
        Length of the period. [s]
    ramp_up, ramp_down
        Largest rise and fall rates. [W/s]
    hysteresis
        After a rise, power holds this long before it may fall. [s]

    Returns
    -------
    numpy.ndarray
        The limited waveform, same cells. [W]

    Notes
    -----
    NVIDIA power smoothing (GB200/GB300) limits the rate of change of board power: a rise
    faster than ``ramp_up`` is throttled (work waits), a fall faster than ``ramp_down`` is filled
    by burning (energy). Three periods are run from the waveform's mean and the last kept: a
    limiter started anywhere has forgotten its start within one period whenever it can follow
    the waveform at all.
    """
    dt = period / cells.size
    out = _compiled(_slew)(
        np.tile(cells, 3), dt, ramp_up, ramp_down, hysteresis, float(cells.mean())
    )
    return out[-cells.size :]


def slew(power: np.ndarray, dt: float, ramp_up: float, ramp_down: float) -> np.ndarray:
    """Rate-limited power series: no rise faster than ``ramp_up``, no fall faster than
    ``ramp_down`` [W/s] between consecutive interval means of step ``dt`` [s]."""
    return _compiled(_slew)(
        np.asarray(power, dtype=float), dt, ramp_up, ramp_down, 0.0, float(power[0])
    )


def throttled_share(limited: np.ndarray, demand: np.ndarray) -> float:
    """Stretch of the step when power may not rise as fast as the work asks. [1]

    Work is taken as proportional to power above the waveform's lowest level: the energy short
    of demand where ``limited < demand`` is work made up later at the top level, which takes
    ``deficit / (top − lowest)`` more time, as a share of the step.
    """
    span = demand.max() - demand.min()
    if span <= 0.0:
        return 0.0
    return float(np.clip(demand - limited, 0.0, None).mean() / span)


@cache
def _compiled(kernel: Callable) -> Callable:
    """``kernel`` compiled by numba at its first use, so that runs without a sequential
    mitigation do not import numba (a quarter of a second)."""
    from numba import njit

    return njit(cache=True)(kernel)


def _slew(x, dt, up, down, hold, start):  # pragma: no cover - compiled
    y = np.empty_like(x)
    prev = start
    since_rise = hold
    for i in range(x.size):
        v = x[i]
        if v >= prev:
            v = min(v, prev + up * dt)
            since_rise = 0.0
        elif since_rise < hold:
            v = prev
            since_rise += dt
        else:
            v = max(v, prev - down * dt)
        y[i] = v
        prev = v
    return y


def stop_ramp(
    power: np.ndarray,
    stop_times: np.ndarray,
    level: np.ndarray,
    rate: float,
    dt: float,
    delay: float = 0.0,
) -> np.ndarray:
    """Burn on job stop: after each stop the GPUs burn down from ``level`` at ``rate``.

    Parameters
    ----------
    power
        Per-GPU power, interval means on a grid of step ``dt`` starting at 0. [W]
    stop_times
        Times the job leaves the running state. [s]
    level
        Power each burn starts from (the power before its stop). [W]
    rate
        Ramp-down rate. [W/s]
    delay
        Time from the stop to the burn taking hold (0 for hardware; detection time for a
        software agent). [s]

    Returns
    -------
    numpy.ndarray
        Per-GPU power with the burn. [W]

    Notes
    -----
    The burn envelope ``level − rate·(t − t_stop − delay)`` is integrated exactly over each
    interval (it is linear until it meets zero), so its energy does not depend on ``dt``. The
    GB300 NVL72 power supplies burn down this way at a job's end in hardware
    [nvidia_gb300_power].

    References
    ----------
    .. [nvidia_gb300_power] NVIDIA, "How New GB300 NVL72 Features Provide Steady Power for AI",
       NVIDIA Technical Blog (2025).
       https://developer.nvidia.com/blog/how-new-gb300-nvl72-features-provide-steady-power-for-ai/
    """
    if stop_times.size == 0:
        return power
    edges = np.arange(power.size + 1) * dt
    last = np.searchsorted(stop_times, edges[:-1] + 0.5 * dt, side="right") - 1
    start = np.where(last >= 0, stop_times[np.maximum(last, 0)] + delay, np.inf)
    level = np.asarray(level, dtype=float)[np.maximum(last, 0)]
    # mean of the envelope over each interval: the integral of a clipped ramp, exactly
    duration = level / rate

    def area(t: np.ndarray) -> np.ndarray:
        s = np.clip(t - start, 0.0, duration)
        return level * s - 0.5 * rate * s * s

    mean = (area(edges[1:]) - area(edges[:-1])) / dt
    return np.maximum(power, mean)


RECOVERY = 3600.0  # s [A]: the state of charge drifts back to mid-window over about an hour


@dataclass(frozen=True)
class StorageResult:
    """A battery's dispatch. Power is positive discharging (towards the load). [MW, MWh]"""

    power: np.ndarray
    soc: np.ndarray
    energy: float


def storage_dispatch(
    load: np.ndarray,
    dt: float,
    *,
    power: float,
    energy: float,
    efficiency: float,
    delay: float,
    soc_min: float,
    soc_max: float,
    soc_initial: float,
    tau: float,
    ramp: float | None = None,
) -> StorageResult:
    """A battery that makes the load look like its own smoothed version.

    Parameters
    ----------
    load
        Power it sits in front of (interval means). [MW]
    dt
        Step. [s]
    power, energy
        Rated power [MW] and usable energy [MWh].
    efficiency
        Round trip; charge and discharge each take its square root. [1]
    delay
        Response delay of the controller and converters, in whole steps (rounded). [s]
    soc_min, soc_max, soc_initial
        State-of-charge window and start. [1]
    tau
        Time constant of the target the grid should see (0: none). [s]
    ramp
        Largest ramp of the target, either way (None: none). [MW/min]

    Returns
    -------
    StorageResult

    Notes
    -----
    The controller asks for ``load − target``, delayed by ``delay``, with ``target`` the load
    through a first-order lag over ``tau`` and then a slew-rate limit at ``ramp``; a proportional
    term pulls the state of charge back to the middle of its window over ``RECOVERY`` so the
    battery stays ready. The request is clipped to the rating and to what the state of charge
    allows.
    """
    target = first_order_lag(load, dt, tau)
    if ramp is not None:
        rate = ramp / 60.0  # MW/s
        target = _compiled(_slew)(target, dt, rate, rate, 0.0, float(target[0]))
    request = load - target
    shift = min(int(round(delay / dt)), request.size)  # a delay past the run: no request
    if shift:
        request = np.concatenate((np.zeros(shift), request[: request.size - shift]))
    eta = np.sqrt(efficiency)
    p, soc = _compiled(_battery)(
        request,
        dt / 3600.0,
        power,
        energy,
        eta,
        soc_min,
        soc_max,
        soc_initial,
        0.5 * (soc_min + soc_max),
        energy / (RECOVERY / 3600.0),
    )
    return StorageResult(power=p, soc=soc, energy=energy)


def _battery(
    request, hours, rating, energy, eta, soc_min, soc_max, soc, soc_mid, pull
):  # pragma: no cover - compiled
    p = np.empty_like(request)
    out = np.empty_like(request)
    for i in range(request.size):
        want = request[i] + (soc - soc_mid) * pull
        want = min(max(want, -rating), rating)
        if want > 0.0:  # discharge: what is stored above the floor, less the loss
            want = min(want, (soc - soc_min) * energy * eta / hours)
            soc -= want / eta * hours / energy
        else:  # charge: room below the ceiling, less the loss
            want = max(want, -(soc_max - soc) * energy / eta / hours)
            soc -= want * eta * hours / energy
        soc = min(max(soc, soc_min), soc_max)  # rounding only
        p[i] = want
        out[i] = soc
    return p, out
