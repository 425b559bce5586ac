"""The sweep view (issue 13): a sweep's results file, uploaded, is read on the server and drawn as
one metric against one swept key, its P50 over the seeds over the P5-P95 band, with the runs
that failed listed. Expected values are the results' own numbers, taken by numpy from the file
the view was given (``numpy.percentile``'s linear rule, which pandas uses too)."""

from __future__ import annotations

import base64
import sys
import tracemalloc

import numpy as np
import pytest
import xarray as xr
from dash import no_update
from dash.exceptions import PreventUpdate
from numpy.testing import assert_allclose

from powermodel import sweep as sweeping
from powermodel.scenario import load_scenario
from powermodel.simulate import simulate
from powermodel.sweep.saved import MAX_LINES
from powermodel.webapp import cache as cache_module
from powermodel.webapp import create_dashboard, plumbing, sweep_upload

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
    monkeypatch.setattr("powermodel.sweep.saved.MAX_RESULT_CELLS", 100)
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


# --- bounded work (issue 26): a 62-kB upload of 4 M values made each chart take 93 s and 2.5 GB


def _largest(places: tuple[int, int], seeds: int) -> xr.Dataset:
    """Results of a grid as large as a file may be read back (:data:`MAX_RESULT_CELLS`, the
    error and one metric), each point's seed 0 failed, the metric seed * 0.5 + 1 elsewhere."""
    shape = (*places, seeds)
    error = np.full(shape, "", dtype=object)
    error[..., 0] = "boom"
    value = np.broadcast_to(np.arange(seeds) * 0.5 + 1.0, shape).copy()
    value[..., 0] = np.nan
    dims = ("workload.trough_depth", "checkpoint.interval", "seed")
    coords = {
        dims[0]: np.linspace(0.0, 1.0, places[0]),
        dims[1]: np.array([f"{i}min" for i in range(places[1])], dtype=object),
        "seed": np.arange(seeds),
    }
    return xr.Dataset({"error": (dims, error), "m": (dims, value)}, coords)


@pytest.mark.parametrize(
    "places, seeds",
    [((1000, 999), 2), ((10, 10), 19_900), ((200, 50), 199)],  # many lines, many seeds, between
)
def test_bands_of_the_largest_results_take_little_memory(places, seeds):
    results = _largest(places, seeds)
    runs = results["error"].size
    assert 2 * runs + sum(places) + seeds <= sweeping.MAX_RESULT_CELLS
    for key, other in (("workload.trough_depth", 1), ("checkpoint.interval", 0)):
        tracemalloc.start()
        table = sweeping.bands(results, "m", key)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        # through a table of every run: 180-290 B a run (tracemalloc, these shapes; and 2-50 s,
        # where bench/load_dashboard.py's charts of 4 M-value files now take 0.04-0.27 s)
        assert peak <= cache_module.BANDS_BYTES_PER_RUN * runs, peak / runs
        lines = min(places[other], MAX_LINES)
        assert len(table) == lines * places[1 - other]
        # every point: seed 0 failed, the others 1.5, 2.0, ...: P50 of those by numpy
        assert_allclose(table["p50"], np.percentile(np.arange(1, seeds) * 0.5 + 1.0, 50))
        assert (table["failed"] == 1).all() and (table["runs"] == seeds - 1).all()


def _expected_bands(results: xr.Dataset, metric: str, key: str) -> list[tuple]:
    """(line, x, P5, P50, P95, runs, failed, undefined) by numpy over each line and x, in the
    order the places come (a loop over places: small results only)."""
    keys = sweeping.swept_keys(results)
    dims = sweeping.swept_dims(results)
    error = results["error"].transpose(*dims, "seed").values
    value = results[metric].transpose(*dims, "seed").values.astype(float)
    groups: dict[tuple, list] = {}
    for place in np.ndindex(*(results.sizes[d] for d in dims)):
        at = results.isel(dict(zip(dims, place, strict=True)))
        line = ", ".join(f"{k} = {at[k].item()}" for k in keys if k != key) or "all points"
        groups.setdefault((line, at[key].item()), []).append(place)
    lines = list(dict.fromkeys(line for line, _ in groups))[:MAX_LINES]
    out = []
    for (line, x), places in groups.items():
        if line not in lines:
            continue
        failed = np.concatenate([error[p] != "" for p in places])
        values = np.concatenate([value[p] for p in places])[~failed]
        ran = values[~np.isnan(values)]
        q = np.percentile(ran, [5, 50, 95]) if ran.size else [np.nan] * 3
        out.append((line, x, *q, ran.size, int(failed.sum()), int(values.size - ran.size)))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_bands_are_numpys_percentiles_over_every_layout(seed):
    # grids (the seed first or last, keys of numbers and of text, more lines than are drawn),
    # and lists of points whose keys repeat values (several points on one line and x)
    rng = np.random.default_rng(seed)
    seeds = int(rng.integers(1, 6))
    if seed % 2:
        sizes = {"a.x": 3, "b.y": 14, "c.z": 2}
        coords = {
            "a.x": [0.1, 0.2, 0.3],
            "b.y": [f"{i}min" for i in range(14)],
            "c.z": [2, 4],
            "seed": np.arange(seeds),
        }
        dims = ("seed", *sizes) if seed % 3 else (*sizes, "seed")
        shape = tuple(sizes.get(d, seeds) for d in dims)
    else:
        points = 9
        coords = {
            "a.x": ("point", rng.integers(0, 3, points).astype(float)),
            "b.y": ("point", [f"v{i}" for i in rng.integers(0, 3, points)]),
            "point": np.arange(points),
            "seed": np.arange(seeds),
        }
        dims, shape = ("point", "seed"), (points, seeds)
    error = np.where(rng.random(shape) < 0.2, "boom", "").astype(object)
    value = np.round(rng.random(shape) * 10, 2)
    value[rng.random(shape) < 0.2] = np.nan  # runs without the value: undefined
    results = xr.Dataset({"error": (dims, error), "m": (dims, value)}, coords)
    for key in sweeping.swept_keys(results):
        table = sweeping.bands(results, "m", key)
        want = _expected_bands(results, "m", key)
        assert [(r.line, r.x) for r in table.itertuples()] == [w[:2] for w in want]
        got = table[["p5", "p50", "p95", "runs", "failed", "undefined"]].to_numpy(float)
        assert_allclose(got, np.array([w[2:] for w in want], float), rtol=1e-12)


