"""The command line, the files it writes and the errors it prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
import xarray as xr
from numpy.testing import assert_allclose

from powermodel import load_scenario, simulate
from powermodel.cli import main

REFERENCE = "llama3-405b-16k-h100"
SHORT = ["--set", "simulation.duration=2h"]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """The installed ``powermodel`` console script, as a user runs it."""
    script = Path(sys.executable).with_name("powermodel")
    assert script.exists(), "install the package (pip install -e .) to get the powermodel command"
    return subprocess.run(
        [str(script), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
        timeout=300,
    )


@pytest.mark.slow
def test_reference_run_writes_54_days_at_1s(tmp_path):
    out = tmp_path / "out.csv"
    result = run_cli("run", REFERENCE, "-o", str(out))
    assert result.returncode == 0, result.stderr
    assert "unexpected interruptions" in result.stdout
    table = pacsv.read_csv(out)
    # 54 days × 86,400 s (Llama 3 paper's 54-day snapshot at dt = 1 s)
    assert table.num_rows == 4_665_600
    for column in (
        "time",
        "gpu_power [MW]",
        "it_power [MW]",
        "facility_power [MW]",
        "throughput [token/s]",
        "job_state",
        "supply_temp [degC]",
    ):
        assert column in table.column_names
    first, last = table["time"][0].as_py(), table["time"][-1].as_py()
    assert str(first).startswith("2024-07-01 00:00:00") and str(last).startswith(
        "2024-08-23 23:59:59"
    )
    with open(out) as f:
        f.readline()
        assert f.readline().startswith("2024-07-01T00:00:00Z,")  # fields unquoted (issue 30)


def test_csv_matches_simulate(tmp_path):
    out = tmp_path / "short.csv"
    assert main(["run", REFERENCE, *SHORT, "-o", str(out)]) == 0
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "2h"}))
    table = pd.read_csv(out)
    # a CSV keeps 7 significant digits (powermodel.export.CSV_DIGITS): half a unit of the 7th
    assert_allclose(table["it_power [MW]"].to_numpy(), ds["it_power"].values, rtol=5e-7, atol=0)
    states = ds["job_state"].attrs["flag_meanings"].split()
    assert list(table["job_state"][:3]) == [states[c] for c in ds["job_state"].values[:3]]
    times = pd.to_datetime(table["time"]).dt.tz_convert(None).to_numpy()
    assert np.array_equal(times, ds["time"].values.astype("datetime64[ns]"))


def test_resampled_csv_has_means_and_envelopes(tmp_path):
    out = tmp_path / "coarse.csv"
    assert main(["run", REFERENCE, *SHORT, "-o", str(out), "--resample", "1min"]) == 0
    table = pd.read_csv(out)
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "2h"}))
    assert len(table) == 120
    fine = ds["it_power"].values.reshape(120, 60)
    # to the CSV's 7 significant digits (powermodel.export.CSV_DIGITS): half a unit of the 7th
    assert_allclose(table["it_power [MW]"], fine.mean(axis=1), rtol=5e-7, atol=0)
    assert_allclose(table["it_power_min [MW]"], fine.min(axis=1), rtol=5e-7, atol=0)
    assert_allclose(table["it_power_max [MW]"], fine.max(axis=1), rtol=5e-7, atol=0)
    # energy is unchanged by resampling (to the digits written)
    assert table["it_power [MW]"].sum() * 60 == pytest.approx(fine.sum(), rel=5e-7)


def test_parquet_and_netcdf(tmp_path):
    assert main(["run", REFERENCE, *SHORT, "-o", str(tmp_path / "p.parquet")]) == 0
    assert main(["run", REFERENCE, *SHORT, "-o", str(tmp_path / "p.nc")]) == 0
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "2h"}))
    table = pq.read_table(tmp_path / "p.parquet")
    assert_allclose(table["it_power"].to_numpy(), ds["it_power"].values)
    again = xr.open_dataset(tmp_path / "p.nc")
    assert_allclose(again["it_power"].values, ds["it_power"].values)
    assert again.attrs["scenario"] == ds.attrs["scenario"]
    assert again["it_power"].attrs["units"] == "MW"
    again.close()


def test_a_run_within_its_budget_is_made_in_chunks_as_it_is_whole(tmp_path, capsys, monkeypatch):
    # issue 30: `run` (with a Parquet file or none) renders its chunks and writes each while the
    # next is made; its summary and its file are the in-memory run's (the model's own values)
    from powermodel import metrics, stream
    from powermodel.cli.tables import _print_summary
    from powermodel.export import profile_table

    real, streamed = stream.stream, []
    monkeypatch.setattr(stream, "stream", lambda *args: streamed.append(args[1]) or real(*args))

    overrides = ["--set", "simulation.duration=2d", "--set", "reliability.rate_scale=3"]
    out = tmp_path / "run.parquet"
    assert main(["run", REFERENCE, *overrides, "-o", str(out)]) == 0
    chunked = capsys.readouterr().out.splitlines()
    assert main(["run", REFERENCE, *overrides]) == 0
    without_file = capsys.readouterr().out.splitlines()
    ds = simulate(
        load_scenario(REFERENCE, {"simulation.duration": "2d", "reliability.rate_scale": 3})
    )
    _print_summary(REFERENCE, metrics(ds), ds.attrs, 0.0)
    whole = capsys.readouterr().out.splitlines()

    def summary(lines: list[str]) -> list[str]:
        return [line for line in lines if not line.startswith(("simulated in", "wrote "))]

    assert streamed == [str(out), None]  # each made in chunks
    assert summary(chunked) == summary(whole) == summary(without_file)
    assert len(summary(whole)) > 10 and chunked[-1] == f"wrote {out}"
    assert pq.read_table(out).equals(profile_table(ds, headers=False))


def test_presets_and_validate(capsys):
    assert main(["presets"]) == 0
    assert REFERENCE in capsys.readouterr().out
    assert main(["validate", REFERENCE]) == 0
    assert "step 6.13 s" in capsys.readouterr().out


def test_sensitivity_table(capsys):
    assert main(["run", REFERENCE, "--set", "simulation.duration=20min", "--sensitivity"]) == 0
    out = capsys.readouterr().out
    for key in (
        "workload.trough_depth",
        "workload.edge_rate",
        "gpu.stalled",
        "workload.startup_ramp",
        "checkpoint.blocking_time",
    ):
        assert key in out
    # the base row has no value to show; each range cites its source by bibliography key
    assert "None" not in out
    assert "[P, ko_zhu Table I]" in out and "[S, nerc_lltf]" in out


BAD = [
    (["run", "no-such-preset"], "unknown preset 'no-such-preset'"),
    (["run", REFERENCE, "--set", "cluster.n_gpu=5"], "did you mean 'cluster.n_gpus'"),
    (["run", REFERENCE, "--set", "cluster.n_gpus=many"], "valid integer"),
    (["run", REFERENCE, "--set", "cluster.n_gpus=-16"], "greater than 0"),
    (["run", REFERENCE, "--set", "workload.phases.0.share=0.9"], "phase shares must sum to 1"),
    (
        ["run", REFERENCE, "--set", "simulation.dt=2d", "--set", "simulation.duration=1d"],
        "longer than the duration",
    ),
    (["run", REFERENCE, "-o", "out.xlsx"], "unknown extension '.xlsx'"),
    (["run", REFERENCE, *SHORT, "--resample", "7s"], "whole multiple"),
    (["check", REFERENCE, *SHORT, "--rules", "ercot"], "unknown rule 'ercot'"),
    (["check", REFERENCE, *SHORT, "--rules", "lipa-high"], "a profile at dt <= 2ms resolves it"),
    (["check", "missing.csv", "--rules", "ercot-5s"], "missing.csv: no such file"),
    (["export", REFERENCE, *SHORT, "--to", "pypsa", "-o", "x", "--resample", "7min"], "divides"),
    (
        [
            "run",
            REFERENCE,
            "--set",
            "mitigation.smoothing.floor=0.5",
            "--set",
            "mitigation.smoothing.ramp_up=100",
            "--set",
            "mitigation.smoothing.ramp_down=100",
        ],
        "the H100-SXM has no power smoothing",
    ),
]


@pytest.mark.parametrize(("args", "message"), BAD)
def test_bad_input_one_line_exit_1(args, message):
    result = run_cli(*args)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_toml_syntax_error_from_the_cli(tmp_path: Path):
    bad = tmp_path / "bad.toml"
    bad.write_text('extends = "llama3-405b-16k-h100"\n[cluster\n')
    result = run_cli("run", str(bad))
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0
    assert "TOML syntax error" in result.stderr and "bad.toml" in result.stderr


def test_debug_shows_the_traceback():
    result = run_cli("run", "no-such-preset", "--debug")
    assert result.returncode != 0 and "Traceback" in result.stderr


def test_resampled_pue_is_a_ratio_of_energies():
    from powermodel.analysis import resample

    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "1d", "simulation.dt": "1min"}))
    daily = resample(ds, "1d")
    # ISO/IEC 30134-2: PUE = facility energy / IT energy over the period
    expected = ds["facility_power"].values.sum() / ds["it_power"].values.sum()
    assert float(daily["pue"][0]) == pytest.approx(expected, rel=1e-12)
    assert "pue_min" not in daily
    hourly = resample(ds, "10min")
    assert_allclose(hourly["pue"].values, ds["pue"].values[::10])


def test_check_exit_codes_tell_pass_from_violation(tmp_path: Path):
    # exit 0: every rule passes; 3: some rule violated (1 stays for errors)
    quiet = [*SHORT, "--set", "reliability.rate_scale=0"]
    passed = run_cli("check", REFERENCE, *quiet, "--rules", "ieso-1min,caiso-10min")
    assert passed.returncode == 0, passed.stderr
    assert "pass" in passed.stdout and "FAIL" not in passed.stdout
    failing = run_cli(
        "check",
        REFERENCE,
        *SHORT,
        "--set",
        "reliability.rate_scale=10",
        "--rules",
        "nprr1191",
        "--seeds",
        "2",
        "--violations",
        str(tmp_path / "v.csv"),
    )
    assert failing.returncode == 3, failing.stderr
    assert "violations by cause" in failing.stdout and "failure" in failing.stdout
    table = pd.read_csv(tmp_path / "v.csv")
    # runs counted from 1, as the summary's "worst at (run 1)"; times as the profile writes them
    assert set(table["run"]) == {1, 2} and "failure" in set(table["cause"])
    assert table["start"].str.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z").all()


def test_check_a_measured_trace(tmp_path: Path):
    trace = tmp_path / "meter.csv"
    times = pd.date_range("2025-03-01", periods=120, freq="1s")
    power = np.where(np.arange(120) < 60, 40.0, 28.0)  # a 12 MW drop
    pd.DataFrame({"time": times, "P [MW]": power}).to_csv(trace, index=False)
    result = run_cli("check", str(trace), "--rules", "ercot-5s")
    assert result.returncode == 3, result.stderr
    assert "unknown" in result.stdout  # no job state in a meter trace: no cause


def test_size_prints_a_setting_per_rule_and_lever():
    result = run_cli(
        "size",
        REFERENCE,
        "--set",
        "simulation.duration=1h",
        "--set",
        "reliability.rate_scale=30",
        "--rules",
        "ieso-15s",
    )
    assert result.returncode == 0, result.stderr
    assert "power cap" in result.stdout and "site battery" in result.stdout
    # issue 10: the costs were bare fractions and the worst value and limit had no unit
    header, *rows = result.stdout.splitlines()
    for column in ("setting unit", "rule unit", "grid energy change [%]", "tokens lost [%]"):
        assert column in header
    cap = next(row for row in rows if " power cap " in row).split()
    assert cap[cap.index("cap") + 2 : cap.index("cap") + 4] == ["W", "pass"]
    assert cap[cap.index("pass") + 3] == "MW"  # ieso-15s: a range over 15 s, in MW
    assert cap[-2] == "MWh/day" and cap[-1].endswith("%")  # tokens lost; no battery cycles


def test_export_writes_the_grid_tool_files(tmp_path: Path):
    result = run_cli("export", REFERENCE, *SHORT, "--to", "opendss", "-o", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "loadshape.dss").exists() and (tmp_path / "example.dss").exists()


def test_a_reader_that_stops_early_is_not_an_error():
    # `powermodel keys | head -1`: the reader has gone, so every write meets a closed pipe;
    # a shell reports such a command as 141 (128 + SIGPIPE), and there is nothing to say
    read, write = os.pipe()
    os.close(read)
    try:
        run = subprocess.run(
            [sys.executable, "-m", "powermodel.cli", "keys"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
    finally:
        os.close(write)
    assert (run.returncode, run.stderr) == (141, "")


@pytest.mark.parametrize(
    "argv",
    [
        ["size", REFERENCE, "--rules", "ieso-15s"],
        ["check", REFERENCE, "--rules", "ieso-15s", "--seeds", "2"],
    ],
)
@pytest.mark.parametrize(
    "parallel, match",
    [
        (["--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"], "not both"),
        (["--scheduler", "tls://127.0.0.1:8786"], "tls protocol"),
        (["--scheduler", "127.0.0.1"], "no host and port"),
    ],
)
def test_where_runs_go_is_checked_before_anything_runs(capsys, monkeypatch, argv, parallel, match):
    from powermodel.cli import common, study_commands

    ran = []
    monkeypatch.setattr(common, "simulate", ran.append)
    monkeypatch.setattr(study_commands, "check_seeds", lambda *a, **k: ran.append(a))
    assert main([*argv, *parallel]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("powermodel: error:") and match in line and ran == []


def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys, monkeypatch):
    # export.check_folder, shared by run, export and sweep: a file where a folder should be is
    # refused before anything is simulated (a long run's results were lost at the end)
    (tmp_path / "afile").write_text("")
    monkeypatch.setattr("powermodel.cli.common.simulate", lambda *_: pytest.fail("simulated"))
    code = main(["run", "llama3-405b-16k-h100", "-o", str(tmp_path / "afile" / "out.csv")])
    assert code == 1
    assert "afile' is a file, not a folder: give an output in a folder" in capsys.readouterr().err


def test_check_and_ride_through_tables_keep_to_a_terminal(capsys):
    # issue 28 (6): the check and ride-through tables were 320-340 characters wide; wider than
    # 120 they are printed in blocks of their columns, each led by the row's name
    from powermodel import rules
    from powermodel.cli.tables import TERMINAL

    assert main(["check", REFERENCE, *SHORT, "--rules", "ercot-5s,nprr1191-up,ieso-15s"]) == 3
    out = capsys.readouterr().out
    tables = out.split("\n\n", 1)[1]  # after the rules' own descriptions
    assert max(map(len, tables.splitlines())) <= TERMINAL == 120
    blocks = tables.split("\nviolations by cause:")[0].strip("\n").split("\n\n")
    assert len(blocks) > 1 and all(b.lstrip().startswith("rule ") for b in blocks)
    heads = " ".join(b.splitlines()[0] for b in blocks)
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "2h"}))
    summary = rules.summary(
        [rules.check(ds, rules.load_rules(["ercot-5s", "nprr1191-up", "ieso-15s"]))], []
    )
    assert all(column in heads for column in summary.columns)  # every column, once
    assert sum(h.split().count("verdict") for h in heads.split("rule")) == 1

    assert main(["ride-through", "nerc-2024-07-virginia-1500mw-campus"]) == 0  # no fail
    out = capsys.readouterr().out
    table = out.split("\n\n", 1)[1].split("\n\n  disturbances:")[0]
    assert max(map(len, table.splitlines())) <= TERMINAL
    blocks = table.split("\n\n")
    assert len(blocks) > 2 and all(b.lstrip().startswith("time ") for b in blocks)
    assert all(len(b.splitlines()) == 1 + 6 for b in blocks)  # the head and six disturbances
