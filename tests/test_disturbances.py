"""Grid disturbances and the site's ride-through (issue 15, acceptance 1, 2, 3 and 6).

Sags at the connection, read worst-phase and positive-sequence behind the site's transformers,
against the supplies' immunity curve and the UPS's window; the three-in-a-minute latch of the
NERC July 2024 event [S, nerc_incident_2024]; the return, the recharge and the balance at the
connection; the crash a loss of the servers' power puts in the job timeline; the requirements
shipped with their source and status. Expected values come from the curves' own edges
[S, itic], from Fortescue's components worked by hand, and from the scenario's own parameters.
"""

from __future__ import annotations

import math
from datetime import timedelta

import numpy as np
import pytest
from file_parsers import parse_aux, parse_dyr
from numpy.testing import assert_allclose, assert_array_equal

from powermodel import load_scenario, presets, simulate
from powermodel import ride_through as rt
from powermodel.cli import main
from powermodel.engine.facility import design_it_power, registered_demand
from powermodel.engine.timeline import GRID_CAUSE
from powermodel.errors import DataFileError, ScenarioError
from powermodel.models import disturbance as dm
from powermodel.models.events import State
from powermodel.rules import check, load_rules
from powermodel.scenario import catalogue
from powermodel.webapp.cache import SimulationCache
from powermodel.webapp.callbacks import Dashboard
from powermodel.webapp.controls import options, overrides, page_values, shown_values

NERC = "nerc-2024-07-virginia-1500mw-campus"
DT = 0.1  # the preset's step
SEQUENCE = 300.0  # the sequence starts 5 min into the run (19:00 of an 18:55 start)
THIRD = SEQUENCE + 32.8  # the third of six sags 16.4 s apart (presets/disturbances.toml)
REFERENCE = "llama3-405b-16k-h100"
# one job without failures, an hour: a sag at 30 min
QUIET = {
    "simulation.duration": "1h",
    "simulation.dt": "0.1s",
    "reliability.rate_scale": 0.0,
    "reliability.planned_count": 0,
}
AT = "2024-07-01T00:30:00"
SAG_STEP = int(1800 / 0.1)


def _step(seconds: float) -> int:
    return int(round(seconds / DT))


@pytest.fixture(scope="module")
def nerc():
    return simulate(load_scenario(NERC))


@pytest.fixture(scope="module")
def nerc_without_generators():
    return simulate(load_scenario(NERC, {"ride_through.generator": False}))


def _sag(voltage, duration, **chain):
    """The quiet reference job with one sag at 30 min, and its site's chain."""
    overrides = {
        **QUIET,
        "disturbance.start": AT,
        "disturbance.sags": [{"at": "0s", "duration": duration, "voltage": voltage}],
        **{f"ride_through.{k}": v for k, v in chain.items()},
    }
    return load_scenario(REFERENCE, overrides)


# --- acceptance 1: the NERC sequence, the latch, the compliant site, the crash ------------------


def test_the_nerc_sequence_latches_at_the_third_sag_until_the_manual_return(nerc):
    scenario = load_scenario(NERC)
    chain = scenario.ride_through
    assert_array_equal(nerc.disturbance_latched.values, [False, False, True, True, True, True])
    assert nerc.disturbance_transferred.values.all()  # 0.709 p.u. < the UPS's 0.85
    grid = nerc.grid_power.values
    before = grid[_step(THIRD) - 10 : _step(THIRD)].mean()
    assert before > 1000.0  # the campus at about 1,500 MW design (1,270-1,510 MW drawn)
    # the IT path leaves at once; the cooling and misc loads when the generators run (10 s)
    assert grid[_step(THIRD) + 1] < 0.1 * before
    held = grid[_step(THIRD + chain.generator_start) + 1 : _step(THIRD + chain.manual_return)]
    assert_allclose(held, 0.0, atol=1e-9)  # off the grid until the manual return, 4 h
    back = grid[_step(THIRD + chain.manual_return + chain.return_ramp) + 1]
    assert back > 0.9 * before
    # the first two sags: off for the sag, the UPS's 2 s and its 5-s walk-in, then back
    table = rt.report(nerc)
    assert_allclose(
        table["back after [s]"].values[:2],
        0.067 + chain.retransfer_delay + BACK_SHARE_OF_WALK_IN * chain.walk_in,
        atol=2 * DT,
    )
    # the third: back after the manual return and the return ramp's first 90 %
    assert_allclose(
        table["back after [s]"].values[2],
        chain.manual_return + 0.9 * chain.return_ramp,
        atol=2 * DT,
    )


BACK_SHARE_OF_WALK_IN = rt.BACK  # the load counts as back at 90 % of it


