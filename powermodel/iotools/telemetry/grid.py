"""Telemetry on a uniform time grid: the tidy frame's power binned by channel and time, the
mean of each bin's samples, NaN where a channel has none (the grid the fit compares a run
with). Bounded by :data:`~powermodel.iotools.telemetry.limits.MAX_GRID` cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import limits


def to_grid(data: pd.DataFrame, step: float | None = None) -> xr.DataArray:
    """Telemetry on a uniform time grid: the mean of each channel's samples in each bin.

    Parameters
    ----------
    data
        The frame :func:`read_telemetry` returns.
    step
        Bin width; default ``data.attrs["step"]`` (the reader's ``meta["step"]``). [s]

    Returns
    -------
    xarray.DataArray
        ``power`` [W] on ``(channel, time)``; ``time`` is each bin's start, from the first
        sample's time; NaN where a channel has no sample in a bin (a GPU that dropped out
        shows as missing, not as zero). attrs ``units`` and ``step`` [s].
    """
    if step is None:
        step = data.attrs.get("step")
    if step is None or not (np.isfinite(step) and step >= 1e-9):
        raise DataFileError(
            f"to_grid: step {step!r} is not a number of seconds of at least 1 ns (the times' "
            "resolution); give a wider step"
        )
    if data.empty:
        raise DataFileError("to_grid: the frame has no samples; read a trace with samples")
    time = data["time"].to_numpy(dtype="datetime64[ns]")
    start = time.min()
    width = np.int64(round(step * 1e9))
    bins = ((time - start).astype(np.int64) // width).astype(np.int64)
    channels, code = np.unique(data["channel"].to_numpy(dtype=str), return_inverse=True)
    n = int(bins.max()) + 1
    if channels.size * n > limits.MAX_GRID:
        raise DataFileError(
            f"to_grid: {channels.size} channels x {n} bins of {step:g} s exceeds "
            f"{limits.MAX_GRID:,} cells; give a larger step or fewer channels"
        )
    cell = code * n + bins
    power = data["power"].to_numpy(dtype=float)
    total = np.bincount(cell, weights=power, minlength=channels.size * n)
    count = np.bincount(cell, minlength=channels.size * n)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(count > 0, total / count, np.nan).reshape(channels.size, n)
    grid = xr.DataArray(
        mean,
        dims=("channel", "time"),
        coords={"channel": channels, "time": start + np.arange(n) * width.astype("m8[ns]")},
        name="power",
    )
    grid.attrs.update(units="W", step=float(step), long_name="power, mean over each bin")
    return grid
