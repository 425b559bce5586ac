"""Bad input to the scenario schema, the engine and the command line, as issue 10 found it:
each case reproduces a defect (a hang, a traceback, unbounded memory, a silent wrong answer, a
misleading message) and asserts the one-line refusal that replaces it.

Expected messages are the project's own wording; numbers come from the schema's bounds
(powermodel/scenario/) and the reference preset (Llama 3, 16,384 H100).
"""

from __future__ import annotations

import importlib
import math
import time
import tracemalloc

import numpy as np
import pytest
import xarray as xr
from test_weather import _write_tmy3

from powermodel import cli, load_scenario, metrics, simulate
from powermodel.engine.derive import derive
from powermodel.engine.timeline import recoveries, timeline
from powermodel.errors import ScenarioError
from powermodel.models import events
from powermodel.models.thermal import leakage_power
from powermodel.rules import Rule, RuleError, check, describe, load_rules

REFERENCE = "llama3-405b-16k-h100"
HOUR = ["--set", "simulation.duration=1h"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """The CLI in-process: exit code, stdout, stderr."""
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def refused(capsys, *argv: str, match: str, within: float = 10.0) -> None:
    """The command ends at once with one line naming the problem, and exit code 1."""
    started = time.perf_counter()
    code, _, err = run(capsys, *argv)
    assert time.perf_counter() - started < within
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and match in lines[0], err


# --- severe 3: recovery times are bounded, so the timeline cannot hang --------------------------


@pytest.mark.parametrize(
    ("setting", "match"),
    [
        ("checkpoint.blocking_time=-1e7", "has no unit"),
        ("checkpoint.blocking_time=-1e7s", "is negative"),
        ("reliability.restart_time=inf", "has no unit"),
        ("reliability.restart_time=1e400s", "is not a finite duration"),
        ("reliability.restart_time=40d", "must be at most 30d"),
        ("reliability.stall_time=-1s", "is negative"),
        ("reliability.causes.0.restart_time=1e9d", "must be at most 30d"),
    ],
)
def test_unphysical_recovery_times_are_refused_at_once(capsys, setting, match):
    # issue 10: these hung in events._draw_interruptions, growing 1.6 GB a minute
    refused(capsys, "run", REFERENCE, *HOUR, "--set", setting, match=match)


def test_the_timeline_refuses_negative_or_infinite_down_times():
    # the model's own guard, for callers of the pure function beside the schema's bounds
    rng = np.random.default_rng(0)
    for seconds in (-1.0, np.inf):
        recovery = events.Recovery(((events.State.FAILED_IDLE, seconds),), loses_work=True)
        with pytest.raises(ValueError, match="finite and non-negative"):
            events.job_timeline(3600.0, np.array([1e-3]), [recovery], (), 600.0, 1.0, 1.0, rng)


def test_checkpoint_times_implied_by_size_and_bandwidth_are_bounded():
    # review of issue 10: 1e9 GB read at 1e-300 GB/s was an infinite reload (a traceback)
    with pytest.raises(ScenarioError, match="greater than or equal to 0.001"):
        load_scenario(REFERENCE, {"checkpoint.read_bandwidth": 1e-300})
    with pytest.raises(ScenarioError, match="takes 1.16e\\+04 days, more than 30d"):
        load_scenario(REFERENCE, {"checkpoint.size": 1e6, "checkpoint.read_bandwidth": 1e-3})
    with pytest.raises(ScenarioError, match="more than a day: raise write_bandwidth"):
        load_scenario(REFERENCE, {"checkpoint.size": 1e9})


# --- medium 4: memory follows the events, not the rates ------------------------------------------


def test_memory_follows_the_events_not_the_failure_rate():
    # issue 10: rate_scale=1e6 on a week peaked at 2.4 GB for 887 events; 1e12 asked for 3 TiB.
    # The schema stops at 1,000 times the Llama 3 rates; at that bound a week's timeline is
    # bounded by the recovery time (about 13 min after each failure), not by the rate.
    with pytest.raises(ScenarioError, match="less than or equal to 1000"):
        load_scenario(REFERENCE, {"reliability.rate_scale": 1e6})
    sc = load_scenario(REFERENCE, {"simulation.duration": "7d", "reliability.rate_scale": 1000.0})
    derived = derive(sc)
    down = np.array([r.duration for r in recoveries(sc, derived)])
    expected = events.expected_interruptions(sc.simulation.duration, derived.rates, down)
    tracemalloc.start()
    line = timeline(sc, derived)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    # a renewal process: the count lies within a few standard deviations of its mean
    assert abs(line.event_time.size - expected) < 5 * math.sqrt(expected)
    assert peak < 20e6  # bytes: tens of bytes an event, not gigabytes


def test_the_run_refuses_a_scenario_of_a_million_interruptions():
    sc = load_scenario(
        REFERENCE,
        {
            "simulation.duration": "3000d",
            "simulation.dt": "1h",
            "cooling.dt": "1h",
            "reliability.rate_scale": 1000.0,
            "reliability.stall_time": "0s",
            "reliability.restart_time": "0s",
            "reliability.planned_downtime": "0s",
            "checkpoint.blocking_time": "0s",
            "workload.startup_ramp": "0s",
        },
    )
    with pytest.raises(ScenarioError, match="more than 1,000,000"):
        timeline(sc)


def test_gpu_count_is_bounded(capsys):
    # issue 10: cluster.n_gpus=1e30 gave HTTP 500 in the dashboard
    refused(
        capsys,
        "run",
        REFERENCE,
        "--set",
        "cluster.n_gpus=1e30",
        match="must be at most 10,000,000 (got 1e+30)",
    )


# --- medium 7: infinite and overflowing values are one line ------------------------------------


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["--set", "simulation.duration=inf"], "has no unit"),
        (["--set", "simulation.duration=1e400s"], "is not a finite duration"),
        (["--set", "simulation.dt=inf"], "has no unit"),
        (["--set", "checkpoint.async_blocking_time=infs"], "cannot read 'infs'"),
        (["--set", "checkpoint.async_blocking_time=1e400s"], "is not a finite duration"),
        (["--set", "reliability.rate_scale=inf"], "finite number"),
        (["--set", "cluster.storage_power_per_gpu=1e308"], "less than or equal to 10000"),
        ([*HOUR, "--resample", "1e400s"], "is not a finite duration"),
        ([*HOUR, "--resample", "60"], "has no unit"),
    ],
)
def test_infinite_values_are_one_line(capsys, argv, match):
    refused(capsys, "run", REFERENCE, *argv, match=match)