def test_the_generators_carry_the_load_and_the_jobs_train_through(nerc):
    base = simulate(load_scenario(NERC, {"disturbance": None}))
    # the servers never see the disturbance: IT power and states equal to the bit
    assert_array_equal(nerc.it_power.values, base.it_power.values)
    assert_array_equal(nerc.job_state.values, base.job_state.values)
    assert GRID_CAUSE not in set(nerc.event_cause.values)
    summary = rt.summary(nerc)
    assert summary["crashes"] == 0
    assert summary["largest load lost [MW]"] > 1000.0
    assert summary["energy on generators [MWh]"] > 4 * 1000.0  # 4 h at > 1,000 MW


def test_a_ride_through_compliant_site_stays_on():
    scenario = load_scenario(
        NERC,
        {
            "ride_through.count": 0,  # no latch
            "ride_through.retransfer_delay": "0s",
            "ride_through.walk_in": "0.5s",
        },
    )
    ds = simulate(scenario)
    assert not ds.disturbance_latched.values.any()
    table = rt.report(ds)
    # back within the sag, the walk-in's 90 % and a step of each interval's mean
    assert (table["back after [s]"].values <= 0.067 + 0.45 + 2 * DT).all()
    assert rt.summary(ds)["energy on generators [MWh]"] == 0.0
    # the whole campus on the grid from the last sag's return on
    after = slice(_step(SEQUENCE + 83), None)
    assert (ds.grid_share.values[after] == 1.0).all()
    assert (ds.generator_power.values == 0.0).all()


def test_servers_that_lose_power_crash_and_restart(nerc_without_generators):
    ds = nerc_without_generators
    scenario = load_scenario(NERC, {"ride_through.generator": False})
    chain = scenario.ride_through
    # the first two transfers spent the battery for the sag, the UPS's 2 s and half its
    # walk-in each (the load not yet back is on the battery): it runs out that much sooner
    used = 2 * (0.067 + chain.retransfer_delay + 0.5 * chain.walk_in)
    empty = THIRD + chain.autonomy - used
    crashed = ds.event_cause.values == GRID_CAUSE
    assert crashed.sum() == 8  # every workload of the campus
    times = (ds.event_time.values[crashed] - ds.time.values[0]) / np.timedelta64(1, "s")
    assert_allclose(times, empty, atol=1e-6)
    lost = ds.event_lost_work.values[crashed]
    interval = ds.attrs["checkpoint_interval"]
    # the work since each job's last checkpoint (none for a job that had just written one)
    assert (lost >= 0).all() and (lost <= interval).all() and (lost > 0).any()
    # without power until the manual return, then each job restarts
    it = ds.it_power.values
    # (an interval's edge and the return meet to within float rounding: a few mW at the last)
    assert_allclose(it[_step(empty) + 1 : _step(THIRD + chain.manual_return)], 0.0, atol=1e-6)
    states = ds.workload_job_state.values[0]
    k = _step(THIRD + chain.manual_return) + 1
    after = states[k:]
    order = [State.FAILED_IDLE, State.STARTING, State.LOADING, State.RAMP, State.RUNNING]
    firsts = [int(np.argmax(after == s)) for s in order]
    assert after[0] == State.FAILED_IDLE and firsts == sorted(firsts)
    summary = rt.summary(ds)
    assert summary["crashes"] == 8
    assert summary["tokens not trained"] > 0


# --- acceptance 2: the envelope's edges, both readings ----------------------------------------


@pytest.mark.parametrize(
    ("voltage", "duration", "rides"),
    [
        (0.70, "500ms", True),  # on ITIC's 70 % step, its edge included [S, itic]
        (0.699, "500ms", False),
        (0.80, "501ms", True),  # past 0.5 s the step is 80 %
        (0.799, "501ms", False),
        (0.0, "20ms", True),  # a 20-ms interruption is within the curve
        (0.0, "21ms", False),
    ],
)
def test_a_sag_inside_the_immunity_curve_changes_nothing_and_one_outside_trips(
    voltage, duration, rides
):
    scenario = _sag(voltage, duration, backup="none", transformers=["YNyn"])
    ds = simulate(scenario)
    base = simulate(load_scenario(REFERENCE, QUIET))
    if rides:
        assert_array_equal(ds.it_power.values, base.it_power.values)
        assert_array_equal(ds.job_state.values, base.job_state.values)
        assert_allclose(ds.grid_power.values, base.grid_power.values, rtol=1e-12)
        assert ds.event_cause.size == 0
    else:
        assert list(ds.event_cause.values) == [GRID_CAUSE]
        assert ds.it_power.values[SAG_STEP] < 0.7 * base.it_power.values[SAG_STEP]


@pytest.mark.parametrize(("voltage", "transfers"), [(0.85, False), (0.849, True)])
def test_the_ups_leaves_the_grid_just_outside_its_window(voltage, transfers):
    ds = simulate(_sag(voltage, "1s"))
    assert bool(ds.disturbance_transferred.values[0]) is transfers
    moved = bool(ds.grid_share.values[SAG_STEP + 1] < 1.0)
    assert moved is transfers


