"""The die's leakage over a fitted trace: the leakage the engine would add to a
scenario's phase powers, driven by the trace's own board power through the plant
(:func:`leakage_blocks`), and its mean over the trace's running, which the written levels leave
out (:func:`_less_leakage`). Read by :mod:`powermodel.fit.workload_keys` and by
:mod:`powermodel.fit_report`'s prediction.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from powermodel.engine import facility
from powermodel.fit.result import Fit
from powermodel.fit.timeline import _settled_level
from powermodel.models.events import State
from powermodel.scenario import Scenario, load_scenario

LEAKED = "the die's leakage adds over the trace's running (the phases hold at the nominal die)"


def leakage_blocks(result: Fit, scenario: Scenario) -> tuple[float, np.ndarray]:
    """The leakage [W per GPU] the engine adds to ``scenario``'s phase powers while running, per
    plant step (``cooling.dt`` [s], returned first) from the trace's start: its die path
    (:func:`powermodel.engine.facility.plant_path`: the scenario's weather and plant, the die
    through its thermal mass) driven by the trace's own board power in those steps, at the
    trace's own date and time of day. The phase powers hold at the nominal die (steadily
    running); a job that spends most of its time stalled runs cooler and leaks less (a negative
    amount)."""
    plant = float(scenario.cooling.dt)
    ok = np.isfinite(result.power)
    if not ok.any():
        return plant, np.zeros(1)
    block = np.floor(result.times / plant).astype(np.int64)
    counts = np.bincount(block[ok], minlength=block.max() + 1)
    board = np.bincount(block[ok], result.power[ok], minlength=counts.size)
    board = np.interp(  # a plant step the trace has no sample in takes its neighbours'
        np.arange(counts.size), np.flatnonzero(counts), board[counts > 0] / counts[counts > 0]
    )
    cl = scenario.cluster
    node = cl.psu.input_power(cl.gpus_per_node * board + cl.rest_power_active)
    heat = node * cl.n_nodes + cl.network_load + cl.storage_load
    # at the trace's own date and time of day, as the prediction's fresh run is
    start = np.datetime64(result.start, "ns")
    middle = start + ((np.arange(counts.size) + 0.5) * plant * 1e9).astype("timedelta64[ns]")
    path = facility.plant_path(
        scenario, middle, heat, board, plant, facility.design_it_power(scenario)
    )
    return plant, path.leak_extra


def _running_leakage(result: Fit, scenario: Scenario) -> float:
    """The mean over the trace's running samples of :func:`leakage_blocks` [W per GPU]: so a
    measured running level is the phase powers' plus this."""
    if not np.isfinite(result.power).any():
        return 0.0
    plant, leak = leakage_blocks(result, scenario)
    block = np.minimum(np.floor(result.times / plant).astype(np.int64), leak.size - 1)
    extra, _ = _settled_level(
        result.times,
        leak[block],
        result.timeline,
        State.RUNNING,
        result.response.settle,
        average=np.mean,
    )
    return float(extra) if np.isfinite(extra) else 0.0


def _less_leakage(result: Fit, base: Scenario, keys: Callable[[float], dict]) -> float:
    """The leakage [W per GPU] the engine adds over the trace's running to the levels that
    ``keys`` (overrides of ``base``) write for that leakage taken off the measured ones
    (:func:`_running_leakage`), found twice over: the nominal die is the written phases' own."""
    extra = 0.0
    for _ in range(2):
        extra = _running_leakage(result, load_scenario(base, keys(extra)))
    return extra
