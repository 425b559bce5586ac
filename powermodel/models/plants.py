"""Cooling plants on their own, coarser time step: heat and weather in, supply temperature,
power and water out.

Each plant removes the heat of the hall (``heat``, the IT power) and holds a supply temperature
(air to the servers, or coolant to the cold plates) at its setpoint when it can. When it cannot —
outside air too warm for the evaporative pads, trim chillers too small — the supply rises and the
GPUs pay for it. The plant lags the heat by its time constant: it does not follow a one-second
swing (principle 4 of docs/model/index.md, two clocks).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from powermodel.models.cooling import (
    LATENT_HEAT_WATER,
    SPECIFIC_HEAT_AIR,
    ChillerCurves,
    chiller_power,
    cooling_tower_leaving,
    direct_evaporative_supply,
    dry_cooler_leaving,
    evaporation_water,
    fan_power,
    make_up_water,
    outside_air_fraction,
)
from powermodel.models.signal import lag_filter, lag_pole
from powermodel.models.weather import dew_point, humidity_ratio

CURVE_CHW_RANGE = (4.4, 10.0)  # °C, leaving chilled water the EnergyPlus curves were fitted on
CURVE_CONDENSER_RANGE = {False: (12.8, 30.0), True: (29.0, 46.0)}  # °C: water-, air-cooled
MIN_CONDENSER_WATER = (
    15.0  # °C: towers bypass to hold condenser water above it for the chillers [A]
)


class Outdoor(NamedTuple):
    """Outdoor air on the plant grid, each array of the heat's shape."""

    temp_air: np.ndarray
    """Dry-bulb temperature. [°C]"""
    temp_wetbulb: np.ndarray
    """Wet-bulb temperature. [°C]"""
    temp_dew: np.ndarray
    """Dew-point temperature. [°C]"""
    pressure: np.ndarray
    """Station pressure. [Pa]"""


class PlantOutput(NamedTuple):
    """Plant state on the plant grid."""

    supply_temp: np.ndarray
    """Supply air (air plants) or coolant (liquid plants) temperature. [°C]"""
    fan_power: np.ndarray
    """Electric power of the air movers (supply fans, CRAHs, dry-cooler fans) at the airflow the
    heat needs with the servers' fans at nominal speed. [W]"""
    cooling_power: np.ndarray
    """Electric power of pumps and chillers. [W]"""
    water_use: np.ndarray
    """Site water: evaporated (cooling, humidification) and blown down, 1 kg taken as 1 L. [L/s]"""
    chiller_load: np.ndarray
    """Heat removed by chillers (zero when the plant cools for free). [W]"""


@dataclass(frozen=True, kw_only=True)
class PlantDesign:
    """What every plant is built with; each plant's design adds its own fields. Every plant
    takes ``(heat, outdoor, design)`` (:class:`Outdoor`)."""

    design_heat: float
    """Heat the plant is sized for (fans, pumps, chillers). [W]"""
    dt: float
    """Plant step. [s]"""
    tau: float
    """Time constant of the plant's response. [s]"""
    supply_setpoint: float
    """Supply air or coolant temperature held. [°C]"""
    fan_fraction: float
    """Power of the air movers at design, over ``design_heat``. [1]"""
    pump_fraction: float
    """Power of the pumps at design, over ``design_heat``. [1]"""
    fan_min_speed: float
    """Lowest fan speed, fraction of design (1 for constant-speed fans). [1]"""
    cycles_of_concentration: float
    """Cycles of concentration of the blowdown of towers or evaporative media. [1]"""


@dataclass(frozen=True, kw_only=True)
class OutsideAirDesign(PlantDesign):
    """An outside-air economizer with direct evaporative pads (:func:`outside_air_evaporative`)."""

    supply_max: float
    """Highest supply air temperature the plant aims for: between the setpoint and it the supply
    floats with the outside air; above it the pads are wetted. [°C]"""
    evap_effectiveness: float
    """Saturation effectiveness of the pads. [1]"""
    air_delta_t: float
    """Air temperature rise across the servers, which sets the airflow. [K]"""
    dew_point_min: float
    """Lowest supply dew point: misting humidifies drier air up to it. [°C]"""
    humidity_min: float
    """Lowest supply relative humidity, at the supply temperature; 0 for none. [%]"""
    treatment_yield: float
    """Share of the water drawn that its treatment (reverse osmosis for misting nozzles,
    softening for media) delivers to the sprays or the sump; the reject is drained. [1]"""


