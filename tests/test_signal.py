"""Filters and spectra (powermodel.models.signal) against closed forms (issue 4, acceptances 2
and 4)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import QUIET, REFERENCE
from numpy.testing import assert_allclose

from powermodel import load_scenario, simulate
from powermodel.errors import PowerModelError
from powermodel.models import signal
from powermodel.rules import RuleError, check, load_rules


@pytest.mark.parametrize(
    ("shape", "fraction"),
    [
        ("step", 1.0),  # [D] 100 % of an instant step
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
    # |H| = (f/fc)/sqrt(1 + (f/fc)^2) = 1.6/sqrt(3.56) = 0.848 (about 85 % [D])
    assert np.abs(y[t > 100]).max() == pytest.approx(0.848, abs=0.005)


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


def test_segment_max_is_each_segments_max_to_the_bit():
    # the reference is numpy's max of each slice (the function's meaning); segments of one
    # sample, of every length up to and past SHORT_SEGMENT (whose tail is reduced), adjacent
    # ones, a gap, one ending at the array's end, and NaN carried as max carries it
    rng = np.random.default_rng(29)
    x = rng.normal(size=5_000)
    x[4_321] = np.nan
    lengths = np.r_[1, np.arange(1, 3 * signal.SHORT_SEGMENT), 700, 1, 2]
    stop = np.cumsum(lengths + rng.integers(0, 2, lengths.size))  # some adjacent, some apart
    start = stop - lengths
    start, stop = np.r_[start, 4_000, x.size - 9], np.r_[stop, 4_500, x.size]
    expected = [np.max(x[a:b]) for a, b in zip(start, stop, strict=True)]
    got = signal.segment_max(x, start, stop)
    np.testing.assert_array_equal(got, expected)
    assert np.isnan(got[-2]) and not np.isnan(got[:-2]).any()
    assert signal.segment_max(x, start[:0], stop[:0]).size == 0


@pytest.mark.parametrize("n", [5, 60, 3 * signal.BLOCK])
def test_rolling_max_and_min_in_blocks_are_scipys_to_the_bit(n):
    # scipy.ndimage's filters are the reference (the functions' documented meaning); a signal
    # of several blocks and a part block, windows shorter than a block and longer, float and the
    # int8 and bool arrays the rules' cause codes use
    from scipy.ndimage import maximum_filter1d, minimum_filter1d

    rng = np.random.default_rng(13)
    size = 6 * signal.BLOCK + 12_345
    for x in (rng.normal(size=size), rng.integers(0, 6, size, np.int8), rng.random(size) < 1e-3):
        origin = (n - 1) // 2
        np.testing.assert_array_equal(
            signal.rolling_max(x, n), maximum_filter1d(x, n, origin=origin)
        )
        np.testing.assert_array_equal(
            signal.rolling_min(x, n), minimum_filter1d(x, n, origin=origin)
        )


def test_a_rolling_filters_mirrored_start_is_scipys_to_the_bit():
    # the first n - 1 samples read the start mirrored (numpy: the best of the first
    # max(i + 1, n - 1 - i)), odd and even windows, signals of a window less one to two windows
    # (those a streamed run's last pieces and coarse series give); a start with signed zeros
    # is scipy's own
    # (after the start, of -0 and 0 that compare equal either may be kept)
    from scipy.ndimage import maximum_filter1d, minimum_filter1d

    rng = np.random.default_rng(31)
    for n, size in itertools.product((2, 3, 4, 7, 8, 99, 100), (-1, 0, 1, 2)):
        size += n  # from a window less one (the mirror its whole length)
        for x in (rng.normal(size=size), rng.choice([-0.0, 0.0, 1.0, -1.0], size)):
            origin = (n - 1) // 2
            for mine, scipys in (
                (signal.rolling_max, maximum_filter1d),
                (signal.rolling_min, minimum_filter1d),
            ):
                got, expected = mine(x, n), scipys(x, n, origin=origin)
                np.testing.assert_array_equal(got, expected)
                start = slice(0, n - 1)
                np.testing.assert_array_equal(np.signbit(got[start]), np.signbit(expected[start]))


@pytest.mark.parametrize("seed", range(20))
def test_a_range_reduction_is_each_ranges_own(seed):
    # every range at once (the disturbances' losses, a frequency stretch's extremes) as each
    # range reduced alone
    rng = np.random.default_rng(seed)
    x = rng.normal(size=int(rng.integers(1, 300)))
    begin = rng.integers(0, x.size, size=int(rng.integers(1, 40)))
    end = begin + rng.integers(1, x.size + 1, size=begin.size)
    end = np.minimum(end, x.size)
    for ufunc, reduce in ((np.minimum, np.min), (np.maximum, np.max), (np.add, np.sum)):
        expected = [reduce(x[b:e]) for b, e in zip(begin, end, strict=True)]
        assert_allclose(signal.range_reduce(ufunc, x, begin, end), expected, rtol=1e-12)
