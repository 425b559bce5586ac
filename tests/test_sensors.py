"""Sensor chains against their closed forms (issue 12, acceptance 6)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from powermodel.errors import PowerModelError
from powermodel.models import sensors
from powermodel.models.sensors import CHAINS, P_CLASS, Sensor, read


def square(dt: float, period: float, on: tuple[float, float], n_periods: int) -> np.ndarray:
    """Interval means of a 0/1 square wave that is 1 on ``[on[0], on[1])`` of each period
    (edges on the grid, so the means are exactly 0 or 1)."""
    t = dt * np.arange(int(round(n_periods * period / dt)))
    phase = np.round(t % period, 9)
    return ((phase >= on[0]) & (phase < on[1])).astype(float)


def test_nvml_is_the_trapezoid_of_a_square_wave():
    # 1 on [3, 5) of every 5 s; the 1-s moving average rises linearly over 1 s after the
    # on-edge and falls over 1 s after the off-edge: overlap of [t − 1, t] with the pulse
    x = square(0.25, 5.0, (3.0, 5.0), 4)
    at = np.array([1.0, 3.0, 3.25, 3.3, 3.5, 4.0, 5.0, 5.5, 5.9, 6.0, 8.2, 9.0])
    expected = [0.0, 0.0, 0.25, 0.3, 0.5, 1.0, 1.0, 0.5, 0.1, 0.0, 0.2, 1.0]
    assert_allclose(read(x, 0.25, "nvml", at), expected, atol=1e-12)


def test_nvml_of_a_pulse_as_long_as_its_window_is_a_triangle():
    # 1 on [2, 3) of every 4 s: the 1-s average peaks at 1 only at t = 3, a triangle of base 2 s
    x = square(0.1, 4.0, (2.0, 3.0), 3)
    y = read(x, 0.1, "nvml")
    t = 0.1 * np.arange(1, x.size + 1)
    triangle = np.clip(1.0 - np.abs((t - 3.0 + 2.0) % 4.0 - 2.0), 0.0, None)
    # before the first whole second the window starts before the signal: no report yet (NaN;
    # this closed form held the first value before 0 until the fix of the leading readings)
    triangle[t < 1.0 - 1e-9] = np.nan
    assert_allclose(y, triangle, atol=1e-12)
    assert np.isnan(y[:9]).all() and np.isfinite(y[9:]).all()


def test_a_moving_average_keeps_the_mean_of_a_periodic_signal():
    # energy: over whole periods after the first window the readings' mean is the signal's, 0.4
    x = 3.0 + square(0.25, 5.0, (3.0, 5.0), 6)
    y = read(x, 0.25, "nvml")
    assert_allclose(y[20:].mean(), 3.4, rtol=1e-13)
    assert_allclose(x.mean(), 3.4, rtol=1e-13)


def test_dcgm_holds_the_nvml_average_of_each_whole_second():
    x = square(0.25, 5.0, (3.0, 5.0), 2)
    # polls at 3.5 and 4.75 read the samples at 3 s and 4 s: the 1-s averages 0 and 1
    assert_allclose(read(x, 0.25, "dcgm", np.array([3.5, 4.75, 5.5])), [0.0, 1.0, 1.0])
    at = np.array([3.25, 3.5, 3.75])
    assert_allclose(read(x, 0.25, "dcgm", at), read(x, 0.25, "nvml", np.full(3, 3.0)))


def test_revenue_meter_reports_block_means_of_a_ramp_and_a_step():
    # 0 → 10 MW linearly over 30 min, then 10 MW, then 20 MW from 37.5 min; dt = 1 s, so the
    # interval means of the ramp are its midpoints. Block means by hand: ramp 0 → 5: 2.5,
    # ramp 5 → 10: 7.5, half at 10 and half at 20: 15, then 20.
    dt = 1.0
    i = np.arange(3600)
    x = np.where(i < 1800, (i + 0.5) * 10.0 / 1800.0, np.where(i < 2250, 10.0, 20.0))
    at = np.array([900.0, 1799.0, 1800.0, 2699.0, 2700.0, 3599.0, 3600.0])
    assert_allclose(read(x, dt, "revenue", at), [2.5, 2.5, 7.5, 7.5, 15.0, 15.0, 20.0], rtol=1e-12)
    # reported at the block's end and held: nothing of the step shows until 45 min
    y = read(x, dt, "revenue")
    assert np.all(y[2249:2699] == y[1800])
    # before the first block ends there is no block demand yet: NaN, not a block before the
    # start made of the first value (which this test expected before the fix: x[0])
    assert np.isnan(read(x, dt, "revenue", np.array([0.0, 450.0, 899.0]))).all()
    # the block demands hold the energy: 4 blocks × 15 min
    blocks = read(x, dt, "revenue", 900.0 * np.arange(1, 5))
    assert_allclose(blocks.sum() * 900.0, x.sum() * dt, rtol=1e-12)


def pclass_step(u: np.ndarray) -> np.ndarray:
    """Step response of a unit-area triangle of half-width 1 centred at u (the integral of
    1 − |s| from −1 to u)."""
    u = np.clip(u, -1.0, 1.0)
    return np.where(u < 0.0, 0.5 * (1.0 + u) ** 2, 1.0 - 0.5 * (1.0 - u) ** 2)


# F(−0.25) at the report at 0.5 s; at 0.5 + 1/60 s pmu60 reports F(0.75), pmu30 still holds
@pytest.mark.parametrize(("key", "expected"), [("pmu30", 0.28125), ("pmu60", 0.96875)])
def test_pmu_step_response_is_the_p_class_triangle_integral(key, expected):
    # a step at t0 = 0.5 + 1/240 s; the P-class window is a triangle of half-width one cycle
    # (1/60 s) centred on the time stamp, so y(r) = F((r − t0)·60) with F the integral above
    dt, t0, h = 1.0 / 1200.0, 0.5 + 1.0 / 240.0, 1.0 / 60.0
    x = (np.arange(1200) >= round(t0 / dt)).astype(float)
    y = read(x, dt, key, np.array([0.5, 0.5 + 1.0 / 60.0]))
    assert_allclose(y, [0.28125, expected], atol=1e-12)
    # the same filter reporting every other step (a PMU needs dt ≤ half its report period)
    fine = Sensor("fine", "P-class", "grid_power", 2 * h, 2 * dt, filter=P_CLASS)
    t = 2 * dt * np.arange(1, 601)
    expected = pclass_step((t - t0) / h)
    # a triangle that starts before the signal (r < h) has no report yet: NaN (this closed
    # form held the first value before 0 until the fix of the leading readings)
    expected[t < h - 1e-12] = np.nan
    assert_allclose(read(x, dt, fine, t), expected, atol=1e-12)


def test_pmu_step_meets_the_p_class_step_limits():
    # IEEE C37.118.1 [S]: a 10 % magnitude step leaves and re-enters 1 % TVE between the 10 % and
    # 90 % points of the step; the limit for P class is 2/f0. The triangle's closed form gives
    # 2·(1 − √0.2)/f0 = 1.106/f0, with no overshoot and the 50 % point at the step (delay 0).
    dt, t0 = 1.0 / 12000.0, 0.25
    x = 1.0 + 0.1 * (np.arange(6000) >= round(t0 / dt))
    fine = Sensor("fine", "P-class", "grid_power", 2 / 60, 2 * dt, filter=P_CLASS)
    t = 2 * dt * np.arange(1, 3001)
    y = (read(x, dt, fine, t) - 1.0) / 0.1
    response = t[np.argmax(y > 0.9)] - t[np.argmax(y > 0.1)]
    assert_allclose(response, 2 * (1 - np.sqrt(0.2)) / 60, atol=4 * dt)
    assert response < 2 / 60
    # no report while the triangle starts before the signal (t < 1/60 s), every one after
    assert np.isnan(y[t < 1 / 60 - 1e-12]).all() and np.isfinite(y[t >= 1 / 60 - 1e-12]).all()
    assert np.nanmax(y) <= 1.0 + 1e-10  # rounding of 1.1 − 1 over 0.1
    assert_allclose(t[np.argmax(y >= 0.5)], t0, atol=2 * dt)


def test_pmu_keeps_precision_far_from_the_start():
    # an hour of 300 MW at 1/480 s, with a 30 MW step at 3599 s: a double integral of
    # 10⁹ MW·s² would lose the step to rounding; the reading must still be the closed form
    dt, t0, h = 1.0 / 480.0, 3599.0, 1.0 / 60.0
    n = 3600 * 480
    x = 300.0 + 30.0 * (np.arange(n) >= round(t0 / dt))
    fine = Sensor("fine", "P-class", "grid_power", 2 * h, 2 * dt, filter=P_CLASS)  # reports at h/4
    at = t0 + h * np.array([-1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0])
    expected = 300.0 + 30.0 * pclass_step((at - t0) / h)
    assert_allclose(read(x, dt, fine, at), expected, rtol=0, atol=1e-9 * 300)


def test_scada_samples_and_holds():
    # a ramp x_i = i at dt = 1 s, scanned every 4 s: the scan at r reads the interval ending at
    # r (value r − 1), held until the next scan; the scan at 0 reads the first value
    x = np.arange(12.0)
    assert_allclose(
        read(x, 1.0, "scada", np.array([1.0, 3.0, 4.0, 7.0, 8.0, 11.9])), [0, 0, 3, 3, 7, 7]
    )
    with pytest.raises(PowerModelError, match="needs dt <= 2s"):
        read(x, 4.0, "scada")


def reference_deadband(y: np.ndarray, band: float) -> np.ndarray:
    """The deadband's rule as a loop (the reference for the vectorised one)."""
    out, last = np.empty_like(y), y[0]
    for i, v in enumerate(y):
        if abs(v - last) > band:
            last = v
        out[i] = last
    return out