@pytest.mark.parametrize("seeds", ["0", "-1", "100000000"])
def test_a_seed_count_beyond_the_bound_is_refused_before_any_run(capsys, seeds):
    # found in review: --seeds 100000000 ran until killed, its results piling up
    refused(
        capsys, "check", REFERENCE, *HOUR, "--rules", "ercot-5s", "--seeds", seeds,
        match="--seeds must be 1 to 1,000", within=5.0,
    )  # fmt: skip


def test_a_run_that_would_not_fit_in_memory_is_refused_before_it_starts(capsys, monkeypatch):
    # issue 10: 7 days at 10 ms died at 7.3 GB; now the estimate (256 B a step, measured)
    # is checked against the memory available before any work
    engine = importlib.import_module("powermodel.engine.preflight")  # the memory budget's
    monkeypatch.setattr(engine, "available_memory", lambda: 4 * 10**9)
    refused(
        capsys,
        "run",
        REFERENCE,
        "--set",
        "simulation.duration=7d",
        "--set",
        "simulation.dt=10ms",
        match="60,480,000 steps of 10ms need about 15.5 GB and 4.0 GB is available",
        within=5.0,
    )


# --- medium 8: deep nesting ---------------------------------------------------------------------


def test_deeply_nested_toml_is_refused(capsys, tmp_path):
    # issue 10: RecursionError, a traceback in the CLI and HTTP 500 in the dashboard
    refused(capsys, "run", REFERENCE, "--set", "x=" + "[" * 500 + "]" * 500, match="nested")
    deep = tmp_path / "deep.toml"
    deep.write_text(f'extends = "{REFERENCE}"\n[' + ".".join(["a"] * 600) + "]\nb = 1\n")
    refused(capsys, "run", str(deep), match="nested more than 12 deep")
    rules = tmp_path / "rules.toml"
    rules.write_text("[r]\nx = " + "[" * 2000 + "]" * 2000 + "\n")
    with pytest.raises(RuleError, match="nested"):
        load_rules(str(rules))


