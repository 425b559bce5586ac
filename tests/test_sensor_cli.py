"""``powermodel run --sensor``: the views it writes and the swings it prints beside the exact."""

from __future__ import annotations

import re

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
    # the revenue meter's 15-min blocks: the last block's mean at the hour's last row
    assert_allclose(
        table["grid_power_revenue [MW]"].iloc[-1],
        table["grid_power [MW]"].iloc[-900:].mean(),
        rtol=1e-9,
    )
    assert "grid_power largest 5-s swing, exact / revenue" in printed


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