def test_scada_deadband_reports_by_exception():
    # scans 10, 10.5, 11.2, 11.0, 9.9, 9.95, 12 with a 1.0 deadband: sent when more than 1.0
    # from the last one sent
    scans = np.array([10.0, 10.5, 11.2, 11.0, 9.9, 9.95, 12.0])
    x = np.repeat(scans, 2)  # dt = 0.5 s: the scan at m s reads x[2m − 1] = scans[m − 1]
    point = Sensor("point", "SCADA, 1-s scan", "grid_power", 0.0, 1.0, deadband=1.0)
    y = read(x, 0.5, point, np.arange(1.0, 8.0))
    assert_allclose(y, [10.0, 10.0, 11.2, 11.2, 9.9, 9.9, 12.0])
    rng = np.random.default_rng(0)
    walk = np.cumsum(rng.normal(size=(3, 2000)), axis=1)
    band = Sensor("band", "SCADA", "grid_power", 0.0, 1.0, deadband=2.5)
    got = read(walk, 0.5, band, np.arange(1000.0))
    scans = np.concatenate((walk[:, :1], walk[:, 1:-1:2]), axis=1)  # scan m reads x[2m − 1]
    expected = np.stack([reference_deadband(row, 2.5) for row in scans])
    assert_allclose(got, expected, rtol=0, atol=0)


