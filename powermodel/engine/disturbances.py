"""A scenario's grid disturbances through its site's chain: what the simulation needs of them.

From ``[disturbance]`` and ``[ride_through]``: the triggers (sags read at the supplies, and the
frequency's excursions out of the UPS window), the site's response
(:func:`powermodel.models.disturbance.respond`), the crashes it puts in each job's timeline,
and, once the load is known, what the connection draws: the load left on the grid, what the
batteries and generators carry, the recharge after. The pure models are in
:mod:`powermodel.models.disturbance`.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from powermodel.engine import facility
from powermodel.errors import ScenarioError
from powermodel.models import disturbance as dm
from powermodel.models.events import State
from powermodel.scenario import Scenario
from powermodel.scenario.facility import Disturbance, RideThrough

MAX_EXCURSIONS = 1000  # frequency excursions past the deadband or the UPS window, as sags
# codes of ``grid_event``: what a disturbance does at each step (0: nothing)
EVENT_CODES = ("none", "on backup", "servers without power", "recharging")


@dataclass(frozen=True)
class Triggers:
    """The disturbances as the site meets them, in time order (s from the run's start)."""

    time: np.ndarray
    duration: np.ndarray  # [s]
    kind: np.ndarray  # "sag" or "frequency"
    voltage: np.ndarray  # (n, 3) residual per phase at the connection [p.u.]; NaN: frequency
    angle: np.ndarray  # (n, 3) [°]
    readings: dm.Readings  # of every trigger (NaN for a frequency excursion)
    frequency: np.ndarray  # lowest or highest frequency of an excursion [Hz]; NaN for a sag


@dataclass(frozen=True)
class Response:
    """A scenario's disturbances and its site's answer."""

    triggers: Triggers
    outcome: dm.Outcome
    chain: RideThrough


def response(scenario: Scenario) -> Response | None:
    """What the scenario's disturbances do to its site; None without any."""
    d = scenario.disturbance
    if d is None:
        return None
    rt = scenario.site_response()
    sim = scenario.simulation
    offset = (scenario.disturbance_start() - sim.start).total_seconds()
    sag_v = np.array([s.phases for s in d.sags], float).reshape(-1, 3)
    sag_a = np.array([s.angle for s in d.sags], float).reshape(-1, 3)
    sag_t = offset + np.array([s.at for s in d.sags], float)
    sag_d = np.array([s.duration for s in d.sags], float)
    ft = offset + np.array([t for t, _ in d.frequency], float)
    ff = np.array([f for _, f in d.frequency], float)
    f_begin, f_end, extreme = _excursions(ft, ff, d, rt, sim.duration)
    n_f = f_begin.size
    time = np.concatenate([sag_t, f_begin])
    order = np.argsort(time, kind="stable")
    voltage = np.concatenate([sag_v, np.full((n_f, 3), np.nan)])[order]
    angle = np.concatenate([sag_a, np.zeros((n_f, 3))])[order]
    readings = dm.readings(
        np.nan_to_num(voltage, nan=1.0), angle, tuple(rt.transformers), rt.supply_connection
    )
    freq = np.isnan(voltage[:, 0])
    readings = dm.Readings(
        *(np.where(freq, np.nan, getattr(readings, f)) for f in dm.Readings.__dataclass_fields__)
    )
    triggers = Triggers(
        time=time[order],
        duration=np.concatenate([sag_d, f_end - f_begin])[order],
        kind=np.where(freq, "frequency", "sag").astype(object),
        voltage=voltage,
        angle=angle,
        readings=readings,
        frequency=np.concatenate([np.full(sag_t.size, np.nan), extreme])[order],
    )
    measured = readings.worst if rt.measure == "worst_phase" else readings.positive
    # the chain's keys as the pure model takes them: the curves as steps, no count as None
    same = {f.name: getattr(rt, f.name) for f in fields(dm.Chain)}
    same.update(
        immunity=rt.curve("immunity"), transfer=rt.curve("transfer"), count=rt.count or None
    )
    chain = dm.Chain(**same)
    outcome = dm.respond(triggers.time, triggers.duration, measured, chain, triggers.frequency)
    return Response(triggers, outcome, rt)


def _excursions(
    t: np.ndarray, f: np.ndarray, d: Disturbance, rt: RideThrough, duration: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The frequency's disturbances: each stretch out of the UPS window (the UPS leaves the
    grid there), and each excursion past the deadband that stays inside the window (ridden
    through); their starts and ends within the run [s] and the frequency farthest out [Hz].

    Raises
    ------
    ScenarioError
        More than :data:`MAX_EXCURSIONS` of them: a noisy record, not a sequence.
    """
    window = rt.frequency_window
    normal = (
        d.nominal_frequency - d.frequency_deadband,
        d.nominal_frequency + d.frequency_deadband,
    )
    out_begin, out_end = dm.outside_window(t, f, *window)
    ex_begin, ex_end = dm.outside_window(t, f, *normal)
    for count, left, key in (
        (
            out_begin.size,
            f"the UPS window ({window[0]:g}-{window[1]:g} Hz)",
            "ride_through.frequency_window",
        ),
        (
            ex_begin.size,
            f"{normal[0]:g}-{normal[1]:g} Hz (the deadband)",
            "disturbance.frequency_deadband",
        ),
    ):
        if count > MAX_EXCURSIONS:
            raise ScenarioError(
                f"disturbance.frequency leaves {left} {count:,} times, more than "
                f"{MAX_EXCURSIONS:,}: give the excursions, not a noisy record (or widen {key})"
            )
    # an excursion holding a stretch out of the window is that stretch's (or those stretches')
    overlapping = np.searchsorted(out_begin, ex_end, side="left") - np.searchsorted(
        out_end, ex_begin, side="right"
    )
    inside = overlapping == 0
    begin = np.concatenate([out_begin, ex_begin[inside]])
    end = np.minimum(np.concatenate([out_end, ex_end[inside]]), duration)
    extreme = np.concatenate(
        [
            dm.extremes(t, f, out_begin, end[: out_begin.size], *window),
            dm.extremes(t, f, ex_begin[inside], end[out_begin.size :], *normal),
        ]
    )
    return begin, end, extreme


def crashes(
    scenario: Scenario, startup: tuple[tuple[State, float], ...]
) -> tuple[tuple[float, tuple[tuple[State, float], ...]], ...]:
    """The job's crashes from the scenario's disturbances: when its servers lose power, and
    what follows (idle until the power is back and the restart's wait, then ``startup``)."""
    r = response(scenario)
    if r is None:
        return ()
    wait = scenario.reliability.restart_time
    return tuple(
        (a, ((State.FAILED_IDLE, b - a + wait), *startup)) for a, b in r.outcome.lost if a < b
    )


def powered(scenario: Scenario, lo: int, n: int, dt: float) -> np.ndarray | None:
    """The share of each step the servers have power (None: always)."""
    r = response(scenario)
    return None if r is None else _powered_share(r.outcome, lo, n, dt)


def _powered_share(outcome: dm.Outcome, lo: int, n: int, dt: float) -> np.ndarray | None:
    if not outcome.lost:
        return None
    return 1.0 - dm.interval_means(dm.stretches(outcome.lost), lo, n, dt, 0.0)


def connection(
    scenario: Scenario,
    it_path: np.ndarray,
    other: np.ndarray,
    dt: float,
    design_it: float | None = None,
) -> dict[str, np.ndarray] | None:
    """What the connection draws through the disturbances [MW], from the IT path (IT power and
    its chain's losses) and the other loads (cooling, misc) over the whole run; None without
    disturbances.

    Returns the shares of each on the grid (``it_share``, ``other_share``), ``load`` (what the
    grid carries before the site batteries), ``generator_power``, ``ups_battery_power``
    (discharging), ``recharge_power``, ``ups_battery_deficit`` [MWh], ``grid_share`` (of the
    site's load the grid carries, recharge aside) and ``grid_event`` (what the disturbance does
    there: a code into :data:`EVENT_CODES`). Each step's balance holds exactly:
    ``load + generator + ups_battery = it_path + other + recharge``.
    """
    r = response(scenario)
    if r is None:
        return None
    n, rt, o = it_path.size, r.chain, r.outcome
    it_fn = dm.on_grid(o.it)
    s_it = dm.interval_means(it_fn, 0, n, dt, 1.0)
    s_other = dm.interval_means(dm.on_grid(o.other), 0, n, dt, 1.0)
    gen_it = dm.interval_means(dm.off_and(it_fn, dm.taken_up(o.generator_it)), 0, n, dt, 0.0)
    off = it_path * (1.0 - s_it)
    generator = it_path * gen_it + other * (1.0 - s_other)
    battery = np.maximum(off - it_path * gen_it, 0.0)
    design = facility.design_it_power(scenario) if design_it is None else design_it
    returned = (s_it >= 1.0) & (battery <= 0.0)
    recharge, deficit = dm.recharge(
        battery, returned, rt.recharge * design / 1e6, rt.recharge_efficiency, dt
    )
    carried = it_path * s_it + other * s_other
    load = carried + recharge
    code = np.where(recharge > 0.0, EVENT_CODES.index("recharging"), 0)
    code[(s_it < 1.0) | (s_other < 1.0)] = EVENT_CODES.index("on backup")
    on = _powered_share(o, 0, n, dt)
    if on is not None:
        code[on < 1.0] = EVENT_CODES.index("servers without power")
    whole = it_path + other
    return {
        "it_share": s_it,
        "other_share": s_other,
        "load": load,
        "grid_share": np.divide(carried, whole, out=np.ones(n), where=whole > 0),
        "generator_power": generator,
        "ups_battery_power": battery,
        "recharge_power": recharge,
        "ups_battery_deficit": deficit,
        "grid_event": code.astype(np.int8),
    }


def variables(scenario: Scenario) -> dict[str, tuple]:
    """Each disturbance and what the site did, on the ``disturbance`` dimension (empty
    without any): its time, kind and length, the residual voltage at the connection and at
    the supplies (worst phase and positive sequence), the frequency reached, and whether the
    UPS transferred, latched the site on backup, or the servers lost their power."""
    r = response(scenario)
    if r is None:
        return {}
    tr, o, dim = r.triggers, r.outcome, "disturbance"
    start = np.datetime64(scenario.simulation.start)
    seconds = np.round(tr.time * 1e9).astype("timedelta64[ns]")
    return {
        "disturbance_time": (dim, start + seconds),
        "disturbance_kind": (dim, tr.kind),
        "disturbance_duration": (dim, tr.duration),
        "disturbance_connection_worst": (dim, tr.readings.connection_worst),
        "disturbance_connection_positive": (dim, tr.readings.connection_positive),
        "disturbance_worst": (dim, tr.readings.worst),
        "disturbance_positive": (dim, tr.readings.positive),
        "disturbance_frequency": (dim, tr.frequency),
        "disturbance_transferred": (dim, o.transferred),
        "disturbance_latched": (dim, o.latched),
        "disturbance_dropped": (dim, o.dropped),
    }
