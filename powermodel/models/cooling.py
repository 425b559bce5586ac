"""Cooling-plant building blocks: DOE-2 chillers, towers, dry coolers, evaporative pads, fans.

Pure functions of numpy arrays (broadcasting like numpy) with published default coefficients. The
plant models of the facility compose them; the chiller curves come from
:func:`powermodel.iotools.chillers.chiller`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

LATENT_HEAT_WATER = 2.45e6  # J/kg, enthalpy of vaporisation of water at about 20 °C (steam tables)
# ASHRAE Handbook—Fundamentals (2009), Chapter 1, eq. 32: h = 1.006·t + W·(2501 + 1.86·t) kJ/kg
SPECIFIC_HEAT_AIR = 1006.0  # J/(kg K), dry air
SPECIFIC_HEAT_VAPOUR = 1860.0  # J/(kg K), water vapour
ENTHALPY_VAPOUR_0C = 2.501e6  # J/kg, saturated water vapour at 0 °C


@dataclass(frozen=True)
class ChillerCurves:
    """One chiller of the DOE-2 model as EnergyPlus ``Chiller:Electric:EIR`` states it.

    Attributes
    ----------
    name
        Name in the EnergyPlus data set.
    reference_capacity
        Cooling capacity at the reference temperatures; NaN where the data set says
        ``Autosize`` (scale it with :func:`dataclasses.replace`). [W]
    reference_cop
        Coefficient of performance at the reference point, compressor only. [1]
    reference_temp_chw_leaving
        Leaving chilled-water temperature of the reference point. [°C]
    reference_temp_cond_entering
        Entering condenser fluid temperature of the reference point: condenser water, or outdoor
        dry-bulb for an air-cooled chiller. [°C]
    min_part_load
        Part-load ratio below which the chiller cycles on and off. [1]
    capft, eirft
        Six coefficients of the biquadratic capacity and EIR temperature curves.
    eirfplr
        Three (quadratic) or four (cubic) coefficients of the EIR part-load curve.
    condenser_type
        ``"WaterCooled"`` or ``"AirCooled"``.
    max_part_load
        Largest part-load ratio. The data sets' CSV does not carry it; EnergyPlus's
        ``Chillers.idf`` sets 1.02–1.15, and 1.0 keeps the curves inside their fitted range. [1]
    """

    name: str
    reference_capacity: float
    reference_cop: float
    reference_temp_chw_leaving: float
    reference_temp_cond_entering: float
    min_part_load: float
    capft: tuple[float, ...]
    eirft: tuple[float, ...]
    eirfplr: tuple[float, ...]
    condenser_type: str = "WaterCooled"
    max_part_load: float = 1.0

    def __post_init__(self) -> None:
        for field, sizes in (("capft", (6,)), ("eirft", (6,)), ("eirfplr", (3, 4))):
            coefficients = tuple(float(c) for c in getattr(self, field))
            if len(coefficients) not in sizes:
                raise ValueError(f"chiller {self.name!r}: {field} needs {sizes} coefficients")
            object.__setattr__(self, field, coefficients)
        if not 0.0 < self.min_part_load <= 1.0 <= self.max_part_load:
            raise ValueError(
                f"chiller {self.name!r}: need 0 < min_part_load ≤ 1 ≤ max_part_load, got "
                f"{self.min_part_load:g} and {self.max_part_load:g}"
            )
        if not self.reference_cop > 0.0:
            raise ValueError(f"chiller {self.name!r}: reference_cop must be positive")


class ChillerOperation(NamedTuple):
    """What :func:`chiller_power` returns, each an array of the broadcast input shape."""

    power: np.ndarray
    """Electric power of the compressor. [W]"""
    capacity: np.ndarray
    """Cooling the chiller can deliver at these temperatures, ``Q_ref·CAPFT·max_part_load``. [W]"""
    unmet: np.ndarray
    """Load above ``capacity``, not removed. [W]"""


def biquadratic(c: tuple[float, ...] | np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """EnergyPlus ``Curve:Biquadratic``: ``c1 + c2·x + c3·x² + c4·y + c5·y² + c6·x·y``.

    Parameters
    ----------
    c
        Six coefficients.
    x, y
        Independent variables (for chillers: leaving chilled-water and entering condenser
        temperatures [°C]). Not clipped to any range.

    Returns
    -------
    numpy.ndarray
        Curve value, of the broadcast shape of ``x`` and ``y``.
    """
    c1, c2, c3, c4, c5, c6 = c
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    return c1 + c2 * x + c3 * x * x + c4 * y + c5 * y * y + c6 * x * y


def part_load_curve(c: tuple[float, ...] | np.ndarray, p: np.ndarray) -> np.ndarray:
    """EnergyPlus ``Curve:Quadratic`` or ``Curve:Cubic`` by the number of coefficients.

    ``c1 + c2·p + c3·p²`` (three coefficients), plus ``c4·p³`` (four): ``p`` a part-load (or
    capacity) ratio [1], the curve a ratio to the rated value [1].
    """
    if len(c) not in (3, 4):
        raise ValueError(f"a part-load curve has 3 or 4 coefficients, got {len(c)}")
    return np.polynomial.polynomial.polyval(np.asarray(p, dtype=float), np.asarray(c, dtype=float))


def chiller_power(
    load: np.ndarray,
    temp_chw_leaving: np.ndarray,
    temp_cond_entering: np.ndarray,
    curves: ChillerCurves,
) -> ChillerOperation:
    """Electric power of a vapour-compression chiller: the DOE-2 / EnergyPlus EIR model.

    Parameters
    ----------
    load
        Cooling asked of the chiller (evaporator heat); negative counts as none. [W]
    temp_chw_leaving
        Leaving (supply) chilled-water temperature. [°C]
    temp_cond_entering
        Entering condenser water temperature; outdoor dry-bulb for an air-cooled chiller. [°C]
    curves
        The chiller (:func:`powermodel.iotools.chillers.chiller`).

    Returns
    -------
    ChillerOperation
        ``power`` [W], ``capacity`` [W] and ``unmet`` load [W].

    Notes
    -----
    With ``x = temp_chw_leaving`` and ``y = temp_cond_entering``::

        Q_avail = Q_ref · CAPFT(x, y)
        PLR     = min(Q_load / Q_avail, PLR_max)
        cycling = min(PLR / PLR_min, 1)
        P       = (Q_avail / COP_ref) · EIRFT(x, y) · EIRFPLR(max(PLR, PLR_min)) · cycling

    Below the minimum part-load ratio the chiller cycles on and off (no false loading), drawing
    the power of the minimum part-load ratio for the on fraction of the time. EnergyPlus
    false-loads (hot-gas bypass) between the minimum unloading ratio and the minimum part-load
    ratio; the ``Chillers.idf`` entries checked set the two equal, so that band is empty, and the
    CSV carries one ratio. Load beyond ``capacity = Q_avail · PLR_max`` is not met: it is
    returned as ``unmet`` (the chilled water then leaves warmer than ``temp_chw_leaving``; the
    plant model accounts for it). A negative ``CAPFT`` (far outside the fitted range) is taken as
    no capacity.

    EnergyPlus clips each curve's inputs to the curve's minimum and maximum ``x`` and ``y``; the
    CSV data sets do not carry those limits, so the curves are evaluated as polynomials, without
    clipping. The entries checked were fitted over about 4–13 °C chilled water and 11–30 °C
    condenser water (29–46 °C outdoor air for an air-cooled one): keep inputs near that range,
    as real plants do by holding the condenser water above a minimum.

    Identical chillers sharing a load equally run at the same part-load ratio: model ``n`` of them
    as one with ``n`` times the reference capacity.

    References
    ----------
    .. [energyplus] U.S. Department of Energy, EnergyPlus, "EnergyPlus weather data, DataSets
       (Chillers.idf, AirCooledChiller.idf) and Engineering Reference", EnergyPlus (2024),
       Engineering Reference, "Electric Chiller Model Based on Fluid Temperature Leaving
       Evaporator" (``Chiller:Electric:EIR``); the DOE-2.1 chiller model.
       https://energyplus.net/
    """
    load, x, y = np.broadcast_arrays(
        np.maximum(np.asarray(load, dtype=float), 0.0),
        np.asarray(temp_chw_leaving, dtype=float),
        np.asarray(temp_cond_entering, dtype=float),
    )
    available = curves.reference_capacity * np.maximum(biquadratic(curves.capft, x, y), 0.0)
    capacity = available * curves.max_part_load
    met = np.minimum(load, capacity)
    plr = np.divide(met, available, out=np.zeros_like(met), where=available > 0.0)
    cycling = np.minimum(plr / curves.min_part_load, 1.0)
    eir = biquadratic(curves.eirft, x, y) * part_load_curve(
        curves.eirfplr, np.maximum(plr, curves.min_part_load)
    )
    power = available / curves.reference_cop * eir * cycling
    return ChillerOperation(power, capacity, load - met)


def cooling_tower_leaving(temp_wetbulb: np.ndarray, approach: float = 3.9) -> np.ndarray:
    """Water leaving a cooling tower held at a fixed approach to the wet-bulb temperature.

    Parameters
    ----------
    temp_wetbulb
        Outdoor wet-bulb temperature. [°C]
    approach
        Leaving water minus wet-bulb. [K]

    Returns
    -------
    numpy.ndarray
        Leaving (condenser supply) water temperature, ``T_wb + approach``. [°C]

    Notes
    -----
    The default, 3.9 K (7 °F), is the approach of the classic 95/85/78 °F tower selection, which
    delivers the 85 °F (29.4 °C) condenser water of the AHRI 550/590 chiller rating at a 78 °F
    (25.6 °C) wet-bulb; ASHRAE 90.1 rates open towers at 95/85/75 °F, a 10 °F (5.6 K) approach.
    Design approaches lie between about 3 and 6 K. A real tower's approach widens as the
    wet-bulb falls at constant load, so a fixed approach flatters cold-weather operation.
    """
    return np.asarray(temp_wetbulb, dtype=float) + approach


def dry_cooler_leaving(temp_air: np.ndarray, approach: float = 6.0) -> np.ndarray:
    """Fluid leaving a dry cooler (closed-circuit, sensible only) at a fixed approach to dry-bulb.

    Parameters
    ----------
    temp_air
        Outdoor dry-bulb temperature. [°C]
    approach
        Leaving fluid minus dry-bulb. [K]

    Returns
    -------
    numpy.ndarray
        Leaving fluid temperature, ``T_db + approach``. [°C]

    Notes
    -----
    The default 6 K is an assumption, not a published figure: dry coolers are selected for
    roughly 5–10 K at the design dry-bulb, trading coil size and fan power against approach.
    Give the scenario's value where the design is known.
    """
    return np.asarray(temp_air, dtype=float) + approach


def direct_evaporative_supply(
    temp_air: np.ndarray, temp_wetbulb: np.ndarray, effectiveness: float = 0.85
) -> np.ndarray:
    """Air leaving a direct evaporative cooler (wetted media pads).

    Parameters
    ----------
    temp_air
        Entering dry-bulb temperature. [°C]
    temp_wetbulb
        Entering wet-bulb temperature (unchanged through the adiabatic pad). [°C]
    effectiveness
        Saturation effectiveness. [1]

    Returns
    -------
    numpy.ndarray
        Leaving dry-bulb temperature, ``T_db − ε·(T_db − T_wb)``. [°C]

    Notes
    -----
    Saturation effectiveness ``ε = (T_db,in − T_db,out) / (T_db,in − T_wb,in)`` is 0.75–0.95 for
    wetted media at usual face velocities (deeper media toward the top). The default 0.85 sits in
    the middle. Where the outside air needs no cooling the pads stay dry: the plant model decides
    when to wet them.

    References
    ----------
    .. [wang_hvac] Wang, S. K., "Handbook of Air Conditioning and Refrigeration, 2nd edition",
       McGraw-Hill (2001), §9.8 (direct evaporative coolers).
    .. [ashrae_hvac] ASHRAE, "ASHRAE Handbook—HVAC Systems and Equipment: Evaporative
       Air-Cooling Equipment", ASHRAE (2020). https://www.ashrae.org/
    """
    temp_air = np.asarray(temp_air, dtype=float)
    return temp_air - effectiveness * (temp_air - np.asarray(temp_wetbulb, dtype=float))


def evaporation_water(
    heat_rejected: np.ndarray,
    latent_heat: float = LATENT_HEAT_WATER,
    cycles_of_concentration: float | None = None,
) -> np.ndarray:
    """Water consumed to reject heat by evaporation (cooling tower or evaporative pad).

    Parameters
    ----------
    heat_rejected
        Heat carried away as latent heat of the evaporated water. [W]
    latent_heat
        Enthalpy of vaporisation of water; 2.45 MJ/kg near 20 °C (2.454 MJ/kg at 20 °C,
        2.442 MJ/kg at 25 °C in the steam tables). [J/kg]
    cycles_of_concentration
        Ratio of dissolved solids in the circulating water to those in the make-up water; adds
        the blowdown that keeps it there. ``None`` counts evaporation only. [1]

    Returns
    -------
    numpy.ndarray
        Water consumed, ``Q / h_fg`` times ``C / (C − 1)`` with blowdown, 1 kg taken as 1 L
        (the project's one water unit). [L/s]

    Notes
    -----
    Blowdown is ``evaporation / (C − 1)``, so make-up is ``evaporation · C / (C − 1)`` (drift
    neglected). Counting all the heat as latent gives an upper bound for a tower, which rejects a
    part sensibly; for a direct evaporative pad the heat is the sensible cooling of the air.
    """
    evaporation = np.asarray(heat_rejected, dtype=float) / latent_heat
    if cycles_of_concentration is None:
        return evaporation
    return make_up_water(evaporation, cycles_of_concentration)


def make_up_water(
    evaporated: np.ndarray, cycles_of_concentration: float, treatment_yield: float = 1.0
) -> np.ndarray:
    """Water drawn to replace what evaporates from a recirculating sump, what is bled off, and
    what the water's treatment drains.

    Parameters
    ----------
    evaporated
        Water evaporated (cooling tower, evaporative media, misting). [L/s]
    cycles_of_concentration
        Ratio of dissolved solids in the circulating water to those in the make-up water. [1]
    treatment_yield
        Share of the water drawn that the treatment delivers (a reverse-osmosis unit's
        permeate over its feed); 1 for untreated water. [1]

    Returns
    -------
    numpy.ndarray
        ``E·C/((C − 1)·y)``: evaporation plus the blowdown (bleed-off) ``E/(C − 1)`` that holds the
        sump at ``C`` cycles (a salt balance; drift neglected), over the treatment's yield ``y``
        (its reject, the concentrate of reverse osmosis, goes to the drain). [L/s]
    """
    if not cycles_of_concentration > 1.0:
        raise ValueError(f"cycles_of_concentration must exceed 1, got {cycles_of_concentration:g}")
    if not 0.0 < treatment_yield <= 1.0:
        raise ValueError(f"treatment_yield must be in (0, 1], got {treatment_yield:g}")
    c = cycles_of_concentration
    return np.asarray(evaporated, dtype=float) * c / ((c - 1.0) * treatment_yield)


def moist_air_enthalpy(temp_air: np.ndarray, humidity_ratio: np.ndarray) -> np.ndarray:
    """Specific enthalpy of moist air per mass of dry air.

    Parameters
    ----------
    temp_air
        Dry-bulb temperature. [°C]
    humidity_ratio
        Water vapour per dry air. [kg/kg]

    Returns
    -------
    numpy.ndarray
        ``h = c_pa·t + W·(h_g0 + c_pv·t)``, zero for dry air at 0 °C. [J/kg]

    Notes
    -----
    ASHRAE Handbook—Fundamentals, Chapter 1, eq. 32, with c_pa = 1.006 kJ/(kg K),
    h_g0 = 2,501 kJ/kg and c_pv = 1.86 kJ/(kg K) (ideal-gas mixture).

    References
    ----------
    .. [ashrae_fundamentals] ASHRAE, "ASHRAE Handbook—Fundamentals", ASHRAE (2009), Chapter 1,
       "Psychrometrics". https://www.ashrae.org/
    """
    t = np.asarray(temp_air, dtype=float)
    w = np.asarray(humidity_ratio, dtype=float)
    return SPECIFIC_HEAT_AIR * t + w * (ENTHALPY_VAPOUR_0C + SPECIFIC_HEAT_VAPOUR * t)


def outside_air_fraction(
    temp_air: np.ndarray,
    humidity_ratio: np.ndarray,
    temp_supply: np.ndarray,
    humidity_supply: np.ndarray,
    temp_return: np.ndarray,
) -> np.ndarray:
    """Share of outside air in an economizer's mix with return air that makes the supply air.

    Parameters
    ----------
    temp_air, humidity_ratio
        Outside air. [°C], [kg/kg]
    temp_supply, humidity_supply
        Supply air after mixing and any adiabatic humidification; the return air holds the
        supply's humidity (servers add heat, not moisture). [°C], [kg/kg]
    temp_return
        Return air from the hot aisle. [°C]

    Returns
    -------
    numpy.ndarray
        ``f = (h_ret − h_sup)/(h_ret − h_out)`` clipped to [0, 1]; 1 where the outside air is no
        colder than the supply. [1]

    Notes
    -----
    Mixing and adiabatic humidification (misting: the water's own enthalpy neglected) conserve
    the enthalpy of the air, ``f·h_out + (1 − f)·h_ret = h_sup``. Water evaporated into the mix
    cools it, so a humidified supply needs a little less outside air than the dry-bulb balance
    ``(T_ret − T_sup)/(T_ret − T_out)`` gives.
    """
    h_out = moist_air_enthalpy(temp_air, humidity_ratio)
    h_sup = moist_air_enthalpy(temp_supply, humidity_supply)
    h_ret = moist_air_enthalpy(temp_return, humidity_supply)
    span = h_ret - h_out
    share = np.divide(h_ret - h_sup, span, out=np.ones_like(span), where=span > 0.0)
    return np.clip(share, 0.0, 1.0)


def fan_power(flow_fraction: np.ndarray, design_power: float, min_speed: float = 0.2) -> np.ndarray:
    """Fan power by the cube law (fan affinity laws), with a minimum speed.

    Parameters
    ----------
    flow_fraction
        Air flow asked for, as a fraction of design flow. [1]
    design_power
        Fan power at design flow. [W]
    min_speed
        Lowest speed, as a fraction of design, at which the fan runs. [1]

    Returns
    -------
    numpy.ndarray
        ``design_power · max(flow_fraction, min_speed)³``. [W]

    Notes
    -----
    At fixed system geometry flow scales with speed and power with its cube (ASHRAE Handbook—HVAC
    Systems and Equipment, "Fans"). Motor and drive losses make real part-load power somewhat
    higher. The default floor of 20 % of design speed is an assumption (drives are commonly set
    to 20–30 %); below it the fan delivers more air than asked.
    """
    speed = np.maximum(np.asarray(flow_fraction, dtype=float), min_speed)
    return design_power * speed**3


def server_fan_speed(
    temp_inlet: np.ndarray | float, temp_nominal: float, slope: float, speed_max: float
) -> np.ndarray:
    """Speed of a server's fans, relative to nominal, at an inlet temperature.

    Parameters
    ----------
    temp_inlet
        Air inlet (or coolant supply) temperature at the server. [°C]
    temp_nominal
        Inlet temperature up to which the fans run at nominal speed. [°C]
    slope
        Speed increase per kelvin of inlet above ``temp_nominal``. [1/K]
    speed_max
        Top speed. [1]

    Returns
    -------
    numpy.ndarray
        ``s = clip(1 + slope·(T_inlet − T_nominal), 1, speed_max)``. [1]
    """
    return np.clip(1.0 + slope * (np.asarray(temp_inlet) - temp_nominal), 1.0, speed_max)


def server_fan_extra(speed: np.ndarray | float, nominal_power: float) -> np.ndarray:
    """Power of a server's fans above their nominal power, by the cube law.

    Parameters
    ----------
    speed
        Fan speed relative to nominal; server fans do not run below it. [1]
    nominal_power
        Fan power at nominal speed (part of the node's rest power). [W]

    Returns
    -------
    numpy.ndarray
        ``P_nominal · (s³ − 1)``: :func:`fan_power` at ``s`` less the nominal power. [W]
    """
    return fan_power(speed, nominal_power, min_speed=1.0) - nominal_power