def test_an_unbalanced_sag_passes_on_positive_sequence_and_fails_on_the_worst_phase():
    # single phase to 0.3 p.u. for 100 ms: V1 = (0.3 + 1 + 1)/3 = 0.767 >= ITIC's 0.70, the
    # worst phase 0.3 < 0.70 (Fortescue, by hand)
    scenario = _sag([0.3, 1.0, 1.0], "100ms", backup="none", transformers=["YNyn"])
    table = rt.report(simulate(scenario))
    assert_allclose(table["supplies positive sequence [pu]"], 2.3 / 3, rtol=1e-12)
    assert_allclose(table["supplies worst phase [pu]"], 0.3, rtol=1e-12)
    assert table["immunity, worst phase"].iloc[0] == "trips"
    assert table["immunity, positive sequence"].iloc[0] == "rides through"
    # the site acts on the reading it is given: the worst phase by default
    assert simulate(scenario).event_cause.size == 1
    positive = _sag(
        [0.3, 1.0, 1.0], "100ms", backup="none", transformers=["YNyn"], measure="positive_sequence"
    )
    assert simulate(positive).event_cause.size == 0


def test_a_delta_wye_transformer_turns_phase_voltages_into_line_voltages():
    # behind a Dyn transformer each phase-to-neutral voltage is a primary line-to-line voltage
    # over √3 (the zero sequence blocked) [S, bollen2000]
    rng = np.random.default_rng(0)
    v = dm.phasors(rng.uniform(0, 1, (50, 3)), rng.uniform(-30, 30, (50, 3)))
    seen = np.abs(dm.through(v, ("Dyn",)))
    line = np.abs(v - np.roll(v, -1, axis=1)) / math.sqrt(3)
    assert_allclose(np.sort(seen, axis=1), np.sort(line, axis=1), rtol=1e-12)
    # the NERC sequence's sag: worst phase 0.5 at the connection, 0.709 behind the transformer
    reading = dm.readings(np.array([[0.5, 0.9, 0.9]]), None, ("Dyn",))
    expected = abs(0.5 - 0.9 * np.exp(-2j * np.pi / 3)) / math.sqrt(3)
    assert_allclose(reading.worst, min(expected, 0.9), rtol=1e-12)


# --- acceptance 3: the return, the recharge, the balance -------------------------------------


def test_the_connection_balances_and_the_battery_refills(nerc):
    grid, generator = nerc.grid_power.values, nerc.generator_power.values
    battery, recharge = nerc.ups_battery_power.values, nerc.recharge_power.values
    load = nerc.facility_power.values
    # grid + generators + UPS batteries = the site's load + the recharge, step by step
    assert_allclose(grid + generator + battery, load + recharge, rtol=0, atol=1e-6)
    # the stored change: what the batteries gave is refilled, η of the recharge's energy
    eta = load_scenario(NERC).ride_through.recharge_efficiency
    stored = (eta * recharge - battery).sum() * DT / 3600
    assert_allclose(stored, -nerc.ups_battery_deficit.values[-1], atol=1e-6)
    assert_allclose(nerc.ups_battery_deficit.values[-1], 0.0, atol=1e-6)
    # the recharge draws its rating, 10 % of the design IT power, while it refills
    scenario = load_scenario(NERC)
    rating = scenario.ride_through.recharge * design_it_power(scenario) / 1e6
    drawing = recharge[recharge > 0]
    assert_allclose(np.median(drawing), rating, rtol=1e-12)
    assert recharge.sum() * DT / 3600 > 0.0


def test_the_return_follows_its_ramp(nerc):
    chain = load_scenario(NERC).ride_through
    share = nerc.grid_share.values
    start = THIRD + chain.manual_return
    steps = _step(start) + np.arange(1, _step(chain.return_ramp) - 1)
    # interval means of a linear rise: the value at each interval's middle
    expected = ((steps + 0.5) * DT - start) / chain.return_ramp
    assert_allclose(share[steps], expected, atol=1e-9)


# --- acceptance 6: requirements with their source and status ----------------------------------


def test_every_shipped_requirement_cites_its_source_and_status():
    for req in rt.load_requirements():
        assert req.status in ("proposal", "in force", "quoted", "study assumption")
        assert "[S," in req.source or "[P," in req.source
    names = {r.name for r in rt.load_requirements()}
    assert {"ercot-nprr1308", "ercot-load-loss"} <= names


def _requirement(folder, status: str, kind: str, rest: str):
    """A requirements file of one requirement, ``rest`` its own keys (TOML lines)."""
    path = folder / "mine.toml"
    path.write_text(
        f'[mine]\ntitle = "x"\nsource = "[A]"\nstatus = "{status}"\nkind = "{kind}"\n{rest}'
    )
    return path


