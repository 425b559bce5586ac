"""Behaviour kept to the bit across the engine's restructuring (issue 29, acceptance 1).

For each case, a SHA-256 of every variable's and coordinate's dtype, shape and bytes, of every
attribute (the Dataset's and each variable's), of the metrics and of the rules' verdicts. The
expected digests in ``tests/data/hashes.json`` are the model's own output, made by commit
6d5456b's own code before the engine was split into its stages (in a checkout of it:
``PYTHONPATH=. python /path/to/tests/test_bit_identical.py``). They are not published numbers
(those are tested where each model is; ``tests/test_pinned.py`` keeps the numbers themselves to
1e-12). A change meant to alter a result regenerates the file with this script and says in its
commit message what changed and why; a refactoring never does.

A float's last bit depends on the machine's vector kernels (numpy picks its exp, log and sums by
the CPU's SIMD extensions) and on the libraries' versions: the file records the platforms its
digests were made on, each by the base commit's own code there (a second, with AVX512FP16, gave
every digest of the first: issue 30's session), and on another the test says so and stops
(``tests/test_pinned.py`` then still holds every number to 1e-12).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
import xarray as xr
from test_pinned import CASES as PINNED_CASES
from test_pinned import REFERENCE

import powermodel
from powermodel import load_scenario, metrics, simulate
from powermodel.rules import check, load_rules
from powermodel.stream import Measures, stream
from powermodel.sweep import sweep

HASHES = Path(__file__).with_name("data") / "hashes.json"
RULES = ("ercot-5s", "nprr1191", "ieso", "aeso-1min", "atc-5s")
DAY = {"simulation.duration": "1d"}

# Simulated in memory: (preset, overrides, sensors): tests/test_pinned.py's cases, then the
# campus presets, a flexibility event, a run read through sensors and a hall of an odd count.
RUNS: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    **{case: (REFERENCE, overrides, ()) for case, overrides in PINNED_CASES.items()},
    "gb200-nvl72-100k-campus": ("gb200-nvl72-100k-campus", DAY, ()),
    "mixed-campus-hopper-blackwell": ("mixed-campus-hopper-blackwell", DAY, ()),
    "nerc-2024-07-virginia-1500mw-campus": ("nerc-2024-07-virginia-1500mw-campus", DAY, ()),
    "flexibility-clock": (
        REFERENCE,
        {
            **DAY,
            "reliability.rate_scale": 0.0,
            "flexibility": [
                {
                    "name": "dr",
                    "start": "2024-07-01T12:00:00",
                    "duration": "3h",
                    "notice": "30min",
                    "lever": "clock",
                    "reduction": 0.25,
                }
            ],
        },
        (),
    ),
    "sensors": (
        REFERENCE,
        {"simulation.duration": "1h", "simulation.dt": "5ms"},
        ("nvml", "dcgm", "revenue", "pmu60", "scada"),
    ),
    "odd-hall-idle-gpus": (REFERENCE, {**DAY, "cluster.n_gpus": 1001}, ()),
}
STREAMED = {"simulation.duration": "2d", "reliability.rate_scale": 3.0}
SWEPT = {"cluster.n_gpus": [512, 16384], "checkpoint.interval": ["30min", "2h"]}


ROOT = str(Path(powermodel.__file__).resolve().parents[1])  # the tree the data came from


def _update(h: Any, value: Any) -> None:
    # a shipped file's path (attrs["weather"]) names the checkout: digested without it, so that
    # the digests hold in any clone
    h.update(json.dumps(value, sort_keys=True, default=repr).replace(ROOT, "<root>").encode())


def _array(h: Any, name: str, values: np.ndarray) -> None:
    values = np.asarray(values)
    _update(h, [name, str(values.dtype), list(values.shape)])
    if values.dtype.kind == "O":
        _update(h, [repr(v) for v in values.ravel()])
    else:
        h.update(np.ascontiguousarray(values).tobytes())


def dataset_digest(ds: xr.Dataset) -> str:
    """Every variable's and coordinate's dtype, shape, bytes and attrs, and the Dataset's attrs."""
    h = hashlib.sha256()
    for name in sorted(ds.variables, key=str):
        var = ds.variables[name]
        _update(h, [str(name), list(var.dims)])
        _array(h, str(name), var.values)
        _update(h, var.attrs)
    _update(h, ds.attrs)
    return h.hexdigest()


def _verdicts(results: list) -> list:
    return [
        [
            r.rule.name,
            repr(r.limit),
            repr(r.worst),
            str(r.worst_time),
            r.violations.to_csv(),
            repr(r.days),
            repr(r.resolved_to),
            r.by_cause,
            {k: repr(v) for k, v in r.seconds_by_cause.items()},
        ]
        for r in results
    ]