@dataclass(frozen=True, kw_only=True)
class WaterSideDesign(PlantDesign):
    """A plant with chillers and heat rejection on a water loop."""

    chiller: ChillerCurves
    """One chiller of the EnergyPlus tables; whole chillers of its size make up the capacity."""
    chiller_capacity: float
    """Installed chiller capacity over ``design_heat``. [1]"""
    rejection_approach: float
    """Dry cooler over dry-bulb, or tower over wet-bulb. [K]"""
    loop_delta_t: float
    """Coolant (or chilled-water) loop range. [K]"""


@dataclass(frozen=True, kw_only=True)
class LiquidDesign(WaterSideDesign):
    """Warm-water liquid cooling (:func:`liquid`)."""

    heat_rejection: str
    """``"dry-cooler"`` or ``"tower"``."""


@dataclass(frozen=True, kw_only=True)
class ChilledWaterDesign(WaterSideDesign):
    """CRAHs on chilled water (:func:`chilled_water`)."""

    chw_supply: float
    """Chilled-water supply temperature. [°C]"""
    economizer_approach: float
    """Approach of the waterside economizer's plate heat exchanger. [K]"""
    economizer: bool
    """Whether a waterside economizer is fitted."""


def outside_air_evaporative(
    heat: np.ndarray, outdoor: Outdoor, design: OutsideAirDesign, lags: Lags | None = None
) -> PlantOutput:
    """Outside-air economizer with direct evaporative cooling and humidification, no chillers
    (Meta-style halls).

    Parameters
    ----------
    heat
        Heat to remove (IT power), plant-step means. [W]
    outdoor
        Outdoor dry-bulb, wet-bulb and dew-point temperatures and station pressure.
    design
        The plant: its ``supply_setpoint`` is the lowest supply air temperature (in cold weather
        outside air is mixed with return air to hold it), ``supply_max`` the highest it aims
        for (between the two the supply floats with the outside air; above it the pads are
        wetted); ``dew_point_min`` and ``humidity_min`` the humidity floor misting holds (a dew
        point, and a relative humidity at the supply temperature); ``cycles_of_concentration``
        the blowdown of the wetted media; ``fan_fraction`` and ``pump_fraction`` are fan and
        pad-pump power at design.
    lags
        The lags carried from the plant steps before (:class:`Lags`); by default none before.

    Notes
    -----
    Supply = setpoint when the outside air is colder (economizer mixing), the outside air itself
    up to ``supply_max``, and above it the pads cool the air toward the wet-bulb,
    ``T_db − ε·(T_db − T_wb)``, but not below ``supply_max`` (they are modulated). When even the
    pads cannot reach ``supply_max`` (humid heat), the supply rises above it and the GPUs pay.

    The water the pads evaporate and misting adds, with the bleed-off and the treatment's
    reject: :func:`evaporative_water`.
    """
    d, lag = design, lags or Lags()
    seen = lag("seen", heat, d.dt, d.tau)
    wet, supply = _economizer_supply(outdoor, d)
    return PlantOutput(
        supply_temp=lag("supply", supply, d.dt, d.tau),
        fan_power=fan_power(seen / d.design_heat, d.fan_fraction * d.design_heat, d.fan_min_speed),
        cooling_power=np.where(wet, d.pump_fraction * d.design_heat, 0.0),
        water_use=evaporative_water(seen, outdoor, supply, d),
        chiller_load=np.zeros_like(seen),
    )


def _economizer_supply(outdoor: Outdoor, design: OutsideAirDesign) -> tuple[np.ndarray, np.ndarray]:
    """Where the pads are wetted (the outside air above ``supply_max``), and the supply air
    temperature [°C], as :func:`outside_air_evaporative`'s Notes say."""
    d = design
    temp_air = outdoor.temp_air
    evaporative = direct_evaporative_supply(temp_air, outdoor.temp_wetbulb, d.evap_effectiveness)
    wet = _pads_wetted(outdoor, d)
    # mixing with return air holds the floor; above the ceiling the pads cool toward it
    supply = np.where(
        wet, np.maximum(evaporative, d.supply_max), np.maximum(temp_air, d.supply_setpoint)
    )
    return wet, supply


def _pads_wetted(outdoor: Outdoor, design: OutsideAirDesign) -> np.ndarray:
    """Where the pads are wetted: the outside air above ``supply_max``. [bool]"""
    return outdoor.temp_air > design.supply_max


