"""Aggregate dynamic load models planners are asked for: a PERC1-style ceasing and reconnecting
load, and RATLLE's square load oscillation, each simulated on a series and fitted to one.

PERC1 (PowerWorld's Power Electronic Reconnecting and Ceasing load, from EPRI's LDEV1) is what
the 2026 NERC alert names as the minimum dynamic model of a computational load [S, nerc_alert_2026].
Its help page [powerworld_perc1] was read only in part: its opening, which names the parameters
``Fcease``, ``Frecon``, ``Tap``/``Tbp``, ``Taq``/``Tbq``, ``Dbfl``/``Dbfh`` and says what they
do, but not the rest of the parameter table nor the block diagram. Those names are kept here;
the parameters whose PowerWorld names were not read (the voltage threshold and timer that make
the load cease, the reconnection delay and ramp) carry generic lower-case names, and the logic
joining them is this module's, stated in :func:`perc1_response`, not PowerWorld's.

References
----------
.. [nerc_alert_2026] NERC, "Level 3 Alert: Computational Large Loads, with the reliability
   guideline Risk Mitigation for Emerging Large Loads", North American Electric Reliability
   Corporation (2026).
.. [powerworld_perc1] PowerWorld Corporation, "Load Characteristic Model: PERC1 (Power Electronic
   Reconnecting and Ceasing)", PowerWorld Simulator 24 help, transient models (2025).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from powermodel.errors import PowerModelError
from powermodel.models.signal import first_order_lag

# The share of pre-event power a change must exceed to count as the load moving: a detection
# tolerance of the fit (above a simulation's rounding, below any ceasing worth modelling), not a
# property of the load.
DETECTION = 0.02


@dataclass(frozen=True)
class Perc1:
    """Parameters of a PERC1-style ceasing and reconnecting load.

    Attributes named as PowerWorld's PERC1 [powerworld_perc1]:

    Fcease
        Share of the load that ceases when the trigger holds. [1]
    Frecon
        Share of the ceased load that reconnects: after reconnection the load is
        ``1 − Fcease + Frecon·Fcease`` of what it was. [1]
    Tap, Tbp
        Lead and lag time constants of the P path, ``(1 + s·Tap)/(1 + s·Tbp)``. [s]
    Taq, Tbq
        The same for the Q path. [s]
    Dbfl, Dbfh
        Low and high frequency deadbands, below and above the pre-event frequency. [Hz]

    Generic attributes, the PowerWorld names not verified:

    v_cease
        The load ceases when the voltage is below this ... [pu]
    t_cease
        ... for longer than this. [s]
    t_recon
        Delay from the voltage's recovery above ``v_cease`` to the start of reconnection. [s]
    t_ramp
        Duration of the linear reconnection ramp. [s]

    References
    ----------
    .. [powerworld_perc1] PowerWorld Corporation, "Load Characteristic Model: PERC1 (Power
       Electronic Reconnecting and Ceasing)", PowerWorld Simulator 24 help, transient models
       (2025).
    """

    Fcease: float
    Frecon: float
    Tap: float
    Tbp: float
    Taq: float
    Tbq: float
    Dbfl: float
    Dbfh: float
    v_cease: float
    t_cease: float
    t_recon: float
    t_ramp: float

    def __post_init__(self) -> None:
        for name in ("Fcease", "Frecon"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise PowerModelError(
                    f"PERC1 {name} is a share in [0, 1], got {getattr(self, name)}"
                )
        for name in ("Tap", "Tbp", "Taq", "Tbq", "Dbfl", "Dbfh", "t_cease", "t_recon", "t_ramp"):
            value = getattr(self, name)
            if not (np.isfinite(value) and value >= 0.0):
                raise PowerModelError(f"PERC1 {name} must be finite and ≥ 0, got {value}")
        if not (np.isfinite(self.v_cease) and self.v_cease >= 0.0):
            raise PowerModelError(f"PERC1 v_cease must be finite and ≥ 0 pu, got {self.v_cease}")


@dataclass(frozen=True)
class Perc1Fit:
    """How well a fitted :class:`Perc1` reproduces the response it was fitted to.

    Attributes
    ----------
    rmse_p, rmse_q
        Root-mean-square error of P and of Q over the record, as a share of pre-event P. [1]
    v_cease_range
        The voltages between which the threshold lies: the highest voltage the load ceased at
        and the lowest it rode through. Any value inside reproduces the record. [pu]
    frequency_identified
        Whether the record fixed ``Dbfl`` and ``Dbfh``. Always False here: :func:`fit_perc1`
        fits voltage events, and sets the deadbands to the largest frequency excursions the
        load rode through, lower bounds on the real ones.
    p, q
        The fitted model's P [MW] and Q [Mvar] on the record's time grid.
    """

    rmse_p: float
    rmse_q: float
    v_cease_range: tuple[float, float]
    frequency_identified: bool
    p: np.ndarray
    q: np.ndarray


@dataclass(frozen=True)
class Oscillation:
    """RATLLE's monoperiodic square load oscillation [ratlle] (its UDM's CON names in brackets).

    Attributes
    ----------
    duty
        Share of each period the swing is high (D). [1]
    frequency
        Frequency of the swing (Freq). [Hz]
    amplitude
        Peak-to-peak swing added on top of the base (Amp). [MW]
    base
        The load's power at the low level of the swing, held by the site's own load record. [MW]
    start
        Time of a rising edge (X, the UDM's start of the oscillation). [s]

    References
    ----------
    .. [ratlle] Biswas, S., Varghese, A. C., Chatterjee, K., Nekkalapu, S., Ross, B. and
       Follum, J. (PNNL), "RATLLE: Evaluating the Risk to Bulk Power System Reliability from
       Large Load Induced Oscillations (LL-risk-assessment), with its PSS/E user-defined
       load-oscillation model", GitHub repository pnnl/LL-risk-assessment; IEEE PES T&D 2026
       (2026). https://github.com/pnnl/LL-risk-assessment
    """

    duty: float
    frequency: float
    amplitude: float
    base: float
    start: float


def uniform_step(t: np.ndarray) -> float:
    """The step of a uniform, increasing time grid [s]; refuses anything else."""
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or t.size < 3 or not np.all(np.isfinite(t)):
        raise PowerModelError("time must be a 1-D array of at least 3 finite values [s]")
    steps = np.diff(t)
    dt = float(np.mean(steps))
    if dt <= 0.0 or np.max(np.abs(steps - dt)) > 1e-6 * dt:
        raise PowerModelError(
            f"time must be uniform and increasing; steps span {steps.min():g}-"
            f"{steps.max():g} s: resample it first"
        )
    return dt


def lead_lag(x: np.ndarray, dt: float, lead: float, lag: float) -> np.ndarray:
    """``(1 + s·lead)/(1 + s·lag)`` of a step-held signal starting in steady state at 1 (``x``
    a share of its steady state [1]; ``dt``, ``lead`` and ``lag`` [s]).

    Notes
    -----
    Written as ``(lead/lag)·x + (1 − lead/lag)·L(x)``, ``L`` the exact first-order lag
    (:func:`powermodel.models.signal.first_order_lag`). A zero ``lag`` passes ``x`` through and
    ignores ``lead``, as simulators bypass a lead-lag whose lag is zero.
    """
    if lag <= 0.0:
        return np.asarray(x, dtype=float)
    ratio = lead / lag
    return ratio * x + (1.0 - ratio) * first_order_lag(x, dt, lag, initial=1.0)


def _true_runs(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Start and stop (exclusive) indices of the runs of True in ``mask``."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def connected_share(t: np.ndarray, v: np.ndarray, f: np.ndarray, params: Perc1) -> np.ndarray:
    """Share of the load connected at each sample, before the P and Q lead-lags. [1]

    A trigger (``v < v_cease`` or the frequency outside ``[f₀ − Dbfl, f₀ + Dbfh]``, ``f₀`` the
    first sample's) that holds ``t_cease`` drops the share to ``L·(1 − Fcease)``; ``t_recon``
    after the trigger clears it ramps linearly over ``t_ramp`` to
    ``L·(1 − Fcease + Frecon·Fcease)``, ``L`` the level the previous event reconnected to (1 at
    first). The loop runs over trigger events, each assignment vectorised over the samples after
    it.
    """
    dt = uniform_step(t)
    trigger = (v < params.v_cease) | (f < f[0] - params.Dbfl) | (f > f[0] + params.Dbfh)
    share = np.ones(t.size)
    level = 1.0
    for start, stop in zip(*_true_runs(trigger), strict=True):
        cease = start + int(np.ceil(params.t_cease / dt - 1e-9))
        if cease >= stop:
            continue
        low, high = (
            level * (1.0 - params.Fcease),
            level * (1.0 - params.Fcease * (1 - params.Frecon)),
        )
        ramp_start = t[start] + (stop - start) * dt + params.t_recon
        if params.t_ramp > 0.0:
            rise = (t[cease:] - ramp_start) / params.t_ramp
        else:
            rise = (t[cease:] >= ramp_start).astype(float)
        share[cease:] = low + (high - low) * np.clip(rise, 0.0, 1.0)
        level = high
    return share


def perc1_response(
    t: np.ndarray, v: np.ndarray, f: np.ndarray, p0: float, q0: float, params: Perc1
) -> tuple[np.ndarray, np.ndarray]:
    """P and Q of a PERC1-style load driven by a voltage and frequency record.

    Parameters
    ----------
    t
        Uniform time grid. [s]
    v
        Voltage at the load. [pu]
    f
        Frequency at the load; the first sample is the pre-event frequency. [Hz]
    p0, q0
        Pre-event active [MW] and reactive [Mvar] power (PowerWorld's MWinit, Mvarinit).
    params
        The model's parameters.

    Returns
    -------
    tuple of numpy.ndarray
        ``(p, q)`` on ``t``: P [MW] and Q [Mvar].

    Notes
    -----
    ``P = p0 · LL_p(c)``, ``Q = q0 · LL_q(c)``, with ``c`` the connected share
    (:func:`connected_share`) and ``LL`` the lead-lags ``(1 + s·Tap)/(1 + s·Tbp)`` and
    ``(1 + s·Taq)/(1 + s·Tbq)``. The connected part draws constant power: a site behind
    double-conversion UPSs and server supplies holds its power through a sag it rides. This is
    the PERC1 behaviour its help page describes in words (ceasing share, reconnecting share,
    separate P and Q lead-lags, a single path for P and Q); the washouts of LDEV1 (``Kvp/Tvp``,
    ``Kvq/Tvq``), the frequency response inside the deadbands, and the exact place of the
    lead-lags in PowerWorld's block diagram are not modelled.
    """
    t, v, f = (np.asarray(a, dtype=float) for a in (t, v, f))
    if not v.shape == f.shape == t.shape:
        raise PowerModelError(f"t, v and f need one length, got {t.size}, {v.size}, {f.size}")
    dt = uniform_step(t)
    share = connected_share(t, v, f, params)
    p = p0 * lead_lag(share, dt, params.Tap, params.Tbp)
    q = q0 * lead_lag(share, dt, params.Taq, params.Tbq)
    return p, q


def _rmse(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def _first_true(mask: np.ndarray, after: int = 0) -> int | None:
    hits = np.flatnonzero(mask[after:])
    return int(hits[0]) + after if hits.size else None


def _lag_guess(y: np.ndarray, dt: float, onset: int) -> float:
    """Time for ``y`` (a share of pre-event) to cover 63 % of its fall after ``onset``. [s]"""
    if onset is None:
        return 0.0
    low = np.min(y[onset:])
    reached = _first_true(y <= 1.0 - 0.632 * (1.0 - low), onset)
    return (reached - onset) * dt if reached is not None else 0.0


def fit_perc1(
    t: np.ndarray,
    v: np.ndarray,
    f: np.ndarray,
    p: np.ndarray,
    q: np.ndarray,
    p0: float,
    q0: float,
    check: Callable[[], None] | None = None,
) -> tuple[Perc1, Perc1Fit]:
    """Fit a :class:`Perc1` to a site's response to a voltage or frequency event.

    Parameters
    ----------
    t, v, f
        Uniform time [s], voltage [pu] and frequency [Hz] at the connection.
    p, q
        The site's active [MW] and reactive [Mvar] power.
    p0, q0
        Pre-event P [MW] and Q [Mvar].
    check
        Called at each evaluation of the least-squares fit: the caller's way to stop it (by
        raising), as a server stops a request past its deadline.

    Returns
    -------
    tuple
        ``(params, report)``: the fitted parameters and a :class:`Perc1Fit`.

    Notes
    -----
    The discrete parts are read from the record's events: ceasing starts where P first falls
    :data:`DETECTION` below ``p0``; ``v_cease`` is the middle of the range between the highest
    voltage the load ceased at (the sag, taken as the run of samples below halfway between the
    pre-event voltage and the voltage at the fall) and the lowest it rode through elsewhere;
    ``t_cease`` is the time from the sag's crossing of ``v_cease`` to the fall, then the best of
    the few steps before it. The continuous parts (``Fcease``, ``Frecon``, ``t_recon``,
    ``t_ramp`` and the four lead-lag constants) are fitted by bounded least squares
    (``scipy.optimize.least_squares``) on the P and Q errors, both as shares of ``p0``. A record
    without a frequency event cannot fix the deadbands: they are set to the largest excursions
    ridden through and the report says so.
    """
    t, v, f, p, q = (np.asarray(a, dtype=float) for a in (t, v, f, p, q))
    if not t.shape == v.shape == f.shape == p.shape == q.shape:
        raise PowerModelError("t, v, f, p and q need one length")
    if not p0 > 0.0:
        raise PowerModelError(f"pre-event P must be > 0 MW, got {p0}")
    dt = uniform_step(t)
    pn = p / p0
    fall = _first_true(pn < 1.0 - DETECTION)
    excursion = (float(max(f[0] - f.min(), 0.0)), float(max(f.max() - f[0], 0.0)))
    record = _Record(t, v, f, p, q, p0, q0)
    if fall is None:  # the load rode through: the thresholds are bounds only
        params = Perc1(0.0, 1.0, 0.0, 0.0, 0.0, 0.0, *excursion, float(np.min(v)), 0.0, 0.0, 0.0)
        return params, _fit_report(record, params, (0.0, float(np.min(v))))

    low_v, high_v, sag_start = _ceasing_voltages(v, fall)
    qn = q / q0 if q0 != 0.0 else np.ones_like(q)
    start = _first_guess(v, pn, qn, dt, fall, sag_start, 0.5 * (low_v + high_v), excursion)
    best = _fit_continuous(record, start, check)
    best = _refit_at_best_cease_delay(record, best, dt, check)
    return best, _fit_report(record, best, (low_v, high_v))


def _ceasing_voltages(v: np.ndarray, fall: int) -> tuple[float, float, int]:
    """The highest voltage [pu] the load ceased at, the lowest it rode through elsewhere [pu],
    and where the sag that ``fall`` (the sample where P fell) lies in begins.

    The sag is the run of samples below halfway between the pre-event voltage (the median
    before the fall) and the voltage at the fall.
    """
    v_pre = float(np.median(v[: max(fall, 1)]))
    sag = v < 0.5 * (v_pre + v[fall])
    starts, stops = _true_runs(sag)
    inside = np.flatnonzero((starts <= fall) & (stops > fall))
    if inside.size == 0:
        raise PowerModelError(
            "P fell while the voltage was at its pre-event level: a frequency-only event is not "
            "fitted; give a record whose ceasing follows a voltage sag"
        )
    s0, s1 = starts[inside[0]], stops[inside[0]]
    ridden = np.ones(v.size, dtype=bool)
    ridden[s0:s1] = False
    low_v, high_v = float(np.max(v[s0 : fall + 1])), float(np.min(v[ridden], initial=v_pre))
    return low_v, high_v, s0


def _first_guess(
    v: np.ndarray,
    pn: np.ndarray,
    qn: np.ndarray,
    dt: float,
    fall: int,
    sag_start: int,
    v_cease: float,
    excursion: tuple[float, float],
) -> Perc1:
    """The parameters read from the record's events, the start of the least squares: the
    ceasing delay from the sag's crossing of ``v_cease`` [pu] to the fall, the reconnection
    delay and ramp from the voltage's return to P's rise and on to its final level, the shares
    that cease and reconnect, 63 % lags, and the deadbands at ``excursion`` [Hz].

    ``pn`` and ``qn`` are P and Q as shares of their pre-event values [1], ``dt`` the step
    [s], ``fall`` the sample where P fell and ``sag_start`` where its sag began.
    """
    crossing = _first_true(v < v_cease, sag_start)
    recovered = _first_true(v >= v_cease, fall) or v.size
    rise = _first_true(pn > np.min(pn[fall:]) + DETECTION, recovered) or v.size - 1
    at_final = _first_true(np.abs(pn - pn[-1]) < DETECTION, rise) or rise
    fcease = float(np.clip(1.0 - np.min(pn), 0.0, 1.0))
    frecon = float(np.clip((pn[-1] - (1.0 - fcease)) / fcease, 0.0, 1.0)) if fcease > 0 else 1.0
    return Perc1(
        Fcease=fcease,
        Frecon=frecon,
        Tap=0.0,
        Tbp=_lag_guess(pn, dt, fall),
        Taq=0.0,
        Tbq=_lag_guess(qn, dt, fall),
        Dbfl=excursion[0],
        Dbfh=excursion[1],
        v_cease=v_cease,
        t_cease=float((fall - crossing) * dt),
        t_recon=max(rise - recovered - 1, 0) * dt,
        t_ramp=(at_final - rise) * dt,
    )


def _refit_at_best_cease_delay(
    record: _Record, best: Perc1, dt: float, check: Callable[[], None] | None
) -> Perc1:
    """:func:`_fit_continuous` again from the best of ``best``'s ceasing delay and the three
    steps of ``dt`` [s] before it (not below 0), by the cost of each."""
    candidates = [replace(best, t_cease=max(best.t_cease - k * dt, 0.0)) for k in range(4)]
    costs = [_cost(record, c) for c in candidates]
    return _fit_continuous(record, candidates[int(np.argmin(costs))], check)


_CONTINUOUS = ("Fcease", "Frecon", "t_recon", "t_ramp", "Tap", "Tbp", "Taq", "Tbq")


class _Record(NamedTuple):
    """A site's record of one event, as :func:`fit_perc1` takes it: time [s], voltage [pu],
    frequency [Hz], active [MW] and reactive [Mvar] power, their pre-event values [MW, Mvar]."""

    t: np.ndarray
    v: np.ndarray
    f: np.ndarray
    p: np.ndarray
    q: np.ndarray
    p0: float
    q0: float


def _residuals(record: _Record, params: Perc1) -> np.ndarray:
    """The model's P and Q errors on the record, as shares of ``p0``. [1]"""
    r = record
    pm, qm = perc1_response(r.t, r.v, r.f, r.p0, r.q0, params)
    return np.concatenate(((pm - r.p) / r.p0, (qm - r.q) / r.p0))


def _cost(record: _Record, params: Perc1) -> float:
    """The sum of the squared :func:`_residuals`. [1]"""
    return float(np.sum(np.square(_residuals(record, params))))


def _fit_continuous(
    record: _Record, start: Perc1, check: Callable[[], None] | None = None
) -> Perc1:
    """Bounded least squares over the continuous parameters, the discrete ones held;
    ``check()`` before each evaluation."""
    span = record.t[-1] - record.t[0]
    upper = np.array([1.0, 1.0, span, span, span, span, span, span])
    x0 = np.clip([getattr(start, name) for name in _CONTINUOUS], 0.0, upper)

    def residuals(x: np.ndarray) -> np.ndarray:
        if check is not None:
            check()
        return _residuals(record, replace(start, **dict(zip(_CONTINUOUS, x, strict=True))))

    from scipy import optimize  # noqa: PLC0415 - scipy's import is paid by what uses it

    found = optimize.least_squares(
        residuals, x0, bounds=(np.zeros(x0.size), upper), x_scale="jac", diff_step=1e-4
    )
    return replace(start, **{name: float(x) for name, x in zip(_CONTINUOUS, found.x, strict=True)})


def _fit_report(record: _Record, params: Perc1, v_range: tuple[float, float]) -> Perc1Fit:
    """How ``params`` reproduce the record (``v_range``: the ceasing voltages' range [pu])."""
    r = record
    pm, qm = perc1_response(r.t, r.v, r.f, r.p0, r.q0, params)
    return Perc1Fit(
        rmse_p=_rmse((pm - r.p) / r.p0),
        rmse_q=_rmse((qm - r.q) / r.p0),
        v_cease_range=v_range,
        frequency_identified=False,
        p=pm,
        q=qm,
    )


def square_swing(n: int, dt: float, osc: Oscillation) -> np.ndarray:
    """A square swing as interval means: sample ``k`` is the mean over ``[k·dt, (k+1)·dt)``. [MW]

    Notes
    -----
    With ``T = 1/frequency`` and ``u = t − start``, the time spent high up to ``u`` is
    ``H(u) = ⌊u/T⌋·D·T + min(u mod T, D·T)``; a sample is ``base + amplitude·ΔH/dt``. The swing
    repeats before ``start`` too, so a record can begin mid-cycle; energy is exact at any step.
    """
    period = 1.0 / osc.frequency
    high = osc.duty * period
    u = np.arange(n + 1) * dt - osc.start
    held = np.floor(u / period) * high + np.minimum(np.mod(u, period), high)
    return osc.base + osc.amplitude * np.diff(held) / dt


def fit_oscillation(power: np.ndarray, dt: float) -> tuple[Oscillation, float]:
    """Fit RATLLE's square oscillation to a periodic site power series.

    Parameters
    ----------
    power
        Site power, interval means on a uniform step. [MW]
    dt
        The step. [s]

    Returns
    -------
    tuple
        ``(oscillation, rmse)``: the fitted :class:`Oscillation` and the RMSE of its
        re-simulation (:func:`square_swing`) against ``power``. [MW]

    Notes
    -----
    Levels are the medians of the samples above and below the midrange; each complete pulse's
    width is its summed high share times ``dt`` (exact for interval means) and its centre the
    share-weighted mean time; the period is the slope of the centres against their cycle number,
    the duty the mean width over the period. Bounded least squares on the five parameters then
    refines the estimate against the exact rendering.
    """
    power = np.asarray(power, dtype=float)
    if power.ndim != 1 or power.size < 8 or not np.all(np.isfinite(power)) or not dt > 0:
        raise PowerModelError("need a 1-D series of at least 8 finite samples [MW] and dt > 0 s")
    mid = 0.5 * (np.max(power) + np.min(power))
    above = power > mid
    if above.all() or not above.any():
        raise PowerModelError("the series does not swing: there is no oscillation to fit")
    base = float(np.median(power[~above]))
    amplitude = float(np.median(power[above])) - base
    share = np.clip((power - base) / amplitude, 0.0, 1.0)
    mids = (np.arange(power.size) + 0.5) * dt
    widths, centres = [], []
    for a, b in zip(*_true_runs(above), strict=True):
        if a == 0 or b == power.size:
            continue  # a pulse cut by the record's ends
        w = share[a - 1 : b + 1]
        widths.append(w.sum() * dt)
        centres.append(np.sum(w * mids[a - 1 : b + 1]) / w.sum())
    if len(centres) < 2:
        raise PowerModelError(
            f"only {len(centres)} complete cycle(s) in {power.size * dt:g} s: give a record of "
            "at least two whole periods"
        )
    centres = np.asarray(centres)
    cycle = np.round((centres - centres[0]) / np.median(np.diff(centres)))
    period, first = np.polyfit(cycle, centres, 1)
    if not period > 2.0 * dt:
        raise PowerModelError(
            "the series has no regular period (its pulses do not recur at one rate): no square "
            "oscillation describes it"
        )
    width = float(np.mean(widths))
    x0 = np.array([width / period, 1.0 / period, amplitude, base, first - width / 2])

    def residuals(x: np.ndarray) -> np.ndarray:
        return square_swing(power.size, dt, Oscillation(*x)) - power

    lower = np.array([0.0, 0.5 / period, 0.0, -np.inf, x0[4] - period / 2])
    upper = np.array([1.0, 2.0 / period, np.inf, np.inf, x0[4] + period / 2])
    x0[0] = np.clip(x0[0], 1e-6, 1.0 - 1e-6)  # an irregular series' pulses can outlast its period
    from scipy import optimize  # noqa: PLC0415 - scipy's import is paid by what uses it

    found = optimize.least_squares(residuals, x0, bounds=(lower, upper), x_scale="jac")
    osc = Oscillation(*(float(x) for x in found.x))
    return osc, _rmse(residuals(found.x))
