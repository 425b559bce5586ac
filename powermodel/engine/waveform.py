"""The per-GPU waveform (docs/model/workload.md): each job state's shape as cell tables, the
per-GPU mitigations on one iteration (cap, burn, smoothing) before aggregation, the ramp limits
across state changes, and the training steps drawn under ``workload.variation``."""

from __future__ import annotations

import numpy as np

from powermodel.engine import facility
from powermodel.engine.derive import (
    Derived,
    board_limit,
    cluster_mw,
    per_gpu_power,
    rest_power,
    smoothing_floor,
)
from powermodel.engine.timeline import JOB, NO_PAUSES, steps_rng
from powermodel.errors import ScenarioError
from powermodel.models import events, mitigation, render, variation, workload
from powermodel.models.events import State
from powermodel.scenario import Scenario


def idle_power(scenario: Scenario) -> float:
    """What the nodes outside the job draw, on and idle, all the time [MW]: each its GPUs' idle
    power and its idle rest of node through the supplies' curve
    (:func:`powermodel.engine.facility.idle_nodes`)."""
    cl, nodes = scenario.cluster, facility.idle_nodes(scenario)
    if not nodes:
        return 0.0
    idle = cl.gpus_per_node * scenario.gpu.idle + cl.rest_power_idle
    return float(cluster_mw(cl.psu.input_power(idle), nodes))


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
    held = max(gpu.stalled, smoothing_floor(scenario))
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
        gpu_cells.append(cluster_mw(board, cl.n_gpus))
        it_cells.append(cluster_mw(node_ac, cl.n_nodes) + fixed)
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
    leak = scenario.gpu.leakage(derived.nominal_die)  # W per GPU
    dynamic = np.maximum(gpu - cluster_mw(leak, scenario.cluster.n_gpus), 0.0)  # MW
    count, bound, level = variation.draw_steps(
        extent,
        counter.astype(np.int64),
        steps_rng(scenario.simulation.seed, job),
        **v.model_dump(),
        scale_range=_scale_range(scenario, per_gpu_power(dynamic, scenario.cluster.n_gpus), leak),
    )
    tokens = cells[2, State.RUNNING]
    scaled = np.array([dynamic, dynamic * derived.slope, np.zeros_like(gpu), tokens])
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
    room = board_limit(scenario) - leak
    floor = max(smoothing_floor(scenario), (m.software_burn or 0.0) * tdp) - leak
    peak, trough = float(dynamic.max()), float(dynamic.min())
    lowest = min(max(floor, 0.0) / trough, 1.0) if trough > 0 else 0.0
    return lowest, (max(room / peak, 1.0) if peak > 0 else 1.0)