def test_a_requirement_file_with_an_unverified_curve_in_force_is_refused(tmp_path):
    curve = "verified = false\nvoltage_curve = [[0.5, 0.5], [inf, 0.9]]\n"
    path = _requirement(tmp_path, "in force", "ride_through", curve)
    with pytest.raises(DataFileError, match="not verified from a primary text"):
        rt.load_requirements(path)


def test_requirements_judge_what_they_can(nerc, tmp_path):
    shipped = rt.check(nerc, rt.load_requirements()).set_index("requirement")
    assert shipped.loc["ercot-nprr1308", "verdict"] == "not judged"  # shipped without numbers
    assert shipped.loc["ercot-load-loss", "verdict"] == "pass"  # 1,463 MW < 2,600 MW
    # a curve of one's own, verified: the NERC sags lie above 0.45 p.u. for 0.2 s...
    rest = 'verified = true\nvoltage_curve = [[0.2, 0.45], [inf, 0.9]]\nreturn_time = "10s"\n'
    path = _requirement(tmp_path, "proposal", "ride_through", rest)
    mine = rt.check(nerc, rt.load_requirements(path))
    assert mine["verdict"].iloc[0] == "fail"  # ...and the latch kept the site off for hours
    assert "4 of 6" in mine["detail"].iloc[0]


def test_a_disturbance_outside_the_run_is_refused():
    with pytest.raises(ScenarioError, match="outside the run"):
        load_scenario(
            REFERENCE,
            {
                **QUIET,
                "disturbance.sequence": "nerc-2024-07-virginia",
                "disturbance.start": "2024-07-01T00:59:00",
            },
        )
    with pytest.raises(ScenarioError, match="residual voltage"):
        _sag(50, "100ms")
    with pytest.raises(ScenarioError, match="unknown immunity curve"):
        _sag(0.5, "100ms", immunity="itci")


# --- acceptance 4: the planners' models, fitted and re-simulated -------------------------------


def test_the_fitted_dynamic_model_reproduces_the_site_after_a_sag(nerc):
    scenario = load_scenario(NERC)
    chain = scenario.ride_through
    fit = rt.site_model(nerc, 0)
    table = fit.comparison.set_index("quantity")["rmse_share_of_p0"]
    # re-simulated in Python against the site's own response to the first sag: within 1 % of
    # the pre-sag load for P and 2 % for Q (the recharge aside, which PERC1 cannot draw)
    assert table["P after the sag"] < 0.01
    assert table["Q after the sag"] < 0.02
    # the recharge (10 % of the design IT power for about a minute) is the model's largest
    # miss: stated, and bounded by it
    assert 0.02 < table["P after the sag, recharge included"] < 0.1
    # the fitted parameters are the site's own: the IT path ceases (its share of the load
    # before), and comes back after the UPS's settle over its walk-in
    response = rt.event_response(nerc, 0)
    before = response[response["time"] < 0]
    moved = 1.0 - response["p"].min() / before["p"].mean()
    assert_allclose(fit.perc1.Fcease, moved, rtol=0.01)
    assert_allclose(fit.perc1.t_recon, chain.retransfer_delay, atol=0.01)
    assert_allclose(fit.perc1.t_ramp, chain.walk_in, rtol=0.01)
    # the files parse in their documented syntax, numbers and all
    records = parse_dyr(fit.dyr)
    assert [r["model"] for r in records] == ["PERC1", "USRLOD"]
    assert_allclose(float(records[0]["rest"][1]), fit.perc1.Fcease, rtol=1e-9)
    (aux,) = parse_aux(fit.aux)
    assert_allclose(float(aux["Fcease"]), fit.perc1.Fcease, rtol=1e-9)


# --- the command line and the rule reports -------------------------------------------------


def test_the_ride_through_command_reports_and_writes_the_model(tmp_path, capsys):
    args = ["--set", "simulation.duration=1h", "--set", "simulation.dt=0.1s"]
    args += ["--set", "reliability.rate_scale=0"]  # the ten minutes before: training, periodic
    args += ["--set", "disturbance.sequence=nerc-2024-07-virginia"]
    args += ["--set", f"disturbance.start={AT}"]
    prefix = tmp_path / "site"
    assert main(["ride-through", REFERENCE, *args, "--model", str(prefix)]) == 0
    out = capsys.readouterr().out
    assert "6 disturbances" in out and "ercot-nprr1308 [proposal]: not judged" in out
    assert [r["model"] for r in parse_dyr((tmp_path / "site.dyr").read_text())] == [
        "PERC1",
        "USRLOD",
    ]
    assert parse_aux((tmp_path / "site.aux").read_text())
    # a scenario without a disturbance is told how to give one
    assert main(["ride-through", REFERENCE]) == 1
    assert "has no grid disturbance" in capsys.readouterr().err


