"""The grid side: the connection, rules as measurement chains, mitigations (issue 4)."""

from __future__ import annotations

import numpy as np
import pytest

from powermodel import load_scenario, metrics, simulate
from powermodel.analysis import max_swing
from powermodel.errors import PowerModelError
from powermodel.models import mitigation, signal
from powermodel.models.events import State
from powermodel.rules import RuleError, by_cause, check, load_rules, measure, read_trace
from powermodel.sensitivity import check_seeds, check_sensitivity
from powermodel.sizing import costs, size

REFERENCE = "llama3-405b-16k-h100"
QUIET = {"reliability.rate_scale": 0.0}  # no failures, so no checkpoints (Young/Daly)


# --- the connection ---------------------------------------------------------------------------


def test_grid_power_is_facility_power_without_storage_and_reactive_power_follows_the_curves():
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "2h"}))
    np.testing.assert_array_equal(ds["grid_power"].values, ds["facility_power"].values)
    sc = load_scenario(REFERENCE)
    # leading server supplies (standby chain, no rectifier in between): at the running load
    # ``it_power / (nodes · 19.8 kW)`` the preset's curve gives pf; Q = -P·tan(acos pf) for IT,
    # +P·tan(acos 0.95) for cooling and misc
    it, other = ds["it_power"].values, (ds["cooling_power"] + ds["misc_power"]).values
    pf = np.interp(
        it / (sc.cluster.n_nodes * sc.cluster.psu.capacity / 1e6),
        [0.1, 0.2, 0.5, 1.0],
        [0.90, 0.96, 0.98, 0.99],
    )
    expected = -it * np.tan(np.arccos(pf)) + other * np.tan(np.arccos(0.95))
    np.testing.assert_allclose(ds["grid_reactive_power"].values, expected, rtol=1e-9)
    # a double-conversion UPS shows the grid its rectifier's lagging 0.99 instead
    ups = simulate(
        load_scenario(
            REFERENCE, {"simulation.duration": "2h", "electrical.chain": "double-conversion"}
        )
    )
    assert np.all(ups["grid_reactive_power"].values > 0)


def test_voltage_change_of_a_swing_from_the_grid_strength():
    # IEC 61000-3-7 style estimate: dV/V = -(dP cos θ + dQ sin θ)/S_sc, θ = atan(X/R).
    # A 10 MW step at unity power factor on 2,400 MVA, X/R 10: -10·0.0995/2400 = -0.0415 %.
    from powermodel.models.grid import voltage_change

    assert voltage_change(10.0, 0.0, 2400.0, 10.0) == pytest.approx(
        -10 * np.cos(np.arctan(10)) / 2400
    )
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "2h"}))
    sc = load_scenario(REFERENCE)
    theta = np.arctan(sc.grid.x_r)
    expected = (
        1 - (ds["grid_power"] * np.cos(theta) + ds["grid_reactive_power"] * np.sin(theta)) / 2400.0
    )
    np.testing.assert_allclose(ds["grid_voltage"].values, expected.values, rtol=1e-12)


# --- acceptance 1: which events violate which rule --------------------------------------------


@pytest.fixture(scope="module")
def fine_day():
    """A day of the reference at 100 ms, failures three times as often (more events per run)."""
    sc = load_scenario(
        REFERENCE,
        {"simulation.duration": "1d", "simulation.dt": "0.1s", "reliability.rate_scale": 3.0},
    )
    return sc, simulate(sc)


