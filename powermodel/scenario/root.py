"""The :class:`Scenario` root: every table, the checks across them (power cap, levers, replicas,
phase floors, disturbances, flexibility events), a campus's parts, and the scenario's own
key introspection (:func:`explain`, :func:`is_duration`).

What the scenario derives (the job a hall holds, its layout's step, the memory it needs) is
computed by :mod:`~powermodel.scenario.fitting`; the validators here wire it in.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from functools import lru_cache
from operator import attrgetter
from typing import Annotated, Any

import numpy as np
import tomli_w
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    TypeAdapter,
    ValidationError,
    model_validator,
)

from powermodel.durations import format_duration
from powermodel.errors import ScenarioError
from powermodel.models.events import teardown_time
from powermodel.models.thermal import locked_phases, steady_gpu_temperature
from powermodel.models.workload import phase_levels, running_level
from powermodel.scenario.base import MAX_GPUS, Name, Section, Text, did_you_mean
from powermodel.scenario.campus import Campus, FlexEvent
from powermodel.scenario.catalogues import prepare
from powermodel.scenario.facility import (
    DISTURBANCE_LEAD,
    Cooling,
    Disturbance,
    Electrical,
    Grid,
    Mitigation,
    Prices,
    RideThrough,
    SensitivityRange,
)
from powermodel.scenario.fitting import Layout, fit_job, layout_at, memory_warnings
from powermodel.scenario.job import (
    Checkpoint,
    Cluster,
    Gpu,
    Reliability,
    Simulation,
    Site,
    Workload,
)
from powermodel.scenario.keys import explain_errors, field_at, is_duration_field
from powermodel.scenario.tables import drop_dotted, flat_keys, set_dotted


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
        fit = fit_job(
            cl.n_gpus,
            cl.gpus_per_node,
            wl.parallelism,
            rel.scope,
            rel.replica_gpus,
            wl.tokens_per_step,
        )
        for key, value in fit.changes.items():  # each table checks its new value
            table, _, field = key.rpartition(".")
            setattr(attrgetter(table)(self), field, value)
            if key == "cluster.n_gpus":  # the rest of the hall idle
                cl._idle_gpus = fit.idle_gpus
        self._given, self._notes = fit.given, fit.notes
        self._warnings += self._state_beyond_memory()
        return self

    def _state_beyond_memory(self) -> list[str]:
        """A warning where the job's training state cannot fit its GPUs' memory
        (:func:`~powermodel.scenario.fitting.memory_warnings`); none for a campus, whose parts
        warn for themselves, nor for a GPU of unknown memory."""
        gpu, cl, wl = self.gpu, self.cluster, self.workload
        if gpu.memory is None or self.campus is not None:
            return []
        par = wl.parallelism
        adapters = par is not None and par.bytes_per_param == 0
        return memory_warnings(
            gpu.name, gpu.memory, cl.n_gpus, cl.gpus_per_node, wl.model_params, adapters
        )

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
                        f"{did_you_mean(name, kinds)}; the campus has {', '.join(kinds)}"
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
        halls = {h.name: {**flat_keys(h.set), **step} for h in self.campus.halls}
        built = {}
        for name, keys in halls.items():
            try:
                built[name] = build_scenario(copy.deepcopy(base), keys)
            except ScenarioError as exc:
                raise ValueError(f"campus hall {name!r}: {exc}") from None
        parts = []
        for w in self.campus.workloads:
            hall = self.campus.hall_of(w)
            try:  # in its hall: the hall's cooling and electrical keys, then its own
                keys = {**halls.get(hall, {}), **flat_keys(w.set)}
                if w.kind == "inference":
                    # a fleet serves on whole nodes, not a training job's replicas: the
                    # layout and the failure scope are a training job's, unless it sets them
                    for key, value in (
                        ("workload.parallelism", None),
                        ("reliability.scope", "job"),
                    ):
                        if not any(k.startswith(key) for k in keys):
                            keys[key] = value
                parts.append(build_scenario(copy.deepcopy(base), keys))
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
        """The step of ``workload.parallelism`` at ``cluster.n_gpus``; None without one
        (:func:`~powermodel.scenario.fitting.layout_at`): at its ``reference_gpus`` and
        ``reference_tokens`` the step and the shares as given, elsewhere scaled by the layout.
        """
        wl, par = self.workload, self.workload.parallelism
        if par is None:
            return None
        # the reference ran the layout as given; a layout shrunk to fit the hall runs at n
        ref = par.model_copy(
            update={
                key: self._given[f"workload.parallelism.{key}"]
                for key in ("tp", "pp", "cp")
                if f"workload.parallelism.{key}" in self._given
            }
        )
        return layout_at(wl, ref, self.cluster.n_gpus, self.cluster.hall_gpus, self.gpu.peak_flops)

    def to_dict(self) -> dict[str, Any]:
        """The scenario as tables, with the values the user gave where the job's fit changed
        them (the hall's ``cluster.n_gpus``): loading it again fits the same job."""
        out = self.model_dump(mode="json", exclude_none=True)
        for key, value in self._given.items():
            if value is None:
                drop_dotted(out, key)
            else:
                set_dotted(out, key, value)
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def to_toml(self) -> str:
        return tomli_w.dumps(self.to_dict())


def build_scenario(
    raw: dict[str, Any], overrides: Mapping[str, Any] | Iterable[str] | None
) -> Scenario:
    """A scenario from raw tables and dotted overrides: the overrides set, the catalogues'
    entries and the GPU's node filled (:func:`~powermodel.scenario.catalogues.prepare`), then
    validated; what the filling chose comes first in its notes and warnings."""
    notes, warnings = prepare(raw, overrides)
    scenario = _validate(raw)
    scenario._notes = notes + scenario._notes
    scenario._warnings = warnings + scenario._warnings
    return scenario


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
                f"sensitivity key {item.key!r}: no field {part!r}{did_you_mean(part, fields)}"
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
    suggestion, for a table of ``root``, the scenario's by default
    (:func:`~powermodel.scenario.keys.explain_errors`). Here, beside the schema's root: the
    campus check explains its parts' errors with it, and :mod:`~powermodel.scenario.keys`
    reads any root, the scenario's among them, without importing it."""
    return explain_errors(exc, root or Scenario, most)


def is_duration(key: str) -> bool:
    """Whether the dotted scenario key holds a duration (written with a unit)."""
    return is_duration_field(
        field_at(tuple(p for p in key.split(".") if not p.isdigit()), Scenario)
    )