def test_no_report_before_the_first_window_is_whole():
    # 5 MW for 15 min then 1 MW: the first block demand is 5.0 at 15 min, and nothing before it
    # (before the fix the meter read 5.0 from 0 s, a block held from before the run); the
    # maximum demand over the hour is the first whole block's, 5.0, at 15 min, not at 0
    x = np.where(np.arange(3600) < 900, 5.0, 1.0)
    y = read(x, 1.0, "revenue")
    assert np.isnan(y[:899]).all()
    assert_allclose(y[899::900], [5.0, 1.0, 1.0, 1.0], rtol=1e-12)
    assert np.nanargmax(y) == 899
    # a PMU's triangle starts h before its time stamp; SCADA's scan at 0 reads the first value
    assert np.isnan(read(np.ones(240), 1 / 240, "pmu60", np.array([0.0, 1 / 120]))[0])
    assert_allclose(read(np.ones(240), 1 / 240, "pmu60", np.array([1 / 60, 1.0])), 1.0)
    assert read(np.arange(8.0), 1.0, "scada", np.array([0.0]))[0] == 0.0
    # a log that began on a steady state holds its first value before 0, as before the fix
    assert_allclose(read(x, 1.0, "revenue", np.array([450.0]), held_before=True), 5.0)


def test_a_missing_value_blanks_only_the_readings_whose_window_holds_it():
    # one NaN at [50, 51) s of 100 s at 1 s: NVML's 1-s window holds it only at the poll at 51 s,
    # a 10-s average only at polls 51 to 60 s (before the fix the running integral carried it
    # to every later reading: 96 of 100 readings were NaN)
    x = 1.0 + np.arange(100.0) % 3
    x[50] = np.nan
    nvml = read(x, 1.0, "nvml")
    assert np.flatnonzero(np.isnan(nvml)).tolist() == [50]
    clean = x.copy()
    clean[50] = 0.0
    ok = np.ones(100, dtype=bool)
    ok[50] = False
    assert_allclose(nvml[ok], read(clean, 1.0, "nvml")[ok], rtol=1e-14)
    ten = Sensor("ten", "10-s average", "grid_power", 10.0, 0.0)
    y = read(x, 1.0, ten)
    # no report for the first 9 polls (the window starts before 0), none for 51 to 60 s
    assert np.flatnonzero(np.isnan(y)).tolist() == [*range(9), *range(50, 60)]
    assert_allclose(y[60:], read(clean, 1.0, ten)[60:], rtol=1e-14)
    # a PMU reads NaN only where its two-cycle triangle overlaps the missing interval
    dt = 1 / 1200
    z = np.ones(1200)
    z[600] = np.nan  # [0.5, 0.5 + dt)
    r = 2 * dt * np.arange(1, 600)  # report instants
    p = read(z, dt, Sensor("fine", "P-class", "grid_power", 2 / 60, 2 * dt, filter=P_CLASS), r)
    reach = (r + 1 / 60 > 0.5 + 1e-9) & (r - 1 / 60 < 0.5 + dt - 1e-9)
    assert_allclose(p[~reach & (r > 1 / 60)], 1.0, rtol=1e-12)
    assert np.isnan(p[reach]).all()
    # SCADA: the scan at 52 s reads the missing interval [51, 52) s, held until the next scan
    w = clean.copy()
    w[51] = np.nan
    polls = np.array([48.0, 51.0, 52.0, 55.9, 56.0])
    assert_allclose(read(w, 1.0, "scada", polls), [w[47], w[47], np.nan, np.nan, w[55]])


