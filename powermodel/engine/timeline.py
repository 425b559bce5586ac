"""The job's timeline (docs/model/timeline.md): its states and events, on its own seeded random
streams; the recoveries of a whole job and of a failed replica; the overlays through which a
share of the job follows other states (failed replicas, flexibility events); the events as the
Dataset reports them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from powermodel.engine import disturbances
from powermodel.engine.derive import Derived, derive
from powermodel.engine.series import datetimes
from powermodel.errors import ScenarioError
from powermodel.models import events
from powermodel.models.events import Recovery, State
from powermodel.scenario import Scenario
from powermodel.scenario.campus import FlexEvent

# Independent random streams per purpose (principle 6 of docs/model/index.md): SeedSequence keys.
JOB = 0


GRID_CAUSE = "Grid disturbance"  # the cause of a crash a grid disturbance brings


STREAM_FAILURES = 1


STREAM_STEPS = 2


STREAM_LAUNCH = 3  # a campus workload's launch: its phase and checkpoint schedule


STREAM_DEMAND = 4  # an inference fleet's short-term variation


STREAM_STALLS = 5  # the lengths of a job's checkpoint stalls (checkpoint.blocking_cv)


STREAM_STARTUPS = 6  # the lengths of a job's start-ups (workload.startup_cv)


MAX_INTERRUPTIONS = 1_000_000  # a failure every 5 min for ten years: beyond, no job trains


NO_PAUSES = np.empty(0)


def recoveries(scenario: Scenario, derived: Derived) -> list[Recovery]:
    """Recovery sequence of each unexpected cause, then of a planned interruption."""
    rel = scenario.reliability
    restart = startup(scenario, derived)
    if rel.scope == "replica":  # the others stall, then go on without the failed replica
        unexpected = [Recovery(((State.STALLED, rel.survivor_stall),), loses_work=False)]
        unexpected *= len(rel.causes)
    else:
        unexpected = [
            Recovery(sequence, loses_work=True)
            for sequence in _restarts(scenario, scenario.stall_time, restart)
        ]
    planned = Recovery(
        (
            (State.CHECKPOINT, derived.checkpoint_stall),
            (State.MAINTENANCE, rel.planned_downtime),
            *restart,
        ),
        loses_work=False,
    )
    return [*unexpected, planned]


def _restarts(
    scenario: Scenario, teardown: float, restart: tuple[tuple[State, float], ...]
) -> list[tuple[tuple[State, float], ...]]:
    """What each unexpected cause stops goes through: survivors spin for ``teardown`` [s] (or
    the cause's own stall), the GPUs wait idle for the restart (a hot spare's swap where the
    site keeps spares; a cause's own restart time wins), then ``restart``."""
    rel = scenario.reliability
    wait = rel.restart_time if rel.spare_swap_time is None else rel.spare_swap_time
    return [
        (
            (State.STALLED, teardown if c.stall_time is None else c.stall_time),
            (State.FAILED_IDLE, wait if c.restart_time is None else c.restart_time),
            *restart,
        )
        for c in rel.causes
    ]


def replica_recoveries(
    scenario: Scenario, derived: Derived
) -> list[tuple[tuple[State, float], ...]]:
    """What a failed replica goes through, per unexpected cause (``reliability.scope =
    "replica"``): its nodes are torn down (the launcher's check on one node, else the
    collectives failing), wait for the restart, start, load the model state and ramp.

    The state comes from a peer replica over the scale-out network, each GPU of the replica
    receiving its share at ``workload.parallelism.bandwidth``; without a layout, from storage
    as a whole-job restart reads it."""
    size = scenario.replica_gpus
    par = scenario.workload.parallelism
    reload = (
        derived.reload_time if par is None else scenario.checkpoint.size / (size * par.bandwidth)
    )
    wl = scenario.workload
    nodes = size // scenario.cluster.gpus_per_node
    given = scenario.reliability.stall_time
    teardown = events.teardown_time(nodes) if given is None else given
    restart = (
        (State.STARTING, wl.startup_time),
        (State.LOADING, reload),
        (State.RAMP, wl.startup_ramp),
    )
    return _restarts(scenario, teardown, restart)


def startup(scenario: Scenario, derived: Derived) -> tuple[tuple[State, float], ...]:
    """States of every (re)start: launch and build the model, load the checkpoint, ramp."""
    wl = scenario.workload
    return (
        (State.STARTING, wl.startup_time),
        (State.LOADING, derived.reload_time),
        (State.RAMP, wl.startup_ramp),
    )


def failure_rng(seed: int, job: int = JOB) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(job, STREAM_FAILURES)))


