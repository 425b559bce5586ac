"""Grid disturbances at the connection and how a site's supplies and backup chain answer them.

A voltage sag is a drop of the three phase voltages for a while; the site's transformers turn
the connection's phases into the ones its equipment sees (a delta winding blocks the zero
sequence and shifts the others by 30°), and each piece of equipment tolerates a sag by its own
immunity curve (depth against duration: ITIC, SEMI F47, a vendor's). Read on the worst phase
or on the positive sequence, one unbalanced sag can pass and fail at once
[P, epri_dcflex_ride_through].

The chain: server supplies fed by a UPS (central or rack batteries) that leaves the grid when
its input leaves its own window, counts its transfers (three in a minute: stay on backup until
someone returns the site by hand [S, nerc_incident_2024]), carries the IT load on its battery
until the generators start, and comes back on a ramp, then recharges. Without a UPS, a sag
outside the supplies' curve drops the servers. Everything here is event logic over a handful
of disturbances and piecewise-linear shares of the load; the simulation renders them exactly
as interval means (:func:`interval_means`).

References
----------
.. [epri_dcflex_ride_through] EPRI, "DCFlex workstream 3: data center ride-through", Electric
   Power Research Institute (2026). https://msites.epri.com/dcflex
.. [nerc_incident_2024] NERC, "Incident Review: Considering Simultaneous Voltage-Sensitive Load
   Reductions (the 10 July 2024 event in Virginia)", North American Electric Reliability
   Corporation (2025). https://www.nerc.com/
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from powermodel.models.signal import group_ranks, range_reduce

A = np.exp(2j * np.pi / 3)  # the 120° operator of symmetrical components
# a curve's edges are inclusive to within this share of a p.u. or a second: readings carry the
# rounding of the sequence transforms (0.7 p.u. may read 0.6999999999999999)
EDGE = 1e-9
TRANSFORMERS = ("Dyn", "YNyn", "Yy")


def phasors(voltage: np.ndarray, angle: np.ndarray | None = None) -> np.ndarray:
    """Phase voltages as complex phasors from residual magnitudes and angle jumps.

    Parameters
    ----------
    voltage
        Residual magnitude of phases a, b, c, shape ``(..., 3)``. [p.u.]
    angle
        Phase-angle jump of each phase, shape ``(..., 3)``; none by default. [°]

    Returns
    -------
    numpy.ndarray
        ``V_k = |V_k| · exp(j(φ_k + jump_k))``, φ = 0, −120°, +120°, shape ``(..., 3)``. [p.u.]
    """
    voltage = np.asarray(voltage, dtype=float)
    jump = np.zeros_like(voltage) if angle is None else np.asarray(angle, dtype=float)
    return voltage * np.exp(1j * np.deg2rad(np.array([0.0, -120.0, 120.0]) + jump))


def sequences(v: np.ndarray) -> np.ndarray:
    """Zero, positive and negative sequence of phase phasors ``(..., 3)``, as ``(..., 3)``.
    [p.u.]

    Notes
    -----
    ``V0 = (Va + Vb + Vc)/3``, ``V1 = (Va + a·Vb + a²·Vc)/3``, ``V2 = (Va + a²·Vb + a·Vc)/3``,
    ``a = exp(j·120°)`` (Fortescue).
    """
    m = np.array([[1, 1, 1], [1, A, A * A], [1, A * A, A]]) / 3.0
    return np.asarray(v) @ m.T


def phases(s: np.ndarray) -> np.ndarray:
    """Phase phasors from zero, positive and negative sequence ``(..., 3)``. [p.u.]"""
    m = np.array([[1, 1, 1], [1, A * A, A], [1, A, A * A]])
    return np.asarray(s) @ m.T


def through(v: np.ndarray, windings: tuple[str, ...]) -> np.ndarray:
    """Phase phasors [p.u.] after transformers in series (``"Dyn"``, ``"YNyn"``, ``"Yy"``).

    Notes
    -----
    A delta winding, or a wye whose neutral is not grounded, passes no zero sequence; a Dyn
    transformer (the usual step-down to a data hall, Dyn11) also advances the positive sequence
    by 30° and retards the negative by 30°, which turns a single-phase sag at the connection
    into a two-phase sag behind it (Bollen's sag types B → C → D). Per-unit magnitudes pass
    unchanged; a YNyn passes every sequence.
    """
    s = sequences(v)
    for w in windings:
        if w not in TRANSFORMERS:
            raise ValueError(f"unknown transformer {w!r}: one of {', '.join(TRANSFORMERS)}")
        if w == "YNyn":
            continue
        s = s * np.array([0.0, 1.0, 1.0])
        if w == "Dyn":
            s = s * np.exp(1j * np.deg2rad(np.array([0.0, 30.0, -30.0])))
    return phases(s)


def supply_voltages(v: np.ndarray, connection: str) -> np.ndarray:
    """Magnitudes the supplies see, ``(..., 3)`` [p.u.]: phase to neutral, or phase to phase
    (``Vab, Vbc, Vca`` over √3, so that a healthy system reads 1)."""
    if connection == "phase_to_neutral":
        return np.abs(v)
    return np.abs(v - np.roll(v, -1, axis=-1)) / np.sqrt(3.0)


@dataclass(frozen=True)
class Readings:
    """What one set of sags looks like: per sag, at the connection and at the supplies."""

    connection_worst: np.ndarray  # [p.u.] lowest phase at the connection
    connection_positive: np.ndarray  # [p.u.] positive sequence at the connection
    worst: np.ndarray  # [p.u.] lowest phase the supplies see
    positive: np.ndarray  # [p.u.] positive sequence the supplies see


def readings(
    voltage: np.ndarray,
    angle: np.ndarray | None,
    windings: tuple[str, ...],
    connection: str = "phase_to_neutral",
) -> Readings:
    """Worst-phase and positive-sequence residual of each sag, at the connection and at the
    supplies behind ``windings`` (``connection``: how the supplies are wired).

    Parameters
    ----------
    voltage
        Residual magnitude of each sag's phases at the connection, ``(n, 3)``. [p.u.]
    angle
        Their phase-angle jumps, ``(n, 3)``, or None. [°]
    windings
        The transformers between the connection and the supplies, in order.
    connection
        ``"phase_to_neutral"`` or ``"phase_to_phase"``.
    """
    v = phasors(voltage, angle)
    behind = through(v, windings)
    seen = supply_voltages(behind, connection)
    return Readings(
        connection_worst=np.abs(v).min(axis=-1),
        connection_positive=np.abs(sequences(v)[..., 1]),
        worst=seen.min(axis=-1),
        positive=np.abs(sequences(behind)[..., 1]),
    )


def tolerated(
    voltage: np.ndarray, duration: np.ndarray, curve_duration: np.ndarray, curve_voltage: np.ndarray
) -> np.ndarray:
    """Whether equipment rides through sags by its immunity curve.

    Parameters
    ----------
    voltage, duration
        Residual voltage [p.u.] and duration [s] of each sag.
    curve_duration, curve_voltage
        The curve as steps: a sag lasting at most ``curve_duration[i]`` (and longer than the
        step before) is tolerated down to ``curve_voltage[i]`` [p.u.], both edges included
        (to within :data:`EDGE`); the last duration is infinite.

    Returns
    -------
    numpy.ndarray
        True where the sag lies on or above the curve.
    """
    duration = np.asarray(duration) * (1.0 - EDGE)
    step = np.searchsorted(np.asarray(curve_duration), duration, side="left")
    step = np.minimum(step, len(curve_voltage) - 1)
    return np.asarray(voltage) >= np.asarray(curve_voltage)[step] - EDGE


def outside_window(
    t: np.ndarray, f: np.ndarray, low: float, high: float
) -> tuple[np.ndarray, np.ndarray]:
    """Stretches ``[begin, end)`` in which a piecewise-linear frequency leaves ``[low, high]``.

    Parameters
    ----------
    t, f
        Breakpoints [s] (increasing) and frequency at each [Hz]; held flat outside them.
    low, high
        The window. [Hz]
    """
    t, f = np.asarray(t, dtype=float), np.asarray(f, dtype=float)
    if t.size == 0:
        return np.zeros(0), np.zeros(0)
    out = (f < low) | (f > high)
    # each segment crossing a bound contributes its crossing instant
    a, b, ta, tb = f[:-1], f[1:], t[:-1], t[1:]
    cross = []
    for bound in (low, high):
        hit = (a - bound) * (b - bound) < 0
        cross.append(ta[hit] + (bound - a[hit]) / (b[hit] - a[hit]) * (tb[hit] - ta[hit]))
    edges = np.unique(np.concatenate([t, *cross]))
    mid = np.interp(0.5 * (edges[:-1] + edges[1:]), t, f)
    bad = (mid < low) | (mid > high)
    if edges.size == 1:  # a single point: outside from it on, or never
        bad = out[:1]
    change = np.diff(np.r_[0, bad.astype(np.int8), 0])
    begin = edges[np.flatnonzero(change == 1)]
    end_index = np.flatnonzero(change == -1)
    end = np.where(end_index < edges.size, edges[np.minimum(end_index, edges.size - 1)], np.inf)
    if out[-1]:  # outside after the last point: it stays so
        end[-1] = np.inf
    return begin, end


def extremes(
    t: np.ndarray, f: np.ndarray, begin: np.ndarray, end: np.ndarray, low: float, high: float
) -> np.ndarray:
    """The frequency farthest out of ``[low, high]`` in each stretch ``[begin, end]`` of a
    piecewise-linear trace (the stretches :func:`outside_window` gives for that window).

    Parameters
    ----------
    t, f
        Breakpoints [s] (increasing) and frequency at each [Hz]; held flat outside them.
    begin, end
        The stretches, finite. [s]
    low, high
        The window the stretches lie out of. [Hz]

    Notes
    -----
    A linear piece's extremes lie at its ends: the stretch's own ends and the breakpoints
    inside it. A stretch lies wholly below ``low`` or wholly above ``high`` (it cannot cross
    the window without entering it), so its lowest value is out of the window, or its highest.
    """
    t, f = np.asarray(t, dtype=float), np.asarray(f, dtype=float)
    begin, end = np.asarray(begin, dtype=float), np.asarray(end, dtype=float)
    if begin.size == 0:
        return np.zeros(0)
    edge_a, edge_b = np.interp(begin, t, f), np.interp(end, t, f)
    first = np.searchsorted(t, begin, side="right")
    stop = np.searchsorted(t, end, side="left")
    inner = stop > first  # stretches holding breakpoints: their least and largest
    lowest, highest = np.minimum(edge_a, edge_b), np.maximum(edge_a, edge_b)
    a, b = first[inner], stop[inner]
    lowest[inner] = np.minimum(lowest[inner], range_reduce(np.minimum, f, a, b))
    highest[inner] = np.maximum(highest[inner], range_reduce(np.maximum, f, a, b))
    return np.where(lowest < low, lowest, highest)


@dataclass(frozen=True)
class Chain:
    """The site's answer to disturbances, as data (``ride_through`` in a scenario)."""

    backup: str  # "ups" (central or rack batteries) or "none"
    immunity: tuple[np.ndarray, np.ndarray]  # the supplies' curve
    transfer: tuple[np.ndarray, np.ndarray]  # the UPS input window, as a curve
    frequency_window: tuple[float, float]  # [Hz] the UPS leaves the grid outside it
    count: int | None  # transfers within count_window that latch the site on backup
    count_window: float  # [s]
    retransfer_delay: float  # [s] on backup after a sag that did not latch
    manual_return: float  # [s] on backup after a latch
    return_ramp: float  # [s] to move the site back from its generators after a latch
    walk_in: float  # [s] for the UPS rectifier to take the IT path back after a short transfer
    autonomy: float  # [s] the battery carries the design IT load
    generator: bool
    generator_start: float  # [s] from a transfer to the generators taking the load
    generator_ramp: float = 0.0  # [s] for the generators to take the IT path, linearly


@dataclass(frozen=True)
class Window:
    """One stretch the IT path (``it``) or the other loads spend off the grid: from ``begin``
    until ``hold`` on backup, then back over ``ramp`` [s]."""

    begin: float
    hold: float
    ramp: float


@dataclass(frozen=True)
class Outcome:
    """What a site does through a set of disturbances (times in s from the run's start).

    ``it`` and ``other``: the windows the IT path and the other loads (cooling, misc) spend off
    the grid (the generators carry the other loads through theirs); ``generator_it``: when the
    generators walk the IT path on, ``(start, taken, reached, end)`` (:func:`taken_up`);
    ``lost``: stretches the servers have no power (they crashed at ``begin``); per trigger (sag
    or frequency excursion, in time order): whether the UPS transferred, whether that latched,
    whether the servers dropped.
    """

    it: tuple[Window, ...]
    other: tuple[Window, ...]
    generator_it: tuple[tuple[float, float, float, float], ...]
    lost: tuple[tuple[float, float], ...]
    transferred: np.ndarray
    latched: np.ndarray
    dropped: np.ndarray

    @property
    def generator_other(self) -> tuple[tuple[float, float], ...]:
        """When the generators carry the other loads: ``(begin, end)`` of each of their
        windows, the return included."""
        return tuple((w.begin, w.hold + w.ramp) for w in self.other)


def respond(
    time: np.ndarray,
    duration: np.ndarray,
    voltage: np.ndarray,
    chain: Chain,
    frequency: np.ndarray | None = None,
) -> Outcome:
    """The site's response to triggers: sags (``voltage`` the measure the site reads [p.u.])
    and frequency excursions (``voltage`` NaN: the UPS transfers on one that leaves its
    window, and rides through one inside it).

    Parameters
    ----------
    time, duration
        Start [s] and length [s] of each trigger, in time order.
    voltage
        The residual the equipment reads (worst phase or positive sequence) [p.u.], NaN for a
        frequency excursion.
    chain
        The site's chain.
    frequency
        The frequency farthest from nominal in each excursion [Hz] (:func:`extremes`), NaN
        for a sag; None when every trigger is a sag.

    Raises
    ------
    ValueError
        A frequency excursion without ``frequency``.

    Notes
    -----
    Without a UPS, a sag outside the supplies' immunity curve drops the servers until the
    voltage returns. With one, a trigger outside the UPS's window moves the IT path to its
    battery; ``count`` transfers within ``count_window`` latch the whole site on backup (the
    generators take the IT path and the other loads once started) until ``manual_return``
    after the latching sag, then it returns over ``return_ramp``; otherwise the IT path
    returns ``retransfer_delay`` after the sag ends, over ``walk_in``. A battery that runs out
    before the generators take over (or, with none, before the return) drops the servers until
    power comes back. The battery's autonomy is spent at the design load's rate, through the
    hold and, without generators, half the return's ramp; it is not refilled between
    disturbances here (the recharge takes tens of minutes, :func:`recharge`): each transfer
    draws on what the earlier ones left.
    """
    n = len(time)
    if chain.backup == "none":
        return _servers_alone(time, duration, voltage, chain)
    transferred = _ups_transfers(n, duration, voltage, chain, frequency)
    latched = np.zeros(n, bool)
    dropped = np.zeros(n, bool)
    site = _Backup()
    latch_end = -np.inf
    times = time[transferred]
    for i in np.flatnonzero(transferred):  # a handful of disturbances, not samples
        t, d = float(time[i]), float(duration[i])
        if t < latch_end:
            latched[i] = True
            continue
        recent = np.count_nonzero((times > t - chain.count_window) & (times <= t))
        latch = chain.count is not None and recent >= chain.count
        latched[i] = latch
        hold, dropped[i] = site.transfer(t, d, latch, chain)
        if latch:
            latch_end = hold
    return Outcome(
        tuple(site.it),
        tuple(site.other),
        tuple(site.generator_it),
        _merged_stretches(site.lost),
        transferred,
        latched,
        dropped,
    )


def _servers_alone(
    time: np.ndarray, duration: np.ndarray, voltage: np.ndarray, chain: Chain
) -> Outcome:
    """:func:`respond` without a UPS: a sag outside the supplies' immunity curve drops the
    servers from its start [s] until the voltage returns, its duration [s] later; a frequency
    excursion (``voltage`` NaN) passes them."""
    n = len(time)
    sag = ~np.isnan(voltage)
    dropped = np.zeros(n, bool)
    dropped[sag] = ~tolerated(voltage[sag], duration[sag], *chain.immunity)
    lost = [(float(t), float(t + d)) for t, d in zip(time[dropped], duration[dropped], strict=True)]
    return Outcome(
        (), (), (), _merged_stretches(lost), np.zeros(n, bool), np.zeros(n, bool), dropped
    )


def _ups_transfers(
    n: int,
    duration: np.ndarray,
    voltage: np.ndarray,
    chain: Chain,
    frequency: np.ndarray | None,
) -> np.ndarray:
    """Which of ``n`` triggers move the IT path to the UPS's battery: a sag [p.u., s] below the
    UPS's input window (its curve), a frequency excursion whose extreme [Hz] leaves
    ``chain.frequency_window``."""
    transferred = np.zeros(n, bool)
    sag = ~np.isnan(voltage)
    transferred[sag] = ~tolerated(voltage[sag], duration[sag], *chain.transfer)
    if not sag.all():
        if frequency is None:
            raise ValueError("a frequency excursion (voltage NaN) needs its frequency")
        low, high = chain.frequency_window
        reached = np.asarray(frequency)[~sag]
        transferred[~sag] = (reached < low) | (reached > high)
    return transferred


def _return_to_grid(t: float, d: float, latch: bool, chain: Chain) -> tuple[float, float]:
    """When the IT path leaves the battery after a transfer at ``t`` lasting ``d`` [s], and the
    ramp back [s]: ``retransfer_delay`` after the sag ends, over ``walk_in``; after a latch at
    the earliest ``manual_return`` after the latching sag, over ``return_ramp``."""
    retransfer = t + d + chain.retransfer_delay  # a latch never returns sooner
    hold = max(t + chain.manual_return, retransfer) if latch else retransfer
    ramp = chain.return_ramp if latch else chain.walk_in
    return hold, ramp


def _generator_takeover(
    begin: float, started: float, hold: float, ramp: float, rise: float
) -> tuple[float, float, float, float]:
    """How the generators, started at ``started`` [s], take the IT path from a battery that has
    carried it since ``begin`` [s], until the return at ``hold`` over ``ramp`` [s].

    Returns ``(taken, reached, full, need)``: when their ramp of ``rise`` [s] ends (cut by the
    return) [s], the share of the IT path they carry then [1], when they carry all of it [s]
    (inf if never), and the battery's seconds at the design load this window needs [s].
    """
    # the generators take the IT path over their ramp (cut by the return, at the share
    # reached), the battery the rest: its seconds at the design load this window needs
    if started < hold:
        taken = min(started + rise, hold)
        reached = (taken - started) / rise if rise > 0 else 1.0
        need = (started - begin) + (taken - started) * (1 - reached / 2)
        need += (1 - reached) * (hold - taken + 0.5 * ramp)
        full = started + rise if reached == 1.0 else np.inf
    else:
        reached, taken, full = 0.0, np.inf, np.inf
        need = hold - begin + 0.5 * ramp
    return taken, reached, full, need


@dataclass
class _Backup:
    """The stretches a site spends on backup, as :func:`respond` lays them out transfer by
    transfer (see :class:`Outcome`), and the battery seconds each IT window spent [s]."""

    it: list[Window] = field(default_factory=list)
    other: list[Window] = field(default_factory=list)
    generator_it: list[tuple[float, float, float, float]] = field(default_factory=list)
    lost: list[tuple[float, float]] = field(default_factory=list)
    spent: list[float] = field(default_factory=list)  # at the design load

    def transfer(self, t: float, d: float, latch: bool, chain: Chain) -> tuple[float, bool]:
        """The IT path to the battery at ``t`` for a trigger of ``d`` [s] (``latch``: it
        latches the site on backup); returns when it holds until [s] and whether the servers
        drop (the battery runs out)."""
        begin, prior = self._reopened(t)
        hold, ramp = _return_to_grid(t, d, latch, chain)
        started = self._generators_started(begin, chain)
        taken, reached, full, need = _generator_takeover(
            begin, started, hold, ramp, chain.generator_ramp
        )
        empty = self._battery_runs_out(begin, need, chain.autonomy)
        if np.isfinite(empty):  # the battery runs out: the servers drop until power is back
            back = min(full, hold)
            self.lost.append((empty, back))
            if back == hold:
                ramp = 0.0  # nothing left to move back: the servers boot on the grid
        if started < hold:
            self.generator_it.append((started, taken, reached, hold + ramp))
        self.it.append(Window(begin, hold, ramp))
        if latch and chain.generator and started < hold:  # the whole site to the generators
            # once they run and the latch decides, or from when an earlier latch moved it
            moved = max(started, t) if prior is None else prior.begin
            self.other.append(Window(moved, hold, chain.return_ramp))
        elif prior is not None:  # a transfer in a latch's return: the rest keeps its return
            self.other.append(prior)
        return hold, bool(np.isfinite(empty))

    def _reopened(self, t: float) -> tuple[float, Window | None]:
        """Where the IT path's window of a transfer at ``t`` [s] begins [s]: at ``t``, or, if
        the site is still on backup (or coming back), the open window's start, that window
        taken up again with what it laid out; and the other loads' window on the generators
        it held, if any."""
        begin = t
        prior: Window | None = None  # the other loads' stretch on the generators, if any
        if self.it and t < self.it[-1].hold + self.it[-1].ramp:  # still on backup: extend
            begin = self.it.pop().begin
            self.spent.pop()
            if self.generator_it and self.generator_it[-1][0] >= begin:
                self.generator_it.pop()
            if self.lost and self.lost[-1][0] >= begin:
                self.lost.pop()
            if self.other and self.other[-1].begin >= begin:
                prior = self.other.pop()
        return begin, prior

    def _generators_started(self, begin: float, chain: Chain) -> float:
        """When the generators run for a window beginning at ``begin`` [s]: ``generator_start``
        after it, at once if still carrying something (the other loads' return), never (inf)
        without generators."""
        running = max(
            [g[3] for g in self.generator_it] + [w.hold + w.ramp for w in self.other],
            default=-np.inf,
        )
        started = begin + chain.generator_start if chain.generator else np.inf
        if running > begin:
            started = begin
        return started

    def _battery_runs_out(self, begin: float, need: float, autonomy: float) -> float:
        """When the battery runs out [s] (inf if it does not) in a window beginning at
        ``begin`` [s] that needs ``need`` battery seconds at the design load [s], with what the
        earlier windows left of its ``autonomy`` [s] (it is not refilled between
        disturbances); the seconds it spends are recorded."""
        left = max(autonomy - sum(self.spent), 0.0)
        empty = begin + left if left < need else np.inf
        self.spent.append(min(need, left))
        return empty


def _merged_stretches(stretches: list[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    out: list[tuple[float, float]] = []
    for a, b in sorted(stretches):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)


def on_grid(windows: tuple[Window, ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The share of a load on the grid as a piecewise-linear function of time.

    Returns ``(t, left, right)``: breakpoints [s] and the share's limits from the left and
    from the right at each (a step where they differ). Each window's share is 1 before it,
    0 through its hold, then rises linearly over its ramp; with several, the least of them
    (exact: ramps rise at one slope, so the least never crosses between breakpoints).
    """
    if not windows:
        return _no_breakpoints()
    b = np.array([w.begin for w in windows])
    h = np.array([w.hold for w in windows])
    r = h + np.array([w.ramp for w in windows])

    def share(x: np.ndarray, left: bool) -> np.ndarray:
        x = x[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            rising = np.where(r > h, (x - h) / np.where(r > h, r - h, 1.0), 1.0)
        if left:
            value = np.where(x <= b, 1.0, np.where(x <= h, 0.0, np.where(x <= r, rising, 1.0)))
        else:
            value = np.where(x < b, 1.0, np.where(x < h, 0.0, np.where(x < r, rising, 1.0)))
        return value.min(axis=1)

    return _at_breakpoints(share, [b, h, r])


def _no_breakpoints() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A constant, as :func:`on_grid` gives a share: no breakpoints."""
    return np.zeros(0), np.zeros(0), np.zeros(0)


def _at_breakpoints(limit, times: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A function as :func:`on_grid` gives a share, its breakpoints the finite ``times`` [s]
    and ``limit(x, left)`` its limits there, from the left or from the right."""
    t = np.unique(np.concatenate(times))
    t = t[np.isfinite(t)]
    return t, _in_row_blocks(limit, t, True), _in_row_blocks(limit, t, False)


ROWS = 1024  # breakpoints evaluated against every window at once: a few MB however many


def _in_row_blocks(f, x: np.ndarray, *args) -> np.ndarray:
    """``f(x, *args)`` evaluated :data:`ROWS` points at a time (its temporaries are points ×
    windows)."""
    return np.concatenate([f(x[a : a + ROWS], *args) for a in range(0, x.size, ROWS)])


def stretches(pairs: tuple[tuple[float, float], ...]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An indicator (1 inside the stretches ``[begin, end)``, 0 elsewhere) as :func:`on_grid`
    gives a share: breakpoints and the limits either side."""
    if not pairs:
        return _no_breakpoints()
    begin = np.array([p[0] for p in pairs])
    end = np.array([p[1] for p in pairs])

    def inside(x: np.ndarray, left: bool) -> np.ndarray:
        x = x[:, None]
        hit = (x > begin) & (x <= end) if left else (x >= begin) & (x < end)
        return hit.any(axis=1).astype(float)

    return _at_breakpoints(inside, [begin, end])


def taken_up(
    stretches: tuple[tuple[float, float, float, float], ...],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The share of a load a source carries, as :func:`on_grid` gives a share, from stretches
    ``(start, taken, reached, end)``: none before ``start``, rising linearly to ``reached`` at
    ``taken``, held there until ``end``, none after (the generators walking the IT path on):
    times [s], shares [1]."""
    if not stretches:
        return _no_breakpoints()
    t, left, right = [], [], []
    for start, taken, reached, end in stretches:  # a few, in order, apart
        instant = taken <= start
        t += [start, taken, end] if not instant else [start, end]
        left += [0.0, reached, reached] if not instant else [0.0, reached]
        right += [0.0, reached, 0.0] if not instant else [reached, 0.0]
    return np.array(t), np.array(left), np.array(right)


def interval_means(
    function: tuple[np.ndarray, np.ndarray, np.ndarray], lo: int, n: int, dt: float, before: float
) -> np.ndarray:
    """Exact means over the intervals ``[(lo+i)·dt, (lo+i+1)·dt)`` of a piecewise-linear
    function given as :func:`on_grid` gives it (``before``: its value before the first
    breakpoint; after the last it keeps that one's right limit).

    Notes
    -----
    An interval holding no breakpoint sees one linear piece: its mean is the value at its
    midpoint. The few that hold breakpoints sum the trapezoids of their pieces. Nothing is
    taken as a difference of large running integrals, so a constant stays exact.
    """
    t, left, right = function
    if t.size == 0:
        return np.full(n, float(before))
    out = _at_step_midpoints(function, lo, n, dt, before)
    first = np.searchsorted(t, lo * dt, side="right")
    last = np.searchsorted(t, (lo + n) * dt, side="left")
    k = np.unique(np.floor(t[first:last] / dt).astype(np.int64) - lo)
    a, b = (lo + k) * dt, (lo + k + 1) * dt
    begin, stop = np.searchsorted(t, a, side="right"), np.searchsorted(t, b, side="left")
    held = stop > begin  # the intervals holding breakpoints strictly inside
    k, a, b, begin, count = k[held], a[held], b[held], begin[held], (stop - begin)[held]
    if k.size == 0:
        return out
    # every such interval's sub-pieces at once: [a, p1), [p1, p2), ..., [pr, b) of its inner
    # breakpoints p, laid end to end, interval after interval
    start = np.concatenate(([0], np.cumsum(count + 1)[:-1]))
    owner, j = group_ranks(count)  # the interval of each inner breakpoint, its rank there
    points, at = t[begin[owner] + j], start[owner] + j + 1  # it opens sub-piece j + 1
    x0 = np.empty(start[-1] + count[-1] + 1)
    x1 = np.empty_like(x0)
    x0[start], x1[start + count] = a, b
    x0[at], x1[at - 1] = points, points
    # each sub-piece is linear: its mean is the value at its middle
    values = _value_between_breakpoints(function, 0.5 * (x0 + x1), before)
    out[k] = np.add.reduceat(values * (x1 - x0), start) / dt
    return out


def _at_step_midpoints(
    function: tuple[np.ndarray, np.ndarray, np.ndarray], lo: int, n: int, dt: float, before: float
) -> np.ndarray:
    """:func:`_value_between_breakpoints` at the midpoints of the ``n`` steps from ``lo``, to
    the bit, in time that grows with the steps and not with the steps × breakpoints: the steps
    between two breakpoints are a run of indices, held at one value where the function is flat
    there (a share on or off the grid, most of a run) and evaluated only on the sloped pieces
    (ramps)."""
    t, left, right = function

    def mid(step: np.ndarray) -> np.ndarray:  # the steps' midpoints, as interval_means's
        return (lo + step + 0.5) * dt

    # the first step whose midpoint reaches each breakpoint (piece j holds cut[j] to
    # cut[j+1]): the quotient's rounding moves it by a step at most, set right on the midpoints
    cut = np.clip(np.ceil(t / dt - lo - 0.5), 0, n).astype(np.int64)
    cut = np.where((cut > 0) & (mid(cut - 1) >= t), cut - 1, cut)
    cut = np.where((cut < n) & (mid(cut) < t), cut + 1, cut)
    flat = np.r_[float(before), right]  # before the first breakpoint, then each piece's start
    out = np.repeat(flat, np.diff(np.concatenate(([0], cut, [n]))))
    sloped = np.flatnonzero((left[1:] != right[:-1]) & (cut[1:] > cut[:-1]))
    for j in sloped:  # the ramps: a few per disturbance
        a, b = cut[j], cut[j + 1]
        u = (mid(np.arange(a, b)) - t[j]) / (t[j + 1] - t[j])
        out[a:b] = right[j] + u * (left[j + 1] - right[j])
    return out


def off_and(
    share: tuple[np.ndarray, np.ndarray, np.ndarray],
    indicator: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(1 − share) · indicator`` as a piecewise-linear function: the part of a load off the
    grid that a source carries (``indicator``: the share of it the source takes). Exact where
    one of the two is constant between breakpoints: a source's ramp (:func:`taken_up`) lies
    within a hold, where the share on the grid is none. Breakpoints [s], shares [1]."""
    t = np.unique(np.concatenate([share[0], indicator[0]]))
    if t.size == 0:
        return t, t, t
    s_left, s_right = _one_sided_limits(share, t, 1.0)
    i_left, i_right = _one_sided_limits(indicator, t, 0.0)
    return t, (1.0 - s_left) * i_left, (1.0 - s_right) * i_right


def _one_sided_limits(
    function: tuple[np.ndarray, np.ndarray, np.ndarray], x: np.ndarray, before: float
) -> tuple[np.ndarray, np.ndarray]:
    """A function's limits from the left and from the right at points ``x``."""
    t, left, right = function
    value = _value_between_breakpoints(function, x, before)
    if t.size == 0:
        return value, value.copy()
    hit = np.isin(x, t)
    k = np.searchsorted(t, x[hit])
    lhs, rhs = value.copy(), value.copy()
    lhs[hit], rhs[hit] = left[k], right[k]
    return lhs, rhs


def _value_between_breakpoints(
    function: tuple[np.ndarray, np.ndarray, np.ndarray], x: np.ndarray, before: float
) -> np.ndarray:
    """A piecewise-linear function's value at points ``x`` that are not breakpoints."""
    t, left, right = function
    if t.size == 0:
        return np.full(np.shape(x), float(before))
    i = np.searchsorted(t, x, side="right") - 1
    out = np.where(i < 0, float(before), right[np.clip(i, 0, t.size - 1)])
    inner = (i >= 0) & (i < t.size - 1)
    j = i[inner]
    u = (x[inner] - t[j]) / (t[j + 1] - t[j])
    out[inner] = right[j] + u * (left[j + 1] - right[j])
    return out


def recharge(
    discharge: np.ndarray, returned: np.ndarray, power: float, efficiency: float, dt: float
) -> tuple[np.ndarray, np.ndarray]:
    """What the UPS draws to refill its battery, and how far from full it is, step by step.

    Parameters
    ----------
    discharge
        Energy rate the battery delivers in each step. [MW]
    returned
        Whether the IT path is wholly back on the grid in each step (no discharge there):
        the rectifier recharges then. [bool]
    power
        The recharge's rated draw. [MW]
    efficiency
        Share of the drawn energy stored. [1]
    dt
        Step. [s]

    Returns
    -------
    tuple
        The draw [MW] and the energy short of full at each step's end [MWh].

    Notes
    -----
    The deficit grows by ``d·dt`` off the grid and falls by ``η·P·dt`` on it until the battery
    is full, the last step drawing only what is left; the loss ``(1 − η)·c`` is in the draw.
    Runs of steps are taken whole: the work follows the disturbances, not the steps.
    """
    n = discharge.size
    draw = np.zeros(n)
    short = np.zeros(n)
    if power <= 0:
        np.cumsum(discharge * dt / 3600.0, out=short)
        return draw, short
    flips = np.flatnonzero(np.diff(returned.astype(np.int8))) + 1
    bounds = np.concatenate(([0], flips, [n]))
    deficit = 0.0
    step = efficiency * power * dt / 3600.0  # MWh stored per step at the rated draw
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):  # runs: a few per disturbance
        if not returned[a]:
            short[a:b] = deficit + np.cumsum(discharge[a:b]) * dt / 3600.0
            deficit = float(short[b - 1])
            continue
        if deficit <= 0.0:
            continue
        full = int(deficit // step)  # whole steps at the rated draw, then the rest
        m = min(full, b - a)
        draw[a : a + m] = power
        short[a : a + m] = deficit - step * np.arange(1, m + 1)
        deficit -= step * m
        if m < b - a:
            draw[a + m] = deficit / step * power
            short[a + m] = 0.0
            deficit = 0.0
    return draw, short