def test_a_deadband_sends_a_missing_scan_and_the_first_after_it():
    # scans 10, NaN, 10.2, 10.3, 12 with a 1.0 deadband: the NaN is sent (the receiver holds
    # no value), and 10.2 is sent after it though within 1.0 of the 10 sent before
    scans = np.array([10.0, np.nan, 10.2, 10.3, 12.0])
    point = Sensor("point", "SCADA, 1-s scan", "grid_power", 0.0, 1.0, deadband=1.0)
    y = read(np.repeat(scans, 2), 0.5, point, np.arange(1.0, 6.0))
    assert_allclose(y, [10.0, np.nan, 10.2, 10.2, 12.0])


def test_the_deadband_runs_in_bounded_memory_across_its_chunks():
    import tracemalloc

    # a walk over 10 chunks: each chunk starts from the value last sent in the one before
    rng = np.random.default_rng(2)
    n = 10 * sensors.DEADBAND_CHUNK + 17
    walk = np.cumsum(rng.normal(size=n))
    walk[[5, sensors.DEADBAND_CHUNK, 3 * sensors.DEADBAND_CHUNK + 1]] = np.nan
    band = 2.5
    got = sensors._deadband(walk, band)
    expected, last = np.empty(n), np.nan
    for i, v in enumerate(walk):  # the rule as a loop (the reference), NaN always differing
        if not abs(v - last) <= band:
            last = v
        expected[i] = last
    assert_allclose(got, expected, rtol=0, atol=0)
    # 1e6 reports: before the fix the sparse tables took 331 MB (41× the input); now the
    # output (8 MB) and one chunk's tables (4 MB measured with DEADBAND_CHUNK = 2**14)
    big = np.cumsum(rng.normal(size=1_000_000))
    tracemalloc.start()
    sensors._deadband(big, band)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < big.nbytes + 8e6, peak  # 12.0 MB measured