def measures_digest(found: dict, results: list) -> str:
    h = hashlib.sha256()
    _update(h, {k: repr(v) for k, v in found.items()})
    _update(h, _verdicts(results))
    return h.hexdigest()


def run_case(case: str) -> dict[str, str]:
    preset, overrides, sensors = RUNS[case]
    ds = simulate(load_scenario(preset, overrides), sensors=list(sensors))
    found = metrics(ds)
    results = check(ds, load_rules(list(RULES))) if "it_power" in ds else []
    return {"dataset": dataset_digest(ds), "measures": measures_digest(found, results)}


def stream_case(tmp: Path) -> dict[str, str]:
    scenario = load_scenario(REFERENCE, STREAMED)
    measures = Measures(load_rules(list(RULES)))
    path = stream(scenario, tmp / "run.parquet", chunk=1 << 15, measures=measures)
    table = pq.read_table(path)
    h = hashlib.sha256()
    for name in table.column_names:
        _array(h, name, table.column(name).to_numpy())
    _update(h, {k.decode(): v.decode() for k, v in (table.schema.metadata or {}).items()})
    return {
        "file": h.hexdigest(),
        "measures": measures_digest(measures.metrics, measures.results),
    }


def sweep_case() -> dict[str, str]:
    ds = sweep(
        REFERENCE,
        SWEPT,
        2,
        overrides={"simulation.duration": "1d", "simulation.dt": "10s"},
        rules="ieso-1min",
        series="1h",
        workers=0,
        progress=False,
    )
    return {"dataset": dataset_digest(ds)}


def platform() -> dict[str, Any]:
    """What a float's last bit depends on: the libraries' versions and the CPU's SIMD kernels."""
    import pandas
    import pyarrow
    from numpy._core._multiarray_umath import __cpu_features__

    return {
        "python": ".".join(map(str, sys.version_info[:2])),
        "numpy": np.__version__,
        "pandas": pandas.__version__,
        "xarray": xr.__version__,
        "pyarrow": pyarrow.__version__,
        "simd": sorted(k for k, found in __cpu_features__.items() if found),
    }


def _expected(case: str) -> dict[str, str]:
    table = json.loads(HASHES.read_text())
    if platform() not in table["platforms"]:
        pytest.skip(
            f"the digests were made on other platforms ({table['platforms']}; here "
            f"{platform()}): regenerate them on the baseline commit here to compare bits"
        )
    return table[case]


@pytest.mark.parametrize("case", sorted(RUNS))
def test_a_run_is_unchanged_to_the_bit(case):
    assert run_case(case) == _expected(case)


def test_a_streamed_run_is_unchanged_to_the_bit(tmp_path):
    assert stream_case(tmp_path) == _expected("streamed")


def test_a_sweep_is_unchanged_to_the_bit():
    assert sweep_case() == _expected("sweep")


def test_the_digest_sees_one_bit():
    # the check cannot pass by hashing nothing: one ulp in one value changes the digest
    ds = xr.Dataset({"p": ("time", np.array([1.0, 2.0, 3.0]))}, attrs={"a": 1})
    moved = ds.copy(deep=True)
    moved["p"].values[1] = np.nextafter(2.0, 3.0)
    assert dataset_digest(ds) != dataset_digest(moved)
    assert dataset_digest(ds) != dataset_digest(ds.assign_attrs(a=2))
    assert dataset_digest(ds) == dataset_digest(ds.copy(deep=True))


if __name__ == "__main__":  # regenerate: python tests/test_bit_identical.py
    import tempfile

    table: dict[str, Any] = {case: run_case(case) for case in RUNS}
    with tempfile.TemporaryDirectory() as tmp:
        table["streamed"] = stream_case(Path(tmp))
    table["sweep"] = sweep_case()
    # the platforms these digests hold on: the file's too where it has the same digests (made
    # there), else this one alone
    before = json.loads(HASHES.read_text()) if HASHES.exists() else {"platforms": []}
    same = {k: v for k, v in before.items() if k != "platforms"} == table
    table["platforms"] = [p for p in before["platforms"] if same and p != platform()]
    table["platforms"].append(platform())
    HASHES.parent.mkdir(exist_ok=True)
    staged = HASHES.with_suffix(".json.tmp")
    staged.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    staged.replace(HASHES)
    sys.stdout.write(
        f"wrote {HASHES}: {len(table) - 1} cases, {len(table['platforms'])} platforms\n"
    )
