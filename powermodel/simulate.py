"""Orchestration: scenario in, ``xarray.Dataset`` out. The only place that builds the Dataset."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import xarray as xr
from scipy import optimize
from xarray.backends import BackendArray
from xarray.core import indexing

from powermodel import disturbances, facility
from powermodel._version import __version__
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.models import (
    events,
    grid,
    inference,
    mitigation,
    render,
    sensors,
    thermal,
    variation,
    workload,
)
from powermodel.models.cooling import server_fan_extra
from powermodel.models.events import Recovery, State
from powermodel.models.thermal import step_time_factor
from powermodel.scenario import Scenario, format_duration, load_scenario
from powermodel.scenario.campus import FlexEvent, Inference
from powermodel.scenario.job import STEP_TIME_BOUNDS, Cluster
from powermodel.variables import annotate, sensor_attrs
from powermodel.variables import attrs as variable_attrs

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "held_arrays",
    "memory_estimate",
    "memory_fix",
    "rest_power",
    "SENSORS",
    "sensor_view",
    "simulate",
]

SENSORS = sensors.CHAINS  # the sensor chains by key: what sensor_view and simulate(sensors=) take

# Independent random streams per purpose (principle 6 of docs/model/index.md): SeedSequence keys.
JOB = 0
GRID_CAUSE = "Grid disturbance"  # the cause of a crash a grid disturbance brings
STREAM_FAILURES = 1
STREAM_STEPS = 2
STREAM_LAUNCH = 3  # a campus workload's launch: its phase and checkpoint schedule
STREAM_DEMAND = 4  # an inference fleet's short-term variation
STREAM_STALLS = 5  # the lengths of a job's checkpoint stalls (checkpoint.blocking_cv)
STREAM_STARTUPS = 6  # the lengths of a job's start-ups (workload.startup_cv)
NO_CHECKPOINTS = 1e30  # s: an interval no run reaches (the timeline's arithmetic needs a number)
MAX_INTERRUPTIONS = 1_000_000  # a failure every 5 min for ten years: beyond, no job trains
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
# The plant path's state in the Dataset, held over each plant step (float32: 7 digits suffice)
HELD = ("water_use", "temp_air", "temp_wetbulb", "supply_temp", "gpu_temp", "clock_factor")
# The profile's variables on time, in order (a CSV's columns)
ORDER = (
    "gpu_power",
    "it_power",
    "facility_loss",
    "cooling_power",
    "misc_power",
    "facility_power",
    "grid_power",
    "grid_reactive_power",
    "grid_voltage",
    "rack_storage_power",
    "bess_power",
    "bess_soc",
    "pue",
    "throughput",
    *HELD,
    "job_state",
    "generator_power",
    "ups_battery_power",
    "recharge_power",
    "ups_battery_deficit",
    "grid_share",
    "grid_event",
)
# What a grid disturbance adds: what the backup carries, the recharge, where it acts
DISTURBANCE_VARIABLES = ORDER[-6:]
# Steps the in-memory run profiles at a time (about 2 MB an array), extended to an hour's start
CHUNK_STEPS = 1 << 18
BLOCK = 1 << 16  # steps of an element-wise pass: its temporaries stay in the CPU cache
WRITE_RATE = np.ones(2)  # the background writes' shapes are constant: any rate
NO_PAUSES = np.empty(0)
HOUR_S = 3600.0
# A training job's attrs, kept per campus workload (workload_<attr>) for its own view
JOB_ATTRS = (
    "step_time",
    "compute_share",
    "clock_setpoint",
    "clock_lock",
    "checkpoint_interval",
    "checkpoint_stall",
    "token_rate",
)


@dataclass(frozen=True)
class Derived:
    """Quantities the scenario implies, reported in the Dataset attrs."""

    step_time: float
    checkpoint_stall: float
    checkpoint_done: float
    checkpoint_interval: float
    reload_time: float
    rates: np.ndarray  # per cause, planned last [1/s of up time]

    @property
    def checkpoints(self) -> bool:
        """False when no failures are expected and Young/Daly asks for none."""
        return self.checkpoint_interval < NO_CHECKPOINTS


def derive(scenario: Scenario) -> Derived:
    """Step time, checkpoint timing and interruption rates implied by a scenario."""
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
    return Derived(step, stall, done, interval, ck.size / ck.read_bandwidth, rates)


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


def rest_power(cluster: Cluster) -> np.ndarray:
    """Each node's rest-of-node power (CPUs, memory, NICs, fans) in each job state [W], indexed
    by :class:`~powermodel.models.events.State`: ``cluster.rest_power_idle`` while the job
    waits idle or in maintenance, ``cluster.rest_power_active`` in every other state. The model
    adds it to the GPUs' power before the PSU curve; a meter's inversion takes it back out."""
    rest = np.full(len(State), cluster.rest_power_active)
    rest[[State.FAILED_IDLE, State.MAINTENANCE]] = cluster.rest_power_idle
    return rest


def idle_power(scenario: Scenario) -> float:
    """What the nodes outside the job draw, on and idle, all the time [MW]: each its GPUs' idle
    power and its idle rest of node through the supplies' curve
    (:func:`powermodel.facility.idle_nodes`)."""
    cl, nodes = scenario.cluster, facility.idle_nodes(scenario)
    if not nodes:
        return 0.0
    idle = cl.gpus_per_node * scenario.gpu.idle + cl.rest_power_idle
    return float(_cluster_mw(cl.psu.input_power(idle), nodes))


def gpu_attrs(scenario: Scenario) -> dict[str, float]:
    """The hall's GPUs in a profile's attrs: the job's, the idle ones outside it (with the hot
    spares' GPUs) and what they draw [MW]; a campus's, summed over its workloads."""
    members = scenario.parts or [scenario]
    return dict(
        job_gpus=sum(p.cluster.n_gpus for p in members),
        idle_gpus=sum(facility.idle_gpus(p) for p in members),
        idle_power=sum(idle_power(p) for p in members),
    )


def shape_tables(scenario: Scenario, derived: Derived) -> tuple[np.ndarray, np.ndarray]:
    """Cell tables of each state's shape for ``gpu_power`` [MW], ``it_power`` [MW], ``throughput``.

    Returns ``(cells (3, n_states, n_cells), shape_rate (n_states,))``. Per-GPU and per-server
    transforms (the PSU curve) act on the per-group waveform before the offsets aggregate it.
    """
    wl, cl, gpu = scenario.workload, scenario.cluster, scenario.gpu
    shares, watts = scenario.phase_powers(capped=False, locked=True)  # the cap acts per GPU below
    edge = float(np.max(np.abs(watts - np.roll(watts, 1)))) / (wl.edge_rate * gpu.tdp)
    if edge >= derived.step_time:
        # the usual cause: the derived step of a big cluster at a batch sized for a small one
        fix = (
            "give workload.step_time, or grow the global batch workload.tokens_per_step with "
            f"the cluster (to at least {wl.tokens_per_step * edge / derived.step_time:.3g} "
            "tokens, as large jobs do)"
            if wl.step_time is None
            else "lengthen workload.step_time"
        )
        raise ScenarioError(
            f"a training step of {derived.step_time:.3g} s is shorter than one power edge "
            f"({edge:.3g} s at workload.edge_rate {wl.edge_rate:g} TDP/s): {fix}"
        )
    per_gpu = workload.iteration_waveform(shares, watts, derived.step_time, wl.edge_rate * gpu.tdp)
    per_gpu, throttled = _mitigated_waveform(scenario, derived, per_gpu)
    kernel = workload.offset_kernel(derived.step_time, wl.offset_spread, wl.jitter)
    n = per_gpu.size
    u = (np.arange(n) + 0.5) / n

    def const(value: float) -> np.ndarray:
        return np.full(n, value)

    # A checkpoint stall holds the GPUs at a barrier while the write completes: the stalled level,
    # or the smoothing floor while the job holds the GPUs.
    held = max(gpu.stalled, _smoothing_floor(scenario))
    starting = wl.startup_power * gpu.tdp  # processes up, memory held, nothing computing
    gpu_w = {
        State.RUNNING: per_gpu,
        State.CHECKPOINT: const(held),
        State.STALLED: const(held),
        State.FAILED_IDLE: const(gpu.idle),
        State.MAINTENANCE: const(gpu.idle),
        State.STARTING: const(starting),
        State.LOADING: const(starting),
        State.RAMP: starting + u * (per_gpu.mean() - starting),
    }
    rest = rest_power(cl)
    fixed = (cl.network_load + cl.storage_load) / 1e6 + idle_power(scenario)  # MW
    gpu_cells, it_cells, tok_cells = [], [], []
    for state in State:
        node_ac = cl.psu.input_power(cl.gpus_per_node * gpu_w[state] + rest[state])
        board = gpu_w[state]
        if state == State.RUNNING:
            board, node_ac = workload.aggregate(board, kernel), workload.aggregate(node_ac, kernel)
        gpu_cells.append(_cluster_mw(board, cl.n_gpus))
        it_cells.append(_cluster_mw(node_ac, cl.n_nodes) + fixed)
        # work a ramp-up limit delays is made up later: the step stretches by that share
        tokens = wl.tokens_per_step / derived.step_time / (1.0 + throttled)
        tokens = tokens if state == State.RUNNING else 0.0
        tok_cells.append(const(tokens))
    rate = np.ones(len(State))
    rate[State.RUNNING] = 1.0 / derived.step_time
    rate[State.RAMP] = 1.0 / wl.startup_ramp if wl.startup_ramp > 0 else 1.0
    return np.array([gpu_cells, it_cells, tok_cells]), rate


def _mitigated_waveform(
    scenario: Scenario, derived: Derived, per_gpu: np.ndarray
) -> tuple[np.ndarray, float]:
    """Per-GPU mitigations on one iteration, before aggregation (principle 2 of
    docs/model/index.md): the cap, software burn, power smoothing. Returns the waveform and
    the share of work throttled."""
    m, tdp = scenario.mitigation, scenario.gpu.tdp
    if m.power_cap is not None:
        per_gpu = np.minimum(per_gpu, m.power_cap)
    if m.software_burn is not None:
        per_gpu = mitigation.floor(per_gpu, m.software_burn * tdp)
    if m.smoothing is None:
        return per_gpu, 0.0
    sm = m.smoothing
    demand = mitigation.floor(per_gpu, sm.floor * tdp)
    smoothed = mitigation.smooth_periodic(
        demand, derived.step_time, sm.ramp_up, sm.ramp_down, sm.hysteresis
    )
    return smoothed, mitigation.throttled_share(smoothed, demand)


def _smoothing_floor(scenario: Scenario) -> float:
    sm = scenario.mitigation.smoothing
    return 0.0 if sm is None else sm.floor * scenario.gpu.tdp


def stop_ramps(
    scenario: Scenario,
    line: events.Timeline,
    per_gpu: np.ndarray,
    dt: float,
    paused: np.ndarray = NO_PAUSES,
) -> np.ndarray:
    """Per-GPU power limits across state changes: what each GPU draws [W], from the power
    [W] it would draw on the electrical grid (step ``dt`` [s]).

    Burn on job stop ramps down from the power of the interval before the job leaves the
    running state (in its timeline, or as a pause starts: ``paused`` [s]); power smoothing
    limits every rise and fall to its rates (within an iteration it already acts on the
    waveform, whose interval means then pass the limiter unchanged).
    """
    m = scenario.mitigation
    out = per_gpu
    if m.stop_burn is not None:
        was, now = line.state[:-1], line.state[1:]
        left = line.start[1:][(was == State.RUNNING) & (now != State.RUNNING)]
        left = np.unique(np.concatenate((left, paused)))
        before = np.clip((left // dt).astype(np.int64) - 1, 0, out.size - 1)
        out = mitigation.stop_ramp(
            out, left, out[before], m.stop_burn.ramp_down, dt, m.stop_burn.delay
        )
    if m.smoothing is not None:
        out = mitigation.slew(out, dt, m.smoothing.ramp_up, m.smoothing.ramp_down)
    return out


def failure_rng(seed: int, job: int = JOB) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(job, STREAM_FAILURES)))


def steps_rng(seed: int, job: int = JOB) -> np.random.Generator:
    """The job's steps' own stream: drawing them leaves the failures' draws as they were."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(job, STREAM_STEPS)))


