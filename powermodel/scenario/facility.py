"""The schema's tables of the facility around the job: cooling plants (a tagged union by type),
the electrical chain, mitigation (caps, locks, smoothing, storage), the grid connection,
disturbance sequences and the site's ride-through, prices and sensitivity ranges.

Each table checks its own keys; the checks across tables are
:class:`~powermodel.scenario.root.Scenario`'s.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from functools import lru_cache
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, BeforeValidator, Field, field_validator, model_validator

from powermodel.scenario.base import (
    DAY,
    HOUR,
    MAX_BATTERIES,
    MAX_RUN,
    MINUTE,
    Duration,
    Name,
    Section,
    Text,
    did_you_mean,
    packaged,
    shorten,
)
from powermodel.scenario.job import Simulation, check_efficiency_curve
from powermodel.scenario.keys import tag_of
from powermodel.scenario.tables import parse_toml

PLANT_TYPE = "Kind of plant, which sets the keys it takes."


class Plant(Section):
    """What every cooling plant has; each type adds its own keys (:data:`Cooling`)."""

    plant: str = Field(description="Catalogue name.")
    type: str = Field(description=PLANT_TYPE)
    dt: Duration = Field(
        60.0,
        ge=1,
        le=HOUR,
        description="Plant time step: a whole number of simulation.dt dividing the run; one "
        "finer than simulation.dt runs at it (the heat is known no finer). [s]",
    )
    tau: Duration = Field(ge=1, le=DAY, description="Time constant of the plant's response. [s]")
    # bounds: chilled water at 5 °C to warm-water liquid cooling at 60 °C (ASHRAE W-classes)
    supply_setpoint: float = Field(
        ge=0, le=70, description="Supply air or coolant temperature held. [°C]"
    )
    inlet_offset: float = Field(
        ge=0, le=30, description="GPU inlet above supply (recirculation). [K]"
    )
    fan_fraction: float = Field(
        ge=0, le=1, description="Air-moving power at design load / heat. [1]"
    )
    fan_min_speed: float = Field(
        0.2, ge=0.01, le=1, description="Lowest fan speed; 1 for constant-speed fans [A]. [1]"
    )
    pump_fraction: float = Field(ge=0, le=1, description="Pumping power at design load / heat. [1]")
    misc_fraction: float = Field(
        ge=0, le=1, description="Lighting, offices, controls, over design IT power; constant. [1]"
    )
    design_margin: float = Field(
        1.0, ge=1, le=10, description="Plant capacity over peak IT heat; none by default [A]. [1]"
    )
    cycles_of_concentration: float = Field(
        4.0,
        ge=1.1,
        le=100,
        description=(
            "Blowdown of towers or evaporative media [A]; at 1.1 the blowdown is ten times the "
            "evaporation, worse than any make-up water forces. [1]"
        ),
    )
    source: Text = ""


class OutsideAirPlant(Plant):
    """Outside air with direct evaporative cooling, no chillers (Meta-style halls)."""

    type: Literal["outside-air-evaporative"] = Field(description=PLANT_TYPE)
    supply_max: float = Field(
        ge=0, le=70, description="Supply floats up to it before pads wet. [°C]"
    )
    evap_effectiveness: float = Field(ge=0.01, le=1, description="Media pads. [1]")
    air_delta_t: float = Field(ge=1, le=50, description="Air rise across servers. [K]")
    dew_point_min: float = Field(
        ge=-40, le=20, description="Lowest supply dew point, held by misting. [°C]"
    )
    humidity_min: float = Field(
        ge=0, le=90, description="Lowest supply relative humidity, held by misting; 0: none. [%]"
    )
    treatment_yield: float = Field(
        1.0,
        ge=0.1,
        le=1,
        description=(
            "Share of the water drawn that its treatment delivers to the sprays; the reject is "
            "drained: 1, untreated [A]; about 0.65 for reverse osmosis [S, gofog_ro]; a tenth "
            "at least (no treatment drains nine litres for one). [1]"
        ),
    )


class WaterSidePlant(Plant):
    """A plant with chillers and heat rejection on a water loop."""

    rejection_approach: float = Field(
        ge=0, le=30, description="Dry cooler over dry-bulb, or tower over wet-bulb. [K]"
    )
    loop_delta_t: float = Field(ge=1, le=50, description="Coolant loop range. [K]")
    chiller: str = Field(max_length=200, description="Chiller, a row of the EnergyPlus tables.")
    chiller_capacity: float = Field(
        ge=0.01, le=10, description="Installed chiller capacity / peak IT heat. [1]"
    )


class LiquidPlant(WaterSidePlant):
    """Liquid to the chip, dry coolers or towers, trim chillers (Blackwell halls)."""

    type: Literal["liquid"] = Field(description=PLANT_TYPE)
    heat_rejection: Literal["dry-cooler", "tower"] = Field(
        description="Dry coolers (over the dry-bulb) or cooling towers (over the wet-bulb)."
    )


class ChilledWaterPlant(WaterSidePlant):
    """CRAHs on chilled water, water-cooled chillers and towers (enterprise halls)."""

    type: Literal["chilled-water"] = Field(description=PLANT_TYPE)
    chw_supply: float = Field(ge=0, le=40, description="Chilled-water supply. [°C]")
    economizer: bool = Field(
        True, description="Waterside economizer (as ASHRAE 90.4-style plants have) [A]."
    )
    economizer_approach: float = Field(
        ge=0, le=30, description="Waterside economizer heat-exchanger approach. [K]"
    )


PLANT_TYPES = (OutsideAirPlant, LiquidPlant, ChilledWaterPlant)


# Before plant types had tables of their own this key had a default on every plant, so every
# scenario saved then carries it, with this value, whatever its plant: it says nothing. (So did
# cycles_of_concentration = 4, which every plant now takes, at that default.)
_SAVED_WITH_EVERY_PLANT = {"economizer": True}


def _other_plants_keys(raw: Any) -> Any:
    """A cooling table with a key only other plant types take is refused, naming the plant
    types that take it (it would change nothing: a silent wrong answer), except the one every
    scenario saved before plant types carries at its old default, which is dropped.
    Switching ``cooling.plant`` leaves the old plant's keys behind (``_fill_from_catalogue``)."""
    if not isinstance(raw, dict):
        return raw
    plant = plant_type(raw.get("type"))
    if plant is None:
        return raw  # validation names the missing or unknown type
    others = {k for m in PLANT_TYPES for k in m.model_fields} - set(plant.model_fields)
    stray = [k for k in raw if k in others and _SAVED_WITH_EVERY_PLANT.get(k, ...) != raw[k]]
    if stray:
        takers = [tag_of(m) for m in PLANT_TYPES if stray[0] in m.model_fields]
        raise ValueError(
            f"{stray[0]} is a key of {' or '.join(takers)} plants, not of this "
            f"{raw['type']} one: remove it, or choose such a plant with cooling.plant"
        )
    return {k: v for k, v in raw.items() if k not in others}


