"""The schema's tables of a campus: its workloads (training jobs and inference fleets), its halls
(each its own cooling and electrical keys), and flexibility events.

Each workload becomes a scenario of its own in :class:`~powermodel.scenario.root.Scenario`'s
campus check.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from powermodel.scenario.base import DAY, HOUR, Duration, Label, Section
from powermodel.scenario.job import Simulation
from powermodel.scenario.tables import dotted_keys

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
            for key in dotted_keys(h.set):
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
            for key in dotted_keys(w.set):
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