def drawn_steps(
    scenario: Scenario,
    derived: Derived,
    line: events.Timeline,
    cells: np.ndarray,
    job: int = JOB,
) -> render.Steps | None:
    """The running segments' steps drawn with ``workload.variation``; None without it.

    One draw for the job (its steps start together on every GPU), so the cost follows the
    number of steps, not of GPUs. A step's level scales the running GPU power (``cells``, from
    :func:`shape_tables`), which reaches the IT power through the server supplies' slope. The
    steps render four quantities: :func:`shape_tables`' three, the third (the running share
    at the nominal token rate) unscaled, and the tokens trained, which a training step yields
    evenly over its length and an evaluation not at all (see :func:`with_trained`).
    """
    v = scenario.workload.variation
    if v is None:
        return None
    end = np.append(line.start[1:], line.duration)
    running = line.state == State.RUNNING
    extent = np.where(running, (end - line.start) / derived.step_time, 0.0)
    events_keys = v.model_dump(exclude={"distribution", "step_cv", "level_cv", "evaluation_level"})
    # the step counter at each stretch's start: the steps expected to have run before it
    counter = np.floor((np.cumsum(extent) - extent) / variation.mean_length(**events_keys))
    gpu = cells[0, State.RUNNING]
    # a step's activity scales the dynamic power; the leakage follows the die's temperature
    # (the plant path's leak_extra), not the step: it stays out of the scaled part
    leak = scenario.gpu.leakage(scenario.nominal_die())  # W per GPU
    dynamic = np.maximum(gpu - _cluster_mw(leak, scenario.cluster.n_gpus), 0.0)  # MW
    count, bound, level = variation.draw_steps(
        extent,
        counter.astype(np.int64),
        steps_rng(scenario.simulation.seed, job),
        **v.model_dump(),
        scale_range=_scale_range(scenario, dynamic * 1e6 / scenario.cluster.n_gpus, leak),
    )
    tokens = cells[2, State.RUNNING]
    scaled = np.array([dynamic, dynamic * _psu_slope(scenario), np.zeros_like(gpu), tokens])
    return render.Steps(
        shape=int(State.RUNNING),
        first=np.cumsum(count) - count,
        count=count,
        bound=bound,
        level=level,
        variable=render.cumulative_tables(scaled),
        uses=np.array([0, 0, 0, 1]),
    )


def with_trained(cells: np.ndarray, apart: bool) -> np.ndarray:
    """The cell tables to render: :func:`shape_tables`' with, where the tokens trained render
    ``apart`` (under variation: drawn steps; a clock-lock event), a fourth row for them (the
    third then stays the running share at the nominal token rate, which the leakage
    follows)."""
    return np.concatenate((cells, cells[2:])) if apart else cells


def _scale_range(scenario: Scenario, dynamic: np.ndarray, leak: float) -> tuple[float, float]:
    """The scales a drawn step may put on the dynamic part ``dynamic`` [W] of the running
    waveform, over the leakage ``leak`` [W] a GPU draws anyway: up to the board's limit (the
    power cap, else TDP) at its peak, down to a power floor (software burn, power smoothing) at
    its trough. A waveform already at its limit cannot rise."""
    m, tdp = scenario.mitigation, scenario.gpu.tdp
    room = _board_limit(scenario) - leak
    floor = max(_smoothing_floor(scenario), (m.software_burn or 0.0) * tdp) - leak
    peak, trough = float(dynamic.max()), float(dynamic.min())
    lowest = min(max(floor, 0.0) / trough, 1.0) if trough > 0 else 0.0
    return lowest, (max(room / peak, 1.0) if peak > 0 else 1.0)


def _board_limit(scenario: Scenario) -> float:
    """The most a GPU's board draws: its power cap, else its TDP. [W]"""
    tdp = scenario.gpu.tdp
    return min(scenario.mitigation.power_cap or tdp, tdp)


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
    for j, (name, part) in enumerate(_named_parts(scenario)):  # a campus: each workload's
        with _workload(name):
            preflight(part, memory=False)
            spec = scenario.campus.workloads[j]
            for event in _events_of(scenario, name):
                if spec.kind == "inference":
                    _check_fleet_event(scenario, spec.inference, event)
                else:
                    _check_lever(part, event)
    for event in scenario.flexibility if scenario.campus is None else ():
        _check_lever(scenario, event)
    derived = derive(scenario)
    plant_steps(scenario)
    disturbances.response(scenario)  # its triggers: a frequency record's excursions bounded
    facility.hourly_weather(scenario)
    return (derived, *shape_tables(scenario, derived))