def evaporative_water(
    heat: np.ndarray, outdoor: Outdoor, supply: np.ndarray, design: OutsideAirDesign
) -> np.ndarray:
    """Water an outside-air plant with direct evaporative pads draws: evaporated (cooling and
    humidification) and blown down, 1 kg taken as 1 L (:func:`outside_air_evaporative`).

    Parameters
    ----------
    heat
        Heat the supply air carries away, as the plant sees it (lagged). [W]
    outdoor
        Outdoor dry-bulb and dew-point temperatures and station pressure.
    supply
        Supply air temperature. [°C]
    design
        The plant: its humidity floor, air temperature rise, blowdown and water treatment.

    Returns
    -------
    numpy.ndarray
        Site water. [L/s]

    Notes
    -----
    Water, per kg of dry supply air ``ṁ = Q / (c_pa·ΔT_air)``:

    - the pads evaporate ``c_pa·(T_db − T_supply)/h_fg``, which raises the outside air's humidity
      ratio ``W_out`` to ``W_pad``;
    - misting holds the supply at or above the humidity ratio ``W_min`` of the floor, the higher
      of ``dew_point_min`` and the dew point of ``humidity_min`` at the supply temperature (dry,
      cold air in winter): ``W_sup = max(W_pad, W_min)``;
    - only the outside air brings dry air in (the return air holds the supply's humidity), so
      the water evaporated is ``ṁ·f·(W_sup − W_out)`` with ``f`` the outside-air share of the mix
      (:func:`~powermodel.models.cooling.outside_air_fraction`, 1 when the outside air is no
      colder than the setpoint);
    - bleed-off keeps the media's sump at ``C`` cycles of concentration: the sprays and the
      sump take ``C/(C − 1)`` times what evaporates;
    - the water's treatment delivers a share ``y`` (``treatment_yield``) of what it draws and
      drains the rest: a misting system's reverse osmosis passes about 65 % of its feed as
      permeate and drains 35 % as concentrate [gofog_ro]_ (Prineville 1's misting water is
      treated by reverse osmosis [central_oregonian_ro]_). The site draws
      ``E·C/((C − 1)·y)`` (:func:`~powermodel.models.cooling.make_up_water`).

    That is the water the Green Grid's WUE counts (cooling and humidification, on site)
    [green_grid_wue]_ and Meta's two uses of water [meta_water]_, drawn rather than consumed:
    Meta counts its water treatment (filter backwash, softening) among the uses it cuts
    [register_meta_water]_. Spray that the mist eliminators catch is returned to the sprays
    (about 18 % of the water at Prineville [enr_prineville]_), so it is not drawn again.
    Dehumidification (no chillers), an upper humidity limit and the power of the misting pumps
    are not modelled.

    References
    ----------
    .. [green_grid_wue] The Green Grid, "Water Usage Effectiveness (WUE): A Green Grid Data Center
       Sustainability Metric, White Paper #35", The Green Grid (2011).
       https://www.thegreengrid.org/
    .. [meta_water] Meta, "Water; Data centers", Meta Sustainability web pages (2023): water for
       evaporative cooling and humidification; the humidity floor, 20 % RH lowered to 13 %.
       https://sustainability.fb.com/report-page/water/
    .. [gofog_ro] GoFog, "Fog System Design Blunders, Part 1: Undersized Water Treatment
       System", GoFog Inc. (2017). https://www.gofoginc.com/fog-system-design-blunders-part-1
    .. [central_oregonian_ro] McCallister, R., "Facebook data center expands", Central Oregonian,
       via the Portland Tribune (2012).
       https://portlandtribune.com/component/content/article?id=180197
    .. [register_meta_water] The Register, "Meta thirsts for desert conditions in datacenter
       water quest", The Register (2022).
    .. [enr_prineville] ENR, "Editors' Choice, Green Project: Facebook Data Center", Engineering
       News-Record (2011).
       https://www.enr.com/articles/7287-editors-choice-green-project-facebook-data-center
    """
    d = design
    moisture = humidity_ratio(outdoor.temp_dew, outdoor.pressure)
    humid = _supply_moisture(moisture, outdoor, supply, d)
    share = _outside_air_share(outdoor, moisture, supply, humid, d)
    airflow = heat / (SPECIFIC_HEAT_AIR * d.air_delta_t)  # kg/s of dry air
    evaporated = airflow * share * (humid - moisture)
    return make_up_water(evaporated, d.cycles_of_concentration, d.treatment_yield)