def test_a_crash_moves_about_11_mw_in_the_ercot_window(fine_day):
    # Issue 4's worked expectation: a crash of the whole job moves about 11 MW at the connection
    # within seconds. Measured as ERCOT measures it (0.1-55 Hz, max - min in 5 s) at 100 ms:
    # the size depends on the phase the crash hits (compute peak or communication trough).
    _, ds = fine_day
    rule = load_rules("ercot-5s")[0]
    value = measure(ds["grid_power"].values, rule, 0.1)
    start = (ds["event_time"].values - ds["time"].values[0]) / np.timedelta64(100, "ms")
    crashes = [
        value[int(i) : int(i) + 80].max()
        for i, kind in zip(start, ds["event_kind"].values, strict=True)
        if kind == "unexpected"
    ]
    assert len(crashes) >= 15
    assert 9.5 <= np.median(crashes) <= 11.5
    assert np.max(crashes) > 10.0  # so crashes do violate ERCOT's 10 MW


def test_check_attributes_violations_to_their_causes(fine_day):
    sc, ds = fine_day
    results = check(ds, load_rules("ercot-5s,nprr1191,ieso"))
    verdict = {r.rule.name: r for r in results}
    ercot = verdict["ercot-5s"]
    assert not ercot.passed and ercot.by_cause["failure"] >= 5
    # 100 ms resolves the band up to half its Nyquist frequency, 2.5 Hz, not ERCOT's 55 Hz:
    # the verdict says so (a pass would not be proven above it; a failure stands)
    assert ercot.resolved_to == pytest.approx(2.5)
    # NPRR1191's downward limit is the lesser of 20 MW/min and 5 % of the registered demand
    # (the design-day facility peak, 24.99 MW: 1.25 MW/min); every crash breaks it
    down = verdict["nprr1191-down"]
    assert down.limit == pytest.approx(0.05 * ds.attrs["registered_demand"])
    assert ds.attrs["registered_demand"] == pytest.approx(24.99, abs=0.05)
    n_crashes = int((ds["event_kind"].values == "unexpected").sum())
    assert down.by_cause["failure"] == pytest.approx(n_crashes, abs=2)
    # IESO's 20 MW/min on the 1-min average is not reached: a crash moves the minute's average
    # by its 8 MW drop plus, a minute later, the 3.7 MW of the nodes going idle
    assert verdict["ieso-1min"].passed
    assert 8.0 < verdict["ieso-1min"].worst < 20.0
    # every violation has a cause from the job's state
    for r in results:
        assert set(r.by_cause) <= {
            "failure",
            "restart",
            "maintenance",
            "checkpoint",
            "iteration swing",
            "weather",
        }


def test_checkpoints_are_blamed_only_for_what_they_cause():
    # NPRR1191's upward 2 % (0.5 MW/min on the 1-min average) is broken every few minutes when
    # blocking checkpoints stall the job, and never by the iteration swing alone (the average
    # of a 6 s swing over a minute hardly moves): the same run without checkpoints shows it.
    over = {**QUIET, "simulation.duration": "6h"}
    rule = load_rules("nprr1191-up")
    with_stalls = check(
        simulate(load_scenario(REFERENCE, {**over, "checkpoint.interval": "4min"})), rule
    )[0]
    assert with_stalls.by_cause["checkpoint"] > 50
    assert "iteration swing" not in with_stalls.by_cause
    without = check(simulate(load_scenario(REFERENCE, over)), rule)[0]
    assert set(without.by_cause) <= {"restart"}  # the first start's ramp only


def test_counts_per_day_over_seeds_p50_p95():
    sc = load_scenario(REFERENCE, {"simulation.duration": "12h", "reliability.rate_scale": 3.0})
    per_seed, refused = check_seeds(sc, load_rules("nprr1191-down"), seeds=4)
    assert refused == []
    table = by_cause(per_seed)
    failure = table[table["cause"] == "failure"].iloc[0]
    # 419 crashes in 54 days (Llama 3) at three times the rate: 23.3 a day; a P50 over 4 seeds
    # of half-day runs lies within a Poisson spread of that
    assert 10 <= failure["per day p50"] <= failure["per day p95"] <= 45


