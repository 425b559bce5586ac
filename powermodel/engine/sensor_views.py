"""Sensor views (docs/model/sensors.md): a profile's variable as a sensor chain reports it."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import xarray as xr

from powermodel.engine.series import PiecewiseSeries, lazy_data
from powermodel.errors import PowerModelError
from powermodel.models import sensors
from powermodel.scenario import format_duration
from powermodel.variables import sensor_attrs

SENSORS = sensors.CHAINS  # the sensor chains by key: what sensor_view and simulate(sensors=) take


def sensor_chains(chosen: Sequence[str | sensors.Sensor], dt: float) -> list[sensors.Sensor]:
    """The chains asked for, once each, every one checked against the step ``dt`` [s]."""
    if isinstance(chosen, str | sensors.Sensor):
        chosen = [chosen]
    chains = list({c.key: c for c in map(sensors.lookup, chosen)}.values())
    for chain in chains:
        sensors.check_resolves(chain, dt, fix="set simulation.dt to that or finer")
    return chains


def sensor_view(
    ds: xr.Dataset, sensor: str | sensors.Sensor, variable: str | None = None
) -> xr.DataArray:
    """A variable of a profile as a sensor chain reports it, on the profile's own ``time``.

    Parameters
    ----------
    ds
        A profile from :func:`simulate` or read back from a file powermodel wrote (it needs
        ``attrs["dt"]``, its step [s], and a uniform ``time`` of that step).
    sensor
        A key of :data:`SENSORS` (``"nvml"``, ``"revenue"``, ...) or a
        :class:`~powermodel.models.sensors.Sensor`.
    variable
        The variable read; by default the chain's own (``gpu_power`` for NVML, ``grid_power``
        for the meters).

    Returns
    -------
    xarray.DataArray
        ``<variable>_<sensor key>`` (``gpu_power_nvml``): at each interval, the reading a poll
        at the interval's end (its ``time`` + dt) gets, held between reports for chains that
        report less often than every step (:func:`powermodel.models.sensors.read`). Add it with
        ``ds[view.name] = view``.
    """
    chain = sensors.lookup(sensor)
    name = chain.variable if variable is None else variable
    if name not in ds.data_vars or ds[name].dims != ("time",) or ds[name].dtype.kind != "f":
        series = [v for v in ds.data_vars if ds[v].dims == ("time",) and ds[v].dtype.kind == "f"]
        raise PowerModelError(
            f"the profile has no time series {name!r} to read through the {chain.label} "
            f"sensor: choose one of {', '.join(map(str, series))}"
        )
    return _view_at_step(ds, chain, name, _profile_step(ds))


def _view_at_step(ds: xr.Dataset, chain: sensors.Sensor, name: str, dt: float) -> xr.DataArray:
    """:func:`sensor_view` of the variable ``name`` of a profile of step ``dt`` [s]."""
    view = xr.DataArray(sensor_reading(ds, chain, name, dt), coords={"time": ds["time"]})
    return view.rename(f"{name}_{chain.key}")


def sensor_reading(
    ds: xr.Dataset, chain: sensors.Sensor, name: str, dt: float, held: bool = False
) -> xr.Variable:
    """The readings of :func:`_view_at_step` on ``time``, with their attrs (no coordinate to build:
    ``simulate`` adds them to the profile it made, whose ``time`` they share). With ``held``,
    where the chain reports every other step or less often, held as its readings where they
    change and read when read (as the plant path's variables are): a revenue meter's 96 block
    demands a day, not one a step."""
    attrs = sensor_attrs(name, chain, ds[name].attrs.get("units"))
    values = np.asarray(ds[name].values, dtype=np.float64)
    if held and chain.period >= 2.0 * dt:
        readings, start = sensors.read_changes(values, dt, chain)
        return xr.Variable("time", lazy_data(PiecewiseSeries(readings, start, values.size)), attrs)
    return xr.Variable("time", sensors.read(values, dt, chain), attrs)


def _profile_step(ds: xr.Dataset) -> float:
    """The step [s] of a profile whose ``attrs["dt"]`` its ``time`` bears out: a uniform grid of
    that step (to a nanosecond a step, as times are stored), else a clear error. A step that
    disagrees with the times would read every window at the wrong length, silently."""
    if "dt" not in ds.attrs:
        raise PowerModelError(
            "the profile has no attrs['dt'] (its step): read it through the sensor from "
            "simulate() or a file powermodel wrote"
        )
    try:
        dt = float(ds.attrs["dt"])
    except (TypeError, ValueError):
        dt = float("nan")
    if not (np.isfinite(dt) and dt > 0.0):
        raise PowerModelError(
            f"the profile's attrs['dt'] must be a step > 0 s, got {ds.attrs['dt']!r}"
        )
    time = ds["time"].values
    if time.dtype.kind not in "mM":
        raise PowerModelError(
            f"the profile's time must be datetimes to check its step against attrs['dt'], got "
            f"{time.dtype}"
        )
    if time.size < 2:
        return dt
    steps = np.diff(time)
    low, high = (float(v / np.timedelta64(1, "s")) for v in (steps.min(), steps.max()))
    if not (abs(low - dt) <= 2e-9 + 1e-9 * dt and abs(high - dt) <= 2e-9 + 1e-9 * dt):
        seen = (
            f"its time steps by {format_duration(low)}"
            if high - low <= 2e-9 + 1e-9 * dt
            else f"its time is not a uniform grid (steps from {low:g} to {high:g} s)"
        )
        raise PowerModelError(
            f"the profile's attrs['dt'] is {format_duration(dt)} but {seen}: a sensor needs the "
            "step the samples are on; set attrs['dt'] to it, or resample to a uniform grid first"
        )
    return dt


def add_views(
    ds: xr.Dataset, chains: Sequence[sensors.Sensor], dt: float, held: bool = False
) -> None:
    """Each of the ``chains``' view of its own variable added to the profile ``ds`` of step
    ``dt`` [s], ``<variable>_<key>`` (``held``: as :func:`sensor_reading` holds it)."""
    for chain in chains:
        ds[f"{chain.variable}_{chain.key}"] = sensor_reading(ds, chain, chain.variable, dt, held)
