"""The thermal and plant path: weather, cooling plant, GPU temperatures and clocks, facility power.

It runs on the plant's own, coarser step (principle 4 of docs/model/index.md, two clocks) and
hands ``simulate`` arrays on that step; ``simulate`` holds them over the electrical step and
builds the Dataset.
"""

from __future__ import annotations

import zoneinfo
from dataclasses import dataclass, fields
from datetime import datetime
from functools import lru_cache

import numpy as np
import pandas as pd

from powermodel.errors import PowerModelError, ScenarioError
from powermodel.iotools.chillers import AIR_COOLED, WATER_COOLED, chiller, read_chiller_curves
from powermodel.iotools.weather import read_weather
from powermodel.models import cooling, electrical, grid, mitigation, plants, thermal, weather
from powermodel.models.cooling import ChillerCurves
from powermodel.scenario import Scenario
from powermodel.scenario.job import Synthetic

HOURS_PER_YEAR = 8760


@dataclass(frozen=True)
class HourlyWeather:
    """A typical year, hourly, hour-ending local standard time (``to_grid``'s ``first_hour=1``).

    The wet-bulb temperature is solved only at the hours a run reads (:meth:`wet_bulb_at`):
    psychrolib's iterations take 70 ms over a year, a week's run reads 170 of its hours, and
    a sweep loads each site once in every process it runs in."""

    temp_air: np.ndarray
    relative_humidity: np.ndarray  # %
    temp_dew: np.ndarray
    pressure: np.ndarray
    utc_offset: float
    source: str

    def __post_init__(self) -> None:
        # the whole year checked now (what solving it would raise), so that a run that
        # passes its preflight does not fail at an hour it reads later
        weather.check_wet_bulb_inputs(self.temp_air, self.relative_humidity, self.pressure)
        # NaN where not solved yet: an hour read unsolved would show as NaN, not as a value.
        # Two threads (the dashboard's) may solve an hour both: they write the same value
        object.__setattr__(self, "_wet_bulb", np.full(self.temp_air.size, np.nan))

    def wet_bulb_at(self, hours: np.ndarray) -> np.ndarray:
        """The wet-bulb temperature at ``hours`` of the year (:func:`weather.to_grid`, as the
        other variables): each hour's value solved the first time an hour beside it is read,
        the same values, to the bit, as over the whole year at once. [°C]"""
        known = self._wet_bulb  # type: ignore[attr-defined]
        # the hourly values each reading lies between, with one either side to spare:
        # to_grid's value i is at hour 1 + i, wrapping over the year (np.interp's own
        # remainder; a reading that is not finite reads none)
        with np.errstate(invalid="ignore"):  # inf: to_grid's own remainder warns of it
            within = np.mod(np.asarray(hours, dtype=float).ravel(), known.size)
        below = within[np.isfinite(within)].astype(np.int64) - 1
        near = np.zeros(known.size, bool)
        for offset in range(-1, 3):
            near[np.mod(below + offset, known.size)] = True
        unsolved = np.flatnonzero(near & np.isnan(known))
        if unsolved.size:
            known[unsolved] = weather.wet_bulb(
                self.temp_air[unsolved], self.relative_humidity[unsolved], self.pressure[unsolved]
            )
        return weather.to_grid(known, hours)


def hourly_weather(scenario: Scenario) -> HourlyWeather:
    """The site's weather: a shipped name, an EPW or TMY3 path, or the synthetic model."""
    site = scenario.site
    if site.weather == "synthetic":
        return _synthetic(site.synthetic.model_dump_json(), _standard_offset(site.timezone))
    return _from_file(site.weather)


@lru_cache(maxsize=8)
def _weather_file(name_or_path: str) -> tuple[pd.DataFrame, dict]:
    """A weather file, read and parsed once per process (the hourly series and the design day
    both need it; neither changes what it returns)."""
    return read_weather(name_or_path)


@lru_cache(maxsize=8)
def _from_file(name_or_path: str) -> HourlyWeather:
    data, meta = _weather_file(name_or_path)
    return HourlyWeather(
        *(data[k].to_numpy() for k in ("temp_air", "relative_humidity", "temp_dew", "pressure")),
        meta["utc_offset"],
        str(meta["file"]),
    )