def test_iteration_swings_violate_ercot_only_with_deep_troughs():
    # The sensitivity the report shows: with the sourced 30 % trough (Ko & Zhu) iteration swings
    # stay under ERCOT's 10 MW; at the 80 % end they break it.
    sc = load_scenario(
        REFERENCE, {**QUIET, "simulation.duration": "30min", "simulation.dt": "0.1s"}
    )
    table = check_sensitivity(sc, load_rules("ercot-5s"))
    trough = table[table["key"] == "workload.trough_depth"].set_index("case")
    base = table[table["case"] == "base"].iloc[0]
    assert base["iteration swing/day"] == 0 and base["worst"] < 10.0
    assert trough.loc["high", "iteration swing/day"] > 0 and trough.loc["high", "worst"] > 10.0


@pytest.fixture(scope="module")
def sized():
    sc = load_scenario(REFERENCE, {"simulation.duration": "6h", "reliability.rate_scale": 3.0})
    rule_list = load_rules("ercot-5s,nprr1191-down,ieso-15s")
    return sc, rule_list, size(sc, rule_list)


def test_sizing_finds_a_passing_setting_of_each_lever_where_one_exists(sized):
    sc, rule_list, table = sized
    rows = table.set_index(["rule", "lever"])
    # an H100 power cap and a site battery each make ERCOT's 5-s rule pass
    assert rows.loc[("ercot-5s", "power cap"), "verdict"] == "pass"
    assert 200.0 <= rows.loc[("ercot-5s", "power cap"), "setting"] < 700.0
    battery = [lever for lever in table["lever"].unique() if lever.startswith("site battery")][0]
    for rule in ("ercot-5s", "nprr1191-down", "ieso-15s"):
        assert rows.loc[(rule, battery), "verdict"] == "pass"
    # a software agent reacts after 2 s: the crash's drop has reached the grid by then
    burn = [lever for lever in table["lever"].unique() if lever.startswith("burn on stop")][0]
    assert rows.loc[("ercot-5s", burn), "verdict"] == "cannot"
    # costs: a cap saves energy and costs throughput; a battery costs losses, not tokens
    cap = rows.loc[("ercot-5s", "power cap")]
    assert cap["grid_energy_cost"] < 0 and cap["throughput_cost"] > 0
    bat = rows.loc[("ercot-5s", battery)]
    assert bat["grid_energy_cost"] > 0 and bat["throughput_cost"] == pytest.approx(0.0, abs=1e-12)
    assert bat["storage_cycles_per_day"] > 0


def test_check_confirms_each_sized_setting_on_the_mitigated_run(sized):
    from powermodel.sizing import levers

    sc, rule_list, table = sized
    reference = simulate(sc).attrs["registered_demand"]
    for rule in rule_list:
        for lever in levers(sc, rule, reference):
            row = table[(table["rule"] == rule.name) & (table["lever"] == lever.name)].iloc[0]
            if row["verdict"] != "pass":
                continue
            mitigated = simulate(load_scenario(sc, lever.settings(row["setting"])))
            assert check(mitigated, [rule])[0].passed, (rule.name, lever.name)


# --- acceptance 2: floors, ramps, filters against closed forms --------------------------------

SQUARE = {
    **QUIET,
    # the closed form is of the electrical waveform: hold the dies' leakage and the fans out of
    # it (a floor also heats the dies, which then leak more: a second, thermal, cost)
    "gpu.leakage_coefficient": 0.0,
    "cluster.fans.slope": 0.0,
    "simulation.duration": "2h",
    "workload.edge_rate": 1000.0,  # TDP per second: edges of 0.3-0.7 ms, a square wave
    "workload.compute_power": 1.0,  # 700 W on the H100
    "workload.trough_depth": 0.5,  # 350 W
    "workload.phases": [
        {"name": "compute", "kind": "compute", "share": 0.6},
        {"name": "exchange", "kind": "communication", "share": 0.4},
    ],
    "workload.startup_ramp": "0s",
}


