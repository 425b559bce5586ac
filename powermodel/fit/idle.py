"""The held levels read as the states they are: an idle spell that draws more than any
GPU idles at is a pause of the job (:func:`_idle_seen`); and, for a meter, each state's rest of
node, the preset's unless it would leave the GPUs under their idle (:func:`_state_rest`,
:func:`rest_share`). Runs after :mod:`powermodel.fit.states`, before the levels are fitted
(:mod:`powermodel.fit.pipeline`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from powermodel.errors import DataFileError
from powermodel.fit.gpu import KEEP_IDLE, KEEP_TDP, _sustained
from powermodel.fit.result import Quantity
from powermodel.fit.sensor import StepResponse
from powermodel.fit.timeline import (
    Timeline,
    _neighbours,
    _segment_medians,
    _settled_level,
    well_formed,
)
from powermodel.models.events import State
from powermodel.scenario import Scenario
from powermodel.simulate import rest_power

# A held level is the GPUs' idle only up to this multiple of the GPU's idle (as idle: a meter's
# with the rest of node at its idle power). The H100 idles at 60-100 W (80 W in the catalogue);
# MLPerf's SMC H100 nodes idle at 2.2 x it under the preset's rest of node (2.3 kW AC a node),
# while their evaluations and first steps' pauses hold 3.4-3.9 x it (3.5-3.6 kW) [D,
# mlperf_training_v4_smc]: a log that begins mid-run shows no idle, only such a pause
IDLE_SPAN = 3.0


def rest_share(
    scenario: Scenario, states: np.ndarray, rest: np.ndarray | None = None
) -> np.ndarray:
    """Per-GPU power [W] to add to a meter's inversion at the running rest-of-node power so
    that each sample carries its own state's rest: ``(rest[RUNNING] - rest[state]) /
    gpus_per_node``, positive while idle; ``rest`` [W per node, by State] the model's
    (:func:`powermodel.simulate.rest_power`) unless given (:func:`_state_rest`'s)."""
    rest = rest_power(scenario.cluster) if rest is None else rest
    return (rest[State.RUNNING] - rest[states]) / scenario.cluster.gpus_per_node


def _idle_seen(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    scenario: Scenario,
    response: StepResponse,
    rest: np.ndarray | None,
    named: bool,
) -> tuple[Timeline, str]:
    """``line`` with the idle spells that cannot be the GPUs' idle read as stalls, and what to
    say of it ('' if every idle spell may be idle).

    The lowest held level of a trace is its idle only if the trace saw the job idle: a log
    that begins at the run's start, or mid-run, holds no idle, and its lowest held level is a
    pause of the job (an evaluation, the first steps' warm-up). Idle is told by its level: a
    spell is idle when its GPUs, read as idle (a meter's samples with the rest of node at its
    idle power, ``rest`` [W per node by State], None for a GPU trace), draw at most
    :data:`IDLE_SPAN` x the GPU's idle. One that draws more is a pause of the running job: a
    stall (one cut by the trace's start or end is not counted), or part of a start-up beside
    one; the GPU's idle is then the preset's. Told so where the GPU is the scenario's: a
    meter's, one ``named``, or a GPU trace's within its TDP (another's is built from the
    trace, its idle the trace's lowest level)."""
    gpu = scenario.gpu
    idle = line.state == State.FAILED_IDLE
    gpu_idle = gpu.idle
    own = rest is not None or named  # a meter's GPU is the preset's, as a named one
    if not idle.any() or not (own or _sustained(times, x, response)[0] <= KEEP_TDP * gpu.tdp):
        return line, ""
    level = _segment_medians(times, x, line, response.settle)
    share = 0.0
    if rest is not None:
        share = float(rest_share(scenario, np.array([State.FAILED_IDLE]), rest)[0])
    as_idle = level + share
    wrong = idle & (as_idle > IDLE_SPAN * gpu_idle)
    if not wrong.any():
        return line, ""
    role = line.state.copy()
    prev, nxt = _neighbours(role)
    loading = (prev == State.LOADING) | (nxt == State.LOADING)
    role[wrong] = np.where(loading[wrong], State.LOADING, State.CHECKPOINT)
    after = np.concatenate(([False], wrong[:-1])) & (role == State.RAMP)
    role[after] = State.RUNNING  # training resuming after a pause: no start-up ramp
    fixed, _ = well_formed(Timeline(start=line.start, state=role, duration=line.duration))
    kept = int(np.count_nonzero(idle & ~wrong))
    how = (
        f"{int(wrong.sum())} held spell(s) at {float(np.min(as_idle[wrong])):,.1f} W a GPU or "
        "more read as idle"
        + (" (the rest of node at its idle power)" if rest is not None else "")
        + f", over {IDLE_SPAN:g} x the {gpu.name}'s idle ({gpu_idle:g} W), read as pauses of "
        "the job (stalls; one cut by the trace's start or end is not counted)"
    )
    if kept:
        return fixed, f"{how}; {kept} idle spell(s) kept"
    return fixed, f"no idle seen: {how}; the GPU's idle is the preset's"


def _state_rest(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    scenario: Scenario,
    response: StepResponse,
    source: str,
) -> tuple[np.ndarray, dict[str, Quantity], tuple[str, ...]]:
    """Each state's rest-of-node power [W per node, by State] for a meter inverted at the
    running rest (``x`` [W per GPU]): the preset's (:func:`powermodel.simulate.rest_power`)
    unless that would leave the GPUs of a held state drawing less than a powered GPU does, and
    then inferred from the trace with the GPUs at that floor; the inferred rests as quantities,
    and what to say of them.

    A node's AC meter reads its GPUs and the rest of the node together, and the preset's split
    between them is an assumption: at idle its CPUs and memory idle (``rest_power_idle``), in
    every other state they work (``rest_power_active``). A node may idle lower than the
    preset's, or load its job (a start-up) with its CPUs far from their running power: 2.5 kW
    AC where the preset's rest alone is 2.6 kW DC. Its GPUs still draw at least their idle.
    So a held state whose level, at the preset's rest, is under that floor (idle: half the
    GPU's idle, :data:`KEEP_IDLE`, the lowest the catalogue's idle ranges admit; any other
    state: the idle fitted, or the GPU's) is taken at the floor, and its rest of node is what
    the node draws beyond its GPUs. The idle's is written (``cluster.rest_power_idle``); a
    start-up's, a stall's or a teardown's is reported, for the model holds one rest of node in
    every active state (its node then draws more in that state than the trace's)."""
    cl, gpu = scenario.cluster, scenario.gpu
    rest = rest_power(cl).astype(float)
    share = rest_share(scenario, np.arange(len(State)), rest)

    def level(state: State) -> float:
        return _held_median(times, x + share[state], line, state, response.settle)

    idle = level(State.FAILED_IDLE)
    floors = {State.FAILED_IDLE: KEEP_IDLE * gpu.idle}
    other = max(idle, floors[State.FAILED_IDLE]) if np.isfinite(idle) else gpu.idle
    names = {
        State.FAILED_IDLE: ("idle", "cluster.rest_power_idle"),
        State.LOADING: ("start-up", None),
        State.CHECKPOINT: ("checkpoint stall", None),
        State.STALLED: ("teardown", None),
    }
    quantities: dict[str, Quantity] = {}
    said: list[str] = []
    for state, (what, key) in names.items():
        found = idle if state == State.FAILED_IDLE else level(state)
        floor = floors.get(state, other)
        if not (np.isfinite(found) and found < floor):
            continue
        inferred, how = _inferred_rest(what, key is None, found, floor, rest[state], cl, source)
        quantities[f"{what} rest of node"] = Quantity(
            f"{what} rest of node", round(float(inferred), 1), "W", key is not None, how, key
        )
        said.append(f"{what} rest of node {how}")
        rest[state] = inferred
        if state == State.FAILED_IDLE:
            rest[State.MAINTENANCE] = inferred
    return rest, quantities, tuple(said)


def _held_median(
    times: np.ndarray, x: np.ndarray, line: Timeline, state: State, settle: float
) -> float:
    """Median [W] of the samples of ``state`` segments once the sensor settled in them
    (``settle`` [s]), or of all their samples where the spells are shorter than that."""
    found, n = _settled_level(times, x, line, state, settle, average=np.median)
    if not n:  # a spell shorter than the sensor's settling: all its samples
        found, _ = _settled_level(times, x, line, state, 0.0, average=np.median)
    return found


def _inferred_rest(
    what: str,
    reported: bool,
    found: float,
    floor: float,
    rest: float,
    cluster: Any,
    source: str,
) -> tuple[float, str]:
    """A node's rest of node [W] in a held state (``what``) whose level at the preset's
    ``rest`` [W a node] is ``found`` [W a GPU], under the ``floor`` [W] a powered GPU draws:
    what the node draws beyond its GPUs at that floor, and how it was found (``reported``:
    the model holds one active rest of node, and the inferred one is not written). Refused
    where it would be negative."""
    gpus = cluster.gpus_per_node
    node_dc = gpus * found + rest
    inferred = node_dc - gpus * floor
    if inferred < 0.0:
        raise DataFileError(
            f"{source}: in its {what} state a node draws {node_dc:,.0f} W DC, less than "
            f"its {gpus} GPUs at {floor:,.1f} W each with no rest of node: check "
            "--gpus-per-node and the meter's unit, or fit with a preset of these nodes "
            "(--preset)"
        )
    how = (
        f"inferred: the {what} level at the preset's rest of node "
        f"({rest:,.0f} W a node) would be {found:,.1f} W a GPU, under the "
        f"{floor:,.1f} W a powered GPU draws there; the GPUs are taken at {floor:,.1f} W "
        f"and the rest of the node's {node_dc:,.0f} W DC is its rest of node"
    )
    if reported:
        how += (
            f" (reported: the model holds cluster.rest_power_active, "
            f"{cluster.rest_power_active:,.0f} W, in every active state, so its {what} draws "
            f"{cluster.rest_power_active - inferred:,.0f} W a node more than the trace's)"
        )
    return inferred, how