@lru_cache(maxsize=8)
def _synthetic(parameters: str, utc_offset: float) -> HourlyWeather:
    p = Synthetic.model_validate_json(parameters)
    hours = np.arange(1.0, HOURS_PER_YEAR + 1.0)
    temp = weather.synthetic_temperature(
        hours, p.mean, p.seasonal_amplitude, p.hottest_day, p.daily_amplitude, p.peak_hour
    )
    dew = weather.synthetic_dew_point(
        hours, temp, p.mean, p.seasonal_amplitude, p.hottest_day, p.dew_point_depression
    )
    rh = weather.relative_humidity_from_dew_point(temp, dew)
    pressure = np.full(HOURS_PER_YEAR, p.pressure)
    return HourlyWeather(temp, rh, dew, pressure, utc_offset, "synthetic")


def _standard_offset(timezone: str) -> float:
    """Local standard time minus UTC [h] (no daylight saving: weather files use standard time)."""
    zone = zoneinfo.ZoneInfo(timezone)
    january = datetime(2001, 1, 15, tzinfo=zone)
    return (january.utcoffset() - january.dst()).total_seconds() / 3600.0


@dataclass(frozen=True)
class PlantPath:
    """The plant-step state of the facility, each array on the plant grid."""

    temp_air: np.ndarray
    temp_wetbulb: np.ndarray
    supply_temp: np.ndarray
    gpu_temp: np.ndarray
    clock_factor: np.ndarray
    clock_setpoint: (
        float  # clock with the supply at its setpoint: what the weather is measured from
    )
    step_factor: np.ndarray
    cooling_power: np.ndarray  # W: air movers at the servers' airflow, pumps, chillers
    water_use: np.ndarray  # L/s (1 kg taken as 1 L, as everywhere)
    chiller_load: np.ndarray  # W
    fan_extra: np.ndarray  # W per node, server fans above nominal speed (DC)
    leak_extra: np.ndarray  # W per GPU, off-cap phases' extra leakage when hot (DC)


@dataclass(frozen=True)
class SitePlant:
    """The site's weather and plant on the plant grid: what every workload's servers share."""

    outdoor: plants.Outdoor
    out: plants.PlantOutput


def plant_path(
    scenario: Scenario,
    times: np.ndarray,
    heat: np.ndarray,
    gpu_mean: np.ndarray,
    dt: float,
    design_heat: float,
    lags: plants.Lags | None = None,
) -> PlantPath:
    """Weather → plant → inlet → die temperature → clocks, on the plant grid.

    Parameters
    ----------
    times
        Plant-step midpoints, timezone-naive UTC.
    heat
        IT power, plant-step means. [W]
    gpu_mean
        Board power per GPU, plant-step means. [W]
    dt
        Plant step. [s]
    design_heat
        Peak IT power the plant is sized for. [W]
    lags
        The plant's and the dies' lags carried from the plant steps before ``times``
        (:class:`plants.Lags`: a streamed run's path advances with its chunks); by default
        none before.
    """
    lags = lags or plants.Lags()
    site = site_plant(scenario, times, heat, dt, design_heat, lags)
    return job_path(scenario, site, gpu_mean, dt, lags)


def site_plant(
    scenario: Scenario,
    times: np.ndarray,
    heat: np.ndarray,
    dt: float,
    design_heat: float,
    lags: plants.Lags | None = None,
) -> SitePlant:
    """The weather and the plant on the plant grid (:func:`plant_path`'s parameters)."""
    wx = hourly_weather(scenario)
    hours = weather.local_hour_of_year(times, wx.utc_offset)
    outdoor = plants.Outdoor(
        weather.to_grid(wx.temp_air, hours),
        wx.wet_bulb_at(hours),
        weather.to_grid(wx.temp_dew, hours),
        weather.to_grid(wx.pressure, hours),
    )
    return SitePlant(outdoor, run_plant(scenario, heat, outdoor, dt, design_heat, lags))


