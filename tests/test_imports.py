"""What a command imports (issue 13): a run, its metrics and its rule check never import dask
(0.2-0.3 s and tens of MB a process; powermodel._xarray), yet xarray still knows dask's arrays
once dask.array is imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

RUN = """
import sys
from powermodel import load_scenario, metrics, simulate
from powermodel.rules import check, load_rules
ds = simulate(load_scenario("llama3-405b-16k-h100", {"simulation.duration": "1d"}))
metrics(ds)
check(ds, load_rules("ercot-5s,nprr1191,ieso"))
"""


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_run_its_metrics_and_its_check_do_not_import_dask():
    loaded = _python(RUN + "print(sorted(m for m in sys.modules if m.split('.')[0] == 'dask'))")
    assert loaded == "[]"


def test_a_sweep_in_turn_and_its_results_do_not_import_dask():
    # the results' coordinates are made indexes, which asks whether each is a dask collection
    loaded = _python(
        """
import sys
from powermodel.sweep import sweep
ds = sweep("llama3-405b-16k-h100", {"cluster.n_gpus": [1024, 2048]}, 2, workers=0,
           overrides={"simulation.duration": "1h"}, progress=False)
assert ds.sizes == {"cluster.n_gpus": 2, "seed": 2}, ds.sizes
print(sorted(m for m in sys.modules if m.split('.')[0] == 'dask'))
"""
    )
    assert loaded == "[]"


def test_xarray_knows_dask_arrays_once_dask_array_is_imported():
    # the deferred record was consulted (a run's Dataset) before dask.array was imported
    out = _python(
        RUN
        + """
import dask.array as da
import xarray as xr
lazy = xr.Dataset({"a": ("t", da.zeros(6, chunks=3))}, coords={"t": da.arange(6, chunks=3)})
chunked = ds[["grid_power"]].chunk({"time": 3600})
print(dict(lazy.chunks), type(lazy["a"].data).__name__, chunked.chunks["time"][:2])
"""
    )
    assert out == "{'t': (3, 3)} Array (3600, 3600)"
