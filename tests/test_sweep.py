"""Sweeps and Monte Carlo (powermodel.sweep, ``powermodel sweep``): the same Dataset serially,
on a LocalCluster and on a real scheduler process; failing points recorded; bad input refused
before any run."""

from __future__ import annotations

import gc
import math
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from numpy.testing import assert_allclose

import powermodel.sweep as sweep_module
from powermodel import load_scenario, metrics, simulate
from powermodel.cli import main
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.scenario import Scenario
from powermodel.sweep import (
    Failure,
    placement,
    points,
    read_sweep,
    results,
    run_all,
    runs,
    summary,
    sweep,
    table,
)

REFERENCE = "llama3-405b-16k-h100"
ROOT = Path(__file__).parents[1]
# A day at 10 s: ieso-1min (a 1-min rolling mean, five steps at least) is judged, runs are cheap
DAY = {"simulation.duration": "1d", "simulation.dt": "10s"}
GRID = {"cluster.n_gpus": [8192, 16384], "checkpoint.interval": ["30min", "2h"]}


def _sweep(**options):
    return sweep(
        REFERENCE,
        GRID,
        2,
        overrides=DAY,
        rules="ieso-1min",
        series="1h",
        progress=False,
        **options,
    )


@pytest.fixture(scope="module")
def serial():
    return _sweep(workers=0)


def test_serial_and_a_two_worker_local_cluster_give_the_same_dataset(serial):
    xr.testing.assert_identical(serial, _sweep(workers=2))


def test_the_dataset_has_a_dimension_per_key_and_one_for_the_seed(serial):
    assert dict(serial["it_mean_mw"].sizes) == {
        "cluster.n_gpus": 2,
        "checkpoint.interval": 2,
        "seed": 2,
    }
    assert serial["cluster.n_gpus"].values.tolist() == [8192, 16384]
    assert serial["checkpoint.interval"].values.tolist() == ["30min", "2h"]
    # seed i of a point is the preset's seed (0) plus i
    assert (serial["simulation_seed"].values == np.array([0, 1])).all()
    assert (serial["error"] == "").all()
    assert serial["rule_passed"].notnull().all()  # a 1-min mean on 10-s steps is judged
    assert serial.attrs["seeds"] == 2 and serial.attrs["rules"] == "ieso-1min"
    # the base as the sweep ran it: with the fixed overrides
    assert load_scenario(REFERENCE, DAY).to_json() == serial.attrs["scenario"]
    # the series are interval means, so their mean is the run's mean exactly (energy-exact
    # resampling: 24 hours of 360 steps each)
    assert serial.sizes["elapsed"] == 24
    assert_allclose(serial["grid_power"].mean("elapsed"), serial["grid_mean_mw"], rtol=1e-12)


def test_a_run_equals_the_same_scenario_simulated_alone(serial):
    # the point (16384 GPUs, 2h) at seed 1, simulated directly with the same overrides
    alone = metrics(
        simulate(
            load_scenario(
                REFERENCE,
                {**DAY, "cluster.n_gpus": 16384, "checkpoint.interval": "2h", "simulation.seed": 1},
            )
        )
    )
    run = serial.sel({"cluster.n_gpus": 16384, "checkpoint.interval": "2h", "seed": 1})
    for name in ("it_energy_mwh", "grid_peak_mw", "effective_training_time"):
        assert float(run[name]) == alone[name]
    assert float(run["unexpected_interruptions"]) == alone["unexpected_interruptions"]


def test_an_invalid_point_is_recorded_and_the_others_run():
    ds = sweep(
        REFERENCE,
        {"cluster.n_gpus": [8192, -5]},
        2,
        overrides=DAY,
        workers=0,
        progress=False,
    )
    bad, good = ds.sel({"cluster.n_gpus": -5}), ds.sel({"cluster.n_gpus": 8192})
    assert all("cluster.n_gpus" in e and "greater than 0" in e for e in bad["error"].values)
    assert bad["it_mean_mw"].isnull().all() and (bad["simulation_seed"] == -1).all()
    assert (good["error"] == "").all() and good["it_mean_mw"].notnull().all()
    assert summary(ds)["ran"].tolist() == ["2/2", "0/2"]