@pytest.mark.parametrize("dt", ["0.1s", "1min"])
def test_floor_energy_overhead_is_the_closed_form_at_any_dt(dt):
    # Square wave 700 W (60 %) / 350 W (40 %), floor 490 W (70 % of TDP):
    # closed form 0.4·(490-350) / (0.6·700 + 0.4·350) = 56/560 = 10 %.
    over = {**SQUARE, "simulation.dt": dt}
    base = simulate(load_scenario(REFERENCE, over))
    floored = simulate(load_scenario(REFERENCE, {**over, "mitigation.software_burn": 0.7}))
    sc = load_scenario(REFERENCE, over)
    step = float(base.attrs["dt"])
    running = float(np.sum(base["job_state"].values == State.RUNNING)) * step
    loading = 7200.0 - running  # the start: checkpoint reload, no ramp
    extra = float((floored["gpu_power"] - base["gpu_power"]).sum()) * step * 1e6
    per_gpu = extra / (sc.cluster.n_gpus * (7200.0 - loading))
    assert mitigation.floor_overhead(350.0, 700.0, 0.6, 490.0) == pytest.approx(0.10)
    assert per_gpu / 560.0 == pytest.approx(0.10, rel=2e-3)


def test_smoothing_floor_matches_the_software_floor_with_fast_ramps():
    over = {**SQUARE, "simulation.dt": "1s", "cluster.gpu": "GB200"}
    burn = simulate(load_scenario(REFERENCE, {**over, "mitigation.software_burn": 0.7}))
    smooth = simulate(
        load_scenario(
            REFERENCE,
            {**over, "mitigation.smoothing": {"floor": 0.7, "ramp_up": 1e7, "ramp_down": 1e7}},
        )
    )
    running = burn["job_state"].values == State.RUNNING
    np.testing.assert_allclose(
        smooth["gpu_power"].values[running], burn["gpu_power"].values[running], rtol=1e-6
    )


@pytest.mark.parametrize("dt", ["0.1s", "1s"])
def test_ramp_limited_power_never_exceeds_the_set_rate(dt):
    # GB200 power smoothing at 2,000 W/s up and 500 W/s down, with crashes and restarts
    sc = load_scenario(
        REFERENCE,
        {
            "simulation.duration": "6h",
            "simulation.dt": dt,
            "reliability.rate_scale": 3.0,
            "cluster.gpu": "GB200",
            "mitigation.smoothing": {"floor": 0.3, "ramp_up": 2000.0, "ramp_down": 500.0},
        },
    )
    ds = simulate(sc)
    step = float(ds.attrs["dt"])
    per_gpu = ds["gpu_power"].values * 1e6 / sc.cluster.n_gpus
    rate = np.diff(per_gpu) / step
    assert rate.max() <= 2000.0 * (1 + 1e-9) and -rate.min() <= 500.0 * (1 + 1e-9)
    assert (ds["event_kind"].values == "unexpected").sum() > 3  # it saw crashes


def test_clock_lock_lowers_peaks_and_troughs_and_stretches_compute():
    # Patel et al. (REFERENCES §2): capping lowers peaks, not troughs; locking the clock lowers
    # everything. Locked at 0.8 the compute phases take 1/0.8 as long; communication does not.
    over = {**QUIET, "simulation.duration": "2h"}
    free = simulate(load_scenario(REFERENCE, over))
    capped = simulate(load_scenario(REFERENCE, {**over, "mitigation.power_cap": 500.0}))
    locked = simulate(load_scenario(REFERENCE, {**over, "mitigation.clock_lock": 0.8}))
    run = free["job_state"].values == State.RUNNING

    def peak(ds):
        return ds["gpu_power"].values[run].max()

    def trough(ds):
        return ds["gpu_power"].values[run].min()

    assert peak(capped) < peak(free) and trough(capped) == pytest.approx(trough(free), rel=0.02)
    assert peak(locked) < peak(free) and trough(locked) < 0.9 * trough(free)
    # the free run's clocks already sag in the July heat; the locked one holds 0.8 throughout
    from powermodel.models.thermal import step_time_factor

    share = free.attrs["compute_share"]
    assert np.all(locked["clock_factor"].values == pytest.approx(0.8))
    tokens = locked["throughput"].values[run].mean() / free["throughput"].values[run].mean()
    clock = free["clock_factor"].values[run].astype(float)
    expected = (1 / step_time_factor(0.8, share)) / np.mean(1 / step_time_factor(clock, share))
    assert tokens == pytest.approx(expected, rel=1e-3)