# --- medium 9: TMY3 weather runs ----------------------------------------------------------------


def test_tmy3_weather_runs_and_says_what_it_lacks(capsys, tmp_path):
    # issue 10: the registered demand needed the EPW's design conditions, validate said "ok"
    # and the run failed. A TMY3 file has no design day: the run goes on without a registered
    # demand, and the rules that refer to it ask for grid.registered_demand.
    tmy3 = tmp_path / "723170TYA.csv"
    _write_tmy3(tmy3)
    over = ["--set", f'site.weather="{tmy3}"', *HOUR]
    code, out, _ = run(capsys, "validate", REFERENCE, *over)
    assert code == 0 and "has no ASHRAE design day" in out and "grid.registered_demand" in out
    sc = load_scenario(REFERENCE, {"site.weather": str(tmy3), "simulation.duration": "1h"})
    assert sc.site.timezone == "Etc/GMT+5"  # the file brings its zone
    ds = simulate(sc)
    assert math.isnan(ds.attrs["registered_demand"])
    with pytest.raises(RuleError, match="set grid.registered_demand"):
        check(ds, load_rules("nprr1191-down"))
    (result,) = check(ds, load_rules("nprr1191-down"), registered_demand=25.0)
    assert result.limit == pytest.approx(1.25)  # 5 % of 25 MW, the lesser of it and 20 MW/min


# --- low --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        # start dates outside what nanosecond timestamps hold wrapped silently (3000 began 1831)
        ({"simulation.start": "3000-01-01T00:00:00"}, "leaves the span 1677-09-22T00:00 to 2262"),
        ({"simulation.start": "1600-01-01T00:00:00"}, "leaves the span"),
        # found in review: "the run 1-01-01 to 1-01-02", and a run on the last day read
        # "2262-04-11 to 2262-04-11 leaves ... to 2262-04-11"
        ({"simulation.start": "0001-01-01T00:00:00"}, "the run 0001-01-01T00:00 to 0001-02-24"),
        ({"simulation.start": "2262-04-10T12:00:00"}, "2262-06-03T12:00 leaves the span"),
        # found by tests/test_hostile.py (issue 30's CI): a run ending past the year 9999 raised
        # OverflowError, a traceback, from the dashboard's date box
        ({"simulation.start": "9999-12-31"}, "9999-12-31T00:00 to past the year 9999 leaves"),
        ({"reliability.restart_time": "1e300h"}, r"at most 30d \(got '3\.6e\+303s'\)"),
        # a communication phase below idle gave negative gpu_power at 100 ms
        ({"workload.trough_depth": 0.99}, "below the H100-SXM's idle 80 W"),
        ({"workload.trough_depth": 0.99}, "lower workload.trough_depth to at most 0.89"),
        # blocking_time=-1 ran with nonsense (3.3 % effective training time, "nan MW" swing)
        ({"checkpoint.blocking_time": "-1s"}, "is negative"),
        # step_time -5 was refused for the wrong reason, 0 silently replaced
        ({"workload.step_time": "-5s"}, "is negative"),
        ({"workload.step_time": "0s"}, "must be at least 1ms"),
        # storage_power=1e308 gave NaN everywhere (the key is now per GPU)
        ({"cluster.storage_power_per_gpu": 1e308}, "less than or equal to 10000"),
        # a duration without a unit was seconds to one reader and days to another
        ({"simulation.duration": 7}, "7 has no unit"),
    ],
)
def test_low_items_are_refused_with_the_reason(overrides, match):
    with pytest.raises(ScenarioError, match=match):
        load_scenario(REFERENCE, overrides)