def test_the_screen_command_flags_a_mode_on_the_step(tmp_path, capsys):
    # the reference's 6.13-s step puts its first line at 0.163 Hz: a lightly damped mode there
    # with a tight limit is flagged (exit 3); one far from every line is cleared (exit 0)
    short = ["--set", "simulation.duration=2h", *("--set", "reliability.rate_scale=0")]
    modes = tmp_path / "modes.toml"
    modes.write_text(
        '[[mode]]\nname = "on"\nfrequency = 0.163\ndamping = 0.05\ngain = 2.0\nlimit = 0.5\n'
    )
    assert main(["screen", REFERENCE, *short, "--modes", str(modes)]) == 3
    modes.write_text(
        '[[mode]]\nname = "off"\nfrequency = 0.09\ndamping = 0.05\ngain = 2.0\nlimit = 0.5\n'
    )
    assert main(["screen", REFERENCE, *short, "--modes", str(modes)]) == 0
    assert "clear" in capsys.readouterr().out


def test_rule_violations_in_a_disturbance_are_its_own(nerc):
    (result,) = check(nerc, load_rules("ercot-5s"))
    assert result.by_cause.get("grid disturbance", 0) >= 1
    table = result.violations
    own = table[table["cause"] == "grid disturbance"]
    seconds = (own["start"] - nerc.time.values[0]) / np.timedelta64(1, "s")
    # within the sequence and its return (a 5-s window may start up to 5 s before the first
    # sag), not elsewhere
    chain = load_scenario(NERC).ride_through
    assert ((seconds >= SEQUENCE - 5) & (seconds <= THIRD + chain.manual_return + 3600)).all()


# --- the generators' walk-on, the latch's floor, the bounds --------------------------------


def test_the_generators_take_the_it_path_over_their_ramp(nerc):
    chain = load_scenario(NERC).ride_through
    started = THIRD + chain.generator_start
    steps = _step(started) + np.arange(1, _step(chain.generator_ramp) - 1)
    it_path = nerc.it_power.values[steps] + nerc.facility_loss.values[steps]
    # the battery carries what the generators have not yet taken: linear, interval means at
    # each interval's middle
    taken = ((steps + 0.5) * DT - started) / chain.generator_ramp
    assert_allclose(nerc.ups_battery_power.values[steps] / it_path, 1.0 - taken, atol=1e-9)


def test_a_latched_site_never_returns_sooner_than_an_unlatched_one():
    ds = simulate(
        load_scenario(NERC, {"ride_through.manual_return": "0s", "ride_through.walk_in": "0s"})
    )
    chain = load_scenario(NERC).ride_through
    # the latch's return is at the earliest the sag's end and the UPS's settle
    table = rt.report(ds)
    assert (table["back after [s]"].values >= 0.067 + chain.retransfer_delay - DT).all()


def test_the_nerc_preset_is_listed_and_sized_to_1500_mw():
    assert NERC in presets()
    # the design-day facility power: 1,500 MW within 5 % (the issue's campus)
    assert_allclose(registered_demand(load_scenario(NERC)), 1500.0, rtol=0.05)


def test_a_noisy_frequency_record_is_refused_before_the_run():
    t = np.arange(0.0, 2400.0, 1.0)
    f = 60.0 + 4.0 * np.where(np.arange(t.size) % 2, 1.0, -1.0)  # 1,200 excursions past 57 Hz
    scenario = load_scenario(
        REFERENCE,
        {
            **QUIET,
            "disturbance.start": "2024-07-01T00:00:00",
            "disturbance.frequency": [[float(a), float(b)] for a, b in zip(t, f, strict=True)],
        },
    )
    with pytest.raises(ScenarioError, match="more than 1,000"):
        simulate(scenario)


def test_a_requirement_is_verified_by_true_or_false_only(tmp_path):
    path = _requirement(tmp_path, "proposal", "load_loss", 'verified = "yes"\nlimit = 100.0\n')
    with pytest.raises(DataFileError, match="verified"):
        rt.load_requirements(path)


def test_a_sequence_without_a_start_comes_five_minutes_into_the_run():
    scenario = load_scenario(REFERENCE, {**QUIET, "disturbance.sequence": "nerc-2024-07-virginia"})
    assert scenario.disturbance_start() == scenario.simulation.start + timedelta(minutes=5)
    # a run too short for five minutes before it: at its start; a run moved takes it along
    short = load_scenario(scenario, {"simulation.duration": "6min"})
    assert short.disturbance_start() == short.simulation.start
    moved = load_scenario(scenario, {"simulation.start": "2024-08-01T00:00:00"})
    assert moved.disturbance_start() == moved.simulation.start + timedelta(minutes=5)


def test_the_dashboard_adds_and_removes_a_sequence():
    base = load_scenario(REFERENCE, QUIET)
    added = load_scenario(base, overrides({"disturbance.sequence": "nerc-2024-07-virginia"}, base))
    assert len(added.disturbance.sags) == 6
    removed = load_scenario(added, overrides({"disturbance.sequence": None}, added))
    assert removed.disturbance is None
    choices = [o["value"] for o in options("disturbance.sequence")]
    assert "nerc-2024-07-virginia" in choices and "underfrequency-59-3" in choices