def job_path(
    scenario: Scenario,
    site: SitePlant,
    gpu_mean: np.ndarray,
    dt: float,
    lags: plants.Lags | None = None,
) -> PlantPath:
    """A job's servers on the site's plant: inlet → die temperature → clocks, leakage and
    server fans (``gpu_mean``, ``dt``, ``lags`` as :func:`plant_path` takes them)."""
    outdoor, out = site.outdoor, site.out
    gpu, cl = scenario.gpu, scenario.cluster
    inlet = out.supply_temp + scenario.cooling.inlet_offset
    # One die state: inlet + R·(mean board power), through the die and heat sink's thermal mass.
    steady = thermal.steady_gpu_temperature(inlet, gpu_mean, gpu.thermal_resistance)
    die = (lags or plants.Lags())("die", steady, dt, gpu.thermal_tau)
    # The workload's step time and phase powers hold at the nominal inlet (fans at nominal speed)
    # and uncapped: clocks and leakage are relative to that die temperature.
    nominal_die = scenario.nominal_die()
    cap = scenario.mitigation.power_cap or gpu.tdp
    nominal = _slowest_clock(scenario, nominal_die, gpu.tdp)
    at_cap = _slowest_clock(scenario, die, cap) / nominal
    # a locked clock holds below what the cap allows: compute phases then run off the cap too,
    # and draw more when hot instead of slowing
    lock = scenario.mitigation.clock_lock or 1.0
    clock = np.minimum(at_cap, scenario.mitigation.clock_lock or np.inf)
    share = scenario.compute_share
    off_cap = np.where(at_cap > lock, 1.0, 1.0 - share)
    leak = [gpu.leakage(t) for t in (die, nominal_die)]
    speed = server_fan_speed(scenario, inlet)
    return PlantPath(
        temp_air=outdoor.temp_air,
        temp_wetbulb=outdoor.temp_wetbulb,
        supply_temp=out.supply_temp,
        gpu_temp=die,
        clock_factor=clock,
        clock_setpoint=float(
            min(_slowest_clock(scenario, _setpoint_die(scenario), cap) / nominal, lock)
        ),
        # relative to the scenario's step, which already holds the lock's stretch
        step_factor=thermal.step_stretch(clock, lock, share),
        cooling_power=plant_power(scenario, out, speed),
        water_use=out.water_use,
        chiller_load=out.chiller_load,
        fan_extra=cooling.server_fan_extra(speed, cl.fans.power),
        leak_extra=off_cap * (leak[0] - leak[1]),
    )


def campus_cooling(scenario: Scenario, site: SitePlant, parts: list[Scenario]) -> np.ndarray:
    """A campus hall's plant power [W] (:func:`plant_power`): its air movers at the airflow
    the servers of its workloads (``parts``) pull together, each weighed by its design IT
    power."""
    inlet = site.out.supply_temp + scenario.cooling.inlet_offset
    weights = np.array([design_it_power(part) for part in parts])
    speeds = [server_fan_speed(part, inlet) for part in parts]
    speed = sum(w * v for w, v in zip(weights / weights.sum(), speeds, strict=True))
    return plant_power(scenario, site.out, speed)


def _setpoint_die(scenario: Scenario) -> float:
    """Mean die temperature while training with the plant at its supply setpoint. [°C]"""
    shares, watts = scenario.phase_powers()
    inlet = scenario.cooling.supply_setpoint + scenario.cooling.inlet_offset
    return float(
        thermal.steady_gpu_temperature(inlet, shares @ watts, scenario.gpu.thermal_resistance)
    )


def server_fan_speed(scenario: Scenario, inlet: np.ndarray | float) -> np.ndarray:
    """Server fan speed relative to nominal at an inlet temperature [°C]: the cluster's fans."""
    fans = scenario.cluster.fans
    return cooling.server_fan_speed(inlet, fans.temp_nominal, fans.slope, fans.speed_max)


def plant_power(scenario: Scenario, out: plants.PlantOutput, speed: np.ndarray) -> np.ndarray:
    """Plant power [W]: pumps and chillers, and the air movers at the airflow the servers pull."""
    airflow = _airflow(scenario, speed)  # the cube law from their power at nominal airflow
    return out.cooling_power + cooling.fan_power(airflow, out.fan_power, min_speed=0.0)


