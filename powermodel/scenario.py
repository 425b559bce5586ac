"""Scenarios: a validated schema, TOML files, presets loaded by name, and dotted overrides.

A scenario is built in layers, each overriding the one before:

1. the preset named by ``extends`` (recursively), if any;
2. the file (or the named preset) itself;
3. dotted overrides (``cluster.n_gpus=100000``) from the API or ``--set`` on the CLI;
4. the ``[gpu]`` table is filled from the GPU catalogue entry named by ``cluster.gpu``; keys given
   explicitly under ``[gpu]`` win over the catalogue.

Durations are written as strings with a unit (``"54d"``, ``"1s"``, ``"100ms"``, ``"10min"``) and
held as seconds.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
import tomllib
import zoneinfo
from collections.abc import Iterable, Mapping
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

import numpy as np
import tomli_w
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    field_validator,
    model_validator,
)

from powermodel.errors import ScenarioError
from powermodel.models import weather as wx
from powermodel.models.thermal import DYNAMIC_EXPONENT
from powermodel.models.workload import phase_levels

PRESET_PACKAGE = "powermodel.presets"

_UNITS = {
    "ms": 1e-3,
    "s": 1.0,
    "sec": 1.0,
    "min": 60.0,
    "h": 3600.0,
    "hr": 3600.0,
    "d": 86400.0,
    "day": 86400.0,
    "days": 86400.0,
    "w": 7 * 86400.0,
}
_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")


def parse_duration(value: Any) -> float:
    """Seconds from ``"54d"``, ``"1s"``, ``"100ms"``, ``"10min"``, ``"2h"`` or a number."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as '10min', got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str):
        raise ValueError(f"expected a duration such as '10min', got {value!r}")
    match = _DURATION.match(value)
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _UNITS:
        raise ValueError(
            f"cannot read {value!r} as a duration: write a number and a unit, one of "
            "ms, s, min, h, d, w (e.g. '100ms', '1s', '10min', '54d')"
        )
    return float(match.group(1)) * _UNITS[unit]


def format_duration(seconds: float) -> str:
    """The shortest exact string for a duration, as written in scenario files."""
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0), ("s", 1.0), ("ms", 1e-3)):
        count = seconds / size
        if count >= 1 and abs(count - round(count)) < 1e-9:
            return f"{round(count)}{unit}"
    return f"{seconds:g}s"


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
]