def simulate(
    scenario: Scenario | str | Path, sensors: Sequence[str | sensors.Sensor] = ()
) -> xr.Dataset:
    """Simulate a scenario (or a preset name or TOML path, loaded as given) on its time grid.

    Parameters
    ----------
    scenario
        The scenario, a preset name or a TOML path.
    sensors
        Sensor chains (keys of :data:`SENSORS` or :class:`~powermodel.models.sensors.Sensor`)
        whose view of their default variable to add, as :func:`sensor_view` gives it; a chain
        the scenario's step cannot resolve is refused before the run.

    Returns
    -------
    xarray.Dataset
        On ``time`` (interval means, each labelled by its start, timezone-naive UTC): the
        electrical path ``gpu_power``, ``it_power``, ``facility_loss``, ``cooling_power``,
        ``misc_power``, ``facility_power``, ``pue`` (hourly), ``throughput``, ``job_state``; the
        plant path, held over each plant step: ``temp_air``, ``temp_wetbulb``, ``supply_temp``,
        ``gpu_temp``, ``clock_factor``, ``water_use`` (these, ``cooling_power``, the hourly
        ``pue`` and the constant ``misc_power`` are held at their own resolution and expanded
        when read, e.g. by ``.values``; ``ds.load()`` expands them all); the connection:
        ``grid_power``, ``grid_reactive_power``, ``grid_voltage`` (and ``bess_power``,
        ``bess_soc``, ``rack_storage_power`` with batteries). The interruptions on ``event``;
        ``goodput`` and ``effective_training_time``; the scenario as JSON in
        ``attrs["scenario"]``. With ``sensors``, each chain's view of its variable,
        ``<variable>_<key>`` (held lazily too, as its readings where they change, for a chain
        that reports every other step or less often).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    chains = _sensor_chains(sensors, scenario.simulation.dt)
    if scenario.campus is not None:
        ds = _campus(scenario, len(chains))
        for chain in chains:
            ds[f"{chain.variable}_{chain.key}"] = _reading(
                ds, chain, chain.variable, ds.attrs["dt"]
            )
        return annotate(ds)
    derived, cells, rate = preflight(scenario, len(chains))
    run = prepare(scenario, derived, cells, rate)
    n = scenario.simulation.n_steps
    chunks = run.chunks(0, n, CHUNK_STEPS)
    means = np.empty((run.tables.shape[0], n))
    for lo, hi in chunks:  # bounded temporaries: only the profile takes memory per step
        means[:, lo:hi] = run.render(lo, hi)
    path = run.plant(*run.plant_means(means))
    realised = run.realised(means)
    variables = _assembled(run, path, means, chunks)
    if scenario.disturbance is not None:
        changed = _through_disturbances(scenario, variables, [(scenario, variables["it_power"])])
        batteries = changed.pop("batteries")
        merged = {**variables, **changed, **_storage_variables([], batteries)}
        variables = {name: merged[name] for name in ORDER if name in merged}
    ds = run.dataset(path, variables, 0)
    ds.update(
        {
            **run_totals(run, path, realised, variables["throughput"]),
            **event_variables(scenario, run.line),
            "effective_training_time": ((), run.effective_training_time),
            **disturbances.variables(scenario),
        }
    )
    if scenario.flexibility:
        ds.update(flex_variables(scenario, [run], [ds["it_power"].values]))
    for chain in chains:  # the profile's own step: no need to read it back from its times
        ds[f"{chain.variable}_{chain.key}"] = _reading(ds, chain, chain.variable, run.dt, True)
    return annotate(ds)


def _sensor_chains(chosen: Sequence[str | sensors.Sensor], dt: float) -> list[sensors.Sensor]:
    """The chains asked for, once each, every one checked against the step ``dt`` [s]."""
    if isinstance(chosen, str | sensors.Sensor):
        chosen = [chosen]
    chains = list({c.key: c for c in map(sensors.lookup, chosen)}.values())
    for chain in chains:
        sensors.check_resolves(chain, dt, fix="set simulation.dt to that or finer")
    return chains


def sensor_view(
    ds: xr.Dataset, sensor: str | sensors.Sensor, variable: str | None = None
) -> xr.DataArray:
    """A variable of a profile as a sensor chain reports it, on the profile's own ``time``.

    Parameters
    ----------
    ds
        A profile from :func:`simulate` or read back from a file powermodel wrote (it needs
        ``attrs["dt"]``, its step [s], and a uniform ``time`` of that step).
    sensor
        A key of :data:`SENSORS` (``"nvml"``, ``"revenue"``, ...) or a
        :class:`~powermodel.models.sensors.Sensor`.
    variable
        The variable read; by default the chain's own (``gpu_power`` for NVML, ``grid_power``
        for the meters).

    Returns
    -------
    xarray.DataArray
        ``<variable>_<sensor key>`` (``gpu_power_nvml``): at each interval, the reading a poll
        at the interval's end (its ``time`` + dt) gets, held between reports for chains that
        report less often than every step (:func:`powermodel.models.sensors.read`). Add it with
        ``ds[view.name] = view``.
    """
    chain = sensors.lookup(sensor)
    name = chain.variable if variable is None else variable
    if name not in ds.data_vars or ds[name].dims != ("time",) or ds[name].dtype.kind != "f":
        series = [v for v in ds.data_vars if ds[v].dims == ("time",) and ds[v].dtype.kind == "f"]
        raise PowerModelError(
            f"the profile has no time series {name!r} to read through the {chain.label} "
            f"sensor: choose one of {', '.join(map(str, series))}"
        )
    return _view(ds, chain, name, _profile_step(ds))


def _view(ds: xr.Dataset, chain: sensors.Sensor, name: str, dt: float) -> xr.DataArray:
    """:func:`sensor_view` of the variable ``name`` of a profile of step ``dt`` [s]."""
    view = xr.DataArray(_reading(ds, chain, name, dt), coords={"time": ds["time"]})
    return view.rename(f"{name}_{chain.key}")


def _reading(
    ds: xr.Dataset, chain: sensors.Sensor, name: str, dt: float, held: bool = False
) -> xr.Variable:
    """The readings of :func:`_view` on ``time``, with their attrs (no coordinate to build:
    ``simulate`` adds them to the profile it made, whose ``time`` they share). With ``held``,
    where the chain reports every other step or less often, held as its readings where they
    change and read when read (as the plant path's variables are): a revenue meter's 96 block
    demands a day, not one a step."""
    attrs = sensor_attrs(name, chain, ds[name].attrs.get("units"))
    values = np.asarray(ds[name].values, dtype=np.float64)
    if held and chain.period >= 2.0 * dt:
        readings, start = sensors.read_changes(values, dt, chain)
        return xr.Variable("time", _lazy(_Pieces(readings, start, values.size)), attrs)
    return xr.Variable("time", sensors.read(values, dt, chain), attrs)


def _profile_step(ds: xr.Dataset) -> float:
    """The step [s] of a profile whose ``attrs["dt"]`` its ``time`` bears out: a uniform grid of
    that step (to a nanosecond a step, as times are stored), else a clear error. A step that
    disagrees with the times would read every window at the wrong length, silently."""
    if "dt" not in ds.attrs:
        raise PowerModelError(
            "the profile has no attrs['dt'] (its step): read it through the sensor from "
            "simulate() or a file powermodel wrote"
        )
    try:
        dt = float(ds.attrs["dt"])
    except (TypeError, ValueError):
        dt = float("nan")
    if not (np.isfinite(dt) and dt > 0.0):
        raise PowerModelError(
            f"the profile's attrs['dt'] must be a step > 0 s, got {ds.attrs['dt']!r}"
        )
    time = ds["time"].values
    if time.dtype.kind not in "mM":
        raise PowerModelError(
            f"the profile's time must be datetimes to check its step against attrs['dt'], got "
            f"{time.dtype}"
        )
    if time.size < 2:
        return dt
    steps = np.diff(time)
    low, high = (float(v / np.timedelta64(1, "s")) for v in (steps.min(), steps.max()))
    if not (abs(low - dt) <= 2e-9 + 1e-9 * dt and abs(high - dt) <= 2e-9 + 1e-9 * dt):
        seen = (
            f"its time steps by {format_duration(low)}"
            if high - low <= 2e-9 + 1e-9 * dt
            else f"its time is not a uniform grid (steps from {low:g} to {high:g} s)"
        )
        raise PowerModelError(
            f"the profile's attrs['dt'] is {format_duration(dt)} but {seen}: a sensor needs the "
            "step the samples are on; set attrs['dt'] to it, or resample to a uniform grid first"
        )
    return dt


@dataclass(frozen=True)
class Run:
    """What a run renders its profile from, any range of its steps at a time: the job timeline,
    the cell tables and drawn steps, the plant step. :func:`simulate` renders the whole run at
    once; :mod:`powermodel.stream` renders it in chunks, with the same values."""

    scenario: Scenario
    derived: Derived
    line: events.Timeline
    rate: np.ndarray  # each shape's rate [1/s]
    tables: np.ndarray  # cumulative cell tables of what is rendered
    steps: render.Steps | None
    k: int  # electrical steps a plant step
    token_rate: float  # tokens/s of the running job at the nominal clock
    # shares of the job that follow other states through windows: failed replicas' recoveries
    # (reliability.scope "replica"), flexibility events
    overlays: tuple[Overlay, ...] = ()
    # an async checkpoint's background write: its timeline (starts, 1 while writing) and the
    # cumulative table of the IT power it adds [MW]
    writes: tuple[np.ndarray, np.ndarray] | None = None
    write_table: np.ndarray | None = None

    @property
    def dt(self) -> float:
        return self.scenario.simulation.dt

    @property
    def paused(self) -> np.ndarray:
        """When the whole job pauses for a flexibility event [s]."""
        return _pauses(self.overlays)[0]

    @property
    def effective_training_time(self) -> float:
        """Training time kept, as a fraction of the run (:func:`kept_training`). [1]"""
        return kept_training(self.line, self.overlays)

    def render(self, lo: int, hi: int) -> np.ndarray:
        """The rendered means of steps ``lo`` to ``hi``: ``gpu_power`` and ``it_power`` [MW], the
        throughput at the nominal clock [tokens/s] (under variation, then the tokens trained)."""
        edges = np.arange(lo, hi + 1) * self.dt
        line = self.line
        state = line.state.astype(np.int64)
        means = render.interval_means(line.start, state, self.rate, self.tables, edges, self.steps)
        for o in self.overlays:  # a share of the job follows other states, on other tables
            job, own = render.window_sums(
                line.start, state, self.rate, self.tables, o.windows, self.dt, lo, hi,
                self.steps, o.rate, o.tables,
            )  # fmt: skip
            means += o.share * (own - job)
        if self.writes is not None:  # the IT power of the background writes
            start, writing = self.writes
            means[1] += render.interval_means(start, writing, WRITE_RATE, self.write_table, edges)[
                0
            ]
        return means

    def per_gpu(self, gpu_power: np.ndarray) -> np.ndarray:
        """What each GPU draws as rendered [W], from the rendered ``gpu_power`` [MW] (the first
        of :meth:`render`'s means)."""
        return gpu_power * 1e6 / self.scenario.cluster.n_gpus

    def plant_means(self, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The plant-step means of the rendered board power per GPU [W] and IT power [MW],
        from :meth:`render`'s means over whole plant steps."""
        k = self.k
        return _block_mean(means[0], k, self.per_gpu), _block_mean(means[1], k)

    def plant(self, per_gpu: np.ndarray, heat: np.ndarray) -> facility.PlantPath:
        """The plant path from the plant-step means of the rendered board power per GPU [W] and
        IT power [MW], at the middle of each plant step. Weather → plant → inlet → die
        temperature → clocks, leakage and server fans."""
        scenario, plant_dt = self.scenario, self.k * self.dt
        start = _times(scenario.simulation.start, np.arange(heat.size) * self.k * self.dt)
        middle = start + _timedelta(plant_dt / 2.0)
        design = facility.design_it_power(scenario)
        path = facility.plant_path(scenario, middle, heat * 1e6, per_gpu, plant_dt, design)
        return self.locked(path)

    def locked(self, path: facility.PlantPath) -> facility.PlantPath:
        """The plant path with each clock-lock event on the plant steps in it (by their
        middles): the step relative to the locked step its shapes already hold (longer only
        where the die throttles below the lock), and every phase's leakage following the die
        (off the cap). ``clock_factor`` stays the clock the heat allows: the lock is the
        event's (``flex_setting``), not the weather's."""
        locks = [o for o in self.overlays if o.clock is not None]
        if not locks:
            return path
        scenario, gpu = self.scenario, self.scenario.gpu
        middle = (np.arange(path.clock_factor.size) + 0.5) * self.k * self.dt
        step, leak = path.step_factor.copy(), path.leak_extra.copy()
        share, nominal = scenario.compute_share, scenario.nominal_die()
        for o in locks:
            inside = events.within(o.windows.begin, o.windows.end, middle)[0]
            free = path.clock_factor[inside]
            off_cap = np.where(free > o.clock, 1.0, 1.0 - share)
            die = path.gpu_temp[inside].astype(np.float64)
            leak[inside] = off_cap * (gpu.leakage(die) - gpu.leakage(nominal))
            step[inside] = thermal.step_stretch(np.minimum(free, o.clock), o.clock, share)
        return replace(path, step_factor=step, leak_extra=leak)

    def profile(
        self, path: facility.PlantPath, means: np.ndarray, lo: int, held: bool = True
    ) -> dict[str, np.ndarray | _Pieces]:
        """The profile's variables on ``time`` over the steps from ``lo`` that ``means``
        (:meth:`render`'s) cover, completed by the plant path stage by stage: what the GPUs
        and racks finally draw, the facility around them, the connection, the training they
        buy. Piecewise-constant ones as :class:`_Pieces`; without ``held``, leaves out those
        :meth:`held` gives.

        PUE is hourly: a range of steps from the start of an hour to the start of another (or
        the run's end) has the whole run's values (:meth:`chunks`)."""
        scenario, line, k, dt = self.scenario, self.line, self.k, self.dt
        gpu_power, it_power, nominal_throughput = means[:3]
        trained = means[3] if means.shape[0] > 3 else nominal_throughput  # see drawn_steps
        n = gpu_power.size
        per_gpu = self.per_gpu(means[0])
        running = nominal_throughput / self.token_rate  # share of each interval spent training
        gpu_power, it_power = _it_path(
            scenario, line, per_gpu, it_power, running, path, k, lo, self.paused
        )
        it_power, rack = facility.storage(scenario, "rack", it_power, dt)
        site = _facility(scenario, it_power, path.cooling_power, k, lo)
        # through grid disturbances the connection follows the whole run (the recharge):
        # simulate adds it once the run is whole (_through_disturbances)
        connection, bess = (
            ({}, [])
            if scenario.disturbance is not None
            else _connection(scenario, it_power, site, dt)
        )
        state = self.state_at((np.arange(lo, lo + n) + 0.5) * dt)
        return {
            "gpu_power": gpu_power,
            "it_power": it_power,
            "facility_loss": site["facility_loss"],
            "facility_power": site["facility_power"],
            **connection,
            **_storage_variables(rack, bess),
            "pue": _hourly_ratio(site["facility_power"], it_power, dt, lo),
            "throughput": trained / _over(path.step_factor, k, lo, n),
            "job_state": state.astype(np.int8),
            **(self.held(path, lo, n) if held else {}),
        }

    def held(self, path: facility.PlantPath, lo: int, n: int) -> dict[str, _Pieces]:
        """The variables constant over each plant step (the plant path's state, the cooling
        power [MW]) or over the run (the misc power [MW]), over the ``n`` steps from ``lo``."""
        k = self.k
        return {
            "cooling_power": _held(path.cooling_power / 1e6, k, lo, n),
            "misc_power": _held(np.array([_misc(self.scenario)]), lo + n, lo, n),
            **{
                name: _held(_single(name, getattr(path, name)), k, lo, n, np.float32)
                for name in HELD
            },
        }

    def chunks(self, lo: int, hi: int, size: int) -> list[tuple[int, int]]:
        """Steps ``lo`` to ``hi`` (``lo`` the start of an hour) in ranges of about ``size``
        steps, each from the start of a clock hour (hourly PUE stays whole); one range where a
        filter runs over the whole run (power smoothing, burn on job stop, batteries)."""
        if sequential(self.scenario):
            return [(lo, hi)]
        dt = self.dt
        hours = _hour_starts(lo, hi, dt)
        cuts = [lo]
        while cuts[-1] + size < hi:
            # the first step of an hour at or after the next cut (an hour spans 3600 / dt steps)
            at = np.searchsorted(hours, cuts[-1] + size)
            if at == hours.size or hours[at] >= cuts[-1] + size + int(3600 / dt) + 2:
                break
            cuts.append(int(hours[at]))
        return list(zip(cuts, [*cuts[1:], hi], strict=True))

    def campus_job(self, means: np.ndarray, path: facility.PlantPath, scale: float) -> dict:
        """This job's own series as a campus workload on the site's plant (``path``), from its
        rendered ``means`` over the whole run: what its GPUs and racks draw (its ``scale``
        share of the rack batteries in front of them), its throughput and states, its
        goodput."""
        scenario, line, k, dt = self.scenario, self.line, self.k, self.dt
        n = means.shape[1]
        running = means[2] / self.token_rate
        gpu_power, it_power = _it_path(
            scenario, line, self.per_gpu(means[0]), means[1], running, path, k, 0, self.paused
        )
        it_power, rack = facility.storage(scenario, "rack", it_power, dt, scale)
        trained = means[3] if means.shape[0] > 3 else means[2]
        throughput = trained / _over(path.step_factor, k, 0, n)
        state = self.state_at((np.arange(n) + 0.5) * dt)
        totals = run_totals(self, path, self.realised(means), throughput)
        attrs = self.attrs(path)
        return {
            "gpu_power": gpu_power,
            "it_power": it_power,
            "rack": rack,
            "throughput": throughput,
            "job_state": state.astype(np.int8),
            "clock_factor": _over(path.clock_factor, k, 0, n).astype(np.float32),
            "goodput": totals["goodput"][1],
            "attrs": {key: float(attrs[key]) for key in JOB_ATTRS},
        }

    def state_at(self, times: np.ndarray) -> np.ndarray:
        """The job's state at each of ``times`` [s]: its timeline's, or inside a window where the
        whole job follows other states (a pause), those."""
        line = self.line
        state = render.state_at(line.start, line.state, times)
        for o in self.overlays:
            if o.share < 1.0 or not o.stops:
                continue
            w = o.windows
            inside, at = events.within(w.begin, w.end, times)
            own = w.origin[at[inside]] + (times[inside] - w.begin[at[inside]])
            state[inside] = render.state_at(w.seg_start, w.seg_state, own)
        return state

    def tokens_lost(self, event: FlexEvent) -> float:
        """Tokens ``event`` costs the job [token]: what the job would have trained in its
        window less what it trains there (at the nominal clock, as rendered)."""
        line, out = self.line, 0.0
        for o in self.overlays:
            if o.event is not event:
                continue
            row = self.tables.shape[0] - 1  # the tokens trained
            w, state = o.windows, line.state.astype(np.int64)
            for b, e, origin in zip(w.begin, w.end, w.origin, strict=True):
                job = render.interval_means(
                    line.start, state, self.rate, self.tables, np.array([b, e]), self.steps
                )[row, 0]
                own = render.interval_means(
                    w.seg_start, w.seg_state, o.rate, o.tables, np.array([origin, origin + e - b])
                )[row, 0]
                out += o.share * (job - own) * (e - b)
        return out

    def realised(self, means: np.ndarray) -> float:
        """The share of the nominal token rate a run with variation trains (evaluations and
        stragglers train none), from :meth:`render`'s means over the whole run; 1 without (a
        clock-lock event's slower tokens are its own: the work failures lose is priced at the
        job's rate)."""
        return 1.0 if self.steps is None else share_of(means[3], means[2])

    def dataset(
        self, path: facility.PlantPath, variables: dict[str, np.ndarray | _Pieces], lo: int
    ) -> xr.Dataset:
        """The profile over the steps from ``lo`` that ``variables`` (:meth:`profile`'s, in the
        order of :data:`ORDER`) cover, as a Dataset with its attrs and units."""
        n = variables["gpu_power"].size
        ds = xr.Dataset(
            {name: ("time", _lazy(values)) for name, values in variables.items()},
            # an index already (not an array xarray would first ask whether dask holds)
            coords={
                "time": pd.DatetimeIndex(
                    _step_times(self.scenario.simulation.start, lo, n, self.dt), copy=False
                )
            },
            attrs=self.attrs(path),
        )
        ds["job_state"].attrs.update(
            flag_values=[s.value for s in State],
            flag_meanings=" ".join(s.name.lower() for s in State),
        )
        if "grid_event" in ds:
            ds["grid_event"].attrs.update(
                flag_values=list(range(len(disturbances.EVENT_CODES))),
                flag_meanings=" ".join(c.replace(" ", "_") for c in disturbances.EVENT_CODES),
            )
        return annotate(ds)

    def attrs(self, path: facility.PlantPath) -> dict:
        """The profile's attrs: the scenario, its step, what it implies."""
        scenario, derived = self.scenario, self.derived
        return dict(
            title=f"powermodel: {scenario.name or 'scenario'}",
            scenario=scenario.to_json(),
            site_timezone=scenario.site.timezone,
            weather=facility.hourly_weather(scenario).source,
            time_label="start of each interval; values are interval means",
            dt=self.dt,
            plant_dt=self.k * self.dt,
            step_time=derived.step_time,
            compute_share=scenario.compute_share,
            clock_setpoint=path.clock_setpoint,
            clock_lock=scenario.mitigation.clock_lock or 1.0,
            checkpoint_interval=derived.checkpoint_interval if derived.checkpoints else np.inf,
            checkpoint_stall=derived.checkpoint_stall,
            token_rate=self.token_rate,
            registered_demand=facility.registered_demand(scenario),
            **gpu_attrs(scenario),
            powermodel_version=__version__,
        )


def prepare(
    scenario: Scenario,
    derived: Derived,
    cells: np.ndarray,
    rate: np.ndarray,
    job: int = JOB,
    launch: tuple[float, float] = (0.0, 0.0),
    flex: Sequence[FlexEvent] | None = None,
) -> Run:
    """The run of a scenario, from :func:`preflight`'s ``derived``, ``cells`` and ``rate``: its
    timeline and drawn steps, ready to render (a campus workload's ``job`` and ``launch``
    as :func:`timeline` takes them); with the flexibility events ``flex`` that target it
    (by default the scenario's own)."""
    flex = scenario.flexibility if flex is None else flex
    line = timeline(scenario, derived, job, launch)
    steps = drawn_steps(scenario, derived, line, cells, job)
    # a clock lock's overlay trains fewer tokens while its GPUs still run: the tokens trained
    # render apart from the running share (as under variation)
    apart = steps is not None or any(event.lever == "clock" for event in flex)
    tables = render.cumulative_tables(with_trained(cells, apart))
    token_rate = cells[2, State.RUNNING, 0]
    run = Run(scenario, derived, line, rate, tables, steps, plant_steps(scenario), token_rate)
    overlays = [_flex_overlay(run, cells, event) for event in flex]
    paused = _pauses(overlays)
    line = _outside(line, paused)  # a paused job does not fail
    windows = failed_replicas(scenario, derived, line, paused[0])
    if windows is not None:
        share = scenario.replica_gpus / scenario.cluster.n_gpus
        overlays.append(Overlay(windows, share, *_closed_tables(rate, tables), stops=True))
    run = replace(run, line=line, overlays=tuple(overlays))
    ck = scenario.checkpoint
    if ck.mode == "async" and ck.background_power > 0 and derived.checkpoints:
        write = derived.checkpoint_done - derived.checkpoint_stall
        writes = events.background_writes(
            line, write, cut=scenario.reliability.scope == "job", paused=paused
        )
        power = _cluster_mw(ck.background_power, scenario.cluster.n_gpus)
        table = render.cumulative_tables(np.array([[[0.0], [power]]]))
        run = replace(run, writes=writes, write_table=table)
    return run


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


def _pauses(overlays: Sequence[Overlay]) -> tuple[np.ndarray, np.ndarray]:
    """When the whole job pauses (its overlays that stop all of it: flexibility pauses), the
    starts and ends [s], in order (an hour apart at least: the events' rule)."""
    whole = [o.windows for o in overlays if o.stops and o.share == 1.0]
    if not whole:
        return NO_PAUSES, NO_PAUSES
    begin, end = (np.concatenate([getattr(w, k) for w in whole]) for k in ("begin", "end"))
    order = np.argsort(begin)
    return begin[order], end[order]


def _closed_tables(rate: np.ndarray, tables: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shapes' rates and cumulative tables with the closing shape of nothing appended (the
    state after the last of :class:`State`)."""
    nothing = np.zeros(tables.shape[:1] + (1,) + tables.shape[2:])
    return np.append(rate, 1.0), np.concatenate((tables, nothing), axis=1)


# the clocks a flexibility event may lock a training job at [1]: below, the phases' law is far
# from where it was measured
LOWEST_FLEX_CLOCK = 0.3


def _flex_overlay(run: Run, cells: np.ndarray, event: FlexEvent) -> Overlay:
    """The whole job through a flexibility event: a pause checkpoints, stops until the end,
    then restarts; a clock lock runs the job's own states on the locked clock's shapes."""
    scenario, derived, line = run.scenario, run.derived, run.line
    begin = np.array([(event.start - scenario.simulation.start).total_seconds()])
    closed = len(State)
    if event.lever == "pause":
        stall = derived.checkpoint_stall
        sequence = (
            (State.CHECKPOINT, stall),
            (State.MAINTENANCE, max(event.duration - stall, 0.0)),
            *startup(scenario, derived),
        )
        windows = events.recovery_windows(
            line, begin, [sequence], np.zeros(1, np.int64), derived.step_time, closed
        )
        return Overlay(windows, 1.0, *_closed_tables(run.rate, run.tables), True, event)
    _check_lever(scenario, event)
    clock = _flex_clock(scenario, cells, event)
    locked = scenario.model_copy(
        update={"mitigation": scenario.mitigation.model_copy(update={"clock_lock": clock})}
    )
    slow_cells, slow_rate = shape_tables(locked, derive(locked))
    # the GPUs run through the event: the running share stays the job's, the tokens are slower
    slow_cells = np.concatenate((slow_cells[:2], cells[2:3], slow_cells[2:]))
    tables = render.cumulative_tables(slow_cells)
    windows = events.clipped_windows(line, begin, begin + event.duration, closed)
    return Overlay(windows, 1.0, *_closed_tables(slow_rate, tables), False, event, clock)


def _check_lever(scenario: Scenario, event: FlexEvent) -> None:
    """A clock-lock event needs a GPU whose clock can be locked."""
    if event.lever == "clock" and "clock_lock" not in scenario.gpu.levers:
        raise ScenarioError(
            f"flexibility {event.name!r}: the {scenario.gpu.name} has no clock lock (its levers: "
            f"{', '.join(scenario.gpu.levers)}): use the lever 'pause'"
        )


def _event_inlet(scenario: Scenario, heat: float, event: FlexEvent) -> float:
    """The servers' mean inlet over ``event`` [°C]: the plant from an hour before it (its lags
    settle) to its end, with the job drawing ``heat`` [MW]."""
    sim, plant_dt = scenario.simulation, plant_steps(scenario) * scenario.simulation.dt
    begin = (event.start - sim.start).total_seconds()
    first = max(begin - HOUR_S, 0.0)
    count = max(int(np.ceil((begin + event.duration - first) / plant_dt)), 1)
    middle = _times(sim.start, first + (np.arange(count) + 0.5) * plant_dt)
    heat = np.full(count, heat * 1e6)
    site = facility.site_plant(scenario, middle, heat, plant_dt, facility.design_it_power(scenario))
    during = first + (np.arange(count) + 0.5) * plant_dt >= begin
    return float(site.out.supply_temp[during].mean() + scenario.cooling.inlet_offset)


def _flex_clock(scenario: Scenario, cells: np.ndarray, event: FlexEvent) -> float:
    """The clock lock that lowers the training job's IT power by ``reduction`` [1] of what it
    draws training, found between :data:`LOWEST_FLEX_CLOCK` and its own clock.

    What it draws is the shapes' mean with the leakage of its dies at the event's inlet: the
    plant run over the event with the job training (:func:`_event_inlet`), each die at its
    steady temperature there. A locked GPU runs off its cap, so all of its leakage follows its
    die; a free one holds its cap in compute phases, so only the other phases' does. The
    reduction holds once the dies have settled, within their thermal time constant of the start.
    """
    cl = scenario.cluster
    inlet = _event_inlet(scenario, float(cells[1, State.RUNNING].mean()), event)
    nominal = scenario.nominal_die()
    slope = _psu_slope(scenario)

    def drawn(clock: float | None) -> float:
        """The job's IT power training at a locked ``clock`` (None: its own) [MW]."""
        locked = scenario.model_copy(
            update={"mitigation": scenario.mitigation.model_copy(update={"clock_lock": clock})}
        )
        mean = (cells if clock is None else shape_tables(locked, derive(locked))[0])[
            :, State.RUNNING
        ].mean(axis=1)
        off_cap = 1.0 if clock is not None else 1.0 - scenario.compute_share
        board = mean[0] * 1e6 / cl.n_gpus
        return float(mean[1] + _settled(scenario, inlet, board, nominal, slope, off_cap))

    training = drawn(scenario.mitigation.clock_lock)

    def shed(clock: float) -> float:
        return 1.0 - drawn(clock) / training - reduction

    reduction = event.reduction
    top = scenario.mitigation.clock_lock or 1.0
    most = shed(LOWEST_FLEX_CLOCK) + reduction
    if most < reduction:
        raise ScenarioError(
            f"a clock lock sheds at most {most:.0%} of the job's IT power (at "
            f"{LOWEST_FLEX_CLOCK:g} of its clock), less than the {reduction:.0%} asked: lower "
            "the reduction, or pause the job (lever 'pause')"
        )
    return float(optimize.brentq(shed, LOWEST_FLEX_CLOCK, top, xtol=1e-12))


def _settled(
    scenario: Scenario,
    inlet: float,
    board: np.ndarray | float,
    reference: np.ndarray | float,
    slope: float,
    off_cap: float = 1.0,
) -> np.ndarray | float:
    """What a job's dies and fans settled at ``inlet`` [°C] add to its IT power [MW]: each
    GPU's leakage at its steady die temperature (from its board power [W]) over that at the
    ``reference`` die temperature [°C] its power curve holds at (``off_cap``: the share of it
    that shows as power, not as clock), and the server fans at that inlet, through the
    supplies at ``slope`` [W AC a W DC]."""
    gpu, cl = scenario.gpu, scenario.cluster
    die = thermal.steady_gpu_temperature(inlet, board, gpu.thermal_resistance)
    leak = off_cap * (gpu.leakage(die) - gpu.leakage(reference))
    fans = server_fan_extra(facility.server_fan_speed(scenario, inlet), cl.fans.power)
    return (cl.gpus_per_node * leak + fans) * slope * cl.n_nodes / 1e6


def launch_delay(scenario: Scenario, derived: Derived, job: int) -> tuple[float, float]:
    """When a campus's independent workload ``job`` starts after the run's start [s], uniform
    over one of its steps, and how far into its checkpoint cycle [s], uniform over its
    interval, from its own stream: its iterations and checkpoints keep no phase with the
    others', and it waits idle a step at most."""
    seeds = np.random.SeedSequence(scenario.simulation.seed, spawn_key=(job, STREAM_LAUNCH))
    rng = np.random.default_rng(seeds)
    into = derived.checkpoint_interval if derived.checkpoints else 0.0
    return float(rng.uniform(0.0, derived.step_time)), float(rng.uniform(0.0, into))


def _campus(scenario: Scenario, sensors: int = 0) -> xr.Dataset:
    """:func:`simulate` of a campus: each workload rendered as a job of its own, its servers on
    its hall's plant; the halls' IT power, losses and plants summed at the connection."""
    check_memory(scenario, sensors)
    sim, dt, k = scenario.simulation, scenario.simulation.dt, plant_steps(scenario)
    n, parts = sim.n_steps, scenario.parts
    runs, means = _campus_runs(scenario)
    paths, plants = _campus_plants(scenario, runs, means)
    # the site's rack batteries, shared by the workloads' racks in proportion to their nameplate
    nameplate = np.array([facility.design_it_power(p) for p in parts])
    jobs = [
        run.campus_job(m, path, scale)
        for run, m, path, scale in zip(runs, means, paths, nameplate / nameplate.sum(), strict=True)
    ]
    halls = [
        _hall_power(hall, [parts[j] for j in members], [jobs[j] for j in members], plant, k)
        for (hall, members), plant in zip(scenario.hall_members(), plants, strict=True)
    ]
    site = {key: sum(h[key] for h in halls) for key in halls[0]}
    if scenario.disturbance is None:
        load, reactive = site["facility_power"], site["grid_reactive_power"]
        connection, bess = _at_connection(scenario, load, reactive, dt)
        disturbed = {}
    else:
        supplies = [(part, job["it_power"]) for part, job in zip(parts, jobs, strict=True)]
        disturbed = _through_disturbances(scenario, site, supplies)
        bess = disturbed.pop("batteries")
        connection = {key: disturbed.pop(key) for key in CONNECTION}
    training = [isinstance(run, Run) for run in runs]
    # the job-level attrs and the plant state shown are the largest training job's, its
    # water and chillers the campus's
    largest = int(np.argmax([p.cluster.n_gpus * t for p, t in zip(parts, training, strict=True)]))
    shown = replace(
        paths[largest],
        water_use=sum(site_plant.out.water_use for site_plant, _, _ in plants),
        chiller_load=sum(site_plant.out.chiller_load for site_plant, _, _ in plants),
    )
    trains = [job for job, t in zip(jobs, training, strict=True) if t]
    variables = {
        "gpu_power": sum(job["gpu_power"] for job in jobs),
        "it_power": site["it_power"],
        "facility_loss": site["facility_loss"],
        "facility_power": site["facility_power"],
        **connection,
        **_storage_variables([r for job in jobs for r in job["rack"]], bess),
        "pue": _hourly_ratio(site["facility_power"], site["it_power"], dt),
        # tokens trained: an inference fleet's served tokens are its own workload's
        "throughput": sum(job["throughput"] for job in trains),
        # the campus's state: at each instant its training jobs' strongest (a failure of any
        # shows), so that the rules attribute a swing to the workload that made it
        "job_state": _strongest([job["job_state"] for job in trains]),
        **runs[largest].held(shown, 0, n),
        "cooling_power": _held(sum(c for _, c, _ in plants) / 1e6, k, 0, n),
        "misc_power": _held(np.array([site["misc_power"]]), n, 0, n),
        **disturbed,
    }
    ds = runs[largest].dataset(shown, {v: variables[v] for v in ORDER if v in variables}, 0)
    ds = ds.assign_coords(workload=[w.name for w in scenario.campus.workloads])
    ds.update(_workload_variables(scenario, runs, jobs))
    ds["chiller_hours"] = run_totals(runs[largest], shown, 1.0, jobs[0]["throughput"])[
        "chiller_hours"
    ]
    if scenario.campus.halls:
        ds = ds.assign_coords(hall=[h.name for h in scenario.campus.halls])
        ds.update(
            {
                f"hall_{key}": (("hall", "time"), np.stack([h[key] for h in halls]))
                for key in ("it_power", "cooling_power", "facility_power")
            }
        )
        ds["workload_hall"] = (
            "workload",
            np.array([scenario.campus.hall_of(w) for w in scenario.campus.workloads], object),
        )
    if scenario.flexibility:
        ds.update(flex_variables(scenario, runs, [job["it_power"] for job in jobs]))
    ds.update(disturbances.variables(scenario))
    ds.attrs.update(
        scenario=scenario.to_json(),
        title=f"powermodel: {scenario.name or 'campus'}",
        registered_demand=facility.registered_demand(scenario),
        campus_aligned=int(scenario.campus.aligned),
        **gpu_attrs(scenario),
    )
    return annotate(ds)


def _campus_runs(scenario: Scenario) -> tuple[list[Run | _Fleet], list[np.ndarray]]:
    """Each campus workload made ready and rendered over the whole run: a training job (its
    own draws and launch unless aligned, the flexibility events on it) or a fleet."""
    aligned, n = scenario.campus.aligned, scenario.simulation.n_steps
    runs = []
    for j, (name, part) in enumerate(_named_parts(scenario)):
        spec, job = scenario.campus.workloads[j], JOB if aligned else j
        with _workload(name):
            flex = _events_of(scenario, name)
            if spec.kind == "inference":
                runs.append(_Fleet(part, spec.inference, job, flex))
                continue
            derived, cells, rate = preflight(part, memory=False)
            launch = (0.0, 0.0) if aligned else launch_delay(part, derived, j)
            runs.append(prepare(part, derived, cells, rate, job, launch, flex))
    return runs, [run.render(0, n) for run in runs]


def _campus_plants(
    scenario: Scenario, runs: list[Run | _Fleet], means: list[np.ndarray]
) -> tuple[list[facility.PlantPath], list[tuple[facility.SitePlant, np.ndarray, float]]]:
    """Each hall's plant on its workloads' heat, sized for their nameplate; each workload's
    servers on its hall's plant (its plant path), the hall's plant power [W] on its path.
    Returns the paths, in the workloads' order, and each hall's plant, plant power [W] and
    nameplate IT power [W]."""
    sim, k, parts = scenario.simulation, plant_steps(scenario), scenario.parts
    plant_means = [run.plant_means(m) for run, m in zip(runs, means, strict=True)]
    middle = _times(sim.start, (np.arange(plant_means[0][1].size) + 0.5) * k * sim.dt)
    paths: list[facility.PlantPath] = [None] * len(runs)
    plants = []
    for hall, members in scenario.hall_members():
        heat = sum(plant_means[j][1] for j in members) * 1e6
        design = sum(facility.design_it_power(parts[j]) for j in members)
        site = facility.site_plant(hall, middle, heat, k * sim.dt, design)
        cooling = facility.campus_cooling(hall, site, [parts[j] for j in members])
        plants.append((site, cooling, design))
        for j in members:
            path = facility.job_path(parts[j], site, plant_means[j][0], k * sim.dt)
            paths[j] = runs[j].locked(replace(path, cooling_power=cooling))
    return paths, plants


def _hall_power(
    hall: Scenario,
    parts: list[Scenario],
    jobs: list[dict],
    plant: tuple[facility.SitePlant, np.ndarray, float],
    k: int,
) -> dict[str, np.ndarray]:
    """A hall's IT power, its chain's losses, its plant and misc loads, its facility power
    [MW] and its reactive power [Mvar] (its workloads' supplies), from its workloads' series
    (``jobs``) and its plant (plant power [W], nameplate [W])."""
    _, cooling, design = plant
    it = sum(job["it_power"] for job in jobs)
    power = _facility(hall, it, cooling, k, 0, design)
    other = power["cooling_power"] + power["misc_power"]
    supplies = [(part, job["it_power"]) for part, job in zip(parts, jobs, strict=True)]
    reactive = facility.reactive_power(hall, it, power["facility_loss"], other, supplies)
    return {"it_power": it, **power, "grid_reactive_power": reactive}


def _workload_variables(
    scenario: Scenario, runs: list[Run | _Fleet], jobs: list[dict]
) -> dict[str, tuple]:
    """A campus's variables on ``workload`` and its events (each labelled by its workload),
    and its totals of what they trained."""
    parts, workloads = scenario.parts, scenario.campus.workloads
    training = np.array([isinstance(run, Run) for run in runs])
    gpus = np.array([p.cluster.n_gpus for p in parts])
    kept = np.array([run.effective_training_time for run in runs])  # a fleet: serving
    names = np.array([w.name for w in workloads], dtype=object)
    lines = [(part, run.line) for part, run in zip(parts, runs, strict=True) if run.line]
    events = [event_variables(part, line) for part, line in lines]
    return {
        **{
            f"workload_{key}": (("workload", "time"), np.stack([job[key] for job in jobs]))
            for key in ("gpu_power", "it_power", "throughput", "job_state", "clock_factor")
        },
        **{
            f"workload_{key}": ("workload", np.array([job["attrs"][key] for job in jobs]))
            for key in JOB_ATTRS
        },
        "workload_gpus": ("workload", gpus),
        "workload_kind": ("workload", np.array([w.kind for w in workloads], dtype=object)),
        "workload_goodput": ("workload", np.array([job["goodput"] for job in jobs])),
        "workload_effective_training_time": ("workload", kept),
        **{key: ("event", np.concatenate([e[key][1] for e in events])) for key in events[0]},
        "event_workload": (
            "event",
            np.repeat(names, [run.line.event_time.size if run.line else 0 for run in runs]),
        ),
        "goodput": ((), float(sum(j["goodput"] for j, t in zip(jobs, training, strict=True) if t))),
        # the campus's: its training jobs' training time kept, weighed by their GPUs
        "effective_training_time": (
            (),
            float(gpus[training] @ kept[training] / gpus[training].sum()),
        ),
    }


def _strongest(states: list[np.ndarray]) -> np.ndarray:
    """At each step, the strongest of the ``states`` (:data:`events.STATE_RANK`: a restart,
    a failure, maintenance, a checkpoint, training)."""
    stacked = np.stack(states)
    pick = np.argmin(events.STATE_RANK[stacked], axis=0)
    return np.take_along_axis(stacked, pick[None], axis=0)[0]


def _events_of(scenario: Scenario, name: str) -> list[FlexEvent]:
    """The flexibility events that target the campus workload ``name``."""
    return [e for e in scenario.flexibility if not e.workloads or name in e.workloads]


def _check_fleet_event(scenario: Scenario, spec: Inference, event: FlexEvent) -> None:
    """An event on an inference fleet starts and ends on its utilisation's steps (the series
    the event changes is constant over each)."""
    step = spec.variation_step
    begin = (event.start - scenario.simulation.start).total_seconds()
    for what, seconds in (("start", begin), ("duration", event.duration)):
        if abs(seconds / step - round(seconds / step)) > 1e-6 or round(seconds / step) < (
            what == "duration"
        ):
            raise ScenarioError(
                f"flexibility {event.name!r}: its {what} ({format_duration(seconds)} from the "
                f"run's start) is not a whole number of the fleet's inference.variation_step "
                f"({format_duration(step)}): align it, or shorten the step"
            )


def _named_parts(scenario: Scenario) -> list[tuple[str, Scenario]]:
    """A campus's workloads by name, each a scenario of its own; none without a campus."""
    if scenario.campus is None:
        return []
    return list(zip((w.name for w in scenario.campus.workloads), scenario.parts, strict=True))


@contextmanager
def _workload(name: str) -> Iterator[None]:
    """Errors of a campus workload's own checks and run, named for it."""
    try:
        yield
    except ScenarioError as exc:
        raise ScenarioError(f"campus workload {name!r}: {exc}") from None


class _Fleet:
    """An inference fleet on a campus (:mod:`powermodel.models.inference`): its utilisation on
    the variation's step, then everything per GPU and per node on that step (the supplies'
    curve on each node's power), averaged exactly over any profile step."""

    def __init__(
        self, scenario: Scenario, spec: Inference, job: int, flex: Sequence[FlexEvent] = ()
    ) -> None:
        self.scenario, self.spec = scenario, spec
        sim, cl, gpu = scenario.simulation, scenario.cluster, scenario.gpu
        self.k, self.dt, self.step = plant_steps(scenario), sim.dt, spec.variation_step
        count = int(np.ceil(sim.duration / self.step - 1e-9))
        local = pd.Timestamp(sim.start).tz_localize("UTC").tz_convert(scenario.site.timezone)
        hour0 = local.dayofweek * 24 + local.hour + local.minute / 60 + local.second / 3600
        hours = hour0 + (np.arange(count) + 0.5) * self.step / 3600.0
        mean = inference.demand(
            hours, spec.base_level, spec.peak_level, spec.peak_hour, spec.weekend_level,
            None if spec.hourly is None else np.array(spec.hourly),
        )  # fmt: skip
        seeds = np.random.SeedSequence(sim.seed, spawn_key=(job, STREAM_DEMAND))
        # demand, as a share of what the fleet serves at a full batch and the nominal clock
        self.wanted = inference.utilisation(
            mean, spec.variation_cv, spec.variation_time, self.step, np.random.default_rng(seeds)
        )
        self.line = None  # no training timeline: no interruptions, no events
        self.busy = spec.busy_power * gpu.tdp
        full = inference.gpu_power(1.0, gpu.idle, self.busy, spec.clock)
        node = cl.gpus_per_node * full + cl.rest_power_active
        self.slope = float((cl.psu.input_power(node + 1.0) - cl.psu.input_power(node - 1.0)) / 2)
        clock = np.full(count, spec.clock)
        wanted, serving = self.wanted, np.ones(count, bool)
        self.flex, self.settings, self.lost = list(flex), [], []
        middle = (np.arange(count) + 0.5) * self.step
        self.series = self._series(clock, wanted, serving)
        for event in flex:  # one at a time on a workload: each on the series the others left
            _check_fleet_event(scenario, spec, event)
            begin = (event.start - sim.start).total_seconds()
            inside = (middle >= begin) & (middle < begin + event.duration)
            clock, wanted, serving, setting = self._flexed(event, inside, clock, wanted, serving)
            series = self._series(clock, wanted, serving)
            self.settings.append(setting)
            self.lost.append(float((self.series[2] - series[2]).sum() * self.step))
            self.series = series

    def tokens_lost(self, event: FlexEvent) -> float:
        """Tokens ``event`` costs the fleet over the run [token]: demand refused, or deferred
        and not served by the run's end."""
        return self.lost[self.flex.index(event)] if event in self.flex else 0.0

    def _series(self, clock: np.ndarray, wanted: np.ndarray, serving: np.ndarray) -> np.ndarray:
        """GPU and IT power [MW] and tokens served [tokens/s] on each step of the utilisation
        series, at each step's ``clock`` [1], demand ``wanted`` [1] and whether ``serving``.

        The job's mitigations hold: a clock lock lowers the clock; a power cap lowers it as far
        as the cap needs (the GPUs busier for it, demand beyond refused); software burn holds
        the board at its floor."""
        cl, gpu, spec, m = (
            self.scenario.cluster,
            self.scenario.gpu,
            self.spec,
            self.scenario.mitigation,
        )
        clock = np.minimum(clock, m.clock_lock or 1.0)
        if m.power_cap is not None and m.power_cap < self.busy:
            # the dynamic part at clock c is (busy - idle) * min(c^2 * wanted, c^3)
            room = max(m.power_cap - gpu.idle, 0.0) / (self.busy - gpu.idle)
            partly = np.sqrt(room / np.maximum(wanted, 1e-12))  # busy part of the time
            clock = np.minimum(clock, np.where(partly >= wanted, partly, np.cbrt(room)))
        served = np.where(serving, np.minimum(wanted, clock), 0.0)  # capacity follows the clock
        board = inference.gpu_power(served / clock, gpu.idle, self.busy, clock)
        if m.software_burn is not None:
            board = np.maximum(board, m.software_burn * gpu.tdp)
        node = cl.psu.input_power(cl.gpus_per_node * board + cl.rest_power_active)
        return np.array(
            [
                _cluster_mw(board, cl.n_gpus),
                _cluster_mw(node, cl.n_nodes)
                + (cl.network_load + cl.storage_load) / 1e6
                + idle_power(self.scenario),
                served * spec.token_rate * cl.n_gpus,
            ]
        )

    def _flexed(
        self,
        event: FlexEvent,
        inside: np.ndarray,
        clock: np.ndarray,
        wanted: np.ndarray,
        serving: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, float | None]:
        """The series' clock, demand and serving with ``event`` on the steps ``inside`` it, and
        the lever's setting: a pause stops serving; a clock lock is found, and a share of demand
        deferred to the steps after (served there on spare capacity until none is left), so
        that the fleet's IT power, its dies settled at the event's inlet, falls by the share
        asked."""
        if event.lever == "pause":
            return clock, wanted, serving & ~inside, None
        cl = self.scenario.cluster
        before = self._series(clock, wanted, serving)[:, inside]
        inlet = _event_inlet(self.scenario, float(before[1].mean()), event)

        def drawn(series: np.ndarray) -> float:
            """Mean IT power over the event, its dies and fans settled at the event's inlet."""
            board = series[0] * 1e6 / cl.n_gpus
            extra = _settled(self.scenario, inlet, board, self.reference_die(board), self.slope)
            return float((series[1] + extra).mean())

        target = (1.0 - event.reduction) * drawn(before)

        def flexed(setting: float) -> tuple[np.ndarray, np.ndarray]:
            if event.lever == "clock":
                return np.where(inside, setting, clock), wanted
            deferred = np.where(inside, wanted * setting, 0.0)
            after = np.arange(inside.size) > np.flatnonzero(inside).max(initial=-1)
            spare = np.where(after, np.maximum(clock - wanted, 0.0), 0.0)
            left = deferred.sum() - np.cumsum(spare) + spare  # backlog before each step
            return clock, wanted - deferred + np.clip(left, 0.0, spare)

        def miss(setting: float) -> float:
            c, w = flexed(setting)
            return drawn(self._series(c, w, serving)[:, inside]) - target

        low, high = (
            (LOWEST_FLEX_CLOCK, float(clock[inside].min()))
            if event.lever == "clock"
            else (1.0, 0.0)
        )
        if miss(low) > 0:
            what = "a clock lock" if event.lever == "clock" else "deferring all its demand"
            raise ScenarioError(
                f"flexibility {event.name!r}: {what} cannot shed {event.reduction:.0%} of the "
                "fleet's IT power (its idle GPUs and servers stay on): lower the reduction or "
                "pause it (lever 'pause')"
            )
        setting = float(optimize.brentq(miss, low, high, xtol=1e-12))
        c, w = flexed(setting)
        return c, w, serving, setting

    @property
    def effective_training_time(self) -> float:
        """A fleet serves the whole run: 1. [1]"""
        return 1.0

    def locked(self, path: facility.PlantPath) -> facility.PlantPath:
        """A fleet's clock is in its utilisation series: the plant path as it is."""
        return path

    def render(self, lo: int, hi: int) -> np.ndarray:
        """Interval means of the GPU and IT power [MW] and the tokens served [tokens/s] over
        steps ``lo`` to ``hi``: the step series' cumulative integral at the grid's edges."""
        edges = np.arange(lo, hi + 1) * self.dt
        at = np.minimum((edges // self.step).astype(np.int64), self.series.shape[1] - 1)
        cumulative = np.concatenate(
            (np.zeros((3, 1)), np.cumsum(self.series * self.step, axis=1)), axis=1
        )
        total = cumulative[:, at] + self.series[:, at] * (edges - at * self.step)
        return np.diff(total, axis=1) / self.dt

    def plant_means(self, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Plant-step means of the board power per GPU [W] and of the IT power [MW]."""
        per_gpu = means[0] * 1e6 / self.scenario.cluster.n_gpus
        return _block_mean(per_gpu, self.k), _block_mean(means[1], self.k)

    def reference_die(self, board: np.ndarray | float) -> np.ndarray | float:
        """The die temperature [°C] at which a GPU drawing ``board`` [W] draws that: its
        power curve holds at the nominal inlet (its leakage there is in it)."""
        cl, gpu = self.scenario.cluster, self.scenario.gpu
        return thermal.steady_gpu_temperature(cl.fans.temp_nominal, board, gpu.thermal_resistance)

    def campus_job(self, means: np.ndarray, path: facility.PlantPath, scale: float) -> dict:
        """The fleet's series on the site's plant: its GPUs leak more when hot and less when
        cool than at the nominal inlet (they run below their cap, so power, not the clock,
        gives), its server fans follow the inlet; its ``scale`` share of the rack batteries in
        front of its racks."""
        cl, gpu, k, n = self.scenario.cluster, self.scenario.gpu, self.k, means.shape[1]
        board = means[0] * 1e6 / cl.n_gpus
        leak = _over(gpu.leakage(path.gpu_temp), k, 0, n) - gpu.leakage(self.reference_die(board))
        fans = _over(path.fan_extra, k, 0, n)
        gpu_power = means[0] + _cluster_mw(leak, cl.n_gpus)
        node = (cl.gpus_per_node * leak + fans) * self.slope
        it_power = means[1] + _cluster_mw(node, cl.n_nodes)
        on = disturbances.powered(self.scenario, 0, n, self.dt)
        if on is not None:  # a disturbance took the servers' power: they serve nothing
            gpu_power, it_power, means = gpu_power * on, it_power * on, means * on
        it_power, rack = facility.storage(self.scenario, "rack", it_power, self.dt, scale)
        return {
            "gpu_power": gpu_power,
            "it_power": it_power,
            "rack": rack,
            "throughput": means[2],
            "job_state": np.zeros(n, np.int8),  # serving: running
            "clock_factor": np.ones(n, np.float32),  # below its cap: heat costs power, not clock
            "goodput": float(means[2].sum() * self.dt),
            "attrs": dict.fromkeys(JOB_ATTRS, float("nan")),  # no training step
        }


def flex_variables(
    scenario: Scenario, runs: Sequence[Run | _Fleet], it: Sequence[np.ndarray]
) -> dict[str, tuple]:
    """Each flexibility event on each workload it targets (the dimension ``flex``): its
    lever, setting and timing, the workload's IT power in the hour before and during it (a
    same-day baseline), what it shed, and the tokens it cost. ``runs`` and their IT power
    ``it`` [MW] in the order of the campus's workloads (one run: the scenario's job)."""
    names = [w.name for w in scenario.campus.workloads] if scenario.campus else ["job"]
    sim, dt = scenario.simulation, scenario.simulation.dt
    rows = []
    for event in scenario.flexibility:
        begin = int((event.start - sim.start).total_seconds() // dt)  # the step it starts in
        end = min(begin + max(int(round(event.duration / dt)), 1), sim.n_steps)
        before = slice(max(begin - int(round(HOUR_S / dt)), 0), begin)
        for j, (name, run) in enumerate(zip(names, runs, strict=True)):
            if event.workloads and name not in event.workloads:
                continue
            setting = _setting(run, event)
            base = float(it[j][before].mean()) if before.stop > before.start else float("nan")
            during = float(it[j][begin:end].mean())
            rows.append(
                (event.name, name, event.lever, event.start, event.duration, event.notice,
                 np.nan if event.reduction is None else event.reduction, setting, base, during,
                 base - during, run.tokens_lost(event))
            )  # fmt: skip
    keys = (
        "flex_name", "flex_workload", "flex_lever", "flex_start", "flex_duration", "flex_notice",
        "flex_reduction", "flex_setting", "flex_baseline", "flex_power", "flex_shed",
        "flex_tokens_lost",
    )  # fmt: skip
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(keys)
    out = {}
    for key, values in zip(keys, columns, strict=True):
        kind = "datetime64[ns]" if key == "flex_start" else object if key in FLEX_LABELS else float
        out[key] = ("flex", np.array(values, dtype=kind))
    return out


FLEX_LABELS = ("flex_name", "flex_workload", "flex_lever")


def _setting(run: Run | _Fleet, event: FlexEvent) -> float:
    """The lever's setting an event took on a workload: the clock it locked, the share of
    demand deferred; NaN for a pause."""
    if isinstance(run, _Fleet):
        value = run.settings[run.flex.index(event)] if event in run.flex else None
    else:
        value = next((o.clock for o in run.overlays if o.event is event), None)
    return float("nan") if value is None else float(value)


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


def _outside(line: events.Timeline, paused: tuple[np.ndarray, np.ndarray]) -> events.Timeline:
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


def run_totals(
    run: Run, path: facility.PlantPath, realised: float, throughput: np.ndarray
) -> dict[str, tuple]:
    """The whole run's ``goodput`` [tokens] (the tokens trained less the work failures lost,
    priced at the job's ``realised`` yield and at the training rate of the plant step each
    failure happened in) and ``chiller_hours`` [h], from its ``throughput`` [tokens/s]."""
    line, k, dt = run.line, run.k, run.dt
    at = np.minimum((line.event_time // (k * dt)).astype(np.int64), path.step_factor.size - 1)
    lost_tokens = line.event_lost_work * (run.token_rate * realised) / path.step_factor[at]
    plant_hours = np.count_nonzero(path.chiller_load > 0) * (k * dt) / 3600
    return {
        "goodput": ((), float(throughput.sum() * dt - lost_tokens.sum())),
        "chiller_hours": ((), float(plant_hours)),
    }


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


def _assembled(
    run: Run, path: facility.PlantPath, means: np.ndarray, chunks: list[tuple[int, int]]
) -> dict[str, np.ndarray | _Pieces]:
    """The whole run's variables on ``time``, in the order of :data:`ORDER`, from its rendered
    ``means``, profiled range by range (``chunks``). The profile takes the means' place: what
    is rendered of ``gpu_power``, ``it_power`` and the throughput becomes that variable."""
    n = means.shape[1]
    out: dict[str, np.ndarray] = dict(
        zip(("gpu_power", "it_power", "throughput"), means[:3], strict=True)
    )
    pue = []
    for lo, hi in chunks:
        part = run.profile(path, means[:, lo:hi], lo, held=False)
        pue.append((lo, part.pop("pue")))
        same = {id(values): name for name, values in reversed(part.items())}
        for name, values in part.items():
            if same[id(values)] != name:  # one variable is another (no batteries: grid is site)
                out[name] = out[same[id(values)]]
            else:
                if name not in out:
                    out[name] = np.empty(n, values.dtype)
                out[name][lo:hi] = values
    merged = {**out, **run.held(path, 0, n), "pue": _Pieces.joined(pue, n)}
    return {name: merged[name] for name in ORDER if name in merged}


def _it_path(
    scenario: Scenario,
    line: events.Timeline,
    per_gpu: np.ndarray,
    it_power: np.ndarray,
    running: np.ndarray,
    path: facility.PlantPath,
    k: int,
    lo: int,
    paused: np.ndarray = NO_PAUSES,
) -> tuple[np.ndarray, np.ndarray]:
    """What the GPUs and the racks finally draw: ``gpu_power`` and ``it_power`` [MW].

    From the rendered board power per GPU [W] and IT power [MW] on the electrical grid (the
    steps from ``lo``), the share of each interval ``running`` [1] and the plant path (``k``
    steps a plant step): hot dies leak more while training, the ramp limits act on what each
    GPU finally draws, leakage included, and server fans speed up whenever the nodes are on.
    Each node's DC change is small: it passes through the server supplies at their running
    slope.
    """
    cl, dt, n = scenario.cluster, scenario.simulation.dt, per_gpu.size
    leak = running * _over(path.leak_extra, k, lo, n)  # W per GPU, DC
    drawn = stop_ramps(scenario, line, per_gpu + leak, dt, paused)  # W per GPU, DC
    fans = _over(path.fan_extra, k, lo, n)  # W per node, DC
    node = (cl.gpus_per_node * (drawn - per_gpu) + fans) * _psu_slope(scenario)  # W per node, AC
    gpu_power, it_power = _cluster_mw(drawn, cl.n_gpus), it_power + _cluster_mw(node, cl.n_nodes)
    on = disturbances.powered(scenario, lo, n, scenario.simulation.dt)
    if on is not None:  # a disturbance took the servers' power: they draw nothing
        gpu_power, it_power = gpu_power * on, it_power * on
    return gpu_power, it_power


def _facility(
    scenario: Scenario,
    it_power: np.ndarray,
    cooling: np.ndarray,
    k: int,
    lo: int,
    design: float | None = None,
) -> dict[str, np.ndarray]:
    """What the site (or a hall) draws around the IT load [MW] over the steps from ``lo``:
    ``facility_loss``, ``cooling_power`` (the plant's ``cooling`` [W] on plant steps, ``k``
    electrical steps a plant step), ``misc_power`` and ``facility_power``, all [MW]; sized for
    the ``design`` IT power [W], by default the scenario's."""
    design = facility.design_it_power(scenario) if design is None else design
    cooling = _over(cooling, k, lo, it_power.size) / 1e6
    misc = _misc(scenario, design)
    capacity = scenario.electrical.design_margin * design / 1e6
    loss = facility.facility_loss(it_power, scenario, capacity, cooling + misc)
    on = disturbances.powered(scenario, lo, it_power.size, scenario.simulation.dt)
    if on is not None:  # the UPS and PDUs feeding servers without power are down with them
        loss = loss * on
    return {
        "facility_loss": loss,
        "cooling_power": cooling,
        "misc_power": misc,
        "facility_power": it_power + loss + cooling + misc,
    }


def _misc(scenario: Scenario, design: float | None = None) -> float:
    """Misc loads (lighting, offices, controls) [MW]: they do not follow the IT swing, a share
    of the ``design`` IT power [W] (by default the scenario's)."""
    design = facility.design_it_power(scenario) if design is None else design
    return scenario.cooling.misc_fraction * (design / 1e6)


def _connection(
    scenario: Scenario, it_power: np.ndarray, site: dict[str, np.ndarray], dt: float
) -> tuple[dict[str, np.ndarray], list[mitigation.StorageResult]]:
    """The point of interconnection, from the IT load and the site's draw [MW] on steps of
    ``dt`` [s]: ``grid_power`` [MW] after the site batteries, ``grid_reactive_power`` [Mvar]
    and ``grid_voltage`` [p.u.]; and each site battery's dispatch."""
    other = site["cooling_power"] + site["misc_power"]
    reactive = facility.reactive_power(scenario, it_power, site["facility_loss"], other)
    return _at_connection(scenario, site["facility_power"], reactive, dt)


CONNECTION = ("grid_power", "grid_reactive_power", "grid_voltage")


def _at_connection(
    scenario: Scenario, load: np.ndarray, reactive: np.ndarray, dt: float
) -> tuple[dict[str, np.ndarray], list[mitigation.StorageResult]]:
    """What the grid sees of the site's ``load`` [MW] and ``reactive`` power [Mvar] on steps
    of ``dt`` [s]: :data:`CONNECTION` (after the site batteries, and the voltage change that
    causes), and each site battery's dispatch."""
    grid_power, batteries = facility.storage(scenario, "site", load, dt)
    g = scenario.grid
    voltage = 1.0 + grid.voltage_change(grid_power, reactive, g.short_circuit, g.x_r)
    values = (grid_power, reactive, voltage)
    return dict(zip(CONNECTION, values, strict=True)), batteries


def _through_disturbances(
    scenario: Scenario, variables: dict, supplies: list[tuple[Scenario, np.ndarray]]
) -> dict:
    """The connection through the scenario's grid disturbances: from the run's whole IT
    power, losses, cooling and misc power [MW], what the grid carries (after the site
    batteries), its reactive power and voltage, what the UPS batteries and the generators
    carry, the recharge after (:func:`powermodel.disturbances.connection`). The supplies'
    reactive power is each workload's (``supplies``: its scenario and IT power)."""
    dt, n = scenario.simulation.dt, scenario.simulation.n_steps
    dense = {
        key: _dense(variables[key], n)
        for key in ("it_power", "facility_loss", "cooling_power", "misc_power")
    }
    it_path = dense["it_power"] + dense["facility_loss"]
    other = dense["cooling_power"] + dense["misc_power"]
    out = disturbances.connection(scenario, it_path, other, dt)
    q_it, q_other = facility.reactive_parts(
        scenario, dense["it_power"], dense["facility_loss"], other, supplies
    )
    pf = scenario.electrical.input_power_factor or 1.0  # the recharge: the UPS rectifier's
    reactive = (
        q_it * out["it_share"]
        + q_other * out["other_share"]
        + out["recharge_power"] * np.sqrt(1.0 - pf * pf) / pf
    )
    connection, batteries = _at_connection(scenario, out["load"], reactive, dt)
    return {
        **connection,
        "batteries": batteries,
        **{key: out[key] for key in DISTURBANCE_VARIABLES},
    }


def _dense(values: np.ndarray | _Pieces | float, n: int) -> np.ndarray:
    if isinstance(values, _Pieces):
        return values.dense(0, n)
    return np.broadcast_to(np.asarray(values, dtype=float), (n,))


def share_of(part: np.ndarray, whole: np.ndarray) -> float:
    """``part``'s sum over ``whole``'s, 1 where ``whole`` sums to nothing."""
    total = float(whole.sum())
    return float(part.sum()) / total if total > 0 else 1.0


class _Pieces(BackendArray):
    """A piecewise-constant series, read only when read: ``values[j]`` from step ``starts[j]``
    to the next start, ``size`` steps in all (the first start at or before step 0).

    The Dataset holds the plant path's variables (constant over each plant step), PUE (over
    each hour) and the misc load (over the run) so: reading one (``.values``) builds it, and
    nothing else keeps it. xarray's lazy indexing of file-backed variables serves it, with no
    dask scheduler to meet (a ``distributed.Client`` in the process would take dask's work).
    """

    def __init__(self, values: np.ndarray, starts: np.ndarray, size: int) -> None:
        self.values, self.starts = values, starts
        self.shape, self.dtype = (size,), values.dtype

    def __getitem__(self, key: indexing.ExplicitIndexer) -> np.ndarray:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._read
        )

    def _read(self, key: tuple) -> np.ndarray:
        (where,) = key
        if not isinstance(where, slice):  # one step
            return np.asarray(self.values[np.searchsorted(self.starts, where, side="right") - 1])
        start, stop, step = where.indices(self.shape[0])
        picked = range(start, stop, step)
        if not picked:
            return self.values[:0]
        lo, hi = min(picked[0], picked[-1]), max(picked[0], picked[-1]) + 1
        return self.dense(lo, hi)[slice(start - lo, stop - lo if stop >= lo else None, step)]

    @staticmethod
    def joined(parts: list[tuple[int, _Pieces]], size: int) -> _Pieces:
        """One series of ``size`` steps from the ``parts`` of it that start at each step."""
        values = np.concatenate([p.values for _, p in parts])
        starts = np.concatenate([np.maximum(p.starts, 0) + lo for lo, p in parts])
        return _Pieces(values, starts, size)

    def dense(self, lo: int, hi: int) -> np.ndarray:
        """Steps ``lo`` to ``hi`` as an array."""
        first = np.searchsorted(self.starts, lo, side="right") - 1
        last = np.searchsorted(self.starts, hi, side="left")
        bounds = np.concatenate(([lo], self.starts[first + 1 : last], [hi]))
        return np.repeat(self.values[first:last], np.diff(bounds))


def _held(values: np.ndarray, k: int, lo: int, n: int, dtype: type = np.float64) -> _Pieces:
    """Plant-step ``values`` held over the ``k`` electrical steps of each plant step, over the
    ``n`` steps from ``lo``."""
    return _Pieces(values.astype(dtype), np.arange(values.size) * k - lo, n)


def _single(name: str, values: np.ndarray) -> np.ndarray:
    """``values`` of a variable stored in float32 (:data:`HELD`), refused beyond its range
    (3.4e38), where it would be stored as infinite."""
    if np.any(np.abs(values) > np.finfo(np.float32).max):
        worst = float(np.nanmax(np.abs(values)))
        units = variable_attrs(name).get("units", "")
        raise PowerModelError(
            f"the plant's {name} reaches {worst:.3g} {units}, beyond any physical value: "
            "check the scenario's cooling and GPU inputs"
        )
    return values


def held_arrays(ds: xr.Dataset) -> list[np.ndarray]:
    """The arrays a run's Dataset holds in memory: each variable's own, and for a variable held
    lazily (constant over pieces: the plant path, PUE, a sensor's reports) its pieces' values
    and starts, not the series it expands to when read. What its memory is counted from."""
    out = []
    for variable in ds.variables.values():
        data = variable._data  # xarray's: a lazily held variable is read only through it
        pieces = getattr(data, "array", None)
        if isinstance(data, indexing.LazilyIndexedArray) and isinstance(pieces, _Pieces):
            out += [pieces.values, pieces.starts]
        else:
            out.append(variable.values)
    return out


def _lazy(values: np.ndarray | _Pieces) -> np.ndarray | indexing.LazilyIndexedArray:
    """A variable's data: arrays as they are, pieces read lazily."""
    return indexing.LazilyIndexedArray(values) if isinstance(values, _Pieces) else values


def _over(values: np.ndarray, k: int, lo: int, n: int) -> np.ndarray:
    """Plant-step ``values`` held over the ``k`` electrical steps of each plant step, over the
    ``n`` steps from ``lo``, as an array."""
    return _Pieces(values, np.arange(values.size) * k - lo, n).dense(0, n)


def _storage_variables(
    rack: list[mitigation.StorageResult], site: list[mitigation.StorageResult]
) -> dict[str, np.ndarray]:
    out = {}
    if rack:
        out["rack_storage_power"] = sum(r.power for r in rack)
    if site:
        out["bess_power"] = sum(r.power for r in site)
        out["bess_soc"] = sum(r.soc * r.energy for r in site) / sum(r.energy for r in site)
    return out


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


def _hourly_ratio(
    numerator: np.ndarray, denominator: np.ndarray, dt: float, lo: int = 0
) -> _Pieces:
    """Ratio of the two signals' energies over each clock hour of the run (the signals on steps
    of ``dt`` [s] from step ``lo``), on every sample; NaN for an hour whose denominator drew
    nothing (the servers without power through a grid disturbance)."""
    n = numerator.size
    starts = np.concatenate(([0], _hour_starts(lo, lo + n, dt) - lo))
    label = _hour_of(lo + starts, dt)
    label -= label[0]
    hour = np.repeat(label, np.diff(starts, append=n))
    below = np.bincount(hour, denominator)
    ratio = np.bincount(hour, numerator) / np.where(below > 0, below, np.nan)
    return _Pieces(ratio[label], starts, n)


def _hour_of(steps: np.ndarray, dt: float) -> np.ndarray:
    """The clock hour of the run (0 the first) in which each step (of ``dt`` [s]) starts."""
    return (steps * dt // 3600).astype(np.int64)


def _hour_starts(lo: int, hi: int, dt: float) -> np.ndarray:
    """The steps after ``lo`` and before ``hi`` that start a clock hour (:func:`_hour_of` rises
    there), found near where each hour is due rather than by the hour of every step."""
    if hi - lo < 2:
        return np.empty(0, np.int64)
    first, last = _hour_of(np.array([lo, hi - 1]), dt)
    hours = np.arange(first + 1, last + 1)
    near = np.ceil(hours * (3600 / dt)).astype(np.int64)[:, None] + np.arange(-2, 3)
    np.clip(near, lo, hi - 1, out=near)
    reached = _hour_of(near, dt) >= hours[:, None]
    if reached[:, 0].any() or not reached[:, -1].all():  # far from due: every step's hour
        return lo + 1 + np.flatnonzero(np.diff(_hour_of(np.arange(lo, hi), dt)))
    return np.unique(near[np.arange(hours.size), np.argmax(reached, axis=1)])


def _psu_slope(scenario: Scenario) -> float:
    """d(AC)/d(DC) of a server's supplies at the running load: small DC changes pass through it."""
    cl = scenario.cluster
    shares, watts = scenario.phase_powers()
    node = cl.gpus_per_node * float(shares @ watts) + cl.rest_power_active
    up, down = (cl.psu.input_power(node + d) for d in (1.0, -1.0))
    return float((up - down) / 2.0)


def _times(start: object, seconds: np.ndarray) -> np.ndarray:
    """``datetime64[ns]`` at ``seconds`` after ``start`` (pandas' to_timedelta is 10× slower)."""
    return np.datetime64(pd.Timestamp(start).to_datetime64(), "ns") + _timedelta(seconds)


def _step_times(start: object, lo: int, n: int, dt: float) -> np.ndarray:
    """:func:`_times` of the ``n`` steps of ``dt`` [s] from step ``lo``, in blocks (no
    temporary of the run's size)."""
    out = np.empty(n, "datetime64[ns]")
    for a in range(0, n, BLOCK):
        out[a : a + BLOCK] = _times(start, np.arange(lo + a, lo + min(a + BLOCK, n)) * dt)
    return out


def _timedelta(seconds: np.ndarray | float) -> np.ndarray:
    """``seconds`` as ``timedelta64[ns]``, to the nearest nanosecond."""
    return np.round(np.asarray(seconds) * 1e9).astype(np.int64).astype("timedelta64[ns]")


def _cluster_mw(watts: np.ndarray | float, count: int) -> np.ndarray | float:
    """Power of ``count`` GPUs, nodes or switches drawing ``watts`` [W] each. [MW]"""
    return watts * count / 1e6


def _block_mean(
    values: np.ndarray, k: int, of: Callable[[np.ndarray], np.ndarray] | None = None
) -> np.ndarray:
    """The mean of each ``k`` values (of ``of(values)``, an element-wise function), in passes
    of whole blocks: each block's mean as the whole array's reshaped gives it."""
    blocks = values.reshape(-1, k)
    out = np.empty(blocks.shape[0])
    rows = max(1, BLOCK // k)
    for a in range(0, blocks.shape[0], rows):
        part = blocks[a : a + rows]
        out[a : a + part.shape[0]] = (part if of is None else of(part)).mean(axis=1)
    return out


def event_variables(scenario: Scenario, line: events.Timeline) -> dict[str, tuple]:
    causes = [c.name for c in scenario.reliability.causes] + ["Planned maintenance"]
    categories = [c.category for c in scenario.reliability.causes] + ["Planned"]
    planned = line.event_cause == len(causes) - 1
    causes.append(GRID_CAUSE)  # the crashes a disturbance puts in the timeline
    categories.append("Grid")
    return {
        "event_time": ("event", _times(scenario.simulation.start, line.event_time)),
        "event_kind": ("event", np.where(planned, "planned", "unexpected").astype(object)),
        "event_cause": ("event", np.array(causes, dtype=object)[line.event_cause]),
        "event_category": ("event", np.array(categories, dtype=object)[line.event_cause]),
        "event_lost_work": ("event", line.event_lost_work),
    }