def test_two_dimensional_signals_read_channel_by_channel():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 1.0, size=(3, 400))
    at = np.array([0.0, 0.37, 1.0, 3.33, 4.0])
    for key in ("nvml", "dcgm", "scada"):
        both = read(x, 0.01, key, at)
        assert both.shape == (3, 5)
        assert_allclose(both, [read(row, 0.01, key, at) for row in x], rtol=1e-14)
    fine = read(x, 0.005, "pmu60")
    assert_allclose(fine[1], read(x[1], 0.005, "pmu60"), rtol=1e-14)


def test_resolution_is_refused_with_the_step_needed():
    assert sensors.step_needed("pmu60") == pytest.approx(1 / 120)
    assert sensors.step_needed("revenue") == 900.0
    assert sensors.resolves("nvml", 1.0) and not sensors.resolves("nvml", 2.0)
    with pytest.raises(
        PowerModelError, match="PMU .* cannot be read from a 1s profile: it needs dt <= 8.333ms"
    ):
        read(np.ones(10), 1.0, "pmu60")
    with pytest.raises(PowerModelError, match="needs dt <= 15min"):
        read(np.ones(10), 3600.0, "revenue")


def test_bad_input_gets_a_clear_error():
    with pytest.raises(PowerModelError, match="did you mean 'nvml'"):
        read(np.ones(10), 0.1, "nvlm")
    with pytest.raises(PowerModelError, match="within the signal, 0 to 1s"):
        read(np.ones(10), 0.1, "nvml", np.array([1.5]))
    with pytest.raises(PowerModelError, match="at least one sample"):
        read(np.ones(0), 0.1, "nvml")
    with pytest.raises(PowerModelError, match="needs a report period"):
        Sensor("x", "x", "gpu_power", 0.0, 0.0)
    fast = Sensor("fast", "x", "grid_power", 1.0, 0.001, deadband=0.1)
    with pytest.raises(PowerModelError, match="report period of at least the grid's step, 1s"):
        read(np.ones(10), 1.0, fast)
    with pytest.raises(PowerModelError, match="filter"):
        Sensor("x", "x", "gpu_power", 1.0, 1.0, filter="M-class")


def test_every_chain_cites_its_source_and_watches_a_power():
    for key, chain in CHAINS.items():
        assert chain.key == key
        assert chain.variable in ("gpu_power", "grid_power")
        assert any(tag in chain.source for tag in ("[P, ", "[S, ", "[A]")), key
    assert set(CHAINS) >= {"nvml", "dcgm", "revenue", "pmu30", "pmu60", "scada"}


# --- on a simulated profile ----------------------------------------------------------------------

HOUR = ["simulation.duration=1h", "reliability.rate_scale=0"]


@pytest.fixture(scope="module")
def hour():
    from powermodel import load_scenario

    return load_scenario("llama3-405b-16k-h100", HOUR)


def test_simulate_adds_each_chains_view_and_leaves_the_rest_as_it_was(hour):
    from powermodel.simulate import simulate

    plain = simulate(hour)
    seen = simulate(hour, sensors=("nvml", "revenue", "scada", "nvml"))
    added = sorted(set(seen.data_vars) - set(plain.data_vars))
    assert added == ["gpu_power_nvml", "grid_power_revenue", "grid_power_scada"]
    assert seen.drop_vars(added).identical(plain)  # the exact variables are the same bytes
    assert_allclose(seen["gpu_power_nvml"], read(plain["gpu_power"].values, 1.0, "nvml"))
    # revenue and SCADA report every other step or less often: held as their readings where
    # they change, the same bytes as read gives when read
    for key in ("revenue", "scada"):
        expected = read(plain["grid_power"].values, 1.0, key)
        assert seen[f"grid_power_{key}"].values.tobytes() == expected.tobytes()
    # the revenue meter at 1 s: the row ending each 15-min block holds that block's mean
    blocks = plain["grid_power"].values.reshape(4, 900).mean(axis=1)
    assert_allclose(seen["grid_power_revenue"].values[899::900], blocks, rtol=1e-12)
    attrs = seen["grid_power_revenue"].attrs
    assert attrs["units"] == "MW" and "revenue meter" in attrs["long_name"]
    assert "15min block" in attrs["description"]


