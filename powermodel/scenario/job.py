"""The schema's tables of the run, the site and the job: simulation, site (weather), GPU, cluster
(nodes, supplies, fans), workload (phases, parallel layout, variation), checkpoints and
reliability.

Each table checks its own keys; the checks across tables are
:class:`~powermodel.scenario.root.Scenario`'s.
"""

from __future__ import annotations

import zoneinfo
from datetime import datetime, timedelta
from typing import Any, Literal

import numpy as np
from pydantic import Field, PrivateAttr, field_validator, model_validator

from powermodel.durations import format_duration
from powermodel.models import electrical, variation
from powermodel.models import weather as wx
from powermodel.models.signal import FINEST_STEP
from powermodel.models.thermal import leakage_power
from powermodel.scenario.base import (
    DAY,
    HOUR,
    MAX_GPUS,
    MAX_RECOVERY,
    MAX_RUN,
    TIME_RANGE,
    Duration,
    Section,
    Text,
)


def _minute(when: datetime) -> str:
    """A time to the minute, its year in four digits (``0001-01-01T00:00``)."""
    return when.isoformat(timespec="minutes")


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
        try:
            end = self.start + timedelta(seconds=self.duration)
        except OverflowError:  # it ends past the year 9999, which no datetime holds
            end = None
        if self.start < first or end is None or end > last:
            ends = "past the year 9999" if end is None else _minute(end)
            raise ValueError(
                f"the run {_minute(self.start)} to {ends} leaves the span "
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
        check_efficiency_curve("psu.load", self.load, "psu.efficiency", self.efficiency)
        check_efficiency_curve("psu.load", self.load, "psu.power_factor", self.power_factor)
        return self

    def input_power(self, output: Any) -> Any:
        """AC input of a node's supplies delivering ``output`` [W] DC, by their curve. [W]"""
        return electrical.input_power(
            output, self.capacity, np.array(self.load), np.array(self.efficiency)
        )


def check_efficiency_curve(
    load_key: str, load: list[float], eff_key: str, efficiency: list[float]
) -> None:
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