def _outside_air_share(
    outdoor: Outdoor,
    moisture: np.ndarray,
    supply: np.ndarray,
    humid: np.ndarray,
    design: OutsideAirDesign,
) -> np.ndarray:
    """The outside air's share of the supply air's mix [1]: what mixing with the return air
    needs to hold the setpoint when the outside air is colder, else 1 (``moisture`` and
    ``humid``: the outside and supply air's humidity ratios [kg/kg], ``supply`` [°C])."""
    d = design
    return np.where(
        outdoor.temp_air < d.supply_setpoint,
        outside_air_fraction(outdoor.temp_air, moisture, supply, humid, supply + d.air_delta_t),
        1.0,
    )


def _supply_moisture(
    moisture: np.ndarray, outdoor: Outdoor, supply: np.ndarray, design: OutsideAirDesign
) -> np.ndarray:
    """The supply air's humidity ratio [kg/kg]: the outside air's ``moisture`` [kg/kg] raised
    by what the pads evaporate cooling it to ``supply`` [°C] where they are wetted, and misted
    up to the humidity floor (:func:`evaporative_water`)."""
    d = design
    wet = _pads_wetted(outdoor, d)
    temp_air, pressure = outdoor.temp_air, outdoor.pressure
    padded = moisture + np.where(wet, SPECIFIC_HEAT_AIR * (temp_air - supply), 0.0) / (
        LATENT_HEAT_WATER
    )
    floor = d.dew_point_min
    if d.humidity_min > 0.0:
        floor = np.maximum(floor, dew_point(supply, d.humidity_min))
    return np.maximum(padded, humidity_ratio(floor, pressure))


def liquid(
    heat: np.ndarray, outdoor: Outdoor, design: LiquidDesign, lags: Lags | None = None
) -> PlantOutput:
    """Warm-water liquid cooling: dry coolers or towers, trim chillers for the hot hours.

    The heat-rejection equipment delivers ``T_db + approach`` (dry cooler) or
    ``T_wb + approach`` (tower). Above the setpoint, trim chillers cool the loop the rest of the
    way: their load is the heat times the fraction of the loop range they must cover. What they
    cannot remove raises the coolant supply by ``unmet · loop_delta_t / heat``. ``heat`` is
    the heat to remove, plant-step means [W]; ``outdoor`` and ``design`` carry their units;
    ``lags`` as :func:`outside_air_evaporative` takes them.
    """
    d, lag = design, lags or Lags()
    seen = lag("seen", heat, d.dt, d.tau)
    tower = d.heat_rejection == "tower"
    if tower:
        rejected = cooling_tower_leaving(outdoor.temp_wetbulb, d.rejection_approach)
        condenser = np.maximum(rejected, MIN_CONDENSER_WATER)
    else:
        rejected = dry_cooler_leaving(outdoor.temp_air, d.rejection_approach)
        condenser = np.asarray(outdoor.temp_air, dtype=float)  # air-cooled trim chiller
    share = np.clip((rejected - d.supply_setpoint) / d.loop_delta_t, 0.0, 1.0)
    return _water_side(seen, seen * share, d.supply_setpoint, condenser, tower, d, 1.0, lag)


def chilled_water(
    heat: np.ndarray, outdoor: Outdoor, design: ChilledWaterDesign, lags: Lags | None = None
) -> PlantOutput:
    """CRAHs on chilled water: water-cooled chillers, cooling towers, a waterside economizer.

    With an ``economizer``, tower water at ``T_wb + approach`` precools the chilled-water return
    through a plate heat exchanger (``economizer_approach``): it takes the share of the loop range
    it can, the chillers the rest (integrated economizer). Heat the chillers cannot remove warms
    the chilled water, and the supply air with it. ``heat`` is the heat to remove, plant-step
    means [W]; ``outdoor`` and ``design`` carry their units; ``lags`` as
    :func:`outside_air_evaporative` takes them.
    """
    d, lag = design, lags or Lags()
    seen = lag("seen", heat, d.dt, d.tau)
    tower = cooling_tower_leaving(outdoor.temp_wetbulb, d.rejection_approach)
    chw_return = d.chw_supply + d.loop_delta_t
    free = np.clip((chw_return - (tower + d.economizer_approach)) / d.loop_delta_t, 0.0, 1.0)
    if not d.economizer:
        free = np.zeros_like(free)
    condenser = np.maximum(tower, MIN_CONDENSER_WATER)
    return _water_side(seen, seen * (1.0 - free), d.chw_supply, condenser, True, d, 0.2, lag)