def test_a_gpu_never_draws_less_than_its_leakage():
    # found by the deep hypothesis run: with fans nominal up to a 60 °C inlet the phases hold
    # at a hot die, and the leakage the simulation takes off as the die runs cooler exceeded
    # what a locked (-4.4 MW at a 0.1 lock) or deep trough (-2.0 MW at 0.85) phase draws.
    # A locked clock now keeps the leakage at that die, and a phase below it is refused
    hot = {"simulation.duration": "10min", "cluster.fans.temp_nominal": 60.0}
    locked = load_scenario(REFERENCE, {**hot, "mitigation.clock_lock": 0.1})
    ds = simulate(locked)
    # the floor: every GPU's leakage at the coldest die of the run, while it trains
    floor = locked.cluster.n_gpus * float(
        leakage_power(ds["gpu_temp"].values.min(), 105.0, 65.0, 0.04115)
    )  # the H100's leakage at 65 °C and its coefficient (catalogue)
    training = ds["job_state"].values == 0
    assert ds["gpu_power"].values[training].min() * 1e6 >= floor * (1 - 1e-9)
    with pytest.raises(ScenarioError, match=r"below the H100-SXM's leakage at the phases' die"):
        load_scenario(REFERENCE, {**hot, "workload.trough_depth": 0.85})


def test_a_derived_step_time_keeps_the_bounds_a_given_one_has():
    # one pair of bounds (scenario.STEP_TIME_BOUNDS) for step_time given or derived from the
    # model: the derived check had its own copy of the schema's numbers
    with pytest.raises(ScenarioError, match="workload.step_time: must be at most 1h"):
        load_scenario(REFERENCE, {"workload.step_time": "2h"})
    huge = {
        "workload.model_params": 1e16,
        "cluster.n_gpus": 8,
        "simulation.duration": "1h",
        "workload.parallelism": None,  # the 6·N·D step: one node holds no replica of the layout
    }
    with pytest.raises(ScenarioError, match=r"gives a step of 3\.1e\+08 s, outside 1ms to 1h"):
        derive(load_scenario(REFERENCE, huge))


def test_a_million_gpus_ask_for_a_bigger_batch():
    # issue 10: refused with "raise workload.edge_rate"; the batch is what must grow. Without
    # the parallel layout the 6·N·D step at a million GPUs is too short:
    plain = {"cluster.n_gpus": 1_000_000, "simulation.duration": "1h", "workload.parallelism": None}
    sc = load_scenario(REFERENCE, plain)
    with pytest.raises(ScenarioError, match="grow the global batch workload.tokens_per_step"):
        simulate(sc)
    bigger = load_scenario(sc, {"workload.tokens_per_step": 64 * 2**20})
    assert simulate(bigger).attrs["step_time"] > 0.3  # a 64M-token batch: 0.4 s a step
    # with the reference's layout a million GPUs hold 7,812 whole 128-GPU replicas (999,936
    # GPUs, 64 idle in the hall, issue 28); 16M tokens would be 0.26 sequences of 8,192 a
    # replica, so the batch grows to the reference's 1,024 tokens a GPU, and says so
    grown = load_scenario(REFERENCE, {"cluster.n_gpus": 1_000_000})
    assert (grown.cluster.n_gpus, grown.cluster.idle_gpus) == (999_936, 64)
    assert grown.workload.tokens_per_step == 1_023_934_464
    assert any("becomes 1,023,934,464" in note for note in grown.notes)
    named = {"cluster.n_gpus": 999_936, "workload.tokens_per_step": 1_023_934_464}
    assert derive(load_scenario(REFERENCE, named)).step_time == derive(grown).step_time
    layout = {"cluster.n_gpus": 999_936, "simulation.duration": "1h"}
    bigger = load_scenario(REFERENCE, {**layout, "workload.tokens_per_step": 64 * 2**20})
    # 1.05 micro-batches a replica: the bubble, 15/(8 · 1.05) of the work, outlasts it (1.04 s)
    assert simulate(bigger).attrs["step_time"] > 0.3


def test_rule_files_are_read_or_refused_in_one_line(tmp_path):
    cases = {
        b"\xff\xfe[r]\n": "not a text file in UTF-8",
        b'[r]\nname = "x"\ntitle = "t"\n': "remove its 'name' key",
        b'[r]\ntitle="t"\nsource="s"\nstatus="quoted"\nwindow="1e400s"\nstatistic="range"\n'
        b"limit=1\n": "not a finite duration",
        b'[r]\ntitle="t"\nsource="s"\nstatus="quoted"\nwindow="5s"\nstatistic="range"\n'
        b"limit=inf\n": "finite number",
        b'[r]\ntitle="t"\nsource="s"\nstatus="quoted"\nwindow="5s"\nstatistic="range"\n': (
            "needs limit, limit_fraction or both"
        ),
        # found in review: "window: Input should be less than or equal to 86400", in seconds
        # where the scenario's messages say durations; now one explanation serves both
        b'[r]\ntitle="t"\nsource="s"\nstatus="quoted"\nwindow="2d"\nstatistic="range"\n'
        b"limit=1\nwndow=1\n": r"rule r: window: must be at most 1d \(got '2d'\); unknown key "
        r"'wndow' \(did you mean 'window'\?\)$",
    }
    for i, (text, match) in enumerate(cases.items()):
        path = tmp_path / f"r{i}.toml"
        path.write_bytes(text)
        with pytest.raises(RuleError, match=match):
            load_rules(str(path))