def test_ramp_limit_within_an_iteration_throttles_and_costs_throughput():
    cells = np.where(np.arange(4096) < 2458, 700.0, 350.0)  # 60/40 square over a 6 s step
    limited = mitigation.smooth_periodic(cells, 6.0, 1000.0, 1000.0, 0.0)
    dcell = 6.0 / 4096
    assert np.abs(np.diff(limited)).max() <= 1000.0 * dcell * (1 + 1e-9)
    # the rise takes 0.35 s at 1,000 W/s: a triangle of 0.5·350·0.35 J short of demand, made
    # up at 700 - 350 W above the trough: 0.175 s more a 6 s step
    assert mitigation.throttled_share(limited, cells) == pytest.approx(0.175 / 6.0, rel=0.02)


@pytest.mark.parametrize(
    ("shape", "fraction"),
    [
        ("step", 1.0),  # REFERENCES §8: 100 % of an instant step
        ("ramp2", 0.57),  # about 57 % of a 2 s ramp
        ("ramp60", 0.03),  # 3 % of a 60 s ramp
    ],
)
def test_high_pass_keeps_the_closed_form_fraction(shape, fraction):
    dt, tau = 0.01, 1.0 / (2 * np.pi * 0.1)
    t = np.arange(0, 200.0, dt) - 20.0
    duration = {"step": 0.0, "ramp2": 2.0, "ramp60": 60.0}[shape]
    x = np.clip(t / duration, 0, 1) if duration else (t >= 0).astype(float)
    kept = signal.high_pass(x, dt, 0.1).max()
    closed = 1.0 if not duration else tau / duration * (1 - np.exp(-duration / tau))
    assert kept == pytest.approx(closed, rel=0.01)
    assert kept == pytest.approx(fraction, abs=0.01)


def test_high_pass_keeps_85_percent_of_a_016_hz_swing():
    dt = 0.01
    t = np.arange(0, 300.0, dt)
    y = signal.high_pass(np.sin(2 * np.pi * 0.16 * t), dt, 0.1)
    # |H| = (f/fc)/sqrt(1 + (f/fc)^2) = 1.6/sqrt(3.56) = 0.848 (REFERENCES §8: about 85 %)
    assert np.abs(y[t > 100]).max() == pytest.approx(0.848, abs=0.005)


# --- acceptance 3: the battery's energy balance ------------------------------------------------


def test_battery_energy_balance_soc_limits_and_cycles():
    sc = load_scenario(
        REFERENCE,
        {
            "simulation.duration": "12h",
            "reliability.rate_scale": 3.0,
            "mitigation.storage": [
                {"location": "site", "power": 6.0, "energy": 0.5, "efficiency": 0.88, "tau": "2min"}
            ],
        },
    )
    ds = simulate(sc)
    unit = sc.mitigation.storage[0]
    dt = float(ds.attrs["dt"])
    hours = dt / 3600.0
    p = ds["bess_power"].values
    eta = np.sqrt(unit.efficiency)
    losses = (np.clip(p, 0, None) * (1 / eta - 1) + np.clip(-p, 0, None) * (1 - eta)).sum() * hours
    stored = (ds["bess_soc"].values[-1] - unit.soc_initial) * unit.energy
    grid = ds["grid_power"].sum().item() * hours
    facility = ds["facility_power"].sum().item() * hours
    # what the grid delivers = what the site used + what the battery lost + what it kept
    assert grid == pytest.approx(facility + losses + stored, rel=1e-6)
    soc = ds["bess_soc"].values
    assert soc.min() >= unit.soc_min - 1e-12 and soc.max() <= unit.soc_max + 1e-12
    assert soc.min() == pytest.approx(unit.soc_min, abs=1e-6)  # this small battery hits its floor
    assert np.abs(p).max() <= unit.power + 1e-12
    cost = costs(sc, simulate(load_scenario(sc, {"mitigation.storage": []})), ds)
    cycles = np.abs(p).sum() * hours / 2 / unit.energy / 0.5  # per day of a 12 h run
    assert cost["storage_cycles_per_day"] == pytest.approx(cycles)
    assert cycles > 1


