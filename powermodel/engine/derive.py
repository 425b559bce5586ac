"""The first stage (docs/model/index.md): what a scenario implies before anything is drawn. The
training step's time, the checkpoint timing and the interruption rates (:class:`Derived`), the
plant step, the rest of each node's power and the server supplies' slope."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from powermodel.errors import ScenarioError
from powermodel.models import events, workload
from powermodel.models.events import State
from powermodel.models.thermal import step_time_factor
from powermodel.scenario import Scenario, format_duration
from powermodel.scenario.job import STEP_TIME_BOUNDS, Cluster

NO_CHECKPOINTS = 1e30  # s: an interval no run reaches (the timeline's arithmetic needs a number)


@dataclass(frozen=True)
class Derived:
    """Quantities the scenario implies, each computed once: the timing reported in the
    Dataset attrs, the die temperature its phase powers hold at and its supplies' slope."""

    step_time: float
    checkpoint_stall: float
    checkpoint_done: float
    checkpoint_interval: float
    reload_time: float
    rates: np.ndarray  # per cause, planned last [1/s of up time]
    nominal_die: float  # the die temperature the phase powers hold at [°C]
    slope: float  # d(AC)/d(DC) of a server's supplies at the running load [1]

    @property
    def checkpoints(self) -> bool:
        """False when no failures are expected and Young/Daly asks for none."""
        return self.checkpoint_interval < NO_CHECKPOINTS


def derive(scenario: Scenario) -> Derived:
    """Step time, checkpoint timing and interruption rates implied by a scenario, with its
    nominal die temperature and its supplies' slope at the running load."""
    wl, ck, rel, cl = scenario.workload, scenario.checkpoint, scenario.reliability, scenario.cluster
    layout = scenario.layout()
    if layout is None and wl.step_time is not None:
        step = wl.step_time
    else:
        step = (
            workload.derived_step_time(
                wl.model_params, wl.tokens_per_step, cl.n_gpus, scenario.gpu.peak_flops, wl.mfu
            )
            if layout is None
            else layout.step_time
        )
        shortest, longest = STEP_TIME_BOUNDS  # the bounds a given step_time has
        if not shortest <= step <= longest:
            how, fix = (
                ("6·N·D / (GPUs · peak · MFU)", "or give workload.step_time")
                if layout is None
                else ("workload.parallelism", "and workload.parallelism.reference_gpus")
            )
            raise ScenarioError(
                f"{how} gives a step of {step:.3g} s, outside {format_duration(shortest)} to "
                f"{format_duration(longest)} at cluster.n_gpus = {cl.hall_gpus:,}: check "
                f"workload.model_params, tokens_per_step and mfu against cluster.n_gpus, {fix}"
            )
    # a locked clock stretches the compute phases of every step
    step *= float(step_time_factor(scenario.mitigation.clock_lock or 1.0, scenario.compute_share))
    write = ck.write_time
    stall = write if ck.mode == "blocking" else ck.async_blocking_time
    done = write if ck.mode == "blocking" else ck.async_blocking_time + write
    unexpected = np.array([c.count for c in rel.causes]) * rel.rate_scale
    counts = np.append(unexpected, rel.planned_count)
    rates = counts / rel.exposure_gpu_hours * cl.n_gpus / 3600.0
    if ck.interval == "young-daly":
        # Planned stops checkpoint first and lose nothing: the MTBF is of unexpected ones only,
        # and a failure that stops one replica loses nothing either (the others hold the state)
        lossy = rates[:-1].sum() if rel.scope == "job" else 0.0
        # a rate so small its MTBF overflows a float is no failure at all: no checkpoints
        mtbf = 1.0 / lossy if lossy > 1.0 / np.finfo(float).max else np.inf
        interval = events.young_daly_interval(mtbf, stall) if np.isfinite(mtbf) else np.inf
    else:
        interval = ck.interval
    interval = max(1.0, round(interval / step)) * step if np.isfinite(interval) else NO_CHECKPOINTS
    if done - stall >= interval:
        raise ScenarioError(
            f"an async checkpoint takes {done - stall:.0f} s to persist, longer than the "
            f"{interval:.0f} s between checkpoints: lengthen checkpoint.interval"
        )
    reload = ck.size / ck.read_bandwidth
    die = scenario.nominal_die()
    return Derived(step, stall, done, interval, reload, rates, die, psu_slope(scenario))