def test_a_run_that_fails_where_it_runs_is_recorded(monkeypatch):
    real = runs.simulate

    def failing(scenario):
        if scenario.simulation.seed == 1:
            raise ScenarioError("no run at seed 1")
        if scenario.cluster.n_gpus == 16384:
            raise RuntimeError("a defect")
        return real(scenario)

    monkeypatch.setattr(runs, "simulate", failing)
    ds = sweep(
        REFERENCE, {"cluster.n_gpus": [8192, 16384]}, 2, overrides=DAY, workers=0, progress=False
    )
    assert ds["error"].values.tolist() == [
        ["", "no run at seed 1"],
        ["internal error: RuntimeError: a defect", "no run at seed 1"],
    ]
    assert np.isfinite(ds["it_mean_mw"].values[0, 0]) and ds["it_mean_mw"].isnull().sum() == 3


@pytest.mark.parametrize(
    "grid, overrides, match",
    [
        (
            {"cluster.n_gpu": [1]},
            None,
            "unknown scenario key 'cluster.n_gpu'; did you mean 'cluster.n_gpus'",
        ),
        ([{"cluster.n_gpus": 8192}, {"workload.phase.0.power": 1}], None, "workload.phase.0"),
        ({"cluster.n_gpus": [8192]}, {"simulation.sed": 3}, "did you mean 'simulation.seed'"),
    ],
)
def test_an_unknown_key_is_refused_before_any_run(monkeypatch, grid, overrides, match):
    ran = []
    monkeypatch.setattr(runs, "simulate", ran.append)
    monkeypatch.setattr(runs, "load_scenario", ran.append)
    with pytest.raises(ScenarioError, match=match):
        sweep(REFERENCE, grid, 2, overrides=overrides, workers=0, progress=False)
    assert ran == []


def test_known_keys_pass_the_check():
    for key in ("cluster.n_gpus", "workload.phases.1.power", "mitigation.smoothing", "extends"):
        points._check_key(key)


def test_seeds_are_shared_across_points():
    # two points that differ only in their name draw the same failures at each seed (common
    # random numbers); the seeds themselves draw differently
    ds = sweep(
        REFERENCE,
        [{"name": "a"}, {"name": "b"}],
        3,
        overrides={"simulation.duration": "2d", "simulation.dt": "1min"},
        workers=0,
        progress=False,
    )
    counts = ds["unexpected_interruptions"].values
    assert (counts[0] == counts[1]).all()
    assert len(set(counts[0])) > 1
    assert ds["name"].values.tolist() == ["a", "b"] and ds.sizes["point"] == 2


def test_explicit_points_fill_what_a_point_leaves_out():
    ds = sweep(
        REFERENCE,
        [{"cluster.n_gpus": 8192}, {"checkpoint.interval": "1h"}],
        overrides=DAY,
        workers=0,
        progress=False,
    )
    # a number left out is NaN, a text left out is "" (the base's value)
    assert np.isnan(ds["cluster.n_gpus"].values[1]) and ds["cluster.n_gpus"].values[0] == 8192
    assert ds["checkpoint.interval"].values.tolist() == ["", "1h"]


def test_a_preset_and_a_weather_file_are_keys():
    ds = sweep(
        REFERENCE,
        {"extends": ["llama3-405b-16k-h100", "llama3-405b-8k-h100"], "site.weather": ["tampa"]},
        overrides=DAY,
        workers=0,
        progress=False,
    )
    assert (ds["error"] == "").all()
    # the 8K preset runs half the GPUs of the 16K one: its IT power is about half (the
    # failures and the rest of each node scale with it)
    half = ds["it_mean_mw"].values[1] / ds["it_mean_mw"].values[0]
    assert_allclose(half, 0.5, rtol=0.05)


def test_the_run_count_is_bounded_before_any_run():
    with pytest.raises(PowerModelError, match="10,100 runs, more than 10,000"):
        sweep(REFERENCE, {"cluster.n_gpus": list(range(101))}, 100, workers=0, progress=False)


def test_run_all_keeps_going_or_raises_in_turn():
    assert run_all(math.sqrt, [4.0, -1.0], keep_going=True) == [
        2.0,
        Failure("worker failed: ValueError: math domain error"),
    ]
    with pytest.raises(ValueError, match="math domain error"):
        run_all(math.sqrt, [4.0, -1.0])


