"""powermodel.models.iir: scipy's recursive filter without importing scipy.signal (issue 30).

Expected values: ``scipy.signal.lfilter`` and ``scipy.signal.lfilter_zi`` themselves, compared
bit for bit (``tobytes``), on every call form the model makes (the plant's lags, 1-D and 2-D
with a state; the measurement chain's first-order low- and high-pass stages; the inference
load's AR(1) noise) and on hostile samples (NaN, infinities, signed zeros, subnormals).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from scipy import signal as sps

from powermodel.models import iir, signal

RNG = np.random.default_rng(30)
HOSTILE = np.array([0.0, -0.0, np.nan, 1.0, np.inf, -np.inf, 5e-324, -1e308, 1e308, 3.0])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()


@pytest.mark.parametrize("pole", [0.0, 1e-12, 0.5, 0.9990005, 1.0 - 1e-15])
def test_lag_filter_is_lfilter_to_the_bit(pole):
    u = RNG.normal(500.0, 80.0, size=(3, 4_001))
    zi = pole * u[:, :1]
    ours = iir.lfilter([1.0 - pole], [1.0, -pole], u, zi)
    theirs = sps.lfilter([1.0 - pole], [1.0, -pole], u, axis=-1, zi=zi)
    assert same_bits(ours[0], theirs[0]) and same_bits(ours[1], theirs[1])


@pytest.mark.parametrize("cutoff", [1e-4, 0.1, 2.0])
@pytest.mark.parametrize("high", [False, True])
def test_first_order_stages_are_lfilter_to_the_bit(cutoff, high):
    x = np.concatenate([RNG.normal(size=997), HOSTILE, RNG.normal(size=50)])
    b, den = signal.first_order(0.1, cutoff, high)
    zi = sps.lfilter_zi(b, den) * x[0]
    assert same_bits(iir.lfilter_zi(b, den), sps.lfilter_zi(b, den))
    ours = signal.first_order_filter(x, b, den)
    theirs = sps.lfilter(b, den, x, zi=zi)
    assert same_bits(ours[0], theirs[0]) and same_bits(ours[1], theirs[1])
    # carried from a state, as powermodel.piecewise.Filtered does
    carried = iir.lfilter(b, den, x[500:], ours[1])
    assert same_bits(carried[0], sps.lfilter(b, den, x[500:], zi=ours[1])[0])


@pytest.mark.parametrize("a", [0.0, -0.0, 0.37, 0.999])
def test_ar1_noise_form_is_lfilter_to_the_bit(a):
    shocks = np.concatenate([RNG.standard_normal(2_000), HOSTILE])
    ours = iir.lfilter([1.0], [1.0, -a], shocks, [a * 0.3])
    theirs = sps.lfilter([1.0], [1.0, -a], shocks, zi=[a * 0.3])
    assert same_bits(ours[0], theirs[0]) and same_bits(ours[1], theirs[1])


def test_lfilter_zi_of_any_order_and_scale_is_scipys():
    for _ in range(200):
        order = int(RNG.integers(1, 5))
        a = np.concatenate([[RNG.uniform(0.5, 3.0)], RNG.uniform(-0.4, 0.4, order)])
        b = RNG.normal(size=int(RNG.integers(1, order + 2)))
        assert same_bits(iir.lfilter_zi(b, a), sps.lfilter_zi(b, a)), (b, a)
    with pytest.raises(ValueError, match="recursive filter"):
        iir.lfilter_zi([1.0], [2.0])


def test_a_routine_that_answers_wrong_is_not_used(monkeypatch):
    """The guard catches a changed routine (here: one that returns its input) and the fallback,
    scipy.signal.lfilter itself, gives the same bits."""
    x = RNG.normal(size=(2, 300))

    class Changed:
        @staticmethod
        def _linear_filter(b, a, x, axis, zi):
            return x, zi

    monkeypatch.setattr(iir, "_extension", lambda: Changed)
    monkeypatch.setattr(iir, "_routine", [])
    ours = iir.lfilter([0.25], [1.0, -0.75], x, 0.75 * x[:, :1])
    assert iir._routine[0] is not Changed._linear_filter
    theirs = sps.lfilter([0.25], [1.0, -0.75], x, zi=0.75 * x[:, :1])
    assert same_bits(ours[0], theirs[0])


def test_a_module_that_does_not_load_falls_back(monkeypatch):
    def missing():
        raise ImportError("no scipy.signal._sigtools extension")

    monkeypatch.setattr(iir, "_extension", missing)
    monkeypatch.setattr(iir, "_routine", [])
    x = RNG.normal(size=100)
    assert same_bits(
        iir.lfilter([0.5], [1.0, -0.5], x, [0.0])[0],
        sps.lfilter([0.5], [1.0, -0.5], x, zi=[0.0])[0],
    )


SIMULATE = """
import sys
from powermodel import load_scenario, simulate
result = simulate(load_scenario("llama3-405b-16k-h100", {"simulation.duration": "2h"}))
assert float(result["grid_power"].mean()) > 0
print("scipy.signal" in sys.modules)
import scipy.signal
print(scipy.signal._signaltools._sigtools is sys.modules["scipy.signal._sigtools"])
print(scipy.signal.lfilter([0.5], [1.0, -0.5], [1.0, 1.0]).tolist())
"""


def test_a_simulation_does_not_import_scipy_signal_and_scipy_signal_still_imports():
    """A fresh process simulates the reference (plant lags, thermal, inference) without
    scipy.signal in sys.modules; scipy.signal imports afterwards, takes the extension module
    already loaded, and its lfilter works."""
    out = subprocess.run(
        [sys.executable, "-c", SIMULATE], capture_output=True, text=True, check=True, timeout=300
    ).stdout.split("\n")
    assert out[:3] == ["False", "True", "[0.5, 0.75]"]