def test_uploaded_results_are_an_entry_under_the_bound_and_each_chart_is_drawn_once(
    board, results, monkeypatch
):
    path, ds = results
    calls = []
    monkeypatch.setattr(sweep_upload, "bands", lambda *a: calls.append(a) or sweeping.bands(*a))
    store, *_ = board.open_sweep(_url(path.read_bytes()), "results.nc")
    entry = board.cache.find(store["key"])
    # counted with the runs: its arrays, and each error string where they are str objects
    # (a text array of fixed width holds its characters: they are its bytes)
    error = entry.ds["error"].values
    objects = {id(e): e for e in error.ravel()} if error.dtype.kind == "O" else {}
    text = sum(sys.getsizeof(e) for e in objects.values())
    assert entry.nbytes >= sum(v.values.nbytes for v in ds.variables.values()) + text
    before = entry.nbytes
    for _ in range(3):
        board.sweep_view(store, "grid_swing_5s_mw", "workload.trough_depth")
    assert len(calls) == 1 and entry.nbytes > before  # the figure's arrays counted beside
    assert board.cache.nbytes <= board.cache.max_bytes
    # the same bytes uploaded under another name are their own entry: the name is shown
    other, *_, message, _ = board.open_sweep(_url(path.read_bytes()), "other.nc")
    assert other["key"] != store["key"] and message.startswith("other.nc: 18 runs")


def test_results_and_charts_beyond_the_bound_are_refused_with_what_they_need(results, monkeypatch):
    path, _ = results
    small = create_dashboard(overrides={"simulation.duration": "1h"}, cache_bytes=32 * 2**20)
    try:
        message = _refused(small.open_sweep(_url(path.read_bytes()), "results.nc"))
        # 4 M values at 16 B, and one variable-length attribute's 16 items of the upload's 5 MB
        assert message.startswith(
            "Reading the results needs about 137 MiB, more than the dashboard keeps (32 MiB): "
            "upload the results of a smaller sweep"
        )
    finally:
        small.workdir.cleanup()
    board = create_dashboard(overrides={"simulation.duration": "1h"})
    try:
        # what a chart takes is set as the results are read: a new upload, under a new name
        monkeypatch.setattr(sweep_upload, "BANDS_BYTES_PER_RUN", 2**30)  # 18 runs: 18 GiB
        store, *_ = board.open_sweep(_url(path.read_bytes()), "again.nc")
        with pytest.raises(plumbing.Refused) as refused:
            board.sweep_view(store, "grid_swing_5s_mw", "workload.trough_depth")
        assert str(refused.value).startswith(
            "The sweep chart needs about 18.0 GiB beside its input's "
        )
        assert str(refused.value).endswith(
            "more than the dashboard keeps (3.0 GiB): upload the results of a sweep of fewer "
            "points or seeds"
        )
    finally:
        board.workdir.cleanup()


def test_a_store_naming_another_input_shows_nothing(board, results):
    # the cache keeps runs and uploads together: a sweep store forged with a run's key (the
    # page's scenario state carries it) or a fit's names no results
    path, _ = results
    run = board.cache.get(board.base({"preset": BASE}))
    run_key = next(k for k, e in board.cache._entries.items() if e is run)
    store, *_ = board.open_sweep(_url(path.read_bytes()), "results.nc")
    for key in (run_key, "fit:" + store["key"].split(":")[1], store["key"] + "x"):
        with pytest.raises(PreventUpdate):
            board.sweep_view({"key": key}, "grid_swing_5s_mw", "workload.trough_depth")
        with pytest.raises(PreventUpdate):
            board.fit_zoom({"xaxis.range[0]": "2026-03-01"}, {"key": key})