def _frozen_count(item):
    return gc.get_freeze_count()


def test_workers_fork_with_this_processs_objects_left_out_of_their_collections():
    # Python's advice for forking without exec (gc.freeze): a worker's full collections would
    # walk every object it inherited, copying their pages
    alive = len(gc.get_objects())
    counts = run_all(_frozen_count, list(range(4)), workers=2)
    assert min(counts) >= 0.9 * alive
    assert gc.get_freeze_count() == 0  # this process collects them again once the cluster closed


@pytest.mark.parametrize("count, threads", [(256, 2), (5, 2), (1, 4), (10_000, 16), (37, 3)])
def test_chunks_cover_the_items_in_order_and_shrink_to_one(count, threads):
    spans = placement._spans(count, threads)
    assert [start for start, _ in spans] == [0, *(stop for _, stop in spans[:-1])]
    assert spans[-1][1] == count
    sizes = [stop - start for start, stop in spans]
    assert sizes == sorted(sizes, reverse=True)
    assert sizes[-1] == 1
    # the first is a share of all: CHUNKS_PER_THREAD chunks a thread at least, MAX_CHUNK items
    # at most (a worker's death loses a chunk)
    share = math.ceil(count / (threads * placement.CHUNKS_PER_THREAD))
    assert sizes[0] == min(share, placement.MAX_CHUNK)


def test_more_workers_than_cores_are_refused():
    with pytest.raises(PowerModelError, match="--workers must be 0"):
        run_all(math.sqrt, [4.0], workers=10_000)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        assert process.poll() is None, "the dask scheduler exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"no dask scheduler on port {port} after {within} s")


@pytest.fixture
def scheduler():
    """A real dask scheduler process and one worker process on 127.0.0.1, stopped after."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    common = {"cwd": ROOT, "env": env, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    processes = []
    try:
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_scheduler",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(port),
                    "--dashboard-address",
                    ":0",
                ],
                **common,
            )
        )
        _wait_for_port(port, processes[0])
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "distributed.cli.dask_worker",
                    address,
                    "--nworkers",
                    "1",
                    "--nthreads",
                    "1",
                    "--host",
                    "127.0.0.1",
                    "--no-dashboard",
                ],
                **common,
            )
        )
        yield address
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def test_a_sweep_on_a_running_scheduler_equals_the_serial_one(serial, scheduler):
    xr.testing.assert_identical(serial, _sweep(scheduler=scheduler))
    # a call that raises on a worker comes back as its failure, or raises here
    assert run_all(math.sqrt, [4.0, -1.0], scheduler=scheduler, keep_going=True) == [
        2.0,
        Failure("worker failed: ValueError: math domain error"),
    ]
    with pytest.raises(ValueError, match="math domain error"):
        run_all(math.sqrt, [4.0, -1.0], scheduler=scheduler)


def test_a_scheduler_that_is_not_there_is_one_error(monkeypatch):
    monkeypatch.setattr(placement, "CONNECT_TIMEOUT", 1.0)
    started = time.perf_counter()
    with pytest.raises(PowerModelError, match="cannot reach the dask scheduler"):
        run_all(math.sqrt, [4.0], scheduler=f"tcp://127.0.0.1:{_free_port()}")
    assert time.perf_counter() - started < 15.0


SWEEP_FILE = """
base = "mine.toml"
seeds = 2
rules = ["ieso-1min"]

[set]
simulation.duration = "1d"
simulation.dt = "10s"