def _airflow(scenario: Scenario, server_fan_speed: np.ndarray) -> np.ndarray | float:
    """Airflow the hall's air movers deliver, relative to nominal: in an air-cooled hall, the air
    the servers pull, which grows with their fan speed; a liquid plant's fans do not see it."""
    return server_fan_speed if scenario.cooling.type != "liquid" else 1.0


def _slowest_clock(scenario: Scenario, die: np.ndarray | float, cap: float) -> np.ndarray:
    """Clock of the slowest GPU: the hottest, σ·E[max of N] above the mean die, at its cap."""
    gpu, cl = scenario.gpu, scenario.cluster
    hottest = die + thermal.slowest_of(cl.temp_spread, cl.n_gpus)
    try:
        return thermal.clock_factor(
            hottest, cap, gpu.leakage_ref, gpu.temp_ref, gpu.leakage_coefficient, power_ref=gpu.tdp
        )
    except ValueError:
        raise ScenarioError(
            f"at {np.max(hottest):.0f} °C die temperature the {gpu.name}'s leakage reaches its "
            f"{cap:g} W cap: lower gpu.leakage_coefficient or gpu.leakage_ref, or cool the inlet"
        ) from None


# Each plant type's model and design record; every plant takes (heat, outdoor, design).
PLANTS = {
    "outside-air-evaporative": (plants.outside_air_evaporative, plants.OutsideAirDesign),
    "liquid": (plants.liquid, plants.LiquidDesign),
    "chilled-water": (plants.chilled_water, plants.ChilledWaterDesign),
}


def run_plant(
    scenario: Scenario,
    heat: np.ndarray,
    outdoor: plants.Outdoor,
    dt: float,
    design_heat: float,
    lags: plants.Lags | None = None,
) -> plants.PlantOutput:
    """The scenario's cooling plant on the plant grid (``lags`` as :func:`plant_path` takes
    them)."""
    model, record = PLANTS[scenario.cooling.type]
    return model(heat, outdoor, plant_design(scenario, record, dt, design_heat), lags)


def plant_design(
    scenario: Scenario, record: type[plants.PlantDesign], dt: float, design_heat: float
) -> plants.PlantDesign:
    """The plant's design record from the scenario's ``cooling`` table, whose keys it shares:
    sized for ``design_heat`` times the design margin, on the plant step ``dt``, its chiller
    read from the EnergyPlus tables. (The schema holds each plant's defaults; the record
    has none.)"""
    c = scenario.cooling
    sized = {"design_heat": design_heat * c.design_margin, "dt": dt}
    settings = {f.name: getattr(c, f.name) for f in fields(record) if f.name not in sized}
    settings |= sized
    if "chiller" in settings:
        settings["chiller"] = find_chiller(c.chiller)
    return record(**settings)


@lru_cache(maxsize=16)
def find_chiller(name: str) -> ChillerCurves:
    """A chiller by name from the water-cooled or the air-cooled EnergyPlus table."""
    found = chiller(
        name, AIR_COOLED if name in read_chiller_curves(AIR_COOLED)[0].index else WATER_COOLED
    )
    if not np.isfinite(found.reference_capacity):
        raise ScenarioError(
            f"cooling.chiller {name!r} is a generic curve set without a capacity (Autosize): "
            "choose a chiller with a rated capacity from data/chillers/"
        )
    return found


def idle_gpus(scenario: Scenario) -> int:
    """GPUs on and idle outside the job: the hall's idle GPUs (``cluster.idle_gpus``) and the
    hot spares' (``reliability.spare_nodes``). [1]"""
    cl = scenario.cluster
    return cl.idle_gpus + scenario.reliability.spare_nodes * cl.gpus_per_node


def idle_nodes(scenario: Scenario) -> float:
    """Nodes on and idle outside the job (:func:`idle_gpus`; a part node's pro rata). [1]"""
    return idle_gpus(scenario) / scenario.cluster.gpus_per_node


