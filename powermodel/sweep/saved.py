"""A sweep's results file read back and checked (a file from anyone), and its bands over the seeds.

After the sweep: the dashboard's sweep view opens a ``.nc`` that :func:`powermodel.sweep.write`
saved (:func:`open_results`), names its swept keys and metrics and draws each metric's P5-P95
band against a key (:func:`bands`).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr

from powermodel.errors import DataFileError, PowerModelError
from powermodel.sweep.points import EXTENDS
from powermodel.sweep.results import _key_columns

MAX_RESULT_CELLS = 4_000_000  # values of one results file read back (32 MB as float64)
MAX_LINES = 12  # lines of one band figure: the other keys' combinations
QUANTILES = {"p5": 0.05, "p50": 0.5, "p95": 0.95}  # over the seeds whose run gave a value
# dimensions a sweep's results may have besides the swept keys (dotted scenario keys, extends)
RESULT_DIMS = {"seed", "point", "rule", "elapsed", EXTENDS}
NOT_RESULTS = "give the results of `powermodel sweep -o results.nc`"


def open_results(path: str | Path, label: str | None = None) -> xr.Dataset:
    """A sweep's results, as :func:`write` saved them to NetCDF, checked and read whole
    (:func:`powermodel.iotools.netcdf.open_netcdf`: a file from anyone).

    Parameters
    ----------
    path
        The NetCDF file.
    label
        The name to give the file in messages (an upload's own name); its path by default.

    Raises
    ------
    DataFileError
        Not a NetCDF file; one that would have HDF5 read another file (external storage, an
        external or soft link, a virtual dataset) or a filter's plugin; more than
        :data:`MAX_RESULT_CELLS` values, counted from the metadata (every variable's shape, a
        text array's characters included) before anything is read; a variable that cannot be
        decoded; or not a sweep's results: ``error`` is text over ``seed`` (whole numbers) and
        the swept keys (dotted scenario keys, ``extends`` or ``point``), none empty, each key
        with its values once each, each metric a number over the same.
    """
    # imported here: h5py costs every other command 0.1-0.2 s (python -X importtime)
    from powermodel.iotools.netcdf import open_netcdf

    name = label or str(path)
    ds = open_netcdf(
        path,
        name,
        max_values=MAX_RESULT_CELLS,
        fix=NOT_RESULTS,
        smaller="sweep fewer points or seeds, or without --series",
    )
    _check_results(ds, name)
    return ds


def _check_results(ds: xr.Dataset, name: str) -> None:
    """Refuse a Dataset that is not a sweep's results, as :func:`open_results` says."""
    error = ds.variables.get("error")
    runs = error.dims if error is not None else ()
    odd = [d for d in ds.dims if d not in RESULT_DIMS and "." not in str(d)]
    if error is None or "seed" not in runs or error.dtype.kind not in "OU":
        _not_results(name, "its error variable is not text over a seed dimension")
    if odd:
        _not_results(name, f"its dimension {odd[0]!r} is no scenario key")
    for dim in runs:
        if ds.sizes[dim] == 0:
            _not_results(name, f"its dimension {dim!r} is empty: it holds no runs")
        if dim == "point":
            continue  # the points' keys are coordinates on it; a point may repeat a value
        if dim not in ds.indexes:
            _not_results(name, f"its dimension {dim!r} has no values (no coordinate variable)")
        if ds.indexes[dim].has_duplicates:
            _not_results(name, f"its dimension {dim!r} lists a value twice")
    if ds["seed"].dtype.kind not in "iu":
        _not_results(name, "its seeds are not whole numbers")


def _not_results(name: str, why: str) -> None:
    raise DataFileError(f"{name} is not a sweep's results ({why}): {NOT_RESULTS}")


def swept_keys(results: xr.Dataset) -> list[str]:
    """The keys a sweep's results vary: its grid's dimensions, or a list of points' keys."""
    return [k for k in _key_columns(results) if k != "point" or "point" not in results.dims]


def swept_dims(results: xr.Dataset) -> list[str]:
    """The dimensions of one run's place in the sweep, ``seed`` aside."""
    return [d for d in results["error"].dims if d != "seed"]


def measured(results: xr.Dataset) -> list[str]:
    """The numeric results measured once a run (the metrics), which :func:`bands` draws."""
    runs = set(results["error"].dims)
    return [
        str(name)
        for name, v in results.data_vars.items()
        if set(v.dims) == runs and v.dtype.kind in "fiu" and name != "simulation_seed"
    ]


def bands(results: xr.Dataset, metric: str, key: str) -> pd.DataFrame:
    """``metric`` against the swept ``key``: its P5, P50 and P95 over the seeds whose run gave
    it a value, per value of ``key`` and combination of the other swept keys (``line``, their
    values; at most :data:`MAX_LINES`, the rest left out).

    Returns
    -------
    pandas.DataFrame
        ``line``, ``key``'s value (as ``x``), ``p5``, ``p50``, ``p95``, ``runs`` (seeds whose
        run gave a value), ``undefined`` (seeds that ran but whose run has no such value: a
        1-min ramp of a shorter run, a 5-s swing at a 10-s step) and ``failed`` (seeds whose
        run failed, with its ``error``), in the order the sweep lists them.

    Notes
    -----
    Worked on the sweep's places (a run's values of the swept keys, its seed aside), never on
    a table of its runs: each place's line and ``x`` are codes of the keys' values, only the
    runs of the lines drawn are read, and every group's quantiles come from one sort, by the
    linear rule (``numpy.percentile``'s and pandas'). Through ``to_dataframe`` and
    ``groupby().quantile`` a file of 4 M values took 2-50 s and 0.4-0.6 GB (``bench/``).
    """
    if metric not in measured(results):
        raise PowerModelError(f"{metric!r} is not a metric of these results")
    keys = swept_keys(results)
    if key not in keys:
        raise PowerModelError(f"{key!r} is not a key of this sweep; it sweeps {', '.join(keys)}")
    places = {d: results.sizes[d] for d in swept_dims(results)}
    line = np.zeros(math.prod(places.values()), dtype=np.int64)  # every place on one line
    steps = []  # per other key: each line's line before it, and its value's label
    for other in (k for k in keys if k != key):
        codes, labels = _place_codes(results, other, places, text=True)
        line, first = pd.factorize(line * len(labels) + codes)  # numbered as first seen
        steps.append((other, first // len(labels), labels[first % len(labels)]))
    x, values = _place_codes(results, key, places, text=False)
    drawn = line < MAX_LINES
    group, first = pd.factorize(line[drawn] * len(values) + x[drawn])
    runs, shape = [*places, "seed"], (drawn.size, results.sizes["seed"])
    metric_values = results[metric].transpose(*runs).values.reshape(shape)[drawn]
    failed = _failed(results["error"].transpose(*runs).values.reshape(shape)[drawn])
    out = _quantiles(np.where(failed, np.nan, metric_values.astype(float)), failed, group)
    out.insert(0, "x", values[first % len(values)])
    out.insert(0, "line", [_line_name(steps, int(n)) for n in first // len(values)])
    return out


def _place_codes(
    results: xr.Dataset, key: str, places: dict[str, int], text: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Each place's value of a swept key as a code into the values returned (equal values one
    code, NaN one of its own); ``text``: the values as text, equal texts one code."""
    coordinate = results[key].variable  # a grid's dimension, or a coordinate on ``point``
    codes, values = pd.factorize(coordinate.values.ravel(), use_na_sentinel=False)
    if text:
        merged, labels = pd.factorize(pd.Series(values, dtype=object).astype(str))
        codes, values = merged[codes], np.asarray(labels, dtype=object)
    coded = xr.Variable(coordinate.dims, codes.reshape(coordinate.shape))
    return coded.set_dims(places).transpose(*places).values.ravel(), np.asarray(values)


def _line_name(steps: list[tuple[str, np.ndarray, np.ndarray]], line: int) -> str:
    """A line's label, ``key = value`` of each other key, from the codes :func:`bands` made."""
    parts = []
    for other, before, label in reversed(steps):
        parts.append(f"{other} = {label[line]}")
        line = int(before[line])
    return ", ".join(reversed(parts)) or "all points"


def _failed(error: np.ndarray) -> np.ndarray:
    """Which runs failed: those whose error (text) is not empty."""
    return error != ""


def _quantiles(value: np.ndarray, failed: np.ndarray, group: np.ndarray) -> pd.DataFrame:
    """The :data:`QUANTILES` of each group's values (NaN left out; NaN where it has none), its
    ``runs`` (values), ``failed`` and ``undefined`` (neither); ``value`` and ``failed`` hold a
    row of seeds for each place, ``group`` each place's group."""
    count = int(group.max(initial=-1)) + 1
    seeds = value.shape[1]
    of = np.repeat(group, seeds)
    flat = value.ravel()
    order = np.lexsort((flat, of))  # by group, then by value, NaN last
    ranked = np.append(flat[order], np.nan)  # a group without values reads the NaN past the end
    size = np.bincount(of, minlength=count)
    start = np.cumsum(size) - size
    runs = np.bincount(of, weights=~np.isnan(flat), minlength=count).astype(np.int64)
    out = {}
    top = np.maximum(runs - 1, 0)  # the rank of each group's largest value
    for name, q in QUANTILES.items():
        at = q * top
        low = np.floor(at).astype(np.int64)
        below, above = ranked[start + low], ranked[start + np.minimum(low + 1, top)]
        out[name] = np.where(runs > 0, below + (above - below) * (at - low), np.nan)
    out["runs"] = runs
    out["failed"] = np.bincount(of, weights=failed.ravel(), minlength=count).astype(np.int64)
    out["undefined"] = size - runs - out["failed"]
    return pd.DataFrame(out)
