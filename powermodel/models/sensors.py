"""Sensor chains: a simulated signal as an instrument reports it.

Signals are interval means on a uniform grid of step ``dt`` starting at 0, held over each
interval, as powermodel writes them (:mod:`powermodel.models.signal`). No instrument reports
those: a GPU's board-power reading is a 1-s moving average, a revenue meter reports 15-min block
demands, a PMU filters over two cycles of the grid frequency, a SCADA point is a sample held
for seconds. A :class:`Sensor` describes such a chain and :func:`read` gives the value it
reports at any instants, exactly for a held signal (an integral of a step function is piecewise
linear, so window means are differences of interpolated integrals).

A reading whose window starts before the signal does is NaN: no report yet (a revenue meter
has no block demand before its first block ends; a value made up for the time before the run
would be a block that never was). A window that holds a missing value (NaN) reads NaN too: a
meter reports no demand for an interval with missing data, which meter data management flags for
a separate, labelled estimation (the source is in :func:`read`); a mean of the part that is there
would be a different quantity with nothing to tell it apart. After the end the signal is taken as
its last value (a steady state), which only a PMU's last reports reach.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from powermodel.durations import format_duration
from powermodel.errors import PowerModelError
from powermodel.models.signal import check_seconds

P_CLASS = "P-class"  # IEEE C37.118.1 P-class reference filter (a two-cycle triangle)
FILTERS = (None, P_CLASS)
NOMINAL_FREQUENCY = 60.0  # Hz: the North American grid, whose PMUs report at 30 or 60 per second
_EPS = 1e-9  # relative slack when an instant falls on a report or grid edge
_BLOCK = 1 << 16  # instants a pass of an integral: its temporaries stay in the CPU cache
# Reports the deadband holds in one chunk (all channels together): its sparse tables take
# about log2(chunk) × 24 B a report, so memory stays bounded whatever the length (6 MB here)
DEADBAND_CHUNK = 1 << 14


@dataclass(frozen=True)
class Sensor:
    """One measurement chain: how an instrument weighs a signal and when it reports.

    Parameters
    ----------
    key
        Short name: the key in :data:`CHAINS` and the suffix of the variable it adds
        (``gpu_power_nvml``).
    label
        Name in words, for plots and tables.
    variable
        The Dataset variable it watches by default (``gpu_power``, ``grid_power``).
    window
        Span of signal one reading weighs. [s] 0 samples the value held at the instant.
    period
        Time between reports, aligned to the grid start (reports at ``m · period``); a poll
        between reports reads the last one. [s] 0: a reading at every poll instant.
    filter
        None: equal weights over ``[t − window, t]`` (a moving average, or a block mean when
        ``period == window``); ``"P-class"``: the IEEE C37.118.1 P-class triangular weights over
        ``[t − window/2, t + window/2]``, the report time-stamped at the window's centre.
    deadband
        Report by exception: a report within this of the last one sent is not sent and the
        receiver holds the last one. [unit of the signal] 0 sends every report.
    source
        Where the chain's numbers come from, with the bibliography's tags.

    Notes
    -----
    The chains of :data:`CHAINS`: NVML's 1-s average [P, nvidia_nvml], DCGM sampling it every
    1 s [P, nvidia_dcgm], a revenue meter's 15-min block demand [S, ansi_c12_1; mge_glossary],
    a PMU's P-class filter [S, ieee_c37_118_1], a SCADA scan every 4 s [A].

    References
    ----------
    .. [nvidia_nvml] NVIDIA, "NVIDIA Management Library (NVML) API Reference and nvidia-smi
       documentation", NVIDIA documentation (2025)
    .. [nvidia_dcgm] NVIDIA, "Data Center GPU Manager (DCGM): dcgmi command-line interface",
       NVIDIA DCGM source and documentation (2025)
    .. [ansi_c12_1] ANSI; NEMA, "American National Standard for Electric Meters: Code for
       Electricity Metering (C12.1)", National Electrical Manufacturers Association (2014)
    .. [mge_glossary] Madison Gas and Electric, "Glossary: demand interval", MGE, as quoted by
       metaglossary.com (2024)
    .. [ieee_c37_118_1] IEEE, "IEEE Standard for Synchrophasor Measurements for Power Systems
       (C37.118.1-2011) and Amendment 1: Modification of Selected Performance Requirements
       (C37.118.1a-2014)", IEEE Standards Association (2014)
    """

    key: str
    label: str
    variable: str
    window: float
    period: float
    filter: str | None = None
    deadband: float = 0.0
    source: str = ""

    def __post_init__(self) -> None:
        if not (np.isfinite(self.window) and self.window >= 0.0):
            raise PowerModelError(f"sensor {self.key!r}: window must be ≥ 0 s, got {self.window}")
        if not (np.isfinite(self.period) and self.period >= 0.0):
            raise PowerModelError(f"sensor {self.key!r}: period must be ≥ 0 s, got {self.period}")
        if self.filter not in FILTERS:
            raise PowerModelError(
                f"sensor {self.key!r}: filter {self.filter!r} is not one of None, {P_CLASS!r}"
            )
        if (self.window == 0.0 or self.filter is not None) and self.period == 0.0:
            raise PowerModelError(
                f"sensor {self.key!r}: a sampling or filtering sensor needs a report period > 0 s"
            )
        if self.filter is not None and self.window == 0.0:
            raise PowerModelError(f"sensor {self.key!r}: a filter needs a window > 0 s")
        if not (np.isfinite(self.deadband) and self.deadband >= 0.0):
            raise PowerModelError(f"sensor {self.key!r}: deadband must be ≥ 0, got {self.deadband}")
        if self.deadband > 0.0 and self.period == 0.0:
            raise PowerModelError(f"sensor {self.key!r}: a deadband needs a report period > 0 s")


CHAINS: dict[str, Sensor] = {
    chain.key: chain
    for chain in (
        Sensor(
            "nvml",
            "NVML",
            "gpu_power",
            window=1.0,
            period=0.0,
            source=(
                "NVML's board power (nvmlDeviceGetPowerUsage, nvidia-smi power.draw) is the mean "
                "over the last 1 s on Ampere and newer, except GA100 (A100, A30), which like "
                "older GPUs reports the instantaneous value [P, nvidia_nvml]; a poll at t reads "
                "the mean over [t − 1 s, t]. The cluster variable is the sum of the GPUs' "
                "readings."
            ),
        ),
        Sensor(
            "dcgm",
            "DCGM",
            "gpu_power",
            window=1.0,
            period=1.0,
            source=(
                "DCGM's power field (DCGM_FI_DEV_POWER_USAGE) reads the same NVML 1-s average "
                "[P, nvidia_nvml], sampled every 1 s, dcgmi dmon's default delay "
                "[P, nvidia_dcgm]; another period is Sensor(..., period=...)."
            ),
        ),
        Sensor(
            "revenue",
            "revenue meter",
            "grid_power",
            window=900.0,
            period=900.0,
            source=(
                "A revenue meter's block-interval demand: the mean power over each fixed 15-min "
                "interval aligned to the clock, reported at the interval's end [S, ansi_c12_1]; "
                "15 min is the demand interval of most demand-billed rate classes "
                "[S, mge_glossary] (30 and 60 min also occur: Sensor(..., window=..., period=...))."
            ),
        ),
        Sensor(
            "pmu30",
            "PMU (30/s)",
            "grid_power",
            window=2.0 / NOMINAL_FREQUENCY,
            period=1.0 / 30.0,
            filter=P_CLASS,
            source=(
                "A PMU reporting 30 times a second through the P-class reference filter of IEEE "
                "C37.118.1: a triangular window two cycles of the nominal 60 Hz long, "
                "time-stamped at its centre [S, ieee_c37_118_1]. Power is taken as the voltage "
                "phasor times the filtered current (voltage steady)."
            ),
        ),
        Sensor(
            "pmu60",
            "PMU (60/s)",
            "grid_power",
            window=2.0 / NOMINAL_FREQUENCY,
            period=1.0 / 60.0,
            filter=P_CLASS,
            source=("As pmu30, at 60 reports a second [S, ieee_c37_118_1]."),
        ),
        Sensor(
            "scada",
            "SCADA",
            "grid_power",
            window=0.0,
            period=4.0,
            source=(
                "A SCADA analog point scanned every 4 s [A] (2-4 s in utility telemetry; no "
                "primary source was located): the value at the scan instant, held until the next; "
                "a report-by-exception deadband is Sensor(..., deadband=...)."
            ),
        ),
    )
}


def lookup(chain: Sensor | str) -> Sensor:
    """The chain itself, or the one :data:`CHAINS` names (a clear error naming the choices)."""
    if isinstance(chain, Sensor):
        return chain
    if isinstance(chain, str) and chain in CHAINS:
        return CHAINS[chain]
    close = difflib.get_close_matches(str(chain).lower(), CHAINS, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise PowerModelError(f"unknown sensor {chain!r}: choose one of {', '.join(CHAINS)}{hint}")


def step_needed(chain: Sensor | str) -> float:
    """The coarsest grid step [s] from which the chain's readings can be computed.

    Notes
    -----
    A moving average or block mean needs a step no longer than its window: at a coarser step
    the grid holds nothing the window would smooth, and the reading would show the grid's
    own steps. A PMU reports swings up to half its report rate, and a grid of step ``dt``
    resolves ``1/(4·dt)`` (:func:`powermodel.models.signal.resolved`), so it needs
    ``dt ≤ 1/(2·rate)``; a sample-and-hold point likewise needs ``dt ≤ period/2``.
    """
    s = lookup(chain)
    if s.window > 0.0 and s.filter is None:
        return s.window
    return 0.5 * s.period


def resolves(chain: Sensor | str, dt: float) -> bool:
    """Whether a grid of step ``dt`` [s] is fine enough for the chain (:func:`step_needed`)."""
    return dt <= step_needed(chain) * (1.0 + _EPS)


def check_resolves(
    chain: Sensor | str, dt: float, fix: str = "simulate at that step or finer"
) -> None:
    """Raise a :class:`PowerModelError` naming the step the chain needs if ``dt`` [s] is too
    coarse, and ``fix``."""
    s = lookup(chain)
    if not resolves(s, dt):
        raise PowerModelError(
            f"the {s.label} sensor ({s.key}) cannot be read from a {_short_duration(dt)} profile: "
            f"it needs dt <= {_at_most(step_needed(s))}; {fix}"
        )


def describe(chain: Sensor | str) -> str:
    """What the chain reports, in words: "mean over the last 1s, at every poll"."""
    s = lookup(chain)
    if s.filter == P_CLASS:
        what = (
            f"P-class filter over {_short_duration(s.window)} "
            f"(two cycles of {NOMINAL_FREQUENCY:g} Hz), "
            f"{1.0 / s.period:.4g} reports a second"
        )
    elif s.window == 0.0:
        what = f"value at each {_short_duration(s.period)} scan, held until the next"
    elif s.period == 0.0:
        what = f"mean over the last {_short_duration(s.window)}, at every poll"
    elif s.period == s.window:
        what = (
            f"mean over each clock-aligned {_short_duration(s.window)} block, reported at its end"
        )
    else:
        what = (
            f"mean over the last {_short_duration(s.window)}, "
            f"sampled every {_short_duration(s.period)}"
        )
    return what + (f", sent when it moves more than {s.deadband:g}" if s.deadband else "")


def _short_duration(seconds: float) -> str:
    """A duration as written where exact and short (``15min``, ``1s``), else to 3 digits."""
    exact = format_duration(seconds)
    if len(exact) <= 8:
        return exact
    return f"{seconds * 1e3:.3g}ms" if seconds < 1.0 else f"{seconds:.3g}s"


def _at_most(seconds: float) -> str:
    """A step at most ``seconds``, written short: exact where it can be (``2s``), else rounded
    down to four digits in ms (``8.333ms`` for 1/120 s), so that the step it names passes."""
    exact = format_duration(seconds)
    if len(exact) <= 8:
        return exact
    millis = seconds * 1e3
    scale = 10.0 ** (3 - np.floor(np.log10(millis)))
    return f"{np.floor(millis * scale * (1 + _EPS)) / scale:g}ms"


def read(
    values: np.ndarray,
    dt: float,
    sensor: Sensor | str,
    at: np.ndarray | None = None,
    held_before: bool = False,
) -> np.ndarray:
    """The value a sensor chain reports at given instants.

    Parameters
    ----------
    values
        Interval means on a uniform grid starting at 0, held over each interval; time on the
        last axis (channels × time works); NaN marks a missing value. [any unit]
    dt
        Step of the grid. [s]
    sensor
        A :class:`Sensor` or a key of :data:`CHAINS`.
    at
        Instants to read, within ``[0, n·dt]``. [s from the grid start] By default the end of
        each interval, ``dt · (1, …, n)``.
    held_before
        Whether the signal held its first value before the grid start (a log that began on a
        steady state, whose instrument had been reading before it). By default it did not exist
        there, and a report whose window starts before 0 is NaN.

    Returns
    -------
    numpy.ndarray
        The reading at each instant, shape ``values.shape[:-1] + at.shape``; NaN where the
        last report's window starts before the signal (no report yet) or holds a missing
        value. [unit of values]

    Notes
    -----
    A poll at ``t`` reads the last report, made at ``r = period · ⌊t / period⌋``
    (``r = t`` when ``period = 0``). With ``x`` the held signal and
    ``X(t) = ∫₀ᵗ x`` its integral (piecewise linear, exact), a report is

    - a moving average (``filter = None``):
      ``y(r) = (X(r) − X(r − w)) / w`` over the window ``w``; with ``period = w`` the block
      means of a revenue meter;
    - a sample (``w = 0``): ``y(r) = x(r⁻)``, the mean of the interval that ends at or holds r;
    - the P-class triangle of half-width ``h = w/2``:
      ``y(r) = ∫ x(s)·(h − |s − r|) ds / h² = Σᵢ xᵢ·(F(tᵢ₊₁ − r) − F(tᵢ − r))`` over the
      intervals ``[tᵢ, tᵢ₊₁)`` the window covers, ``F`` the triangle's cumulative weight
      (``(1 + z/h)²/2`` up to its centre, ``1 − (1 − z/h)²/2`` after): exact for a held
      signal, each report from the few values under its window (no running integral of the
      whole signal, whose rounding grows with its length).

    A report whose window ``[r − w, r]`` (a moving average), ``[r − h, r + h]`` (the triangle)
    starts before 0 is NaN (no report yet), and so is one whose window overlaps a missing
    interval by more than a rounding slack (meter data management carries such an interval as
    missing and estimates it as a separate, labelled step [S, itron_iee_interval]); a sample
    reads the interval itself (NaN if missing; the scan at 0 reads the first value, which
    starts there).

    With a deadband ``d`` the reports are thinned: report ``m`` is sent when
    ``|y_m − y_sent| > d``, and a poll reads the last one sent; a missing report (NaN) is
    always sent, and so is the first one after it.

    A moving average keeps the mean of a periodic signal: it moves energy in time, not in
    total.

    References
    ----------
    .. [itron_iee_interval] Itron, "Interval validation rules; Configuring linear interpolation
       estimation routine (Itron Enterprise Edition Meter Data Management)", Itron documentation
       (2024)
    """
    return _read(values, dt, sensor, at, held_before, changes=False)


def read_changes(
    values: np.ndarray, dt: float, sensor: Sensor | str, held_before: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`read` at the end of every interval, as the readings where they change.

    Returns
    -------
    tuple of numpy.ndarray
        ``(readings, start)``: interval ``start[j]`` (increasing, the first 0) is the first
        whose reading is ``readings[..., j]``, and it holds to the next start; ``read(values,
        dt, sensor)`` is ``readings`` repeated so. A chain that reports less often than every
        step is held in a fraction of the run's size (a revenue meter at 1 s: one in 900).
    """
    return _read(values, dt, sensor, None, held_before, changes=True)