# --- acceptance 4: spectra ----------------------------------------------------------------------


def test_square_wave_variance_lands_in_the_bands_of_its_harmonics():
    # A ±a square wave: odd harmonics k·f0 carry 8a²/(π²k²) of its variance a².
    dt, f0, a = 0.01, 0.5, 3.0
    t = np.arange(0, 2000.0, dt)
    x = a * np.sign(np.sin(2 * np.pi * f0 * t + 0.1))
    fundamental = signal.band_variance(x, dt, 0.5 * f0, 2 * f0, segment=200.0)
    third = signal.band_variance(x, dt, 2 * f0, 4 * f0, segment=200.0)
    assert fundamental == pytest.approx(8 * a**2 / np.pi**2, rel=0.01)
    assert third == pytest.approx(8 * a**2 / (9 * np.pi**2), rel=0.02)
    assert signal.band_variance(x, dt, 1e-3, 0.2 * f0, segment=200.0) < 1e-3 * a**2


def test_a_band_above_half_nyquist_is_refused():
    x = np.zeros(1000)
    with pytest.raises(PowerModelError, match="half the Nyquist"):
        signal.band_variance(x, 1.0, 0.1, 0.5)
    ds = simulate(load_scenario(REFERENCE, {**QUIET, "simulation.duration": "1h"}))
    with pytest.raises(RuleError, match="for the whole band, a profile at dt <= 2ms resolves it"):
        check(ds, load_rules("lipa-high"))
    with pytest.raises(PowerModelError, match="shorter than five steps"):
        check(
            simulate(
                load_scenario(
                    REFERENCE, {**QUIET, "simulation.duration": "1h", "simulation.dt": "2s"}
                )
            ),
            load_rules("ercot-5s"),
        )


def test_grid_metrics_ramps_three_ways():
    # REFERENCES §8: on a 6 s swing a "ramp over 1 min" is one of three things. For a ±a square
    # wave: the net change over a minute is 0 when the minute holds whole periods; max - min is
    # the whole swing 2a; the change of the 1-min average is at most a·T/W (the part period
    # the window holds), moderate.
    from powermodel.analysis import ramps

    dt, a = 0.1, 2.0
    t = np.arange(0, 600.0, dt)
    whole = ramps(10.0 + a * np.sign(np.sin(2 * np.pi * t / 6.0 + 0.1)), dt, 60.0)
    assert whole["net_change_up"] == pytest.approx(0.0, abs=1e-9)
    assert whole["range"] == pytest.approx(2 * a)
    step = 6.13  # the reference's step time: a minute holds 9.79 periods
    part = ramps(10.0 + a * np.sign(np.sin(2 * np.pi * t / step + 0.1)), dt, 60.0)
    assert part["range"] == pytest.approx(2 * a)
    assert 0.1 * a * step / 60 < part["average_slope_up"] <= a * step / 60 + 1e-9
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "6h"}))
    m = metrics(ds)
    assert m["grid_load_factor"] == pytest.approx(m["grid_mean_mw"] / m["grid_peak_mw"])
    # energy per token: grid joules over tokens kept (405B: about 6·405e9 FLOP a token)
    assert 3.0 < m["grid_energy_per_token_j"] < 15.0