def steps_rng(seed: int, job: int = JOB) -> np.random.Generator:
    """The job's steps' own stream: drawing them leaves the failures' draws as they were."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(job, STREAM_STEPS)))


def timeline(
    scenario: Scenario,
    derived: Derived | None = None,
    job: int = JOB,
    launch: tuple[float, float] = (0.0, 0.0),
) -> events.Timeline:
    """The job timeline of a scenario (no rendering): cheap, for Monte Carlo over seeds. A
    campus's workload ``job`` draws its own stream, and ``launch`` (:func:`launch_delay`) is
    when it starts after the run's start [s] (its GPUs idle until then) and how far into its
    checkpoint cycle [s]."""
    derived = derived or derive(scenario)
    steps = recoveries(scenario, derived)
    expected = events.expected_interruptions(
        scenario.simulation.duration, derived.rates, np.array([r.duration for r in steps])
    )
    if expected > MAX_INTERRUPTIONS:
        raise ScenarioError(
            f"the scenario expects {expected:,.0f} interruptions in its run, more than "
            f"{MAX_INTERRUPTIONS:,} (a 16K-GPU job sees about 8 a day): lower "
            "reliability.rate_scale or raise reliability.exposure_gpu_hours"
        )
    return events.job_timeline(
        duration=scenario.simulation.duration,
        rates=derived.rates,
        recoveries=steps,
        startup=((State.FAILED_IDLE, launch[0]), *startup(scenario, derived)),
        interval=derived.checkpoint_interval,
        checkpoint_stall=derived.checkpoint_stall,
        checkpoint_done=derived.checkpoint_done,
        rng=failure_rng(scenario.simulation.seed, job),
        phase=launch[1],
        crashes=disturbances.crashes(scenario, startup(scenario, derived)),
        stall_cv=scenario.checkpoint.blocking_cv,
        stall_rng=np.random.default_rng(
            np.random.SeedSequence(scenario.simulation.seed, spawn_key=(job, STREAM_STALLS))
        ),
        startup_cv=scenario.workload.startup_cv,
        startup_rng=np.random.default_rng(
            np.random.SeedSequence(scenario.simulation.seed, spawn_key=(job, STREAM_STARTUPS))
        ),
    )


@dataclass(frozen=True)
class Overlay:
    """A ``share`` of a job that follows other states through ``windows``, rendered on its own
    shapes' ``rate`` [1/s] and cumulative ``tables`` (the job's, or a locked clock's, with a
    closing shape of nothing appended); ``stops``: it does not train there (a failed replica,
    a pause); ``event``: the flexibility event it stands for."""

    windows: events.Windows
    share: float
    rate: np.ndarray
    tables: np.ndarray
    stops: bool
    event: FlexEvent | None = None
    clock: float | None = None  # the clock an event locks the GPUs at [1]


def whole_job_pauses(overlays: Sequence[Overlay]) -> tuple[np.ndarray, np.ndarray]:
    """When the whole job pauses (its overlays that stop all of it: flexibility pauses), the
    starts and ends [s], in order (an hour apart at least: the events' rule)."""
    whole = [o.windows for o in overlays if o.stops and o.share == 1.0]
    if not whole:
        return NO_PAUSES, NO_PAUSES
    begin, end = (np.concatenate([getattr(w, k) for w in whole]) for k in ("begin", "end"))
    order = np.argsort(begin)
    return begin[order], end[order]


def closed_tables(rate: np.ndarray, tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shapes' rates and cumulative tables with the closing shape of nothing appended (the
    state after the last of :class:`State`)."""
    nothing = np.zeros(tables.shape[:1] + (1,) + tables.shape[2:])
    return np.append(rate, 1.0), np.concatenate((tables, nothing), axis=1)


def launch_delay(scenario: Scenario, derived: Derived, job: int) -> tuple[float, float]:
    """When a campus's independent workload ``job`` starts after the run's start [s], uniform
    over one of its steps, and how far into its checkpoint cycle [s], uniform over its
    interval, from its own stream: its iterations and checkpoints keep no phase with the
    others', and it waits idle a step at most."""
    seeds = np.random.SeedSequence(scenario.simulation.seed, spawn_key=(job, STREAM_LAUNCH))
    rng = np.random.default_rng(seeds)
    into = derived.checkpoint_interval if derived.checkpoints else 0.0
    return float(rng.uniform(0.0, derived.step_time)), float(rng.uniform(0.0, into))


def failed_replicas(
    scenario: Scenario,
    derived: Derived,
    line: events.Timeline,
    paused: np.ndarray = NO_PAUSES,
) -> events.Windows | None:
    """The recovery of each replica that failed in the job's timeline ``line``, closed by the
    state after the last (:class:`~powermodel.models.events.State`'s count); None unless
    ``reliability.scope`` is "replica". At most all replicas but one recover at once (a
    failure beyond lands on one already down); a recovery a pause of the job overtakes (one
    of ``paused``, their starts [s], in order) ends at it, and the replica restarts with the
    job."""
    if scenario.reliability.scope == "job":
        return None
    closed = len(State)
    sequences = replica_recoveries(scenario, derived)
    windows = events.replica_windows(line, sequences, derived.step_time, closed)
    replicas = scenario.cluster.n_gpus // scenario.replica_gpus
    keep = events.at_most(windows.begin, windows.end, replicas - 1)
    # the first pause after each recovery starts: where it comes before the end, it ends there
    overtaking = np.append(paused, np.inf)[np.searchsorted(paused, windows.begin, side="right")]
    return events.trimmed(windows, keep, np.minimum(windows.end, overtaking), closed)


def without_paused_events(
    line: events.Timeline, paused: tuple[np.ndarray, np.ndarray]
) -> events.Timeline:
    """``line`` without its interruptions inside the ``paused`` stretches (starts and ends
    [s]: the job's own draws go on under a pause, but a paused job neither fails nor loses
    work)."""
    if paused[0].size == 0:
        return line
    keep = ~events.within(*paused, line.event_time)[0]
    lost = line.event_lost_work[keep]
    return replace(
        line,
        event_time=line.event_time[keep],
        event_cause=line.event_cause[keep],
        event_lost_work=lost,
        lost_work=float(lost.sum()),
    )


def kept_training(line: events.Timeline, overlays: Sequence[Overlay]) -> float:
    """Training time kept, as a fraction of the run: the job's (:class:`events.Timeline`), less
    the share of the job each overlay that stops training stands for (a failed replica, a
    pause), over the job's training in its windows. [1]"""
    kept = line.effective_training_time
    for o in overlays:
        if o.stops:
            w = o.windows
            inside = events.running_before(line, w.end) - events.running_before(line, w.begin)
            kept -= o.share * float(inside.sum()) / line.duration
    return kept


def event_variables(scenario: Scenario, line: events.Timeline) -> dict[str, tuple]:
    causes = [c.name for c in scenario.reliability.causes] + ["Planned maintenance"]
    categories = [c.category for c in scenario.reliability.causes] + ["Planned"]
    planned = line.event_cause == len(causes) - 1
    causes.append(GRID_CAUSE)  # the crashes a disturbance puts in the timeline
    categories.append("Grid")
    return {
        "event_time": ("event", datetimes(scenario.simulation.start, line.event_time)),
        "event_kind": ("event", np.where(planned, "planned", "unexpected").astype(object)),
        "event_cause": ("event", np.array(causes, dtype=object)[line.event_cause]),
        "event_category": ("event", np.array(categories, dtype=object)[line.event_cause]),
        "event_lost_work": ("event", line.event_lost_work),
    }