def plant_type(tag: Any) -> type[BaseModel] | None:
    """The plant model a ``cooling.type`` chooses; None for no known type."""
    return next((m for m in PLANT_TYPES if tag_of(m) == tag), None)


# A cooling plant, from the plant catalogue (``presets/plants.toml``): one model per plant
# type, chosen by ``type``, each with the keys that plant takes (its JSON schema says which).
Cooling = Annotated[
    OutsideAirPlant | LiquidPlant | ChilledWaterPlant,
    Field(discriminator="type"),
    BeforeValidator(_other_plants_keys),
]


class Electrical(Section):
    """Facility electrical chain between the grid connection and the racks."""

    chain: str = Field(description="Catalogue name (presets/electrical.toml).")
    ups_load: list[float] = Field(description="UPS load points, fraction of capacity. [1]")
    ups_efficiency: list[float] = Field(description="UPS efficiency at each point. [1]")
    transformer_efficiency: float = Field(ge=0.5, le=1, description="Transformers and PDUs. [1]")
    design_margin: float = Field(
        1.25, ge=1, le=10, description="Capacity over peak IT power [A]. [1]"
    )
    input_power_factor: float | None = Field(
        None,
        ge=0.5,
        le=1,
        description="Power factor of a double-conversion UPS rectifier, which hides the servers' "
        "reactive power from the grid; none for a chain that passes it through. [1]",
    )
    source: Text = ""

    @model_validator(mode="after")
    def _curve(self) -> Electrical:
        check_efficiency_curve(
            "electrical.ups_load", self.ups_load, "electrical.ups_efficiency", self.ups_efficiency
        )
        return self


