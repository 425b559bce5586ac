"""Controllers that react to the grid: what a co-simulation step hands one (:class:`Measured`),
what it answers (:class:`Action`), the interface a user's own follows (:class:`Controller`), and
the shipped ones: a power cap or clock lock on voltage (:class:`VoltageCap`) and a site battery
holding the grid draw's ramp (:class:`RampBattery`) or supporting the voltage
(:class:`VoltageBattery`).

A controller is a small stateful object. :func:`~powermodel.cosim.cosimulate` calls ``start``
once with the grid step, then ``decide`` once a grid step, in order: the caps (``lever`` set)
first, then the rest (batteries), so a battery sees the site's draw after the caps. The voltage a
controller reads is the previous step's solve: what it measures at step ``k`` acts at ``k + 1``
(one grid step of delay, as a meter read then acted on)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from powermodel.errors import PowerModelError

LEVERS = ("power_cap", "clock_lock")


@dataclass(frozen=True)
class Measured:
    """What a controller sees at grid step ``k``, for its own site.

    Attributes
    ----------
    v_site : float
        The lowest phase voltage at the site's bus in step ``k - 1``'s solve (NaN at ``k = 0``,
        before any solve). [pu]
    v_feeder : float
        The lowest bus voltage of the whole network in step ``k - 1``'s solve. [pu]
    p_grid : float
        The site's draw at its connection in step ``k - 1`` (after every lever). [MW]
    p_load : float
        The site's own draw in step ``k`` with this step's caps applied, before any battery:
        the facility's meter, known in the step. [MW]
    """

    v_site: float
    v_feeder: float
    p_grid: float
    p_load: float


@dataclass(frozen=True)
class Action:
    """A controller's answer for one grid step.

    Attributes
    ----------
    engaged : bool
        Whether its lever acts in this step (a cap's capped run is the site's; a battery
        charges or discharges).
    battery_mw : float
        A battery's power into the site's connection: positive discharging (the grid draw
        falls by it), negative charging. [MW]
    soc : float
        A battery's state of charge after the step (NaN for a cap). [fraction of its energy]
    """

    engaged: bool
    battery_mw: float = 0.0
    soc: float = math.nan


@runtime_checkable
class Controller(Protocol):
    """The interface of a controller (write your own to it).

    Attributes
    ----------
    name : str
        Its name in the results (``controller`` coordinate).
    site : int
        The index of the site it watches and acts on (the order of ``buses``).
    lever : str or None
        ``"power_cap"`` or ``"clock_lock"`` for a cap, whose effect the engine computes: the
        site's scenario is simulated again with ``mitigation.<lever> = level`` and, in a step
        where the cap is engaged, that run is the site's. ``None`` for a controller whose power
        the loop adds (``Action.battery_mw``).
    level : float or None
        The cap's setting: [W] a GPU for ``power_cap``, [fraction of nominal] for
        ``clock_lock``.
    """

    name: str
    site: int
    lever: str | None
    level: float | None

    def start(self, dt: float) -> None:
        """Reset the controller's state before the first step; ``dt`` is the grid step. [s]"""
        ...

    def decide(self, k: int, t: float, measured: Measured) -> Action:
        """The action for grid step ``k``, starting ``t`` seconds into the run."""
        ...


class VoltageCap:
    """A power cap (or clock lock) engaged on low voltage, with hysteresis, a delay and a hold.

    Engages when the watched voltage has been below ``v_on`` for ``delay`` seconds (at least
    one step), releases when it has been above ``v_off`` as long and the cap has been on for
    ``hold`` seconds: a site's draw that swings each second (an iteration's compute and
    communication phases) would otherwise toggle a cap as often.

    Parameters
    ----------
    level : float
        The cap: [W] a GPU (``lever="power_cap"``) or [fraction] of the nominal clock
        (``lever="clock_lock"``).
    v_on, v_off : float
        Engage below, release above. [pu]
    delay : float
        How long the condition must hold before the cap moves. [s]
    hold : float
        The shortest time the cap stays on once engaged. [s]
    watch : {"site", "feeder"}
        The site's own bus, or the network's lowest bus.
    """

    def __init__(
        self,
        level: float,
        *,
        v_on: float = 0.95,
        v_off: float = 0.97,
        delay: float = 0.0,
        hold: float = 0.0,
        lever: str = "power_cap",
        watch: str = "site",
        site: int = 0,
        name: str | None = None,
    ):
        if lever not in LEVERS:
            raise PowerModelError(f"VoltageCap lever {lever!r}: one of {', '.join(LEVERS)}")
        if watch not in ("site", "feeder"):
            raise PowerModelError(f"VoltageCap watch {watch!r}: 'site' or 'feeder'")
        if not (0 < v_on <= v_off) or not (delay >= 0 and hold >= 0):
            raise PowerModelError(
                f"VoltageCap needs 0 < v_on <= v_off [pu], delay >= 0 and hold >= 0 [s], got "
                f"v_on={v_on}, v_off={v_off}, delay={delay}, hold={hold}"
            )
        self.level, self.lever, self.site = float(level), lever, int(site)
        self.v_on, self.v_off, self.delay, self.watch = v_on, v_off, float(delay), watch
        self.hold = float(hold)
        self.name = name or f"{lever}_{level:g}_site{site + 1}"
        self.start(1.0)

    def start(self, dt: float) -> None:
        # the grid steps the delay and the hold span
        self._steps = max(1, math.ceil(self.delay / dt - 1e-9))
        self._hold = math.ceil(self.hold / dt - 1e-9)
        self._engaged, self._held, self._on = False, 0, 0

    def decide(self, k: int, t: float, measured: Measured) -> Action:
        v = measured.v_site if self.watch == "site" else measured.v_feeder
        moving = v > self.v_off if self._engaged else v < self.v_on
        self._held = self._held + 1 if moving else 0
        self._on = self._on + 1 if self._engaged else 0
        if self._held >= self._steps and (not self._engaged or self._on >= self._hold):
            self._engaged, self._held = not self._engaged, 0
        return Action(self._engaged)