[grid]
cluster.n_gpus = [8192, 16384]
"checkpoint.interval" = ["30min", "2h"]
"""


def _files(folder: Path, text: str = SWEEP_FILE) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mine.toml").write_text(f'extends = "{REFERENCE}"\nname = "mine"\n')
    path = folder / "sweep.toml"
    path.write_text(text)
    return path


def test_the_command_writes_netcdf_and_prints_a_summary(tmp_path, capsys, monkeypatch):
    path = _files(tmp_path / "in")
    (tmp_path / "out").mkdir()  # an output's folder is the user's to make (issue 26)
    monkeypatch.chdir(tmp_path)  # the base is found beside the sweep file, not here
    assert main(["sweep", str(path), "-o", "out/results.nc", "--workers", "0"]) == 0
    out = capsys.readouterr().out
    ds = xr.open_dataset(tmp_path / "out" / "results.nc")
    assert dict(ds["it_mean_mw"].sizes) == {
        "cluster.n_gpus": 2,
        "checkpoint.interval": 2,
        "seed": 2,
    }
    assert dict(ds["rule_passed"].sizes) == {**ds["it_mean_mw"].sizes, "rule": 1}
    assert "ieso-1min failing" in out and "8 of 8 runs ran" in out and "wrote out/results.nc" in out
    # the summary's median of each point is that of its seeds in the file
    expected = ds["grid_peak_mw"].median("seed").values.ravel()
    lines = [line.split() for line in out.splitlines()[1:5]]
    assert_allclose([float(line[4]) for line in lines], expected, rtol=1e-3)


def test_the_command_writes_a_row_per_run_to_csv(tmp_path, capsys):
    path = _files(tmp_path)
    out = tmp_path / "results.csv"
    assert main(["sweep", str(path), "-o", str(out), "--workers", "0", "--seeds", "3"]) == 0
    import pandas as pd

    frame = pd.read_csv(out)
    assert len(frame) == 2 * 2 * 3  # points times seeds
    assert frame.columns[:3].tolist() == ["cluster.n_gpus", "checkpoint.interval", "seed"]
    assert "ieso-1min worst [MW/min]" in frame and frame["error"].isna().all()


def test_a_csv_of_a_sweep_with_series_drops_them_and_says_so(tmp_path, capsys):
    # issue 28: the sweeps guide's own sweep.toml (series = "1h") with -o results.csv was refused
    path = _files(tmp_path, SWEEP_FILE.replace("seeds = 2", 'seeds = 2\nseries = "1h"'))
    out = tmp_path / "results.csv"
    assert main(["sweep", str(path), "-o", str(out), "--workers", "0"]) == 0
    printed = capsys.readouterr().out
    assert (
        'note: results.csv holds one row per run: the runs\' grid_power series (series = "1h") '
        "are not in it; write .nc to keep them"
    ) in printed
    import pandas as pd

    frame = pd.read_csv(out)
    assert len(frame) == 2 * 2 * 2 and "grid_power" not in frame  # a row per run, no series
    nc = tmp_path / "results.nc"  # the same file to NetCDF keeps them, and notes nothing
    assert main(["sweep", str(path), "-o", str(nc), "--workers", "0"]) == 0
    assert "note:" not in capsys.readouterr().out
    assert xr.open_dataset(nc)["grid_power"].sizes["elapsed"] == 24  # a day of 1-h means


def test_a_metric_the_step_cannot_measure_says_why_in_the_summary_and_the_csv(tmp_path, capsys):
    # issue 28: at dt = 10 s grid_swing_5s_mw was a blank column with no note
    path = _files(tmp_path)  # a day at 10 s: a 5-s window is not resolved
    out = tmp_path / "results.csv"
    assert main(["sweep", str(path), "-o", str(out), "--workers", "0"]) == 0
    why = "not resolved at a 10s step (needs dt <= 2.5s)"  # analysis._why_not_measured's words
    assert f"grid_swing_5s_mw: not measured in 8 runs: {why}" in capsys.readouterr().out
    import pandas as pd

    frame = pd.read_csv(out)
    assert frame["grid_swing_5s_mw"].isna().all()
    assert frame["not_measured"].str.contains(f"grid_swing_5s_mw: {why}", regex=False).all()
    # at 1 s every metric is measured: no note, an empty cell
    ds = sweep(REFERENCE, {"cluster.n_gpus": [8192]}, 1, overrides={"simulation.duration": "2h"})
    assert ds["not_measured"].values.tolist() == [[""]]
    assert sweep_module.not_measured_notes(ds) == [] and summary(ds).attrs["notes"] == []


def test_check_over_seeds_and_ranges_prints_the_same_on_workers(capsys):
    argv = [
        "check",
        REFERENCE,
        "--set",
        "simulation.duration=6h",
        "--set",
        "simulation.dt=10s",
        "--rules",
        "ieso-1min",
        "--seeds",
        "2",
        "--sensitivity",
    ]
    code = main(argv)
    alone = capsys.readouterr().out
    assert main([*argv, "--workers", "2"]) == code
    assert capsys.readouterr().out == alone


@pytest.mark.parametrize(
    "text, match",
    [
        (None, "no such sweep file"),
        ("base = ", "TOML syntax error"),
        ('base = "x"\nbogus = 1\n[grid]\n"a" = [1]', "unknown key 'bogus'"),
        (f'base = "{REFERENCE}"\n[grid]\ncluster.n_gpu = [1]', "unknown scenario key"),
        (f'base = "{REFERENCE}"\n[grid]\n', "the grid is empty"),
        (f'base = "{REFERENCE}"\n[grid]\n"cluster.n_gpus" = []', "has no values"),
        (f'base = "{REFERENCE}"\n[grid]\n"cluster.n_gpus" = 8', "give a list of values"),
        (f'base = "{REFERENCE}"', "give the swept keys as a \\[grid\\] table"),
        (f'base = "{REFERENCE}"\nseeds = 0\n[grid]\n"cluster.n_gpus" = [1]', "seeds must be"),
        (
            f'base = "{REFERENCE}"\nseeds = 100\n[grid]\n"cluster.n_gpus" = '
            f"[{', '.join(map(str, range(101)))}]",
            "10,100 runs, more than 10,000",
        ),
        (f'base = "{REFERENCE}"\n[[points]]\n[grid]\n"a" = [1]', "one of the two"),
        ('seeds = 2\n[grid]\n"cluster.n_gpus" = [8]', "no base"),
    ],
)
def test_a_bad_sweep_file_is_one_line_and_exit_1(tmp_path, capsys, monkeypatch, text, match):
    ran = []
    monkeypatch.setattr(runs, "simulate", ran.append)
    path = tmp_path / "sweep.toml"
    if text is not None:
        path.write_text(text)
    assert main(["sweep", str(path), "-o", str(tmp_path / "r.csv"), "--workers", "0"]) == 1
    captured = capsys.readouterr()
    assert captured.out == "" and ran == []
    (line,) = captured.err.splitlines()
    assert line.startswith("powermodel: error:")
    assert __import__("re").search(match, line), line


def test_an_unknown_output_extension_or_worker_count_is_refused(tmp_path, capsys):
    path = _files(tmp_path)
    assert main(["sweep", str(path), "-o", str(tmp_path / "r.xlsx")]) == 1
    assert "unknown extension '.xlsx'" in capsys.readouterr().err
    assert main(["sweep", str(path), "-o", str(tmp_path / "r.nc"), "--workers", "-1"]) == 1
    assert "--workers must be 0" in capsys.readouterr().err


def test_a_sweep_file_reads_nested_and_quoted_keys_in_order(tmp_path):
    spec = read_sweep(_files(tmp_path))
    assert list(spec.grid) == ["cluster.n_gpus", "checkpoint.interval"]
    assert spec.base == str(tmp_path.resolve() / "mine.toml")
    assert spec.overrides == DAY and spec.seeds == 2 and spec.rules == ["ieso-1min"]


def test_the_table_has_a_row_per_run(serial):
    frame = table(serial)
    assert len(frame) == serial["error"].size
    assert frame.columns[:3].tolist() == ["cluster.n_gpus", "checkpoint.interval", "seed"]
    # the row of (16384, 2h, seed 1) holds that run's numbers
    row = frame.query("`cluster.n_gpus` == 16384 and `checkpoint.interval` == '2h' and seed == 1")
    run = serial.sel({"cluster.n_gpus": 16384, "checkpoint.interval": "2h", "seed": 1})
    assert row["grid_peak_mw"].item() == float(run["grid_peak_mw"])
    assert row["ieso-1min worst [MW/min]"].item() == float(run["rule_worst"].item())


def test_a_sweep_in_turn_does_not_load_dask_distributed():
    # (xarray itself imports dask.array, where dask is installed, on building a Dataset)
    code = (
        "import sys\n"
        "from powermodel.cli import main\n"
        "from powermodel.sweep import sweep\n"
        "sweep('llama3-405b-16k-h100', {'cluster.n_gpus': [8192]}, "
        "overrides={'simulation.duration': '1h', 'simulation.dt': '1min'}, workers=0, "
        "progress=False)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'distributed'))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- the review's defects (issue 13) --------------------------------------------------------


@pytest.fixture
def silent_port():
    """A port that accepts connections and never says a word (nor speaks dask)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener.getsockname()[1]


