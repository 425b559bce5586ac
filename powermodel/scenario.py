"""Scenarios: a validated schema, TOML files, presets loaded by name, and dotted overrides.

A scenario is built in layers, each overriding the one before:

1. the preset named by ``extends`` (recursively), if any;
2. the file (or the named preset) itself;
3. dotted overrides (``cluster.n_gpus=131072``) from the API or ``--set`` on the CLI;
4. the ``[gpu]`` table is filled from the GPU catalogue entry named by ``cluster.gpu``; keys given
   explicitly under ``[gpu]`` win over the catalogue.

Durations are written as strings with a unit (``"54d"``, ``"1s"``, ``"100ms"``, ``"10min"``) and
held as seconds.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import re
import tomllib
import zoneinfo
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Literal, NamedTuple, Union, get_args, get_origin

import numpy as np
import tomli_w
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from powermodel.durations import format_duration, parse_duration
from powermodel.errors import DataFileError, ScenarioError
from powermodel.iotools import exists, is_file, read_text
from powermodel.iotools.weather import SHIPPED, site_of
from powermodel.models import electrical, variation
from powermodel.models import weather as wx
from powermodel.models.events import teardown_time
from powermodel.models.signal import FINEST_STEP
from powermodel.models.thermal import leakage_power, locked_phases, steady_gpu_temperature
from powermodel.models.workload import (
    StepTimes,
    data_parallel_time,
    derived_step_time,
    layout_step,
    layout_work,
    phase_levels,
    running_level,
    sync_time,
)

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "catalogue",
    "format_duration",
    "gpu_catalogue",
    "is_duration",
    "is_timezone",
    "load_scenario",
    "loads_scenario",
    "names_a_file",
    "parse_duration",
    "parse_overrides",
    "parse_toml",
    "presets",
    "Scenario",
    "shorten",
]


def packaged(name: str) -> Any:
    """A file shipped in ``powermodel/presets`` (a Traversable: ``read_text()``), read as
    package data: importing ``powermodel.presets`` as a module would rebind the package's
    ``presets`` name from the function to it."""
    return resources.files("powermodel") / "presets" / name


def _minute(when: datetime) -> str:
    """A time to the minute, its year in four digits (``0001-01-01T00:00``)."""
    return when.isoformat(timespec="minutes")


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
]

# Bounds of the scenario's durations and sizes [s]: beyond them no training job or site exists,
# and the engine's arrays and loops are sized by them.
MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0
MAX_RUN = 3660 * DAY  # ten years: weather is a typical year, repeated
MAX_RECOVERY = 30 * DAY  # a stall, restart or maintenance: a month is already a lost job
MAX_GPUS = 10_000_000  # ten times the largest campus announced (about 1 GW, 2026)
MAX_BATTERIES = 16  # battery systems a site holds
MAX_DEPTH = 12  # tables and arrays nested in a scenario or rule file (the schema needs 4)
MAX_EXTENDS = 16  # files in a chain of `extends`
MAX_TEXT = 2000  # characters of a free-text field (a name, a note, a source)
TIME_RANGE = (datetime(1677, 9, 22), datetime(2262, 4, 11))  # datetime64[ns] holds these

Text = Annotated[str, Field(max_length=MAX_TEXT)]  # free text: a description, a note, a source
Name = Annotated[str, Field(max_length=200)]  # a name or a key


def _printable(value: str) -> str:
    """A label shown in tables, files and the dashboard: printable, not blank."""
    if not value.strip() or not value.isprintable():
        raise ValueError(
            f"{value!r} is blank or holds a control character: use letters, digits, spaces "
            "and punctuation"
        )
    return value


Label = Annotated[str, Field(min_length=1, max_length=60), AfterValidator(_printable)]


class Section(BaseModel):
    """Base of every scenario table: unknown keys are errors, numbers must be finite, values are
    validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


class Simulation(Section):
    start: datetime = Field(
        datetime(2024, 7, 1), description="Start of the run, UTC, without a timezone offset."
    )
    duration: Duration = Field(gt=0, le=MAX_RUN, description="Length of the run. [s]")
    dt: Duration = Field(gt=0, description="Time step of the electrical path (interval means). [s]")
    seed: int = Field(0, ge=0, lt=2**63, description="Seed of every random draw.")

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
        if self.dt < FINEST_STEP:
            raise ValueError(
                f"dt {format_duration(self.dt)} is below {format_duration(FINEST_STEP)}, the "
                "model's floor"
            )
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
        first, last = TIME_RANGE
        end = self.start + timedelta(seconds=self.duration)
        if self.start < first or end > last:
            raise ValueError(
                f"the run {_minute(self.start)} to {_minute(end)} leaves the span "
                f"{_minute(first)} to {_minute(last)} that nanosecond timestamps can hold: "
                "choose another start or a shorter duration"
            )
        return self

    @property
    def n_steps(self) -> int:
        return round(self.duration / self.dt)


class Synthetic(Section):
    """Synthetic weather: seasonal and diurnal cosines (defaults fitted to Sterling's TMY3)."""

    # bounds: the extremes of the Earth's climate (annual means −55 to +35 °C)
    mean: float = Field(
        wx.STERLING_MEAN, ge=-60, le=50, description="Annual mean dry-bulb [D, nrel_tmy3]. [°C]"
    )
    seasonal_amplitude: float = Field(
        wx.STERLING_SEASONAL_AMPLITUDE,
        ge=0,
        le=40,
        description="Half the summer-winter swing [D, nrel_tmy3]. [K]",
    )
    hottest_day: float = Field(
        wx.STERLING_HOTTEST_DAY,
        ge=1,
        le=366,
        description="Day of year of the warmest mean [D, nrel_tmy3].",
    )
    daily_amplitude: float = Field(
        wx.STERLING_DAILY_AMPLITUDE,
        ge=0,
        le=25,
        description="Half the daily range [D, nrel_tmy3]. [K]",
    )
    peak_hour: float = Field(
        wx.PEAK_HOUR,
        ge=0,
        lt=24,
        description="Local hour of the daily maximum [P, ashrae_fundamentals]. [h]",
    )
    dew_point_depression: float = Field(
        wx.STERLING_DEW_POINT_DEPRESSION,
        ge=0,
        le=50,
        description="Daily-mean dry-bulb minus dew point (moisture varies slowly) "
        "[D, nrel_tmy3]. [K]",
    )
    pressure: float = Field(
        101325.0,
        ge=30e3,
        le=115e3,
        description="Station pressure (Everest to the Dead Sea); the standard atmosphere "
        "at sea level by default [P, ashrae_fundamentals]. [Pa]",
    )

    @model_validator(mode="after")
    def _psychrometric_range(self) -> Synthetic:
        """The coldest hour stays where the wet-bulb's equations hold (psychrolib's -100 °C)."""
        coldest = self.mean - self.seasonal_amplitude - self.daily_amplitude
        floor = wx.DRY_BULB_RANGE[0]
        if coldest < floor:
            raise ValueError(
                f"mean - seasonal_amplitude - daily_amplitude is {coldest:g} °C, colder than "
                f"{floor:g} °C, where the psychrometric equations end: raise the mean or "
                "lower the amplitudes"
            )
        return self


def is_timezone(name: str) -> bool:
    """Whether ``name`` is a timezone this machine knows (an IANA name)."""
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return False
    return True


class Site(Section):
    name: str = Field("", max_length=200, description="Where the site is.")
    timezone: str = Field("UTC", description="IANA timezone of the site (local hour).")
    weather: str = Field(
        "synthetic",
        max_length=4096,
        description="A shipped weather name, a path to an EPW or TMY3 file, or synthetic.",
    )
    synthetic: Synthetic = Synthetic()

    @field_validator("timezone")
    @classmethod
    def _known_zone(cls, value: str) -> str:
        if not is_timezone(value):
            raise ValueError(
                f"unknown timezone {value!r}: use an IANA name such as 'America/New_York'"
            )
        return value


Lever = Literal["power_cap", "clock_lock", "power_smoothing", "burn_on_stop", "energy_storage"]


class Gpu(Section):
    """One GPU model, from the catalogue (``presets/gpus.toml``)."""

    name: str = Field(max_length=200, description="Catalogue name.")
    # bounds: a board draws watts to a few kilowatts (GB300: 1.4 kW) and computes up to 10^17 FLOP/s
    tdp: float = Field(ge=10, le=10e3, description="Board power limit (TDP). [W]")
    idle: float = Field(ge=1, le=10e3, description="Board power with no work. [W]")
    stalled: float = Field(
        ge=1, le=10e3, description="Board power spinning in a blocked collective or barrier. [W]"
    )
    peak_flops: float = Field(ge=1e9, le=1e18, description="Dense BF16 peak. [FLOP/s]")
    power_cap_min: float = Field(ge=1, le=10e3, description="Lowest settable power cap. [W]")
    levers: list[Lever] = Field(description="Power levers the hardware has.")
    cooling: Literal["air", "liquid"] = Field(description="How the GPU sheds its heat.")
    thermal_resistance: float = Field(
        ge=1e-4, le=1.0, description="Die to air inlet (air) or to coolant supply (liquid). [K/W]"
    )
    thermal_tau: Duration = Field(
        60.0,
        ge=0,
        le=HOUR,
        description="Time constant of die and heat sink (or cold plate) [A]. [s]",
    )
    leakage_ref: float = Field(ge=0, le=10e3, description="Leakage power at temp_ref. [W]")
    temp_ref: float = Field(
        ge=0, le=150, description="Die temperature of the reference clock. [°C]"
    )
    leakage_coefficient: float = Field(
        ge=0, le=1.0, description="Relative growth of leakage per kelvin (calibrated). [1/K]"
    )
    memory: float | None = Field(
        None,
        gt=0,
        le=1e5,
        description="High-bandwidth memory a GPU holds (vendors' datasheets); with it, a job "
        "whose training state does not fit its GPUs is warned of. [GB]",
    )
    source: Text = Field("", description="Where the numbers come from.")

    @model_validator(mode="after")
    def _ordered(self) -> Gpu:
        if not self.idle <= self.stalled <= self.tdp:
            raise ValueError(
                f"GPU power levels must satisfy idle <= stalled <= tdp, got idle {self.idle} W, "
                f"stalled {self.stalled} W, tdp {self.tdp} W"
            )
        return self

    def leakage(self, temp_die: Any) -> Any:
        """Leakage at a die temperature [°C], by its calibrated law. [W]"""
        return leakage_power(temp_die, self.leakage_ref, self.temp_ref, self.leakage_coefficient)


class Psu(Section):
    """Server power supplies: efficiency versus load, per node."""

    capacity: float = Field(
        ge=100, le=1e6, description="Installed PSU capacity per node, load-sharing. [W]"
    )
    load: list[float] = Field(description="Load points, fraction of capacity. [1]")
    efficiency: list[float] = Field(description="Efficiency at each load point. [1]")
    power_factor: list[float] = Field(
        description="Input power factor at each load point, leading (capacitive). [1]"
    )
    source: Text = ""

    @model_validator(mode="after")
    def _curve(self) -> Psu:
        _check_curve("psu.load", self.load, "psu.efficiency", self.efficiency)
        _check_curve("psu.load", self.load, "psu.power_factor", self.power_factor)
        return self

    def input_power(self, output: Any) -> Any:
        """AC input of a node's supplies delivering ``output`` [W] DC, by their curve. [W]"""
        return electrical.input_power(
            output, self.capacity, np.array(self.load), np.array(self.efficiency)
        )


def _check_curve(load_key: str, load: list[float], eff_key: str, efficiency: list[float]) -> None:
    """An efficiency (or power-factor) curve: matching lengths, 3 to 100 increasing loads in
    (0.001, 10], each value in [0.5, 1] (no supply or UPS in service does worse)."""
    if len(load) != len(efficiency) or not 3 <= len(load) <= 100:
        raise ValueError(f"{load_key} and {eff_key} need the same length, 3 to 100 points")
    if not all(0.5 <= e <= 1 for e in efficiency) or not all(1e-3 <= x <= 10 for x in load):
        raise ValueError(f"{eff_key} must lie in [0.5, 1] and {load_key} in [0.001, 10]")
    if any(b <= a for a, b in zip(load, load[1:], strict=False)):
        raise ValueError(f"{load_key} must increase, got {load}")


class Fans(Section):
    """Server fans: part of the rest-of-node power, faster when the inlet is warm (cube law)."""

    power: float = Field(
        ge=0, le=1e5, description="Fan power at nominal speed, in rest_power_active. [W/node]"
    )
    temp_nominal: float = Field(
        ge=-20, le=60, description="Inlet temperature up to which fans run nominal. [°C]"
    )
    slope: float = Field(ge=0, le=1, description="Speed increase per kelvin above it. [1/K]")
    speed_max: float = Field(ge=1, le=5, description="Top speed, relative to nominal. [1]")


