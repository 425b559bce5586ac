"""The fit's first stage: the trace on a uniform grid as per-GPU power.

A read trace (:func:`powermodel.iotools.telemetry.read_telemetry`) is checked for what the fit
can take (channels, cells, samples, holes), gridded at its own sampling step, and read as the
power of each GPU: a GPU trace as it is, a meter's AC power through the inverse of the preset's
PSU curve less its rest of node. GPUs that held one low level throughout, outside the job, are
set apart. Next: :mod:`powermodel.fit.sensor` (the chain the samples came through).
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from powermodel.durations import format_duration
from powermodel.errors import DataFileError, PowerModelError
from powermodel.iotools.telemetry import to_grid
from powermodel.models.events import State
from powermodel.scenario import Scenario
from powermodel.simulate import rest_power

MAX_CHANNELS = 4096  # GPUs or meters in one trace
MAX_METER_GPUS = 100_000  # GPUs behind one meter channel (a whole hall's feeder)
MAX_CELLS = 50_000_000  # channel × sample cells of the gridded trace (400 MB of float64)
# No channel reporting for longer than this, and for more than GAP_STEPS samples, is a hole the
# fit would fill with a straight line and read as a state of the job [A]: refused, named.
MAX_GAP = 60.0  # s
GAP_STEPS = 10
PERIOD_TOLERANCE = 0.1  # a --period this far from a timed trace's measured step is refused
MIN_SAMPLES = 20  # a trace shorter than this holds no state to fit
# A GPU channel whose readings span less than this share of the widest channel's (1st to 99th
# percentile), low in the trace's range, held one level throughout: a GPU outside the job [A]
OUTSIDE_SPAN = 0.1


def per_gpu_signal(
    data: pd.DataFrame,
    meta: dict,
    scenario: Scenario,
    period: float | None = None,
    gpus_per_node: int | None = None,
) -> tuple[np.ndarray, np.ndarray, int, np.datetime64]:
    """The trace on a uniform grid as per-GPU power [W].

    Returns ``(times [s from the first sample], cells (channel × time) [W per GPU], GPU count,
    the first sample's time)``. A GPU trace is read as it is. A meter channel holds the AC
    power of ``gpus_per_node`` GPUs (``N / cluster.gpus_per_node`` nodes of the preset): its DC
    power through the inverse of the preset's PSU curve, less the preset's rest-of-node power,
    shared by its GPUs.
    """
    n_rows, channels = len(data), list(meta.get("channels", []))
    if not 0 < len(channels) <= MAX_CHANNELS:
        raise DataFileError(
            f"{meta.get('source', 'the trace')}: {len(channels)} channels; the fit takes 1 to "
            f"{MAX_CHANNELS:,} GPUs or meters (fit a subset)"
        )
    step = _sampling_step(meta, period)
    span = n_rows and (data["time"].max() - data["time"].min()) / np.timedelta64(1, "s")
    cells = len(channels) * (span / step + 1.0)
    if cells > MAX_CELLS:
        raise DataFileError(
            f"{meta.get('source', 'the trace')}: {len(channels)} channels over "
            f"{format_duration(span)} at {format_duration(step)} make {cells:,.0f} cells, more "
            f"than {MAX_CELLS:,}: fit a shorter span or fewer channels, or a coarser --period"
        )
    grid = to_grid(data, step=step)
    values = np.asarray(grid.values, dtype=float)
    if values.shape[-1] < MIN_SAMPLES:
        raise DataFileError(
            f"{meta.get('source', 'the trace')}: {values.shape[-1]} samples; the fit needs at "
            f"least {MIN_SAMPLES}"
        )
    time = grid["time"].values
    times = (time - time[0]) / np.timedelta64(1, "s")
    n_gpus = len(channels)
    if not np.nanmax(values) > 0.0:
        raise DataFileError(
            f"{meta.get('source', 'the trace')}: every sample reads 0 W: no power was recorded; "
            "check that the file's power column is the one read"
        )
    if meta.get("kind") == "meter":
        if gpus_per_node is not None and not 1 <= gpus_per_node <= MAX_METER_GPUS:
            raise PowerModelError(
                f"--gpus-per-node {gpus_per_node}: a meter channel feeds 1 to "
                f"{MAX_METER_GPUS:,} GPUs"
            )
        if gpus_per_node is None:
            raise PowerModelError(
                "a meter trace reads nodes, not GPUs: give --gpus-per-node N, the GPUs behind "
                "each meter channel"
            )
        values = _meter_to_gpu(
            values, scenario, gpus_per_node, str(meta.get("source", "the trace"))
        )
        n_gpus = len(channels) * gpus_per_node
    return times, values, n_gpus, time[0]


def _sampling_step(meta: dict, period: float | None) -> float:
    """The grid step [s]: the trace's own measured step where its samples carry times (a
    ``period`` given for it must agree within :data:`PERIOD_TOLERANCE`), else ``period``."""
    source, measured = meta.get("source", "the trace"), meta.get("step")
    if not meta.get("timed", True) or measured is None:
        step = float(period or measured or 0.0)
        if not step > 0.0:
            raise DataFileError(f"{source}: the trace has no sampling period: give --period")
        return step
    measured = float(measured)
    if period is not None and abs(period / measured - 1.0) > PERIOD_TOLERANCE:
        raise DataFileError(
            f"{source}: --period {format_duration(period)} contradicts the "
            f"{format_duration(round(measured, 9))} step its times measure (more than "
            f"{PERIOD_TOLERANCE:.0%} apart): drop --period, which only times files without times"
        )
    return measured


def _meter_to_gpu(values: np.ndarray, scenario: Scenario, gpus: int, source: str) -> np.ndarray:
    """AC power of meter channels [W] as the power of each GPU behind them [W], with the rest
    of each node at its running power (:func:`rest_share` moves it to each state's)."""
    cl = scenario.cluster
    if gpus % cl.gpus_per_node:
        raise PowerModelError(
            f"--gpus-per-node {gpus}: a meter feeds whole nodes of the preset's "
            f"{cl.gpus_per_node} GPUs (cluster.gpus_per_node); give a multiple of it"
        )
    nodes = gpus // cl.gpus_per_node
    dc = np.linspace(0.0, cl.psu.capacity, 4001)
    ac = cl.psu.input_power(dc)
    node_ac = values / nodes
    for bad, worst, what in (
        (node_ac < ac[0], np.min, f"below the {ac[0]:,.0f} W its supplies draw with no load"),
        (node_ac > ac[-1], np.max, f"above the {ac[-1]:,.0f} W they draw at full capacity"),
    ):
        if np.any(bad):
            raise DataFileError(
                f"{source}: {int(bad.sum()):,} sample(s) give a node {worst(node_ac[bad]):,.0f} W "
                f"AC, {what} "
                f"(cluster.psu of the preset, {cl.psu.capacity:,.0f} W per node): check "
                f"--gpus-per-node ({gpus} GPUs, {nodes} node(s) per channel), the meter's unit, "
                "or fit with a preset of these nodes (--preset); drop spells the nodes were off"
            )
    node_dc = np.interp(node_ac, ac, dc)
    return (node_dc - rest_power(cl)[State.RUNNING]) / cl.gpus_per_node


def _outside_the_job(cells: np.ndarray, meta: dict) -> tuple[np.ndarray, tuple[str, ...]]:
    """The GPU channels of the job, and what to say of those left out: a channel that held
    one level throughout (its 1st to 99th percentile within :data:`OUTSIDE_SPAN` of the widest
    channel's) under a third of the way from the lowest channel's floor to the highest
    channel's top is a GPU the job did not use (4 of a node's 8 idle beside a 4-GPU job), whose
    idle the fit's median and mean would mix into the job's every level."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a channel with no sample
        low, high = np.nanpercentile(cells, [1.0, 99.0], axis=1)
    ok = np.isfinite(low) & np.isfinite(high)
    if np.count_nonzero(ok) < 2:
        return cells, ()
    span = high - low
    floor, top = float(np.min(low[ok])), float(np.max(high[ok]))
    out = ok & (span < OUTSIDE_SPAN * span[ok].max()) & (high < floor + (top - floor) / 3.0)
    if not out.any() or out[ok].all():
        return cells, ()
    names = np.asarray(meta.get("channels", [f"gpu{i}" for i in range(cells.shape[0])]), str)
    said = (
        f"{int(out.sum())} of {cells.shape[0]} GPUs ({_listed(names[out])}) held "
        f"{np.nanmedian(cells[out]):,.0f} W throughout while the others reached "
        f"{top:,.0f} W: outside the job, they are left out of its fit (fitted on "
        f"{int((~out).sum())} GPUs)"
    )
    return cells[~out], (said,)


def _listed(names: np.ndarray, most: int = 8) -> str:
    """Up to ``most`` names, then how many more."""
    shown = ", ".join(names[:most])
    return shown if names.size <= most else f"{shown} and {names.size - most} more"


def _refuse_gaps(reported: np.ndarray, step: float, meta: dict) -> None:
    """Refuse a span with no sample longer than :data:`MAX_GAP` and :data:`GAP_STEPS` steps
    between the times ``reported`` [s] where some channel reported."""
    gaps = np.diff(reported)
    i = int(np.argmax(gaps))
    if gaps[i] > max(MAX_GAP, GAP_STEPS * step):
        at = pd.Timestamp(_trace_start(meta))
        begin = at + pd.Timedelta(seconds=float(reported[i]))
        raise DataFileError(
            f"{meta.get('source', 'the trace')}: no sample for {format_duration(round(gaps[i]))} "
            f"after {begin.isoformat()} ({int((gaps > max(MAX_GAP, GAP_STEPS * step)).sum())} "
            f"gap(s) over {format_duration(MAX_GAP)}): the fit would read a hole as a state; "
            "split the file at the gap and fit each part"
        )


def _trace_start(meta: dict) -> np.datetime64:
    """The time of the trace's first sample (``meta["start"]``; the epoch where none is said)."""
    return np.datetime64(pd.Timestamp(meta.get("start", 0)), "ns")