def test_relative_extends_is_relative_to_the_file(tmp_path, monkeypatch):
    # issue 10: a relative `extends` resolved against the working directory
    (tmp_path / "sites").mkdir()
    (tmp_path / "sites" / "base.toml").write_text(
        f'extends = "{REFERENCE}"\n[cluster]\nn_gpus = 4096\n'
    )
    (tmp_path / "sites" / "hall.toml").write_text('extends = "base.toml"\nname = "hall"\n')
    monkeypatch.chdir(tmp_path)  # not the files' folder
    sc = load_scenario("sites/hall.toml")
    assert (sc.name, sc.cluster.n_gpus) == ("hall", 4096)
    (tmp_path / "sites" / "loop.toml").write_text('extends = "loop.toml"\n')
    with pytest.raises(ScenarioError, match="loops back"):
        load_scenario(tmp_path / "sites" / "loop.toml")


def test_a_relative_weather_path_in_a_file_is_relative_to_the_file(tmp_path, monkeypatch):
    # found in closing issue 10: `extends` was beside the file, a weather path in the same file
    # was looked for in the working folder
    (tmp_path / "sites").mkdir()
    _write_tmy3(tmp_path / "sites" / "723170TYA.csv")
    (tmp_path / "sites" / "hall.toml").write_text(
        f'extends = "{REFERENCE}"\n[site]\nweather = "723170TYA.csv"\n'
    )
    monkeypatch.chdir(tmp_path)  # not the file's folder, where no such weather file lies
    sc = load_scenario("sites/hall.toml")
    assert sc.site.weather == str(tmp_path / "sites" / "723170TYA.csv")
    assert sc.site.timezone == "Etc/GMT+5"  # and the file brings its zone
    # an override's path is the user's own, relative to where they are
    sc = load_scenario("sites/hall.toml", {"site.weather": "sites/723170TYA.csv"})
    assert sc.site.weather == "sites/723170TYA.csv"
    (tmp_path / "sites" / "gone.toml").write_text('[site]\nweather = "gone.epw"\n')
    with pytest.raises(ScenarioError, match="gone.epw"):
        load_scenario("sites/gone.toml")


def _rule(**fields) -> Rule:
    base = {"name": "r", "title": "", "source": "", "status": "proposal", "limit": 1.0}
    return Rule.model_validate(base | fields)


def test_a_rule_on_reactive_power_reads_in_mvar():
    # found in review: a rule on grid_reactive_power printed "<= 1 MW"
    assert _rule(signal="grid_reactive_power", statistic="range", window="5s").unit == "Mvar"
    assert _rule(signal="grid_reactive_power", statistic="rate", window="1min").unit == ("Mvar/min")
    assert _rule(statistic="average_slope", window="1min").unit == "MW/min"
    assert describe(_rule(signal="grid_reactive_power", statistic="range", window="5s")) == (
        "grid_reactive_power, range (both) in 5s <= 1 Mvar"
    )


def test_a_reading_over_a_partial_average_is_no_verdict():
    # found in review: a 1-d average on a 1-h run gave FAIL, worst at 00:00:13: near the
    # start the rolling mean averages fewer samples, which no meter reports
    times = np.arange(3600) * np.timedelta64(1, "s") + np.datetime64("2025-07-01")
    swinging = 100.0 + 10.0 * np.sign(np.sin(2 * np.pi * np.arange(3600) / 10.0))  # ±10 MW
    ds = xr.Dataset({"grid_power": ("time", swinging)}, coords={"time": times}, attrs={"dt": 1.0})
    longer = r"looks at 86405s at a time, longer than the profile \(1h\)"
    with pytest.raises(RuleError, match=longer):
        check(ds, [_rule(averaging="1d", window="5s", statistic="range")])
    # a 15-min average of a 10-s swing is flat: 1 MW/min is never broken once it is whole
    (result,) = check(ds, [_rule(averaging="15min", window="1min", statistic="rate")])
    assert result.passed and len(result.violations) == 0
    assert result.worst < 0.2  # MW/min: whole averages move 20 MW × 6 s / 900 s a minute