def rest_power(cluster: Cluster) -> np.ndarray:
    """Each node's rest-of-node power (CPUs, memory, NICs, fans) in each job state [W], indexed
    by :class:`~powermodel.models.events.State`: ``cluster.rest_power_idle`` while the job
    waits idle or in maintenance, ``cluster.rest_power_active`` in every other state. The model
    adds it to the GPUs' power before the PSU curve; a meter's inversion takes it back out."""
    rest = np.full(len(State), cluster.rest_power_active)
    rest[[State.FAILED_IDLE, State.MAINTENANCE]] = cluster.rest_power_idle
    return rest


def smoothing_floor(scenario: Scenario) -> float:
    sm = scenario.mitigation.smoothing
    return 0.0 if sm is None else sm.floor * scenario.gpu.tdp


def board_limit(scenario: Scenario) -> float:
    """The most a GPU's board draws: its power cap, else its TDP. [W]"""
    tdp = scenario.gpu.tdp
    return min(scenario.mitigation.power_cap or tdp, tdp)


def plant_steps(scenario: Scenario) -> int:
    """Electrical steps per plant step: the plant runs at ``cooling.dt`` or ``dt``, the coarser
    (a plant step finer than ``dt`` would only repeat the step's heat: the plant, lagging it by
    minutes, runs at ``dt`` then).

    Raises
    ------
    ScenarioError
        A plant step that is not a whole number of ``dt`` or does not divide the run (one
        longer than the run among them), naming the nearest plant steps that do.
    """
    sim = scenario.simulation
    k = max(1, round(scenario.cooling.dt / sim.dt))
    if abs(k * sim.dt - max(scenario.cooling.dt, sim.dt)) > 1e-9 * k * sim.dt or sim.n_steps % k:
        raise ScenarioError(
            f"cooling.dt ({format_duration(scenario.cooling.dt)}) must be a whole number of "
            f"simulation.dt ({format_duration(sim.dt)}) that divides the duration "
            f"({format_duration(sim.duration)}): {_plant_step_fix(scenario)}"
        )
    return k


def _plant_step_fix(scenario: Scenario) -> str:
    """The plant steps nearest ``cooling.dt`` that are whole numbers of ``dt`` dividing the run
    and that ``cooling.dt`` takes (its schema's bounds), as the fix to give."""
    sim, wanted = scenario.simulation, scenario.cooling.dt
    n = sim.n_steps
    low = np.arange(1, math.isqrt(n) + 1)
    low = low[n % low == 0]
    steps = np.union1d(low, n // low) * sim.dt  # every whole number of dt dividing the run
    bounds = {type(m).__name__: m for m in type(scenario.cooling).model_fields["dt"].metadata}
    steps = steps[(steps >= bounds["Ge"].ge) & (steps <= bounds["Le"].le)]
    near = [*steps[steps < wanted][-1:], *steps[steps > wanted][:1]]
    if not near:
        return "change simulation.duration or simulation.dt"
    # k·dt to the nanosecond: 12 × 0.1 s reads 1.2 s, as plant_steps takes it
    return "give cooling.dt = " + " or ".join(format_duration(round(float(s), 9)) for s in near)


def psu_slope(scenario: Scenario) -> float:
    """d(AC)/d(DC) of a server's supplies at the running load: small DC changes pass through it."""
    cl = scenario.cluster
    shares, watts = scenario.phase_powers()
    node = cl.gpus_per_node * float(shares @ watts) + cl.rest_power_active
    up, down = (cl.psu.input_power(node + d) for d in (1.0, -1.0))
    return float((up - down) / 2.0)


def cluster_mw(watts: np.ndarray | float, count: int) -> np.ndarray | float:
    """Power of ``count`` GPUs, nodes or switches drawing ``watts`` [W] each. [MW]"""
    return watts * count / 1e6


def per_gpu_power(gpu_power: np.ndarray | float, n_gpus: int) -> np.ndarray | float:
    """What each of ``n_gpus`` GPUs draws [W] of their ``gpu_power`` [MW] (the inverse of
    :func:`cluster_mw`)."""
    return gpu_power * 1e6 / n_gpus