class Smoothing(Section):
    """NVIDIA power smoothing (GB200/GB300): a floor and ramp rates per GPU [P, nvidia_nvml]."""

    floor: float = Field(
        ge=0, le=0.9, description="Floor, fraction of TDP (NVML allows 0-90 %). [1]"
    )
    ramp_up: float = Field(ge=1, le=1e9, description="Largest rise of board power. [W/s]")
    ramp_down: float = Field(
        ge=1, le=1e9, description="Largest fall of board power (burning). [W/s]"
    )
    hysteresis: Duration = Field(
        0.0,
        ge=0,
        le=HOUR,
        description="Hold after a rise before a fall (NVIDIA's default not published) [A]. [s]",
    )


class StopBurn(Section):
    """Burn on job stop or failure: the GPUs ramp down instead of dropping."""

    ramp_down: float = Field(ge=1, le=1e9, description="Ramp-down rate per GPU. [W/s]")
    delay: Duration = Field(
        0.0,
        ge=0,
        le=HOUR,
        description="From the stop to the burn: 0 in hardware (GB300 burn mode "
        "[P, nvidia_gb300_power]), the detection time of a software agent otherwise. [s]",
    )


class Storage(Section):
    """A battery: at the racks (inside the IT boundary) or at the site (before the connection)."""

    location: Literal["rack", "site"] = "site"
    power: float = Field(ge=1e-3, le=1e5, description="Rated power. [MW]")
    energy: float = Field(ge=1e-3, le=1e6, description="Usable energy. [MWh]")
    efficiency: float = Field(
        0.9, ge=0.1, le=1, description="Round-trip efficiency (lithium-ion) [A]. [1]"
    )
    delay: Duration = Field(
        0.1, ge=0, le=HOUR, description="Response of controller and converters [A]. [s]"
    )
    soc_min: float = Field(0.1, ge=0, lt=1, description="Lowest state of charge [A]. [1]")
    soc_max: float = Field(0.9, gt=0, le=1, description="Highest state of charge [A]. [1]")
    soc_initial: float = Field(
        0.5, ge=0, le=1, description="State of charge at the start; half [A]. [1]"
    )
    tau: Duration = Field(
        60.0,
        ge=0,
        le=DAY,
        description="Time constant of the smoothed power the grid should see [A]. [s]",
    )
    ramp: float | None = Field(
        None, ge=1e-3, le=1e5, description="Largest ramp the grid should see, either way. [MW/min]"
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

    power_cap: float | None = Field(
        None, ge=1, le=10e3, description="GPU power cap (nvidia-smi -pl). [W]"
    )
    clock_lock: float | None = Field(
        None,
        ge=0.1,
        le=1,
        description="Locked GPU clock, fraction of nominal (nvidia-smi -lgc). [1]",
    )
    software_burn: float | None = Field(
        None,
        ge=0.01,
        le=1,
        description="Dummy work fills every phase of training up to this fraction of TDP. [1]",
    )
    smoothing: Smoothing | None = None
    stop_burn: StopBurn | None = None
    # a site holds a few battery systems (rack batteries are one entry for all racks); each
    # costs its run about 16 B a step
    storage: list[Storage] = Field([], max_length=MAX_BATTERIES)


class Grid(Section):
    """The connection: its strength, the registered demand the rules refer to, power factors."""

    short_circuit: float = Field(
        ge=1, le=1e6, description="Short-circuit power of the grid at the connection. [MVA]"
    )
    x_r: float = Field(ge=0.1, le=1000, description="X/R ratio of the grid impedance. [1]")
    registered_demand: float | None = Field(
        None,
        ge=1e-3,
        le=1e5,
        description="Demand registered with the utility; default: the design-day facility "
        "peak. [MW]",
    )
    other_power_factor: float = Field(
        0.95, ge=0.5, le=1, description="Cooling and misc loads (motors, drives), lagging [A]. [1]"
    )
    rules: list[Annotated[str, Field(max_length=64)]] | None = Field(
        None,
        min_length=1,
        max_length=100,
        description="The utility's rules, by shipped rule or group name (powermodel/presets/"
        "rules.toml): what check and size measure when no --rules is given; none: they ask.",
    )
    source: Text = ""

    @field_validator("rules")
    @classmethod
    def _rule_names(cls, names: list[str] | None) -> list[str] | None:
        # names, never paths: a scenario (an upload) names no file to read
        odd = [n for n in names or [] if not re.fullmatch(r"[a-z0-9][a-z0-9_-]*", n)]
        if odd:
            raise ValueError(
                f"{shorten(odd[0], 80)} is not a rule name: name shipped rules or groups "
                "(powermodel presets' rules.toml, e.g. 'ercot-5s', 'nprr1191'); a rule file is "
                "given to check with --rules"
            )
        return names


class Sag(Section):
    """One voltage sag at the connection: its start, its length and each phase's residual."""

    at: Duration = Field(ge=0, le=MAX_RUN, description="Start, after the sequence's start. [s]")
    duration: Duration = Field(
        gt=0, le=HOUR, description="How long the voltage stays low (fault to clearing). [s]"
    )
    voltage: float | tuple[float, float, float] = Field(
        description="Residual voltage of phases a, b, c (one number: all three, a balanced "
        "sag). [p.u.]"
    )
    angle: tuple[float, float, float] = Field(
        (0.0, 0.0, 0.0), description="Phase-angle jump of phases a, b, c; none by default. [°]"
    )

    @field_validator("voltage")
    @classmethod
    def _residual(cls, value: float | tuple) -> float | tuple:
        values = value if isinstance(value, tuple) else (value,)
        if not all(0.0 <= v <= 1.0 for v in values):
            raise ValueError(
                f"a sag's residual voltage lies in [0, 1] p.u. (per phase), got {value}: give "
                "the voltage left, not the drop, and per unit, not percent"
            )
        return value

    @field_validator("angle")
    @classmethod
    def _jump(cls, value: tuple) -> tuple:
        if not all(-180.0 <= a <= 180.0 for a in value):
            raise ValueError(f"a phase-angle jump lies in [-180, 180] degrees, got {value}")
        return value

    @property
    def phases(self) -> tuple[float, float, float]:
        v = self.voltage
        return v if isinstance(v, tuple) else (v, v, v)


MAX_SAGS = 1000


DISTURBANCE_LEAD = 5 * MINUTE  # a sequence without a start: this far into the run [s]


CurveDuration = Annotated[float, Field(allow_inf_nan=True)]  # an immunity curve's last step: inf


MAX_FREQUENCY_POINTS = 100_000


class Disturbance(Section):
    """Grid disturbances at the connection: voltage sags and a frequency trace, from a shipped
    sequence (``sequence``, presets/disturbances.toml) or given here."""

    sequence: Name | None = Field(
        None, description="A shipped sequence; its sags and frequency unless given here."
    )
    start: datetime | None = Field(
        None,
        description="When the sequence starts, UTC without an offset; by default five minutes "
        "into the run (its start, in a shorter one).",
    )
    sags: list[Sag] = Field([], max_length=MAX_SAGS)
    frequency: list[tuple[float, float]] = Field(
        [],
        max_length=MAX_FREQUENCY_POINTS,
        description="Frequency at the connection as [time after the start [s], frequency "
        "[Hz]] points, linear between them, nominal before the first and held after the "
        "last.",
    )
    nominal_frequency: float = Field(
        60.0,
        ge=45,
        le=65,
        description="System frequency: North America's 60 Hz (50 elsewhere) [A]. [Hz]",
    )
    frequency_deadband: float = Field(
        0.036,
        ge=0,
        le=1,
        description="A frequency within this of nominal is normal operation; one farther is an "
        "excursion, a disturbance the site rides through inside the UPS window (the 36 mHz "
        "governor deadband of NERC's primary frequency control guideline [A]). [Hz]",
    )
    title: Text = ""
    source: Text = ""
    choices: Text = ""

    @field_validator("start")
    @classmethod
    def _naive_utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else Simulation._naive_utc(value)

    @model_validator(mode="after")
    def _ordered(self) -> Disturbance:
        if not self.sags and not self.frequency:
            raise ValueError(
                "disturbance: no sags and no frequency trace: give sags, frequency or a "
                "shipped sequence"
            )
        times = [t for t, _ in self.frequency]
        if any(b <= a for a, b in zip(times, times[1:], strict=False)) or (times and times[0] < 0):
            raise ValueError(
                "disturbance.frequency: times from 0 s on, increasing (each point [s, Hz])"
            )
        if not all(30.0 <= f <= 90.0 and math.isfinite(t) for t, f in self.frequency):
            raise ValueError(
                "disturbance.frequency: each point is [seconds, Hz] with a frequency in 30-90 Hz"
            )
        return self

    @property
    def span(self) -> float:
        """From the sequence's start to its last sag's end or frequency point. [s]"""
        ends = [s.at + s.duration for s in self.sags] + [t for t, _ in self.frequency[-1:]]
        return max(ends)


class RideThrough(Section):
    """How the site answers grid disturbances: what its supplies tolerate, the UPS (central or
    rack batteries) and its transfer logic, the generators, the return to the grid. Values
    marked [A] are assumptions of this tool, not published requirements."""

    measure: Literal["worst_phase", "positive_sequence"] = Field(
        "worst_phase",
        description="The voltage the site's equipment reads (each phase's supply sees its own "
        "phase: worst phase by default); both are reported.",
    )
    transformers: list[Literal["Dyn", "YNyn", "Yy"]] = Field(
        ["Dyn"],
        max_length=4,
        description="Transformers between the connection and the supplies, in order (a Dyn "
        "step-down by default [A]).",
    )
    supply_connection: Literal["phase_to_neutral", "phase_to_phase"] = Field(
        "phase_to_neutral",
        description="How the server supplies are wired (415/240 V racks: phase to neutral; "
        "208 V racks: phase to phase).",
    )
    immunity: Name | list[tuple[CurveDuration, float]] = Field(
        "itic",
        description="The supplies' immunity curve: a shipped curve (presets/immunity.toml) or "
        "[duration [s], lowest voltage [p.u.]] steps, the last duration inf.",
    )
    backup: Literal["ups", "none"] = Field(
        "ups", description="A UPS (central, or rack batteries) in front of the IT load, or none."
    )
    transfer: Name | list[tuple[CurveDuration, float]] = Field(
        "ups-input-window",
        description="When the UPS leaves the grid for its battery: a curve as immunity takes.",
    )
    frequency_window: tuple[float, float] = Field(
        (57.0, 63.0),
        description="The UPS leaves the grid when the frequency leaves this window [A]. [Hz]",
    )
    count: int = Field(
        3,
        ge=0,
        le=100,
        description="Transfers within count_window that latch the site on backup until a "
        "manual return (three in a minute [S, nerc_incident_2024]); 0: never latch.",
    )
    count_window: Duration = Field(
        60.0,
        gt=0,
        le=DAY,
        description="The count's window: a minute [S, nerc_incident_2024]. [s]",
    )
    retransfer_delay: Duration = Field(
        2.0,
        ge=0,
        le=DAY,
        description="Time the UPS stays on its battery after a disturbance that did not latch, "
        "from its end, while the input settles [A]. [s]",
    )
    walk_in: Duration = Field(
        5.0,
        ge=0,
        le=HOUR,
        description="Time the UPS rectifier takes the load back after such a transfer, "
        "linearly [A]. [s]",
    )
    manual_return: Duration = Field(
        4 * HOUR,
        ge=0,
        le=30 * DAY,
        description="Time on backup after a latch, until someone returns the site (hours in "
        "the July 2024 event [S, nerc_incident_2024]; 4 h [A]). [s]",
    )
    return_ramp: Duration = Field(
        60.0,
        ge=0,
        le=DAY,
        description="Time to move the site from its generators back to the grid after a "
        "latch, linearly [A]. [s]",
    )
    autonomy: Duration = Field(
        300.0,
        ge=0,
        le=DAY,
        description="How long the UPS battery carries the design IT load (5 min [A]; rack "
        "batteries hold about 90 s-4 min). [s]",
    )
    generator: bool = Field(True, description="Standby generators carry the site on backup.")
    generator_start: Duration = Field(
        10.0,
        ge=0,
        le=HOUR,
        description="From a transfer to the generators taking the load (NFPA 110 type 10: "
        "10 s [S, nfpa110]). [s]",
    )
    generator_ramp: Duration = Field(
        10.0,
        ge=0,
        le=HOUR,
        description="Time the UPS takes to walk the IT load onto the running generators, "
        "linearly, its battery carrying the rest [A]. [s]",
    )
    fuel: float = Field(
        270.0,
        ge=0,
        le=2000,
        description="Generator fuel per energy delivered (diesel near rated load, about "
        "0.27 L/kWh [A]). [L/MWh]",
    )
    recharge: float = Field(
        0.1,
        gt=0,
        le=1,
        description="Recharge draw of the UPS batteries, a share of the design IT power [A]. [1]",
    )
    recharge_efficiency: float = Field(
        0.9, ge=0.1, le=1, description="Share of the recharge's energy stored [A]. [1]"
    )
    source: Text = ""

    @field_validator("immunity", "transfer")
    @classmethod
    def _curve(cls, value: str | list) -> str | list:
        if isinstance(value, str):
            curves = immunity_curves()
            if value not in curves:
                raise ValueError(
                    f"unknown immunity curve {value!r}{did_you_mean(value, curves)}; the "
                    f"shipped ones are {', '.join(curves)}, or give [duration, voltage] steps"
                )
            return value
        check_curve(value)
        return value

    @model_validator(mode="after")
    def _window(self) -> RideThrough:
        low, high = self.frequency_window
        if not 30.0 <= low < high <= 90.0:
            raise ValueError(
                f"ride_through.frequency_window: [low, high] Hz with low < high within 30-90 Hz, "
                f"got {list(self.frequency_window)}"
            )
        return self

    def curve(self, which: str) -> tuple[np.ndarray, np.ndarray]:
        """The ``immunity`` or ``transfer`` curve as steps: durations [s] and voltages [p.u.]."""
        value = getattr(self, which)
        return curve_steps(immunity_curves()[value]["points"] if isinstance(value, str) else value)


def curve_steps(points: list) -> tuple[np.ndarray, np.ndarray]:
    """An immunity curve's ``[duration, voltage]`` steps as arrays: durations [s] and
    voltages [p.u.] (as :func:`powermodel.models.disturbance.tolerated` takes them)."""
    return np.array([p[0] for p in points], float), np.array([p[1] for p in points], float)


def check_curve(points: list) -> None:
    """An immunity curve: 1 to 50 steps [duration [s], lowest voltage [p.u.]], durations
    increasing to inf, voltages in [0, 1.2] and never lower for a longer sag."""
    if not 1 <= len(points) <= 50 or not all(len(p) == 2 for p in points):
        raise ValueError("an immunity curve is 1 to 50 steps, each [duration [s], voltage [p.u.]]")
    durations = [float(p[0]) for p in points]
    voltages = [float(p[1]) for p in points]
    if (
        any(math.isnan(d) for d in durations)
        or any(b <= a for a, b in zip(durations, durations[1:], strict=False))
        or durations[0] <= 0
    ):
        raise ValueError(f"an immunity curve's durations increase from above 0 s, got {durations}")
    if not math.isinf(durations[-1]):
        raise ValueError(
            "an immunity curve's last step holds for any longer sag: give its duration as inf"
        )
    if not all(0.0 <= v <= 1.2 for v in voltages) or any(
        b < a for a, b in zip(voltages, voltages[1:], strict=False)
    ):
        raise ValueError(
            f"an immunity curve's voltages lie in [0, 1.2] p.u. and never fall for a longer "
            f"sag, got {voltages}"
        )


@lru_cache(maxsize=1)
def immunity_curves() -> dict[str, dict[str, Any]]:
    """The shipped immunity curves (presets/immunity.toml): name -> table (read only)."""
    raw = parse_toml(packaged(CURVES_FILE).read_text(), CURVES_FILE)
    for table in raw.values():
        check_curve(table["points"])
    return raw


class Prices(Section):
    """Prices that turn mitigation costs into money; none set, none reported."""

    energy: float | None = Field(None, ge=0, le=1e6, description="Energy. [$/MWh]")
    gpu_hour: float | None = Field(
        None, ge=0, le=1e6, description="Value of one GPU-hour of training. [$]"
    )
    storage_energy: float | None = Field(
        None, ge=0, le=1e6, description="Battery capital, annualised. [$/kWh/year]"
    )


class SensitivityRange(Section):
    key: str = Field(max_length=200, description="Dotted scenario key.")
    low: float | str = Field(description="Low end, in the key's own form (durations with a unit).")
    high: float | str = Field(description="High end, in the key's own form.")
    source: Text


# Catalogues read by name, not filling a section: immunity curves and ride-through requirements
CURVES_FILE, REQUIREMENTS_FILE = "immunity.toml", "requirements.toml"