class Cluster(Section):
    gpu: str = Field(description="GPU model, a name in the GPU catalogue.")
    n_gpus: int = Field(
        gt=0,
        le=MAX_GPUS,
        description="GPUs in the hall, one node at least: the job takes the largest share its "
        "layout fits (whole replicas, whole nodes) and the rest wait idle in the hall "
        "(a loaded scenario's cluster.idle_gpus); once loaded, the job's "
        "(docs/model/workload.md).",
    )
    gpus_per_node: int = Field(
        8, gt=0, le=1024, description="GPUs per server (or rack domain) [P, nvidia_h100]."
    )
    rest_power_active: float = Field(
        ge=0,
        le=1e6,
        description="Rest of the node (CPUs, memory, NICs, fans) with the job up. [W/node]",
    )
    rest_power_idle: float = Field(
        ge=0, le=1e6, description="Rest of the node with no job. [W/node]"
    )
    network_power: float = Field(
        ge=0,
        le=10e3,
        description="Scale-out fabric and optics, counted when the job spans more than one node "
        "(one node's GPUs talk over NVLink inside it). [W/GPU]",
    )
    storage_power_per_gpu: float = Field(
        ge=0, le=10e3, description="Storage serving the job, per GPU of the job. [W/GPU]"
    )
    psu: Psu
    fans: Fans
    temp_spread: float = Field(
        ge=0,
        le=30,
        description="Std. dev. of die temperature across GPUs (hot spots, position). [K]",
    )

    @model_validator(mode="before")
    @classmethod
    def _renamed_storage(cls, data: Any) -> Any:
        """``storage_power`` was a constant in MW whatever the cluster; read as W per GPU it
        would be wrong by a factor of a million over the GPU count, so it is refused."""
        if isinstance(data, dict) and "storage_power" in data:
            raise ValueError(
                "cluster.storage_power (a constant in MW) is now cluster.storage_power_per_gpu, "
                "in W per GPU of the job: give storage_power × 1e6 / n_gpus (0.25 MW on 16,384 "
                "GPUs is 15.3 W/GPU) and remove storage_power"
            )
        return data

    # GPUs of the hall outside the job, idle (Scenario._fit_job sets them) [1]
    _idle_gpus: int = PrivateAttr(0)

    @model_validator(mode="after")
    def _one_node(self) -> Cluster:
        if self.n_gpus < self.gpus_per_node:
            raise ValueError(
                f"cluster.n_gpus = {self.n_gpus:,} is less than one node of "
                f"{self.gpus_per_node} GPUs: a server comes whole; give at least "
                f"{self.gpus_per_node} GPUs, or a smaller server (cluster.gpus_per_node = "
                f"{self.n_gpus})"
            )
        return self

    @property
    def n_nodes(self) -> int:
        """Nodes of the job (whole nodes once loaded). [1]"""
        return self.n_gpus // self.gpus_per_node

    @property
    def idle_gpus(self) -> int:
        """GPUs of the hall outside the job, on and idle. [1]"""
        return self._idle_gpus

    @property
    def hall_gpus(self) -> int:
        """GPUs in the hall: the job's and the idle ones (the nameplate's). [1]"""
        return self.n_gpus + self._idle_gpus

    @property
    def network_load(self) -> float:
        """Scale-out network of the job: none on one node. [W]"""
        return self.n_gpus * self.network_power if self.n_nodes > 1 else 0.0

    @property
    def storage_load(self) -> float:
        """Storage serving the job. [W]"""
        return self.n_gpus * self.storage_power_per_gpu


class Phase(Section):
    name: str = Field(max_length=200)
    kind: Literal["compute", "communication", "other"]
    share: float = Field(ge=1e-6, le=1, description="Share of the step time. [1]")
    power: float | None = Field(
        None, ge=1e-3, le=1.2, description="Power of an 'other' phase, fraction of TDP. [1]"
    )


# Bytes of training state a parameter in mixed-precision Adam: BF16 weights and gradients (2 + 2)
# and FP32 master weights, momentum and variance (12) [P, rajbhandari]
TRAINING_STATE_BYTES = 16.0
WEIGHT_BYTES = 2.0  # BF16 weights alone: what a job training adapters (LoRA) must hold

# a training step, given or derived from the model (simulate.derive holds a derived one to it)
STEP_TIME_BOUNDS = (1e-3, HOUR)  # [s]


class Parallelism(Section):
    """The job's parallel layout. The step time and the phases' shares hold where they were
    measured, ``reference_gpus`` at a global batch of ``reference_tokens``; the layout carries
    them to ``cluster.n_gpus`` and ``workload.tokens_per_step`` (docs/model/workload.md)."""

    reference_gpus: int = Field(
        gt=0,
        le=MAX_GPUS,
        description="GPUs at which workload.mfu (or step_time) and the phases' shares hold. [1]",
    )
    reference_tokens: float | None = Field(
        None,
        ge=1,
        le=1e12,
        description="Global batch at which they hold; none: workload.tokens_per_step. [token]",
    )
    tp: int = Field(gt=0, le=MAX_GPUS, description="Tensor-parallel degree. [1]")
    pp: int = Field(gt=0, le=MAX_GPUS, description="Pipeline-parallel stages. [1]")
    cp: int = Field(
        1,
        gt=0,
        le=MAX_GPUS,
        description="Context-parallel degree; 1, none, as Llama 3 at 8K sequences [P, llama3]. [1]",
    )
    virtual_stages: int = Field(
        1,
        gt=0,
        le=1024,
        description="Model chunks per pipeline stage (interleaved schedule); 1, plain 1F1B "
        "[S, narayanan]. [1]",
    )
    microbatch_tokens: float = Field(
        ge=1, le=1e12, description="Tokens in a micro-batch of one data-parallel replica. [token]"
    )
    bandwidth: float = Field(
        50.0,
        gt=0,
        le=1e5,
        description="Scale-out bandwidth per GPU, each way: 400 Gb/s [P, llama3]. [GB/s]",
    )
    bytes_per_param: float = Field(
        6.0,
        ge=0,
        le=64,
        description="Bytes a parameter moves in the data-parallel collectives a step: FP32 "
        "gradients reduce-scattered and BF16 weights all-gathered [P, llama3]. [B]",
    )
    overlap: float = Field(
        0.9,
        ge=0,
        le=1,
        description="Share of the data-parallel communication hidden behind the work: FSDP "
        "prefetches and reduces asynchronously [P, llama3]; 0.9 [A], range 0.5-1. [1]",
    )
    # the step's wait at a barrier, sync_time + sync_per_doubling · log2(cluster.n_gpus)
    # (powermodel.models.workload.sync_time): none by default, as Llama 3's 8K and 16K rows leave
    # no room for it (with NeMo LoRA's, the 8K row's MFU would be 44.7 % against the published
    # 43 % [P, llama3 Table 4]); NeMo's Llama 2 70B LoRA on H100 measured 0.0641 s and 0.0204 s
    # [C, mlperf_training_v4_smc] (docs/model/workload.md, "The wait at the barrier")
    sync_time: float = Field(
        0.0,
        ge=0,
        le=60,
        description="A step's wait at a barrier on one GPU, at sync_power, however few tokens "
        "a GPU computes; none, as Llama 3's rows leave no room for it [D, llama3], 0.0641 s "
        "measured for NeMo's LoRA on H100 [C, mlperf_training_v4_smc]. [s]",
    )
    sync_per_doubling: float = Field(
        0.0,
        ge=0,
        le=60,
        description="What each doubling of the job's GPUs adds to the wait at the barrier; none "
        "[D, llama3], 0.0204 s measured for NeMo's LoRA on H100 [C, mlperf_training_v4_smc]. [s]",
    )
    sync_power: float | None = Field(
        None,
        ge=0,
        le=1.2,
        description="GPU power while waiting at the barrier, fraction of TDP; none: the GPU's "
        "stalled level; 0.153 (107 W) measured for NeMo's LoRA on H100 "
        "[C, mlperf_training_v4_smc]. [1]",
    )


class Variation(Section):
    """Step-to-step variation of a training job: each step's length and running level drawn
    around the mean (stragglers, data loading, collectives' timing [S, lin_stragglers]), with an
    optional periodic evaluation. ``workload.step_time`` and the running levels stay the means
    of a training step; evaluations and stragglers add their time, and train no tokens while
    they last: see docs/model/workload.md."""

    distribution: Literal["lognormal", "gamma"] = Field(
        "lognormal",
        description="Distribution of a step's length, mean one step (lognormal or gamma [A]).",
    )
    step_cv: float = Field(
        0.02,
        ge=0,
        le=1,
        description="Coefficient of variation of a step's length [A] (0.005-0.1). [1]",
    )
    straggler_probability: float = Field(
        0.0,
        ge=0,
        le=0.5,
        description="Share of steps a straggler delays; none by default [A] (0-0.05). [1]",
    )
    straggler_delay: float = Field(
        0.5,
        ge=0,
        le=100,
        description="What a straggler adds to its step, in mean steps [A] (0.1-3). [1]",
    )
    level_cv: float = Field(
        0.01,
        ge=0,
        le=0.5,
        description="Coefficient of variation of a step's running level (its scale on the "
        "GPU power) [A] (0-0.05). [1]",
    )
    evaluation_every: int | None = Field(
        None,
        ge=2,
        le=10**9,
        description="Steps from one evaluation to the next; none by default [A] (100-10,000). [1]",
    )
    evaluation_length: float = Field(
        10.0,
        gt=0,
        le=1e4,
        description="Length of an evaluation, in mean steps [A] (1-100). [1]",
    )
    evaluation_level: float = Field(
        0.7,
        gt=0,
        le=2,
        description="Running level during an evaluation, a scale on the GPU power (forward "
        "passes only) [A] (0.5-1). [1]",
    )

    @model_validator(mode="after")
    def _training_remains(self) -> Variation:
        share = variation.event_share(
            self.straggler_probability,
            self.straggler_delay,
            self.evaluation_every,
            self.evaluation_length,
        )
        if share > variation.MOST_EVENT_SHARE:
            raise ValueError(
                "evaluations and stragglers would add "
                f"{share:.3g} mean steps to each training step (evaluation_length / "
                "evaluation_every + straggler_probability * straggler_delay), more than "
                f"{variation.MOST_EVENT_SHARE:g}: lengthen evaluation_every or shorten "
                "evaluation_length, straggler_probability or straggler_delay"
            )
        return self


class Workload(Section):
    step_time: Duration | None = Field(
        None,
        ge=STEP_TIME_BOUNDS[0],
        le=STEP_TIME_BOUNDS[1],
        description="Time of one training step (with a parallelism table, at its "
        "reference_gpus); derived from the model when absent. [s]",
    )
    # bounds: a thousand times the largest models and batches trained (405e9 parameters and
    # 16M tokens a step [P, llama3] Table 4)
    model_params: float = Field(ge=1e6, le=1e16, description="Model parameters. [1]")
    tokens_per_step: float = Field(ge=1, le=1e12, description="Global batch. [token]")
    mfu: float = Field(ge=1e-3, le=1, description="Model FLOPs utilisation. [1]")
    compute_power: float | None = Field(
        None,
        ge=1e-3,
        le=1.2,
        description="GPU power in compute phases, fraction of TDP; by default from the model "
        "size, 0.64 at 1e9 parameters to 1 (the power cap) at 405e9 [P, choukse; D, "
        "mlperf_training_v4] (powermodel.models.workload.running_level). [1]",
    )
    trough_depth: float = Field(
        ge=0, lt=1, description="Communication-phase power below compute power, fraction. [1]"
    )
    phases: list[Phase] = Field(min_length=1, max_length=100)
    edge_rate: float = Field(
        ge=1e-3, le=1e4, description="Rate of power edges, TDP per second. [1/s]"
    )
    offset_spread: Duration = Field(
        0.0,
        ge=0,
        le=HOUR,
        description="Spread of group start offsets (pipeline schedule), uniform; none, the worst "
        "case [A]. [s]",
    )
    jitter: Duration = Field(
        0.0,
        ge=0,
        le=HOUR,
        description="Random offset of groups, std. dev.; none, the worst case [A]. [s]",
    )
    startup_ramp: Duration = Field(
        ge=0, le=DAY, description="Ramp from loaded to running power at every (re)start. [s]"
    )
    # Start-up: processes launch, form their communicators and build the model holding GPU
    # memory, before the checkpoint is read: minutes at production scale [P, bootseer].
    startup_time: Duration = Field(
        120.0,
        ge=0,
        le=DAY,
        description="Launch to the checkpoint read at every (re)start: processes start, "
        "communicators form, the model is built; 2 min [A], range 20 s-10 min [P, bootseer]. [s]",
    )
    startup_cv: float = Field(
        0.0,
        ge=0,
        le=3.0,
        description="Spread of the start-ups' lengths: each start-up (the job's first, and every "
        "restart after a failure, a planned stop or a grid crash) lasts startup_time times a "
        "lognormal factor of mean 1 with this coefficient of variation, from a seeded stream of "
        "its own (the failures and stalls drawn stay as they were); 0, every start-up "
        "startup_time long [A]. A failed replica's restart (reliability.scope = 'replica') and "
        "a flexibility pause's keep startup_time. `powermodel fit` writes the spread its "
        "trace's start-ups show [C]. [1]",
    )
    startup_power: float = Field(
        0.15,
        ge=0,
        le=1.2,
        description="GPU power from launch to the first iteration (memory held, data and "
        "checkpoint loading, no training kernels), fraction of TDP; 105 W on the H100, between "
        "its idle and stalled levels [A]. [1]",
    )
    parallelism: Parallelism | None = None

    @field_validator("startup_ramp")
    @classmethod
    def _ramp(cls, value: float) -> float:
        if 0 < value < 1e-3:
            raise ValueError("a start-up ramp is 0 (a step) or at least 1ms")
        return value

    variation: Variation | None = None
    notes: Text = ""

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


