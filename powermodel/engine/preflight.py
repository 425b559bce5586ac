"""Before a run (docs/model/index.md): its memory budget, what keeps it from streaming in parts,
and every check a run makes before its work."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import psutil

from powermodel.engine import disturbances, facility
from powermodel.engine.derive import Derived, derive, plant_steps
from powermodel.engine.flex import check_fleet_event, check_lever, events_targeting
from powermodel.engine.timeline import recoveries
from powermodel.engine.waveform import shape_tables
from powermodel.errors import ScenarioError
from powermodel.models import events, variation
from powermodel.models.events import State
from powermodel.scenario import Scenario, format_duration

# Peak memory of a run per electrical step [B]: the Dataset (its 7 float64 arrays, time and
# job state, 65 B/step; the plant path's variables, PUE and the misc load are held lazily)
# with simulate's temporaries (rendered and profiled an hour-aligned chunk at a time),
# metrics and writing the profile to CSV: the process's peak RSS over its RSS after a warm-up
# run, at 0.86 M steps (10 days at 1 s, the reference preset), 238 B/step (tracemalloc's
# peak, blind to Arrow's own allocations, 139), with a margin; each battery's dispatch
# (16 B/step, measured with 16 batteries); and per timeline segment (start, state, the sort:
# 181 B measured with a checkpoint every 10 ms).
BYTES_PER_STEP = 256


# And per step of the chunk profiled at a time (CHUNK_STEPS, or the whole run where a filter
# runs over it in order): its temporaries. tracemalloc's peak over simulate and metrics of one
# day at 1 s (one chunk) is 292 B/step against 139 at 10 days: 153 more, with a margin.
BYTES_PER_CHUNK_STEP = 160


# Per step drawn with step-to-step variation (the draws cover each running stretch with a
# margin): the steps run hold their boundary and two level sums (float64, 24 B), the draws'
# temporaries peak at 51-58 B per step drawn (measured at 1 M steps), with a margin
BYTES_PER_ITERATION = 80


BYTES_PER_BATTERY_STEP = 16


# An inference fleet's arrays on its utilisation's steps: demand, clock, serving and the three
# series of its flexibility's before and after, a dozen float64s, with the temporaries [B]
BYTES_PER_FLEET_STEP = 160


BYTES_PER_SEGMENT = 256


# Each sensor view: its variable (8 B/step) and the temporaries of reading it. tracemalloc's peak
# over sensor_view at 0.4 M and 2 M steps, the worst chains: 16-18 B/step (SCADA, deadband),
# 54-56 (a PMU's P-class filter at every other step, missing values), 82 (DCGM with a deadband
# and missing values; 137 and 145 before a PMU's reports were summed from the values under each
# window); a deadband adds a bounded chunk (4 MB), not per step. 82 with a sixth more as margin
# (tests/test_sensors.py measures the worst chains against this).
BYTES_PER_SENSOR_STEP = 96


# Steps the in-memory run profiles at a time (about 2 MB an array), extended to an hour's start
CHUNK_STEPS = 1 << 18


def memory_estimate(scenario: Scenario, sensors: int = 0) -> int:
    """Peak memory a run of the scenario will take, known before it starts [B]: its steps,
    its batteries' dispatch, the segments of its timeline (checkpoints, interruptions), with
    ``workload.variation`` its drawn training steps, and the views of ``sensors`` sensor
    chains."""
    return int(sum(_memory_parts(scenario, sensors).values()))


def memory_fix(scenario: Scenario, sensors: int = 0) -> str:
    """What to change to make a run smaller: the largest part of its memory decides."""
    parts = _memory_parts(scenario, sensors)
    return {
        "steps": "lengthen simulation.dt or shorten simulation.duration",
        "batteries": "model fewer batteries (mitigation.storage)",
        "timeline": "checkpoint less often (checkpoint.interval) or lower reliability.rate_scale",
        "sensors": "ask for fewer sensor views, or lengthen simulation.dt",
        "variation": "shorten simulation.duration or leave out workload.variation (it draws "
        "every training step)",
        "inference": "lengthen the inference fleets' inference.variation_step",
    }[max(parts, key=parts.get)]


def _memory_parts(scenario: Scenario, sensors: int = 0) -> dict[str, float]:
    if scenario.campus is not None:  # the site's, and each workload's as a job of its own
        parts = [_memory_parts(part) for part in scenario.parts]
        site = _memory_parts(scenario.model_copy(update={"campus": None}), sensors)
        out = {key: site[key] + sum(part[key] for part in parts) for key in site}
        out["inference"] = sum(
            np.ceil(scenario.simulation.duration / w.inference.variation_step)
            * BYTES_PER_FLEET_STEP
            for w in scenario.campus.workloads
            if w.kind == "inference"
        )
        return out
    derived = derive(scenario)
    sim = scenario.simulation
    down = np.array([r.duration for r in recoveries(scenario, derived)])
    interruptions = events.expected_interruptions(sim.duration, derived.rates, down)
    # stalls that vary are drawn for as many checkpoints as training alone would hold
    varied = scenario.checkpoint.blocking_cv > 0.0
    checkpoints = sim.duration / (
        derived.checkpoint_interval + (0.0 if varied else derived.checkpoint_stall)
    )
    batteries = len(scenario.mitigation.storage)
    chunk = sim.n_steps if sequential(scenario) else min(sim.n_steps, CHUNK_STEPS)
    return {
        "steps": sim.n_steps * BYTES_PER_STEP + chunk * BYTES_PER_CHUNK_STEP,
        "batteries": sim.n_steps * BYTES_PER_BATTERY_STEP * batteries,
        "timeline": (2.0 * checkpoints + len(State) * interruptions) * BYTES_PER_SEGMENT,
        "variation": _drawn_step_count(scenario, derived, 1.0 + checkpoints + interruptions)
        * BYTES_PER_ITERATION,
        "sensors": sim.n_steps * BYTES_PER_SENSOR_STEP * sensors,
    }


def _drawn_step_count(scenario: Scenario, derived: Derived, stretches: float) -> float:
    """Steps a run with ``workload.variation`` draws: its length in mean steps over
    ``stretches`` running stretches, with the margin of :func:`variation.pool_sizes`."""
    v = scenario.workload.variation
    if v is None:
        return 0.0
    stretches = max(stretches, 1.0)
    extent = scenario.simulation.duration / derived.step_time / stretches
    keys = v.model_dump(exclude={"distribution", "level_cv", "evaluation_level"})
    return float(variation.pool_sizes(np.array([extent]), **keys)[0]) * stretches


def available_memory() -> int:
    """Memory this process can still take [B]: the machine's available memory, or what is left
    under the cgroup (container) limit where that is lower."""
    free = psutil.virtual_memory().available
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
    except (OSError, ValueError):
        return free
    return free if limit == "max" else min(free, int(limit) - used)


def check_memory(scenario: Scenario, sensors: int = 0, budget: float | None = None) -> None:
    """Refuse, before any work, a run (with ``sensors`` sensor views) that would not fit in
    memory: what is available (:func:`available_memory`), or ``budget`` [B]. Where the run
    could be streamed to a file in parts instead (:mod:`powermodel.stream`), the refusal says
    so first."""
    need = memory_estimate(scenario, sensors)
    free = available_memory() if budget is None else budget
    if need > free:
        sim = scenario.simulation
        fix = memory_fix(scenario, sensors)
        why = streamable(scenario, sensors)
        fix = (
            f"stream it to a file in parts (powermodel run ... -o FILE.parquet), or {fix}"
            if why is None
            else f"{fix} ({why} keeps it from streaming to a file in parts)"
        )
        have = "is available" if budget is None else "is its budget"
        raise ScenarioError(
            f"{sim.n_steps:,} steps of {format_duration(sim.dt)} need about {need / 1e9:.1f} GB "
            f"and {free / 1e9:.1f} GB {have}: {fix}"
        )


def streamable(scenario: Scenario, sensors: int = 0) -> str | None:
    """Why the run cannot be streamed to a file in parts (a filter over the whole run in
    order, or sensor views); None if it can."""
    if sensors:
        return "sensor views (--sensor)"
    if scenario.campus is not None:
        return "a campus (campus.workloads: its workloads render whole, side by side)"
    if scenario.flexibility:
        return "flexibility events (each is measured against the hour before it)"
    if scenario.disturbance is not None:
        return "grid disturbances (the batteries' recharge follows the whole run's load)"
    return sequential(scenario)


def preflight(
    scenario: Scenario, sensors: int = 0, memory: bool = True
) -> tuple[Derived, np.ndarray, np.ndarray]:
    """Every check a run makes before its work, at a fraction of its cost: memory (unless
    ``memory`` is False: a streamed run takes less), step and checkpoint timing, the plant
    step, the disturbances' triggers, the weather file, the iteration waveform. ``validate``
    runs it, so a scenario it passes does not fail at the start of a run.

    Returns what the run goes on with: :func:`derive` and :func:`shape_tables`.
    """
    if memory:
        check_memory(scenario, sensors)
    for j, (name, part) in enumerate(named_workloads(scenario)):  # a campus: each workload's
        with errors_named_for(name):
            preflight(part, memory=False)
            spec = scenario.campus.workloads[j]
            for event in events_targeting(scenario, name):
                if spec.kind == "inference":
                    check_fleet_event(scenario, spec.inference, event)
                else:
                    check_lever(part, event)
    for event in scenario.flexibility if scenario.campus is None else ():
        check_lever(scenario, event)
    derived = derive(scenario)
    plant_steps(scenario)
    disturbances.response(scenario)  # its triggers: a frequency record's excursions bounded
    facility.hourly_weather(scenario)
    return (derived, *shape_tables(scenario, derived))


def named_workloads(scenario: Scenario) -> list[tuple[str, Scenario]]:
    """A campus's workloads by name, each a scenario of its own; none without a campus."""
    if scenario.campus is None:
        return []
    return list(zip((w.name for w in scenario.campus.workloads), scenario.parts, strict=True))


@contextmanager
def errors_named_for(name: str) -> Iterator[None]:
    """Errors of a campus workload's own checks and run, named for it."""
    try:
        yield
    except ScenarioError as exc:
        raise ScenarioError(f"campus workload {name!r}: {exc}") from None


def sequential(scenario: Scenario) -> str | None:
    """What in the scenario filters the whole run in order, so that it renders in one piece
    (power smoothing's ramp limits, burn on job stop, batteries); None if nothing."""
    m = scenario.mitigation
    for what, present in (
        ("mitigation.smoothing", m.smoothing is not None),
        ("mitigation.stop_burn", m.stop_burn is not None),
        ("mitigation.storage", bool(m.storage)),
    ):
        if present:
            return what
    return None
