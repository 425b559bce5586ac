"""Metrics of a simulated (or measured) profile: Dataset in, numbers and tables out."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr
from scipy.ndimage import maximum_filter1d, minimum_filter1d

from powermodel.errors import PowerModelError

SWING_WINDOW = 5.0  # s: the rolling window of ERCOT's 5-s peak-to-peak proposal (REFERENCES §5)


def step_seconds(ds: xr.Dataset) -> float:
    """Time step of a Dataset. [s]"""
    if "dt" in ds.attrs:
        return float(ds.attrs["dt"])
    times = ds["time"].values
    if times.size < 2:
        raise PowerModelError("the profile needs at least two time samples")
    return float((times[1] - times[0]) / np.timedelta64(1, "s"))


def max_swing(power: np.ndarray, dt: float, window: float = SWING_WINDOW) -> float:
    """Largest max − min of ``power`` in any rolling ``window``; NaN if it spans under 2 steps.

    The window covers ``round(window / dt)`` interval means (5 s at 1 s: five samples).
    """
    size = round(window / dt)
    if size < 2:
        return float("nan")
    return float(np.max(maximum_filter1d(power, size) - minimum_filter1d(power, size)))


def metrics(ds: xr.Dataset) -> dict[str, Any]:
    """Headline numbers of a simulated run.

    Power figures are of ``it_power`` [MW]; ``energy_mwh`` integrates its interval means exactly.
    ``effective_training_time`` is a fraction; ``tokens`` counts tokens trained and kept.
    """
    power = ds["it_power"].values
    dt = step_seconds(ds)
    kinds = ds["event_kind"].values if "event_kind" in ds else np.array([])
    unexpected = kinds == "unexpected"
    categories, counts = np.unique(ds["event_category"].values[unexpected], return_counts=True)
    return {
        "energy_mwh": float(power.sum() * dt / 3600.0),
        "mean_mw": float(power.mean()),
        "peak_mw": float(power.max()),
        "min_mw": float(power.min()),
        "swing_5s_mw": max_swing(power, dt),
        "unexpected_interruptions": int(unexpected.sum()),
        "planned_interruptions": int((kinds == "planned").sum()),
        "interruptions_by_category": dict(zip(categories.tolist(), counts.tolist(), strict=True)),
        "effective_training_time": float(ds["effective_training_time"]),
        "tokens": float(ds["goodput"]),
    }


def resample_factor(n_steps: int, dt: float, interval: str | float) -> int:
    """Steps per resampled interval; an error unless ``interval`` is a whole multiple of ``dt``
    that divides the run."""
    from powermodel.scenario import format_duration, parse_duration

    try:
        seconds = parse_duration(interval)
    except ValueError as exc:
        raise PowerModelError(f"resample: {exc}") from None
    factor = round(seconds / dt)
    if factor < 1 or abs(factor * dt - seconds) > 1e-9 * seconds or n_steps % factor:
        raise PowerModelError(
            f"resample: {format_duration(seconds)} must be a whole multiple of the step "
            f"({format_duration(dt)}) that divides the run ({n_steps} steps)"
        )
    return factor


def resample(ds: xr.Dataset, interval: str | float) -> xr.Dataset:
    """Coarser profile: interval means (energy-exact) plus each interval's ``_min`` and ``_max``.

    Parameters
    ----------
    ds
        A simulated Dataset.
    interval
        New step, a duration (``"1min"``) or seconds; a whole multiple of the Dataset's step that
        divides the run.
    """
    factor = resample_factor(ds.sizes["time"], step_seconds(ds), interval)
    attrs = {**ds.attrs, "dt": factor * step_seconds(ds)}
    out = xr.Dataset(coords={"time": ds["time"].values[::factor]}, attrs=attrs)
    for name, var in ds.data_vars.items():
        if var.dims != ("time",) or name == "job_state":
            if "time" not in var.dims:
                out[name] = var
            continue
        blocks = var.values.reshape(-1, factor)
        out[name] = ("time", blocks.mean(axis=1), var.attrs)
        out[f"{name}_min"] = (
            "time",
            blocks.min(axis=1),
            {**var.attrs, "cell_methods": "time: minimum"},
        )
        out[f"{name}_max"] = (
            "time",
            blocks.max(axis=1),
            {**var.attrs, "cell_methods": "time: maximum"},
        )
    return out