# --- issue 26, item 5: every disturbance counted, every verdict on numbers or said why not ------

SEQUENCES = list(catalogue("disturbance"))
SHORT = {**QUIET, "simulation.duration": "15min"}  # the 300-s trace fits after the 5-min lead
NARROW = {"ride_through.frequency_window": [59.5, 60.5]}  # the trace's choices: a narrower UPS


def _shipped(name: str, **more) -> object:
    return simulate(load_scenario(REFERENCE, {**SHORT, "disturbance.sequence": name, **more}))


def _events(name: str) -> tuple[int, int]:
    """Sags and frequency events of a shipped sequence, read from the file: each frequency
    trace there is one generation trip (presets/disturbances.toml)."""
    table = catalogue("disturbance")[name]
    return len(table.get("sags", [])), int("frequency" in table)


def _on_numbers(verdicts, summary) -> None:
    """Each verdict pass or fail on finite numbers, or not judged with its reason."""
    for row in verdicts.itertuples():
        assert row.verdict in ("pass", "fail", "not judged"), row
        assert "nan" not in row.detail.lower().split(), row
        assert row.detail, row
    assert math.isfinite(summary["largest load lost [MW]"])


@pytest.mark.parametrize("window", [{}, NARROW], ids=["default window", "narrow window"])
@pytest.mark.parametrize("name", SEQUENCES)
def test_every_shipped_sequence_is_counted_answered_and_judged_on_numbers(name, window):
    ds = _shipped(name, **window)
    sags, frequency = _events(name)
    kinds = list(ds.disturbance_kind.values)
    assert kinds.count("sag") == sags and kinds.count("frequency") == frequency
    summary = rt.summary(ds)
    assert summary["disturbances"] == sags + frequency
    _on_numbers(rt.check(ds, rt.load_requirements()), summary)
    table = rt.report(ds)
    f = table[table["kind"] == "frequency"]
    if frequency:
        assert_allclose(f["frequency [Hz]"], 59.3)  # the trace's nadir
        # 57-63 Hz holds 59.3 Hz: ridden through, nothing lost; 59.5-60.5 Hz does not
        assert list(f["UPS left the grid"]) == [bool(window)]
        if not window:
            assert list(f["load lost [MW]"]) == [0.0] and list(f["back after [s]"]) == [0.0]
            assert summary["ridden through"] == summary["disturbances"] - np.count_nonzero(
                table["UPS left the grid"] | table["servers lost power"]
            )


def test_a_frequency_excursion_starts_where_it_crosses_its_bound():
    # the trace's first piece, 60 Hz at 0 s to 59.3 Hz at 8 s, crosses 59.964 Hz (the 36-mHz
    # deadband) at 8·0.036/0.7 s and 59.5 Hz (a narrow window) at 8·0.5/0.7 s; it comes back
    # over the last, 59.8 Hz at 60 s to 60 Hz at 300 s, through 59.964 Hz at 60 + 240·0.82 s
    ridden = _shipped("underfrequency-59-3")
    start = np.datetime64(ridden.time.values[0])
    seconds = (ridden.disturbance_time.values - start) / np.timedelta64(1, "s")
    assert_allclose(seconds, [SEQUENCE + 8 * 0.036 / 0.7], atol=1e-6)
    assert_allclose(ridden.disturbance_duration.values, [60 + 240 * 0.82 - 8 * 0.036 / 0.7])
    moved = _shipped("underfrequency-59-3", **NARROW)
    seconds = (moved.disturbance_time.values - start) / np.timedelta64(1, "s")
    assert_allclose(seconds, [SEQUENCE + 8 * 0.5 / 0.7], atol=1e-6)
    assert moved.grid_share.values[int((SEQUENCE + 6.0) / DT)] < 1.0  # on the battery


def ups_chain(**kw) -> dm.Chain:
    """A UPS chain for the pure model's tests (ITIC-like immunity, the 57-63 Hz window, a
    3-in-60-s latch, 5 minutes of battery, generators after 10 s), with ``kw`` changed."""
    values = dict(
        backup="ups",
        immunity=(np.array([0.02, 0.5, 10.0, math.inf]), np.array([0.0, 0.7, 0.8, 0.9])),
        transfer=(np.array([0.004, math.inf]), np.array([0.0, 0.85])),
        frequency_window=(57.0, 63.0),
        count=3,
        count_window=60.0,
        retransfer_delay=2.0,
        manual_return=60.0,
        return_ramp=60.0,
        walk_in=5.0,
        autonomy=300.0,
        generator=True,
        generator_start=10.0,
    )
    values.update(kw)
    return dm.Chain(**values)