def test_a_chain_the_step_cannot_resolve_is_refused_before_the_run(hour):
    from powermodel.simulate import simulate

    with pytest.raises(PowerModelError, match="needs dt <= 16.66ms; set simulation.dt to that"):
        simulate(hour, sensors=["pmu30"])
    with pytest.raises(PowerModelError, match="unknown sensor 'revenu'.*did you mean 'revenue'"):
        simulate(hour, sensors=["revenu"])


def test_sensor_view_reads_any_time_series_of_a_profile(hour):
    from powermodel.simulate import sensor_view, simulate

    ds = simulate(hour)
    view = sensor_view(ds, "dcgm", "facility_power")
    assert view.name == "facility_power_dcgm" and view.attrs["units"] == "MW"
    assert (view.time == ds.time).all()
    # DCGM at 1 s on a 1-s grid reads each interval's own mean (the 1-s average ending there)
    assert_allclose(view, ds["facility_power"], rtol=1e-12)
    with pytest.raises(PowerModelError, match="no time series 'job_state'"):
        sensor_view(ds, "nvml", "job_state")
    with pytest.raises(PowerModelError, match=r"no attrs\['dt'\]"):
        sensor_view(ds.assign_attrs(dt=None).drop_attrs(), "nvml")


def test_sensor_views_count_in_the_memory_a_run_is_checked_against(hour, monkeypatch):
    # every limit holds at every entry point: a run with views needs their memory too
    import importlib

    engine = importlib.import_module("powermodel.engine.preflight")  # the memory budget's
    plain = engine.memory_estimate(hour)
    steps = hour.simulation.n_steps
    assert engine.memory_estimate(hour, 3) == plain + 3 * steps * engine.BYTES_PER_SENSOR_STEP
    # room for the run alone, not for its six views (5 ms: the PMUs can read it), whose memory
    # is then the largest part: the refusal says to ask for fewer
    from powermodel import load_scenario, simulate

    fine = load_scenario(hour, {"simulation.duration": "10min", "simulation.dt": "5ms"})
    room = engine.memory_estimate(fine) + fine.simulation.n_steps * 100
    monkeypatch.setattr(engine, "available_memory", lambda: room)
    views = ["nvml", "dcgm", "revenue", "pmu30", "pmu60", "scada"]
    assert 6 * engine.BYTES_PER_SENSOR_STEP > engine.BYTES_PER_STEP + engine.BYTES_PER_CHUNK_STEP
    with pytest.raises(PowerModelError, match="ask for fewer sensor views"):
        simulate(fine, sensors=views)


def _profile(values: np.ndarray, dt: float):
    import pandas as pd
    import xarray as xr

    time = np.datetime64("2024-07-01T00:00:00", "ns") + (
        np.round(np.arange(values.size) * dt * 1e9).astype(np.int64).astype("timedelta64[ns]")
    )
    ds = xr.Dataset({"grid_power": ("time", values)}, coords={"time": pd.DatetimeIndex(time)})
    ds["grid_power"].attrs["units"] = "MW"
    return ds.assign_attrs(dt=dt)


def test_sensor_view_checks_the_step_against_the_times():
    from powermodel.simulate import sensor_view

    ds = _profile(np.arange(100.0), 1.0)
    # a dt of 0.1 s on 1-s data would read a 10-s average as NVML's 1 s: refused, not read
    with pytest.raises(PowerModelError, match="attrs\\['dt'\\] is 100ms but its time steps by 1s"):
        sensor_view(ds.assign_attrs(dt=0.1), "nvml", "grid_power")
    gappy = ds.isel(time=np.r_[0:10, 11:100])
    with pytest.raises(PowerModelError, match="not a uniform grid \\(steps from 1 to 2 s\\)"):
        sensor_view(gappy, "scada")
    with pytest.raises(PowerModelError, match="must be a step > 0 s, got 'x'"):
        sensor_view(ds.assign_attrs(dt="x"), "scada")
    # a PMU's 1/120 s on nanosecond times (steps of 8333333 and 8333334 ns) is uniform
    fine = _profile(np.ones(600), 1 / 120)
    assert_allclose(sensor_view(fine, "pmu30").values[-10:], 1.0, rtol=1e-12)


