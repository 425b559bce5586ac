"""Forced oscillations: the site's power lines against grid modes the user supplies.

A training job's power repeats every step, so its spectrum is a set of lines at ``k / T``
(``T`` the step time) on top of the broadband content of checkpoints and failures. A grid
mode near one of those lines is driven at resonance. This module screens the lines against
modes: each mode a normalised second-order resonance seen from the connection
(:func:`mode_gain`), the site's content a one-sided amplitude spectrum
(:func:`forced_spectrum`, :func:`harmonics`), the verdict per mode (:func:`screen`), the step
times that move the lines off the modes (:func:`step_time_shifts`) and what a PMU reports of
the lines (:func:`pmu_view`).

A mode is anything with the attributes ``frequency`` [Hz], ``damping`` [1], ``gain`` [unit per
MW] and ``limit`` [unit]: a :class:`Mode` here, or the validated
:class:`powermodel.oscillation.GridMode` that files are read into.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from powermodel.errors import PowerModelError
from powermodel.models import sensors
from powermodel.models.signal import check_seconds

# scipy's flat-top window (D'Antona and Ferrero's five terms): a sinusoid anywhere between two
# bins reads within 0.02 % of its amplitude in its peak bin, at the price of a main lobe
# about 5 bins wide
FLATTOP_ENBW = 3.7702  # equivalent noise bandwidth of the flat-top window [bins]
FLATTOP_LOBE = 2  # bins either side of a line's peak bin that still read near its amplitude
_SLACK = 1e-9  # relative step past a band edge, so that a response there rounds under its limit
SHIFT_SPAN = 4.0  # step_time_shifts looks within T / SHIFT_SPAN to T · SHIFT_SPAN
SHIFT_RESOLUTION = 1e-4  # relative spacing of the step times step_time_shifts tries


class ModeLike(Protocol):
    frequency: float
    damping: float
    gain: float
    limit: float


@dataclass(frozen=True)
class Mode:
    """One lightly damped grid mode as the connection sees it.

    Parameters
    ----------
    frequency
        Natural frequency ``f_n``. [Hz]
    damping
        Damping ratio ``ζ``, between 0 and 1. [1]
    gain
        Response of the monitored quantity per MW of sinusoidal load swing at ``f_n``: the
        mode's participation or sensitivity at the connection (MW of tie-line swing per MW,
        mHz per MW, ...). [unit per MW]
    limit
        Allowed response amplitude. [unit]
    unit
        The unit of the response and the limit.
    name
        A label for tables.
    """

    frequency: float
    damping: float
    gain: float
    limit: float
    unit: str = "MW"
    name: str = ""

    def __post_init__(self) -> None:
        _check_modes([self])


def _check_modes(modes: Sequence[ModeLike]) -> None:
    """Refuse a mode the resonance cannot represent, naming the field and the range."""
    for i, m in enumerate(modes):
        label = getattr(m, "name", "") or f"mode {i + 1}"
        for field, ok, bound in (
            ("frequency", 0.0 < m.frequency <= 1000.0, "in (0, 1000] Hz"),
            ("damping", 0.0 < m.damping < 1.0, "between 0 and 1 (exclusive)"),
            ("gain", 0.0 < m.gain < np.inf, "a positive number"),
            ("limit", 0.0 < m.limit < np.inf, "a positive number"),
        ):
            if not ok:
                raise PowerModelError(
                    f"{label}: {field} must be {bound}, got {getattr(m, field)!r}"
                )


def _mode_arrays(modes: Sequence[ModeLike]) -> tuple[np.ndarray, ...]:
    """Frequency, damping, gain and limit of each mode, as column vectors (modes × 1)."""
    if not len(modes):
        raise PowerModelError("no grid modes to screen: give at least one")
    _check_modes(modes)
    return tuple(
        np.array([float(getattr(m, f)) for m in modes])[:, None]
        for f in ("frequency", "damping", "gain", "limit")
    )


def _resonance(freq: np.ndarray, fn: np.ndarray, zeta: np.ndarray) -> np.ndarray:
    """``|H(j2πf)| / gain`` of the normalised resonance: 1 at ``f_n``."""
    r = np.abs(freq) / fn
    two_zr = 2.0 * zeta * r
    return two_zr / np.hypot(1.0 - r * r, two_zr)


def mode_gain(freq: np.ndarray | float, mode: ModeLike) -> np.ndarray:
    """Response amplitude of a mode per MW of sinusoidal load swing at each frequency.

    Parameters
    ----------
    freq
        Frequencies of the load swing. [Hz]
    mode
        The mode (:class:`Mode`).

    Returns
    -------
    numpy.ndarray
        ``|H(j2πf)|``, the shape of ``freq``. [mode's unit per MW]

    Notes
    -----
    Each mode is the normalised second-order resonance
    ``H(s) = g · 2ζω_n·s / (s² + 2ζω_n·s + ω_n²)``, whose magnitude is
    ``|H(jω)| = g · 2ζr / √((1 − r²)² + (2ζr)²)`` with ``r = ω / ω_n``, so that
    ``|H(jω_n)| = g`` exactly: the gain the user states is the response at the mode's
    frequency. It is the modal-residue form of one lightly damped mode seen from one
    connection (a pair of complex poles and the residue that connects the load to the
    monitored quantity), band-pass so that a steady load shift moves nothing. It ignores the
    other modes (each mode of a table is screened alone), the mode's shape elsewhere in the
    grid (the gain is for the one monitored quantity), the zeros a full transfer function has
    between modes, and any change of the mode with operating point.
    """
    _check_modes([mode])
    f = np.asarray(freq, dtype=float)
    return mode.gain * _resonance(f, float(mode.frequency), float(mode.damping))


def exposure_band(amplitude: np.ndarray | float, mode: ModeLike) -> tuple[np.ndarray, np.ndarray]:
    """The band of frequencies where a line of this amplitude drives a mode over its limit.

    Parameters
    ----------
    amplitude
        Amplitude of a sinusoidal load swing. [MW]
    mode
        The mode (:class:`Mode`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(low, high)`` edges, the shape of ``amplitude``: a line at ``low < f < high`` drives
        the mode over its limit, one at an edge exactly to it; NaN where the line cannot reach
        the limit at any frequency (``a · g ≤ limit``). [Hz]

    Notes
    -----
    With ``q = limit / (a·g)`` (< 1 for a band to exist), ``|H|·a > limit`` is
    ``|1 − r²| < c·r`` with ``c = 2ζ·√(1 − q²) / q``, whose edges are the positive roots of
    ``r² ∓ c·r − 1 = 0``:

    ``r_low, r_high = (∓c + √(c² + 4)) / 2``, and ``r_low · r_high = 1`` (the band is
    symmetric about ``f_n`` on a log scale).
    """
    _check_modes([mode])
    a = np.asarray(amplitude, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = mode.limit / (a * mode.gain)
        c = np.where(q < 1.0, 2.0 * mode.damping * np.sqrt(1.0 - q * q) / q, np.nan)
    root = np.sqrt(c * c + 4.0)
    return 0.5 * (root - c) * mode.frequency, 0.5 * (root + c) * mode.frequency


def forced_spectrum(power: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided amplitude spectrum of a power series, mean removed, flat-top window.

    Parameters
    ----------
    power
        Interval means on a uniform grid, no missing values. [MW]
    dt
        Step of the grid. [s]

    Returns
    -------
    tuple of numpy.ndarray
        ``(freqs, amps)``: bins ``k / (N·dt)`` from 0 to the Nyquist frequency [Hz] and the
        peak amplitude a sinusoid at that bin would have [MW]; the mean (bin 0) reads 0.

    Notes
    -----
    ``a_k = 2·|Σ w_n x_n e^{−j2πkn/N}| / Σ w_n`` with ``w`` scipy's flat-top window: the
    amplitude correction ``2 / Σ w`` is exact for a sinusoid on a bin, and the window's flat
    main lobe keeps a sinusoid between bins within 0.02 % in its peak bin (a rectangular
    window loses up to 36 % there). The price is width: a line reads near its amplitude over
    ``±FLATTOP_LOBE`` bins, so two lines need about 5 bins between them to read apart, and the
    squares of a line's bins sum to ``FLATTOP_ENBW`` times its amplitude squared (which
    :func:`screen` divides out).

    Limits: the resolution is ``1 / (N·dt)``, the record's inverse duration; the highest bin is
    the Nyquist frequency ``1 / (2·dt)``, and interval means attenuate a line at ``f`` by
    ``sinc(f·dt)`` (36 % at the Nyquist frequency), so content above ``1 / (4·dt)``
    (:func:`powermodel.models.signal.resolved`) is not trusted for a verdict.
    """
    x = np.asarray(power, dtype=float)
    if x.ndim != 1 or x.size < 8:
        raise PowerModelError("a spectrum needs a series of at least 8 samples")
    if not np.isfinite(x).all():
        raise PowerModelError(
            "the power series holds missing or infinite values: a spectrum needs every "
            "sample; screen a stretch without gaps"
        )
    check_seconds(dt, "the grid step")
    from scipy.signal import windows  # noqa: PLC0415 - scipy's import is paid by what uses it

    w = windows.flattop(x.size, sym=False)
    amps = 2.0 * np.abs(np.fft.rfft((x - x.mean()) * w)) / w.sum()
    amps[0] = 0.0
    return np.fft.rfftfreq(x.size, dt), amps


def harmonics(step_time: float, waveform: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The iteration's lines: frequencies ``k / T`` and their amplitudes from one period.

    Parameters
    ----------
    step_time
        The step time ``T``. [s]
    waveform
        One step's power, ``M`` interval means of ``T / M`` each. [MW]

    Returns
    -------
    tuple of numpy.ndarray
        ``(freqs, amps)`` for ``k = 1 … ⌈M/2⌉ − 1``: ``k / T`` [Hz] and the peak amplitude of
        harmonic ``k`` of the periodic repetition of the waveform [MW].

    Notes
    -----
    One period of a periodic signal puts every harmonic on a bin, so
    ``a_k = 2·|X_k| / M`` (rectangular window) is exact for the sampled waveform. A square
    wave of amplitude ``A`` (±A) has ``a_k = 4A / (πk)`` for odd ``k`` (its Fourier series);
    sampled waveforms read those to within the interval means' attenuation ``sinc(k/M)``.
    A list of amplitudes known otherwise needs no function: harmonic ``k`` is at ``k / T``.
    """
    x = np.asarray(waveform, dtype=float)
    if x.ndim != 1 or x.size < 3 or not np.isfinite(x).all():
        raise PowerModelError("a step's waveform needs at least 3 finite samples")
    check_seconds(step_time, "the step time")
    k = np.arange(1, (x.size + 1) // 2)
    amps = 2.0 * np.abs(np.fft.rfft(x)[k]) / x.size
    return k / step_time, amps


def _responses(
    freqs: np.ndarray, amps: np.ndarray, modes: Sequence[ModeLike]
) -> tuple[np.ndarray, ...]:
    """Each line's response amplitude in each mode (modes × lines), and the modes' arrays."""
    fn, zeta, gain, limit = _mode_arrays(modes)
    f = np.asarray(freqs, dtype=float).ravel()
    a = np.asarray(amps, dtype=float).ravel()
    if f.shape != a.shape or not f.size:
        raise PowerModelError(
            f"frequencies and amplitudes must be two arrays of the same length, got "
            f"{np.shape(freqs)} and {np.shape(amps)}"
        )
    if not (np.isfinite(f).all() and np.isfinite(a).all() and (f >= 0).all() and (a >= 0).all()):
        raise PowerModelError("frequencies and amplitudes must be finite and not negative")
    h = gain * _resonance(f[None, :], fn, zeta)
    return h, h * a[None, :], limit


def screen(
    freqs: np.ndarray, amps: np.ndarray, modes: Sequence[ModeLike], enbw: float = 1.0
) -> dict[str, np.ndarray]:
    """Each mode's response to a set of lines, against its limit.

    Parameters
    ----------
    freqs
        Frequencies of the lines (or spectrum bins). [Hz]
    amps
        Their peak amplitudes. [MW]
    modes
        The grid modes (:class:`Mode`).
    enbw
        Equivalent noise bandwidth, in bins, of the window behind ``amps``: 1 for a list of
        lines (:func:`harmonics`) or a rectangular window, :data:`FLATTOP_ENBW` for
        :func:`forced_spectrum`. [bins]

    Returns
    -------
    dict of numpy.ndarray
        One value per mode: ``line_frequency`` [Hz] and ``line_amplitude`` [MW] of the line
        that drives it hardest, ``gain_at_line`` (``|H|`` there) [unit per MW], ``response``
        [unit], ``ratio`` (response / limit) [1], ``flagged`` (ratio > 1) and ``swing_limit``
        [MW], the largest amplitude of the most-exposed line alone that keeps the response at
        the limit, ``limit / |H|``.

    Notes
    -----
    The response is the root sum of squares of the lines' responses,
    ``R = √(Σ_k (|H(j2πf_k)| · a_k)² / B)``, ``B`` = ``enbw``: the amplitude of the one
    sinusoid with the same variance as the mode's response (√2 × its RMS). Chosen over the sum
    of amplitudes (the peak when every line's phase lines up) because it is exact for one
    line, the case a lightly damped mode usually sees (one line within its band dominates),
    and because on broadband content (checkpoints, failures: steps with continuous spectra) it
    does not depend on the record's length, where a sum over bins grows as its square root.
    Where several lines of comparable response drive one mode, their peaks can reach the sum,
    up to √n times ``R``: compare ``R`` with the limit divided by √n for a worst case.

    ``R`` is never taken below the strongest line's own response, ``max_k |H(j2πf_k)|·a_k``:
    where a mode's band spans few bins (a short record), ``|H|`` falls across the flat-top's
    main lobe and the lobe's root sum of squares under-reads a line on the mode (by 5 % when
    the half-power band ``2ζf_n`` spans 6 bins).
    """
    if not (np.isfinite(enbw) and enbw >= 1.0):
        raise PowerModelError(f"enbw must be a number of bins ≥ 1, got {enbw}")
    h, driven, limit = _responses(freqs, amps, modes)
    best = np.argmax(driven, axis=1)
    rows = np.arange(h.shape[0])
    strongest = driven[rows, best]
    response = np.maximum(np.sqrt(np.sum(driven * driven, axis=1) / enbw), strongest)
    ratio = response / limit[:, 0]
    f = np.asarray(freqs, dtype=float).ravel()
    a = np.asarray(amps, dtype=float).ravel()
    with np.errstate(divide="ignore"):
        swing = limit[:, 0] / h[rows, best]
    return {
        "line_frequency": f[best],
        "line_amplitude": a[best],
        "gain_at_line": h[rows, best],
        "response": response,
        "ratio": ratio,
        "flagged": ratio > 1.0,
        "swing_limit": swing,
    }


def step_time_shifts(
    step_time: float, harmonic_amplitudes: np.ndarray, modes: Sequence[ModeLike]
) -> tuple[float, float]:
    """The nearest step times, below and above, at which the harmonics clear every mode.

    Parameters
    ----------
    step_time
        The current step time ``T``. [s]
    harmonic_amplitudes
        Amplitude ``a_k`` of harmonic ``k = 1, 2, …`` (at ``k / T``), held as the step time
        changes. [MW]
    modes
        The grid modes (:class:`Mode`).

    Returns
    -------
    tuple of float
        ``(below, above)``: the longest step time ``≤ T`` and the shortest ``≥ T`` at which
        :func:`screen` of the lines ``(k / T', a_k)`` clears every mode (both ``T`` if it
        already does); NaN where none lies within ``T / SHIFT_SPAN`` to ``T · SHIFT_SPAN``. [s]

    Notes
    -----
    Harmonic ``k`` alone drives mode ``m`` over its limit on the band
    ``f_low < k / T' < f_high`` (:func:`exposure_band`, closed form), that is for
    ``k / f_high < T' < k / f_low``. The combined response (root sum of squares over the
    harmonics, as :func:`screen`) is tried at every such edge, nudged outward by a relative
    ``1e-9``, and on a geometric grid of step times a relative :data:`SHIFT_RESOLUTION`
    apart; the nearest that clears is returned. Where one harmonic sets the edge (the usual
    case with lightly damped modes) the answer is the closed form's edge; where several add
    up, it is within :data:`SHIFT_RESOLUTION` of the true edge, on the clear side.
    """
    check_seconds(step_time, "the step time")
    a = np.asarray(harmonic_amplitudes, dtype=float).ravel()
    if not a.size or not (np.isfinite(a).all() and (a >= 0).all()):
        raise PowerModelError("harmonic amplitudes must be finite, not negative, at least one")
    k = np.arange(1, a.size + 1)
    edges = [np.array([step_time])]
    for mode in modes:
        low, high = exposure_band(a, mode)
        with np.errstate(divide="ignore", invalid="ignore"):
            edges += [k / high * (1.0 - _SLACK), k / low * (1.0 + _SLACK)]
    n = int(np.ceil(np.log(SHIFT_SPAN) / SHIFT_RESOLUTION))
    grid = step_time * np.exp(SHIFT_RESOLUTION * np.arange(-n, n + 1))
    tries = np.concatenate([grid, *edges])
    tries = np.unique(
        tries[np.isfinite(tries) & (np.abs(np.log(tries / step_time)) <= np.log(SHIFT_SPAN))]
    )
    clear = np.ones(tries.size, dtype=bool)
    for start in range(0, tries.size, 4096):  # blocks bound the modes × harmonics × tries array
        t = tries[start : start + 4096]
        _, driven, limit = _responses(
            (k[:, None] / t[None, :]).ravel(), np.repeat(a, t.size), modes
        )
        response = np.sqrt(np.sum(driven.reshape(len(modes), a.size, t.size) ** 2, axis=1))
        clear[start : start + 4096] = (response <= limit).all(axis=0)
    below = tries[(tries <= step_time) & clear]
    above = tries[(tries >= step_time) & clear]
    return (
        float(below.max()) if below.size else np.nan,
        float(above.min()) if above.size else np.nan,
    )


def _alias(freq: np.ndarray, rate: float) -> np.ndarray:
    """The frequency a line at ``freq`` shows at after sampling at ``rate``: folded into
    ``[0, rate/2]``."""
    return np.abs(freq - rate * np.round(freq / rate))


def pmu_view(
    power: np.ndarray, dt: float, freqs: np.ndarray, chain: str | sensors.Sensor = "pmu30"
) -> dict[str, np.ndarray]:
    """What a PMU reports of a signal's lines, against the signal itself.

    Parameters
    ----------
    power
        Interval means on a uniform grid starting at 0. [MW]
    dt
        Step of the grid; the chain's :func:`powermodel.models.sensors.step_needed` or finer. [s]
    freqs
        Frequencies of the lines to follow. [Hz]
    chain
        A PMU chain: ``"pmu30"``, ``"pmu60"`` or a :class:`powermodel.models.sensors.Sensor`
        with the P-class filter.

    Returns
    -------
    dict of numpy.ndarray
        One value per line: ``frequency`` [Hz], ``raw`` amplitude in the signal [MW],
        ``alias``, the frequency the reports show it at [Hz], ``reported`` amplitude there
        [MW], ``attenuation`` (reported / raw) [1] and ``expected``, the closed form of the
        attenuation [1].

    Notes
    -----
    The reports are :func:`powermodel.models.sensors.read` at the chain's report instants
    ``m · T_r`` within the run (the first, whose window starts before the run, left out); both
    spectra are :func:`forced_spectrum`, each line read as the largest bin within the
    window's main lobe around its frequency. The reports sample the filtered signal at
    ``1 / T_r``, so a line above half that rate folds to
    ``|f − (1/T_r) · round(f · T_r)|``: a 23-Hz line read 30 times a second shows at 7 Hz.
    The P-class triangle of half-width ``h`` (two cycles of the nominal frequency in all)
    passes ``sinc²(f·h)`` of a line, and the held interval means ``sinc(f·dt)``, so
    ``expected = sinc²(f·h) · sinc(f·dt)`` (``sinc(x) = sin(πx)/(πx)``) [S, ieee_c37_118_1].
    A line that folds onto another (or onto 0) reads their combination.

    References
    ----------
    .. [ieee_c37_118_1] IEEE, "IEEE Standard for Synchrophasor Measurements for Power Systems
       (C37.118.1-2011) and Amendment 1: Modification of Selected Performance Requirements
       (C37.118.1a-2014)", IEEE Standards Association (2014)
    """
    s = sensors.lookup(chain)
    if s.filter != sensors.P_CLASS:
        raise PowerModelError(
            f"the {s.label} chain ({s.key}) is no PMU: choose pmu30 or pmu60, or a Sensor with "
            f"the {sensors.P_CLASS} filter"
        )
    f = np.asarray(freqs, dtype=float).ravel()
    x = np.asarray(power, dtype=float)
    raw_f, raw_a = forced_spectrum(x, dt)
    end = x.size * dt
    at = s.period * np.arange(1, int(np.floor(end / s.period * (1 + 1e-12))) + 1)
    rep_f, rep_a = forced_spectrum(sensors.read(x, dt, s, at), s.period)
    alias = _alias(f, 1.0 / s.period)
    raw = line_amplitudes(raw_f, raw_a, f)
    reported = line_amplitudes(rep_f, rep_a, alias)
    with np.errstate(divide="ignore", invalid="ignore"):
        attenuation = reported / raw
    return {
        "frequency": f,
        "raw": raw,
        "alias": alias,
        "reported": reported,
        "attenuation": attenuation,
        "expected": np.sinc(f * 0.5 * s.window) ** 2 * np.sinc(f * dt),
    }


def line_amplitudes(freqs: np.ndarray, amps: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The amplitude [MW] of the lines at frequencies ``at`` [Hz] in a :func:`forced_spectrum`
    ``(freqs, amps)``: the largest bin within the flat-top's main lobe (±:data:`FLATTOP_LOBE`
    bins) around each."""
    df = freqs[1] - freqs[0]
    centre = np.rint(at / df).astype(np.int64)
    near = np.clip(centre[:, None] + np.arange(-FLATTOP_LOBE, FLATTOP_LOBE + 1), 0, freqs.size - 1)
    return amps[near].max(axis=1)