def design_it_power(scenario: Scenario) -> float:
    """Nameplate IT power the plant and the electrical chain are sized for: every GPU in the
    hall at TDP (the job's, the idle ones outside it and the hot spares', a part node's pro
    rata), the rest of each node active with fans at top speed, the job's network and storage;
    a campus's, the sum of its workloads'. [W]"""
    if scenario.campus is not None:
        return float(sum(design_it_power(part) for part in scenario.parts))
    cl, gpu = scenario.cluster, scenario.gpu
    node_dc = (
        cl.gpus_per_node * gpu.tdp
        + cl.rest_power_active
        + cooling.server_fan_extra(cl.fans.speed_max, cl.fans.power)
    )
    node_ac = cl.psu.input_power(node_dc)
    nodes = cl.n_nodes + idle_nodes(scenario)
    return float(nodes * node_ac + cl.network_load + cl.storage_load)


def facility_loss(
    it_power: np.ndarray, scenario: Scenario, capacity: float, other: np.ndarray | float = 0.0
) -> np.ndarray:
    """Electrical losses between the grid connection and the loads. [unit of ``it_power``]

    The IT load passes through the UPS (efficiency curve over ``capacity``) and the transformers
    and distribution; the ``other`` loads (cooling, misc) through the transformers only.
    """
    e = scenario.electrical
    through_ups = electrical.input_power(
        it_power, capacity, np.array(e.ups_load), np.array(e.ups_efficiency)
    )
    return (through_ups + other) / e.transformer_efficiency - it_power - other


def design_day(
    scenario: Scenario, level: float = 0.4, nameplate: float | None = None
) -> dict[str, float]:
    """Peak facility power on the ASHRAE cooling design day, at nameplate IT load
    (``nameplate`` [W], by default the scenario's; a campus with halls: each hall's plant and
    chain at its workloads', the peaks added, as the same day drives them all).

    The site's EPW header gives the design dry-bulb, its coincident wet-bulb and the daily range
    (``level`` = 0.4, 1 or 2 % of hours exceeded); the plant runs three such days at its own step
    (the first two settle its lags) with every GPU at TDP.

    Returns
    -------
    dict
        ``design_temp_air`` [°C], ``peak_facility_mw``, ``peak_cooling_mw``, ``peak_pue`` and
        ``max_supply_temp`` [°C].
    """
    design = design_conditions(scenario)
    if design is None:
        raise PowerModelError(
            f"weather {scenario.site.weather!r} quotes no ASHRAE cooling design conditions (an EPW "
            "header has them; synthetic weather and TMY3 files do not): no design day; set "
            "grid.registered_demand for the rules that refer to it"
        )
    if scenario.campus is not None and scenario.halls and nameplate is None:
        parts = scenario.parts
        days = [
            design_day(hall, level, sum(design_it_power(parts[j]) for j in members))
            for hall, members in scenario.hall_members()
        ]
        it = design_it_power(scenario) / 1e6
        peak = sum(d["peak_facility_mw"] for d in days)
        return {
            "design_temp_air": days[0]["design_temp_air"],
            "peak_facility_mw": peak,
            "peak_cooling_mw": sum(d["peak_cooling_mw"] for d in days),
            "peak_pue": peak / it,
            "max_supply_temp": max(d["max_supply_temp"] for d in days),
        }
    _, meta = _weather_file(scenario.site.weather)
    pressure = np.full(24, weather.standard_pressure(meta["elevation"]))
    _, temp_air, temp_wetbulb = weather.design_day(design, float(pressure[0]), level)
    dt = scenario.cooling.dt
    hours = np.arange(0.0, 72.0, dt / 3600.0)
    it = design_it_power(scenario) if nameplate is None else nameplate
    dew = weather.dew_point_from_wet_bulb(temp_air, temp_wetbulb, pressure)
    day = (temp_air, temp_wetbulb, dew, pressure)
    out = run_plant(
        scenario,
        np.full(hours.size, it),
        plants.Outdoor(*(weather.to_grid(values, hours) for values in day)),
        dt,
        it,
    )
    last = hours >= 48.0
    speed = server_fan_speed(scenario, out.supply_temp + scenario.cooling.inlet_offset)
    cooling = plant_power(scenario, out, speed)[last] + scenario.cooling.misc_fraction * it
    loss = facility_loss(np.array(it), scenario, scenario.electrical.design_margin * it, cooling)
    facility = it + loss + cooling
    return {
        "design_temp_air": float(temp_air.max()),
        "peak_facility_mw": float(facility.max() / 1e6),
        "peak_cooling_mw": float(cooling.max() / 1e6),
        "peak_pue": float(facility.max() / it),
        "max_supply_temp": float(out.supply_temp[last].max()),
    }


