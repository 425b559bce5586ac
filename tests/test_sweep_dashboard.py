"""The sweep view (issue 13): a sweep's results file, uploaded, is read on the server and drawn as
one metric against one swept key, its P50 over the seeds over the P5-P95 band, with the runs
that failed listed. Expected values are the results' own numbers, taken by numpy from the file
the view was given (``numpy.percentile``'s linear rule, which pandas uses too)."""

from __future__ import annotations

import base64

import numpy as np
import pytest
import xarray as xr
from dash import no_update
from dash.exceptions import PreventUpdate
from numpy.testing import assert_allclose

from powermodel import sweep as sweeping
from powermodel.scenario import load_scenario
from powermodel.simulate import simulate
from powermodel.webapp import create_dashboard

BASE = "llama3-405b-16k-h100"
FIXED = {"simulation.duration": "2h", "simulation.dt": "1s", "reliability.rate_scale": 50.0}
GRID = {"workload.trough_depth": [0.3, 0.5, 1.5], "checkpoint.interval": ["20min", "40min"]}
SEEDS = 3


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A 3 x 2 grid at 3 seeds, run in turn: trough depth 1.5 is out of its range, so those six
    runs fail and are recorded; failures at 50 times the rate make the seeds differ."""
    ds = sweeping.sweep(BASE, GRID, SEEDS, overrides=FIXED, workers=0, progress=False)
    path = sweeping.write(ds, tmp_path_factory.mktemp("sweep") / "results.nc")
    return path, xr.load_dataset(path)


@pytest.fixture
def board():
    board = create_dashboard(overrides={"simulation.duration": "1h"})
    yield board
    board.workdir.cleanup()


def _url(data: bytes) -> str:
    return "data:application/x-netcdf;base64," + base64.b64encode(data).decode()


def _refused(answer: tuple) -> str:
    store, *shown, message, failed = answer
    assert store is no_update and failed is no_update and all(s is no_update for s in shown)
    assert message.endswith("— the sweep shown is unchanged")
    return message


def test_an_uploaded_sweep_is_drawn_against_a_key(board, results):
    path, ds = results
    store, metrics, metric, keys, key, message, failed = board.open_sweep(
        _url(path.read_bytes()), "results.nc"
    )
    assert store["name"] == "results.nc"
    assert metric == "grid_swing_5s_mw" and {"label": metric, "value": metric} in metrics
    assert [k["value"] for k in keys] == list(GRID) and key == "workload.trough_depth"
    assert message == (
        "results.nc: 18 runs (3 seeds a point) over workload.trough_depth, checkpoint.interval; "
        "6 failed"
    )
    # the six runs at depth 1.5, each with the scenario's refusal
    assert len(failed) == 6
    assert all(row["point"].startswith("workload.trough_depth = 1.5, ") for row in failed)
    assert {row["seed"] for row in failed} == {"0", "1", "2"}
    assert all("trough_depth" in row["error"] for row in failed)

    figure = board.sweep_view(store, metric, key)
    lines = [t for t in figure.data if t.mode == "lines+markers"]
    assert [t.name for t in lines] == [
        "checkpoint.interval = 20min",
        "checkpoint.interval = 40min",
    ]
    values = ds[metric].values  # depth x interval x seed
    for j, line in enumerate(lines):
        assert_allclose(line.x, [0.3, 0.5, 1.5])
        expected = np.percentile(values[:2, j, :], 50, axis=-1)
        assert_allclose(line.y[:2], expected, rtol=1e-12)
        assert np.isnan(line.y[2])  # every run failed there: no P50
        band = figure.data[figure.data.index(line) - 1]
        low, high = (np.percentile(values[:2, j, :], q, axis=-1) for q in (5, 95))
        assert_allclose(band.y[:2], high, rtol=1e-12)  # the band's top, then back along P5
        assert_allclose(band.y[-2:][::-1], low, rtol=1e-12)
    # the seeds drew different failures: the band has a width somewhere
    assert np.nanmax(values[:2].max(axis=-1) - values[:2].min(axis=-1)) > 0

    # the other key on the x axis: the interval's two values, a line per depth that ran
    figure = board.sweep_view(store, "effective_training_time", "checkpoint.interval")
    lines = [t for t in figure.data if t.mode == "lines+markers"]
    assert [t.name for t in lines][:2] == [
        "workload.trough_depth = 0.3",
        "workload.trough_depth = 0.5",
    ]
    assert list(lines[0].x) == ["20min", "40min"]


def test_the_view_draws_only_what_the_results_hold(board, results):
    path, _ = results
    store, *_ = board.open_sweep(_url(path.read_bytes()), "results.nc")
    for metric, key in (
        ("no_such_metric", "workload.trough_depth"),
        ("grid_swing_5s_mw", "cluster.n_gpus"),
        (None, "workload.trough_depth"),
    ):
        with pytest.raises(PreventUpdate):
            board.sweep_view(store, metric, key)
    with pytest.raises(PreventUpdate):  # results never uploaded here, or evicted
        board.sweep_view({"key": "0" * 32}, "grid_swing_5s_mw", "workload.trough_depth")


def test_uploads_that_are_not_a_sweep_are_refused(board, results, tmp_path, monkeypatch):
    path, _ = results
    data = path.read_bytes()
    assert "is not a NetCDF file (.nc)" in _refused(board.open_sweep(_url(data), "results.csv"))
    assert "results.nc is not a NetCDF file" in _refused(
        board.open_sweep(_url(b"\x89HDF\r\n garbage" * 50), "results.nc")
    )
    # a run's profile is NetCDF too, but no sweep's results
    profile = tmp_path / "profile.nc"
    simulate(load_scenario(BASE, FIXED)).to_netcdf(profile)
    message = _refused(board.open_sweep(_url(profile.read_bytes()), "profile.nc"))
    assert "profile.nc is not a sweep's results" in message
    # counted from the header, before anything is read
    monkeypatch.setattr(sweeping, "MAX_RESULT_CELLS", 100)
    message = _refused(board.open_sweep(_url(data), "results.nc"))
    assert "at most 100 are read back" in message
    monkeypatch.undo()
    board.upload_limit = 1000
    assert "the dashboard takes files up to" in _refused(board.open_sweep(_url(data), "results.nc"))
    # nothing the server named is left behind
    assert not list(board.traces.glob("*.nc"))


def _netcdf(path, ds: xr.Dataset) -> bytes:
    ds.to_netcdf(path)
    return path.read_bytes()


def test_hostile_results_files_are_refused_before_they_are_read(board, tmp_path):
    # a few-kB file whose header declares 60 million seeds (a coordinate never written,
    # compressed): xarray would read it to index it; the header's count refuses it first
    import netCDF4

    path = tmp_path / "huge.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("seed", 60_000_000)
        nc.createVariable("seed", "i8", ("seed",), zlib=True)
    assert path.stat().st_size < 20_000
    message = _refused(board.open_sweep(_url(path.read_bytes()), "huge.nc"))
    assert "holds 60,000,000 values; at most 4,000,000 are read back" in message
    # text stored as characters counts every character
    path = tmp_path / "chars.nc"
    with netCDF4.Dataset(path, "w") as nc:
        nc.createDimension("seed", 4)
        nc.createDimension("strlen", 10_000_000)
        nc.createVariable("error", "S1", ("seed", "strlen"), zlib=True)
    message = _refused(board.open_sweep(_url(path.read_bytes()), "chars.nc"))
    assert "holds 40,000,000 values" in message
    # an error variable that is not text, a dimension that is no scenario key
    seeds = {"seed": [0, 1]}
    odd = xr.Dataset({"error": ("seed", [0.0, 1.0]), "m": ("seed", [1.0, 2.0])}, seeds)
    message = _refused(board.open_sweep(_url(_netcdf(tmp_path / "odd.nc", odd)), "odd.nc"))
    assert "its error variable is not text over a seed dimension" in message
    line = xr.Dataset(
        {"error": (("line", "seed"), [["", ""]]), "m": (("line", "seed"), [[1.0, 2.0]])},
        {"line": [1], "seed": [0, 1]},
    )
    message = _refused(board.open_sweep(_url(_netcdf(tmp_path / "line.nc", line)), "line.nc"))
    assert "its dimension 'line' is no scenario key" in message


def test_runs_without_a_value_are_not_counted_as_failed(results):
    # a 5-s swing has no value at a 10-s step: those runs ran, they did not fail
    _, ds = results
    blank = ds.copy(deep=True)
    blank["grid_swing_5s_mw"][0, 0, :2] = np.nan
    table = sweeping.bands(blank, "grid_swing_5s_mw", "workload.trough_depth")
    first = table.iloc[0]
    assert (first["runs"], first["undefined"], first["failed"]) == (1, 2, 0)
    assert first["p50"] == ds["grid_swing_5s_mw"].values[0, 0, 2]  # the one value there
    failed = table[table["x"] == 1.5].iloc[0]
    assert (failed["runs"], failed["undefined"], failed["failed"]) == (0, 0, 3)
