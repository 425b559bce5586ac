"""Crafted results files get a refusal in words or are read right, never an HTTP 500 nor a
mislabelled row (issue 26, item 7). On the landed code six files gave HTTP 500 (a numeric
``_Encoding``, a text ``add_offset``, masked integers, a swept dimension without a coordinate,
``seed`` not last) and where ``seed`` was not last the failed-runs table named the wrong points:
decoding happened after the checks, and the table read dimensions by position.

Each file is a sweep's results written by :func:`powermodel.sweep.write`, then changed as an
attacker would; each goes through :func:`powermodel.sweep.open_results` and through the
dashboard's upload and sweep chart over HTTP. The expected failed runs are read from the
Dataset the file was made from, by name."""

from __future__ import annotations

import base64
import json

import netCDF4
import numpy as np
import pytest
import xarray as xr
from test_dashboard_hostile import call

from powermodel import sweep as sweeping
from powermodel.errors import DataFileError
from powermodel.webapp import create_dashboard

DEPTH, INTERVAL = "workload.trough_depth", "checkpoint.interval"
METRIC = "grid_swing_5s_mw"
# two runs failed, at places no transposition maps onto each other
FAILED = {(0.5, "40min", 2): "boom: the second depth", (0.3, "1h", 0): "bad: the first depth"}


def _results(depths=(0.3, 0.5)) -> xr.Dataset:
    """A 2 x 3 grid at 3 seeds, as :func:`powermodel.sweep.sweep` lays it out."""
    coords = {DEPTH: list(depths), INTERVAL: ["20min", "40min", "1h"], "seed": [0, 1, 2]}
    dims = (DEPTH, INTERVAL, "seed")
    error = np.full((2, 3, 3), "", dtype=object)
    for (depth, interval, seed), text in FAILED.items():
        error[(0.3, 0.5).index(depth), coords[INTERVAL].index(interval), seed] = text
    return xr.Dataset(
        {
            METRIC: (dims, np.arange(18.0).reshape(2, 3, 3), {"units": "MW"}),
            "simulation_seed": (dims, np.arange(18).reshape(2, 3, 3), {"units": "1"}),
            "error": (dims, error.astype(str)),
        },
        coords=coords,
    )


def _written(tmp_path, ds: xr.Dataset | None = None, edit=None):
    path = sweeping.write(_results() if ds is None else ds, tmp_path / "results.nc")
    if edit is not None:
        with netCDF4.Dataset(path, "r+") as nc:
            edit(nc)
    return path


def _bytes(ds: xr.Dataset, name: str, text: list[bytes], char_dim: str | None = None):
    """``ds`` with variable ``name`` as bytes (a character array without ``_Encoding``)."""
    ds = ds.copy()
    ds[name] = ds[name].copy(data=np.array(text, dtype="S").reshape(ds[name].shape))
    if char_dim is not None:
        ds[name].encoding["char_dim_name"] = char_dim
    return ds


def _masked_seed(ds: xr.Dataset) -> xr.Dataset:
    ds["seed"].encoding["_FillValue"] = 1  # seed 1 reads back as missing
    return ds


def _errors_as_bytes(ds: xr.Dataset, first: bytes | None = None) -> xr.Dataset:
    """``ds`` with its errors as bytes, the first replaced by ``first`` if given, over a
    string dimension named like a scenario key."""
    text = [str(e).encode() for e in ds["error"].values.flat]
    text[0] = text[0] if first is None else first
    return _bytes(ds, "error", text, char_dim="cluster.name")


REFUSED = {
    "a numeric _Encoding": (
        {"edit": lambda nc: nc["error"].setncattr("_Encoding", 5)},
        "results.nc: variable 'error' cannot be decoded (its attributes do not fit its values)",
    ),
    "a text add_offset": (
        {"edit": lambda nc: nc[METRIC].setncattr("add_offset", "x")},
        f"results.nc: variable '{METRIC}' cannot be decoded (its _FillValue, add_offset do not "
        "fit its values)",
    ),
    "a text scale_factor": (
        {"edit": lambda nc: nc[METRIC].setncattr("scale_factor", "x")},
        "scale_factor do not fit its values",
    ),
    "a masked seed": (
        {"ds": _masked_seed(_results())},
        "results.nc is not a sweep's results (its seeds are not whole numbers)",
    ),
    "a swept dimension without a coordinate": (
        {"ds": _results().drop_vars(DEPTH)},
        f"(its dimension '{DEPTH}' has no values (no coordinate variable))",
    ),
    "a key's value twice": (
        {"ds": _results().assign_coords({INTERVAL: ["20min", "40min", "20min"]})},
        f"(its dimension '{INTERVAL}' lists a value twice)",
    ),
    "no seeds": (
        {"ds": _results().isel(seed=slice(0, 0))},
        "(its dimension 'seed' is empty: it holds no runs)",
    ),
    "a key's values not UTF-8": (
        {"ds": _bytes(_results(), INTERVAL, [b"20min", b"\xff\xfe", b"1h"])},
        f"results.nc: variable '{INTERVAL}' cannot be decoded (its text is not UTF-8)",
    ),
    "errors not UTF-8 over a dimension named like a key": (
        {"ds": _errors_as_bytes(_results(), b"\xff\xfe not UTF-8")},
        "results.nc: variable 'error' cannot be decoded (its text is not UTF-8)",
    ),
}