def test_one_refused_rule_leaves_the_others_reported(capsys):
    # issue 10: ieso-sso said "dt <= 5 ms" in one place and "0.002 s" in another, and one
    # refused rule made check exit 1 with no result for the others
    code, out, err = run(capsys, "check", REFERENCE, *HOUR, "--rules", "ercot-5s,ieso-sso")
    assert "ercot-5s" in out and "cannot say" in out
    ercot = next(line for line in out.splitlines() if line.startswith("ercot-5s proposal"))
    # the step that resolves the band, said once and the same way in the description
    assert out.count("dt <= 2ms") >= 2 and "5 ms" not in out and "0.002" not in out
    # ERCOT's 5-s rule is broken by every checkpoint (README): violated, so exit 3, not 1
    assert "FAIL" in ercot and code == 3 and err == ""


def test_validate_runs_every_check_the_run_makes(capsys):
    # issue 10: validate printed "ok" for scenarios whose run then failed
    refused(
        capsys,
        "validate",
        REFERENCE,
        "--set",
        "simulation.duration=90s",
        match="cooling.dt (1min) must be a whole number",
    )
    refused(
        capsys,
        "validate",
        REFERENCE,
        "--set",
        # a step shorter than one power edge, which only the waveform's check finds (999,936
        # GPUs at the reference's batch did, before the batch grew with the job: issue 28)
        "workload.edge_rate=0.01",
        match="grow the global batch",
    )


def test_weather_name_never_reads_a_file_from_uploaded_text():
    from powermodel.scenario import loads_scenario

    with pytest.raises(ScenarioError, match="not a path"):
        loads_scenario('[site]\nweather = "/etc/passwd"\n')


def test_a_preset_is_read_by_name_whatever_lies_in_the_working_folder(tmp_path, monkeypatch):
    (tmp_path / REFERENCE).mkdir()  # a folder named like the preset
    monkeypatch.chdir(tmp_path)
    assert load_scenario(REFERENCE).name == REFERENCE


@pytest.mark.parametrize(
    "overrides",
    [
        {"simulation.duration": "1d"},
        {
            "simulation.duration": "1d",
            "mitigation.storage": [{"location": "site", "power": 5.0, "energy": 1.25}] * 8,
        },
        {
            # a timeline of segments: a checkpoint every 10 ms for an hour
            "simulation.duration": "1h",
            "workload.step_time": "10ms",
            "checkpoint.interval": "10ms",
            "checkpoint.blocking_time": "10ms",
            "workload.edge_rate": 1000.0,
        },
    ],
    ids=["reference", "eight batteries", "a checkpoint every 10 ms"],
)
def test_the_memory_estimate_holds_a_runs_peak(overrides):
    # review of issue 10: batteries (5.7 times) and timeline segments (2.7 times) were under
    # the estimate; the run's traced peak, metrics included, stays under it
    from powermodel.simulate import memory_estimate

    sc = load_scenario(REFERENCE, overrides)
    simulate(load_scenario(REFERENCE, {**overrides, "simulation.duration": "1h"}))  # JIT: once
    tracemalloc.start()
    metrics(simulate(sc))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < memory_estimate(sc)


def test_the_suite_runs_on_what_the_app_installs():
    # issue 10: the [test] extra pinned pandas<3 while the app installed pandas 3, so the suite
    # never tested what users run. The app now pins pandas 2 as the test tools need; every
    # installed dependency satisfies the app's own requirements.
    from importlib.metadata import requires, version

    from packaging.requirements import Requirement

    app = [Requirement(r) for r in requires("powermodel") if "extra ==" not in r]
    assert any(r.name == "pandas" and not r.specifier.contains("3.0") for r in app)
    for requirement in app:
        assert requirement.specifier.contains(version(requirement.name), prereleases=True), (
            requirement
        )