def staged_chillers(
    load: np.ndarray,
    temp_chw_leaving: float,
    temp_cond_entering: np.ndarray,
    curves: ChillerCurves,
    installed: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Identical chillers, as many running as the load needs, sharing it equally.

    Parameters
    ----------
    load
        Cooling asked of the plant. [W]
    temp_chw_leaving
        Leaving chilled-water (or coolant) temperature. [°C]
    temp_cond_entering
        Entering condenser water, or outdoor air for air-cooled chillers. [°C]
    curves
        One chiller of the EnergyPlus tables.
    installed
        Installed capacity, rated; whole chillers of the table's size make it up. [W]

    Returns
    -------
    tuple
        Electric power [W] and load not met [W].
    """
    units = max(1, int(np.ceil(installed / curves.reference_capacity)))
    # The curves are fits over about 4-10 °C chilled water and 13-30 °C condenser water (29-46 °C
    # air for air-cooled sets); EnergyPlus clips curve inputs to their fitted range, and so do
    # we. A warm-water trim chiller (30 °C leaving) is thus rated as if it made 10 °C water:
    # conservative, as its real lift is smaller.
    chw = np.clip(temp_chw_leaving, *CURVE_CHW_RANGE)
    cond = np.clip(temp_cond_entering, *CURVE_CONDENSER_RANGE[curves.condenser_type == "AirCooled"])
    unit_capacity = chiller_power(0.0, chw, cond, curves).capacity
    running = np.clip(np.ceil(load / np.maximum(unit_capacity, 1e-9)), 1, units)
    op = chiller_power(load / running, chw, cond, curves)
    power = np.where(load > 0, running * op.power, 0.0)
    return power, running * op.unmet


def _water_side(
    seen: np.ndarray,
    load: np.ndarray,
    leaving: float,
    condenser: np.ndarray,
    tower: bool,
    plant: WaterSideDesign,
    pump_min_speed: float,
    lags: Lags,
) -> PlantOutput:
    """Chillers take ``load``; what they cannot remove raises the supply; towers evaporate the
    heat and the chillers' power; fans and pumps follow the cube law of the flow the heat needs.

    Cold-plate loops run at constant flow (``pump_min_speed`` 1: every plate must stay fed); a
    chilled-water loop's variable-speed pumps turn down with the load. ``lags`` carries the
    supply's lag (:class:`Lags`).
    """
    design = plant.design_heat
    chiller_w, unmet = staged_chillers(
        load, leaving, condenser, plant.chiller, plant.chiller_capacity * design
    )
    water = (
        evaporation_water(seen + chiller_w, cycles_of_concentration=plant.cycles_of_concentration)
        if tower
        else np.zeros_like(seen)
    )
    fraction = seen / design
    supply = plant.supply_setpoint + _rise(unmet, seen, plant.loop_delta_t)
    return PlantOutput(
        supply_temp=lags("supply", supply, plant.dt, plant.tau),
        fan_power=fan_power(fraction, plant.fan_fraction * design, plant.fan_min_speed),
        cooling_power=fan_power(fraction, plant.pump_fraction * design, pump_min_speed) + chiller_w,
        water_use=water,
        chiller_load=load - unmet,
    )


def causal_lag(signal: np.ndarray, dt: float, tau: float) -> np.ndarray:
    """First-order lag, causal on the step grid: each step holds the state at its start, so a
    change of heat within a step reaches the plant from the next step on. ``dt`` is the step
    and ``tau`` the time constant [s]; the result is in ``signal``'s unit."""
    return Lags()("signal", signal, dt, tau)


class Lags:
    """The plant path's causal lags (:func:`causal_lag`), each by name, carried from one run of
    plant steps to the next: a streamed run advances its plant path with its chunks, and each
    lag takes up the state its part before ended in (the filter's and the last value), so the
    parts are the whole path's values to the bit. A fresh one starts each lag steady on its
    first value, as :func:`causal_lag` does."""

    def __init__(self) -> None:
        self.state: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __call__(self, name: str, signal: np.ndarray, dt: float, tau: float) -> np.ndarray:
        """The lag ``name`` of the next plant steps' ``signal`` (:func:`causal_lag`'s)."""
        u = np.asarray(signal, dtype=float)
        if u.size == 0:
            return u.copy()
        a = lag_pole(dt, tau)
        head, zi = self.state.get(name, (u[:1], a * u[:1]))
        lagged, after = lag_filter(u, a, zi)
        self.state[name] = (lagged[-1:], after)
        return np.concatenate((head, lagged[:-1]))


def _rise(unmet: np.ndarray, heat: np.ndarray, loop_delta_t: float) -> np.ndarray:
    """Supply rise when ``unmet`` of ``heat`` is not removed from a loop of that range."""
    return np.where(heat > 0, unmet / np.maximum(heat, 1e-9) * loop_delta_t, 0.0)