class Section(BaseModel):
    """Base of every scenario table: unknown keys are errors, values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class Simulation(Section):
    start: datetime = Field(
        datetime(2024, 7, 1), description="Start of the run, UTC, without a timezone offset."
    )
    duration: Duration = Field(description="Length of the run. [s]")
    dt: Duration = Field(description="Time step of the electrical path (interval means). [s]")
    seed: int = Field(0, ge=0, description="Seed of every random draw.")

    @field_validator("start")
    @classmethod
    def _naive_utc(cls, value: datetime) -> datetime:
        if value.tzinfo is not None:
            raise ValueError(
                f"start {value.isoformat()} carries a timezone offset: give it in UTC without "
                "an offset (e.g. 2024-07-01T00:00:00); the site timezone is site.timezone"
            )
        return value

    @model_validator(mode="after")
    def _grid(self) -> Simulation:
        if self.duration <= 0 or self.dt <= 0:
            raise ValueError("duration and dt must be positive")
        if self.dt < 1e-3:
            raise ValueError(f"dt {format_duration(self.dt)} is below 1 ms, the model's floor")
        if self.dt > self.duration:
            raise ValueError(
                f"dt ({format_duration(self.dt)}) is longer than the duration "
                f"({format_duration(self.duration)}): shorten dt or lengthen the run"
            )
        steps = self.duration / self.dt
        if abs(steps - round(steps)) > 1e-6 * steps:
            raise ValueError(
                f"duration {format_duration(self.duration)} is not a whole number of dt "
                f"({format_duration(self.dt)}) steps: choose a dt that divides it"
            )
        return self

    @property
    def n_steps(self) -> int:
        return round(self.duration / self.dt)


class Synthetic(Section):
    """Synthetic weather: seasonal and diurnal cosines (defaults fitted to Sterling's TMY3)."""

    mean: float = Field(wx.STERLING_MEAN, description="Annual mean dry-bulb. [°C]")
    seasonal_amplitude: float = Field(
        wx.STERLING_SEASONAL_AMPLITUDE, ge=0, description="Half the summer-winter swing. [K]"
    )
    hottest_day: float = Field(
        wx.STERLING_HOTTEST_DAY, ge=1, le=366, description="Day of year of the warmest mean."
    )
    daily_amplitude: float = Field(
        wx.STERLING_DAILY_AMPLITUDE, ge=0, description="Half the daily range. [K]"
    )
    peak_hour: float = Field(
        wx.PEAK_HOUR, ge=0, lt=24, description="Local hour of the daily maximum. [h]"
    )
    dew_point_depression: float = Field(
        wx.STERLING_DEW_POINT_DEPRESSION,
        ge=0,
        description="Daily-mean dry-bulb minus dew point (moisture varies slowly). [K]",
    )
    pressure: float = Field(101325.0, gt=0, description="Station pressure. [Pa]")


class Site(Section):
    name: str = Field("", description="Where the site is.")
    timezone: str = Field("UTC", description="IANA timezone of the site (local hour).")
    weather: str = Field(
        "synthetic",
        description="A shipped weather name, a path to an EPW or TMY3 file, or synthetic.",
    )
    synthetic: Synthetic = Synthetic()

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        try:
            zoneinfo.ZoneInfo(value)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            raise ValueError(
                f"unknown timezone {value!r}: use an IANA name such as 'America/New_York'"
            ) from None
        return value


Lever = Literal["power_cap", "clock_lock", "power_smoothing", "burn_on_stop", "energy_storage"]


class Gpu(Section):
    """One GPU model, from the catalogue (``presets/gpus.toml``)."""

    name: str = Field(description="Catalogue name.")
    tdp: float = Field(gt=0, description="Board power limit (TDP). [W]")
    idle: float = Field(gt=0, description="Board power with no work. [W]")
    stalled: float = Field(
        gt=0, description="Board power spinning in a blocked collective or barrier. [W]"
    )
    peak_flops: float = Field(gt=0, description="Dense BF16 peak. [FLOP/s]")
    power_cap_min: float = Field(gt=0, description="Lowest settable power cap. [W]")
    levers: list[Lever] = Field(description="Power levers the hardware has.")
    cooling: Literal["air", "liquid"] = Field(description="How the GPU sheds its heat.")
    thermal_resistance: float = Field(
        gt=0, description="Die to air inlet (air) or to coolant supply (liquid). [K/W]"
    )
    thermal_tau: Duration = Field(
        60.0, ge=0, description="Time constant of die and heat sink (or cold plate). [s]"
    )
    leakage_ref: float = Field(ge=0, description="Leakage power at temp_ref. [W]")
    temp_ref: float = Field(description="Die temperature of the reference clock. [°C]")
    leakage_coefficient: float = Field(
        ge=0, description="Relative growth of leakage per kelvin (calibrated). [1/K]"
    )
    source: str = Field("", description="Where the numbers come from.")

    @model_validator(mode="after")
    def _ordered(self) -> Gpu:
        if not self.idle <= self.stalled <= self.tdp:
            raise ValueError(
                f"GPU power levels must satisfy idle <= stalled <= tdp, got idle {self.idle} W, "
                f"stalled {self.stalled} W, tdp {self.tdp} W"
            )
        return self


class Psu(Section):
    """Server power supplies: efficiency versus load, per node."""

    capacity: float = Field(gt=0, description="Installed PSU capacity per node, load-sharing. [W]")
    load: list[float] = Field(description="Load points, fraction of capacity. [1]")
    efficiency: list[float] = Field(description="Efficiency at each load point. [1]")
    power_factor: list[float] = Field(
        description="Input power factor at each load point, leading (capacitive). [1]"
    )
    source: str = ""

    @model_validator(mode="after")
    def _curve(self) -> Psu:
        _check_curve("psu.load", self.load, "psu.efficiency", self.efficiency)
        _check_curve("psu.load", self.load, "psu.power_factor", self.power_factor)
        return self


def _check_curve(load_key: str, load: list[float], eff_key: str, efficiency: list[float]) -> None:
    """An efficiency curve: matching lengths, at least 3 increasing positive loads, η in (0, 1]."""
    if len(load) != len(efficiency) or len(load) < 3:
        raise ValueError(f"{load_key} and {eff_key} need the same length, at least 3 points")
    if not all(0 < e <= 1 for e in efficiency) or not all(0 < x for x in load):
        raise ValueError(f"{eff_key} must lie in (0, 1] and {load_key} be positive")
    if any(b <= a for a, b in zip(load, load[1:], strict=False)):
        raise ValueError(f"{load_key} must increase, got {load}")


class Fans(Section):
    """Server fans: part of the rest-of-node power, faster when the inlet is warm (cube law)."""

    power: float = Field(
        ge=0, description="Fan power at nominal speed, in rest_power_active. [W/node]"
    )
    temp_nominal: float = Field(description="Inlet temperature up to which fans run nominal. [°C]")
    slope: float = Field(ge=0, description="Speed increase per kelvin above it. [1/K]")
    speed_max: float = Field(ge=1, description="Top speed, relative to nominal. [1]")


class Cluster(Section):
    gpu: str = Field(description="GPU model, a name in the GPU catalogue.")
    n_gpus: int = Field(gt=0, description="Number of GPUs in the job.")
    gpus_per_node: int = Field(8, gt=0, description="GPUs per server.")
    rest_power_active: float = Field(
        ge=0, description="Rest of the node (CPUs, memory, NICs, fans) with the job up. [W/node]"
    )
    rest_power_idle: float = Field(ge=0, description="Rest of the node with no job. [W/node]")
    network_power: float = Field(ge=0, description="Network fabric and optics. [W/GPU]")
    storage_power: float = Field(ge=0, description="Storage cluster serving the job. [MW]")
    psu: Psu
    fans: Fans
    temp_spread: float = Field(
        ge=0, description="Std. dev. of die temperature across GPUs (hot spots, position). [K]"
    )

    @model_validator(mode="after")
    def _whole_nodes(self) -> Cluster:
        if self.n_gpus % self.gpus_per_node:
            raise ValueError(
                f"n_gpus ({self.n_gpus}) must fill whole nodes of {self.gpus_per_node} GPUs: "
                "a training job takes whole servers (change n_gpus or gpus_per_node)"
            )
        return self

    @property
    def n_nodes(self) -> int:
        return self.n_gpus // self.gpus_per_node


class Phase(Section):
    name: str
    kind: Literal["compute", "communication", "other"]
    share: float = Field(gt=0, le=1, description="Share of the step time. [1]")
    power: float | None = Field(
        None, gt=0, description="Power of an 'other' phase, fraction of TDP. [1]"
    )


class Workload(Section):
    step_time: Duration | None = Field(
        None, description="Time of one training step; derived from the model when absent. [s]"
    )
    model_params: float = Field(gt=0, description="Model parameters. [1]")
    tokens_per_step: float = Field(gt=0, description="Global batch. [token]")
    mfu: float = Field(gt=0, le=1, description="Model FLOPs utilisation. [1]")
    compute_power: float = Field(
        gt=0, le=1.2, description="GPU power in compute phases, fraction of TDP. [1]"
    )
    trough_depth: float = Field(
        ge=0, lt=1, description="Communication-phase power below compute power, fraction. [1]"
    )
    phases: list[Phase] = Field(min_length=1)
    edge_rate: float = Field(gt=0, description="Rate of power edges, TDP per second. [1/s]")
    offset_spread: Duration = Field(
        0.0, ge=0, description="Spread of group start offsets (pipeline schedule), uniform. [s]"
    )
    jitter: Duration = Field(0.0, ge=0, description="Random offset of groups, std. dev. [s]")
    startup_ramp: Duration = Field(
        ge=0, description="Ramp from loaded to running power at every (re)start. [s]"
    )
    notes: str = ""

    @model_validator(mode="after")
    def _phases(self) -> Workload:
        total = sum(p.share for p in self.phases)
        if abs(total - 1.0) > 1e-6:
            shares = ", ".join(f"{p.name}={p.share:g}" for p in self.phases)
            raise ValueError(f"phase shares must sum to 1, got {total:g} ({shares})")
        for p in self.phases:
            if p.kind == "other" and p.power is None:
                raise ValueError(f"phase {p.name!r} is of kind 'other' and needs a power")
            if p.kind != "other" and p.power is not None:
                raise ValueError(
                    f"phase {p.name!r} is a {p.kind} phase: its power comes from "
                    "workload.compute_power and workload.trough_depth; remove its power key"
                )
        if not any(p.kind == "compute" for p in self.phases):
            raise ValueError("the iteration needs at least one compute phase")
        return self


class Checkpoint(Section):
    interval: Duration | Literal["young-daly"] = Field(
        "young-daly", description="Training time between checkpoints, or Young/Daly's optimum."
    )
    size: float = Field(gt=0, description="Checkpoint size, whole job. [GB]")
    write_bandwidth: float = Field(gt=0, description="Storage write bandwidth. [GB/s]")
    read_bandwidth: float = Field(gt=0, description="Storage read bandwidth (restart). [GB/s]")
    blocking_time: Duration | None = Field(
        None, description="Stall of a blocking checkpoint; size / write_bandwidth if absent. [s]"
    )
    mode: Literal["blocking", "async"] = "blocking"
    async_blocking_time: Duration = Field(
        1.0, gt=0, description="Stall of an async checkpoint (copy to host memory). [s]"
    )

    @field_validator("interval")
    @classmethod
    def _positive(cls, value: float | str) -> float | str:
        if isinstance(value, float) and value <= 0:
            raise ValueError("the checkpoint interval must be positive (or 'young-daly')")
        return value


class Cause(Section):
    name: str
    category: str
    count: float = Field(ge=0, description="Interruptions in the reference record. [1]")
    stall_time: Duration | None = Field(None, description="Overrides reliability.stall_time.")
    restart_time: Duration | None = Field(None, description="Overrides reliability.restart_time.")


class Reliability(Section):
    causes: list[Cause] = Field(description="Unexpected interruptions by root cause.")
    planned_count: float = Field(ge=0, description="Planned interruptions in the record. [1]")
    exposure_gpu_hours: float = Field(
        gt=0, description="Running GPU-hours the counts were observed over (calibrated). [GPU·h]"
    )
    rate_scale: float = Field(1.0, ge=0, description="Multiplier on every failure rate. [1]")
    stall_time: Duration = Field(
        ge=0, description="Survivors spin in blocked collectives until the job is torn down. [s]"
    )
    restart_time: Duration = Field(
        ge=0, description="Detection, rescheduling and node swap, GPUs idle. [s]"
    )
    planned_downtime: Duration = Field(ge=0, description="GPUs idle in planned maintenance. [s]")
    notes: str = ""


class Cooling(Section):
    """A cooling plant, from the plant catalogue (``presets/plants.toml``)."""

    plant: str = Field(description="Catalogue name.")
    type: Literal["outside-air-evaporative", "liquid", "chilled-water"]
    dt: Duration = Field(
        60.0, gt=0, description="Plant time step (coarser than the electrical). [s]"
    )
    tau: Duration = Field(gt=0, description="Time constant of the plant's response. [s]")
    supply_setpoint: float = Field(description="Supply air or coolant temperature held. [°C]")
    supply_max: float | None = Field(
        None, description="Outside-air plants: supply floats up to it before pads wet. [°C]"
    )
    inlet_offset: float = Field(ge=0, description="GPU inlet above supply (recirculation). [K]")
    fan_fraction: float = Field(ge=0, description="Air-moving power at design load / heat. [1]")
    fan_min_speed: float = Field(
        0.2, gt=0, le=1, description="Lowest fan speed; 1 for constant-speed fans. [1]"
    )
    pump_fraction: float = Field(ge=0, description="Pumping power at design load / heat. [1]")
    misc_fraction: float = Field(
        ge=0, description="Lighting, offices, controls, over design IT power; constant. [1]"
    )
    design_margin: float = Field(1.0, ge=1, description="Plant capacity over peak IT heat. [1]")
    evap_effectiveness: float | None = Field(None, gt=0, le=1, description="Media pads. [1]")
    air_delta_t: float | None = Field(None, gt=0, description="Air rise across servers. [K]")
    heat_rejection: Literal["dry-cooler", "tower"] | None = None
    rejection_approach: float | None = Field(
        None, ge=0, description="Dry cooler over dry-bulb, or tower over wet-bulb. [K]"
    )
    loop_delta_t: float | None = Field(None, gt=0, description="Coolant loop range. [K]")
    chw_supply: float | None = Field(None, description="Chilled-water supply. [°C]")
    economizer: bool = Field(True, description="Waterside economizer (chilled-water plants).")
    economizer_approach: float | None = Field(
        None, ge=0, description="Waterside economizer heat-exchanger approach. [K]"
    )
    chiller: str | None = Field(None, description="Chiller, a row of the EnergyPlus tables.")
    chiller_capacity: float | None = Field(
        None, gt=0, description="Installed chiller capacity / peak IT heat. [1]"
    )
    cycles_of_concentration: float = Field(4.0, gt=1, description="Tower blowdown. [1]")
    source: str = ""

    _required = {
        "outside-air-evaporative": ("supply_max", "evap_effectiveness", "air_delta_t"),
        "liquid": (
            "heat_rejection",
            "rejection_approach",
            "loop_delta_t",
            "chiller",
            "chiller_capacity",
        ),
        "chilled-water": (
            "chw_supply",
            "economizer_approach",
            "rejection_approach",
            "loop_delta_t",
            "chiller",
            "chiller_capacity",
        ),
    }

    @model_validator(mode="after")
    def _complete(self) -> Cooling:
        missing = [k for k in self._required[self.type] if getattr(self, k) is None]
        if missing:
            raise ValueError(f"a {self.type} plant needs {', '.join(missing)}")
        return self


class Electrical(Section):
    """Facility electrical chain between the grid connection and the racks."""

    chain: str = Field(description="Catalogue name (presets/electrical.toml).")
    ups_load: list[float] = Field(description="UPS load points, fraction of capacity. [1]")
    ups_efficiency: list[float] = Field(description="UPS efficiency at each point. [1]")
    transformer_efficiency: float = Field(gt=0, le=1, description="Transformers and PDUs. [1]")
    design_margin: float = Field(1.25, ge=1, description="Capacity over peak IT power. [1]")
    input_power_factor: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Power factor of a double-conversion UPS rectifier, which hides the servers' "
        "reactive power from the grid; none for a chain that passes it through. [1]",
    )
    source: str = ""

    @model_validator(mode="after")
    def _curve(self) -> Electrical:
        _check_curve(
            "electrical.ups_load", self.ups_load, "electrical.ups_efficiency", self.ups_efficiency
        )
        return self


