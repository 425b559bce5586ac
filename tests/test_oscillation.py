"""Oscillation screening against closed forms (issue 15: the oscillation screen's acceptance)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from numpy.testing import assert_allclose
from scipy import signal as sps

from powermodel.errors import DataFileError, PowerModelError
from powermodel.models import oscillation
from powermodel.models.oscillation import (
    Mode,
    exposure_band,
    forced_spectrum,
    harmonics,
    mode_gain,
    pmu_view,
    screen,
    step_time_shifts,
)
from powermodel.oscillation import GridMode, load_modes, screen_dataset

# One lightly damped inter-area mode: 0.8 Hz, 3 % damping, 2 MW of monitored swing per MW of load
# swing at its frequency, 5 MW allowed
MODE = Mode(frequency=0.8, damping=0.03, gain=2.0, limit=5.0, name="inter-area")
SWING = 10.0  # MW: the load's sinusoidal amplitude


def steady_amplitude(freq: float, mode: Mode, amplitude: float) -> float:
    """Steady-state response amplitude of the mode's H(s) to a sinusoidal load, simulated in time:
    300 s is 45 time constants 1/(ζ·ω_n) = 6.6 s, so the transient is gone (e^-45) by the last
    20 s, whose half peak-to-peak is the amplitude (at 5 ms steps a sampled peak is within 1e-4)."""
    wn = 2.0 * np.pi * mode.frequency
    system = sps.lti(
        [mode.gain * 2.0 * mode.damping * wn, 0.0], [1.0, 2.0 * mode.damping * wn, wn**2]
    )
    t = np.arange(0.0, 300.0, 0.005)
    _, y, _ = sps.lsim(system, amplitude * np.sin(2.0 * np.pi * freq * t), t)
    tail = y[t >= 280.0]
    return 0.5 * (tail.max() - tail.min())


def test_a_mode_driven_at_and_off_its_frequency_matches_the_closed_form():
    # analytic: |H(j·ω_n)| = gain = 2 (the normalisation), so 10 MW at 0.8 Hz gives 20 MW;
    # at r = 1.5: 2·ζ·r / √((1 − r²)² + (2ζr)²) = 0.09 / √(1.5625 + 0.0081) = 0.07181, so 1.436 MW
    at, off = MODE.frequency, 1.5 * MODE.frequency
    analytic = mode_gain([at, off], MODE) * SWING
    assert_allclose(analytic, [20.0, SWING * 2.0 * 0.09 / np.sqrt(1.5625 + 0.0081)], rtol=1e-12)
    simulated = [steady_amplitude(f, MODE, SWING) for f in (at, off)]
    assert_allclose(simulated, analytic, rtol=0.02)  # the acceptance's 2 %
    # the limit (5 MW) lies between the two responses: the screen flags the first, clears the second
    found = [screen([f], [SWING], [MODE]) for f in (at, off)]
    assert [bool(r["flagged"][0]) for r in found] == [True, False]
    assert_allclose([r["response"][0] for r in found], analytic, rtol=1e-12)
    # the swing at which the mode reaches its limit at resonance: limit / gain = 2.5 MW
    assert_allclose(found[0]["swing_limit"], [2.5], rtol=1e-12)


def test_the_profile_screen_matches_the_closed_form_through_the_spectrum():
    # the same two cases as profiles (1000 s at 0.1 s, flat-top spectrum, RSS over its main lobe
    # divided by its ENBW): the response within 2 % of the analytic 20 MW and 1.436 MW
    t = 0.1 * np.arange(10_000)
    modes = [GridMode(name="inter-area", frequency=0.8, damping=0.03, gain=2.0, limit=5.0)]
    rows = []
    for f in (0.8, 1.2):
        ds = xr.Dataset(
            {"grid_power": ("time", 300.0 + SWING * np.sin(2.0 * np.pi * f * (t + 0.05)))},
            coords={"time": pd.date_range("2024-07-01", periods=t.size, freq="100ms")},
            attrs={"dt": 0.1},
        )
        rows.append(screen_dataset(ds, modes).iloc[0])
    assert_allclose([r["response"] for r in rows], mode_gain([0.8, 1.2], MODE) * SWING, rtol=0.02)
    assert [r["verdict"] for r in rows] == ["flag", "clear"]
    assert_allclose([r["line_frequency"] for r in rows], [0.8, 1.2], atol=1e-3)  # 1 bin
    assert np.isnan(rows[0]["step_time_below"])  # no step_time attr: no shift search


def test_a_square_waves_harmonics_read_4a_over_pi_k():
    # Fourier series of a ±A square wave: 4A/(πk) at odd k, nothing at even k (analytic). The
    # 6-s period does not divide the 1000-s record, so the lines fall between bins: the flat-top
    # window holds them within 1 %. The sampled wave's own lines differ from the series by
    # (πk/M)/sin(πk/M), at most 4e-4 for k ≤ 9 and M = 600 samples a period.
    amplitude, period, dt = 25.0, 6.0, 0.01
    t = dt * np.arange(100_000)
    wave = np.where(np.round(t % period, 9) < period / 2, amplitude, -amplitude) + 200.0
    freqs, amps = forced_spectrum(wave, dt)
    k = np.arange(1, 10)
    expected = np.where(k % 2 == 1, 4.0 * amplitude / (np.pi * k), 0.0)
    read = oscillation.line_amplitudes(freqs, amps, k / period)
    assert_allclose(read[::2], expected[::2], rtol=0.01)
    assert (read[1::2] < 0.01 * amplitude).all()
    # one period through harmonics(): every harmonic on a bin
    f1, a1 = harmonics(period, wave[:600])
    assert_allclose(f1[:9], k / period, rtol=1e-12)
    assert_allclose(a1[:9:2], expected[::2], rtol=0.01)


def test_the_exposure_band_edges_put_the_response_at_the_limit():
    # closed form of |H|·a = limit (docstring); at the edges the response is the limit exactly
    low, high = exposure_band([SWING, 2.5, 1.0], MODE)
    assert_allclose(mode_gain(low[:1], MODE) * SWING, [MODE.limit], rtol=1e-10)
    assert_allclose(mode_gain(high[:1], MODE) * SWING, [MODE.limit], rtol=1e-10)
    assert_allclose(low[0] * high[0], MODE.frequency**2, rtol=1e-12)  # geometric symmetry
    assert np.isnan(low[1:]).all()  # 2.5 MW reaches the limit only on f_n; 1 MW never


def test_the_step_time_shifts_clear_every_mode_when_screened_again():
    # a 1.25-s step (0.8 Hz) of a ±10 MW square swing sits on the mode; a second mode at 2.3 Hz
    # sits near the third harmonic of the shifted steps' range
    modes = [MODE, Mode(frequency=2.3, damping=0.05, gain=1.0, limit=1.5)]
    step = 1.25
    _, amps = harmonics(step, np.repeat([10.0, -10.0], 500))
    amps = amps[:15]
    k = np.arange(1, amps.size + 1)
    assert screen(k / step, amps, modes)["flagged"][0]
    below, above = step_time_shifts(step, amps, modes)
    assert below < step < above
    for t in (below, above):
        assert not screen(k / t, amps, modes)["flagged"].any()
    # the nearest: a step 0.1 % nearer the current one is flagged again
    for t in (below * 1.001, above / 1.001):
        assert screen(k / t, amps, modes)["flagged"].any()
    # a step that already clears is its own answer
    assert not screen(k / 2.5, amps, modes)["flagged"].any()
    assert step_time_shifts(2.5, amps, modes) == (2.5, 2.5)


def test_a_pmu_at_30_per_second_reports_a_23_hz_line_at_7_hz():
    # the PMU samples its filtered signal 30 times a second: 23 Hz folds to |23 − 30| = 7 Hz
    # (at 60 a second it stays at 23 Hz); the P-class triangle of half-width 1/60 s passes
    # sinc²(23/60) = 0.6024 and the 2-ms interval means sinc(0.046) = 0.9965 (analytic)
    dt = 0.002
    t = dt * (np.arange(10_000) + 0.5)
    power = 320.0 + 5.0 * np.sin(2.0 * np.pi * 23.0 * t) + 2.0 * np.sin(2.0 * np.pi * 1.5 * t)
    view = pmu_view(power, dt, [23.0, 1.5], "pmu30")
    assert_allclose(view["alias"], [7.0, 1.5])
    assert_allclose(view["raw"], [5.0, 2.0], rtol=0.01)
    assert_allclose(view["expected"][0], np.sinc(23.0 / 60.0) ** 2 * np.sinc(0.046), rtol=1e-12)
    assert_allclose(view["attenuation"], view["expected"], rtol=0.01)
    assert_allclose(pmu_view(power, dt, [23.0], "pmu60")["alias"], [23.0])
    with pytest.raises(PowerModelError, match="no PMU"):
        pmu_view(power, dt, [23.0], "scada")


def test_a_mode_file_with_a_bad_field_is_refused_with_the_field_and_the_fix(tmp_path):
    good = tmp_path / "modes.toml"
    good.write_text(
        '[[mode]]\nname = "inter-area"\nfrequency = 0.8\ndamping = 0.03\ngain = 2.0\nlimit = 5.0\n'
    )
    assert load_modes(good)[0].frequency == 0.8
    bad = tmp_path / "modes.csv"
    bad.write_text("name,frequency,damping,gain,limit\ninter-area,0.8,1.5,2,5\n")
    with pytest.raises(DataFileError, match=r"mode 1 \(inter-area\): damping: .*less than 1"):
        load_modes(bad)
    typo = tmp_path / "typo.toml"
    typo.write_text('[[mode]]\nname = "a"\nfrequency = 0.8\ndamping = 0.03\ngian = 2\nlimit = 5\n')
    with pytest.raises(DataFileError, match="did you mean 'gain'"):
        load_modes(typo)
    with pytest.raises(PowerModelError, match="damping must be between 0 and 1"):
        Mode(frequency=0.8, damping=0.0, gain=1.0, limit=1.0)
