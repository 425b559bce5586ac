"""Metrics, ramps, swings and load-duration curves (powermodel.analysis)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import QUIET, REFERENCE

from powermodel import load_scenario, metrics, simulate
from powermodel.analysis import max_swing
from powermodel.models.events import State


def test_grid_metrics_ramps_three_ways():
    # [D]: on a 6 s swing a "ramp over 1 min" is one of three things. For a ±a square
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


def test_max_swing_in_blocks_is_the_largest_rolling_range():
    # The definition is the reference: the largest max - min of any whole window of samples
    # (all inside ``where`` when given), here over several blocks of the search, with a mask,
    # and with the NaN of a sensor view's first readings (searched whole)
    from powermodel.analysis import SWING_BLOCK
    from powermodel.models import signal

    rng = np.random.default_rng(13)
    power = np.cumsum(rng.normal(size=3 * SWING_BLOCK + 1234))
    inside = rng.random(power.size) > 1e-4
    swing = signal.rolling_range(power, 50)
    whole = signal.rolling_mean(inside, 50) == 1.0
    assert max_swing(power, 0.1) == swing.max()
    assert max_swing(power, 0.1, where=inside) == swing[whole].max()
    power[:30] = np.nan
    seen = np.isfinite(power)
    whole = signal.rolling_mean(seen, 50) == 1.0
    assert max_swing(power, 0.1, where=seen) == signal.rolling_range(power, 50)[whole].max()


def test_a_parts_voltage_is_the_engines_formula_with_the_grid_the_run_records():
    # issue 29: part() reads the connection from the run's own record and computes the voltage
    # as the engine does: on a run without a site battery, the site's own voltage is that of its
    # grid power and reactive power, to the bit
    from powermodel.analysis import recorded_grid
    from powermodel.models.grid import connection_voltage

    ds = simulate(load_scenario(REFERENCE, {**QUIET, "simulation.duration": "1h"}))
    short_circuit, x_r = recorded_grid(ds.attrs)
    scenario = load_scenario(REFERENCE)
    assert (short_circuit, x_r) == (scenario.grid.short_circuit, scenario.grid.x_r)
    seen = connection_voltage(
        ds["grid_power"].values, ds["grid_reactive_power"].values, short_circuit, x_r
    )
    assert np.array_equal(seen, ds["grid_voltage"].values)
