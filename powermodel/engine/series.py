"""The profile's time grid and its series (used by every later stage): the steps' times, the
clock hours, plant-step means and holds, and the piecewise-constant series the Dataset holds
lazily (:class:`PiecewiseSeries`: the plant path's state, hourly PUE, the misc load, a
sensor's reports)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import xarray as xr
from xarray.backends import BackendArray
from xarray.core import indexing

from powermodel.errors import PowerModelError
from powermodel.variables import attrs as variable_attrs

# The plant path's state in the Dataset, held over each plant step (float32: 7 digits suffice)
HELD = ("water_use", "temp_air", "temp_wetbulb", "supply_temp", "gpu_temp", "clock_factor")


# The profile's variables on time, in order (a CSV's columns)
ORDER = (
    "gpu_power",
    "it_power",
    "facility_loss",
    "cooling_power",
    "misc_power",
    "facility_power",
    "grid_power",
    "grid_reactive_power",
    "grid_voltage",
    "rack_storage_power",
    "bess_power",
    "bess_soc",
    "pue",
    "throughput",
    *HELD,
    "job_state",
    "generator_power",
    "ups_battery_power",
    "recharge_power",
    "ups_battery_deficit",
    "grid_share",
    "grid_event",
)


# What a grid disturbance adds: what the backup carries, the recharge, where it acts
DISTURBANCE_VARIABLES = ORDER[-6:]


BLOCK = 1 << 16  # steps of an element-wise pass: its temporaries stay in the CPU cache


def on_every_step(values: np.ndarray | PiecewiseSeries | float, n: int) -> np.ndarray:
    if isinstance(values, PiecewiseSeries):
        return values.dense(0, n)
    return np.broadcast_to(np.asarray(values, dtype=float), (n,))


class PiecewiseSeries(BackendArray):
    """A piecewise-constant series, read only when read: ``values[j]`` from step ``starts[j]``
    to the next start, ``size`` steps in all (the first start at or before step 0).

    The Dataset holds the plant path's variables (constant over each plant step), PUE (over
    each hour) and the misc load (over the run) so: reading one (``.values``) builds it, and
    nothing else keeps it. xarray's lazy indexing of file-backed variables serves it, with no
    dask scheduler to meet (a ``distributed.Client`` in the process would take dask's work).
    """

    def __init__(self, values: np.ndarray, starts: np.ndarray, size: int) -> None:
        self.values, self.starts = values, starts
        self.shape, self.dtype = (size,), values.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read
        )

    def _read(self, key: tuple) -> np.ndarray:
        (where,) = key
        if not isinstance(where, slice):  # one step
            return np.asarray(self.values[np.searchsorted(self.starts, where, side="right") - 1])
        start, stop, step = where.indices(self.shape[0])
        picked = range(start, stop, step)
        if not picked:
            return self.values[:0]
        lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1]) + 1
        return self.dense(lo, hi)[slice(start - lo, stop - lo if stop >= lo else None, step)]

    @staticmethod
    def joined(parts: list[tuple[int, PiecewiseSeries]], size: int) -> PiecewiseSeries:
        """One series of ``size`` steps from the ``parts`` of it that start at each step."""
        values = np.concatenate([p.values for _, p in parts])
        starts = np.concatenate([np.maximum(p.starts, 0) + lo for lo, p in parts])
        return PiecewiseSeries(values, starts, size)

    def dense(self, lo: int, hi: int) -> np.ndarray:
        """Steps ``lo`` to ``hi`` as an array."""
        first = np.searchsorted(self.starts, lo, side="right") - 1
        last = np.searchsorted(self.starts, hi, side="left")
        bounds = np.concatenate(([lo], self.starts[first + 1 : last], [hi]))
        return np.repeat(self.values[first:last], np.diff(bounds))


def held_series(
    values: np.ndarray, k: int, lo: int, n: int, dtype: type = np.float64
) -> PiecewiseSeries:
    """Plant-step ``values`` held over the ``k`` electrical steps of each plant step, over the
    ``n`` steps from ``lo``."""
    return PiecewiseSeries(values.astype(dtype), np.arange(values.size) * k - lo, n)


def checked_float32(name: str, values: np.ndarray) -> np.ndarray:
    """``values`` of a variable stored in float32 (:data:`HELD`), refused beyond its range
    (3.4e38), where it would be stored as infinite."""
    if np.any(np.abs(values) > np.finfo(np.float32).max):
        worst = float(np.nanmax(np.abs(values)))
        units = variable_attrs(name).get("units", "")
        raise PowerModelError(
            f"the plant's {name} reaches {worst:.3g} {units}, beyond any physical value: "
            "check the scenario's cooling and GPU inputs"
        )
    return values


def held_arrays(ds: xr.Dataset) -> list[np.ndarray]:
    """The arrays a run's Dataset holds in memory: each variable's own, and for a variable held
    lazily (constant over pieces: the plant path, PUE, a sensor's reports) its pieces' values
    and starts, not the series it expands to when read. What its memory is counted from."""
    out = []
    for variable in ds.variables.values():
        data = variable._data  # xarray's: a lazily held variable is read only through it
        pieces = getattr(data, "array", None)
        if isinstance(data, indexing.LazilyIndexedArray) and isinstance(pieces, PiecewiseSeries):
            out += [pieces.values, pieces.starts]
        else:
            out.append(variable.values)
    return out


def lazy_data(values: np.ndarray | PiecewiseSeries) -> np.ndarray | indexing.LazilyIndexedArray:
    """A variable's data: arrays as they are, pieces read lazily."""
    return indexing.LazilyIndexedArray(values) if isinstance(values, PiecewiseSeries) else values


def held_array(values: np.ndarray, k: int, lo: int, n: int) -> np.ndarray:
    """Plant-step ``values`` held over the ``k`` electrical steps of each plant step, over the
    ``n`` steps from ``lo``, as an array."""
    return PiecewiseSeries(values, np.arange(values.size) * k - lo, n).dense(0, n)


def hourly_ratio(
    numerator: np.ndarray, denominator: np.ndarray, dt: float, lo: int = 0
) -> PiecewiseSeries:
    """Ratio of the two signals' energies over each clock hour of the run (the signals on steps
    of ``dt`` [s] from step ``lo``), on every sample; NaN for an hour whose denominator drew
    nothing (the servers without power through a grid disturbance)."""
    n = numerator.size
    starts = np.concatenate(([0], hour_starts(lo, lo + n, dt) - lo))
    label = _hour_of(lo + starts, dt)
    label -= label[0]
    hour = np.repeat(label, np.diff(starts, append=n))
    below = np.bincount(hour, denominator)
    ratio = np.bincount(hour, numerator) / np.where(below > 0, below, np.nan)
    return PiecewiseSeries(ratio[label], starts, n)


def _hour_of(steps: np.ndarray, dt: float) -> np.ndarray:
    """The clock hour of the run (0 the first) in which each step (of ``dt`` [s]) starts."""
    return (steps * dt // 3600).astype(np.int64)


def hour_starts(lo: int, hi: int, dt: float) -> np.ndarray:
    """The steps after ``lo`` and before ``hi`` that start a clock hour (:func:`_hour_of` rises
    there), found near where each hour is due rather than by the hour of every step."""
    if hi - lo < 2:
        return np.empty(0, np.int64)
    first, last = _hour_of(np.array([lo, hi - 1]), dt)
    hours = np.arange(first + 1, last + 1)
    near = np.ceil(hours * (3600 / dt)).astype(np.int64)[:, None] + np.arange(-2, 3)
    np.clip(near, lo, hi - 1, out=near)
    reached = _hour_of(near, dt) >= hours[:, None]
    if reached[:, 0].any() or not reached[:, -1].all():  # far from due: every step's hour
        return lo + 1 + np.flatnonzero(np.diff(_hour_of(np.arange(lo, hi), dt)))
    return np.unique(near[np.arange(hours.size), np.argmax(reached, axis=1)])


def datetimes(start: object, seconds: np.ndarray) -> np.ndarray:
    """``datetime64[ns]`` at ``seconds`` after ``start`` (pandas' to_timedelta is 10× slower)."""
    return np.datetime64(pd.Timestamp(start).to_datetime64(), "ns") + timedelta_ns(seconds)


def step_datetimes(start: object, lo: int, n: int, dt: float) -> np.ndarray:
    """:func:`datetimes` of the ``n`` steps of ``dt`` [s] from step ``lo``, in blocks (no
    temporary of the run's size)."""
    out = np.empty(n, "datetime64[ns]")
    for a in range(0, n, BLOCK):
        out[a : a + BLOCK] = datetimes(start, np.arange(lo + a, lo + min(a + BLOCK, n)) * dt)
    return out


def timedelta_ns(seconds: np.ndarray | float) -> np.ndarray:
    """``seconds`` as ``timedelta64[ns]``, to the nearest nanosecond."""
    return np.round(np.asarray(seconds) * 1e9).astype(np.int64).astype("timedelta64[ns]")


def block_mean(
    values: np.ndarray, k: int, of: Callable[[np.ndarray], np.ndarray] | None = None
) -> np.ndarray:
    """The mean of each ``k`` values (of ``of(values)``, an element-wise function), in passes
    of whole blocks: each block's mean as the whole array's reshaped gives it."""
    blocks = values.reshape(-1, k)
    out = np.empty(blocks.shape[0])
    rows = max(1, BLOCK // k)
    for a in range(0, blocks.shape[0], rows):
        part = blocks[a : a + rows]
        out[a : a + part.shape[0]] = (part if of is None else of(part)).mean(axis=1)
    return out