@pytest.mark.parametrize(
    ("low", "high", "transfers"),
    [(57.0, 63.0, False), (59.3, 63.0, False), (59.31, 63.0, True), (59.5, 60.5, True)],
)
def test_the_ups_leaves_on_a_frequency_outside_its_window_and_rides_one_inside(
    low, high, transfers
):
    # the model alone: one excursion to 59.3 Hz (a window edge is inside, as for sags)
    chain = ups_chain(
        immunity=(np.array([np.inf]), np.array([0.0])),
        transfer=(np.array([np.inf]), np.array([0.85])),
        frequency_window=(low, high),
        manual_return=3600.0,
    )
    o = dm.respond(np.array([5.0]), np.array([20.0]), np.array([np.nan]), chain, np.array([59.3]))
    assert o.transferred.tolist() == [transfers]
    assert len(o.it) == int(transfers)


def test_the_farthest_frequency_of_each_stretch_is_its_own():
    t = np.array([0.0, 8.0, 20.0, 60.0, 100.0, 110.0, 130.0])
    f = np.array([60.0, 59.3, 59.6, 59.8, 60.6, 60.8, 60.0])
    begin, end = dm.outside_window(t, f, 59.7, 60.3)
    # below 59.7 from 8·0.3/0.7 s to 20 + 40·0.5 s; above 60.3 from 60 + 40·0.625 s to
    # 110 + 20·0.625 s (linear pieces, worked by hand)
    assert_allclose(begin, [8 * 0.3 / 0.7, 85.0])
    assert_allclose(end, [40.0, 122.5])
    assert_allclose(dm.extremes(t, f, begin, end, 59.7, 60.3), [59.3, 60.8])
    assert dm.extremes(t, f, np.zeros(0), np.zeros(0), 59.7, 60.3).size == 0


def test_a_sequence_that_disturbs_nothing_is_not_judged_and_says_why(capsys):
    calm = {**SHORT, "disturbance.frequency": [[0.0, 60.01], [10.0, 60.0]]}  # within 36 mHz
    ds = simulate(load_scenario(REFERENCE, calm))
    assert ds.sizes["disturbance"] == 0
    verdicts = rt.check(ds, rt.load_requirements())
    assert set(verdicts["verdict"]) == {"not judged"}
    assert "no disturbance to judge" in verdicts["detail"].iloc[-1]
    assert rt.summary(ds)["largest load lost [MW]"] == 0.0
    args = [f"--set=disturbance.frequency={calm['disturbance.frequency']}"]
    args += [f"--set={k}={v}" for k, v in SHORT.items()]
    assert main(["ride-through", REFERENCE, *args]) == 0
    assert "0 disturbances" in capsys.readouterr().out


def test_a_return_the_run_ends_too_soon_to_see_is_not_judged(tmp_path):
    # one sag 2 min before the end of a 15-min run; a latch on the first transfer keeps the
    # site on backup for the manual return (4 h), past the run's end
    scenario = load_scenario(
        REFERENCE,
        {
            **SHORT,
            "disturbance.start": "2024-07-01T00:13:00",
            "disturbance.sags": [{"at": "0s", "duration": "1s", "voltage": 0.5}],
            "ride_through.count": 1,
        },
    )
    ds = simulate(scenario)
    assert ds.disturbance_latched.values.tolist() == [True]
    assert math.isnan(rt.report(ds)["back after [s]"].iloc[0])
    rest = 'verified = true\nvoltage_curve = [[inf, 0.4]]\nreturn_time = "{}"\n'
    # 119 s of run follow the sag: a 60-s return was due and not seen (fail); a 10-min one
    # may yet come after the run's end (not judged)
    for within, verdict in (("60s", "fail"), ("10min", "not judged")):
        path = _requirement(tmp_path, "proposal", "ride_through", rest.format(within))
        row = rt.check(ds, rt.load_requirements(path)).iloc[0]
        assert row["verdict"] == verdict, row["detail"]
    assert "lengthen the run" in row["detail"]


def test_the_issues_frequency_only_ride_through_counts_it_and_passes(capsys):
    args = ["--set", "simulation.duration=1h", "--set", "simulation.dt=0.1s"]
    args += ["--set", "disturbance.sequence=underfrequency-59-3"]
    assert main(["ride-through", REFERENCE, *args]) == 0
    out = capsys.readouterr().out
    assert "1 disturbances" in out and "ridden through: 1" in out
    assert "ercot-load-loss [study assumption]: pass: largest simultaneous loss 0.0 MW" in out
    # the site never left the grid: no return ramp, said so (not "nan")
    assert "return ramp [s]: none: the site never left the grid" in out
    assert "nan" not in out.lower().replace("nanosecond", "")


