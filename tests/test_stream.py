"""Bounded memory (issue 13): the lazily held variables of an in-memory run, and runs streamed to
a file in chunks with the same values as the in-memory run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import xarray as xr

from powermodel import load_scenario, simulate
from powermodel.cli import main
from powermodel.engine.preflight import check_memory
from powermodel.engine.series import HELD
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.export import write
from powermodel.stream import stream

REFERENCE = "llama3-405b-16k-h100"
# 2 days at 1 s with failures; 16-min plant steps, so the hour-aligned chunks of 10,000 steps
# (cut at 10,800 s, 21,600 s, ...) fall inside plant steps (960 s) and anywhere between failures
TWO_DAYS = {"simulation.duration": "2d", "reliability.rate_scale": 3.0, "cooling.dt": "16min"}


@pytest.fixture(scope="module")
def two_days():
    scenario = load_scenario(REFERENCE, TWO_DAYS)
    return scenario, simulate(scenario)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_a_streamed_file_is_the_in_memory_runs(two_days, tmp_path, suffix):
    scenario, ds = two_days
    whole = write(ds, tmp_path / f"whole{suffix}")
    parts = stream(scenario, tmp_path / f"parts{suffix}", chunk=10_000)
    if suffix == ".csv":  # the same text, byte for byte
        assert parts.read_bytes() == whole.read_bytes()
        return
    # 48 h: 2 h first (the chunks grow from an eighth of one, 4,096 steps at the least, each
    # to the hour after: stream.Course.ranges), then 3-h chunks and the last hour: it streamed
    assert pq.ParquetFile(parts).num_row_groups == 17
    streamed, kept = pq.read_table(parts), pq.read_table(whole)
    assert streamed.equals(kept, check_metadata=True)
    # every variable on time, against simulate()'s own values: identical, not close
    columns = [n for n in ds.data_vars if ds[n].dims == ("time",) and n != "job_state"]
    assert len(columns) == 17  # 18 with job_state, its codes written as names
    for name in columns:
        np.testing.assert_array_equal(streamed[name].to_numpy(), ds[name].values, err_msg=name)


def test_streamed_variation_and_odd_hours_match(tmp_path):
    # a step of 7 s puts hour boundaries between samples (hourly PUE must stay whole), and
    # drawn training steps render through the same tables chunk by chunk
    scenario = load_scenario(
        REFERENCE,
        {
            "simulation.duration": "44100s",
            "simulation.dt": "7s",
            "cooling.dt": "63s",
            "reliability.rate_scale": 5.0,
            "workload.variation": {"step_cv": 0.05},
        },
    )
    whole = pq.read_table(write(simulate(scenario), tmp_path / "whole.parquet"))
    streamed = pq.read_table(stream(scenario, tmp_path / "parts.parquet", chunk=700))
    assert streamed.equals(whole, check_metadata=True)


def test_whole_run_filters_are_refused_with_the_fix(tmp_path):
    sc = load_scenario(REFERENCE, {**TWO_DAYS, "mitigation.stop_burn": {"ramp_down": 300.0}})
    with pytest.raises(ScenarioError, match="mitigation.stop_burn.*simulation.dt"):
        stream(sc, tmp_path / "x.parquet")
    with pytest.raises(PowerModelError, match=r"-o FILE\.parquet"):
        stream(load_scenario(REFERENCE, TWO_DAYS), tmp_path / "x.nc")


def test_the_memory_refusal_names_streaming_where_it_applies():
    sc = load_scenario(REFERENCE, TWO_DAYS)
    with pytest.raises(ScenarioError, match=r"-o FILE\.parquet"):
        check_memory(sc, budget=1e6)
    burn = load_scenario(REFERENCE, {**TWO_DAYS, "mitigation.stop_burn": {"ramp_down": 300.0}})
    with pytest.raises(ScenarioError, match="stop_burn keeps it from streaming") as refused:
        check_memory(burn, budget=1e6)
    assert "FILE.parquet" not in str(refused.value)
    with pytest.raises(ScenarioError, match="sensor views"):
        check_memory(sc, sensors=1, budget=1e6)


def test_cli_streams_a_run_over_its_budget(two_days, tmp_path, capsys):
    _, ds = two_days
    out = tmp_path / "run.parquet"
    sets = [f"{k}={v}" for k, v in TWO_DAYS.items()]
    args = ["run", REFERENCE, *sum((["--set", s] for s in sets), []), "-o", str(out)]
    assert main([*args, "--memory-gb", "0.01"]) == 0
    err = capsys.readouterr().err
    assert "over the 0.0 GB budget: streaming" in err
    streamed = pq.read_table(out)
    np.testing.assert_array_equal(streamed["grid_power"].to_numpy(), ds["grid_power"].values)
    assert main([*args[:-1], str(tmp_path / "run.nc"), "--memory-gb", "0.01"]) == 1
    assert "-o FILE.parquet" in capsys.readouterr().err
    assert main([*args, "--memory-gb", "-1"]) == 1
    assert "--memory-gb must be" in capsys.readouterr().err


def test_plant_clock_variables_take_no_memory_per_step(two_days):
    # the Dataset holds 7 float64 arrays (grid_power is facility_power's without batteries),
    # time and job_state: 65 B a step; the plant path's 6 float32 variables, cooling, misc
    # and PUE (48 B a step more, expanded) are read only when read
    scenario, _ = two_days
    n = scenario.simulation.n_steps
    tracemalloc.start()
    ds = simulate(scenario)
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert held / n < 70
    assert ds["temp_air"].dtype == np.float32 and ds["misc_power"].dtype == np.float64


@pytest.mark.parametrize(
    "where",
    [slice(None), slice(5, 4000, 7), slice(None, None, -3), slice(3000, 10, -11), 1234, -1],
)
def test_held_variables_read_as_their_expansion(two_days, where):
    # a plant-clock variable read in any way gives np.repeat of its plant-step values
    _, ds = two_days
    k = round(ds.attrs["plant_dt"] / ds.attrs["dt"])
    for name in (*HELD, "cooling_power", "misc_power", "pue"):
        dense = ds[name].load().values if name == "pue" else None
        lazy = ds[name].isel(time=where).values
        if dense is None:
            plant = ds[name].values[::k]
            dense = np.repeat(plant, k)
        np.testing.assert_array_equal(lazy, dense[where], err_msg=name)


def test_lazy_profile_survives_a_netcdf_round_trip(two_days, tmp_path):
    _, ds = two_days
    path = write(ds, tmp_path / "run.nc")
    xr.testing.assert_identical(xr.load_dataset(path), ds.load())


SHIPPED = "ercot-5s,nprr1191,ieso,caiso-10min,ieso-sso,lipa,atc-5s,aeso-1min"


def _same_measures(scenario, ds, tmp_path, chunk):
    """The streamed run's metrics and verdicts against the in-memory functions' on ``ds``:
    the rules' worst values, times, violations and causes identical (every statistic carried
    across chunks exactly); peaks, swings, ramps and counts identical; sums (energies, means,
    PUE, WUE, heat) within 1e-12 relative (added chunk by chunk, not pairwise over the run)."""
    from powermodel.analysis import metrics
    from powermodel.rules import check_each, load_rules
    from powermodel.stream import Measures

    chosen = load_rules(SHIPPED)
    measures = Measures(chosen)
    stream(scenario, tmp_path / "parts.parquet", chunk=chunk, measures=measures)
    expected = metrics(ds)
    assert measures.metrics.keys() == expected.keys()
    for key, value in expected.items():
        got = measures.metrics[key]
        if isinstance(value, float) and ("energy" in key or "mean" in key or key in SUMS):
            np.testing.assert_allclose(got, value, rtol=1e-12, err_msg=key)
        else:
            assert got == value or (np.isnan(got) and np.isnan(value)), key
    results, refused = check_each(ds, chosen)
    assert [r.reason for r in measures.refused] == [r.reason for r in refused]
    assert refused  # ieso-sso's band is not resolved at 1 s: refused alike
    assert len(measures.results) == len(results)
    for mine, theirs in zip(measures.results, results, strict=True):
        assert (mine.worst, mine.worst_time) == (theirs.worst, theirs.worst_time), mine.rule.name
        pd.testing.assert_frame_equal(mine.violations, theirs.violations)
        assert mine.by_cause == theirs.by_cause and mine.passed == theirs.passed
        assert mine.seconds_by_cause == theirs.seconds_by_cause
    return results


SUMS = ("pue", "wue_l_per_kwh", "throughput_lost_to_heat", "grid_load_factor", "tokens")


def test_streamed_metrics_and_verdicts_are_the_in_memory_runs(two_days, tmp_path):
    # 2 days at 1 s with failures and variation, in chunks of about 3 h (cut at the next hour)
    scenario = load_scenario(REFERENCE, {**TWO_DAYS, "workload.variation": {"step_cv": 0.05}})
    results = _same_measures(scenario, simulate(scenario), tmp_path, chunk=10_007)
    # causes and violations spanning cuts were exercised: checkpoints need the running median
    assert sum(len(r.violations) for r in results) > 1000
    assert any("checkpoint" in r.by_cause for r in results)


def test_a_streamed_week_measures_as_in_memory(tmp_path):
    # acceptance 4: a 7-day overlap at 1 s, in chunks of about 3 h
    scenario = load_scenario(REFERENCE, {"simulation.duration": "7d"})
    _same_measures(scenario, simulate(scenario), tmp_path, chunk=10_800)


def test_a_check_over_its_budget_is_judged_streamed(two_days, tmp_path, monkeypatch):
    # stream.checked, what `powermodel check` runs for each seed: within its budget the run is
    # simulated in memory; over it (here a quarter of its estimate) streamed in chunks with
    # nothing written, and judged to the same results as in memory
    from powermodel.rules import check_each, load_rules
    from powermodel.simulate import memory_estimate
    from powermodel.stream import checked

    scenario = load_scenario(REFERENCE, TWO_DAYS)
    chosen = load_rules("ercot-5s,nprr1191,aeso-1min")
    budget = memory_estimate(scenario) / 4  # the run does not fit: it streams
    results, expected = check_each(simulate(scenario), chosen)

    def whole(*_):
        raise AssertionError("simulated whole")

    monkeypatch.setattr("powermodel.stream.simulate", whole)
    streamed, refused = checked(scenario, chosen, budget=budget)
    assert refused == expected == []
    for mine, theirs in zip(streamed, results, strict=True):
        assert (mine.worst, mine.worst_time) == (theirs.worst, theirs.worst_time)
        pd.testing.assert_frame_equal(mine.violations, theirs.violations)
        assert mine.by_cause == theirs.by_cause and mine.passed == theirs.passed
    assert not list(tmp_path.iterdir())  # nothing written


PLANTS = (
    "meta-outside-air-evaporative",
    "liquid-dry-cooler",
    "liquid-tower",
    "enterprise-chilled-water",
    "modern-chilled-water",
)
CLOCK_EVENT = {
    "name": "dr",
    "start": "2024-07-01T06:00:00",
    "duration": "3h",
    "notice": "30min",
    "lever": "clock",
    "reduction": 0.25,
}


@pytest.mark.parametrize(
    "overrides",
    [
        *({"cooling.plant": plant} for plant in PLANTS),
        {"mitigation.clock_lock": 0.85, "mitigation.power_cap": 550.0},
        {"reliability.rate_scale": 0.0, "flexibility": [CLOCK_EVENT]},
    ],
    ids=[*PLANTS, "cap-lock", "flex-clock"],
)
def test_the_plant_path_advanced_in_parts_is_the_whole_paths(overrides):
    # a streamed run advances the plant path chunk by chunk, each lag from the state the part
    # before left it in (plants.Lags): every array identical to the whole run's path, for
    # every plant type and with clock locks, over parts of odd lengths (1, 7, 122, 646 steps)
    from dataclasses import fields

    from powermodel.engine.preflight import preflight
    from powermodel.engine.run import prepare, render_whole
    from powermodel.models.plants import Lags

    scenario = load_scenario(REFERENCE, {"simulation.duration": "1d", **overrides})
    run = prepare(scenario, *preflight(scenario))
    means, _ = render_whole(run)
    whole = run.plant(*run.plant_means(means))
    k, steps = run.k, means.shape[1] // run.k
    cuts = [0, 1, 8, 130, 776, steps]
    lags = Lags()
    parts = [
        run.plant(*run.plant_means(means[:, a * k : b * k]), a, lags)
        for a, b in zip(cuts, cuts[1:], strict=False)
    ]
    for f in fields(whole):
        kept = getattr(whole, f.name)
        if isinstance(kept, np.ndarray):
            joined = np.concatenate([getattr(p, f.name) for p in parts])
            np.testing.assert_array_equal(joined, kept, err_msg=f.name)
        else:
            assert {getattr(p, f.name) for p in parts} == {kept}, f.name


@pytest.mark.parametrize("rules", [True, False])
def test_a_streamed_run_renders_each_step_once(tmp_path, monkeypatch, rules):
    # issue 30: every chunk rendered once, with or without rules, also where the rules need
    # the running median (a checkpoint among a violation's causes: its samples are read again
    # from what the run kept, powermodel.stream.Retained, not rendered again)
    from powermodel.engine.run import Run
    from powermodel.rules import load_rules
    from powermodel.rules import streamed as measured
    from powermodel.stream import Measures

    scenario = load_scenario(REFERENCE, {**TWO_DAYS, "workload.variation": {"step_cv": 0.05}})
    rendered, medians = [], []
    render, find = Run.render, measured._medians
    monkeypatch.setattr(
        Run, "render", lambda run, lo, hi: rendered.append((lo, hi)) or render(run, lo, hi)
    )
    monkeypatch.setattr(measured, "_medians", lambda *a: medians.append(a) or find(*a))
    from powermodel import stream as streamed

    kept_in, retained = [], streamed.Retained

    class Recorded(retained):  # where the samples read again are kept: beside the file
        def __init__(self, *args):
            super().__init__(*args)
            kept_in.append(Path(self.folder))

    monkeypatch.setattr(streamed, "Retained", Recorded)
    measures = Measures(load_rules(SHIPPED) if rules else [])
    stream(scenario, tmp_path / "parts.parquet", chunk=10_007, measures=measures)
    assert kept_in == ([tmp_path] if rules else [])
    n = scenario.simulation.n_steps
    assert len(rendered) == 17  # 48 h: 2 h, 15 chunks of 3 h, 1 h (Course.ranges)
    assert [lo for lo, _ in rendered] == [0, *(hi for _, hi in rendered[:-1])]
    assert rendered[-1][1] == n
    assert len(medians) == rules  # the held path: the checkpoint's causes measured again
    assert not [p for p in tmp_path.iterdir() if p.name != "parts.parquet"]


KILLED = """
import os, signal, sys
from powermodel import load_scenario, stream as streamed
from powermodel.rules import load_rules
from powermodel.stream import Measures, stream
add, adds = streamed.Retained.add, []