def test_a_port_that_accepts_but_does_not_speak_dask_is_one_error_in_time(monkeypatch, silent_port):
    monkeypatch.setattr(placement, "CONNECT_TIMEOUT", 1.0)
    started = time.perf_counter()
    with pytest.raises(PowerModelError, match="cannot reach the dask scheduler at tcp://"):
        run_all(math.sqrt, [4.0], scheduler=f"127.0.0.1:{silent_port}")
    # the deadline is CONNECT_TIMEOUT (1 s here), plus importing dask.distributed
    assert time.perf_counter() - started < 1.0 + 8.0


@pytest.mark.parametrize(
    "address, match",
    [
        ("foo", "no host and port"),
        ("tcp://127.0.0.1:notaport", "no host and port"),
        ("tcp://[::1", "no host and port"),
        ("tcp://127.0.0.1:0", "port 0 is not 1 to 65535"),
        ("xyz://h:1", "xyz protocol"),
        ("inproc://x", "inproc protocol"),
        ("tls://127.0.0.1:1", "tls protocol"),
        ("ucx://10.0.0.5:13337", "ucx protocol"),
    ],
)
def test_a_malformed_scheduler_address_is_one_line_before_any_point_loads(
    tmp_path, capsys, monkeypatch, address, match
):
    loaded = []
    monkeypatch.setattr(runs, "load_scenario", loaded.append)
    path = _files(tmp_path)
    assert main(["sweep", str(path), "-o", str(tmp_path / "r.nc"), "--scheduler", address]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert match in line and "tcp://HOST:PORT" in line and loaded == []


def test_a_well_formed_address_is_read_as_tcp():
    assert sweep_module.check_scheduler("10.0.0.5:8786") == "tcp://10.0.0.5:8786"
    assert sweep_module.check_scheduler("tcp://[::1]:8786") == "tcp://[::1]:8786"


def test_workers_and_a_scheduler_together_are_refused(tmp_path, capsys):
    path = _files(tmp_path)
    argv = ["sweep", str(path), "-o", str(tmp_path / "r.nc")]
    assert main([*argv, "--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"]) == 1
    assert "not both" in capsys.readouterr().err
    with pytest.raises(PowerModelError, match="not both"):
        sweep(REFERENCE, GRID, workers=2, scheduler="tcp://127.0.0.1:8786", progress=False)


@pytest.mark.parametrize("output", ["afile/r.nc", "afile/deeper/r.csv"])
def test_an_output_that_cannot_be_written_is_refused_before_any_run(
    tmp_path, capsys, monkeypatch, output
):
    ran = []
    monkeypatch.setattr(runs, "simulate", ran.append)
    (tmp_path / "afile").write_text("")
    path = _files(tmp_path / "in")
    assert main(["sweep", str(path), "-o", str(tmp_path / output), "--workers", "0"]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert "afile' is a file, not a folder" in line and ran == []


def test_an_upper_case_extension_is_written_and_a_failed_write_keeps_the_old_file(
    tmp_path, monkeypatch
):
    ds = sweep(REFERENCE, {"cluster.n_gpus": [8192]}, overrides=DAY, workers=0, progress=False)
    path = sweep_module.write(ds, tmp_path / "R.NC")
    xr.testing.assert_identical(xr.load_dataset(path), ds)
    csv = sweep_module.write(ds, tmp_path / "r.csv")
    before = csv.read_bytes()

    def broken(_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(results, "table", broken)
    # one line naming the file and the fix (powermodel.output, issue 26)
    with pytest.raises(PowerModelError, match=r"r\.csv': No space left on device .*disk is full"):
        sweep_module.write(ds, csv)
    # written beside it, then renamed: the earlier file is whole and no partial file is left
    assert csv.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R.NC", "r.csv"]


def test_every_point_runs_the_base_seeds_even_one_that_extends_a_file_with_its_own(tmp_path):
    own = tmp_path / "own.toml"
    own.write_text(f'extends = "{REFERENCE}"\nname = "own"\n[simulation]\nseed = 7\n')
    ds = sweep(
        REFERENCE,
        [{"name": "a"}, {"extends": str(own)}],
        3,
        overrides={"simulation.duration": "2d", "simulation.dt": "1min", "simulation.seed": 4},
        workers=0,
        progress=False,
    )
    # seed i of every point is the base's (4, as [set] gives it) plus i: common random numbers
    assert ds["simulation_seed"].values.tolist() == [[4, 5, 6], [4, 5, 6]]
    counts = ds["unexpected_interruptions"].values
    assert (counts[0] == counts[1]).all() and len(set(counts[0])) > 1


@pytest.mark.parametrize(
    "grid", [{"simulation.seed": [1, 2]}, [{"simulation.seed": 1}, {"cluster.n_gpus": 8192}]]
)
def test_the_seed_is_not_a_swept_key(grid):
    with pytest.raises(PowerModelError, match="the seeds are the sweep's `seeds`"):
        sweep(REFERENCE, grid, overrides=DAY, workers=0, progress=False)


def test_a_band_cut_by_the_step_is_stored_and_starred(capsys, tmp_path):
    ds = sweep(
        REFERENCE,
        {"cluster.n_gpus": [1024]},
        overrides={"simulation.duration": "10min", "simulation.dt": "1s"},
        rules="ercot-5s,ieso-1min",
        workers=0,
        progress=False,
    )
    # ercot-5s's band reaches 55 Hz; a 1-s step resolves up to half its Nyquist frequency,
    # 0.25 Hz (models.signal.resolved); ieso-1min has no band: NaN
    cut = ds["rule_resolved_to"].sel(rule="ercot-5s").values
    assert_allclose(cut, 0.25, rtol=0)
    assert ds["rule_resolved_to"].sel(rule="ieso-1min").isnull().all()
    assert ds["rule_resolved_to"].attrs["units"] == "Hz"
    assert (ds["rule_passed"].sel(rule="ercot-5s") == 1).all()  # 1,024 GPUs swing < 10 MW
    frame = summary(ds)
    assert frame["ercot-5s failing"].tolist() == ["0/1*"]
    assert frame["ieso-1min failing"].tolist() == ["0/1"]
    assert frame.attrs["notes"] == [
        "* ercot-5s: the runs' step cut its band at 0.25 Hz: a pass is not proven above that"
    ]
    assert table(ds)["ercot-5s resolved to [Hz]"].tolist() == [0.25]


def test_a_fixed_key_that_is_also_swept_is_refused(tmp_path, capsys):
    with pytest.raises(PowerModelError, match="cluster.n_gpus is swept and fixed"):
        sweep(REFERENCE, GRID, overrides={**DAY, "cluster.n_gpus": 4096}, progress=False)
    # a key only some points set is the base's for the others: allowed
    points._check_fixed(
        {"cluster.n_gpus": 4096}, ["cluster.n_gpus"], [{"cluster.n_gpus": 1}, {}], False
    )
    with pytest.raises(PowerModelError, match="swept and fixed"):
        points._check_fixed(
            {"cluster.n_gpus": 4096}, ["cluster.n_gpus"], [{"cluster.n_gpus": 1}], False
        )
    path = _files(tmp_path)
    argv = ["sweep", str(path), "-o", str(tmp_path / "r.nc"), "--set", "cluster.n_gpus=4096"]
    assert main(argv) == 1
    assert "cluster.n_gpus is swept and fixed (--set or [set])" in capsys.readouterr().err


@pytest.mark.parametrize(
    "grid", [{"extends": [REFERENCE, 5]}, {"extends": [""]}, [{"extends": {"a": 1}}]]
)
def test_an_extends_that_is_not_text_is_refused(grid):
    with pytest.raises(PowerModelError, match="is not a preset name or a scenario file"):
        sweep(REFERENCE, grid, overrides=DAY, workers=0, progress=False)


def test_an_extends_that_is_a_folder_is_no_scenario_file(tmp_path):
    ds = sweep(REFERENCE, {"extends": [str(tmp_path), "/dev/zero"]}, overrides=DAY, progress=False)
    assert all("is not a scenario file" in e for e in ds["error"].values.ravel())


def test_rule_files_are_found_beside_the_sweep_file(tmp_path, monkeypatch):
    folder = tmp_path / "project"
    path = _files(folder, SWEEP_FILE.replace('["ieso-1min"]', '"ieso-1min, mine-rules.toml"'))
    (folder / "mine-rules.toml").write_text(
        '[my-ramp]\ntitle = "mine"\nsource = "mine"\nstatus = "quoted"\nsignal = "grid_power"\n'
        'window = "1min"\nstatistic = "net_change"\ndirection = "both"\nlimit = 5.0\n'
    )
    monkeypatch.chdir(tmp_path)
    spec = read_sweep(path)
    assert spec.rules == ["ieso-1min", str(folder.resolve() / "mine-rules.toml")]
    assert [r.name for r in points._rules_of(spec.rules)] == ["ieso-1min", "my-ramp"]


def test_the_base_is_read_once_with_the_fixed_overrides(tmp_path, monkeypatch):
    base = tmp_path / "broken.toml"
    base.write_text(f'extends = "{REFERENCE}"\n[cluster]\nn_gpus = -5\n')  # invalid alone
    real = runs.load_scenario
    read = []

    def counted(origin, overrides=None):
        read.append(origin)
        return real(origin, overrides)

    monkeypatch.setattr(runs, "load_scenario", counted)
    fixed = {**DAY, "cluster.n_gpus": 8192}
    ds = sweep(base, {"checkpoint.interval": ["30min", "2h"]}, overrides=fixed, progress=False)
    assert (ds["error"] == "").all()
    assert ds.attrs["scenario"] == real(base, fixed).to_json()
    assert [o for o in read if not isinstance(o, Scenario)] == [base]


def test_a_catalogue_is_parsed_once_and_handed_out_as_copies():
    from powermodel.scenario import catalogue

    first = catalogue("gpu")
    first["H100-SXM"]["tdp"] = -1.0
    assert catalogue("gpu")["H100-SXM"]["tdp"] == 700.0  # the H100 SXM datasheet's TDP
    assert load_scenario(REFERENCE).gpu.tdp == 700.0


def _exit_on_five(item):
    if item == 5:
        os._exit(1)  # the worker process dies, as a nanny's memory kill ends it
    return item


def test_a_run_that_kills_its_worker_fails_alone():
    out = run_all(_exit_on_five, list(range(40)), workers=2, keep_going=True)
    # 40 items for 2 threads: chunks of 5 first, so item 5 shares its chunk with others
    assert placement._spans(40, 2)[:2] == [(0, 5), (5, 10)]
    failed = [i for i, o in enumerate(out) if isinstance(o, Failure)]
    assert failed == [5] and "the worker died running it" in out[5].text
    assert out[:5] + out[6:] == [i for i in range(40) if i != 5]


def test_a_small_sweep_runs_in_turn_by_default(monkeypatch):
    monkeypatch.setattr(placement, "_cores", lambda: 4)
    hour = load_scenario(REFERENCE, {"simulation.duration": "1h", "simulation.dt": "1s"})
    # 8 runs of 3,600 steps: 28,800 steps, far below MIN_CLUSTER_STEPS
    assert placement._default_workers([hour] * 8, 10**6) == 0
    week = load_scenario(REFERENCE, {"simulation.duration": "7d", "simulation.dt": "1s"})
    assert placement._default_workers([week] * 8, 10**6) == 4  # 4.8 M steps


def test_duplicate_grid_values_are_refused():
    with pytest.raises(PowerModelError, match="lists 8192 twice"):
        sweep(REFERENCE, {"cluster.n_gpus": [8192, 8192]}, progress=False)


def test_a_sweep_none_of_whose_runs_ran_exits_3(tmp_path, capsys):
    text = SWEEP_FILE.replace("cluster.n_gpus = [8192, 16384]", "cluster.n_gpus = [-5]")
    path = _files(tmp_path, text)
    assert main(["sweep", str(path), "-o", str(tmp_path / "r.nc"), "--workers", "0"]) == 3
    captured = capsys.readouterr()
    assert "0 of 4 runs ran" in captured.out and (tmp_path / "r.nc").exists()


def test_the_seeds_option_is_named_in_its_error(tmp_path, capsys):
    path = _files(tmp_path)
    assert main(["sweep", str(path), "-o", str(tmp_path / "r.nc"), "--seeds", "0"]) == 1
    assert "--seeds must be 1 to 1,000, got 0" in capsys.readouterr().err


def test_the_public_names_are_sorted():
    assert sweep_module.__all__ == sorted(sweep_module.__all__)