def design_conditions(scenario: Scenario) -> dict | None:
    """The ASHRAE design conditions of the site's weather file (an EPW header); None for
    synthetic weather, TMY3 files and EPW files without them."""
    if scenario.site.weather == "synthetic":
        return None
    _, meta = _weather_file(scenario.site.weather)
    design = meta.get("design_conditions")
    return design if design and "cooling" in design else None


def registered_demand(scenario: Scenario) -> float:
    """Demand registered with the utility [MW]: ``grid.registered_demand``, or else the design-day
    facility peak; NaN where the weather has no design day (synthetic, TMY3): the rules that
    refer to it then ask for ``grid.registered_demand``."""
    if scenario.grid.registered_demand is not None:
        return scenario.grid.registered_demand
    if design_conditions(scenario) is None:
        return float("nan")
    return design_day(scenario)["peak_facility_mw"]


def storage(
    scenario: Scenario, location: str, load: np.ndarray, dt: float, scale: float = 1.0
) -> tuple[np.ndarray, list[mitigation.StorageResult]]:
    """The scenario's batteries at ``location`` in front of ``load`` [MW]: what is left of the
    load upstream of them [MW], and each battery's dispatch. ``scale``: the share of each
    battery's power and energy that is in front of this load (a campus workload's racks hold
    their share of the site's rack batteries)."""
    results = []
    for unit in scenario.mitigation.storage:
        if unit.location != location:
            continue
        result = mitigation.storage_dispatch(
            load,
            dt,
            power=unit.power * scale,
            energy=unit.energy * scale,
            efficiency=unit.efficiency,
            delay=unit.delay,
            soc_min=unit.soc_min,
            soc_max=unit.soc_max,
            soc_initial=unit.soc_initial,
            tau=unit.tau,
            ramp=unit.ramp,
        )
        load = load - result.power
        results.append(result)
    return load, results


def reactive_power(
    scenario: Scenario,
    it_power: np.ndarray,
    loss: np.ndarray,
    other: np.ndarray,
    parts: list[tuple[Scenario, np.ndarray]] | None = None,
) -> np.ndarray:
    """Reactive power at the connection [Mvar] from the IT path and the other loads [MW].

    Server supplies are leading at light load; a double-conversion UPS rectifier
    (``electrical.input_power_factor``) replaces them by its own, lagging, power factor. Cooling
    and misc loads (motors, drives) lag at ``grid.other_power_factor``. A campus's supplies are
    its workloads', each at its own IT power (``parts``: each workload's scenario and IT
    power [MW]).
    """
    q_it, q_other = reactive_parts(scenario, it_power, loss, other, parts)
    return q_it + q_other


def reactive_parts(
    scenario: Scenario,
    it_power: np.ndarray,
    loss: np.ndarray,
    other: np.ndarray,
    parts: list[tuple[Scenario, np.ndarray]] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`reactive_power` of the IT path and of the other loads apart [Mvar]."""
    e = scenario.electrical
    if e.input_power_factor is None:
        jobs = [(scenario, it_power)] if parts is None else parts
        q_it = sum(_supplies_reactive(job, it) for job, it in jobs)
    else:
        pf = e.input_power_factor
        q_it = (it_power + loss) * np.sqrt(1.0 - pf * pf) / pf
    pf = scenario.grid.other_power_factor
    return q_it, other * np.sqrt(1.0 - pf * pf) / pf


def _supplies_reactive(scenario: Scenario, it_power: np.ndarray) -> np.ndarray:
    """Reactive power of a job's server supplies at its IT power [MW]: leading. [Mvar]"""
    cl = scenario.cluster
    psu = cl.psu
    nodes = cl.n_nodes + idle_nodes(scenario)  # every node on: the job's and those outside it
    return grid.reactive_power(
        it_power, nodes * psu.capacity / 1e6, psu.load, psu.power_factor, sign=-1.0
    )