class Layout(NamedTuple):
    """A step of the parallel layout at ``cluster.n_gpus`` (:meth:`Scenario.layout`)."""

    step_time: float  # before a clock lock [s]
    shares: np.ndarray  # of each phase [1]
    dp: int  # data-parallel replicas [1]
    microbatches: float  # a replica runs each step [1]
    times: StepTimes  # work, bubble, exposed communication [s]
    inner: float  # low-power time inside the work [s]
    wait: np.ndarray  # share of the step each phase spends waiting at the barrier [1]


def _fitting_layout(par: Parallelism, gpus: int) -> tuple[int, int, int]:
    """The largest layout within ``par``'s degrees that ``gpus`` GPUs hold, as (tp, pp, cp):
    tensor parallelism first (inside a node), then pipeline stages, then context
    parallelism."""
    tp = math.gcd(par.tp, gpus)
    pp = math.gcd(par.pp, gpus // tp)
    cp = math.gcd(par.cp, gpus // tp // pp)
    return tp, pp, cp


def _replicas(par: Parallelism, gpus: int, key: str, tokens: float, per_gpu: float) -> int:
    """Data-parallel replicas of ``gpus`` GPUs, refused unless whole: the job runs on whole
    replicas, and GPUs left over are not in it (docs/model/workload.md, "parallel layout").
    A refusal names a fix that runs: where the global batch ``tokens`` would give a replica less
    than one micro-batch, with a batch of ``per_gpu`` tokens a GPU (the reference's), at least
    one micro-batch a replica."""
    size = par.tp * par.pp * par.cp

    def batch(n: int, replicas: int) -> str:
        tokens = max(per_gpu * n, replicas * par.microbatch_tokens)
        return f"workload.tokens_per_step = {tokens:,.0f}"

    if gpus < size:
        tp, pp, cp = _fitting_layout(par, gpus)
        fits = gpus // (tp * pp * cp)
        raise ScenarioError(
            f"{key} = {gpus:,} GPUs is less than one data-parallel replica of tp·pp·cp = "
            f"{par.tp}·{par.pp}·{par.cp} = {size:,} GPUs: take at least {size:,} GPUs, or give "
            f"a layout that fits, e.g. workload.parallelism.tp = {tp}, pp = {pp}"
            + (f", cp = {cp}" if par.cp > 1 else "")
            + f" ({fits:,} replica{'s' if fits > 1 else ''} of {tp * pp * cp:,} GPUs), with "
            f"{batch(gpus, fits)} (the batch in proportion)"
        )
    if gpus % size:
        below, above = gpus // size, gpus // size + 1
        short = below * par.microbatch_tokens > tokens  # a replica under a micro-batch
        raise ScenarioError(
            f"{key} = {gpus:,} GPUs is not a whole number of data-parallel replicas of "
            f"tp·pp·cp = {par.tp}·{par.pp}·{par.cp} = {size:,} GPUs: take "
            f"{below * size:,} or {above * size:,} GPUs (a cluster's spare GPUs are not in the "
            "job)"
            + (f", with {batch(below * size, below)}" if short else "")
            + ", or change workload.parallelism's tp, pp or cp"
        )
    return gpus // size


class Checkpoint(Section):
    interval: Duration | Literal["young-daly"] = Field(
        "young-daly",
        description="Training time between checkpoints, or Young/Daly's optimum [P, young; daly].",
    )
    size: float = Field(ge=1e-3, le=1e9, description="Checkpoint size, whole job. [GB]")
    # bandwidths from 1 MB/s (a disk) to 10 PB/s: a stall or reload is then a finite time,
    # which the run bounds (MAX_RECOVERY)
    write_bandwidth: float = Field(ge=1e-3, le=1e7, description="Storage write bandwidth. [GB/s]")
    read_bandwidth: float = Field(
        ge=1e-3, le=1e7, description="Storage read bandwidth (restart). [GB/s]"
    )
    blocking_time: Duration | None = Field(
        None,
        ge=0,
        le=DAY,
        description="Stall of a blocking checkpoint; size / write_bandwidth if absent. [s]",
    )
    blocking_cv: float = Field(
        0.0,
        ge=0,
        le=3.0,
        description="Spread of the stalls' lengths: each checkpoint's stall (blocking_time, or "
        "async_blocking_time) drawn from a lognormal of that mean with this coefficient of "
        "variation, from the job's own seeded stream; 0, every stall the same [A]. One H100 "
        "run's stalls measured 16 to 108 s; `powermodel fit` writes the spread its trace's "
        "stalls show [C]. [1]",
    )
    mode: Literal["blocking", "async"] = "blocking"
    async_blocking_time: Duration = Field(
        1.0,
        ge=1e-3,
        le=HOUR,
        description="Stall of an async checkpoint (copy to host memory) [A]. [s]",
    )
    background_power: float = Field(
        8.0,
        ge=0,
        le=1e4,
        description="Power an async checkpoint's background write adds while the GPUs train: "
        "host CPUs and memory streaming the snapshot from pinned memory, about 50 W a node of "
        "8 GPUs, and the storage servers and fabric taking it, about 20 J/GB at 2 TB/s over "
        "16,384 GPUs, 2.4 W a GPU [A] (range 2-20). [W/GPU]",
    )

    @field_validator("interval")
    @classmethod
    def _positive(cls, value: float | str) -> float | str:
        if isinstance(value, float) and not 0 < value <= MAX_RECOVERY:
            raise ValueError(
                "the checkpoint interval must be positive and at most "
                f"{format_duration(MAX_RECOVERY)} (or 'young-daly')"
            )
        return value

    @model_validator(mode="after")
    def _times(self) -> Checkpoint:
        """The write and the reload the size and bandwidths imply are bounded as the times
        given directly are."""
        write = self.size / self.write_bandwidth
        if self.blocking_time is None and write > DAY:
            raise ValueError(
                f"writing {self.size:g} GB at {self.write_bandwidth:g} GB/s takes "
                f"{write / 3600:.3g} h, more than a day: raise write_bandwidth or give "
                "blocking_time"
            )
        read = self.size / self.read_bandwidth
        if read > MAX_RECOVERY:
            raise ValueError(
                f"reloading {self.size:g} GB at {self.read_bandwidth:g} GB/s takes "
                f"{read / 86400:.3g} days, more than {format_duration(MAX_RECOVERY)}: raise "
                "read_bandwidth"
            )
        return self

    @property
    def write_time(self) -> float:
        """Time to write a checkpoint, which a blocking one stalls the job for:
        ``blocking_time``, or else ``size / write_bandwidth``. [s]"""
        return (
            self.blocking_time
            if self.blocking_time is not None
            else self.size / self.write_bandwidth
        )


class Cause(Section):
    name: str = Field(max_length=200)
    category: str = Field(max_length=200)
    count: float = Field(ge=0, le=1e6, description="Interruptions in the reference record. [1]")
    stall_time: Duration | None = Field(
        None, ge=0, le=MAX_RECOVERY, description="Overrides reliability.stall_time."
    )
    restart_time: Duration | None = Field(
        None, ge=0, le=MAX_RECOVERY, description="Overrides reliability.restart_time."
    )


class Reliability(Section):
    causes: list[Cause] = Field(
        max_length=100, description="Unexpected interruptions by root cause."
    )
    planned_count: float = Field(
        ge=0, le=1e6, description="Planned interruptions in the record. [1]"
    )
    exposure_gpu_hours: float = Field(
        ge=1.0,
        le=1e15,
        description="Running GPU-hours the counts were observed over (calibrated). [GPU·h]",
    )
    # a thousand times the reference rates is a failure every few seconds on 16K GPUs
    rate_scale: float = Field(
        1.0, ge=0, le=1000, description="Multiplier on every failure rate. [1]"
    )
    stall_time: Duration | None = Field(
        None,
        ge=0,
        le=MAX_RECOVERY,
        description="Survivors spin in blocked collectives until the job is torn down; by "
        "default from the layout: 5 s on one node, the launcher's worker check "
        "[P, nvidia_resiliency], 60 s across nodes, waiting for the collectives to fail [A] "
        "(powermodel.models.events.teardown_time). [s]",
    )
    restart_time: Duration = Field(
        ge=0, le=MAX_RECOVERY, description="Detection, rescheduling and node swap, GPUs idle. [s]"
    )
    planned_downtime: Duration = Field(
        ge=0, le=MAX_RECOVERY, description="GPUs idle in planned maintenance. [s]"
    )
    spare_nodes: int = Field(
        0,
        ge=0,
        le=MAX_GPUS,
        description="Hot spare nodes kept on, idle, to take a failed node's place; they draw "
        "their idle power all the time [A]. [1]",
    )
    spare_swap_time: Duration | None = Field(
        None,
        ge=0,
        le=MAX_RECOVERY,
        description="With spare nodes: the time a hot spare takes to replace a failed node, "
        "instead of restart_time's rescheduling and node swap [A] (seconds to minutes). [s]",
    )
    scope: Literal["job", "replica"] = Field(
        "job",
        description="What an unexpected interruption stops: the whole job, which restarts from "
        "its last checkpoint (synchronous training), or only the data-parallel replica holding "
        "the failed node, which reloads from a peer and rejoins while the others go on "
        "(fault-tolerant HSDP [P, ft_hsdp]).",
    )
    replica_gpus: int | None = Field(
        None,
        gt=0,
        le=MAX_GPUS,
        description="GPUs of a replica, what a failure stops with scope 'replica' (whole "
        "nodes); by default one data-parallel rank of workload.parallelism, tp·pp·cp GPUs. [1]",
    )
    survivor_stall: Duration = Field(
        180.0,
        ge=0,
        le=MAX_RECOVERY,
        description="With scope 'replica', how long the other replicas stall at a failure "
        "before they go on without the failed one: 3 min a failure at O(100K) GPUs, against 10 "
        "for a whole-job restart [P, ft_hsdp]. [s]",
    )
    notes: Text = ""

    @model_validator(mode="after")
    def _spares(self) -> Reliability:
        if self.spare_swap_time is not None and self.spare_nodes == 0:
            raise ValueError(
                "reliability.spare_swap_time needs hot spares: give reliability.spare_nodes"
            )
        return self


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
    plant = _plant_type(raw.get("type"))
    if plant is None:
        return raw  # validation names the missing or unknown type
    others = {k for m in PLANT_TYPES for k in m.model_fields} - set(plant.model_fields)
    stray = [k for k in raw if k in others and _SAVED_WITH_EVERY_PLANT.get(k, ...) != raw[k]]
    if stray:
        takers = [_tag(m) for m in PLANT_TYPES if stray[0] in m.model_fields]
        raise ValueError(
            f"{stray[0]} is a key of {' or '.join(takers)} plants, not of this "
            f"{raw['type']} one: remove it, or choose such a plant with cooling.plant"
        )
    return {k: v for k, v in raw.items() if k not in others}


def _tag(model: type[BaseModel], key: str = "type") -> str:
    """The value of ``key`` (a plant's ``type``) a tagged union's member is chosen by."""
    return get_args(model.model_fields[key].annotation)[0]


def _plant_type(tag: Any) -> type[BaseModel] | None:
    """The plant model a ``cooling.type`` chooses; None for no known type."""
    return next((m for m in PLANT_TYPES if _tag(m) == tag), None)


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
        _check_curve(
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
                    f"unknown immunity curve {value!r}{_did_you_mean(value, curves)}; the "
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


# The sections a campus workload may set for itself; the rest (simulation, site, cooling,
# electrical, grid, prices) is the site's, shared by every workload
JOB_SECTIONS = ("cluster", "gpu", "workload", "checkpoint", "reliability", "mitigation")
MAX_WORKLOADS = 32


class Inference(Section):
    """An inference fleet's demand and power (powermodel.models.inference)."""

    peak_hour: float = Field(
        14.0, ge=0, lt=24, description="Local hour of the daily peak of demand [A]. [h]"
    )
    base_level: float = Field(
        0.35, ge=0, le=1, description="Utilisation at the daily trough [A] (0.2-0.5). [1]"
    )
    peak_level: float = Field(
        0.85, ge=0, le=1, description="Utilisation at the daily peak [A] (0.6-1). [1]"
    )
    weekend_level: float = Field(
        0.8, ge=0, le=1.5, description="Saturdays' and Sundays' demand, times a weekday's [A]. [1]"
    )
    hourly: list[Annotated[float, Field(ge=0, le=1)]] | None = Field(
        None,
        min_length=24,
        max_length=168,
        description="Measured mean utilisation each local hour: 24 values (a day) or 168 (a week "
        "from Monday 00:00); replaces the curve above. [1]",
    )
    variation_cv: float = Field(
        0.05, ge=0, le=1, description="Short-term variation of utilisation, CV [A] (0-0.2). [1]"
    )
    variation_time: Duration = Field(
        60.0, ge=0, le=DAY, description="Correlation time of that variation [A] (10 s-10 min). [s]"
    )
    variation_step: Duration = Field(
        1.0,
        ge=1e-3,
        le=HOUR,
        description="Step of the utilisation series (requests in batches) [A]. [s]",
    )
    busy_power: float = Field(
        0.75,
        gt=0,
        le=1.2,
        description="GPU power at a full batch and the nominal clock, fraction of TDP: "
        "inference rarely holds the GPU at its cap [S, polca]; 0.75 [A] (0.6-0.9). [1]",
    )
    clock: float = Field(
        1.0,
        ge=0.3,
        le=1,
        description="Locked clock, fraction of nominal: serving the same demand takes longer "
        "(utilisation rises by 1/clock) at a clock-cubed dynamic power [A]. [1]",
    )
    token_rate: float = Field(
        2500.0,
        gt=0,
        le=1e7,
        description="Tokens a GPU serves each second at a full batch and the nominal clock [A]. "
        "[token/s]",
    )

    @model_validator(mode="after")
    def _levels(self) -> Inference:
        if self.hourly is not None and len(self.hourly) not in (24, 168):
            raise ValueError(
                f"inference.hourly needs 24 values (a day) or 168 (a week), got {len(self.hourly)}"
            )
        if self.base_level > self.peak_level:
            raise ValueError(
                f"inference.base_level ({self.base_level:g}) is above peak_level "
                f"({self.peak_level:g}): the trough is the lower"
            )
        return self


class FlexEvent(Section):
    """A demand-response event: targeted workloads shed a share of their power for a while, by
    a lever they have; described as EPRI DCFlex does, by magnitude, notice and duration
    [P, dcflex]."""

    name: Label = "event"
    start: datetime = Field(description="When the reduction starts, UTC without an offset.")
    duration: Duration = Field(gt=0, le=30 * DAY, description="How long it holds. [s]")
    notice: Duration = Field(
        0.0,
        ge=0,
        le=30 * DAY,
        description="Time between the request and the start; none by default [A]. [s]",
    )
    workloads: list[Label] = Field(
        default_factory=list,
        max_length=MAX_WORKLOADS,
        description="The campus workloads it targets, by name; none: every workload (or the "
        "scenario's one job).",
    )
    lever: Literal["pause", "clock", "shift"] = Field(
        description="pause: a training job checkpoints and stops, an inference fleet stops "
        "serving, until the end, then restarts; clock: the GPUs' clock is locked as low as the "
        "reduction asks; shift: an inference fleet defers that share of its demand until after."
    )
    reduction: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="Share of the targeted workloads' IT power to shed (a 256-GPU field test "
        "held 0.25 for 3 h [P, colangelo_flex]); a pause sheds what stopping does. [1]",
    )

    @field_validator("start")
    @classmethod
    def _naive_utc(cls, value: datetime) -> datetime:
        return Simulation._naive_utc(value)

    @model_validator(mode="after")
    def _reduction(self) -> FlexEvent:
        if self.lever == "pause" and self.reduction is not None:
            raise ValueError(
                f"flexibility {self.name!r}: a pause sheds what stopping sheds; remove reduction "
                "(or use the lever 'clock' or 'shift' for a chosen share)"
            )
        if self.lever != "pause" and self.reduction is None:
            raise ValueError(
                f"flexibility {self.name!r}: the lever {self.lever!r} needs the share of power "
                "to shed: give reduction (0-1)"
            )
        return self


# The sections a campus hall may set for itself: its cooling plant and electrical chain
HALL_SECTIONS = ("cooling", "electrical")
MAX_HALLS = 16


class Hall(Section):
    """A hall of a campus: its own cooling plant and electrical chain (the scenario's, with its
    keys), holding the workloads placed in it."""

    name: Label = Field(description="The hall's name.")
    set: dict[str, Any] = Field(
        default_factory=dict,
        max_length=200,
        description="The hall's own keys, dotted, over the scenario's cooling and electrical "
        "sections: {'cooling.plant' = 'liquid-dry-cooler'}.",
    )


class Part(Section):
    """One workload of a campus: the scenario's job with its own keys."""

    name: Label = Field(description="The workload's name.")
    hall: Label | None = Field(None, description="The hall it runs in; by default the first.")
    kind: Literal["training", "inference"] = Field(
        "training",
        description="A training job (the scenario's workload, checkpoints, failures) or an "
        "inference fleet on the workload's cluster (its utilisation follows demand).",
    )
    inference: Inference | None = Field(
        None, description="The fleet's demand and power, with kind 'inference'."
    )
    set: dict[str, Any] = Field(
        default_factory=dict,
        max_length=200,
        description="The workload's own keys, dotted, over the scenario's job sections (cluster, "
        "gpu, workload, checkpoint, reliability, mitigation): {'cluster.n_gpus' = 65536}.",
    )


def _flat(keys: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A ``set`` table as dotted keys, nested tables walked and merged key by key (``{"mitigation":
    {"clock_lock": 0.8}}`` sets ``mitigation.clock_lock`` alone, as the dotted form does); a key
    given twice, the later wins."""
    out: dict[str, Any] = {}
    for key, value in keys.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(_flat(value, f"{path}."))
        else:
            out[path] = value
    return out


def _dotted(keys: dict[str, Any]) -> list[str]:
    """The dotted keys a ``set`` table reaches (:func:`_flat`)."""
    return list(_flat(keys))


class Campus(Section):
    """Several workloads behind one connection: each is the scenario's job with its own keys
    (its GPUs, layout, checkpoints, failures), all sharing the site's weather, cooling plant,
    electrical chain and site batteries."""

    aligned: bool = Field(
        False,
        description="Draw every workload's failures, steps and start from the same streams, "
        "starting together (the worst case: identical jobs swing exactly in phase); by default "
        "each draws its own and starts at its own phase.",
    )
    workloads: list[Part] = Field(min_length=1, max_length=MAX_WORKLOADS)
    halls: list[Hall] = Field(
        default_factory=list,
        max_length=MAX_HALLS,
        description="Halls with their own cooling plant and electrical chain; none: one hall, "
        "the scenario's.",
    )

    @model_validator(mode="after")
    def _names(self) -> Campus:
        for what, items in (("workloads", self.workloads), ("halls", self.halls)):
            names = [w.name for w in items]
            twice = sorted({n for n in names if names.count(n) > 1})
            if twice:
                raise ValueError(f"campus.{what}: each name once, {', '.join(twice)} repeats")
        halls = [h.name for h in self.halls]
        for h in self.halls:
            for key in _dotted(h.set):
                if key == "cooling.dt":
                    raise ValueError(
                        f"campus.halls {h.name!r}: cooling.dt is the site's plant step, the "
                        "same for every hall: set it in [cooling]"
                    )
                if key.split(".")[0] not in HALL_SECTIONS:
                    raise ValueError(
                        f"campus.halls {h.name!r}: {key} is not a hall's; a hall sets keys of "
                        f"{', '.join(HALL_SECTIONS)} (a workload's go in its own set)"
                    )
        if not any(w.kind == "training" for w in self.workloads):
            raise ValueError(
                "campus.workloads: a campus needs a training workload at least (kind "
                "'training'): its job's step, states and plant state are the ones shown"
            )
        for w in self.workloads:
            if w.hall is not None and w.hall not in halls:
                raise ValueError(
                    f"campus.workloads {w.name!r}: no hall {w.hall!r}"
                    + (f"; the halls are {', '.join(halls)}" if halls else " (campus.halls)")
                )
        empty = [h for h in halls if not any(self.hall_of(w) == h for w in self.workloads)]
        if empty:
            raise ValueError(f"campus.halls {', '.join(empty)}: no workload runs there")
        for w in self.workloads:
            if w.kind == "inference" and w.inference is None:
                w.inference = Inference()
            if w.kind == "training" and w.inference is not None:
                raise ValueError(
                    f"campus.workloads {w.name!r}: an inference table needs kind 'inference'"
                )
            for key in _dotted(w.set):
                if key.split(".")[0] not in JOB_SECTIONS or key.startswith("mitigation.storage"):
                    where = (
                        "a hall's (campus.halls) or " if key.split(".")[0] in HALL_SECTIONS else ""
                    )
                    raise ValueError(
                        f"campus.workloads {w.name!r}: {key or 'an empty key'} is {where}the "
                        f"site's; a workload sets keys of {', '.join(JOB_SECTIONS)} (batteries "
                        "are the site's too)"
                    )
        return self

    def hall_of(self, part: Part) -> str | None:
        """The hall a workload runs in: its own, else the first; None without halls."""
        return part.hall or (self.halls[0].name if self.halls else None)


class Scenario(Section):
    name: str = Field("", max_length=200)
    description: Text = ""
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
    sensitivity: list[SensitivityRange] = Field([], max_length=100)
    sources: dict[Name, Annotated[str, Field(max_length=500)]] = Field(
        default_factory=dict, max_length=50, description="Citations by short key."
    )
    campus: Campus | None = None
    flexibility: list[FlexEvent] = Field([], max_length=20)
    disturbance: Disturbance | None = None
    ride_through: RideThrough | None = None
    _parts: list[Scenario] = PrivateAttr(default_factory=list)
    _halls: list[Scenario] = PrivateAttr(default_factory=list)
    # what loading chose for the user, each a line in their terms (:attr:`notes`)
    _notes: list[str] = PrivateAttr(default_factory=list)
    # what loading kept that may not be what the user meant, each a line (:attr:`warnings`)
    _warnings: list[str] = PrivateAttr(default_factory=list)
    # the values the user gave where the job's fit changed them, by dotted key (None: unset)
    _given: dict[str, Any] = PrivateAttr(default_factory=dict)

    @model_validator(mode="after")
    def _fit_job(self) -> Scenario:
        """The job the hall's ``cluster.n_gpus`` hold; the rest of the hall idle.

        The job is the largest count of whole data-parallel replicas (tp·pp·cp GPUs; with
        ``reliability.scope = "replica"``, whole replicas of ``replica_gpus`` too) in whole
        nodes within the hall. Below one replica the layout shrinks, tensor parallelism kept
        first (inside a node), then pipeline stages, then context parallelism, and the global
        batch follows the GPUs (the reference's tokens a GPU); where the batch would give a
        replica less than one micro-batch it grows the same way, as a job scaled out does
        [A]. Fewer than two replicas of a fault-tolerant job fail as one job (scope 'job').
        Every choice is a line of :attr:`notes`; :meth:`to_dict` gives the user's values back.
        """
        cl, wl, rel = self.cluster, self.workload, self.reliability
        par = wl.parallelism
        hall, per_node = cl.n_gpus, cl.gpus_per_node
        given: dict[str, Any] = {}
        notes: list[str] = []
        unit, size, shrunk = per_node, None, False
        if par is not None:
            size = par.tp * par.pp * par.cp
            unit = math.lcm(size, per_node)
            if hall < unit:  # below one replica in whole nodes: the layout shrinks
                tp, pp, cp = _fitting_layout(par, hall // per_node * per_node)
                notes.append(
                    f"cluster.n_gpus = {hall:,} holds less than one data-parallel replica of "
                    f"tp·pp·cp = {par.tp}·{par.pp}·{par.cp} = {size:,} GPUs in whole nodes of "
                    f"{per_node}: the job runs workload.parallelism.tp = {tp}, pp = {pp}"
                    + (f", cp = {cp}" if par.cp > 1 else "")
                )
                for key, new in (("tp", tp), ("pp", pp), ("cp", cp)):
                    if getattr(par, key) != new:
                        given[f"workload.parallelism.{key}"] = getattr(par, key)
                        setattr(par, key, new)
                size, shrunk = tp * pp * cp, True
                unit = math.lcm(size, per_node)
        replica = self.replica_gpus
        if rel.scope == "replica" and replica is not None and replica % per_node == 0:
            both = math.lcm(unit, replica)
            if hall // both >= 2:
                unit = both
            else:
                notes.append(
                    f"cluster.n_gpus = {hall:,} holds fewer than two replicas of {replica:,} "
                    "GPUs: a failure stops the whole job (reliability.scope = 'job')"
                )
                given["reliability.scope"] = rel.scope
                rel.scope = "job"
        job = hall // unit * unit
        if job < hall:
            given["cluster.n_gpus"] = hall
            cl.n_gpus = job
            cl._idle_gpus = hall - job
            what = f"whole nodes of {per_node}"
            if size is not None:
                what = f"whole replicas of {size:,} GPUs (tp·pp·cp) in {what}"
            part = hall % per_node
            notes.append(
                f"job {job:,} GPUs, {hall - job:,} idle in the hall: the largest job of {what} "
                f"within cluster.n_gpus = {hall:,}; the idle GPUs draw their idle power with "
                "their nodes' idle rest-of-node power through the supplies"
                + (
                    f" ({part} GPU{'s' if part > 1 else ''} of a part node, pro rata)"
                    if part
                    else ""
                )
            )
        if par is not None:
            dp = job // size
            if shrunk or wl.tokens_per_step < dp * par.microbatch_tokens:
                d0 = par.reference_tokens or wl.tokens_per_step
                tokens = float(
                    max(round(d0 / par.reference_gpus * job), dp * par.microbatch_tokens)
                )
                if tokens != wl.tokens_per_step:
                    if par.reference_tokens is None:  # the step and shares still hold at d0
                        given["workload.parallelism.reference_tokens"] = None
                        par.reference_tokens = d0
                    notes.append(
                        f"workload.tokens_per_step {wl.tokens_per_step:,.0f} becomes "
                        f"{tokens:,.0f}: the global batch follows the job's {job:,} GPUs (the "
                        f"{d0 / par.reference_gpus:,.4g} tokens a GPU of the reference's "
                        f"{par.reference_gpus:,}), at least one micro-batch of "
                        f"{par.microbatch_tokens:,.0f} tokens for "
                        + ("its one replica" if dp == 1 else f"each of its {dp:,} replicas")
                    )
                    given["workload.tokens_per_step"] = wl.tokens_per_step
                    wl.tokens_per_step = tokens
        self._given, self._notes = given, notes
        self._warnings += self._state_beyond_memory()
        return self

    def _state_beyond_memory(self) -> list[str]:
        """A warning where the job's training state cannot fit its GPUs' memory, sharded over
        every GPU of the job at best (activations and buffers left out): weights, gradients
        and Adam's states in mixed precision, 16 bytes a parameter [P, rajbhandari]; the BF16
        weights alone, 2 bytes, where no gradient of the weights moves
        (``workload.parallelism.bytes_per_param = 0``: adapters trained, as LoRA). The run
        still shows what the layout draws at that size; no real job of that model would."""
        gpu, cl, wl = self.gpu, self.cluster, self.workload
        if gpu.memory is None or self.campus is not None:
            return []
        par = wl.parallelism
        adapters = par is not None and par.bytes_per_param == 0
        per = WEIGHT_BYTES if adapters else TRAINING_STATE_BYTES
        need = per * wl.model_params / 1e9  # GB
        have = cl.n_gpus * gpu.memory
        if need <= have:
            return []
        what = (
            "its BF16 weights (2 bytes a parameter; adapters trained)"
            if adapters
            else "16 bytes a parameter (weights, gradients and Adam's states in mixed precision)"
        )
        gpus = math.ceil(need / gpu.memory / cl.gpus_per_node) * cl.gpus_per_node
        return [
            f"the job's {cl.n_gpus:,} {gpu.name} hold {have:,.0f} GB, and training "
            f"workload.model_params = {wl.model_params:.3g} needs about {need:,.0f} GB for "
            f"{what}: no such job fits; the run shows what its layout would draw. Give a model "
            f"of at most workload.model_params = {have * 1e9 / per:.2g}, or {gpus:,} GPUs or more"
        ]

    @property
    def warnings(self) -> list[str]:
        """What loading kept that may not be what the user meant (node settings a GPU swap
        kept against the new GPU's node), each a line."""
        lines = list(self._warnings)
        if self.campus is not None:
            for w, part in zip(self.campus.workloads, self._parts, strict=True):
                lines += [f"campus workload {w.name!r}: {line}" for line in part.warnings]
        return lines

    @property
    def notes(self) -> list[str]:
        """What loading chose for the user where their scenario left it to the model (the job
        in the hall, its layout and batch, the node a GPU brings), each a line."""
        lines = list(self._notes)
        if self.campus is not None:
            for w, part in zip(self.campus.workloads, self._parts, strict=True):
                lines += [f"campus workload {w.name!r}: {line}" for line in part.notes]
        return lines

    @model_validator(mode="after")
    def _disturbed(self) -> Scenario:
        """A disturbance sequence within the run."""
        d, sim = self.disturbance, self.simulation
        if d is None:
            return self
        low, high = self.site_response().frequency_window
        if not low < d.nominal_frequency < high:
            raise ValueError(
                f"ride_through.frequency_window [{low:g}, {high:g}] Hz does not hold "
                f"disturbance.nominal_frequency ({d.nominal_frequency:g} Hz): the UPS would "
                f"leave the grid at the nominal frequency; give its window around it (e.g. "
                f"ride_through.frequency_window = [{0.95 * d.nominal_frequency:g}, "
                f"{1.05 * d.nominal_frequency:g}])"
            )
        end = sim.start + timedelta(seconds=sim.duration)
        start = self.disturbance_start()
        last = start + timedelta(seconds=d.span)
        if not sim.start <= start or last > end:
            raise ValueError(
                f"disturbance: the sequence runs from {start.isoformat()} to "
                f"{last.isoformat()}, outside the run ({sim.start.isoformat()} to "
                f"{end.isoformat()}): move disturbance.start or lengthen the run"
            )
        return self

    def site_response(self) -> RideThrough:
        """The site's chain through disturbances: ``ride_through``, or its defaults."""
        return self.ride_through or RideThrough()

    def disturbance_start(self) -> datetime | None:
        """When the disturbance sequence starts: its own ``start``, or five minutes into the
        run (the run's start in a run too short for that and the sequence)."""
        d, sim = self.disturbance, self.simulation
        if d is None or d.start is not None:
            return None if d is None else d.start
        lead = DISTURBANCE_LEAD if sim.duration >= DISTURBANCE_LEAD + d.span else 0.0
        return sim.start + timedelta(seconds=lead)

    @model_validator(mode="after")
    def _events(self) -> Scenario:
        """Flexibility events within the run, on workloads that have their levers."""
        sim = self.simulation
        end = sim.start + timedelta(seconds=sim.duration)
        kinds = (
            {"job": "training"}
            if self.campus is None
            else {w.name: w.kind for w in self.campus.workloads}
        )
        names = [event.name for event in self.flexibility]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(
                f"flexibility: each event's name once ({', '.join(twice)} repeats): name them"
            )
        for event in self.flexibility:
            if not sim.start <= event.start < end:
                raise ValueError(
                    f"flexibility {event.name!r} starts at {event.start.isoformat()}, outside "
                    f"the run ({sim.start.isoformat()} to {end.isoformat()})"
                )
            finish = event.start + timedelta(seconds=event.duration)
            if event.duration < sim.dt or finish > end:
                raise ValueError(
                    f"flexibility {event.name!r} lasts {format_duration(event.duration)} from "
                    f"{event.start.isoformat()}: at least one step ({format_duration(sim.dt)}) "
                    f"and ending by the run's end ({end.isoformat()}): shorten or move it"
                )
            if self.campus is None and event.workloads:
                raise ValueError(
                    f"flexibility {event.name!r}: workloads name a campus's workloads; this "
                    "scenario has one job: remove workloads"
                )
            for name in event.workloads:
                if name not in kinds:
                    raise ValueError(
                        f"flexibility {event.name!r}: no workload {name!r}"
                        f"{_did_you_mean(name, kinds)}; the campus has {', '.join(kinds)}"
                    )
            for other in self.flexibility:
                # each is measured against the hour before it: none of another in that hour
                clear = other.start >= finish + timedelta(hours=1)
                shared = set(other.workloads or kinds) & set(event.workloads or kinds)
                if other is not event and other.start >= event.start and not clear and shared:
                    raise ValueError(
                        f"flexibility {other.name!r} starts within an hour of {event.name!r}'s "
                        f"end, on {', '.join(sorted(shared))}: one event at a time on a "
                        "workload, an hour apart (each is measured against the hour before it)"
                    )
            for name in event.workloads or kinds:
                if event.lever == "shift" and kinds[name] != "inference":
                    raise ValueError(
                        f"flexibility {event.name!r}: {name!r} is a training job and cannot "
                        "shift its demand: use the lever 'pause' or 'clock'"
                    )
        return self

    @model_validator(mode="after")
    def _campus(self) -> Scenario:
        """Each campus workload as a scenario of its own: this one's, with its keys."""
        if self.campus is None:
            return self
        base = self.to_dict()
        del base["campus"]
        base.pop("flexibility", None)  # the campus's: each workload's are found by name
        # cooling.dt is the site's plant step, every hall's: a hall choosing its plant from
        # the catalogue would otherwise take that entry's step (campus steps must agree)
        step = {"cooling.dt": base["cooling"]["dt"]}
        halls = {h.name: {**_flat(h.set), **step} for h in self.campus.halls}
        built = {}
        for name, keys in halls.items():
            try:
                built[name] = _build(copy.deepcopy(base), keys)
            except ScenarioError as exc:
                raise ValueError(f"campus hall {name!r}: {exc}") from None
        parts = []
        for w in self.campus.workloads:
            hall = self.campus.hall_of(w)
            try:  # in its hall: the hall's cooling and electrical keys, then its own
                keys = {**halls.get(hall, {}), **_flat(w.set)}
                if w.kind == "inference":
                    # a fleet serves on whole nodes, not a training job's replicas: the
                    # layout and the failure scope are a training job's, unless it sets them
                    for key, value in (
                        ("workload.parallelism", None),
                        ("reliability.scope", "job"),
                    ):
                        if not any(k.startswith(key) for k in keys):
                            keys[key] = value
                parts.append(_build(copy.deepcopy(base), keys))
            except ScenarioError as exc:
                raise ValueError(f"campus workload {w.name!r}: {exc}") from None
        total = sum(p.cluster.hall_gpus for p in parts)
        if total > MAX_GPUS:
            raise ValueError(
                f"the campus's workloads hold {total:,} GPUs, more than {MAX_GPUS:,}: fewer "
                "or smaller workloads"
            )
        self._parts, self._halls = parts, list(built.values())
        return self

    def hall_members(self) -> list[tuple[Scenario, list[int]]]:
        """A campus's halls, each a scenario of its cooling and electrical keys, with the
        indices of the workloads in it; without halls, one: this scenario, holding every
        workload."""
        campus = self.campus
        if not campus.halls:
            return [(self, list(range(len(campus.workloads))))]
        return [
            (hall, [j for j, w in enumerate(campus.workloads) if campus.hall_of(w) == h.name])
            for hall, h in zip(self._halls, campus.halls, strict=True)
        ]

    @property
    def halls(self) -> list[Scenario]:
        """The campus's halls, each a scenario holding its cooling and electrical keys; none
        without halls (the scenario's own plant and chain serve every workload)."""
        return list(self._halls)

    @property
    def parts(self) -> list[Scenario]:
        """The campus's workloads, each a scenario of its own; none without a campus."""
        return list(self._parts)

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
        self._check_replicas()
        if self.reliability.spare_nodes > self.cluster.n_nodes:
            raise ValueError(
                f"reliability.spare_nodes ({self.reliability.spare_nodes:,}) is more than the "
                f"job's {self.cluster.n_nodes:,} nodes: hot spares are a few of them"
            )
        if self.gpu.name != self.cluster.gpu:
            raise ValueError(
                f"gpu.name {self.gpu.name!r} differs from cluster.gpu {self.cluster.gpu!r}"
            )
        par = self.workload.parallelism
        for key, level in (
            ("workload.startup_power", self.workload.startup_power),
            ("workload.parallelism.sync_power", None if par is None else par.sync_power),
        ):
            # a share written to four places as the idle's (0.152 of 700 W for 106.4 W) is at
            # idle: only its floating-point product falls short, by far less than 1 µW
            if level is not None and level * self.gpu.tdp < self.gpu.idle * (1 - 1e-12):
                raise ValueError(
                    f"{key} {level:g} is {level * self.gpu.tdp:.0f} W on the {self.gpu.name}, "
                    f"below its idle {self.gpu.idle:g} W: raise it to at least "
                    f"{self.gpu.idle / self.gpu.tdp:.3g}"
                )
        # a working GPU draws at least its idle power, and at least its leakage at the die
        # temperature the phases hold at (the simulation moves that leakage with the die): a
        # phase below either is a wrong trough depth or phase power, not a saving
        _, watts = self.phase_powers(capped=False, locked=False)
        low = int(np.argmin(watts))
        gpu = self.gpu
        die = self.nominal_die()
        leak = float(gpu.leakage(die))
        floor = max(gpu.idle, leak)
        if watts[low] < floor:
            phase = self.workload.phases[low]
            fix = (
                f"lower workload.trough_depth to at most "
                f"{1 - floor / (self.compute_power * gpu.tdp):.2f}"
                if phase.kind == "communication"
                else f"raise the power of phase {phase.name!r}"
                if phase.kind == "other"
                else "raise workload.compute_power"
            )
            what = f"idle {gpu.idle:g} W"
            if floor > gpu.idle:  # the die is hot: a shallower trough heats it further
                what = (
                    f"leakage at the phases' die temperature, {leak:.0f} W at {die:.0f} °C "
                    f"(fans nominal up to a {self.cluster.fans.temp_nominal:g} °C inlet)"
                )
                fix = "lower cluster.fans.temp_nominal, or gpu.leakage_ref"
            raise ValueError(
                f"phase {phase.name!r} would draw {watts[low]:.0f} W a GPU, below the "
                f"{gpu.name}'s {what}: {fix}"
            )
        return self

    def _check_replicas(self) -> None:
        """With ``reliability.scope = "replica"``, the replicas fill the job in whole nodes,
        two at least (one replica is the whole job: scope 'job')."""
        if self.reliability.scope == "job":
            return
        size, cl = self.replica_gpus, self.cluster
        if size is None:
            raise ValueError(
                "reliability.scope = 'replica' needs the replica's size: give "
                "reliability.replica_gpus, or workload.parallelism (a replica is then tp·pp·cp "
                "GPUs)"
            )
        if size % cl.gpus_per_node or cl.n_gpus % size or cl.n_gpus // size < 2:
            raise ValueError(
                f"a replica of {size:,} GPUs must be whole nodes of {cl.gpus_per_node} GPUs, and "
                f"cluster.n_gpus ({cl.n_gpus:,}) two or more whole replicas: change "
                "reliability.replica_gpus (or the layout's tp·pp·cp), or use scope 'job'"
            )

    def phase_powers(
        self, capped: bool = True, locked: bool | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Shares of the step and per-GPU power of each phase [W], at the locked clock if set
        (``locked``, by default as ``capped``) and under the power cap if set (``capped``).
        ``compute_share`` stays the unlocked reference's. The lock's law is
        :func:`~powermodel.models.thermal.locked_phases`.

        The leakage a locked GPU keeps is that at :meth:`nominal_die`, the temperature the phase
        powers hold at, which the simulation then moves with the die.
        """
        wl = self.workload
        kinds = [p.kind for p in wl.phases]
        levels = phase_levels(
            kinds, [p.power for p in wl.phases], self.compute_power, wl.trough_depth
        )
        watts = levels * self.gpu.tdp
        shares = self.phase_shares()
        layout = self.layout()
        if layout is not None and layout.wait.any():
            # the wait at the barrier, held in the communication phases as their time-weighted
            # level: the mean, the energy and the period are exact
            given = wl.parallelism.sync_power
            waiting = self.gpu.stalled if given is None else given * self.gpu.tdp
            watts = watts + layout.wait / np.where(shares > 0, shares, 1.0) * (waiting - watts)
        lock = self.mitigation.clock_lock
        if (capped if locked is None else locked) and lock is not None:
            compute = np.array(kinds) == "compute"
            leakage = self.gpu.leakage(self.nominal_die())
            shares, watts = locked_phases(shares, watts, compute, lock, leakage)
        if capped and self.mitigation.power_cap is not None:
            watts = np.minimum(watts, self.mitigation.power_cap)
        return shares, watts

    def nominal_die(self) -> float:
        """Die temperature the phase powers hold at: the mean uncapped, unlocked board power
        through the GPU's thermal resistance, at the inlet up to which fans run nominal. [°C]"""
        shares, watts = self.phase_powers(capped=False)
        return float(
            steady_gpu_temperature(
                self.cluster.fans.temp_nominal, float(shares @ watts), self.gpu.thermal_resistance
            )
        )

    @property
    def compute_power(self) -> float:
        """GPU power in compute phases, fraction of TDP: the given one, else the model size's
        (:func:`~powermodel.models.workload.running_level`). [1]"""
        wl = self.workload
        return wl.compute_power if wl.compute_power is not None else running_level(wl.model_params)

    @property
    def stall_time(self) -> float:
        """Teardown after a fault: the given one, else the layout's
        (:func:`~powermodel.models.events.teardown_time`). [s]"""
        given = self.reliability.stall_time
        return given if given is not None else teardown_time(self.cluster.n_nodes)

    @property
    def replica_gpus(self) -> int | None:
        """GPUs a failure stops with ``reliability.scope = "replica"``: the given
        ``replica_gpus``, else one data-parallel rank of the layout (tp·pp·cp); None with
        ``scope = "job"``. [1]"""
        rel, par = self.reliability, self.workload.parallelism
        if rel.scope == "job":
            return None
        if rel.replica_gpus is not None:
            return rel.replica_gpus
        return None if par is None else par.tp * par.pp * par.cp

    @property
    def compute_share(self) -> float:
        """Share of the step spent in compute phases. [1]"""
        kinds = np.array([p.kind for p in self.workload.phases])
        return float(self.phase_shares()[kinds == "compute"].sum())

    def phase_shares(self) -> np.ndarray:
        """Share of the step of each phase: as given, or the parallel layout's. [1]"""
        layout = self.layout()
        if layout is None:
            return np.array([p.share for p in self.workload.phases])
        return layout.shares

    def layout(self) -> Layout | None:
        """The step of ``workload.parallelism`` at ``cluster.n_gpus``; None without one.

        The step time (given, or 6·N·D at the MFU) and the phases' shares hold at the layout's
        ``reference_gpus`` and ``reference_tokens``. There they fix the work of a step and the
        low-power time inside it (the calibration, [C]); elsewhere the work scales with the
        tokens a GPU computes, while the pipeline bubble and the data-parallel communication
        follow the layout (docs/model/workload.md). Where they were measured, the step and the
        shares are returned as given.
        """
        wl, par = self.workload, self.workload.parallelism
        if par is None:
            return None
        kinds = np.array([p.kind for p in wl.phases])
        given = np.array([p.share for p in wl.phases])
        n0, n = par.reference_gpus, self.cluster.n_gpus
        d0, d = par.reference_tokens or wl.tokens_per_step, wl.tokens_per_step
        t0 = wl.step_time
        if t0 is None:
            t0 = derived_step_time(wl.model_params, d0, n0, self.gpu.peak_flops, wl.mfu)
        # the reference ran the layout as given; a layout shrunk to fit the hall runs at n
        ref = par.model_copy(
            update={
                key: self._given[f"workload.parallelism.{key}"]
                for key in ("tp", "pp", "cp")
                if f"workload.parallelism.{key}" in self._given
            }
        )
        _, m0, c0 = self._replica_step(n0, d0, "workload.parallelism.reference_gpus", ref)
        dp, m, c = self._replica_step(n, d, "cluster.n_gpus", par)
        # the wait at the barrier lasts the same however few tokens a GPU computes
        sync0 = sync_time(n0, par.sync_time, par.sync_per_doubling)
        sync = sync_time(n, par.sync_time, par.sync_per_doubling)
        work0 = layout_work(t0 - sync0, m0, ref.pp, c0, par.virtual_stages, par.overlap)
        anchor = layout_step(work0, m0, ref.pp, c0, par.virtual_stages, par.overlap)
        low = given[kinds == "communication"].sum()
        inner = low * t0 - anchor.bubble - anchor.exposed - sync0  # low-power work time [C]
        comm = given / (low or 1.0) * (kinds == "communication")  # how they share the wait
        if sync0 > low * t0:
            raise ScenarioError(
                f"at {n0:,} GPUs the wait at the barrier (workload.parallelism.sync_time and "
                f"sync_per_doubling: {sync0:.3g} s) is longer than the communication phases' "
                f"{low * t0:.3g} s of the {t0:.3g} s step: lower it, or raise their share"
            )
        if n == n0 and d == d0:  # where they were measured: the step and shares as given
            return Layout(t0, given, dp, m, anchor, inner, comm * sync0 / t0)
        if inner < 0 or par.overlap * c0 > work0:
            raise ScenarioError(
                f"the layout cannot carry the step to cluster.n_gpus = {self.cluster.hall_gpus:,}: "
                f"at {n0:,} GPUs the layout's pipeline bubble ({anchor.bubble:.3g} s) and exposed "
                f"communication ({anchor.exposed:.3g} s)"
                + (f", with the wait at the barrier ({sync0:.3g} s)," if sync0 else "")
                + f" exceed the communication phases' {low * t0:.3g} s of the {t0:.3g} s step: "
                "raise their share, or workload.parallelism's virtual_stages, bandwidth or overlap"
                + (", or lower its sync_time" if sync0 else "")
            )
        scale = n0 / n * d / d0  # the tokens a GPU computes, against the reference
        times = layout_step(work0 * scale, m, par.pp, c, par.virtual_stages, par.overlap)
        step = times.step + sync
        # compute and other phases are work; communication phases share the low-power time
        shares = np.where(
            kinds == "communication",
            comm * (inner * scale + times.bubble + times.exposed + sync) / step,
            given * t0 * scale / step,
        )
        return Layout(step, shares, dp, m, times, inner * scale, comm * sync / step)

    def _replica_step(
        self, gpus: int, tokens: float, key: str, par: Parallelism
    ) -> tuple[int, float, float]:
        """Data-parallel replicas, the micro-batches each runs and the time of their collectives
        [s], at ``gpus`` GPUs and a global batch of ``tokens``, in the layout ``par``."""
        wl = self.workload
        reference = (par.reference_tokens or wl.tokens_per_step) / par.reference_gpus
        dp = _replicas(par, gpus, key, tokens, reference)
        microbatches = tokens / (dp * par.microbatch_tokens)
        if microbatches < 1:
            raise ScenarioError(
                f"at {key} = {gpus:,} the {dp:,} data-parallel replicas get "
                f"{microbatches:.3g} micro-batches of {par.microbatch_tokens:g} tokens each: grow "
                f"the global batch to at least {dp * par.microbatch_tokens:.4g} tokens "
                "(workload.tokens_per_step, or reference_tokens), or raise tp, pp or cp"
            )
        group = dp * par.cp
        time = data_parallel_time(
            wl.model_params, par.bytes_per_param, par.tp, par.pp, group, par.bandwidth * 1e9
        )
        return dp, microbatches, time

    def to_dict(self) -> dict[str, Any]:
        """The scenario as tables, with the values the user gave where the job's fit changed
        them (the hall's ``cluster.n_gpus``): loading it again fits the same job."""
        out = self.model_dump(mode="json", exclude_none=True)
        for key, value in self._given.items():
            if value is None:
                _drop_dotted(out, key)
            else:
                _set_dotted(out, key, value)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())


# --- loading --------------------------------------------------------------------------------


class Catalogue(NamedTuple):
    """A catalogue that fills a scenario section from a named entry."""

    table: str
    """Table of the key naming the entry (``cluster`` for ``cluster.gpu``)."""
    key: str
    """Key naming the entry in that table."""
    file: str
    """Catalogue file in ``presets/``, without ``.toml``."""
    what: str
    """What an entry is, in messages."""
    field: str
    """The section's own field holding the entry's name."""


CATALOGUES = {
    "gpu": Catalogue("cluster", "gpu", "gpus", "GPU", "name"),
    "cooling": Catalogue("cooling", "plant", "plants", "cooling plant", "plant"),
    "electrical": Catalogue("electrical", "chain", "electrical", "electrical chain", "chain"),
    "disturbance": Catalogue(
        "disturbance", "sequence", "disturbances", "disturbance sequence", "sequence"
    ),
}
# Catalogues read by name, not filling a section: immunity curves and ride-through requirements
CURVES_FILE, REQUIREMENTS_FILE = "immunity.toml", "requirements.toml"


def presets() -> list[str]:
    """Names of the scenario presets shipped in the package."""
    catalogues = {f"{entry.file}.toml" for entry in CATALOGUES.values()}
    catalogues |= {"rules.toml", CURVES_FILE, REQUIREMENTS_FILE}
    return sorted(
        f.name.removesuffix(".toml")
        for f in packaged("").iterdir()
        if f.name.endswith(".toml") and f.name not in catalogues
    )


def catalogue(section: str) -> dict[str, dict[str, Any]]:
    """A catalogue (``"gpu"``: GPUs, ``"cooling"``: cooling plants): name -> raw table (a copy:
    the caller may change it)."""
    return copy.deepcopy(_catalogue(section))


@lru_cache(maxsize=len(CATALOGUES))
def _catalogue(section: str) -> dict[str, dict[str, Any]]:
    """A catalogue parsed once (every scenario loaded fills three sections from them: parsing
    was half of loading a scenario from another); :func:`catalogue` hands out copies."""
    entry = CATALOGUES[section]
    raw = parse_toml(packaged(f"{entry.file}.toml").read_text(), f"{entry.file}.toml")
    return {
        name: {entry.field: name, **{k: v for k, v in table.items() if k != NODE_TABLE}}
        for name, table in raw.items()
    }


def gpu_catalogue() -> dict[str, dict[str, Any]]:
    """The GPU catalogue: name -> raw table."""
    return catalogue("gpu")


# A GPU's node in its catalogue entry (presets/gpus.toml, [NAME.node]): these cluster keys,
# taken unless the user sets them where the GPU is chosen, or after
NODE_TABLE = "node"
NODE_KEYS = ("gpus_per_node", "rest_power_active", "rest_power_idle", "fans.power", "psu.capacity")
# where the chain of files and overrides chose another GPU than the one below: a marker on the
# raw tables, popped before they are validated
_SWAPPED = "\x00gpu swapped"


@lru_cache(maxsize=1)
def gpu_nodes() -> dict[str, dict[str, Any]]:
    """Each catalogue GPU's node: name -> {dotted cluster key: value, ``"source"``: text}."""
    raw = parse_toml(packaged("gpus.toml").read_text(), "gpus.toml")
    return {name: dict(_flat(table.get(NODE_TABLE, {}))) for name, table in raw.items()}


def _get_dotted(table: Any, key: str) -> Any:
    """The value at ``a.b`` in nested tables; None where a table or the key is missing."""
    for part in key.split("."):
        if not isinstance(table, dict) or part not in table:
            return None
        table = table[part]
    return table


def _drop_dotted(table: Any, key: str) -> None:
    """Remove ``a.b`` from nested tables, where it is."""
    *parents, last = key.split(".")
    for part in parents:
        table = table.get(part) if isinstance(table, dict) else None
    if isinstance(table, dict):
        table.pop(last, None)


def _swap_node(merged: dict[str, Any], base: Any, top: Mapping[str, Any]) -> None:
    """Where ``top`` (a file's tables over the file it extends, or the overrides as dotted
    keys) chooses another GPU than ``base``, the node keys ``base`` set were for the GPU it
    named: dropped from ``merged``, for the new GPU's catalogue node to fill, unless ``top``
    sets them itself."""
    flat = _flat(dict(top))  # the dotted keys top sets, its tables walked
    chosen = flat.get("cluster.gpu")
    if not isinstance(chosen, str) or chosen == _get_dotted(base, "cluster.gpu"):
        return
    for key in NODE_KEYS:
        if f"cluster.{key}" not in flat:
            _drop_dotted(merged.get("cluster"), key)
    swap = {"gpu": chosen}
    # a plant that cannot cool the new GPU (a liquid-cooled one in an air hall, or the other
    # way) was the old GPU's too: the new GPU's node brings a plant of its kind
    plant, new = _get_dotted(merged, "cooling.plant"), gpu_nodes().get(chosen, {}).get("plant")
    cooling = merged.get("cooling")
    if "cooling.plant" not in flat and isinstance(new, str) and isinstance(cooling, dict):
        if _plant_kind(merged) not in (None, _plant_kind({"cooling": {"plant": new}})):
            for key in list(cooling):
                if f"cooling.{key}" not in flat:
                    del cooling[key]
            cooling["plant"] = new
            swap["plant"] = f"{plant}"
    merged[_SWAPPED] = swap


def _plant_kind(raw: Any) -> str | None:
    """Whether a scenario's plant cools liquid-cooled GPUs (``"liquid"``) or air-cooled ones
    (``"air"``); None where the plant is not named or not known."""
    kind = _get_dotted(raw, "cooling.type")
    if kind is None:
        plant = _get_dotted(raw, "cooling.plant")
        kind = _catalogue("cooling").get(plant, {}).get("type") if isinstance(plant, str) else None
    return None if not isinstance(kind, str) else "liquid" if kind == "liquid" else "air"


def _fill_node(raw: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The chosen GPU's catalogue node where the scenario leaves its keys unset; the notes
    naming what it took, and the warnings naming what a GPU swap kept against it."""
    swapped = raw.pop(_SWAPPED, None)
    cluster, name = raw.get("cluster"), _get_dotted(raw, "cluster.gpu")
    node = gpu_nodes().get(name) if isinstance(name, str) else None
    if not isinstance(cluster, dict) or not node:
        return [], []
    taken, kept, notes, warnings = [], [], [], []
    if swapped is not None:
        cools = _catalogue("gpu")[name].get("cooling")
        if "plant" in swapped:
            notes.append(
                f"cooling.plant = {_get_dotted(raw, 'cooling.plant')!r}: the {cools}-cooled "
                f"{name}'s, from the GPU catalogue ({swapped['plant']!r} cannot cool it)"
            )
        elif _plant_kind(raw) not in (None, cools):
            warnings.append(
                f"cluster.gpu = {name!r} is {cools}-cooled, and cooling.plant "
                f"{shorten(_get_dotted(raw, 'cooling.plant'))} is not: give a plant of its kind "
                f"(e.g. cooling.plant = {node.get('plant')!r}), or leave cooling.plant out to "
                "take it"
            )
    for key in NODE_KEYS:
        if key not in node:
            continue
        value = _get_dotted(cluster, key)
        parent = _get_dotted(cluster, key.rpartition(".")[0]) if "." in key else cluster
        if value is None and (isinstance(parent, dict) or parent is None):
            _set_dotted(raw, f"cluster.{key}", node[key])
            taken.append(f"cluster.{key} = {node[key]:,g}")
        elif swapped is not None and value != node[key]:
            kept.append(f"cluster.{key} = {shorten(value)} (the {name}'s node: {node[key]:,g})")
    if taken:
        notes.insert(
            0, f"cluster.gpu = {name!r} brings its node from the GPU catalogue: {', '.join(taken)}"
        )
    if kept:
        warnings.insert(
            0,
            f"cluster.gpu = {name!r} keeps node settings given for another GPU or by you: "
            f"{'; '.join(kept)}: set them to the {name}'s node, or leave them out to take it",
        )
    return notes, warnings


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
    raw = parse_toml(text, label)
    site = raw.get("site")
    weather = site.get("weather") if isinstance(site, dict) else None
    if weather is not None and (not isinstance(weather, str) or names_a_file(weather)):
        raise ScenarioError(
            f"{label}: site.weather {shorten(weather)}: a scenario read from text may name a "
            f"shipped weather file ({', '.join(SHIPPED)}) or synthetic, not a path"
        )
    base_name = raw.pop("extends", None)
    if base_name is not None:
        if not isinstance(base_name, str) or base_name not in presets():
            raise ScenarioError(
                f"{label}: 'extends' must name a preset ({', '.join(presets())}), got "
                f"{shorten(base_name)}"
            )
        raw = _over(_load_raw(base_name, seen=(base_name,)), raw)
    return _build(raw, overrides)


def _build(raw: dict[str, Any], overrides: Mapping[str, Any] | Iterable[str] | None) -> Scenario:
    parsed = parse_overrides(overrides)
    if "site.weather" in parsed:
        # the site as the overrides set it: what they set is kept, the rest the file brings
        brought = {k: parsed[f"site.{k}"] for k in ("name", "timezone") if f"site.{k}" in parsed}
        _weather_brings_site(parsed["site.weather"], brought)
        for key, value in brought.items():
            parsed.setdefault(f"site.{key}", value)
    base = copy.deepcopy(raw.get("cluster")) if "cluster.gpu" in _flat(parsed) else None
    for key, value in parsed.items():
        _set_dotted(raw, key, value)
    if base is not None:
        _swap_node(raw, {"cluster": base}, parsed)
    for section in CATALOGUES:
        _fill_from_catalogue(raw, section, parsed)
    notes, warnings = _fill_node(raw)  # after the plant's entry: its type is the plant's
    scenario = _validate(raw)
    scenario._notes = notes + scenario._notes
    scenario._warnings = warnings + scenario._warnings
    return scenario


def _load_raw(
    name_or_path: str | Path, seen: tuple[str, ...], folder: Path | None = None
) -> dict[str, Any]:
    """The raw tables of a preset or file with what it ``extends`` merged under it. A relative
    path in ``extends`` or ``site.weather`` is relative to the file that names it, as in an
    include (an override's weather path, from the API or the CLI, to the working folder)."""
    text, label, where = _read_source(name_or_path, folder)
    raw = parse_toml(text, label)
    site = raw.get("site")
    if isinstance(site, dict) and "weather" in site:
        weather = site["weather"]
        if where is not None and isinstance(weather, str) and names_a_file(weather):
            site["weather"] = str(where / Path(weather).expanduser())  # as `extends` is
        _weather_brings_site(site["weather"], site)
    base_name = raw.pop("extends", None)
    if base_name is None:
        return raw
    if not isinstance(base_name, str):
        raise ScenarioError(
            f"{label}: 'extends' must be a preset name or a file, got {shorten(base_name)}"
        )
    key = str((where / base_name).resolve()) if _is_file_name(base_name, where) else base_name
    if key in seen:
        raise ScenarioError(f"{label}: 'extends' loops back to {base_name!r}")
    if len(seen) >= MAX_EXTENDS:
        raise ScenarioError(f"{label}: more than {MAX_EXTENDS} files deep in 'extends'")
    return _over(_load_raw(base_name, seen + (key,), where), raw)


def _over(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """A file's tables over those of the file it extends (:func:`_merge`); where it chooses
    another GPU, the node keys below it were that GPU's (:func:`_swap_node`)."""
    merged = _merge(base, top)
    _swap_node(merged, base, top)
    return merged


def names_a_file(weather: str) -> bool:
    """Whether ``site.weather`` names a file, not a shipped weather file or synthetic (in any
    case, as the weather reader takes them: ``Sterling`` is ``sterling``)."""
    return weather.strip().lower() not in {*SHIPPED, "synthetic"}


def _weather_brings_site(weather: Any, site: dict[str, Any]) -> None:
    """A weather file is a place: where a layer of the scenario names one, the site's name and
    time zone come with it, unless the same layer sets them (``site`` is that layer's table)."""
    if not isinstance(weather, str) or weather == "synthetic":
        return  # validation names a weather that is not text
    try:
        name, zone = site_of(weather)
    except DataFileError as exc:
        raise ScenarioError(f"site.weather: {exc}") from None
    site.setdefault("name", name)
    if zone is None and "timezone" not in site:
        raise ScenarioError(
            f"site.weather: {shorten(weather)} keeps standard time a fraction of an hour from "
            "UTC that no zone without daylight saving keeps: set site.timezone beside it (an "
            "IANA name, e.g. America/St_Johns)"
        )
    site.setdefault("timezone", zone)


def _is_file_name(name: str | Path, folder: Path | None) -> bool:
    """Whether ``name`` is a TOML file (else a preset). A preset's name is always the preset,
    whatever files lie in the working folder."""
    if isinstance(name, str) and name in presets():
        return False
    path = Path(folder or ".") / name
    return Path(name).suffix == ".toml" or len(Path(name).parts) > 1 or exists(path)


def _read_source(
    name_or_path: str | Path, folder: Path | None = None
) -> tuple[str, str, Path | None]:
    """Text, label and folder (None for a preset) of a preset name or a TOML file."""
    if _is_file_name(name_or_path, folder):
        path = Path(folder or ".") / name_or_path
        if not is_file(path) and not exists(path):
            raise ScenarioError(f"scenario file {str(path)!r} does not exist")
        return read_text(path, "scenario file", ScenarioError), str(path), path.resolve().parent
    name = str(name_or_path)
    if name not in presets():
        raise ScenarioError(
            f"unknown preset {name!r}{_did_you_mean(name, presets())}; "
            f"presets: {', '.join(presets())} (or give a path to a .toml file)"
        )
    return packaged(f"{name}.toml").read_text(), name, None


_MOST_KEY_PARTS = 8 * MAX_DEPTH
# A key of more parts than that, bare or quoted, with optional blanks around each dot. The
# look-behind starts a match only at the start of a word and the possessive quantifiers never
# backtrack, so the search is linear in the text's length.
_LONG_DOTTED_KEY = re.compile(
    r"""(?<![\w"'.-])(?:(?:[A-Za-z0-9_-]++|"[^"\n]*+"|'[^'\n]*+')[ \t]*+\.[ \t]*+)"""
    + f"{{{_MOST_KEY_PARTS},}}"
)


def parse_toml(text: str, label: str) -> dict[str, Any]:
    """TOML text as data, never evaluated; nesting deeper than :data:`MAX_DEPTH` is refused
    (deeper structures are no scenario and would exhaust Python's recursion). A key of more
    parts than a line could need is refused before parsing, wherever it stands (a line's key or
    one inside an inline table): the parser's time and memory grow with the square of its length."""
    if _LONG_DOTTED_KEY.search(text):
        raise ScenarioError(
            f"{label}: a key of more than {_MOST_KEY_PARTS} dotted parts, nested more than "
            f"{MAX_DEPTH} deep: no scenario or rule needs that; check the key"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{label}: TOML syntax error: {exc}") from None
    except RecursionError:
        data = None
    return _shallow(data, label)


def _shallow(data: dict[str, Any] | None, label: str) -> dict[str, Any]:
    """Parsed TOML (None where the parser ran out of recursion), refused when too deep."""
    if data is None or _depth(data) > MAX_DEPTH:
        raise ScenarioError(
            f"{label}: tables or arrays nested more than {MAX_DEPTH} deep: no scenario or rule "
            "needs that; check the brackets"
        )
    return data


def _depth(value: Any) -> int:
    """Nesting depth of tables and arrays, without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level + 1)
            if level + 1 <= MAX_DEPTH:  # deeper is refused anyway: stop looking
                stack.extend(
                    (v, level + 1) for v in (item.values() if isinstance(item, dict) else item)
                )
    return deepest


def shorten(value: Any, width: int = 60) -> str:
    """``repr(value)`` cut to ``width`` characters, for messages about arbitrary input."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge: tables merge key by key, anything else (values, arrays) is replaced."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_overrides(overrides: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Any]:
    """Dotted overrides as a table, each text value read as a TOML value where it parses as one:
    ``{"cluster.n_gpus": 8192}`` as it is, ``["cluster.n_gpus=8192"]`` (``--set``) the same.

    Raises
    ------
    ScenarioError
        An item not of the form ``key.path=value``, or nested too deep.
    """
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:
        items = []
        for text in overrides:
            key, sep, value = str(text).partition("=")
            if not sep or not key.strip():
                raise ScenarioError(f"override {shorten(text)} is not of the form key.path=value")
            items.append((key.strip(), value.strip()))
    parsed = {str(key): _toml_value(value) for key, value in items}
    for key, value in parsed.items():  # as deep as a file may be, counting the key's parts
        if key.count(".") + _depth(value) >= MAX_DEPTH:
            raise ScenarioError(
                f"override {shorten(key)}: nested more than {MAX_DEPTH} deep: check the key "
                "and the brackets"
            )
    return parsed


def _toml_value(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        data = tomllib.loads(f"v = {value}")
    except tomllib.TOMLDecodeError:
        return value  # a bare word: the string itself
    except RecursionError:
        data = None
    return _shallow(data, f"override {shorten(value)}")["v"]


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
    entry = CATALOGUES[section]
    table, what = entry.table, entry.what
    selector = f"{table}.{entry.key}"
    name = raw.get(table, {}).get(entry.key) if isinstance(raw.get(table), dict) else None
    if not isinstance(name, str):
        return  # validation reports the missing or mistyped selector
    entries = _catalogue(section)  # read only: the chosen entry is copied below
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
    chosen = copy.deepcopy(entries[name])
    if "type" in explicit and explicit["type"] != chosen.get("type"):
        # another plant type than the entry's: of the entry, only what that type takes
        plant = _plant_type(explicit["type"])
        chosen = {k: v for k, v in chosen.items() if plant and k in plant.model_fields}
    raw[section] = _merge(chosen, explicit)


def _validate(raw: dict[str, Any]) -> Scenario:
    try:
        scenario = Scenario.model_validate(raw)
    except ValidationError as exc:
        raise ScenarioError(explain(exc)) from None
    for item in scenario.sensitivity:
        _check_range(scenario, item)
    return scenario


def _check_range(scenario: Scenario, item: SensitivityRange) -> None:
    """A sensitivity range names a field, and both its ends are values that field takes."""
    node: Any = scenario
    parent: type[BaseModel] = Scenario
    part = ""
    for part in item.key.split("."):
        fields = type(node).model_fields if isinstance(node, BaseModel) else {}
        if part not in fields:
            raise ScenarioError(
                f"sensitivity key {item.key!r}: no field {part!r}{_did_you_mean(part, fields)}"
            )
        parent, node = type(node), getattr(node, part)
    check = _field_adapter(parent, part)
    for end in ("low", "high"):
        try:
            check.validate_python(getattr(item, end))
        except ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise ScenarioError(
                f"sensitivity range of {item.key}: {end} {getattr(item, end)!r}: {message}"
            ) from None


@lru_cache(maxsize=256)
def _field_adapter(model: type[BaseModel], name: str) -> TypeAdapter:
    """A validator of one field's values, built once per field (building one takes a
    millisecond, and every scenario loaded checks its ~10 ranges' ends)."""
    info = model.model_fields[name]
    return TypeAdapter(Annotated[info.annotation, info], config=ConfigDict(allow_inf_nan=False))


def explain(exc: ValidationError, root: type[BaseModel] | None = None, most: int = 5) -> str:
    """One line per problem (the first ``most``), with the dotted key, the value given and a
    suggestion, for a table of ``root`` (the scenario's by default; a rule's in rule files). Of
    a value that fails every branch of a union (a duration or 'young-daly'), the first
    branch's reason is given."""
    lines: dict[str, str] = {}
    for err in exc.errors():
        # pydantic's union branches are no keys; an unknown key (the last part) is the user's,
        # brackets and all
        extra = err["type"] == "extra_forbidden"
        parts = err["loc"][:-1] if extra else err["loc"]
        loc = [p for p in parts if isinstance(p, int) or _is_key(p)] + list(err["loc"][-1:] * extra)
        # a tagged union's member (cooling.liquid.loop_delta_t) is found by the table's `type`:
        # the schema is looked up with it, the key is said without it
        # (an unknown key is the user's, even one spelt like a tag: `cooling.liquid`)
        tagged = loc
        loc = _untagged(loc[:-1], root) + loc[-1:] if extra else _untagged(loc, root)
        if err["type"] in ("union_tag_not_found", "union_tag_invalid"):
            loc = [*loc, err["ctx"]["discriminator"].strip("'")]
        where = shorten(".".join(map(str, loc)) or "scenario", 80).strip("'")
        if where in lines:
            continue
        if extra:
            parent = ".".join(str(p) for p in loc[:-1] if not isinstance(p, int))
            known = [f"{parent}.{f}" if parent else f for f in _fields_at(tuple(tagged[:-1]), root)]
            guess = f"{parent}.{loc[-1]}" if parent else str(loc[-1])
            lines[where] = f"unknown key {where!r}{_did_you_mean(guess, known)}"
        elif err["type"] in ("missing", "union_tag_not_found"):
            lines[where] = f"missing key {where!r}"
        elif err["type"] == "union_tag_invalid":
            tags = [repr(t) for t in union_members(_field_at(tuple(tagged), root))]
            given = err["input"].get(loc[-1]) if isinstance(err["input"], dict) else None
            lines[where] = (
                f"{where}: Input should be {', '.join(tags[:-1])} or {tags[-1]} "
                f"(got {shorten(given)})"
            )
        else:
            bound = _bound_as_duration(err, tagged, root)
            reason = err["msg"].removeprefix("Value error, ")
            message = bound or _too_large(err, tagged, root) or reason + _in_unit(err, tagged, root)
            given = err.get("input")
            if bound and isinstance(given, float):  # read from the user's text: say it so
                given = format_duration(given) if given < 1e12 else f"{given:.3g}s"
            shown = (
                f" (got {shorten(given)})"
                if isinstance(given, str | int | float) and repr(given) not in message
                else ""
            )
            lines[where] = f"{where}: {message}{shown}"
    found = list(lines.values())
    more = f"; and {len(found) - most} more" if len(found) > most else ""
    return "; ".join(found[:most]) + more


UNIT = re.compile(r"\s*\[([^\]]*)\]\s*$")  # a field's description ends with its unit: "... [W]"


def _in_unit(err: Any, loc: list, root: Any = None) -> str:
    """The unit a bound or a number is read in, for the message: a limit of 1 is 1 W, and
    "0.6kW" is refused because the key takes plain watts."""
    field = _field_at(tuple(loc), root)
    unit = UNIT.search(getattr(field, "description", None) or "")
    if unit is None or unit[1] in ("1", "") or is_duration(".".join(map(str, loc))):
        return ""
    if err["type"] in _BOUNDS:  # "at least 1 W", "at most 1 (1/K)"
        return f" {unit[1]}" if unit[1][0].isalpha() or unit[1][0] in "°%" else f" ({unit[1]})"
    if err["type"] in ("float_parsing", "float_type", "int_parsing", "int_type"):
        return f": a plain number in {unit[1]}"
    return ""


_BOUNDS = {
    "greater_than": "longer than",
    "greater_than_equal": "at least",
    "less_than": "shorter than",
    "less_than_equal": "at most",
}


def _bound_as_duration(err: Any, loc: list, root: Any = None) -> str | None:
    """A bound broken by a duration, said in durations: 'must be at most 30d'."""
    if err["type"] not in _BOUNDS or not _is_duration(_field_at(tuple(loc), root)):
        return None
    (limit,) = err["ctx"].values()
    return f"must be {_BOUNDS[err['type']]} {format_duration(float(limit))}"


def is_duration(key: str) -> bool:
    """Whether the dotted scenario key holds a duration (written with a unit)."""
    return _is_duration(_field_at(tuple(p for p in key.split(".") if not p.isdigit())))


def _too_large(err: Any, loc: list, root: Any = None) -> str | None:
    """A whole number too large to read, said with the field's bound."""
    if err["type"] != "int_parsing_size":
        return None
    field = _field_at(tuple(loc), root)
    bounds = [m.le for m in getattr(field, "metadata", ()) if hasattr(m, "le")]
    return f"must be at most {bounds[0]:,}" if bounds else "is too large"


def _is_duration(field: Any) -> bool:
    """Whether a field holds a :data:`Duration` (alone or in a union)."""
    validators = [getattr(m, "func", None) for m in getattr(field, "metadata", ())]
    return field is not None and (
        parse_duration in validators or "parse_duration" in repr(field.annotation)
    )


def _is_key(part: Any) -> bool:
    """A location part that names a key, not one of pydantic's union or validator branches."""
    return isinstance(part, str) and not any(c in part for c in "[](),")


def _fields_at(loc: tuple[Any, ...], root: Any = None) -> list[str]:
    """Field names of the table at ``loc`` (empty where ``loc`` is no table); of every member
    of a tagged union whose member the location does not name."""
    models = _models_at(loc, root)
    return list(dict.fromkeys(f for model in models for f in model.model_fields))


def _field_at(loc: tuple[Any, ...], root: Any = None) -> Any:
    """The schema's FieldInfo at a location (``("cluster", "n_gpus")``) in ``root`` (the
    scenario by default), or None. In a tagged union (``cooling``) the location may name the
    member (``("cooling", "liquid", "chiller")``); else the first member with the key serves."""
    return _walk_to(loc, root)[0]


def _models_at(loc: tuple[Any, ...], root: Any = None) -> list[Any]:
    """The tables (several for a tagged union) at a location; none for a value."""
    return _walk_to(loc, root)[1] if loc else [root or Scenario]


def _walk_to(loc: tuple[Any, ...], root: Any = None) -> tuple[Any, list[Any]]:
    """The field at a location and the tables it holds."""
    models: list[Any] = [root or Scenario]
    field = None
    for part in (p for p in loc if not isinstance(p, int)):
        members = union_members(field)
        if part in members:
            models = [members[part]]
            continue
        field = next((m.model_fields[part] for m in models if part in m.model_fields), None)
        if field is None:
            return None, []
        models = tables_of(field.annotation)
    return field, models


def union_members(field: Any) -> dict[str, Any]:
    """A tagged union's members by their tag (``{"liquid": LiquidPlant, ...}``); empty for any
    other field."""
    key = getattr(field, "discriminator", None)
    if not isinstance(key, str):
        return {}
    return {_tag(m, key): m for m in tables_of(field.annotation)}


def _untagged(loc: list[Any], root: Any = None) -> list[Any]:
    """A location without the tags pydantic puts after a tagged union's key: the user's key."""
    out: list[Any] = []
    for part in loc:
        if not union_members(_field_at(tuple(out), root)).get(part):
            out.append(part)
    return out


UNIONS = (Union, UnionType)


def table_of(annotation: Any) -> Any:
    """The table (model) a field's annotation holds, directly, in a list or optionally (the
    first member of a tagged union); None for a value."""
    tables = tables_of(annotation)
    return tables[0] if tables else None


def tables_of(annotation: Any) -> list[Any]:
    """Every table (model) a field's annotation holds, directly, in a list, optionally or as
    members of a union, in the annotation's order; empty for a value."""
    pending, seen, found = [annotation], 0, []
    while pending and seen < 16:
        annotation, seen = pending.pop(0), seen + 1
        if hasattr(annotation, "model_fields"):
            found.append(annotation)
        else:
            pending.extend(getattr(annotation, "__args__", ()))
    return found


def holds_list(annotation: Any) -> bool:
    """Whether a field's annotation is a list (of tables or values), directly or optionally."""
    if get_origin(annotation) is list:
        return True
    return any(holds_list(a) for a in get_args(annotation) if get_origin(annotation) in UNIONS)


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    choices = list(choices)
    folded = {c.casefold(): c for c in choices}
    close = [c for c in folded if word and c.startswith(word.casefold())][:1]
    if not close:
        close = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.6)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""