def test_metrics_are_named_by_their_boundary():
    # issue 10: a bare "mean_mw" was IT power without saying so
    m = metrics(simulate(load_scenario(REFERENCE, {"simulation.duration": "1h"})))
    powers = [k for k in m if k.endswith(("_mw", "_mwh", "_mvar", "_j", "_pct", "_factor"))]
    assert len(powers) >= 20
    assert all(k.startswith(("it_", "cooling_", "facility_", "grid_")) for k in powers), powers


def test_largest_swing_while_training_leaves_failures_out():
    # a 2-MW square wave while running, and a 10-MW crash while not: 2 MW
    p = 10.0 + np.tile([1.0, 1.0, 1.0, -1.0, -1.0, -1.0], 10)
    p[40:] -= 10.0
    running = np.arange(p.size) < 40
    assert max_swing(p, 1.0) == 12.0
    assert max_swing(p, 1.0, where=running) == 2.0
    assert np.isnan(max_swing(p, 1.0, where=np.zeros(p.size, bool)))
    # the reference: failures three times as often, so a 6-h run holds some
    ds = simulate(
        load_scenario(REFERENCE, {"simulation.duration": "6h", "reliability.rate_scale": 3.0})
    )
    m = metrics(ds)
    assert (ds["event_kind"].values == "unexpected").any()
    # by definition: max − min of each 5-sample window whose samples, and the one either side
    # (an interval mean may straddle the start of a stall), all run
    running = np.lib.stride_tricks.sliding_window_view(ds["job_state"].values == State.RUNNING, 7)
    windows = np.lib.stride_tricks.sliding_window_view(ds["grid_power"].values[1:-1], 5)
    swing = np.ptp(windows, axis=1)[running.all(axis=1)].max()
    assert m["grid_swing_5s_training_mw"] == swing
    # the iterations alone: the same run without failures (nor the checkpoints they call for).
    # Within a fifth: after each restart the cooled dies clock higher and the compute plateau
    # climbs as they warm, so the failing run's iterations swing up to 4.35 MW against 3.72.
    # Failures add crashes of about 11 MW (issue 4), far above either.
    quiet = metrics(simulate(load_scenario(REFERENCE, {**QUIET, "simulation.duration": "6h"})))
    assert swing == pytest.approx(quiet["grid_swing_5s_training_mw"], rel=0.2)
    assert m["grid_swing_5s_mw"] > 2 * swing


# --- measured traces ---------------------------------------------------------------------------


def test_check_reads_a_measured_trace(tmp_path):
    t = np.arange(0, 600.0, 1.0)
    p = 50.0 + 12.0 * (t >= 300)  # a 12 MW step up
    path = tmp_path / "trace.csv"
    path.write_text(
        "time,P [MW]\n"
        + "\n".join(
            f"2025-01-01T00:{int(s) // 60:02d}:{int(s) % 60:02d}Z,{v}"
            for s, v in zip(t, p, strict=True)
        )
    )
    trace = read_trace(path)
    (result,) = check(trace, load_rules("ercot-5s"))
    assert not result.passed and result.worst == pytest.approx(12.0, rel=0.01)
    assert result.by_cause == {"unknown": 1}
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "time,P [MW]\n2025-01-01T00:00:00Z,1\n2025-01-01T00:00:01Z,x\n2025-01-01T00:00:02Z,2\n"
    )
    with pytest.raises(PowerModelError, match="line 3"):
        read_trace(bad)
    # ten seconds cannot say anything about a rule on two 1-min averages: refused, not passed
    with pytest.raises(RuleError, match="longer than the profile"):
        check(trace.isel(time=slice(0, 10)), load_rules("ieso-1min"))