class Smoothing(Section):
    """NVIDIA power smoothing (GB200/GB300): a floor and ramp rates per GPU (REFERENCES §4)."""

    floor: float = Field(
        ge=0, le=0.9, description="Floor, fraction of TDP (NVML allows 0-90 %). [1]"
    )
    ramp_up: float = Field(gt=0, description="Largest rise of board power. [W/s]")
    ramp_down: float = Field(gt=0, description="Largest fall of board power (burning). [W/s]")
    hysteresis: Duration = Field(0.0, ge=0, description="Hold after a rise before a fall. [s]")


class StopBurn(Section):
    """Burn on job stop or failure: the GPUs ramp down instead of dropping."""

    ramp_down: float = Field(gt=0, description="Ramp-down rate per GPU. [W/s]")
    delay: Duration = Field(
        0.0,
        ge=0,
        description="From the stop to the burn: 0 in hardware (GB300 burn mode), the detection "
        "time of a software agent otherwise. [s]",
    )


class Storage(Section):
    """A battery: at the racks (inside the IT boundary) or at the site (before the connection)."""

    location: Literal["rack", "site"] = "site"
    power: float = Field(gt=0, description="Rated power. [MW]")
    energy: float = Field(gt=0, description="Usable energy. [MWh]")
    efficiency: float = Field(0.9, gt=0, le=1, description="Round-trip efficiency. [1]")
    delay: Duration = Field(0.1, ge=0, description="Response of controller and converters. [s]")
    soc_min: float = Field(0.1, ge=0, lt=1, description="Lowest state of charge. [1]")
    soc_max: float = Field(0.9, gt=0, le=1, description="Highest state of charge. [1]")
    soc_initial: float = Field(0.5, ge=0, le=1, description="State of charge at the start. [1]")
    tau: Duration = Field(
        60.0, ge=0, description="Time constant of the smoothed power the grid should see. [s]"
    )
    ramp: float | None = Field(
        None, gt=0, description="Largest ramp the grid should see, either way. [MW/min]"
    )

    @model_validator(mode="after")
    def _window(self) -> Storage:
        if not self.soc_min <= self.soc_initial <= self.soc_max:
            raise ValueError(
                f"storage needs soc_min <= soc_initial <= soc_max, got {self.soc_min}, "
                f"{self.soc_initial}, {self.soc_max}"
            )
        return self