@pytest.mark.parametrize(
    ("chain", "dt", "gap"),
    [
        (Sensor("pc", "P-class", "grid_power", 2 / 60, 2 / 240, filter=P_CLASS), 1 / 240, True),
        (Sensor("db", "DCGM, deadband", "grid_power", 1.0, 0.1, deadband=0.5), 0.1, True),
        (Sensor("sb", "SCADA, deadband", "grid_power", 0.0, 2.0, deadband=0.5), 1.0, False),
    ],
)
def test_the_memory_of_a_sensor_view_is_what_the_estimate_counts(chain, dt, gap):
    # tracemalloc's peak over sensor_view: the worst chains (a P-class filter at every other
    # step with missing values, 56 B/step measured; a deadband on every step with missing
    # values, 82, whose chunks are bounded: before that fix its sparse tables took 355 B/step)
    import importlib
    import tracemalloc

    from powermodel.simulate import sensor_view

    engine = importlib.import_module("powermodel.engine.preflight")
    n = 400_000
    x = 100.0 + np.cumsum(np.random.default_rng(5).normal(size=n))
    if gap:
        x[::5000] = np.nan
    ds = _profile(x, dt)
    tracemalloc.start()
    sensor_view(ds, chain)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < n * engine.BYTES_PER_SENSOR_STEP, peak / n


def test_pmu_readings_after_two_hours_at_10_ms_are_the_exact_triangle_means():
    # The reference is the P-class sum y(r) = Σ xᵢ·(F(tᵢ₊₁ − r) − F(tᵢ − r)) in exact rational
    # arithmetic over the same float inputs (F the triangle's cumulative weight, pclass_step),
    # at 200 reports in the run's last seconds. The float grid edges i·dt lie within
    # ulp(7200 s) = 9e-13 s of i·dt: a weight moves by at most 60/s × 4.5e-13 s, under 1e-12
    # of a reading of a 100 ± 1 signal. A running integral of the whole signal (the filter's
    # form before issue 13) kept about 3e-10 here, its rounding growing with the run.
    from fractions import Fraction

    dt, n = 0.01, 720_000
    x = 100.0 + np.random.default_rng(11).normal(size=n)
    at = dt * np.arange(n - 600, n + 1, 3)
    y = read(x, dt, "pmu30", at)
    h = Fraction(1.0 / 60.0)
    step = Fraction(dt)

    def weight(z: Fraction) -> Fraction:
        u = min(max(z / h, Fraction(-1)), Fraction(1))
        return (1 + u) ** 2 / 2 if u < 0 else 1 - (1 - u) ** 2 / 2

    for t, got in zip(at, y, strict=True):
        r = Fraction((1.0 / 30.0) * int(np.floor(t / (1.0 / 30.0) + 1e-9)))
        first = int((r - h) / step) - 1
        exact = sum(
            Fraction(x[min(i, n - 1)]) * (weight(step * (i + 1) - r) - weight(step * i - r))
            for i in range(first, first + 8)
        )
        assert_allclose(got, float(exact), rtol=1e-11)


@pytest.mark.parametrize(
    "chain",
    [
        *CHAINS,
        Sensor("band", "SCADA", "grid_power", 0.0, 0.5, deadband=0.5),
        Sensor("often", "fast", "grid_power", 0.02, 0.003),
    ],
)
def test_readings_where_they_change_repeat_into_every_reading(chain):
    # read itself is the reference: its readings at every interval's end are read_changes'
    # readings, each held from its start to the next (to the bit), the first start at 0; a
    # signal with missing values and a ramp, on a 5-ms grid (fine enough for every chain)
    from powermodel.models.sensors import read_changes

    dt, n = 0.005, 200_000
    x = 100.0 + np.cumsum(np.random.default_rng(3).normal(size=n))
    x[::7001] = np.nan
    readings, start = read_changes(x, dt, chain)
    assert start[0] == 0 and np.all(np.diff(start) > 0)
    expected = read(x, dt, chain)
    assert np.repeat(readings, np.diff(start, append=n)).tobytes() == expected.tobytes()
    if chain in ("revenue", "scada"):  # one reading a report: 1,000 s of 900-s or 4-s reports
        assert start.size == {"revenue": 2, "scada": 251}[chain]