def add_then_die(self, *piece):
    add(self, *piece)
    adds.append(1)
    if len(adds) == 3:
        for file in self.files.values():
            file.flush()
        print(sum(f.tell() for f in self.files.values()), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

streamed.Retained.add = add_then_die
scenario = load_scenario(sys.argv[1], {"simulation.duration": "12h"})
stream(scenario, sys.argv[2], chunk=5_003, measures=Measures(load_rules(sys.argv[3])))
"""


def test_a_killed_streamed_run_leaves_no_retained_samples(tmp_path):
    # issue 30: the samples the rules keep (up to 7.9 GB for a year) are in files without a
    # name, so a run killed with SIGKILL (no clean-up runs) leaves none of them behind, beside
    # the output or in TMPDIR; what it leaves is its staged part of the output, named as such
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    out = tmp_path / "out" / "killed.parquet"
    out.parent.mkdir()
    run = subprocess.run(
        [sys.executable, "-c", KILLED, REFERENCE, str(out), SHIPPED],
        env={**os.environ, "TMPDIR": str(temporary)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == -signal.SIGKILL, run.stderr
    assert int(run.stdout) > 0  # the samples were written before the kill
    assert not list(temporary.iterdir())
    assert not out.exists()
    assert all("killed.parquet" in p.name for p in out.parent.iterdir())


def test_a_failed_write_leaves_no_file(tmp_path, monkeypatch):
    # the writer's thread fails at its third chunk: the error reaches the caller, and neither
    # the file nor its staged part is left
    from powermodel import export

    write, calls = export.append_chunk, []

    def failing(*args):
        calls.append(1)
        if len(calls) == 3:
            raise RuntimeError("encoder failed")
        return write(*args)

    monkeypatch.setattr(export, "append_chunk", failing)
    scenario = load_scenario(REFERENCE, TWO_DAYS)
    with pytest.raises(RuntimeError, match="encoder failed"):
        stream(scenario, tmp_path / "parts.parquet", chunk=10_000)
    assert list(tmp_path.iterdir()) == []
