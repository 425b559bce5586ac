"""Times of samples as the files give them: Unix seconds or milliseconds, or, for a tool that
prints no times (``dcgmi dmon``, ``rocm-smi``, dcgm-exporter's scrapes without timestamps), the
poll's number times the ``period`` the user gives, from 1970-01-01T00:00 (``meta["timed"]`` is
then False). All timezone-naive UTC, datetime64[ns]."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import limits
from powermodel.iotools.trace import EPOCH


def seconds_times(seconds: np.ndarray) -> np.ndarray:
    """Times ``seconds`` [s] after 1970-01-01T00:00, to the nearest ns."""
    return EPOCH + np.round(seconds * 1e9).astype(np.int64).astype("m8[ns]")


def ms_times(ms: np.ndarray) -> np.ndarray:
    """Times ``ms`` (whole milliseconds, int64) after 1970-01-01T00:00."""
    return EPOCH + (ms * 1_000_000).astype("m8[ns]")


def untimed(period: float | None, path: Path, why: str, meta: dict, steps: str) -> float:
    """The ``period`` [s] a file without times is timed by, refused where none is given (``why``
    says why the file needs it); ``meta`` records that its ``steps`` (polls, scrapes) were timed
    so."""
    if period is None:
        raise DataFileError(f"{path}: {why}; give period= in seconds (the sampling period)")
    meta["timezone"] = f"none in the file: {period} s {steps} from 1970-01-01T00:00"
    meta["timed"] = False
    return period


def poll_numbers(gpu: np.ndarray) -> np.ndarray:
    """The poll of each row of a tool that prints each GPU once per poll, in a fixed order (by
    id in current dcgmi, rocm-smi and amd-smi): a row whose GPU comes no later in that order
    than the row before starts the next poll."""
    order = pd.Index(pd.unique(gpu[: _first_repeat(gpu)]))
    rank = order.get_indexer(gpu)
    rank = np.where(rank >= 0, rank, len(order) + gpu)  # GPUs first seen later: by id
    return np.cumsum(np.r_[True, np.diff(rank) <= 0]) - 1


def _first_repeat(values: np.ndarray) -> int:
    """Length of the leading run without a repeated value."""
    seen = pd.Series(values[: limits.MAX_NODE_GPUS * 64 + 1]).duplicated().to_numpy()
    return int(np.argmax(seen)) if seen.any() else len(seen)