class Mitigation(Section):
    """Mitigations, each only where the hardware has it (``gpu.levers``)."""

    power_cap: float | None = Field(None, gt=0, description="GPU power cap (nvidia-smi -pl). [W]")
    clock_lock: float | None = Field(
        None, gt=0, le=1, description="Locked GPU clock, fraction of nominal (nvidia-smi -lgc). [1]"
    )
    software_burn: float | None = Field(
        None,
        gt=0,
        le=1,
        description="Dummy work fills every phase of training up to this fraction of TDP. [1]",
    )
    smoothing: Smoothing | None = None
    stop_burn: StopBurn | None = None
    storage: list[Storage] = []


class Grid(Section):
    """The connection: its strength, the registered demand the rules refer to, power factors."""

    short_circuit: float = Field(
        gt=0, description="Short-circuit power of the grid at the connection. [MVA]"
    )
    x_r: float = Field(gt=0, description="X/R ratio of the grid impedance. [1]")
    registered_demand: float | None = Field(
        None,
        gt=0,
        description="Demand registered with the utility; default: the design-day facility "
        "peak. [MW]",
    )
    other_power_factor: float = Field(
        0.95, gt=0, le=1, description="Cooling and misc loads (motors, drives), lagging. [1]"
    )
    source: str = ""