def test_load_duration_curve_and_band_variances():
    from powermodel.analysis import band_variances, load_duration

    power = np.array([3.0, 1.0, 2.0, 5.0])
    ordered, share = load_duration(power)
    np.testing.assert_array_equal(ordered, [5.0, 3.0, 2.0, 1.0])
    np.testing.assert_array_equal(share, [0.25, 0.5, 0.75, 1.0])
    # a 0.02 Hz sine of amplitude 4 MW: variance 8 MW², all of it in the band around it
    dt = 1.0
    t = np.arange(0, 20000.0, dt)
    bands = band_variances(4.0 * np.sin(2 * np.pi * 0.02 * t), dt, ((0.01, 0.04), (0.05, 0.25)))
    assert bands["0.01-0.04 Hz"] == pytest.approx(8.0, rel=0.01)
    assert bands["0.05-0.25 Hz"] < 0.01


def test_user_rules_from_toml_and_their_errors(tmp_path):
    mine = tmp_path / "mine.toml"
    mine.write_text(
        '[my-utility]\ntitle = "15 MW a minute"\nsource = "our interconnection agreement"\n'
        'status = "in force"\nwindow = "1min"\nstatistic = "rate"\nlimit = 15.0\n'
    )
    (rule,) = load_rules(str(mine))
    assert rule.name == "my-utility" and rule.unit == "MW/min"
    bad = tmp_path / "bad.toml"
    bad.write_text(
        '[bad]\ntitle = "x"\nsource = "x"\nstatus = "draft"\nwindow = "1min"\n'
        'statistic = "rate"\nlimit = 1.0\n'
    )
    with pytest.raises(RuleError, match="rule bad: status"):
        load_rules(str(bad))
    nolimit = tmp_path / "nolimit.toml"
    nolimit.write_text(
        '[n]\ntitle = "x"\nsource = "x"\nstatus = "quoted"\nwindow = "1min"\nstatistic = "rate"\n'
    )
    with pytest.raises(RuleError, match="needs limit"):
        load_rules(str(nolimit))
    with pytest.raises(RuleError, match="unknown rule 'ercot'"):
        load_rules("ercot")


def test_mitigation_costs_in_money_with_prices():
    over = {**QUIET, "simulation.duration": "6h"}
    prices = {"prices.energy": 50.0, "prices.gpu_hour": 2.0}
    base = simulate(load_scenario(REFERENCE, over))
    capped_sc = load_scenario(REFERENCE, {**over, **prices, "mitigation.power_cap": 500.0})
    c = costs(capped_sc, base, simulate(capped_sc))
    # a year of the daily energy change at $50/MWh, plus the tokens lost as GPU-hours at $2
    expected = c["grid_energy_mwh_per_day"] * 365 * 50.0 + c["throughput_cost"] * 16384 * 8760 * 2.0
    assert c["cost_per_year"] == pytest.approx(expected)
    assert c["throughput_cost"] > 0 and c["grid_energy_mwh_per_day"] < 0


def test_rack_batteries_only_where_the_hardware_has_them():
    # GB300 power shelves store energy (REFERENCES §4); an H100 rack has none to configure
    rack = {"location": "rack", "power": 3.0, "energy": 0.05, "tau": "10s"}
    with pytest.raises(PowerModelError, match="has no energy storage"):
        load_scenario(REFERENCE, {"mitigation.storage": [rack]})
    over = {
        **QUIET,
        "simulation.duration": "1h",
        "cluster.gpu": "GB300",
        "cooling.plant": "liquid-dry-cooler",
    }
    free = simulate(load_scenario(REFERENCE, over))
    shelved = simulate(load_scenario(REFERENCE, {**over, "mitigation.storage": [rack]}))
    run = free["job_state"].values == State.RUNNING

    def swing(ds):  # peak-to-peak of the running IT power, past the battery's first minutes
        return np.ptp(ds["it_power"].values[run][600:])

    assert swing(shelved) < 0.8 * swing(free)
    assert np.abs(shelved["rack_storage_power"].values).max() <= 3.0 + 1e-12