class _Store:
    """A battery's energy: state of charge within power and energy limits, the round trip's
    efficiency split evenly between charge and discharge (each its square root)."""

    def __init__(self, power_mw, energy_mwh, efficiency, soc_initial, soc_min, soc_max):
        if not (power_mw > 0 and energy_mwh > 0 and 0 < efficiency <= 1):
            raise PowerModelError(
                "a battery needs power_mw > 0 [MW], energy_mwh > 0 [MWh] and 0 < efficiency "
                f"<= 1, got {power_mw}, {energy_mwh}, {efficiency}"
            )
        if not 0 <= soc_min <= soc_initial <= soc_max <= 1:
            raise PowerModelError(
                f"a battery needs 0 <= soc_min <= soc_initial <= soc_max <= 1, got {soc_min}, "
                f"{soc_initial}, {soc_max}"
            )
        self.power, self.energy = float(power_mw), float(energy_mwh)
        self.eta = math.sqrt(efficiency)
        self.soc_initial, self.soc_min, self.soc_max = soc_initial, soc_min, soc_max

    def start(self, dt: float) -> None:
        self.hours, self.soc = dt / 3600, self.soc_initial

    def apply(self, want_mw: float) -> float:
        """Discharge (positive) or charge (negative) as near ``want_mw`` as the limits allow
        for one step; the state of charge follows. [MW]"""
        room_out = (self.soc - self.soc_min) * self.energy * self.eta / self.hours
        room_in = (self.soc_max - self.soc) * self.energy / self.eta / self.hours
        mw = min(max(want_mw, -self.power, -room_in), self.power, room_out)
        drawn = mw / self.eta if mw > 0 else mw * self.eta
        self.soc -= drawn * self.hours / self.energy
        return mw


class RampBattery:
    """A site battery that holds the grid draw's ramp to ``ramp`` MW a minute: it discharges
    when the site's load rises faster than that and charges when it falls faster, as far as its
    power and energy allow. It acts on the draw alone (no network measurement): the grid step
    is its control period.

    Parameters
    ----------
    ramp : float
        The largest change of the grid draw. [MW/min]
    power_mw, energy_mwh : float
        Its power and usable energy. [MW], [MWh]
    efficiency : float
        Round trip (split evenly between charge and discharge). [fraction]
    """

    lever = None
    level = None

    def __init__(
        self,
        ramp: float,
        power_mw: float,
        energy_mwh: float,
        *,
        efficiency: float = 0.9,
        soc_initial: float = 0.5,
        soc_min: float = 0.05,
        soc_max: float = 0.95,
        site: int = 0,
        name: str | None = None,
    ):
        if not ramp > 0:
            raise PowerModelError(f"RampBattery ramp must be > 0 [MW/min], got {ramp}")
        self.ramp, self.site = float(ramp), int(site)
        self.store = _Store(power_mw, energy_mwh, efficiency, soc_initial, soc_min, soc_max)
        self.name = name or f"ramp_battery_site{site + 1}"
        self.start(1.0)

    def start(self, dt: float) -> None:
        self.store.start(dt)
        self._step = self.ramp * dt / 60  # the most the draw may move in one step [MW]

    def decide(self, k: int, t: float, measured: Measured) -> Action:
        load, last = measured.p_load, measured.p_grid
        if k == 0 or not math.isfinite(last):
            target = load
        else:
            target = min(max(load, last - self._step), last + self._step)
        mw = self.store.apply(load - target)
        return Action(mw != 0.0, mw, self.store.soc)


class VoltageBattery:
    """A site battery supporting the voltage: it discharges ``power_mw`` while the watched
    voltage is low (below ``v_on`` until above ``v_off``) and recharges at ``recharge_mw`` to its
    initial state of charge while it is not.

    Parameters
    ----------
    v_on, v_off : float
        Discharge below, stop above. [pu]
    power_mw, energy_mwh : float
        Its power and usable energy. [MW], [MWh]
    recharge_mw : float
        The charging power while the voltage is good (10 % of ``power_mw`` by default). [MW]
    """

    lever = None
    level = None

    def __init__(
        self,
        power_mw: float,
        energy_mwh: float,
        *,
        v_on: float = 0.95,
        v_off: float = 0.97,
        recharge_mw: float | None = None,
        efficiency: float = 0.9,
        soc_initial: float = 0.9,
        watch: str = "site",
        site: int = 0,
        name: str | None = None,
    ):
        self.trigger = VoltageCap(1.0, v_on=v_on, v_off=v_off, watch=watch, site=site)
        self.store = _Store(power_mw, energy_mwh, efficiency, soc_initial, 0.0, 1.0)
        self.recharge = 0.1 * power_mw if recharge_mw is None else float(recharge_mw)
        self.site = int(site)
        self.name = name or f"voltage_battery_site{site + 1}"
        self.start(1.0)

    def start(self, dt: float) -> None:
        self.trigger.start(dt)
        self.store.start(dt)

    def decide(self, k: int, t: float, measured: Measured) -> Action:
        low = self.trigger.decide(k, t, measured).engaged
        if low:
            mw = self.store.apply(self.store.power)
        elif self.store.soc < self.store.soc_initial:
            store = self.store  # recharge no further than the initial state of charge
            room = (store.soc_initial - store.soc) * store.energy / store.eta / store.hours
            mw = store.apply(-min(self.recharge, room))
        else:
            mw = 0.0
        return Action(low, mw, self.store.soc)
