"""The sensor chain a trace was read through: which chain its power field implies, its
response to a unit step (probed through :func:`powermodel.models.sensors.read`, not assumed)
and what that response lets a fit resolve (:data:`RESOLVE_WINDOWS`). Every later stage reads
the trace through this response: :mod:`powermodel.fit.states` takes its delay off each
boundary, :mod:`powermodel.fit.fold` convolves candidate iterations with it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from powermodel.errors import PowerModelError
from powermodel.models import sensors

PROBE_STEPS = 20_000  # grid steps of the probe of a sensor's step response, at most
# The GPUs built on GA100, whose NVML power is instantaneous, not the 1-s average of the rest
# of Ampere and newer [P, nvidia_nvml]: catalogue names that begin so
GA100 = ("A100", "A30")
# AMD's power fields that hold the current (instantaneous) socket power of MI300 and later, as
# rocm-smi and amd-smi head them [P, rocm_smi; P, amd_smi] (lower case): not the average
AMD_CURRENT = ("current socket", "socket_power", "power_usage", "current_socket_power")
RESOLVE_WINDOWS = 4.0  # a step resolves when it spans this many averaging windows


@dataclass(frozen=True)
class StepResponse:
    """A sensor chain's response to a unit step at time 0, sampled every ``dt`` [s]."""

    dt: float
    values: np.ndarray
    delay: float  # time to half the step [s]
    settle: float  # time to 99 % of the step [s]
    full: float  # time to 99.9 % of the step: a moving average's window [s]
    instant: bool = False  # each reading the value at one instant (no averaging, no filter)

    @property
    def window(self) -> float:
        """The chain's averaging window: twice its half-step delay (a moving average's
        length). [s]"""
        return 2.0 * self.delay

    def kernel(self, dt: float, n: int | None = None) -> np.ndarray:
        """Impulse response as weights on a grid of step ``dt`` [s] (sums to 1); ``n`` cells
        (default: until it settles)."""
        n = int(np.ceil(self.settle / dt)) + 1 if n is None else n
        t = np.arange(n + 1) * dt
        cum = np.interp(t, np.arange(self.values.size) * self.dt, self.values, right=1.0)
        return np.diff(cum)


def step_response(sensor: str | sensors.Sensor, period: float) -> StepResponse:
    """The chain's response to a unit step, through :func:`powermodel.models.sensors.read`.

    The chain is probed, not assumed: whatever averaging or filter the sensor applies, the fit
    sees it as this response (linear and time-invariant chains; a block-average meter's is its
    mean over the block's phase).
    """
    horizon = max(30.0, 40.0 * period)
    for _ in range(8):  # widen until the chain settles: a handful of tries, not a loop on data
        dt = max(min(period, 0.05) / 5.0, horizon / PROBE_STEPS)  # at most PROBE_STEPS
        n = int(np.ceil(horizon / dt))
        values = np.concatenate((np.zeros(n), np.ones(n)))
        y = np.asarray(sensors.read(values, dt, sensor, at=(n + np.arange(n)) * dt), dtype=float)
        if abs(y[-1] - 1.0) < 1e-3:
            break
        horizon *= 4.0
    else:
        raise PowerModelError(f"the sensor chain {sensor!r} does not settle to a step")
    t = np.arange(y.size) * dt
    return StepResponse(
        dt=dt,
        values=y,
        delay=float(np.interp(0.5, np.maximum.accumulate(y), t)),
        settle=float(t[np.argmax(y >= 0.99)]),
        full=float(t[np.argmax(y >= 0.999)]),
        instant=isinstance(sensor, sensors.Sensor) and sensor.window == 0 and sensor.filter is None,
    )


def chain_of(meta: dict, period: float, gpu: str | None = None) -> sensors.Sensor:
    """The sensor chain a trace's power field went through: NVML's 1-s average for
    ``power.draw`` (and DCGM's power field, which reads it) [P, nvidia_nvml]; an instantaneous
    sample at each poll for nvidia-smi's ``power.draw.instant``, for ``power.draw`` of a
    ``gpu`` (catalogue name) on GA100, which NVML reports instantaneously [P, nvidia_nvml], and
    for AMD's current socket power (rocm-smi's ``Current Socket Graphics Package Power``,
    amd-smi's ``socket_power``, ``power_usage`` or ``current_socket_power``: MI300 and later
    report the current socket power, "also known as instant power" [P, rocm_smi; P, amd_smi]);
    a 1-s average [A] for AMD's average socket power (MI200 and earlier, whose window AMD does
    not state) and for a meter, whose averaging its file does not say (give ``sensor`` if you
    know it)."""
    ga100 = meta.get("kind") != "meter" and str(gpu or "").upper().startswith(GA100)
    field = str(meta.get("power_field", ""))
    amd = meta.get("format") in ("rocm-smi", "amd-smi") and field.lower().startswith(AMD_CURRENT)
    if ga100 or amd or "instant" in field:
        return sensors.Sensor(
            "instant", "instantaneous sample", "gpu_power", window=0.0, period=period
        )
    return sensors.CHAINS["nvml"]


def _gain(response: StepResponse, f: np.ndarray) -> np.ndarray:
    """The chain's gain at frequencies ``f`` [Hz]: the modulus of its impulse response's
    Fourier transform (1 for a sensor that samples instantaneously)."""
    if response.instant:
        return np.ones(np.atleast_1d(f).shape)
    w = response.kernel(response.dt)
    t = (np.arange(w.size) + 0.5) * response.dt
    return np.abs(np.exp(-2j * np.pi * np.outer(np.atleast_1d(f), t)) @ w)
