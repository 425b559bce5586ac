"""``powermodel run --sensor``: the views it writes and the swings it prints beside the exact."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from powermodel.cli import main

REFERENCE = "llama3-405b-16k-h100"
HOUR = ["--set", "simulation.duration=1h", "--set", "reliability.rate_scale=0"]


def test_run_writes_each_sensor_view_and_prints_its_swing(tmp_path, capsys):
    out = tmp_path / "run.csv"
    code = main(
        ["run", REFERENCE, *HOUR, "--sensor", "nvml", "--sensor", "revenue", "-o", str(out)]
    )
    printed = capsys.readouterr().out
    assert code == 0
    table = pd.read_csv(out)
    assert {"gpu_power_nvml [MW]", "grid_power_revenue [MW]"} <= set(table.columns)
    # a 1-s average of 1-s means is the means themselves: NVML shows the exact swing
    line = next(s for s in printed.splitlines() if s.startswith("gpu_power largest 5-s swing"))
    exact, seen = re.search(r"([\d.]+) / ([\d.]+) MW$", line).groups()
    assert float(exact) > 1.0  # an iteration swings the GPUs by megawatts
    assert exact == seen
    # the revenue meter's 15-min blocks: the last block's mean at the hour's last row (each
    # cell to the CSV's 7 significant digits, powermodel.export.CSV_DIGITS)
    assert_allclose(
        table["grid_power_revenue [MW]"].iloc[-1],
        table["grid_power [MW]"].iloc[-900:].mean(),
        rtol=5e-7,
    )
    # the meter reports nothing for its first 15 min (blank cells, not a made-up block), and
    # its swing is that of its readings: the largest step between two block demands
    assert table["grid_power_revenue [MW]"].iloc[:899].isna().all()
    blocks = table["grid_power [MW]"].to_numpy().reshape(4, 900).mean(axis=1)
    line = next(s for s in printed.splitlines() if s.startswith("grid_power largest 5-s swing"))
    assert line.endswith(f"/ {np.abs(np.diff(blocks)).max():.2f} MW")


def test_the_swings_beside_a_sensor_come_from_the_analysis_layer():
    # the CLI prints what powermodel.analysis.sensor_swings measures (no swing logic of its own)
    from powermodel import load_scenario, simulate
    from powermodel.analysis import max_swing, sensor_swings

    ds = simulate(load_scenario(REFERENCE, ["simulation.duration=1h"]), sensors=["revenue", "nvml"])
    rows = sensor_swings(ds, ["revenue", "nvml", "revenue"]).set_index("sensor")
    assert list(rows.index) == ["revenue", "nvml"]
    # the revenue view's leading NaN (no report before 15 min) are left out, not spread
    blocks = ds["grid_power"].values.reshape(4, 900).mean(axis=1)
    assert_allclose(rows.loc["revenue", "seen"], np.abs(np.diff(blocks)).max(), rtol=1e-9)
    assert_allclose(rows.loc["revenue", "exact"], max_swing(ds["grid_power"].values, 1.0))
    # NVML's 1-s average of 1-s means is the means: the same swing (to the integral's rounding)
    assert_allclose(rows.loc["nvml", "seen"], rows.loc["nvml", "exact"], rtol=1e-12)
    assert rows.loc["nvml", "exact"] > 1.0
    assert (rows["not_measured"] == "").all() and (rows["units"] == "MW").all()
    # a step that does not resolve 5 s says so, for the CLI to print
    coarse = simulate(load_scenario(REFERENCE, ["simulation.duration=1h", "simulation.dt=3s"]))
    coarse["gpu_power_nvml"] = coarse["gpu_power"]
    (why,) = sensor_swings(coarse, ["nvml"])["not_measured"]
    assert why == "not resolved at a 3s step"


def test_a_sensor_the_step_cannot_resolve_is_one_line(capsys):
    code = main(["run", REFERENCE, *HOUR, "--sensor", "pmu60"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.strip().splitlines() == [
        "powermodel: error: the PMU (60/s) sensor (pmu60) cannot be read from a 1s profile: "
        "it needs dt <= 8.333ms; set simulation.dt to that or finer"
    ]


def test_an_unknown_sensor_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["run", REFERENCE, "--sensor", "nvlm"])
    assert exit_.value.code == 2
    assert "invalid choice: 'nvlm'" in capsys.readouterr().err