def _huge_unit(ds: xr.Dataset) -> xr.Dataset:
    ds[METRIC].attrs["units"] = "MW" * 500_000  # a megabyte of attribute
    return ds


def _masked_simulation_seed(ds: xr.Dataset) -> xr.Dataset:
    ds["simulation_seed"].encoding["_FillValue"] = 4  # an integer read back as NaN
    return ds


READ = {
    "as written": _results(),
    "seed first": _results().transpose("seed", INTERVAL, DEPTH),
    "seed between the keys": _results().transpose(INTERVAL, "seed", DEPTH),
    "errors as bytes": _errors_as_bytes(_results()),
    "a NaN and an infinite key value": _results(depths=(np.nan, np.inf)),
    "a masked integer metric": _masked_simulation_seed(_results()),
    "a megabyte unit": _huge_unit(_results()),
}  # fmt: skip


@pytest.fixture(scope="module")
def board():
    board = create_dashboard(overrides={"simulation.duration": "1h"})
    yield board
    board.workdir.cleanup()


def _upload(board, data: bytes) -> dict:
    output = next(k for k in board.app.callback_map if k.startswith("..sweep-results.data"))
    url = "data:application/x-netcdf;base64," + base64.b64encode(data).decode()
    status, body = call(
        board,
        output,
        [("upload-sweep", "contents", url)],
        [("upload-sweep", "filename", "results.nc")],
    )
    assert status == 200, status
    return body["response"]


def _chart(board, store: dict, metric: str, key: str) -> dict:
    status, body = call(
        board,
        "sweep-graph.figure",
        [("sweep-results", "data", store), ("sweep-metric", "value", metric),
         ("sweep-key", "value", key)],
    )  # fmt: skip
    assert status == 200, status
    return body["response"]["sweep-graph"]["figure"]


@pytest.mark.parametrize("crafted", REFUSED)
def test_a_crafted_results_file_is_refused_in_words(crafted, board, tmp_path):
    made, said = REFUSED[crafted]
    path = _written(tmp_path, **made)
    with pytest.raises(DataFileError) as refused:
        sweeping.open_results(path, "results.nc")
    assert said in str(refused.value)
    assert str(refused.value).endswith("give the results of `powermodel sweep -o results.nc`")
    message = _upload(board, path.read_bytes())["sweep-message"]["children"]
    assert said in message and message.endswith("— the sweep shown is unchanged")


def _expected_rows(ds: xr.Dataset) -> set:
    """The failed runs of the Dataset a file was made from, by name: each point's key values
    as the table prints them, its seed and error."""
    error = ds["error"].transpose(DEPTH, INTERVAL, "seed").astype(str).to_series()
    return {
        (frozenset({f"{DEPTH} = {depth}", f"{INTERVAL} = {interval}"}), str(seed), text)
        for (depth, interval, seed), text in error[error != ""].items()
    }


@pytest.mark.parametrize("crafted", READ)
def test_a_crafted_results_file_that_reads_is_labelled_by_name(crafted, board, tmp_path):
    ds = READ[crafted]
    path = _written(tmp_path, ds)
    opened = sweeping.open_results(path, "results.nc")
    assert opened["error"].dtype.kind in "OU"  # text, whatever the file stored it as
    answer = _upload(board, path.read_bytes())
    assert answer["sweep-message"]["children"].endswith(
        f"18 runs (3 seeds a point) over {', '.join(sweeping.swept_keys(opened))}; 2 failed"
    )
    rows = answer["sweep-failed"]["rowData"]
    shown = {(frozenset(r["point"].split(", ")), r["seed"], r["error"]) for r in rows}
    assert shown == _expected_rows(ds) and len(shown) == len(FAILED)
    store = answer["sweep-results"]["data"]
    for key in (DEPTH, INTERVAL):
        figure = _chart(board, store, METRIC, key)
        assert [t["name"] for t in figure["data"] if t["mode"] == "lines+markers"]
        # the file's own texts shown cut (a megabyte unit was the axis title whole)
        assert len(json.dumps(figure["layout"])) < 20_000


def test_one_long_error_among_many_runs_is_counted_as_read_and_refused_before(board, tmp_path):
    # review of issue 26: xarray reads a variable-length text as fixed-width, every value as
    # wide as the longest, and the count saw each value's own length: one error of 1,000,000
    # characters among 2,000 runs (a 1-MB file) read as 8 GB (measured: 7.6 GB to open, 15 GB
    # with the chart's bands). The count is now what reading makes, refused before it
    import tracemalloc

    runs, long = 2000, 1_000_000
    error = np.full((runs // 2, 2), "", dtype=object)
    error[0, 1] = "x" * long
    ds = xr.Dataset(
        {
            METRIC: ((DEPTH, "seed"), np.ones((runs // 2, 2)), {"units": "MW"}),
            "error": ((DEPTH, "seed"), error),  # object: written as variable-length text
        },
        coords={DEPTH: np.linspace(0.1, 0.9, runs // 2), "seed": [0, 1]},
    )
    path = tmp_path / "results.nc"
    ds.to_netcdf(path, engine="netcdf4")
    with pytest.raises(DataFileError, match=r"^results.nc holds 2,000,00\d,\d{3} values; at most"):
        sweeping.open_results(path, "results.nc")
    tracemalloc.start()
    try:
        message = _upload(board, path.read_bytes())["sweep-message"]["children"]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "values; at most 4,000,000 are read back" in message
    assert peak < 64 * 2**20, peak  # the upload's bytes and its copies: 8 GB before