def test_the_grid_events_view_follows_each_sequence_chosen_in_the_sidebar(tmp_path):
    board = Dashboard(SimulationCache(), REFERENCE, SHORT, tmp_path.resolve(), 100_000)
    base = {"preset": REFERENCE}
    shown = shown_values(board.base(base))
    for name in [*SEQUENCES, *SEQUENCES[-2::-1], None]:  # each after another, and back
        state, error = board.assemble(base, *page_values(shown | {"disturbance.sequence": name}))
        assert error == ""
        note, choices, figure, _, table, summary, checks, _ = board.grid_events(
            state, "grid events", "0"
        )
        if name is None:
            assert note.startswith("this scenario has no grid disturbance") and table == []
            continue
        sags, frequency = _events(name)
        assert note.startswith(f"{sags + frequency} disturbances"), (name, note)
        assert [row["kind"] for row in table].count("frequency") == frequency
        assert len(choices) == len(table) == sags + frequency
        assert figure.data[-1].x.size == sags + frequency  # the markers of this scenario's
        assert {row["verdict"] for row in checks} <= {"pass", "fail", "not judged"}


# --- issue 26, item 3: a sequence's work grows with its length plus the run's, not their product


def _spread(count: int, **more) -> object:
    """The quiet reference job at 100 ms (a day unless ``more`` says), ``count`` sags 80 s
    apart from its start; without a UPS each one outside ITIC (0.3 p.u.) crashes the job."""
    sags = [{"at": f"{80 * i}s", "duration": "67ms", "voltage": 0.3} for i in range(count)]
    keys = {
        **QUIET,
        "simulation.duration": "1d",
        "disturbance.start": "2024-07-01T00:00:00",
        "disturbance.sags": sags,
        "ride_through.backup": "none",
        **more,
    }
    return load_scenario(REFERENCE, keys)


def test_the_disturbances_measured_all_at_once_are_those_measured_one_by_one():
    # the losses, returns and tokens of 40 sags, each read off the run by hand as the report
    # defines them (the second before, the most lost until back, the first step back)
    ds = simulate(_spread(40, **{"simulation.duration": "1h"}))
    table, dt = rt.report(ds), DT
    grid, share, event = ds.grid_power.values, ds.grid_share.values, ds.grid_event.values
    off = (share < rt.BACK) | (event == rt.NO_POWER)
    for i, row in table.iterrows():
        k = int(round(80 * i / dt))
        level = grid[k - 10 : k].mean() if k else grid[0]
        settle = k + math.ceil(row["duration [s]"] / dt) + 1
        end = settle + int(np.flatnonzero(~off[settle:])[0])
        assert_allclose(row["load before [MW]"], level, rtol=1e-12)
        assert_allclose(row["load lost [MW]"], max(level - grid[k : end + 1].min(), 0.0), atol=1e-9)
        assert_allclose(row["back after [s]"], (end - k) * dt, rtol=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_a_share_on_the_steps_is_its_value_at_their_midpoints_to_the_bit(seed):
    # interval_means holds a share over the steps between breakpoints instead of evaluating
    # it at each of millions of midpoints: the same numbers, exactly
    rng = np.random.default_rng(seed)
    t = np.unique(np.round(rng.uniform(-5.0, 50.0, int(rng.integers(1, 40))), int(seed % 3)))
    left, right = rng.choice([0.0, 0.3, 1.0], t.size), rng.choice([0.0, 0.3, 1.0], t.size)
    if seed % 2:
        left[1:] = right[:-1]  # continuous: ramps
    dt = float(rng.choice([0.1, 0.25, 0.3, 1.0, 7.0]))
    lo, n = int(rng.integers(-20, 10)), int(rng.integers(1, 400))
    mid = (lo + np.arange(n) + 0.5) * dt
    assert_array_equal(
        dm._at_step_midpoints((t, left, right), lo, n, dt, 1.0),
        dm._value_between_breakpoints((t, left, right), mid, 1.0),
    )


def test_a_noisy_frequency_record_is_refused_by_validate_before_any_run(capsys):
    t = np.arange(0.0, 2400.0, 1.0)
    f = 60.0 + 4.0 * np.where(np.arange(t.size) % 2, 1.0, -1.0)
    record = [[float(a), float(b)] for a, b in zip(t, f, strict=True)]
    args = [f"--set=disturbance.frequency={record}", "--set=disturbance.start=2024-07-01T00:00:00"]
    args += [f"--set={k}={v}" for k, v in QUIET.items()]
    assert main(["validate", REFERENCE, *args]) == 1
    assert "more than 1,000" in capsys.readouterr().err


def test_a_frequency_excursion_without_its_frequency_is_refused_in_words():
    # found in review: respond's frequency defaults to None, and an excursion (voltage NaN)
    # without it was numpy's IndexError
    with pytest.raises(ValueError, match="a frequency excursion \\(voltage NaN\\) needs its"):
        dm.respond(np.array([1.0]), np.array([1.0]), np.array([np.nan]), ups_chain())