def _read(
    values: np.ndarray,
    dt: float,
    sensor: Sensor | str,
    at: np.ndarray | None,
    held_before: bool,
    changes: bool,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """:func:`read`, or with ``changes`` (``at`` None) :func:`read_changes`."""
    s = lookup(sensor)
    x = np.asarray(values, dtype=float)
    if x.ndim == 0 or x.shape[-1] == 0:
        raise PowerModelError("a sensor needs a signal of at least one sample")
    check_seconds(dt, "the grid step")
    check_resolves(s, dt)
    n = x.shape[-1]
    end = n * dt
    t = None if at is None else np.asarray(at, dtype=float)  # None: dt · (1, …, n)
    if (
        t is not None
        and t.size
        and not (np.isfinite(t).all() and t.min() >= -_EPS * dt and t.max() <= end * (1 + _EPS))
    ):
        raise PowerModelError(
            f"the instants to read must lie within the signal, 0 to {format_duration(end)}"
        )
    if s.period == 0.0:
        y = _reports_at(x, dt, s, dt * np.arange(1, n + 1) if t is None else t, held_before)
        return (y, np.arange(n)) if changes else y
    instants = (n,) if t is None else t.shape
    if t is None:  # the instants in order: their reports are those of the first and the last
        first, last = _report_of(dt * np.array([1, n]), s.period)
    else:
        ranges = [(m.min(), m.max()) for _, m in _report_blocks(t, n, dt, s.period)]
        first, last = (min(r[0] for r in ranges), max(r[1] for r in ranges)) if ranges else (0, -1)
    if s.deadband > 0.0:
        if s.period < dt * (1.0 - _EPS):  # every report is kept: bound them by the samples
            raise PowerModelError(
                f"sensor {s.key!r}: a deadband needs a report period of at least the grid's "
                f"step, {_short_duration(dt)}; got {_short_duration(s.period)}"
            )
        first, last = 0, max(last, 0)
        reports = _deadband(
            _reports_at(x, dt, s, s.period * np.arange(last + 1), held_before), s.deadband
        )
    elif last + 1 - first > np.prod(instants):  # few instants far apart: each read where it is
        m = np.concatenate([m for _, m in _report_blocks(t, n, dt, s.period)])
        y = _reports_at(x, dt, s, s.period * m.reshape(instants), held_before)
        return (y, np.arange(n)) if changes else y
    else:
        # each report once (polls between two reports read the same one): at 10 ms, a PMU's
        # reports are a third of the polls, a revenue meter's one in 90,000
        reports = _reports_at(x, dt, s, s.period * np.arange(first, last + 1), held_before)
    if changes:
        start, m = _changes(n, dt, s.period)
        return reports[..., m - first], start
    out = np.empty(x.shape[:-1] + (int(np.prod(instants)),))
    for a, m in _report_blocks(t, n, dt, s.period):  # each poll reads its last report
        m -= first
        out[..., a : a + m.size] = reports[..., m]
    return out.reshape(x.shape[:-1] + instants)


def _report_blocks(
    t: np.ndarray | None, n: int, dt: float, period: float
) -> Iterator[tuple[int, np.ndarray]]:
    """In blocks of instants ``t`` (by default ``dt · (1, …, n)``), each block's start and the
    index ``m`` of the last report at or before each of its instants (``m · period ≤ t``)."""
    size = n if t is None else t.size
    flat = None if t is None else t.ravel()
    for a in range(0, size, _BLOCK):
        u = dt * np.arange(a + 1, min(a + _BLOCK, size) + 1) if t is None else flat[a : a + _BLOCK]
        yield a, _report_of(u, period)


def _changes(n: int, dt: float, period: float) -> tuple[np.ndarray, np.ndarray]:
    """The polls at ``dt · (1, …, n)`` from which a new report is read, and its index."""
    start, report, last = [], [], None
    for a, m in _report_blocks(None, n, dt, period):
        new = np.empty(m.size, dtype=bool)
        new[0] = last is None or m[0] != last
        np.not_equal(m[1:], m[:-1], out=new[1:])
        at = np.flatnonzero(new)
        start.append(a + at)
        report.append(m[at])
        last = m[-1]
    return np.concatenate(start), np.concatenate(report)


def _report_of(t: np.ndarray, period: float) -> np.ndarray:
    """Index ``m`` of the last report at or before each instant (``m · period ≤ t``)."""
    return np.floor(t / period + _EPS).astype(np.int64)


def _reports_at(
    x: np.ndarray, dt: float, s: Sensor, r: np.ndarray, held_before: bool
) -> np.ndarray:
    """The report of chain ``s`` made at instants ``r`` (no deadband): NaN where its window
    starts before the signal (unless ``held_before``) or overlaps a missing interval."""
    if s.window == 0.0:
        k = np.clip(np.ceil(r / dt - _EPS).astype(np.int64) - 1, 0, x.shape[-1] - 1)
        return x[..., k]
    missing = np.isnan(x)
    gaps = missing.any()
    filled = np.where(missing, 0.0, x) if gaps else x
    if s.filter == P_CLASS:
        lo, hi = r - 0.5 * s.window, r + 0.5 * s.window
        y = _triangle(filled, dt, r, 0.5 * s.window)
    else:
        lo, hi = r - s.window, r
        start = _edge_integrals(filled, dt)
        y = (_integral(filled, dt, hi, start) - _integral(filled, dt, lo, start)) / s.window
    blank = np.zeros(y.shape, dtype=bool)
    if not held_before:
        blank |= lo < -_EPS * dt
    if gaps:  # the share of the window that is missing, in seconds
        gap = missing.astype(float)
        at = _edge_integrals(gap, dt)
        blank |= _integral(gap, dt, hi, at) - _integral(gap, dt, lo, at) > _EPS * dt
    y[blank] = np.nan
    return y


def _edge_integrals(x: np.ndarray, dt: float) -> np.ndarray:
    """``∫₀ x`` of the held signal at each grid edge ``dt · (0, …, n)``."""
    out = np.zeros(x.shape[:-1] + (x.shape[-1] + 1,))
    np.cumsum(x, axis=-1, out=out[..., 1:])
    out *= dt
    return out


def _integral(x: np.ndarray, dt: float, t: np.ndarray, start: np.ndarray) -> np.ndarray:
    """``∫₀ᵗ x`` of the held signal, its first value held before 0 and its last after the end
    (:func:`_reports_at` blanks what it reads before 0 unless the signal held there); ``start`` is
    :func:`_edge_integrals`'s.

    The interval holding ``t`` (clipped to the first or last) gives the slope, so the same
    line extends past either end; the integral is continuous, so an instant that rounds into
    the neighbouring interval gives the same value.
    """
    n = x.shape[-1]
    flat = np.ravel(t)
    out = np.empty(x.shape[:-1] + flat.shape)
    for a in range(0, flat.size, _BLOCK):
        u = flat[a : a + _BLOCK]
        k = np.floor(u / dt).astype(np.int64)
        np.clip(k, 0, n - 1, out=k)
        out[..., a : a + u.size] = start[..., k] + x[..., k] * (u - dt * k)
    return out.reshape(x.shape[:-1] + np.shape(t))


def _triangle(x: np.ndarray, dt: float, r: np.ndarray, h: float) -> np.ndarray:
    """Mean of the held signal under a triangle of half-width ``h`` [s] centred at each ``r``.

    Interval ``i``, from ``tᵢ = i·dt`` to ``tᵢ₊₁``, weighs ``F(tᵢ₊₁ − r) − F(tᵢ − r)``, ``F`` the
    triangle's cumulative weight (:func:`_triangle_cdf`): a sum over the few intervals the
    window covers (``⌈2h/dt⌉ + 3`` of them, from the one before it starts), each term over
    every report at once, in blocks of reports. The first value is held before the grid and
    the last after it, as :func:`_integral` holds them.
    """
    n = x.shape[-1]
    flat = np.ravel(r)
    out = np.empty(x.shape[:-1] + flat.shape)
    spans = int(np.ceil(2.0 * h / dt)) + 3  # one to spare for rounding: it weighs 0
    for a in range(0, flat.size, _BLOCK):
        at = flat[a : a + _BLOCK]
        i = np.floor((at - h) / dt).astype(np.int64) - 1  # ends before the window starts
        lower = _triangle_cdf(dt * i - at, h)
        total = np.zeros(x.shape[:-1] + at.shape)
        for _ in range(spans):
            upper = _triangle_cdf(dt * (i + 1) - at, h)
            total += x[..., np.clip(i, 0, n - 1)] * (upper - lower)
            lower = upper
            i += 1
        out[..., a : a + at.size] = total
    return out.reshape(x.shape[:-1] + np.shape(r))


def _triangle_cdf(z: np.ndarray, h: float) -> np.ndarray:
    """Share of a triangle of half-width ``h`` centred at 0 that lies before ``z``:
    ``(1 + z/h)²/2`` up to its centre, ``1 − (1 − z/h)²/2`` after, 0 and 1 outside it."""
    u = np.clip(z / h, -1.0, 1.0)
    rest = 1.0 - np.abs(u)
    rest *= 0.5 * rest
    return np.where(u < 0.0, rest, 1.0 - rest)


def _deadband(y: np.ndarray, band: float) -> np.ndarray:
    """Report by exception along the last axis: report ``m`` is sent when it differs from the
    last one sent by more than ``band`` (a missing one always differs); each position reads the
    last one sent.

    In chunks of :data:`DEADBAND_CHUNK` reports, in order (a loop over chunks of bounded memory,
    not over reports): each chunk starts from the value last sent before it, and within it the
    first later report outside each report's band (:func:`_next_outside`) gives the chain of
    sent reports as the orbit of the chunk's first sent one, by doubling (:func:`_orbit`).
    Memory is O(n) for the readings and O(c log c) for a chunk of ``c``.
    """
    n = y.shape[-1]
    rows = y.reshape(-1, n)
    out = np.empty_like(rows)
    width = max(1, DEADBAND_CHUNK // rows.shape[0])
    held = np.full(rows.shape[0], np.nan)  # nothing sent yet: the first report differs
    for a in range(0, n, width):
        out[:, a : a + width], held = _deadband_chunk(rows[:, a : a + width], band, held)
    return out.reshape(y.shape)


def _deadband_chunk(
    rows: np.ndarray, band: float, held: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The readings of a chunk of reports (rows × c) given the value each row last sent before
    it (``held``), and the value each has last sent at the chunk's end."""
    c = rows.shape[1]
    differs = ~(np.abs(rows - held[:, None]) <= band)  # a NaN on either side differs
    first = np.where(differs.any(axis=1), np.argmax(differs, axis=1), c)
    sent = _orbit(_next_outside(rows, band), first)
    last = np.maximum.accumulate(np.where(sent, np.arange(c), -1), axis=1)
    reading = np.take_along_axis(rows, np.maximum(last, 0), axis=1)
    reading = np.where(last >= 0, reading, held[:, None])
    return reading, reading[:, -1]


def _orbit(successor: np.ndarray, first: np.ndarray) -> np.ndarray:
    """Which positions of each row the chain ``first → successor[first] → …`` visits (rows × c;
    ``c`` is past the end), by doubling: log2(c) levels of jumps, not a loop over positions."""
    rows, c = successor.shape
    width = c + 1  # one sentinel a row, its own successor
    offset = width * np.arange(rows)
    step = np.concatenate((successor, np.full((rows, 1), c)), axis=1) + offset[:, None]
    jumps = [step.ravel()]
    start, end = offset + first, offset + c
    while not np.all(jumps[-1][start] == end):
        jumps.append(jumps[-1][jumps[-1]])
    sent = np.zeros(rows * width, dtype=bool)
    sent[start] = True
    for jump in reversed(jumps):
        sent[jump[sent]] = True
    return sent.reshape(rows, width)[:, :c]


def _next_outside(rows: np.ndarray, band: float) -> np.ndarray:
    """For each position ``i`` of each row, the first ``j > i`` with ``|y_j − y_i| > band``
    (the row length where none; a NaN on either side is outside): binary lifting over sparse
    tables of running max and min, which carry a NaN on."""
    n = rows.shape[1]
    highs, lows = [rows], [rows]  # level k: max / min of y[s : s + 2^k]
    span = 1
    while 2 * span <= n:
        highs.append(np.maximum(highs[-1][:, :-span], highs[-1][:, span:]))
        lows.append(np.minimum(lows[-1][:, :-span], lows[-1][:, span:]))
        span *= 2
    pos = np.broadcast_to(np.arange(n), rows.shape).copy()  # all of (i, pos] inside the band
    for k in range(len(highs) - 1, -1, -1):  # over log2(n) levels
        size = 1 << k
        start = pos + 1
        fits = start <= n - size
        s = np.minimum(start, n - size)
        inside = (
            fits
            & (np.take_along_axis(highs[k], s, axis=1) <= rows + band)
            & (np.take_along_axis(lows[k], s, axis=1) >= rows - band)
        )
        pos = np.where(inside, pos + size, pos)
    return pos + 1