class Prices(Section):
    """Prices that turn mitigation costs into money; none set, none reported."""

    energy: float | None = Field(None, ge=0, description="Energy. [$/MWh]")
    gpu_hour: float | None = Field(None, ge=0, description="Value of one GPU-hour of training. [$]")
    storage_energy: float | None = Field(
        None, ge=0, description="Battery capital, annualised. [$/kWh/year]"
    )


class SensitivityRange(Section):
    key: str = Field(description="Dotted scenario key.")
    low: float
    high: float
    source: str


class Scenario(Section):
    name: str = ""
    description: str = ""
    simulation: Simulation
    site: Site = Site()
    cluster: Cluster
    gpu: Gpu
    workload: Workload
    checkpoint: Checkpoint
    reliability: Reliability
    cooling: Cooling
    electrical: Electrical
    mitigation: Mitigation = Mitigation()
    grid: Grid
    prices: Prices = Prices()
    sensitivity: list[SensitivityRange] = []
    sources: dict[str, str] = Field(default_factory=dict, description="Citations by short key.")

    @model_validator(mode="after")
    def _consistent(self) -> Scenario:
        cap = self.mitigation.power_cap
        if cap is not None:
            if "power_cap" not in self.gpu.levers:
                raise ValueError(f"the {self.gpu.name} has no settable power cap")
            if not self.gpu.power_cap_min <= cap <= self.gpu.tdp:
                raise ValueError(
                    f"mitigation.power_cap {cap:g} W is outside the {self.gpu.name}'s settable "
                    f"range {self.gpu.power_cap_min:g}-{self.gpu.tdp:g} W"
                )
        for lever, present in (
            ("clock_lock", self.mitigation.clock_lock is not None),
            ("power_smoothing", self.mitigation.smoothing is not None),
            ("energy_storage", any(b.location == "rack" for b in self.mitigation.storage)),
        ):
            if present and lever not in self.gpu.levers:
                raise ValueError(
                    f"the {self.gpu.name} has no {lever.replace('_', ' ')} (its levers: "
                    f"{', '.join(self.gpu.levers)}): remove it or choose a GPU that has it"
                )
        if self.gpu.name != self.cluster.gpu:
            raise ValueError(
                f"gpu.name {self.gpu.name!r} differs from cluster.gpu {self.cluster.gpu!r}"
            )
        return self

    def phase_powers(
        self, capped: bool = True, locked: bool | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Shares of the step and per-GPU power of each phase [W], at the locked clock if set
        (``locked``, by default as ``capped``) and under the power cap if set (``capped``).
        ``compute_share`` stays the unlocked reference's.

        A locked clock ``f`` scales the power above leakage by ``f³`` in compute phases (dynamic
        power ``∝ C·V²·f`` with the voltage following the clock near the top of the V–f curve,
        REFERENCES §3) and by ``f`` elsewhere [A] (communication and memory-bound phases run
        near the voltage floor): frequency locking lowers troughs as well as peaks (Patel et
        al., REFERENCES §2).
        """
        wl = self.workload
        kinds = [p.kind for p in wl.phases]
        levels = phase_levels(
            kinds, [p.power for p in wl.phases], wl.compute_power, wl.trough_depth
        )
        watts = levels * self.gpu.tdp
        shares = np.array([p.share for p in wl.phases])
        lock = self.mitigation.clock_lock
        if (capped if locked is None else locked) and lock is not None:
            compute = np.array(kinds) == "compute"
            base = np.minimum(self.gpu.leakage_ref, watts)
            watts = base + (watts - base) * lock ** np.where(compute, DYNAMIC_EXPONENT, 1.0)
            # compute phases take 1/f as long: their share of the (longer) step grows
            shares = np.where(compute, shares / lock, shares)
            shares = shares / shares.sum()
        if capped and self.mitigation.power_cap is not None:
            watts = np.minimum(watts, self.mitigation.power_cap)
        return shares, watts

    @property
    def compute_share(self) -> float:
        """Share of the step spent in compute phases. [1]"""
        return sum(p.share for p in self.workload.phases if p.kind == "compute")

    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())


# --- loading --------------------------------------------------------------------------------


# Catalogues fill a section from a named entry: section -> (table and key naming the entry,
# catalogue file, what an entry is, the section's own field holding the name).
CATALOGUES = {
    "gpu": ("cluster", "gpu", "gpus", "GPU", "name"),
    "cooling": ("cooling", "plant", "plants", "cooling plant", "plant"),
    "electrical": ("electrical", "chain", "electrical", "electrical chain", "chain"),
}


def presets() -> list[str]:
    """Names of the scenario presets shipped in the package."""
    catalogues = {f"{entry[2]}.toml" for entry in CATALOGUES.values()} | {"rules.toml"}
    return sorted(
        f.name.removesuffix(".toml")
        for f in resources.files(PRESET_PACKAGE).iterdir()
        if f.name.endswith(".toml") and f.name not in catalogues
    )


def catalogue(section: str) -> dict[str, dict[str, Any]]:
    """A catalogue (``"gpu"``: GPUs, ``"cooling"``: cooling plants): name -> raw table."""
    _, _, file, _, field = CATALOGUES[section]
    raw = _parse_toml(
        resources.files(PRESET_PACKAGE).joinpath(f"{file}.toml").read_text(), f"{file}.toml"
    )
    return {name: {field: name, **table} for name, table in raw.items()}


def gpu_catalogue() -> dict[str, dict[str, Any]]:
    """The GPU catalogue: name -> raw table."""
    return catalogue("gpu")


def load_scenario(
    name_or_path: str | Path | Scenario,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
) -> Scenario:
    """Load a scenario from a preset name, a TOML file or a Scenario, with dotted overrides.

    Parameters
    ----------
    name_or_path
        A preset name (see :func:`presets`), a path to a TOML file, or a Scenario.
    overrides
        ``{"cluster.n_gpus": 100000}`` or ``["cluster.n_gpus=100000", ...]``; values given as
        strings are read as TOML values when they parse as one (``100000``, ``true``, ``"54d"``).

    Raises
    ------
    ScenarioError
        With one line naming the problem and the fix.
    """
    if isinstance(name_or_path, Scenario):
        raw = name_or_path.to_dict()
    else:
        raw = _load_raw(name_or_path, seen=())
    return _build(raw, overrides)


def loads_scenario(
    text: str,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    label: str = "scenario",
) -> Scenario:
    """Load a scenario from TOML text (an upload), as :func:`load_scenario` does from a file.

    Only data is read: the text is parsed as TOML, never evaluated, and ``extends`` may name a
    preset but not a file, so an uploaded scenario cannot make the server read its files.
    """
    raw = _parse_toml(text, label)
    base_name = raw.pop("extends", None)
    if base_name is not None:
        if base_name not in presets():
            raise ScenarioError(
                f"{label}: 'extends' must name a preset ({', '.join(presets())}), got {base_name!r}"
            )
        raw = _merge(_load_raw(base_name, seen=(base_name,)), raw)
    return _build(raw, overrides)


def _build(raw: dict[str, Any], overrides: Mapping[str, Any] | Iterable[str] | None) -> Scenario:
    parsed = _parse_overrides(overrides)
    for key, value in parsed.items():
        _set_dotted(raw, key, value)
    for section in CATALOGUES:
        _fill_from_catalogue(raw, section, parsed)
    return _validate(raw)


def _load_raw(name_or_path: str | Path, seen: tuple[str, ...]) -> dict[str, Any]:
    text, label = _read_source(name_or_path)
    raw = _parse_toml(text, label)
    base_name = raw.pop("extends", None)
    if base_name is None:
        return raw
    if not isinstance(base_name, str):
        raise ScenarioError(f"{label}: 'extends' must be a preset name, got {base_name!r}")
    if base_name in seen:
        raise ScenarioError(f"{label}: 'extends' loops back to {base_name!r}")
    return _merge(_load_raw(base_name, seen + (base_name,)), raw)


def _read_source(name_or_path: str | Path) -> tuple[str, str]:
    path = Path(name_or_path)
    looks_like_file = path.suffix == ".toml" or path.exists() or len(path.parts) > 1
    if looks_like_file:
        if not path.is_file():
            raise ScenarioError(f"scenario file {str(path)!r} does not exist")
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise ScenarioError(f"cannot read scenario file {str(path)!r}: {exc}") from None
    name = str(name_or_path)
    if name not in presets():
        raise ScenarioError(
            f"unknown preset {name!r}{_did_you_mean(name, presets())}; "
            f"presets: {', '.join(presets())} (or give a path to a .toml file)"
        )
    return resources.files(PRESET_PACKAGE).joinpath(f"{name}.toml").read_text(), name


def _parse_toml(text: str, label: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{label}: TOML syntax error: {exc}") from None


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge: tables merge key by key, anything else (values, arrays) is replaced."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _parse_overrides(overrides: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Any]:
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:
        items = []
        for text in overrides:
            key, sep, value = str(text).partition("=")
            if not sep or not key.strip():
                raise ScenarioError(f"override {text!r} is not of the form key.path=value")
            items.append((key.strip(), value.strip()))
    return {key: _toml_value(value) for key, value in items}


def _toml_value(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        return value


def _set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Set ``a.b.c`` in nested tables; a number indexes an array (``workload.phases.0``)."""
    parts = key.split(".")
    node: Any = raw
    for depth, part in enumerate(parts):
        where = ".".join(parts[: depth + 1])
        last = depth == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(f"override {key!r}: {where!r} needs an index below {len(node)}")
            part = int(part)
        elif not isinstance(node, dict):
            raise ScenarioError(f"override {key!r}: {'.'.join(parts[:depth])!r} is a value")
        if last:
            node[part] = value
        else:
            if isinstance(node, dict) and part not in node:
                node[part] = {}
            node = node[part]


def _fill_from_catalogue(raw: dict[str, Any], section: str, overrides: dict[str, Any]) -> None:
    """Fill a section from the catalogue entry it names; keys given explicitly win.

    When the overrides choose another entry (``cluster.gpu=B200``), the section's old keys were
    written for the old entry: only the keys the overrides set are kept over the new entry.
    """
    table, key, _, what, _ = CATALOGUES[section]
    selector = f"{table}.{key}"
    name = raw.get(table, {}).get(key) if isinstance(raw.get(table), dict) else None
    if not isinstance(name, str):
        return  # validation reports the missing or mistyped selector
    entries = catalogue(section)
    if name not in entries:
        raise ScenarioError(
            f"{selector}: unknown {what} {name!r}{_did_you_mean(name, entries)}; "
            f"the catalogue has {', '.join(entries)}"
        )
    explicit = raw.get(section, {})
    if not isinstance(explicit, dict):
        raise ScenarioError(f"{section} must be a table")
    if selector in overrides:
        prefix = f"{section}."
        explicit = {k: v for k, v in explicit.items() if f"{prefix}{k}" in overrides}
    raw[section] = _merge(entries[name], explicit)


def _validate(raw: dict[str, Any]) -> Scenario:
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(_explain(exc)) from None
    for item in scenario.sensitivity:
        _check_key(scenario, item.key)
    return scenario


def _check_key(scenario: Scenario, key: str) -> None:
    node: Any = scenario
    for part in key.split("."):
        fields = type(node).model_fields if isinstance(node, BaseModel) else {}
        if part not in fields:
            raise ScenarioError(
                f"sensitivity key {key!r}: no field {part!r}{_did_you_mean(part, fields)}"
            )
        node = getattr(node, part)


def _explain(exc: ValidationError) -> str:
    """One line per problem, with the dotted key, the value given and a suggestion."""
    lines = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        where = ".".join(loc) or "scenario"
        if err["type"] == "extra_forbidden":
            parent = ".".join(str(p) for p in err["loc"][:-1] if not isinstance(p, int))
            known = [f"{parent}.{f}" if parent else f for f in _fields_at(err["loc"][:-1])]
            guess = f"{parent}.{loc[-1]}" if parent else loc[-1]
            lines.append(f"unknown key {where!r}{_did_you_mean(guess, known)}")
        elif err["type"] == "missing":
            lines.append(f"missing key {where!r}")
        else:
            message = err["msg"].removeprefix("Value error, ")
            given = err.get("input")
            shown = f" (got {given!r})" if isinstance(given, str | int | float) else ""
            lines.append(f"{where}: {message}{shown}")
    return "; ".join(lines)


def _fields_at(loc: tuple[Any, ...]) -> list[str]:
    model: Any = Scenario
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            return []
        annotation = field.annotation
        args = getattr(annotation, "__args__", ())
        model = next((a for a in (annotation, *args) if hasattr(a, "model_fields")), None)
        if model is None:
            return []
    return list(model.model_fields)


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    choices = list(choices)
    folded = {c.casefold(): c for c in choices}
    close = [c for c in folded if word and c.startswith(word.casefold())][:1]
    if not close:
        close = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.6)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""
