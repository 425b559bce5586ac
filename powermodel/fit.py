"""Calibration from a user's own telemetry: detect a training job's states in a measured trace,
estimate each state's level and the job's timing through the sensor chain that recorded it, and
write a scenario that extends a preset with the fitted values.

A GPU trace (NVML, DCGM) gives each GPU's board power; a node, rack or PDU meter gives the AC
power of the nodes behind it, from which a per-GPU level follows only through the preset's PSU
curve and rest-of-node power (``--gpus-per-node``). Everything is estimated on the *sensor's*
view: a quantity that the chain's averaging hides (a step shorter than about four averaging
windows, an edge faster than a quarter window) is reported as unresolved and left at the preset's
value, while what the averaging keeps exactly (the mean running level) is still fitted.
"""

from __future__ import annotations

import difflib
import math
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import tomli_w
from scipy.ndimage import median_filter, uniform_filter1d
from scipy.signal import fftconvolve, find_peaks

from powermodel.durations import format_duration
from powermodel.engine import facility
from powermodel.engine.derive import derive
from powermodel.errors import DataFileError, PowerModelError
from powermodel.iotools.telemetry import to_grid
from powermodel.models import sensors, workload
from powermodel.models.events import State
from powermodel.scenario import (
    MAX_RECOVERY,
    NODE_KEYS,
    Scenario,
    Workload,
    gpu_catalogue,
    load_scenario,
)
from powermodel.simulate import rest_power

__all__ = [
    "MAX_CELLS",
    "MAX_CHANNELS",
    "REFERENCE",
    "Fit",
    "chain_of",
    "choose_gpu",
    "GpuChoice",
    "Quantity",
    "Timeline",
    "detect",
    "fit",
    "fit_cells",
    "fitted_toml",
    "per_gpu_signal",
    "step_response",
    "summary",
    "well_formed",
    "with_gpu",
]

REFERENCE = "llama3-405b-16k-h100"  # the preset a fit extends by default
MAX_CHANNELS = 4096  # GPUs or meters in one trace
MAX_METER_GPUS = 100_000  # GPUs behind one meter channel (a whole hall's feeder)
MAX_CELLS = 50_000_000  # channel × sample cells of the gridded trace (400 MB of float64)
PROBE_STEPS = 20_000  # grid steps of the probe of a sensor's step response, at most
# No channel reporting for longer than this, and for more than GAP_STEPS samples, is a hole the
# fit would fill with a straight line and read as a state of the job [A]: refused, named.
MAX_GAP = 60.0  # s
GAP_STEPS = 10
# The GPUs built on GA100, whose NVML power is instantaneous, not the 1-s average of the rest
# of Ampere and newer [P, nvidia_nvml]: catalogue names that begin so
GA100 = ("A100", "A30")
# AMD's power fields that hold the current (instantaneous) socket power of MI300 and later, as
# rocm-smi and amd-smi head them [P, rocm_smi; P, amd_smi] (lower case): not the average
AMD_CURRENT = ("current socket", "socket_power", "power_usage", "current_socket_power")
PERIOD_TOLERANCE = 0.1  # a --period this far from a timed trace's measured step is refused
MIN_SAMPLES = 20  # a trace shorter than this holds no state to fit
MIN_SPREAD = 0.002  # a step-to-step spread below this is written as none (variation off)
MIN_SPELLS = 3  # stalls whose lengths' spread is fitted, at least
# start-ups whose lengths' spread is fitted, at least: a job restarts a few times a trace, and
# two give a spread (the sample CV of two lengths is uncertain by about three quarters of
# itself, the standard deviation of |Z| over its mean: said so)
MIN_STARTUPS = 2
RESOLVE_WINDOWS = 4.0  # a step resolves when it spans this many averaging windows
FOLD_BINS = 64  # phase bins of a folded running profile
FOLD_SAMPLES = 50_000  # samples folded at most (the longest running segments first)
FOLD_CHUNK = 16  # candidate periods folded at once
RAMP_SAMPLES = 20_000  # samples of the rises a start-up ramp is fitted to, at most
DUTY = np.linspace(0.03, 0.97, 95)  # compute shares tried
EDGES = np.array([0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0])  # edge durations tried [s]
RAMPS = np.concatenate(([0.0], np.geomspace(0.1, 3600.0, 120)))  # start-up ramps tried [s]
# A dip below the running band held this many sensor windows at no more than this share of the
# running level is a stall, not an iteration's trough, however often it recurs: an iteration's
# communication trough that lasts 8 windows belongs to a step of 12 s or more (its share is
# about a third [P, ko_zhu Table I]), whose trough holds 0.2-0.8 below compute (the same table);
# both at once (a long step with a trough at half of compute or lower) is read as stalls.
LONG_DIP = 8.0  # sensor windows
DEEP_DIP = 0.5  # of the running band's median level
# A long dip that is shallow (a burn or power-smoothing floor holds the GPUs up through a stall)
# is still a stall when the dips' lengths vary or fill most of the cycle: an iteration's trough
# lasts the same every step (a step's length varies by 0.5-10 % [A], workload.variation), and
# its share of the step is about a third [P, ko_zhu Table I], where stalls' lengths spread (one
# H100 run's from 16 to 108 s, issue 27) and checkpoints every few stall lengths leave the
# training between them shorter than the stalls. Over LONG_DIP windows, placing each edge within
# a window spreads a trough's measured length by under 0.1, a quarter of the margin below [A].
STALL_CV = 0.25  # coefficient of variation of the dips' lengths above which they are stalls
TROUGH_SHARE = 0.6  # share of the cycle (dip start to dip start) above which dips are stalls
IDLE, LOW, HIGH = 0, 1, 2  # sample labels: idle band, stalled band, running band
HELD = (State.FAILED_IDLE, State.CHECKPOINT, State.STALLED, State.LOADING)  # flat levels
# A GPU trace's highest sustained level is the top of its rolling mean over this long (and at
# least two sensor windows): a poll's spike is no level a board holds
SUSTAIN = 2.0  # s
SUSTAIN_QUANTILE = 0.99  # of the rolling means: the 1 % above it are the spikes it leaves out
# The preset's GPU is kept for a GPU trace whose lowest held level is at least this share of
# its idle (the H100's is 60-100 W, the catalogue's 80 W midpoint unconfirmed) and whose highest
# sustained level is at most this multiple of its TDP (NVML's average reads a little over TDP)
KEEP_IDLE = 0.5
KEEP_TDP = 1.1
# A GPU channel whose readings span less than this share of the widest channel's (1st to 99th
# percentile), low in the trace's range, held one level throughout: a GPU outside the job [A]
OUTSIDE_SPAN = 0.1
# A held level is the GPUs' idle only up to this multiple of the GPU's idle (as idle: a meter's
# with the rest of node at its idle power). The H100 idles at 60-100 W (80 W in the catalogue);
# MLPerf's SMC H100 nodes idle at 2.2 x it under the preset's rest of node (2.3 kW AC a node),
# while their evaluations and first steps' pauses hold 3.4-3.9 x it (3.5-3.6 kW) [D,
# mlperf_training_v4_smc]: a log that begins mid-run shows no idle, only such a pause
IDLE_SPAN = 3.0
# A period folded from samples that a sensor did not average over their interval dt may be an
# alias of any step T with |1/T - k/dt| = 1/P (k = 1, 2...): the samples of the two are the
# same on a regular grid. The aliases considered are the steps a training job can take: at
# least MIN_STEP (three quarters of the shortest, 0.2 s, of issue 27's real logs [A]), and one
# whose swing, seen through the chain's gain at 1/T, would need a trough below 0 W is none.
# The rest are told apart only by the samples' own stamps (their jitter, slow polls, restarts
# of the poll loop): each candidate is folded on the stamps, and P stands only when every
# alias folds to less than ALIAS_MARGIN of its between-bin variance [A].
MIN_STEP = 0.15  # s
GOLDEN = (1.0 + math.sqrt(5.0)) / 2.0
ALIAS_MARGIN = 0.5
ALIAS_BETTER = 1.25  # an alias folding this much better than the step is named the step
ALIAS_BINS = 16  # phase bins of each running spell folded on the stamps
ALIAS_SAMPLES = 20_000  # stamped samples folded at most (an even choice, seeded)
ALIAS_TRIES = 41  # frequencies tried about each candidate
# A trace that shows no checkpoint at all bounds the interval from below only (longer than the
# trace): the interval is written as this many times the trace's span, at most MAX_RECOVERY,
# so that no run of the trace's span draws one, nor a hold-out's (whose fitted part is at least
# 1 - fit_report.MAX_HOLDOUT, a tenth, of the trace) [A]
UNSEEN_SPANS = 10.0
# An unresolved step written short gets edges of at most this share of it each (two a step)
EDGE_SHARE = 0.25
MAX_BOARD = 10e3  # W: a sustained level above this is no board (gpu.tdp's bound)
# An unresolved step's swing is the running samples' spread about their rolling mean over this
# many of the written steps (and this long at least): a slower drift is no step's
TREND_STEPS = 5
TREND_MIN = 30.0  # s


@dataclass(frozen=True)
class Quantity:
    """One fitted quantity: its value (None when unresolved), how it was found or why not, and
    the scenario key it is written to (None: reported only)."""

    name: str
    value: float | None
    unit: str
    resolved: bool
    how: str
    key: str | None = None


@dataclass(frozen=True)
class GpuChoice:
    """The GPU a fit writes: the catalogue entry ``name`` (``cluster.gpu``), with ``table`` the
    ``[gpu]`` keys built from the trace that win over the entry's (empty: the entry as it is),
    each ``(value, note)``; ``named``: given by the caller (``--gpu``)."""

    name: str
    table: dict[str, tuple[object, str]]
    named: bool
    how: str


@dataclass(frozen=True)
class Timeline:
    """The job states found in a trace: segment ``i`` spans ``[start[i], start[i+1])`` [s from
    the trace's first sample], with :class:`~powermodel.models.events.State` codes; idle before
    and between runs is ``FAILED_IDLE``, a start-up level above idle ``LOADING``."""

    start: np.ndarray
    state: np.ndarray
    duration: float

    def lengths(self) -> np.ndarray:
        return np.diff(np.append(self.start, self.duration))

    def count(self, state: State) -> int:
        return int(np.count_nonzero(self.state == state))


def well_formed(line: Timeline) -> tuple[Timeline, tuple[str, ...]]:
    """``line`` as a timeline the model can render: the first segment from 0, starts strictly
    increasing within ``[0, duration)``, every length above 0, no two segments of one state in
    a row; with a warning for each kind of repair.

    A segment whose start is not finite, or that a later one starts at or before (a zero or
    negative length: crossed boundaries), is dropped and the segments either side of it meet;
    segments that begin at or after the trace's end are dropped; a first segment that starts
    late or early starts at 0. A state that is no job state, or a duration that is not a
    positive number, is refused: no repair could say what the trace held there.
    """
    start, state = np.asarray(line.start, float), np.asarray(line.state)
    codes = np.array([s.value for s in State])
    if not (np.isfinite(line.duration) and line.duration > 0):
        raise PowerModelError(
            f"the fitted timeline spans {line.duration!r} s: no trace of positive length was "
            "fitted; check the trace's times"
        )
    if start.size == 0 or start.shape != state.shape or not np.isin(state, codes).all():
        bad = sorted(set(state[~np.isin(state, codes)].tolist()))
        raise PowerModelError(
            f"the fitted timeline holds {start.size} start(s) for {state.size} state(s)"
            + (f", and state code(s) {bad} that are no job state" if bad else "")
            + ": it cannot be written; report this trace to the project"
        )
    said: list[str] = []
    ok = np.isfinite(start) & (start < line.duration)
    if not ok.any():
        raise PowerModelError(
            f"the fitted timeline has no segment within the trace's {line.duration:.6g} s: it "
            "cannot be written; report this trace to the project"
        )
    if not ok.all():
        said.append(
            f"{int((~ok).sum())} segment(s) starting at no time or at or after the trace's end "
            f"({line.duration:.6g} s) dropped"
        )
    start, state = start[ok], state[ok]
    if np.any(start < 0.0):
        said.append(f"{int((start < 0).sum())} segment(s) starting before the trace: from 0")
        start = np.maximum(start, 0.0)
    # a segment that a later one begins at or before holds nothing (crossed boundaries): it is
    # dropped and its neighbours meet; what is kept then starts strictly in order
    end = np.minimum.accumulate(np.append(start[1:], line.duration)[::-1])[::-1]
    keep = end > start
    if not keep.all():
        lost = ", ".join(sorted({State(v).name.lower() for v in state[~keep].tolist()}))
        said.append(
            f"{int((~keep).sum())} segment(s) of zero or negative length ({lost}) dropped, "
            "their neighbours meeting"
        )
    start, state = start[keep], state[keep]
    if start[0] != 0.0:
        said.append(f"the first segment began {start[0]:.6g} s into the trace: from 0")
        start = np.concatenate(([0.0], start[1:]))
    new = np.append(True, state[1:] != state[:-1])
    if not new.all():
        said.append(f"{int((~new).sum())} segment(s) joined to the one before, of the same state")
    fixed = Timeline(
        start=start[new], state=state[new].astype(line.state.dtype), duration=line.duration
    )
    return fixed, tuple(f"the fitted timeline: {s}" for s in said)


@dataclass(frozen=True)
class StepResponse:
    """A sensor chain's response to a unit step at time 0, sampled every ``dt`` [s]."""

    dt: float
    values: np.ndarray
    delay: float  # time to half the step [s]
    settle: float  # time to 99 % of the step [s]
    full: float  # time to 99.9 % of the step: a moving average's window [s]
    instant: bool = False  # each reading the value at one instant (no averaging, no filter)

    @property
    def window(self) -> float:
        """The chain's averaging window: twice its half-step delay (a moving average's
        length). [s]"""
        return 2.0 * self.delay

    def kernel(self, dt: float, n: int | None = None) -> np.ndarray:
        """Impulse response as weights on a grid of step ``dt`` [s] (sums to 1); ``n`` cells
        (default: until it settles)."""
        n = int(np.ceil(self.settle / dt)) + 1 if n is None else n
        t = np.arange(n + 1) * dt
        cum = np.interp(t, np.arange(self.values.size) * self.dt, self.values, right=1.0)
        return np.diff(cum)


@dataclass(frozen=True)
class Fit:
    """What a trace shows of a job, through its sensor."""

    source: str
    sensor: sensors.Sensor
    kind: str
    start: np.datetime64
    period: float  # sampling [s]
    n_gpus: int
    times: np.ndarray  # s from start
    power: np.ndarray  # W per GPU, the channels' mean (NaN where none reported)
    timeline: Timeline
    quantities: dict[str, Quantity]
    response: StepResponse
    warnings: tuple[str, ...]
    gpu: GpuChoice

    def value(self, name: str, default: float | None = None) -> float | None:
        q = self.quantities.get(name)
        return q.value if q is not None and q.resolved else default


def step_response(sensor: str | sensors.Sensor, period: float) -> StepResponse:
    """The chain's response to a unit step, through :func:`powermodel.models.sensors.read`.

    The chain is probed, not assumed: whatever averaging or filter the sensor applies, the fit
    sees it as this response (linear and time-invariant chains; a block-average meter's is its
    mean over the block's phase).
    """
    horizon = max(30.0, 40.0 * period)
    for _ in range(8):  # widen until the chain settles: a handful of tries, not a loop on data
        dt = max(min(period, 0.05) / 5.0, horizon / PROBE_STEPS)  # at most PROBE_STEPS
        n = int(np.ceil(horizon / dt))
        values = np.concatenate((np.zeros(n), np.ones(n)))
        y = np.asarray(sensors.read(values, dt, sensor, at=(n + np.arange(n)) * dt), dtype=float)
        if abs(y[-1] - 1.0) < 1e-3:
            break
        horizon *= 4.0
    else:
        raise PowerModelError(f"the sensor chain {sensor!r} does not settle to a step")
    t = np.arange(y.size) * dt
    return StepResponse(
        dt=dt,
        values=y,
        delay=float(np.interp(0.5, np.maximum.accumulate(y), t)),
        settle=float(t[np.argmax(y >= 0.99)]),
        full=float(t[np.argmax(y >= 0.999)]),
        instant=isinstance(sensor, sensors.Sensor) and sensor.window == 0 and sensor.filter is None,
    )


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


def rest_share(
    scenario: Scenario, states: np.ndarray, rest: np.ndarray | None = None
) -> np.ndarray:
    """Per-GPU power [W] to add to a meter's inversion at the running rest-of-node power so
    that each sample carries its own state's rest: ``(rest[RUNNING] - rest[state]) /
    gpus_per_node``, positive while idle; ``rest`` [W per node, by State] the model's
    (:func:`powermodel.simulate.rest_power`) unless given (:func:`_state_rest`'s)."""
    rest = rest_power(scenario.cluster) if rest is None else rest
    return (rest[State.RUNNING] - rest[states]) / scenario.cluster.gpus_per_node


def _segment_medians(times: np.ndarray, x: np.ndarray, line: Timeline, settle: float) -> np.ndarray:
    """Median of each segment's samples once the sensor settled in it (all its samples where
    none settled) [W]; NaN for a segment with no sample."""
    seg = np.clip(np.searchsorted(line.start, times, side="right") - 1, 0, line.start.size - 1)
    settled = times >= line.start[seg] + settle
    both = pd.Series(x).groupby(seg).median()
    late = pd.Series(x[settled]).groupby(seg[settled]).median()
    out = np.full(line.start.size, np.nan)
    out[both.index.to_numpy()] = both.to_numpy()
    out[late.index.to_numpy()] = late.to_numpy()
    return out


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
    prev = np.concatenate(([-1], role[:-1]))
    nxt = np.concatenate((role[1:], [-1]))
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
    gpus = cl.gpus_per_node
    rest = rest_power(cl).astype(float)
    share = rest_share(scenario, np.arange(len(State)), rest)

    def level(state: State) -> float:
        found, n = _interior_median(times, x + share[state], line, state, response.settle)
        if not n:  # a spell shorter than the sensor's settling: all its samples
            found, _ = _interior_median(times, x + share[state], line, state, 0.0)
        return found

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
        node_dc = gpus * found + rest[state]
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
            f"({rest[state]:,.0f} W a node) would be {found:,.1f} W a GPU, under the "
            f"{floor:,.1f} W a powered GPU draws there; the GPUs are taken at {floor:,.1f} W "
            f"and the rest of the node's {node_dc:,.0f} W DC is its rest of node"
        )
        if key is None:
            how += (
                f" (reported: the model holds cluster.rest_power_active, "
                f"{cl.rest_power_active:,.0f} W, in every active state, so its {what} draws "
                f"{cl.rest_power_active - inferred:,.0f} W a node more than the trace's)"
            )
        quantities[f"{what} rest of node"] = Quantity(
            f"{what} rest of node", round(float(inferred), 1), "W", key is not None, how, key
        )
        said.append(f"{what} rest of node {how}")
        rest[state] = inferred
        if state == State.FAILED_IDLE:
            rest[State.MAINTENANCE] = inferred
    return rest, quantities, tuple(said)


# --- detection ----------------------------------------------------------------------------


def _otsu(x: np.ndarray, bins: int = 256) -> float:
    """Threshold that best splits ``x`` into two classes (Otsu): the largest between-class
    variance over a histogram."""
    counts, edges = np.histogram(x, bins=bins)
    centre = 0.5 * (edges[1:] + edges[:-1])
    w0 = np.cumsum(counts)
    w1 = w0[-1] - w0
    s0 = np.cumsum(counts * centre)
    with np.errstate(all="ignore"):
        m0, m1 = s0 / w0, (s0[-1] - s0) / w1
        between = w0 * w1 * (m0 - m1) ** 2
    return float(edges[1:][np.nanargmax(np.where(w1 > 0, between, -1.0))])


def _low_levels(low: np.ndarray, sigma: float, span: float) -> np.ndarray:
    """Plateau levels among the samples below the running band, lowest first: the (at most
    three) most prominent peaks of their histogram (a level held for a while is a peak; a
    transition through the band is not)."""
    width = max(2.0 * sigma, span / 400.0, 1e-6)
    edges = np.arange(low.min() - width, low.max() + 2.0 * width, width)
    counts, edges = np.histogram(low, bins=edges)
    smooth = np.convolve(counts, np.ones(3) / 3.0, mode="same")
    peaks, props = find_peaks(
        np.concatenate(([0.0], smooth, [0.0])), prominence=max(3.0, 0.05 * smooth.max())
    )
    peaks -= 1
    top = peaks[np.argsort(props["prominences"])[::-1][:3]]  # idle, start-up, stalled at most
    return np.sort(0.5 * (edges[top] + edges[top + 1]))


def _flat(x: np.ndarray, start: np.ndarray, length: np.ndarray, tolerance: float) -> np.ndarray:
    """Whether each run holds a level: the means of its first and last thirds agree within
    ``tolerance`` (a ramp crossing a band does not)."""
    c = np.concatenate(([0.0], np.cumsum(x)))
    third = np.maximum(length // 3, 1)
    first = (c[start + third] - c[start]) / third
    last = (c[start + length] - c[start + length - third]) / third
    return np.abs(last - first) <= tolerance


def _runs(labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Run-length code: start index, length and label of each run."""
    start = np.flatnonzero(np.diff(labels, prepend=labels[0] - 1))
    length = np.diff(np.append(start, labels.size))
    return start, length, labels[start]


def _noise(x: np.ndarray, where: np.ndarray | None = None) -> float:
    """Sample noise of a signal: the median absolute first difference (robust to its steps),
    over the pairs of samples both in ``where`` (held states: no swing to mistake for noise)."""
    d = np.diff(x)
    if where is not None and np.count_nonzero(where[1:] & where[:-1]) > 10:
        d = d[where[1:] & where[:-1]]
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / np.sqrt(2.0))


@dataclass(frozen=True)
class _Runs:
    """Labelled runs of a trace after the grammar: start index, length, role."""

    start: np.ndarray
    length: np.ndarray
    role: np.ndarray  # State codes; RAMP marks a rise from idle (or start-up) into running


def detect(
    times: np.ndarray, x: np.ndarray, response: StepResponse
) -> tuple[Timeline, dict[str, float]]:
    """The job's states over a per-GPU power signal sampled at ``times`` [s] through a chain of
    step response ``response``.

    Returns the timeline (raw state boundaries: the chain's delay taken off each crossing) and
    the band thresholds and levels found (``run_threshold``, ``idle_level``, ``low_level``,
    ``noise``) [W].

    Notes
    -----
    Samples split into a running band and a low band at Otsu's threshold; the low band's
    histogram peaks are the held levels (idle, stalled). Runs of labels then read as states by
    what surrounds them: low between two running runs is a checkpoint stall; low from running
    into idle is a failure's teardown (survivors spinning); idle is idle; a held level between
    idle and running, longer than three windows, is a start-up; running after idle or start-up
    begins with the start-up ramp. Each boundary is the crossing of the midpoint of the levels
    either side, less the chain's half-step delay (exact for a symmetric averaging window).
    """
    period = float(np.median(np.diff(times)))
    duration = float(times[-1] - times[0] + period)
    held = median_filter(x, 5, mode="nearest")  # a lone outlier is no state
    spread = float(held.max() - held.min())
    if not spread > max(10.0 * _noise(x), 0.05 * abs(float(np.median(x)))):
        # one level throughout: no change of state tells idle from running; read as running
        one = Timeline(
            start=np.zeros(1), state=np.full(1, State.RUNNING, np.int8), duration=duration
        )
        found = {"run_threshold": -np.inf, "idle_level": np.nan, "low_level": np.nan}
        return one, {**found, "noise": _noise(x), "period": period}
    t_run = _otsu(x)
    t_run = _held_in_running(x, t_run, period, response.window)
    running = _Runs(np.zeros(1, np.int64), np.full(1, x.size), np.full(1, State.RUNNING, np.int8))
    for _ in range(3):  # at most twice, a band of the iteration's troughs is split off
        labels, runs, levels, two, sigma, high_level = _bands(x, t_run, period, response)
        trough = _trough_level(x, labels, high_level, response.window / period)
        if not np.isfinite(trough):
            break
        # dips a few of their lengths apart are the iteration's troughs, not checkpoint stalls:
        # the running band reaches down to them, and any held level lies well below them
        below = x[x < t_run]
        t_next = _otsu(below) if below.size >= MIN_SAMPLES else np.inf
        if not t_next < trough - max(10.0 * sigma, 0.05 * abs(trough)):
            runs = running  # troughs all the way down: no state but running
            break
        t_run = t_next
    else:
        runs = running
    if not two and levels.size:
        idle_level = low_level = float(levels[0])
    elif two:
        idle_level, low_level = float(levels[0]), float(levels[-1])
    else:
        idle_level = low_level = np.nan
    bounds = _boundaries(times, x, runs, response, high_level, idle_level, low_level, sigma)
    timeline = Timeline(
        start=np.concatenate(([times[0]], bounds)) - times[0],
        state=runs.role.copy(),
        duration=duration,
    )
    found = {
        "run_threshold": t_run,
        "idle_level": idle_level,
        "low_level": low_level,
        "noise": sigma,
        "period": period,
    }
    return timeline, found


def _held_in_running(x: np.ndarray, t_run: float, period: float, window: float) -> float:
    """The running threshold [W]: ``t_run``, or, where the band above it holds a lower level
    of its own, the threshold above that level (a burn or power-smoothing floor holding the
    GPUs up through checkpoint stalls, issue 27: Otsu's threshold on the whole trace falls
    between idle and both of them, and the stalls read as running).

    The band's own Otsu threshold splits it into two levels that stand apart (by ten times the
    noise and 5 % of the upper one), whose samples cross between them quickly (under
    :data:`EDGE_SHARE` of the band's samples lie in the middle half between the levels: a drift
    of the level, a throttle, does not), and whose lower runs between two running runs are held
    (flat) for :data:`LONG_DIP` windows or more (a sampled period, ``period`` [s], at least)
    and read as stalls, not an iteration's troughs (:func:`_trough_level`)."""
    band = x >= t_run
    if np.count_nonzero(band) < 2 * MIN_SAMPLES:
        return t_run
    t_up = _otsu(x[band])
    lower, upper = band & (x < t_up), x >= t_up
    if min(np.count_nonzero(lower), np.count_nonzero(upper)) < MIN_SAMPLES:
        return t_run
    lo, hi = np.median(x[lower]), np.median(x[upper])
    sigma = _noise(x, band)
    apart = hi - lo > max(10.0 * sigma, 0.05 * abs(hi))
    middle = band & (x > lo + 0.25 * (hi - lo)) & (x < hi - 0.25 * (hi - lo))
    if not (apart and np.count_nonzero(middle) < EDGE_SHARE * np.count_nonzero(band)):
        return t_run
    # the dips within the band alone: below it (idle, a start-up) is no part of the question
    labels = np.where(upper | ~band, HIGH, LOW).astype(np.int8)
    start, length, label = _runs(labels)
    inner = np.zeros(label.size, bool)
    inner[1:-1] = label[1:-1] == LOW
    held = inner & _flat(x, start, length, max(6.0 * sigma, 0.1 * (hi - lo)))
    windows = max(window, period) / period
    if not (held.any() and np.median(length[held]) >= LONG_DIP * windows):
        return t_run
    if np.isfinite(_trough_level(x, labels, float(hi), windows)):
        return t_run  # long regular dips of a long step: its troughs, left to the running band
    return float(t_up)


def _trough_level(x: np.ndarray, labels: np.ndarray, high: float, window: float) -> float:
    """The level of the dips below the running band (runs between two running runs) if they
    are the iteration's troughs; NaN if they are not (or too few to tell). [W]

    Troughs recur a few of their own lengths apart (stalls, minutes apart, do not), but so do
    checkpoint stalls when checkpoints come every few stall lengths. What tells them apart is
    their depth and length against the sensor's resolution: a stall lasts many averaging
    windows (:data:`LONG_DIP` or more, ``window`` samples each) and either holds the GPUs near
    a low held level (:data:`DEEP_DIP` of the running level or less) or, held up by a burn
    floor, lasts as it will (lengths spreading by more than :data:`STALL_CV`) or longer than
    the training between (over :data:`TROUGH_SHARE` of the cycle); an iteration's trough does
    none of these with its length.
    """
    start, length, high_run = _runs((labels == HIGH).astype(np.int8))  # any level below: a dip
    dip = np.zeros(high_run.size, bool)
    dip[1:-1] = high_run[1:-1] == 0
    if dip.sum() < 3:
        return np.nan
    cycle = np.median(np.diff(start[dip]))
    lengths = length[dip].astype(float)
    if not cycle < 5 * np.median(lengths):
        return np.nan
    level = float(np.median(x[np.repeat(dip, length)]))
    if np.median(lengths) >= LONG_DIP * max(window, 1.0) and (
        level <= DEEP_DIP * high
        or np.std(lengths) > STALL_CV * np.mean(lengths)
        or np.median(lengths) > TROUGH_SHARE * cycle
    ):
        return np.nan  # long, and deep or as long as they will: checkpoint stalls
    return level


def _bands(
    x: np.ndarray, t_run: float, period: float, response: StepResponse
) -> tuple[np.ndarray, _Runs, np.ndarray, bool, float, float]:
    """Samples labelled by band at the running threshold ``t_run`` [W] and read as states:
    labels, runs, the held levels below the running band, whether idle has another held level
    above it, the noise and the running band's median."""
    sigma = _noise(x, x < t_run)
    low_vals = x[x < t_run]
    high_level = float(np.median(x[x >= t_run]))
    levels = (
        _low_levels(low_vals, sigma, high_level - low_vals.min()) if low_vals.size else np.empty(0)
    )
    # idle is the lowest held level; any distinct one above it (start-up, stalled) is the low
    # band, whose runs read as states by what surrounds them
    apart = np.flatnonzero(
        levels - (levels[0] if levels.size else 0.0) > max(6.0 * sigma, 0.02 * high_level)
    )
    two = apart.size > 0
    t_idle = 0.5 * (levels[0] + levels[apart[0]]) if two else -np.inf
    labels = np.where(x >= t_run, HIGH, np.where(x >= t_idle, LOW, IDLE)).astype(np.int8)
    flat = max(6.0 * sigma, 0.1 * (t_run - x.min()))
    labels = _despeckle(labels, max(1, round(0.2 * response.window / period)))
    labels = _split_rises(labels, x, flat, int(3.0 * response.window / period))
    runs = _idle_stalls(
        _roles(labels, x, two, period, response.window, flat), response.window / period
    )
    return labels, runs, levels, two, sigma, high_level


def _despeckle(labels: np.ndarray, longest: int) -> np.ndarray:
    """Labels with runs of at most ``longest`` samples between two runs of one label given that
    label: noise flickering across a band's edge, not a state."""
    start, length, label = _runs(labels)
    same = np.zeros(label.size, bool)
    same[1:-1] = label[:-2] == label[2:]
    speck = same & (length <= longest)
    fixed = np.where(speck, np.roll(label, 1), label)
    return np.repeat(fixed, length).astype(labels.dtype)


def _split_rises(labels: np.ndarray, x: np.ndarray, flat: float, shortest: int) -> np.ndarray:
    """Labels with the rise out of a held low level into running given to the running band: a
    start-up level and the ramp's lower part fall in the same band, so the run ends where the
    signal last lies within ``flat`` of the level its first third holds, if it held that level
    for ``shortest`` samples (a ramp that crosses the band alone is left to the rise)."""
    start, length, label = _runs(labels)
    prev = np.concatenate(([-1], label[:-1]))
    nxt = np.concatenate((label[1:], [-1]))
    rising = (label == LOW) & (prev != HIGH) & (nxt == HIGH)
    run = np.repeat(np.arange(start.size), length)
    c = np.concatenate(([0.0], np.cumsum(x)))
    third = np.maximum(length // 3, 1)
    level = (c[start + third] - c[start]) / third
    index = np.arange(x.size)
    held = rising[run] & (np.abs(x - level[run]) <= flat)
    last = np.full(start.size, -1)
    np.maximum.at(last, run[held], index[held])
    out = labels.copy()
    plateau = (last - start >= shortest)[run]
    out[rising[run] & plateau & (index > last[run])] = HIGH
    return out


def _roles(
    labels: np.ndarray, x: np.ndarray, two: bool, period: float, window: float, flat: float
) -> _Runs:
    """Runs of sample labels read as states by what surrounds them (see :func:`detect`)."""
    start, length, label = _runs(labels)
    prev = np.concatenate(([-1], label[:-1]))
    nxt = np.concatenate((label[1:], [-1]))
    short = length * period < window + 2.0 * period
    if not two:  # one held level: stalls if always between running runs, else idle
        inner = (label == LOW) & (prev >= 0) & (nxt >= 0)
        if np.any(inner & ((prev != HIGH) | (nxt != HIGH))):
            label = np.where(label == LOW, IDLE, label)
        else:  # held from the trace's start or to its end: idle before or after the job
            label = np.where((label == LOW) & ((prev < 0) | (nxt < 0)) & ~short, IDLE, label)
    role = np.full(label.size, State.RUNNING, dtype=np.int8)
    role[label == IDLE] = State.FAILED_IDLE
    low = label == LOW
    # a held low level left back to idle: a start-up that did not go on (a brief one, a flicker)
    role[low] = np.where(short[low], State.FAILED_IDLE, State.LOADING)
    role[low & (prev == HIGH) & (nxt == HIGH)] = State.CHECKPOINT
    role[low & (prev == HIGH) & (nxt != HIGH)] = State.STALLED
    rising = low & (prev != HIGH) & (nxt == HIGH)
    short |= rising & ~_flat(x, start, length, flat)
    role[rising & ~short] = State.LOADING
    role[low & (prev == -1) & (nxt != HIGH)] = State.FAILED_IDLE  # trace starts in a held level
    role[low & (prev == -1) & (nxt == HIGH) & short] = State.CHECKPOINT  # cut by the start
    ramp_after = np.zeros(label.size, bool)
    ramp_after[1:] = (label[1:] == HIGH) & np.isin(role[:-1], (State.FAILED_IDLE, State.LOADING))
    ramp_after[1:] |= (label[1:] == HIGH) & rising[:-1] & short[:-1]
    role[ramp_after] = State.RAMP
    # a short level crossed on the way up is the ramp's, and on the way down from running the
    # fall's (the window's own smear, not survivors spinning): each joins the run before it
    falling = low & (prev == HIGH) & (nxt != HIGH) & short
    # a pause at idle inside a start-up, shorter than the loading either side, is the
    # start-up's: one start-up is one state, from leaving idle to the rise into running
    before = np.concatenate(([0], length[:-1]))
    after = np.concatenate((length[1:], [0]))
    role_prev = np.concatenate(([-1], role[:-1]))
    role_next = np.concatenate((role[1:], [-1]))
    pause = (
        (role == State.FAILED_IDLE)
        & (role_prev == State.LOADING)
        & (role_next == State.LOADING)
        & (length < np.maximum(before, after))
    )
    return _joined(_Runs(start, length, role), (rising & short) | falling | pause)


def _idle_stalls(runs: _Runs, window: float) -> _Runs:
    """``runs`` with the idle spells that are checkpoint stalls read as such: a stall may hold
    the GPUs at their idle level (waiting on storage), where it reads as an idle spell between
    two training runs. A failure's is followed by a start-up or a ramp and comes at random; a
    checkpoint's is followed by training at once and comes after equal training (every so
    many steps). So an idle spell with training either side, next to a training run between
    two such spells whose length is their median's within two sensor windows (``window``
    samples) or 5 %, is a stall, when two or more such runs are alike; the rise after it is
    running, not a ramp."""
    role = runs.role
    training = np.isin(role, (State.RUNNING, State.RAMP))
    prev = np.concatenate(([False], training[:-1]))
    nxt = np.concatenate((training[1:], [False]))
    spell = (role == State.FAILED_IDLE) & prev & nxt
    # the training runs between two such spells, and whether each is as long as the others
    between = np.zeros(role.size, bool)
    between[1:-1] = training[1:-1] & spell[:-2] & spell[2:]
    if between.sum() < 2:
        return runs
    typical = float(np.median(runs.length[between]))
    alike = between & (np.abs(runs.length - typical) <= max(2.0 * window, 0.05 * typical))
    if alike.sum() < 2:
        return runs
    beside = np.zeros(role.size, bool)
    beside[:-1] |= alike[1:]
    beside[1:] |= alike[:-1]
    stall = spell & beside
    role = role.copy()
    role[stall] = State.CHECKPOINT
    after = np.concatenate(([False], stall[:-1])) & (role == State.RAMP)
    role[after] = State.RUNNING
    return _joined(_Runs(runs.start, runs.length, role), np.zeros(role.size, bool))


def _joined(runs: _Runs, drop: np.ndarray) -> _Runs:
    """``runs`` with each ``drop`` run given to the run before it, and runs of one state in a
    row made one (their lengths summed)."""
    drop = drop.copy()
    drop[0] = False  # the first run has none before it
    index = np.arange(runs.role.size)
    role = runs.role[np.maximum.accumulate(np.where(drop, 0, index))]
    new = np.append(True, role[1:] != role[:-1])
    length = np.bincount(np.cumsum(new) - 1, runs.length).astype(np.int64)
    return _Runs(runs.start[new], length, role[new])


def _level_of(role: np.ndarray, high: float, idle: float, low: float) -> np.ndarray:
    out = np.full(role.size, high)
    out[role == State.FAILED_IDLE] = idle
    out[np.isin(role, (State.CHECKPOINT, State.STALLED, State.LOADING))] = low
    return out


def _boundaries(
    times: np.ndarray,
    x: np.ndarray,
    runs: _Runs,
    response: StepResponse,
    high: float,
    idle: float,
    low: float,
    sigma: float,
) -> np.ndarray:
    """Raw time of each boundary between runs: where the sensor's view crosses the midpoint of
    the levels held either side (measured just outside the transition), less the chain's delay.
    Two passes: the first places the windows the second measures the local levels in."""
    j = runs.start[1:]
    if j.size == 0:
        return np.empty(0)
    period = times[1] - times[0]
    level = _level_of(runs.role, high, idle, low)
    before, after = level[:-1], level[1:]
    w = response.window
    edge = times[j] - response.delay
    run_end = times[np.minimum(runs.start + runs.length, times.size - 1)]
    run_begin = times[runs.start]
    into_ramp = runs.role[1:] == State.RAMP
    c = np.concatenate(([0.0], np.cumsum(x)))
    quarter = runs.length // 4
    middle = (c[runs.start + runs.length - quarter] - c[runs.start + quarter]) / np.maximum(
        runs.length - 2 * quarter, 1
    )
    held_before = np.where(np.isin(runs.role[:-1], HELD), middle[:-1], before)
    for _ in range(2):
        a = _window_median(times, x, edge - 0.5 * w, edge - period, run_begin[:-1], before)
        b = _window_median(
            times, x, edge + w + period, edge + 1.5 * w + period, None, after, run_end[1:]
        )
        # a ramp has no level near its middle: it rises from the level held before it (the
        # middle half of that run) to the running one
        a, b = np.where(into_ramp, held_before, a), np.where(into_ramp, after, b)
        crossing = _crossing(times, x, j, 0.5 * (a + b), np.sign(b - a), w)
        ramps = np.flatnonzero(into_ramp)
        crossing[ramps] = _rise_crossing(times, x, runs, ramps, 0.5 * (a + b)[ramps])
        edge = crossing - response.delay
    held = np.isin(runs.role, HELD)
    return _kinks(times, x, crossing, a, b, held[:-1] & ~into_ramp, held[1:], sigma, response, edge)


def _kinks(
    times: np.ndarray,
    x: np.ndarray,
    crossing: np.ndarray,
    a: np.ndarray,
    b: np.ndarray,
    from_held: np.ndarray,
    to_held: np.ndarray,
    sigma: float,
    response: StepResponse,
    fallback: np.ndarray,
) -> np.ndarray:
    """Boundaries [s] found where the sensor's view leaves or reaches a held level.

    Through an averaging window the view leaves a held level at the raw boundary itself and
    reaches the next held level when the window has filled (``response.full`` later): both
    instants are sharp whatever the signal on the other side does, where the midpoint crossing
    shifts with it. Each is the intercept with the held level of a line through the transition's
    samples within a third of the level change from it (at least three, above the noise, on a
    change of twenty times the noise); the midpoint crossing less the delay where not.
    """
    period = times[1] - times[0]
    n = int(np.ceil(response.full / period)) + 2
    offsets = np.arange(-n, n + 1)
    i0 = np.searchsorted(times, crossing)
    idx = np.clip(i0[:, None] + offsets[None, :], 0, x.size - 1)
    t, y = times[idx], x[idx]
    change = np.where(b - a == 0, 1.0, b - a)[:, None]
    u = (y - a[:, None]) / change  # 0 at the level before, 1 at the level after
    floor = np.clip(3.0 * sigma / np.abs(change), 0.02, 0.2)  # off the level, above its noise
    c = crossing[:, None]
    sharp = (np.abs(b - a) > 20.0 * sigma)[:, None]  # else the noise bends the line
    leave = (
        sharp & from_held[:, None] & (t < c) & (t >= c - response.full) & (u > floor) & (u < 1 / 3)
    )
    reach = (
        sharp
        & to_held[:, None]
        & (t > c)
        & (t <= c + response.full)
        & (u < 1 - floor)
        & (u > 2 / 3)
    )
    t_leave = _intercept(t, u, leave, 0.0)
    t_reach = _intercept(t, u, reach, 1.0) - response.full
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # neither side held: the fallback
        both = np.nanmean(np.stack((t_leave, t_reach)), axis=0)
    return np.where(np.isfinite(both), both, fallback)


def _intercept(t: np.ndarray, u: np.ndarray, use: np.ndarray, at: float) -> np.ndarray:
    """Time where the line fitted (least squares) through the ``use`` samples of each row
    reaches ``u = at``; NaN for a row with fewer than three."""
    n = use.sum(axis=1)
    su, st = np.where(use, u, 0).sum(axis=1), np.where(use, t, 0).sum(axis=1)
    suu = np.where(use, u * u, 0).sum(axis=1)
    stu = np.where(use, t * u, 0).sum(axis=1)
    den = n * suu - su * su
    ok = (n >= 3) & (np.abs(den) > 1e-12)
    slope = np.where(ok, (n * stu - su * st) / np.where(ok, den, 1.0), np.nan)
    with np.errstate(all="ignore"):
        return np.where(ok, st / n + slope * (at - su / n), np.nan)


def _rise_crossing(
    times: np.ndarray, x: np.ndarray, runs: _Runs, ramps: np.ndarray, mid: np.ndarray
) -> np.ndarray:
    """Time [s] each rise first reaches ``mid``, searched from the start of the held run before
    it to the end of its own (a ramp may be long, its middle far from where the band changes);
    linearly between samples."""
    out = np.empty(ramps.size)
    for k, r in enumerate(ramps):  # one per restart
        lo, hi = runs.start[r], runs.start[r + 1] + runs.length[r + 1]
        i = lo + int(np.argmax(x[lo:hi] >= mid[k]))
        i = max(i, 1)
        frac = (mid[k] - x[i - 1]) / (x[i] - x[i - 1]) if x[i] != x[i - 1] else 1.0
        out[k] = times[i - 1] + float(np.clip(frac, 0.0, 1.0)) * (times[i] - times[i - 1])
    return out


def _window_median(
    times: np.ndarray,
    x: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    floor: np.ndarray | None,
    fallback: np.ndarray,
    ceiling: np.ndarray | None = None,
) -> np.ndarray:
    """Median of ``x`` over ``[lo, hi]`` of each boundary, kept inside its run; the run's level
    where the window holds no sample."""
    lo = lo if floor is None else np.maximum(lo, floor)
    hi = hi if ceiling is None else np.minimum(hi, ceiling)
    i0 = np.searchsorted(times, lo)
    i1 = np.searchsorted(times, hi, side="right")
    width = int(np.max(i1 - i0, initial=0))
    if width <= 0:
        return fallback.astype(float)
    idx = i0[:, None] + np.arange(width)[None, :]
    take = x[np.minimum(idx, x.size - 1)]
    take = np.where(idx < i1[:, None], take, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a window with no sample
        med = np.nanmedian(take, axis=1)
    return np.where(np.isfinite(med), med, fallback)


def _crossing(
    times: np.ndarray, x: np.ndarray, j: np.ndarray, mid: np.ndarray, sign: np.ndarray, w: float
) -> np.ndarray:
    """Time [s] where ``x`` crosses ``mid`` in direction ``sign`` nearest sample ``j`` (within
    a window either side), linearly between samples."""
    period = times[1] - times[0]
    n = int(np.ceil(w / period)) + 3
    offsets = np.arange(-n, n)
    idx = np.clip(j[:, None] + offsets[None, :], 0, x.size - 2)
    d = (x[idx] - mid[:, None]) * np.where(sign == 0, 1.0, sign)[:, None]
    d1 = (x[idx + 1] - mid[:, None]) * np.where(sign == 0, 1.0, sign)[:, None]
    cross = (d < 0) & (d1 >= 0)
    dist = np.where(cross, np.abs(offsets)[None, :], 10 * n)
    k = np.argmin(dist, axis=1)
    found = cross[np.arange(j.size), k]
    i = idx[np.arange(j.size), k]
    a, b = d[np.arange(j.size), k], d1[np.arange(j.size), k]
    frac = np.where(found, -a / np.where(b - a == 0, 1.0, b - a), 0.0)
    return np.where(found, times[i] + frac * period, times[j] - 0.5 * period)


# --- the running state's shape ----------------------------------------------------------------


def _running_samples(
    times: np.ndarray, x: np.ndarray, line: Timeline, response: StepResponse
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Samples to fold, away from the chain's memory of the state before: those of the running
    segments that begin at a step boundary (after a checkpoint), whose phases line up; or, with
    none, of the longest running segment alone. Times [s], values and each one's segment start
    [s] (the phase origin), the longest segments first up to :data:`FOLD_SAMPLES`."""
    ends = np.append(line.start[1:], line.duration)
    prev = np.concatenate(([-1], line.state[:-1]))
    running = line.state == State.RUNNING
    use = running & (prev == State.CHECKPOINT)
    seg = np.clip(np.searchsorted(line.start, times, side="right") - 1, 0, line.start.size - 1)
    settled = (times >= line.start[seg] + response.settle) & (times < ends[seg]) & np.isfinite(x)
    if not np.any(use[seg] & settled) and running.any():
        use = np.arange(line.state.size) == np.argmax(np.where(running, ends - line.start, -1))
    ok = use[seg] & settled
    order = np.argsort(-(ends - line.start)[seg[ok]], kind="stable")[:FOLD_SAMPLES]
    chosen = np.sort(np.flatnonzero(ok)[order])
    return times[chosen], x[chosen], line.start[seg[chosen]]


def _coarse_period(t: np.ndarray, x: np.ndarray, origin: np.ndarray, period: float) -> float:
    """The strongest period of the running swing: the peak of the glued segments' spectrum."""
    y = x - x.mean()
    n = int(2 ** np.ceil(np.log2(max(4 * y.size, 256))))
    power = np.abs(np.fft.rfft(y, n)) ** 2
    f = np.fft.rfftfreq(n, period)
    longest = float(np.max(np.bincount(np.unique(origin, return_inverse=True)[1]))) * period
    power[f < 3.0 / max(longest, period)] = 0.0
    return float(1.0 / f[np.argmax(power)]) if power.max() > 0 else np.nan


def _fold(
    t: np.ndarray, x: np.ndarray, origin: np.ndarray, periods: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Folded profiles at each candidate period: bin means ``(n_periods, FOLD_BINS)``, counts,
    and the between-bin variance (epoch folding's statistic); a few periods at a time, so
    that the temporaries stay within ``FOLD_CHUNK × FOLD_SAMPLES``."""
    means, counts = [], []
    for lo in range(0, periods.size, FOLD_CHUNK):  # chunks of candidates, not samples
        chunk = periods[lo : lo + FOLD_CHUNK]
        phase = ((t - origin)[None, :] / chunk[:, None]) % 1.0
        bins = np.minimum((phase * FOLD_BINS).astype(np.int64), FOLD_BINS - 1)
        flat = (bins + FOLD_BINS * np.arange(chunk.size)[:, None]).ravel()
        size = chunk.size * FOLD_BINS
        n = np.bincount(flat, minlength=size).reshape(chunk.size, FOLD_BINS)
        total = np.bincount(flat, np.tile(x, chunk.size), minlength=size)
        with np.errstate(all="ignore"):
            means.append(total.reshape(chunk.size, FOLD_BINS) / n)
        counts.append(n)
    means, counts = np.concatenate(means), np.concatenate(counts)
    between = np.nansum(counts * (means - x.mean()) ** 2, axis=1)
    return means, counts, between


def _best_period(t: np.ndarray, x: np.ndarray, origin: np.ndarray, coarse: float) -> float:
    """The step time: the coarse period (or a multiple, if its harmonic was the strongest)
    refined by epoch folding over ±8 % in 0.05 % steps."""
    multiples = coarse * np.arange(1, 4)
    _, _, between = _fold(t, x, origin, multiples)
    base = (
        multiples[np.argmax(between > 1.25 * between[0])]
        if between.max() > 1.25 * between[0]
        else coarse
    )
    candidates = base * np.linspace(0.92, 1.08, 321)
    _, _, between = _fold(t, x, origin, candidates)
    k = int(np.argmax(between))
    if 0 < k < candidates.size - 1:  # parabola through the peak
        y0, y1, y2 = between[k - 1 : k + 2]
        shift = 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2) if (y0 - 2 * y1 + y2) != 0 else 0.0
        return float(candidates[k] + shift * (candidates[1] - candidates[0]))
    return float(candidates[k])


def _interior(t: np.ndarray, origin: np.ndarray, step: float) -> np.ndarray:
    """Samples a whole ``step`` [s] or more from both ends of their running spell (the spells'
    first and last samples given by ``origin``, each spell's start [s])."""
    spell, where = np.unique(origin, return_inverse=True)
    last = np.full(spell.size, -np.inf)
    np.maximum.at(last, where, t)
    return (t - origin >= step) & (t <= last[where] - step)


def _stands_out(shape: dict[str, float], counts: np.ndarray, noise: float) -> bool:
    """Whether a folded two-level step fits (R² over 0.5) and its swing stands out of the
    noise of its emptiest phase bin's mean (six standard errors)."""
    return bool(
        shape["r2"] > 0.5 and shape["seen_swing"] > 6.0 * noise / np.sqrt(max(counts.min(), 1))
    )


def _stands_out_inside(
    t: np.ndarray,
    y: np.ndarray,
    origin: np.ndarray,
    step: float,
    response: StepResponse,
    noise: float,
) -> bool:
    """Whether the samples a step from their spells' ends (:func:`_interior`) are enough to
    fold and show the step too, out of the ``noise`` [W]: a swing made of the spells' own
    rise and fall does not."""
    if t.size < 4 * FOLD_BINS:
        return False
    profile, counts, _ = _fold(t, y, origin, np.array([step]))
    return _stands_out(_square_fit(profile[0], counts[0], step, response), counts[0], noise)


def _square_fit(
    profile: np.ndarray, counts: np.ndarray, step: float, response: StepResponse
) -> dict[str, float]:
    """The two-level iteration (compute share, edge duration, compute and communication levels)
    whose view through the chain best matches a folded profile, by least squares.

    For each share and edge duration on a grid, the model's own waveform
    (:func:`~powermodel.models.workload.iteration_waveform`, levels 1 and 0) is convolved
    (circularly) with the chain's impulse response; the levels then enter linearly.
    """
    n = FOLD_BINS * 16
    cell = step / n
    kernel = response.kernel(cell, max(n, int(np.ceil(response.settle / cell)) + 1))
    wrapped = np.bincount(np.arange(kernel.size) % n, kernel, minlength=n)
    spectrum = np.fft.rfft(wrapped)
    shapes, grid = [], []
    for c in DUTY:  # a few hundred candidate shapes, each a vectorised waveform
        for e in EDGES[EDGES < 0.9 * min(c, 1.0 - c) * step]:
            rate = 1.0 / e if e > 0 else 1e9
            shapes.append(
                workload.iteration_waveform(
                    np.array([c, 1 - c]), np.array([1.0, 0.0]), step, rate, n
                )
            )
            grid.append((c, e))
    best = _least_squares(np.array(shapes), spectrum, profile, counts)
    c, e = grid[best["k"]]
    finer = c + np.linspace(-0.01, 0.01, 21)  # the grid's neighbours, a tenth as far apart
    finer = finer[(finer > 0) & (finer < 1) & (e < 0.9 * np.minimum(finer, 1 - finer) * step)]
    rate = 1.0 / e if e > 0 else 1e9
    shapes = [
        workload.iteration_waveform(np.array([f, 1 - f]), np.array([1.0, 0.0]), step, rate, n)
        for f in finer
    ]
    fine = _least_squares(np.array(shapes), spectrum, profile, counts)
    return {**fine, "share": float(finer[fine["k"]]), "edge": float(e)}


def _least_squares(
    shapes: np.ndarray, spectrum: np.ndarray, profile: np.ndarray, counts: np.ndarray
) -> dict[str, float]:
    """The candidate shape (levels 1 and 0, one per row) whose view through the chain (its
    ``spectrum``) best fits the folded profile, with the two levels by weighted least squares."""
    n = shapes.shape[1]
    seen = np.fft.irfft(np.fft.rfft(shapes, axis=1) * spectrum, n=n, axis=1)
    u = seen.reshape(shapes.shape[0], FOLD_BINS, -1).mean(axis=2)
    # every circular shift of each shape: a segment's phase origin may be off (or unknown)
    roll = (np.arange(FOLD_BINS)[None, :] - np.arange(FOLD_BINS)[:, None]) % FOLD_BINS
    u = u[:, roll]  # (candidate, shift, bin)
    w = counts.astype(float)
    y = np.where(counts > 0, profile, 0.0)
    sw = w.sum()
    ubar = (u * w).sum(axis=2) / sw
    ybar = (y * w).sum() / sw
    cov = ((u - ubar[..., None]) * (y - ybar) * w).sum(axis=2)
    var = ((u - ubar[..., None]) ** 2 * w).sum(axis=2)
    slope = np.where(var > 0, cov / np.where(var > 0, var, 1.0), 0.0)
    sst = float(((y - ybar) ** 2 * w).sum())
    sse = np.where(slope > 0, sst - slope * cov, np.inf)  # compute above communication
    k, r = np.unravel_index(int(np.argmin(sse)), sse.shape)
    low = ybar - slope[k, r] * ubar[k, r]
    return {
        "k": int(k),
        "high": float(low + slope[k, r]),
        "low": float(low),
        "r2": 1.0 - float(sse[k, r]) / sst if sst > 0 else 0.0,
        "seen_swing": float(slope[k, r] * (u[k, r].max() - u[k, r].min())),
    }


def _step_spread(
    t: np.ndarray,
    x: np.ndarray,
    origin: np.ndarray,
    step: float,
    mid: float,
    sigma: float,
    slope: float,
) -> tuple[float, float]:
    """Step-to-step coefficients of variation of the step's length and of its mean level.

    Each step runs from one rising crossing of the swing's midpoint to the next within a running
    segment (a crossing within half a step of the one before is the noise's, and dropped). The
    spreads are those of the steps' lengths and mean levels less what the noise alone gives: a
    timing jitter ``σ / slope`` at each crossing, ``σ² / n`` on a mean of ``n`` samples.
    """
    y = x - mid
    up = np.flatnonzero((y[:-1] < 0) & (y[1:] >= 0) & (origin[:-1] == origin[1:]))
    when = t[up] + -y[up] / (y[up + 1] - y[up]) * (t[up + 1] - t[up])
    # the first crossing of each cluster is kept (a trace may cross none: no mask of one)
    first = np.ones(up.size, bool)
    first[1:] = (np.diff(when) > 0.5 * step) | (origin[up][1:] != origin[up][:-1])
    up, when = up[first], when[first]
    same = origin[up][1:] == origin[up][:-1]
    gap = np.diff(when)
    one = same & (gap < 1.5 * step)  # a whole step, none missed between
    if np.count_nonzero(one) < 5:
        return np.nan, np.nan
    gap = gap[one]
    jitter = 2.0 * (sigma / slope) ** 2 if slope > 0 else 0.0
    length_cv = np.sqrt(max(np.var(gap) - jitter, 0.0)) / np.mean(gap)
    c = np.concatenate(([0.0], np.cumsum(x)))
    n = np.diff(up)[one]
    level = (c[up[1:] + 1] - c[up[:-1] + 1])[one] / n
    level_cv = np.sqrt(max(np.var(level) - np.mean(sigma**2 / n), 0.0)) / np.mean(level)
    return float(length_cv), float(level_cv)


# --- start-up ramps -----------------------------------------------------------------------


def _ramp_length(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    response: StepResponse,
    running: float,
    levels: np.ndarray,
) -> tuple[float, float]:
    """Length [s] of the start-up ramp and the shift [s] of its middle from the midpoint
    crossings (the RAMP segments' starts): the linear ramp, from the level before it to the
    running mean, whose view through the chain best fits every rise by least squares. The
    length over a grid refined by a parabola, then the shift, then the length again."""
    ramp = np.flatnonzero(line.state == State.RAMP)
    if ramp.size == 0 or not np.isfinite(running):
        return np.nan, 0.0
    ends = np.append(line.start[1:], line.duration)
    middle = line.start[ramp]
    before = levels[np.maximum(ramp - 1, 0)]
    span = min(float(np.max(ends[ramp] - middle)), 0.5 * RAMPS.max()) + response.full
    fine = max(min(response.dt * 10.0, 0.05), span / 20_000.0)  # a bounded fine grid
    tau = np.arange(-span - 2.0 * response.full, span + response.full, fine)  # from the middle
    kernel = response.kernel(fine)
    lo = np.searchsorted(times, middle - span)
    hi = np.searchsorted(times, middle + np.minimum(ends[ramp] - middle, span))
    k = np.repeat(np.arange(ramp.size), hi - lo)
    i = np.arange(k.size) - np.repeat(np.cumsum(hi - lo) - (hi - lo), hi - lo) + lo[k]
    every = max(1, k.size // RAMP_SAMPLES)  # samples compared, at most about RAMP_SAMPLES
    k, i = k[::every], i[::every]
    keep = np.isfinite(x[i])
    k, i = k[keep], i[keep]
    rel = times[i] - middle[k]

    def misfit(lengths: np.ndarray, shifts: np.ndarray) -> np.ndarray:
        shape = np.clip(
            (tau[None, :] - shifts[:, None]) / np.maximum(lengths, 1e-9)[:, None] + 0.5, 0.0, 1.0
        )
        padded = np.concatenate((np.zeros((lengths.size, kernel.size)), shape), axis=1)
        seen = fftconvolve(padded, kernel[None, :], axes=1)[:, kernel.size : kernel.size + tau.size]
        pos = (rel - tau[0]) / fine
        cell = np.clip(pos.astype(np.int64), 0, tau.size - 2)
        frac = pos - cell
        unit = seen[:, cell] * (1.0 - frac) + seen[:, cell + 1] * frac
        return (((before[k] + (running - before[k]) * unit) - x[i]) ** 2).sum(axis=1)

    def best_length(shift: float) -> float:
        errors = misfit(RAMPS, np.full(RAMPS.size, shift))
        j = int(np.argmin(errors))
        if 0 < j < RAMPS.size - 1 and RAMPS[j - 1] > 0:  # parabola in log length
            y0, y1, y2 = errors[j - 1 : j + 2]
            curve = y0 - 2.0 * y1 + y2
            step = 0.5 * (y0 - y2) / curve if curve > 0 else 0.0
            return float(np.exp(np.log(RAMPS[j]) + step * np.log(RAMPS[j + 1] / RAMPS[j])))
        return float(RAMPS[j])

    length = best_length(0.0)
    shifts = np.linspace(-1.0, 1.0, 81) * max(response.window, 0.1 * length)
    shift = float(shifts[np.argmin(misfit(np.full(shifts.size, length), shifts))])
    return best_length(shift), shift


def _with_ramps(line: Timeline, ramp: float, shift: float) -> Timeline:
    """The timeline with each rise as a ramp of length ``ramp`` [s] about its middle (the RAMP
    segment's start moved by ``shift`` [s]), then running: the idle before it ends where the
    ramp starts."""
    at = np.flatnonzero(line.state == State.RAMP)
    if at.size == 0 or not np.isfinite(ramp):
        return line
    start = line.start.copy()
    start[at] += shift
    if ramp <= 0.0:  # a step into running: no ramp segment of no length
        state = np.where(line.state == State.RAMP, State.RUNNING, line.state).astype(
            line.state.dtype
        )
        return Timeline(start=start, state=state, duration=line.duration)
    ends = np.append(start[1:], line.duration)
    lo = np.where(at > 0, start[np.maximum(at - 1, 0)], 0.0)  # the segment before the rise
    start[at] = np.maximum(start[at] - 0.5 * ramp, lo)
    run = np.minimum(line.start[at] + shift + 0.5 * ramp, ends[at])
    starts = np.insert(start, at + 1, run)
    states = np.insert(line.state, at + 1, State.RUNNING)
    return Timeline(start=starts, state=states, duration=line.duration)


# --- the whole fit ------------------------------------------------------------------------


def fit(
    data: pd.DataFrame,
    meta: dict,
    sensor: str | sensors.Sensor | None = None,
    preset: str | Path | Scenario = REFERENCE,
    period: float | None = None,
    gpus_per_node: int | None = None,
    gpu: str | None = None,
) -> Fit:
    """Fit a trace read by :func:`powermodel.iotools.telemetry.read_telemetry`.

    Parameters
    ----------
    data, meta
        The tidy trace and its description.
    sensor
        The chain the trace was recorded through (a key of
        :data:`powermodel.models.sensors.CHAINS` or a
        :class:`~powermodel.models.sensors.Sensor`); by default the one its power field implies
        (:func:`chain_of`).
    preset
        The scenario the fit extends: its values stay where the trace does not resolve them.
    period
        Sampling period [s]; the trace's median by default.
    gpus_per_node
        GPUs behind each channel of a meter trace.
    gpu
        The GPU catalogue entry the trace was recorded on (``--gpu``); by default the preset's,
        or, for a GPU trace whose levels lie outside its idle to TDP, one built from the trace
        (:func:`choose_gpu`).
    """
    scenario = preset if isinstance(preset, Scenario) else load_scenario(preset)
    scenario = with_gpu(scenario, gpu)
    times, cells, n_gpus, start = per_gpu_signal(data, meta, scenario, period, gpus_per_node)
    step = float(times[1] - times[0])
    chain = chain_of(meta, step, scenario.gpu.name) if sensor is None else sensor
    # each sample as stamped, for the alias test (fit._aliased): s from the grid's start
    stamps = (
        (data["time"].to_numpy(dtype="datetime64[ns]") - start) / np.timedelta64(1, "s"),
        np.unique(data["channel"].to_numpy(dtype=str), return_inverse=True)[1],
        data["power"].to_numpy(dtype=float),
    )
    return fit_cells(
        times,
        cells,
        n_gpus,
        {**meta, "start": start, "stamps": stamps},
        chain,
        scenario,
        named=gpu is not None,
    )


def with_gpu(scenario: Scenario, gpu: str | None) -> Scenario:
    """``scenario`` on the catalogue GPU ``gpu`` (``cluster.gpu``; unchanged for None), refused
    in one line naming the catalogue when it has no such entry."""
    if gpu is None or gpu == scenario.cluster.gpu:
        return scenario
    entries = gpu_catalogue()
    if gpu not in entries:
        close = difflib.get_close_matches(gpu, entries, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise PowerModelError(
            f"--gpu {gpu!r}: no such GPU in the catalogue{hint}; it has {', '.join(entries)}. "
            "Leave --gpu out to build the GPU from the trace"
        )
    # the trace's node and plant stay: only the board is another (a swap would bring the
    # catalogue GPU's node, presets/gpus.toml)
    cl = scenario.cluster
    kept = {f"cluster.{key}": _node_value(cl, key) for key in NODE_KEYS}
    return load_scenario(
        scenario, {"cluster.gpu": gpu, **kept, "cooling.plant": scenario.cooling.plant}
    )


def _node_value(cluster: Any, key: str) -> Any:
    """A cluster's value at a dotted node key (``fans.power``)."""
    for part in key.split("."):
        cluster = getattr(cluster, part)
    return cluster


def chain_of(meta: dict, period: float, gpu: str | None = None) -> sensors.Sensor:
    """The sensor chain a trace's power field went through: NVML's 1-s average for
    ``power.draw`` (and DCGM's power field, which reads it) [P, nvidia_nvml]; an instantaneous
    sample at each poll for nvidia-smi's ``power.draw.instant``, for ``power.draw`` of a
    ``gpu`` (catalogue name) on GA100, which NVML reports instantaneously [P, nvidia_nvml], and
    for AMD's current socket power (rocm-smi's ``Current Socket Graphics Package Power``,
    amd-smi's ``socket_power``, ``power_usage`` or ``current_socket_power``: MI300 and later
    report the current socket power, "also known as instant power" [P, rocm_smi; P, amd_smi]);
    a 1-s average [A] for AMD's average socket power (MI200 and earlier, whose window AMD does
    not state) and for a meter, whose averaging its file does not say (give ``sensor`` if you
    know it)."""
    ga100 = meta.get("kind") != "meter" and str(gpu or "").upper().startswith(GA100)
    field = str(meta.get("power_field", ""))
    amd = meta.get("format") in ("rocm-smi", "amd-smi") and field.lower().startswith(AMD_CURRENT)
    if ga100 or amd or "instant" in field:
        return sensors.Sensor(
            "instant", "instantaneous sample", "gpu_power", window=0.0, period=period
        )
    return sensors.CHAINS["nvml"]


def fit_cells(
    times: np.ndarray,
    cells: np.ndarray,
    n_gpus: int,
    meta: dict,
    sensor: str | sensors.Sensor,
    scenario: Scenario,
    named: bool = False,
) -> Fit:
    """Fit a trace already on a uniform grid: ``cells`` (channel × time) of per-GPU power [W]
    at ``times`` [s from the first sample] (NaN where a channel reported nothing); a meter's
    (``meta["kind"] == "meter"``) inverted with the running rest of node, which each sample
    trades for its detected state's (:func:`rest_share`). ``named``: the scenario's GPU was
    given (``--gpu``) and is kept whatever the trace draws (else :func:`choose_gpu`)."""
    step = float(times[1] - times[0])
    sensor = sensors.lookup(sensor)
    response = step_response(sensor, step)
    idle_gpus: tuple[str, ...] = ()
    if meta.get("kind", "gpu") != "meter":
        cells, idle_gpus = _outside_the_job(cells, meta)
        n_gpus = cells.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a time no channel reported
        power = np.nanmean(cells, axis=0)
        median = np.nanmedian(cells, axis=0)
    good = np.isfinite(power)
    if good.sum() < MIN_SAMPLES:
        raise DataFileError(f"{meta.get('source', 'the trace')}: too few samples with power")
    _refuse_gaps(times[good], step, meta)
    median = np.interp(times, times[good], median[good])
    filled = np.interp(times, times[good], power[good])
    kind = str(meta.get("kind", "gpu"))
    source = str(meta.get("source", "the trace"))
    line, found = detect(times, median, response)
    line, repaired = well_formed(line)
    rest = rest_power(scenario.cluster) if kind == "meter" else None
    line, no_idle = _idle_seen(times, median, line, scenario, response, rest, named)
    inferred: dict[str, Quantity] = {}
    node: tuple[str, ...] = ()
    if rest is not None:  # each state's rest of node, now that the states are known
        rest, inferred, node = _state_rest(times, median, line, scenario, response, source)
        seg = np.clip(np.searchsorted(line.start, times, side="right") - 1, 0, line.start.size - 1)
        shift = rest_share(scenario, line.state[seg], rest)
        power, filled = power + shift, filled + shift
    quantities, line, more = _quantities(
        times, filled, line, found, response, scenario, power, meta.get("stamps")
    )
    if no_idle and not quantities["idle level"].resolved:  # say why none is seen
        quantities["idle level"] = Quantity("idle level", None, "W", False, no_idle, "gpu.idle")
    quantities.update(inferred)
    gpu, said = choose_gpu(times, filled, quantities, response, scenario, kind, named, source)
    return Fit(
        source=str(meta.get("source", "")),
        sensor=sensor,
        kind=kind,
        start=np.datetime64(pd.Timestamp(meta.get("start", 0)), "ns"),
        period=step,
        n_gpus=n_gpus,
        times=times,
        power=power,
        timeline=line,
        quantities=quantities,
        response=response,
        warnings=(
            *meta.get("warnings", ()),
            *idle_gpus,
            *dict.fromkeys(repaired + more),
            *((no_idle,) if no_idle else ()),
            *node,
            *said,
        ),
        gpu=gpu,
    )


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


def _sustained(
    times: np.ndarray, x: np.ndarray, response: StepResponse
) -> tuple[float, float, float]:
    """The highest and lowest levels a signal sustains [W]: the :data:`SUSTAIN_QUANTILE` and
    its complement of its rolling mean over :data:`SUSTAIN` (two sensor windows at least), and
    that window [s]."""
    period = float(times[1] - times[0])
    window = max(SUSTAIN, 2.0 * response.window, period)
    n = min(max(1, round(window / period)), x.size)
    c = np.concatenate(([0.0], np.cumsum(x)))
    means = (c[n:] - c[:-n]) / n
    top, bottom = np.quantile(means, (SUSTAIN_QUANTILE, 1.0 - SUSTAIN_QUANTILE))
    return float(top), float(bottom), n * period


def choose_gpu(
    times: np.ndarray,
    x: np.ndarray,
    q: dict[str, Quantity],
    response: StepResponse,
    scenario: Scenario,
    kind: str,
    named: bool,
    source: str,
) -> tuple[GpuChoice, list[str]]:
    """The GPU the fitted scenario is written for, and what to tell the user of it (the
    quantity ``GPU TDP``, added to ``q``, says which and why; resolved only when built).

    The scenario's GPU is kept where it was given (``named``), for a meter (whose per-GPU level
    comes through the preset's node), and for a GPU trace whose levels lie within the GPU's
    range: its lowest held level (the idle level, else the lowest sustained one) at least
    :data:`KEEP_IDLE` of the GPU's idle and its highest sustained level (:func:`_sustained`) at
    most :data:`KEEP_TDP` of its TDP. Otherwise the GPU is built from the trace: its TDP the
    highest sustained level (or the compute level, if higher), its idle and stalled levels the
    fitted ones, and what a trace cannot show (lowest cap, leakage, thermal resistance) scaled
    from the scenario's GPU by TDP.
    """
    gpu = scenario.gpu
    top, bottom, window = _sustained(times, x, response)
    idle_q = q["idle level"]
    lowest = idle_q.value if idle_q.resolved else bottom
    span = (
        f"{lowest:,.0f} W ({'idle' if idle_q.resolved else 'lowest sustained'}) to {top:,.0f} W "
        f"(highest sustained: the {SUSTAIN_QUANTILE:.0%} quantile of the "
        f"{format_duration(round(window, 3))} rolling mean, which a spike does not reach)"
    )
    own = f"the {gpu.name}'s idle {gpu.idle:g} W and TDP {gpu.tdp:g} W"
    within = lowest >= KEEP_IDLE * gpu.idle and top <= KEEP_TDP * gpu.tdp
    if named or kind == "meter" or within:
        if named:
            how = f"--gpu {gpu.name}: the catalogue's, {own}"
        elif kind == "meter":
            how = (
                f"the preset's {gpu.name} ({own}): a meter's per-GPU level comes through the "
                "preset's node, so its GPU is kept (--gpu names another)"
            )
        else:
            how = (
                f"the preset's {gpu.name} ({own}) is kept: the trace's levels, {span}, lie "
                f"within {KEEP_IDLE:g} x its idle to {KEEP_TDP:g} x its TDP"
            )
        # the catalogue's TDP, not the trace's: reported, not resolved
        q["GPU TDP"] = Quantity("GPU TDP", gpu.tdp, "W", False, how)
        return GpuChoice(gpu.name, {}, named, how), []
    if top > MAX_BOARD:
        raise DataFileError(
            f"{source}: the highest sustained level is {top:,.0f} W per GPU, more than the "
            f"{MAX_BOARD:,.0f} W any board draws: check the trace's power unit (and, for a "
            "node's power logged as a GPU's, read it as a meter with --gpus-per-node)"
        )
    high = q["compute level"].value if q["compute level"].resolved else top
    mean = q["running mean"].value if q["running mean"].resolved else top
    tdp = float(math.ceil(max(top, high, mean) * 10.0) / 10.0)
    ratio = tdp / gpu.tdp
    if idle_q.resolved:
        idle, idle_note = idle_q.value, "median idle level"
    else:
        idle = min(bottom, gpu.idle * ratio)
        idle_note = f"the lower of the lowest sustained level and the {gpu.name}'s idle share"
    idle = round(min(max(idle, 1.0), tdp), 1)
    stall_q = next(
        (q[n] for n in ("checkpoint stall level", "teardown level") if q[n].resolved), None
    )
    stalled = stall_q.value if stall_q is not None else gpu.stalled * ratio
    stall_note = "median stalled level" if stall_q else f"the {gpu.name}'s stalled share of TDP"
    scaled = f"the {gpu.name}'s, scaled by TDP (an assumption: the trace does not show it)"
    nearest = [
        name
        for name, entry in sorted(gpu_catalogue().items(), key=lambda e: e[1]["tdp"])
        if lowest >= KEEP_IDLE * entry["idle"] and top <= KEEP_TDP * entry["tdp"]
    ]
    hint = (
        f"; the catalogue's {nearest[0]} spans these levels: if it is that GPU, --gpu "
        f"{nearest[0]} uses it"
        if nearest
        else ""
    )
    how = (
        f"built from the trace: its levels, {span}, lie outside {own}; TDP the highest "
        f"sustained level{' (the compute level, higher)' if tdp > math.ceil(top * 10) / 10 else ''}"
        f", the rest {scaled}{hint}"
    )
    table: dict[str, tuple[object, str]] = {
        "tdp": (tdp, "highest sustained level (GPU built from the trace)"),
        "idle": (idle, idle_note),
        "stalled": (round(min(max(stalled, idle), tdp), 1), stall_note),
        "power_cap_min": (round(max(gpu.power_cap_min * ratio, 1.0), 1), scaled),
        "leakage_ref": (round(gpu.leakage_ref * ratio, 1), scaled),
        # the die rises as much at this TDP as the model's GPU at its own
        "thermal_resistance": (round(gpu.thermal_resistance / ratio, 5), scaled),
    }
    q["GPU TDP"] = Quantity("GPU TDP", tdp, "W", True, how, "gpu.tdp")
    said = (
        f"GPU built from the trace: idle {idle:g} W, TDP {tdp:g} W (highest sustained level); "
        f"its levels lie outside {own}{hint}"
    )
    return GpuChoice(gpu.name, table, False, how), [said]


def _refuse_gaps(reported: np.ndarray, step: float, meta: dict) -> None:
    """Refuse a span with no sample longer than :data:`MAX_GAP` and :data:`GAP_STEPS` steps
    between the times ``reported`` [s] where some channel reported."""
    gaps = np.diff(reported)
    i = int(np.argmax(gaps))
    if gaps[i] > max(MAX_GAP, GAP_STEPS * step):
        at = pd.Timestamp(np.datetime64(pd.Timestamp(meta.get("start", 0)), "ns"))
        begin = at + pd.Timedelta(seconds=float(reported[i]))
        raise DataFileError(
            f"{meta.get('source', 'the trace')}: no sample for {format_duration(round(gaps[i]))} "
            f"after {begin.isoformat()} ({int((gaps > max(MAX_GAP, GAP_STEPS * step)).sum())} "
            f"gap(s) over {format_duration(MAX_GAP)}): the fit would read a hole as a state; "
            "split the file at the gap and fit each part"
        )


def _settled_in(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    state: State,
    settle: float,
    later_half: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Which samples (at ``times`` [s], values ``x``) lie in ``state`` segments once the chain
    settled in them (``settle`` [s]; or only in their later half), NaN samples (no channel
    reported) none; and each sample's segment."""
    seg = np.clip(np.searchsorted(line.start, times, side="right") - 1, 0, line.start.size - 1)
    ends = np.append(line.start[1:], line.duration)
    begin = line.start + settle
    if later_half:
        begin = np.maximum(begin, 0.5 * (line.start + ends))
    inside = (line.state[seg] == state) & (times >= begin[seg]) & (times < ends[seg])
    return inside & np.isfinite(x), seg


def _interior_median(
    times: np.ndarray, x: np.ndarray, line: Timeline, state: State, settle: float
) -> tuple[float, int]:
    """Median of the samples of ``state`` segments once the chain has settled in them."""
    inside, _ = _settled_in(times, x, line, state, settle)
    return (float(np.median(x[inside])) if inside.any() else np.nan), int(inside.sum())


def _quantities(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    found: dict[str, float],
    response: StepResponse,
    scenario: Scenario,
    measured: np.ndarray,
    stamps: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
) -> tuple[dict[str, Quantity], Timeline, tuple[str, ...]]:
    """Every quantity the trace resolves, the timeline with the fitted ramps (made well formed)
    and the warnings of its repairs. ``x`` is the signal with its gaps interpolated, on which
    the ramps, folds and edges are fitted; the levels are of the ``measured`` samples alone
    (NaN where no channel reported): across a slow poll's gap the line drawn between two
    lines is no sample (issue 27: 2-s spells between checkpoints read 4 % low on it);
    ``stamps`` the samples as stamped (:func:`_aliased`)."""
    q: dict[str, Quantity] = {}
    settle = response.settle

    def add(name, value, unit, how, key=None, resolved=None):
        ok = value is not None and np.isfinite(value) if resolved is None else resolved
        q[name] = Quantity(name, float(value) if ok else None, unit, bool(ok), how, key)

    def held(state: State, what: str, key: str | None):
        level, n = _interior_median(times, measured, line, state, settle)
        how = f"median of {n:,} {what} samples once the sensor settled ({format_duration(settle)})"
        add(f"{what} level", level if n else None, "W", how if n else f"no {what} state seen", key)

    held(State.FAILED_IDLE, "idle", "gpu.idle")
    held(State.CHECKPOINT, "checkpoint stall", "gpu.stalled")
    held(State.STALLED, "teardown", None)
    held(State.LOADING, "start-up", None)
    # the rises are fitted to the mean of what they rise to: the running segments', or (a trace
    # that only rises into running) the later half of each rise's run
    mean, _ = _running_mean(times, measured, line, settle, State.RUNNING)
    if not np.isfinite(mean):
        mean, _ = _running_mean(times, measured, line, settle, State.RAMP, later_half=True)
    ramp, shift = _ramp_length(times, x, line, response, mean, _levels_per_segment(q, line, mean))
    add(
        "start-up ramp",
        ramp,
        "s",
        "linear ramp to the running mean whose view through the sensor best fits each rise"
        if np.isfinite(ramp)
        else "no rise from idle into running seen",
        "workload.startup_ramp",
    )
    line, repaired = well_formed(_with_ramps(line, ramp, shift))
    mean, n = _running_mean(times, measured, line, settle, State.RUNNING)
    how = f"mean of {n:,} running samples (an average keeps the mean exactly)"
    spells = line.lengths()[line.state == State.RUNNING]
    if spells.size and np.median(spells) < 2.0 * settle:
        # the sensor never settles in them: what it shows of each is the GPUs' level times
        # the spell over the window, held as long as the window less the spell
        how = (
            f"the sensor's view, not the GPUs' own level: the running spells (median "
            f"{format_duration(round(float(np.median(spells)), 3))}) are shorter than two of "
            f"its settling times ({format_duration(settle)}), so each reads lower and longer "
            f"than it was; their energy is kept: the {how}"
        )
    add("running mean", mean, "W", how)
    _running_shape(q, add, times, x, line, found, response, scenario, mean, stamps)
    sampled = times[np.isfinite(measured)]
    sharp = _sharp(line, sampled, found["period"], response.window)
    _timing(q, add, line, found["period"], sharp, settle)
    return q, line, repaired


def _running_mean(
    times: np.ndarray,
    x: np.ndarray,
    line: Timeline,
    settle: float,
    state: State,
    later_half: bool = False,
) -> tuple[float, int]:
    """Mean of the samples of ``state`` segments once the sensor settled in them (or only in
    their later half) and their count; NaN samples (no channel reported) are none."""
    inside, _ = _settled_in(times, x, line, state, settle, later_half)
    return (float(np.mean(x[inside])) if inside.any() else np.nan), int(inside.sum())


def _levels_per_segment(q: dict[str, Quantity], line: Timeline, running: float) -> np.ndarray:
    def v(name: str) -> float:
        return q[name].value if q[name].resolved else np.nan

    idle, stall, start = v("idle level"), v("checkpoint stall level"), v("start-up level")
    out = np.full(line.state.size, running)
    out[line.state == State.FAILED_IDLE] = idle
    out[line.state == State.LOADING] = start
    out[np.isin(line.state, (State.CHECKPOINT, State.STALLED))] = stall
    return out


def _too_few_to_fold(line: Timeline, n: int) -> str:
    """Why ``n`` running samples were too few to fold, naming the samples that were sought."""
    running = line.state == State.RUNNING
    if not running.any():
        return "no running state seen to fold"
    after = running & np.concatenate(([False], line.state[:-1] == State.CHECKPOINT))
    where = (
        "running after a checkpoint"
        if after.any()
        else "running in the longest running spell (no checkpoint seen)"
    )
    return f"{n:,} settled samples {where}; folding needs {4 * FOLD_BINS:,}"


def _running_shape(q, add, times, x, line, found, response, scenario, mean, stamps=None) -> None:
    """Step time, compute share, levels, edges and step spread of the running state;
    ``stamps`` the samples as stamped (:func:`_aliased`), the grid's when None. A sensor that
    samples instantly averages nothing: its hold between reports is no window, and a step of
    :data:`RESOLVE_WINDOWS` sampling periods is resolved (or aliased: :func:`_aliased`)."""
    w = 0.0 if response.instant else response.window
    t, y, origin = _running_samples(times, x, line, response)
    floor = RESOLVE_WINDOWS * max(w, found["period"])
    if t.size < 4 * FOLD_BINS:
        why = _too_few_to_fold(line, t.size)
        for name in ("step time", "compute share", "compute level", "communication level"):
            add(name, None, "s" if name == "step time" else "W", why, resolved=False)
        add("edge duration", None, "s", why, resolved=False)
        add("step-time spread", None, "1", why, resolved=False)
        add("step-level spread", None, "1", why, resolved=False)
        _unresolved_step(q, y, line, response, scenario, mean, found["period"], why)
        return
    coarse = _coarse_period(t, y, origin, found["period"])
    step = _best_period(t, y, origin, coarse) if np.isfinite(coarse) else np.nan
    if not np.isfinite(step) or step < floor:
        seen = f"a swing of about {step:.2f} s" if np.isfinite(step) else "no periodic swing"
        why = (
            f"unresolved: {seen} is shorter than {RESOLVE_WINDOWS:g} averaging windows of the "
            f"sensor ({format_duration(w)}) or sampling periods; the running mean is fitted"
        )
        add("step time", None, "s", why, "workload.step_time", resolved=False)
        for name in ("compute share", "compute level", "communication level", "edge duration"):
            add(name, None, "W", why, resolved=False)
        add("step-time spread", None, "1", why, resolved=False)
        add("step-level spread", None, "1", why, resolved=False)
        _unresolved_step(q, y, line, response, scenario, mean, found["period"], why)
        return
    profile, counts, _ = _fold(t, y, origin, np.array([step]))
    shape = _square_fit(profile[0], counts[0], step, response)
    inner = _interior(t, origin, step)
    strong = _stands_out(shape, counts[0], found["noise"])
    how = (
        f"epoch folding of {t.size:,} running samples; a two-level step through the sensor's "
        f"response fits the folded profile (R² {shape['r2']:.3f})"
    )
    if not strong:
        how = f"unresolved: the folded swing does not stand out of the noise (R² {shape['r2']:.2f})"
    elif not _stands_out_inside(t[inner], y[inner], origin[inner], step, response, found["noise"]):
        strong = False
        how = (
            f"unresolved: the {step:.3g}-s swing folded from {t.size:,} running samples is not "
            "seen a step away from the running spells' ends (it is their rise and fall, which "
            "fold at any period that divides the spells, not an iteration's)"
        )
    else:
        aliased = _aliased(
            (times, x, np.zeros(times.size, np.int64)) if stamps is None else stamps,
            line,
            step,
            found["period"],
            response,
            shape,
            mean,
        )
        if aliased:
            strong, how = False, f"unresolved: {aliased}"
    add("step time", step, "s", how, "workload.step_time", resolved=strong)
    if not strong:
        _unresolved_step(q, y, line, response, scenario, mean, found["period"], how)
    add("compute share", shape["share"], "1", how, "workload.phases", resolved=strong)
    add("compute level", shape["high"], "W", how, "workload.compute_power", resolved=strong)
    add("communication level", shape["low"], "W", how, "workload.trough_depth", resolved=strong)
    edge_ok = strong and shape["edge"] >= max(0.25 * w, 2.0 * found["period"])
    add(
        "edge duration",
        shape["edge"],
        "s",
        "the fitted edge of the folded step"
        if edge_ok
        else f"unresolved: edges faster than a quarter of the sensor's {format_duration(w)} "
        "window (or two samples) are smoothed away",
        "workload.edge_rate",
        resolved=edge_ok,
    )
    mid = 0.5 * (shape["high"] + shape["low"])
    slope = shape["seen_swing"] / max(w, found["period"])
    lengths, levels = (
        _step_spread(t, y, origin, step, mid, found["noise"], slope) if strong else (np.nan,) * 2
    )
    how = "between successive rising crossings of the swing's midpoint, less what noise gives"
    add(
        "step-time spread",
        lengths,
        "1",
        f"coefficient of variation of the step lengths {how}",
        "workload.variation.step_cv",
    )
    add(
        "step-level spread",
        levels,
        "1",
        f"coefficient of variation of the steps' mean levels {how}",
        "workload.variation.level_cv",
    )


def _gain(response: StepResponse, f: np.ndarray) -> np.ndarray:
    """The chain's gain at frequencies ``f`` [Hz]: the modulus of its impulse response's
    Fourier transform (1 for a sensor that samples instantaneously)."""
    if response.instant:
        return np.ones(np.atleast_1d(f).shape)
    w = response.kernel(response.dt)
    t = (np.arange(w.size) + 0.5) * response.dt
    return np.abs(np.exp(-2j * np.pi * np.outer(np.atleast_1d(f), t)) @ w)


def aliases(step: float, period: float) -> np.ndarray:
    """The steps [s] at least :data:`MIN_STEP` whose samples every ``period`` [s] are those of
    a ``step`` [s] swing, ``1 / |k / period ± 1 / step|`` for k = 1, 2..., shortest last."""
    k = np.arange(1, int(np.ceil(period / MIN_STEP)) + 2)
    f = np.concatenate((k / period - 1.0 / step, k / period + 1.0 / step))
    f = f[f > 0]
    out = 1.0 / f
    return np.sort(out[(out >= MIN_STEP) & (np.abs(out - step) > 1e-6 * step)])[::-1]


def _stamped_fold(t: np.ndarray, x: np.ndarray, spell: np.ndarray, f: np.ndarray) -> np.ndarray:
    """Between-bin share of the variance of ``x`` folded at each frequency ``f`` [Hz] on its
    stamps ``t`` [s], each running ``spell`` (an integer label) folded on its own phase (a
    stall restarts the iterations' phase): :data:`ALIAS_BINS` bins per spell."""
    n_spell = int(spell.max()) + 1
    size = n_spell * ALIAS_BINS
    total = float(np.sum((x - x.mean()) ** 2))
    out = np.empty(f.size)
    for lo in range(0, f.size, FOLD_CHUNK):  # chunks of candidates, not samples
        chunk = f[lo : lo + FOLD_CHUNK]
        phase = (t[None, :] * chunk[:, None]) % 1.0
        bins = np.minimum((phase * ALIAS_BINS).astype(np.int64), ALIAS_BINS - 1)
        flat = (bins + ALIAS_BINS * spell[None, :] + size * np.arange(chunk.size)[:, None]).ravel()
        n = np.bincount(flat, minlength=size * chunk.size).reshape(chunk.size, n_spell, -1)
        s = np.bincount(flat, np.tile(x, chunk.size), minlength=size * chunk.size)
        s = s.reshape(chunk.size, n_spell, -1)
        spell_n = n.sum(axis=2, keepdims=True)
        spell_mean = s.sum(axis=2, keepdims=True) / np.maximum(spell_n, 1)
        with np.errstate(all="ignore"):
            between = np.where(n > 0, s**2 / np.where(n > 0, n, 1), 0.0).sum(axis=(1, 2))
        between -= (spell_n * spell_mean**2).sum(axis=(1, 2))
        out[lo : lo + FOLD_CHUNK] = between / total if total > 0 else 0.0
    return out


def _aliased(
    stamps: tuple[np.ndarray, np.ndarray, np.ndarray],
    line: Timeline,
    step: float,
    period: float,
    response: StepResponse,
    shape: dict[str, float],
    mean: float,
) -> str | None:
    """Why the folded ``step`` [s] may be an alias (None: it is not), sampled every
    ``period`` [s] through ``response``.

    The candidates are :func:`aliases`, less those whose swing would need a trough below 0 W:
    a step T seen through the chain's gain ``g`` swings by the folded swing × g(1/step) /
    g(1/T), which a two-level step of compute share c averaging ``mean`` [W] holds only up to
    ``mean / c``. For each left, the samples as stamped (``stamps``: times [s from the grid's
    start], channel codes, power [W]) in the running spells once the sensor settled, each
    channel less its mean, are folded about the step's frequency and the candidate's
    (:data:`ALIAS_TRIES` frequencies over the larger of ±2 cycles over the longest spell and
    ±0.2 %), and the best of each kept (:func:`_stamped_fold`). On a regular grid every alias
    folds as well as the step (their samples are the same): only the stamps' irregularity
    (jitter, slow polls, a poll loop restarted) tells them apart. The step stands when every
    alias folds to less than :data:`ALIAS_MARGIN` of it; one folding :data:`ALIAS_BETTER` times
    as well or more is named as what the samples show."""
    found = aliases(step, period)
    if found.size == 0:
        return None
    gain = _gain(response, 1.0 / found) / _gain(response, np.array([1.0 / step]))[0]
    swing = shape["seen_swing"] / np.maximum(gain, 1e-12)
    found = found[swing <= mean / max(shape["share"], 1e-3)]
    if found.size == 0:
        return None
    t, channel, x = (np.asarray(a) for a in stamps)
    use, seg = _settled_in(t, x, line, State.RUNNING, response.settle)
    if np.count_nonzero(use) > ALIAS_SAMPLES:
        pick = np.random.default_rng(0).choice(np.flatnonzero(use), ALIAS_SAMPLES, replace=False)
        use = np.zeros(t.size, bool)
        use[pick] = True
    t, channel, x, seg = t[use], channel[use], x[use], seg[use]
    if t.size < 4 * ALIAS_BINS:
        return None
    code = np.unique(channel, return_inverse=True)[1]
    x = x - (np.bincount(code, x) / np.bincount(code))[code]
    spell = np.unique(seg, return_inverse=True)[1]
    first, last = np.full(spell.max() + 1, np.inf), np.full(spell.max() + 1, -np.inf)
    np.minimum.at(first, spell, t)
    np.maximum.at(last, spell, t)
    longest = float(np.max(last - first))
    candidates = np.concatenate(([step], found))
    f0 = 1.0 / candidates
    width = np.maximum(2.0 / max(longest, period), 2e-3 * f0)
    tries = f0[:, None] + width[:, None] * np.linspace(-1.0, 1.0, ALIAS_TRIES)[None, :]
    score = _stamped_fold(t, x, spell, tries.ravel()).reshape(tries.shape).max(axis=1)
    if not score[0] > 0:
        return None
    ratio = score[1:] / score[0]
    if ratio.max() < ALIAS_MARGIN:
        return None
    best = float(found[np.argmax(ratio)])
    shown = ", ".join(f"{a:.3g}" for a in found[:4]) + (", ..." if found.size > 4 else "")
    every = format_duration(round(period, 6))
    if ratio.max() > ALIAS_BETTER:
        return (
            f"the {step:.3g}-s swing folded from samples every {every} is "
            f"an alias: on the samples' stamps a {best:.3g}-s step folds {ratio.max():.3g} x as "
            f"well (|1/T - k/dt| = 1/{step:.3g} s); a step that short is not resolved"
        )
    return (
        f"the {step:.3g}-s swing folded from samples every {every} may be an alias of a step "
        f"of {shown} s (|1/T - k/dt| = "
        f"1/{step:.3g} s): on the samples' stamps the {best:.3g}-s one folds {ratio.max():.2f} x "
        f"as well (at least {ALIAS_MARGIN:g} x: the stamps do not tell them apart)"
    )


def _between_stalls(line: Timeline, mask: bool = False) -> np.ndarray:
    """Lengths [s] of the training between two stalls: the running segments with a checkpoint
    stall either side (the stalls' own lengths, which vary, stay out of them); or, with
    ``mask``, which segments those are."""
    state = line.state
    prev = np.concatenate(([-1], state[:-1]))
    nxt = np.concatenate((state[1:], [-1]))
    inner = (state == State.RUNNING) & (prev == State.CHECKPOINT) & (nxt == State.CHECKPOINT)
    return inner if mask else line.lengths()[inner]


def _unresolved_step(
    q: dict[str, Quantity],
    y: np.ndarray,
    line: Timeline,
    response: StepResponse,
    scenario: Scenario,
    mean: float,
    period: float,
    why: str,
) -> None:
    """The step a fit writes where the trace does not resolve it (``why``), as ``step time``
    (not resolved), and the trough bounded at it (:func:`_bound_trough`).

    The trace shows no step (one shorter than :data:`RESOLVE_WINDOWS` averaging windows or
    sampling ``period`` [s], or a swing lost in the noise): the preset's step is kept if the
    sensor could not resolve it either, else one averaging window (a moving average over a
    whole iteration sees its mean alone: no swing), or one sampling period for a sensor that
    does not average; a preset step the sensor would resolve contradicts the trace (issue 27:
    a 6.13-s step written for a 0.23-s one drew a ±75 W swing). It is then shortened to fit
    the training between two stalls (the median, to 10 ms as :func:`fitted_toml` writes it) a
    whole number of times: the engine rounds the checkpoint interval to whole steps, and a 2-s
    interval would run as one 6.13-s step. A sensor that samples instantly hides no step: any
    step shows, at its own period or as an alias, so it gets ``period / φ`` (φ the golden
    ratio), whose samples sweep the iteration's phase most evenly (no two samples at one phase,
    no run of them in its trough: no swing or dip the trace does not have, the mean kept)."""
    if response.instant:
        step = period / GOLDEN
        kept = "one sampling period over the golden ratio, as short as"
    else:
        unit = response.window if response.window > 0.0 else period
        preset = derive(scenario).step_time
        step = preset if preset < RESOLVE_WINDOWS * max(response.window, period) else unit
        kept = "the preset's, as short as" if step == preset else "one sensor window, as short as"
    between = _between_stalls(line)
    fitted = ""
    if between.size:
        interval = round(float(np.median(between)), 2)
        step = interval / math.ceil(interval / step - 1e-9)
        fitted = f", {interval / step:.0f} in the {interval:g}-s training between two stalls"
    q["step time"] = Quantity(
        "step time",
        step,
        "s",
        False,
        f"{step:.4g} s written ({kept} the trace allows{fitted}); {why}",
        "workload.step_time",
    )
    _bound_trough(q, y, response, scenario, mean, period, step)


def _bound_trough(
    q: dict[str, Quantity],
    y: np.ndarray,
    response: StepResponse,
    scenario: Scenario,
    mean: float,
    period: float,
    step: float,
) -> None:
    """The trough depth a fit writes where the trace does not resolve the step: the deepest, at
    most the preset's, whose iteration (the preset's phases at the written ``step`` [s], at
    the running ``mean`` [W]) seen through the sensor swings no more than the running samples
    ``y`` [W], every ``period`` [s], do about their :data:`TREND_STEPS`-step rolling mean (a
    slow drift, the die warming, is no step's swing) beyond their noise; added to ``q`` as
    ``trough depth`` (the preset's depth would draw a swing the trace does not have: a 6.13-s
    step with a 30 % trough seen as ±75 W where a 0.23-s step left a flat trace)."""
    if not np.isfinite(mean) or y.size < 2:
        return
    window = max(TREND_STEPS * step, TREND_MIN)
    trend = uniform_filter1d(y, max(1, min(round(window / period), y.size)), mode="nearest")
    spread, noise = float(np.std(y - trend)), _noise(y)
    target = math.sqrt(max(spread**2 - noise**2, 0.0))
    depths = np.linspace(0.0, scenario.workload.trough_depth, 101)
    seen = _seen_spread(scenario, depths, mean, response, step)
    depth = float(depths[seen <= target].max(initial=0.0))
    q["trough depth"] = Quantity(
        "trough depth",
        depth,
        "1",
        False,
        f"bounded, not resolved: the written {step:.3g}-s step has its trough at most "
        f"{depth:.3g} (the preset's {scenario.workload.trough_depth:g}), so that seen through the "
        f"sensor it swings by at most the trace's running spread, {spread:.3g} W (std about its "
        f"{format_duration(round(window, 1))} rolling mean) less its {noise:.3g}-W noise",
        "workload.trough_depth",
    )


def _mean_levels(
    scenario: Scenario, depth: np.ndarray, mean: float
) -> tuple[np.ndarray, np.ndarray]:
    """The compute level (one per trough ``depth``) that makes the scenario's phases average
    ``mean`` [W], and the phase levels (depth × phase), both as fractions of TDP (levels are
    affine in the compute level; phases of their own power keep it)."""
    wl, gpu = scenario.workload, scenario.gpu
    kinds, powers = [p.kind for p in wl.phases], [p.power for p in wl.phases]
    shares = scenario.phase_shares()
    depth = np.atleast_1d(depth)
    zero = np.array([workload.phase_levels(kinds, powers, 0.0, d) for d in depth])
    one = np.array([workload.phase_levels(kinds, powers, 1.0, d) for d in depth])
    compute = (mean / gpu.tdp - zero @ shares) / ((one - zero) @ shares)
    return compute, zero + compute[:, None] * (one - zero)


def short_step_edge_rate(scenario: Scenario, step: float, mean: float) -> float:
    """The edge rate [fraction of TDP per s] of ``scenario``'s phases at its trough depth,
    levels set to average ``mean`` [W], in an unresolved iteration of ``step`` [s]: the
    preset's, or, where its edges would each take more than :data:`EDGE_SHARE` of a step
    written short (one sensor window, one sampling period), the rate that makes them that
    share (the model refuses an edge longer than its step; the edges are as unresolved as the
    step)."""
    levels = _mean_levels(scenario, np.array([scenario.workload.trough_depth]), mean)[1][0]
    swing = float(np.abs(levels - np.roll(levels, 1)).max())
    need = math.ceil(swing / (EDGE_SHARE * step) * 1e4) / 1e4
    return max(scenario.workload.edge_rate, need)


def _seen_spread(
    scenario: Scenario, depth: np.ndarray, mean: float, response: StepResponse, step: float
) -> np.ndarray:
    """Standard deviation [W] of the scenario's iteration of ``step`` [s] at each trough
    ``depth``, levels set to average ``mean`` [W], seen through the chain (convolved circularly
    with its response)."""
    n = FOLD_BINS * 16
    cell = step / n
    kernel = response.kernel(cell, max(n, int(np.ceil(response.settle / cell)) + 1))
    spectrum = np.fft.rfft(np.bincount(np.arange(kernel.size) % n, kernel, minlength=n))
    shares = scenario.phase_shares()
    rate = short_step_edge_rate(scenario, step, mean)
    shapes = np.array(
        [  # one waveform per candidate depth: a hundred, each vectorised
            workload.iteration_waveform(shares, levels, step, rate, n)
            for levels in _mean_levels(scenario, depth, mean)[1]
        ]
    )
    seen = np.fft.irfft(np.fft.rfft(shapes, axis=1) * spectrum, n=n, axis=1)
    return seen.std(axis=1) * scenario.gpu.tdp


def _sharp(line: Timeline, sampled: np.ndarray, period: float, window: float) -> np.ndarray:
    """Whether each segment's two boundaries lie where samples were measured (``sampled``,
    their times [s]) closer than two sampling periods and half the sensor's ``window`` [s]
    apart: a boundary in a slow poll's gap (a line a GPU every second or so, for up to 9 s)
    is placed anywhere in it, and the spells it bounds read seconds short."""
    bounds = line.start[1:]
    after = np.clip(np.searchsorted(sampled, bounds), 1, max(sampled.size - 1, 1))
    gap = sampled[after] - sampled[after - 1] if sampled.size > 1 else np.full(bounds.size, np.inf)
    ok = gap <= max(2.0 * period, 0.5 * window)
    return np.concatenate(([False], ok)) & np.concatenate((ok, [False]))


def _timing(q, add, line: Timeline, period: float, sharp: np.ndarray, settle: float) -> None:
    """Checkpoint count, stall lengths (their mean and spread), interval, teardown, restart,
    start-up times and the job's end; ``period`` the sampling step [s]; the training between
    stalls from the spells whose boundaries were measured closely (``sharp``, :func:`_sharp`)
    where :data:`MIN_SPELLS` of them are, else from all (a spell's error, seconds in a 10-s
    spell, is a stall's small share and goes both ways: the stalls keep all). A teardown
    shorter than the sensor's ``settle`` [s] is the fall's own smear, no survivors spinning."""
    lengths = line.lengths()
    state = line.state
    prev = np.concatenate(([-1], state[:-1]))
    whole = np.ones(state.size, bool)
    whole[0] = whole[-1] = False  # a segment cut by the trace's ends has no length
    stalls = lengths[whole & (state == State.CHECKPOINT)]
    n_ck = stalls.size
    add("checkpoint count", n_ck, "1", "stalls between two running runs", resolved=True)
    edges = (
        "each from where the sensor's view reaches the stalled level (less its window) to where "
        "it leaves it"
    )
    add(
        "checkpoint stall",
        float(stalls.mean()) if n_ck else None,
        "s",
        f"mean of {n_ck} stalls (median {np.median(stalls):.3g} s, {stalls.min():.3g} to "
        f"{stalls.max():.3g} s), {edges}"
        if n_ck
        else "no stall between two running runs seen",
        "checkpoint.blocking_time",
    )
    add(
        "checkpoint stall spread",
        _length_spread(stalls, period),
        "1",
        f"coefficient of variation of the {n_ck} stalls' lengths, less what placing each edge "
        "within a sample gives"
        if n_ck >= MIN_SPELLS
        else f"{n_ck} stall(s) seen; a spread needs {MIN_SPELLS}",
        "checkpoint.blocking_cv",
    )
    inner = _between_stalls(line, mask=True)
    every = int(inner.sum())
    if np.count_nonzero(inner & sharp) >= MIN_SPELLS:
        inner &= sharp
    up = lengths[inner]
    which = f" of the {every}, whose edges were sampled closely" if up.size < every else ""
    trained = float(lengths[np.isin(state, (State.RUNNING, State.RAMP))].sum())
    add(
        "checkpoint interval",
        float(np.median(up)) if up.size else None,
        "s",
        f"median of {up.size} running spells between two stalls{which}"
        if up.size
        else "no running spell between two stalls seen"
        if np.any(state == State.CHECKPOINT)
        else f"unseen: no checkpoint in the {format_duration(round(trained, 1))} of training the "
        "trace shows (the interval is longer)",
        "checkpoint.interval",
    )
    # the job's end: the trace's last training, then idle to its end with no restart (a final
    # save or teardown at a held level may come between): an end, not a failure. A start-up
    # after that idle, cut by the trace's end, trains nothing the trace shows: the next job's
    # (a node's log runs on into the next job's initialisation), or a restart not seen
    active = np.flatnonzero(np.isin(state, (State.RUNNING, State.RAMP, State.CHECKPOINT)))
    tail = np.arange(state.size) > (active[-1] if active.size else state.size)
    idle_end = state[-1] == State.FAILED_IDLE
    next_job = state.size > 1 and state[-1] == State.LOADING and state[-2] == State.FAILED_IDLE
    ended = bool(tail.any() and (idle_end or (next_job and tail[-2])))
    end = float(line.start[active[-1] + 1]) if ended else None
    add(
        "job end",
        end,
        "s",
        f"the last training ends {end:.4g} s into the trace; idle follows"
        + (
            " to its end"
            if idle_end
            else ", then a start-up cut by the trace's end (the next job's: no training seen)"
        )
        + ", no restart: the job's end, not a failure"
        if ended
        else "the job trains (or stalls) to the trace's end",
    )

    def spells(name: str, use: np.ndarray, what: str, none: str, key=None) -> None:
        found = lengths[use]
        how = f"median of {found.size} {what}" if found.size else none
        add(name, float(np.median(found)) if found.size else None, "s", how, key)

    # a job that stops mid-trace and starts again: idle after a teardown, or straight after
    # training (a crash that kills the processes at once leaves no survivors spinning)
    stopped = np.isin(prev, (State.STALLED, State.RUNNING, State.CHECKPOINT, State.RAMP))
    smear = (state == State.STALLED) & (lengths < settle)
    came = np.concatenate(([False], smear[:-1]))  # the spell after a smear came from training
    straight = (state == State.FAILED_IDLE) & ((prev != State.STALLED) | came)
    straight &= stopped & ~tail & whole
    spells(
        "teardown",
        (state == State.STALLED) & whole & ~tail & ~smear,
        "spells of survivors spinning after a fault",
        f"no teardown seen: the job stopped straight from training to idle "
        f"{int(straight.sum())} time(s), and restarted"
        if straight.any()
        else "no failure seen" + (" (the job's end is no failure)" if ended else ""),
        "reliability.stall_time",
    )
    spells(
        "restart wait",
        (state == State.FAILED_IDLE) & stopped & ~tail & whole,
        "idle spells after a teardown or a stop straight from training, before a restart",
        "no restart after a failure seen",
        "reliability.restart_time",
    )
    starts = lengths[_whole_startups(line)]
    add(
        "start-up time",
        float(starts.mean()) if starts.size else None,
        "s",
        f"mean of {starts.size} start-up(s), each one state from leaving idle to the rise into "
        "running"
        if starts.size
        else "the start-up seen is cut by the trace's start or end: its length is unknown"
        if np.any(state == State.LOADING)
        else "no start-up level above idle seen (processes loading at idle)",
    )
    add(
        "start-up spread",
        _length_spread(starts, period, MIN_STARTUPS),
        "1",
        f"coefficient of variation of the {starts.size} start-ups' lengths, less what placing "
        "each edge within a sample gives"
        + (" (two: uncertain by about three quarters of itself)" if starts.size == 2 else "")
        if starts.size >= MIN_STARTUPS
        else f"{starts.size} start-up(s) seen; a spread needs {MIN_STARTUPS}",
        "workload.startup_cv",
    )


def _whole_startups(line: Timeline) -> np.ndarray:
    """Which of ``line``'s segments are start-ups seen whole (one cut by the trace's start or
    end has no length)."""
    whole = np.ones(line.state.size, bool)
    whole[0] = whole[-1] = False
    return (line.state == State.LOADING) & whole


def _length_spread(lengths: np.ndarray, period: float, least: int = MIN_SPELLS) -> float:
    """Coefficient of variation of spell ``lengths`` [s], less the variance that placing each of
    a spell's two edges within a sample of ``period`` [s] gives (uniform: ``period² / 12``
    each); NaN for fewer than ``least``."""
    if lengths.size < least:
        return np.nan
    var = max(float(np.var(lengths, ddof=1)) - period**2 / 6.0, 0.0)
    return float(np.sqrt(var) / np.mean(lengths))


def _startup_spread(result: Fit, written: float, spell: float, put) -> None:
    """Write ``workload.startup_cv``: the spread of the trace's start-ups, as seeded variation.

    The trace's start-up spell (mean ``spell`` [s]) holds the model's start-up (``written``
    [s], what ``workload.startup_time`` was given) and its checkpoint read, whose length the
    model holds fixed; so the spells' spread in seconds is put on the start-up: its CV is the
    spells' standard deviation over ``written``, at most 3 (the key's bound). One start-up seen,
    or none of length, writes 0, saying why.
    """
    n = int(np.count_nonzero(_whole_startups(result.timeline)))
    spread = result.value("start-up spread")
    if spread is None:
        put(
            "workload.startup_cv",
            0.0,
            f"only {n} start-up seen: the spread of start-up lengths is not seen (0: every "
            "start-up the fitted length)",
        )
        return
    if spread < MIN_SPREAD or written <= 0.0:
        why = (
            f"no spread above {MIN_SPREAD:g} measured over the {n} start-ups"
            if spread < MIN_SPREAD
            else f"the {n} start-ups' spread ({spread:.3g}) falls on the checkpoint read (the "
            "start-up written is 0 s), which the model holds fixed"
        )
        put("workload.startup_cv", 0.0, why)
        return
    cv = spread * spell / written
    capped = f", capped at 3 from {cv:.3g}" if cv > 3.0 else ""
    put(
        "workload.startup_cv",
        round(min(cv, 3.0), 4),
        f"spread of the {n} start-ups' lengths (lognormal, seeded): their standard deviation "
        f"{spread * spell:.3g} s over the {written:.4g}-s start-up{capped}",
    )


def summary(result: Fit) -> pd.DataFrame:
    """The fit as a table: quantity | fitted | resolved? | how."""
    rows = []
    for qty in result.quantities.values():
        unit = "" if qty.unit == "1" else qty.unit  # a count or a ratio: the number alone
        shown = "" if qty.value is None else f"{qty.value:.4g} {unit}".strip()
        rows.append(
            {
                "quantity": qty.name,
                "fitted": shown,
                "resolved": "yes" if qty.resolved else "no",
                "key": qty.key or "",
                "how": qty.how,
            }
        )
    return pd.DataFrame(rows)


# --- the scenario ---------------------------------------------------------------------------


def fitted_toml(result: Fit, preset: str, trace_name: str) -> str:
    """A scenario that ``extends`` ``preset`` with the fitted values, each tagged ``[C]`` with
    the trace it was fitted to; unresolved values stay at the preset's, with why."""
    choice, given = result.gpu, load_scenario(preset)
    overrides = {f"gpu.{k}": v for k, (v, _) in choice.table.items()}
    if choice.table:  # the preset's start-up, as the model holds it, at least the built idle
        idle_share = _share_at_least(overrides["gpu.idle"], overrides["gpu.tdp"])
        overrides["workload.startup_power"] = max(given.workload.startup_power, idle_share)
    base = load_scenario(given, {"cluster.gpu": choice.name, **overrides})
    trace_name = re.sub(r"[\x00-\x1f\x7f]", "?", trace_name)[:100]  # a name is one comment line
    tag = f"[C] fit of {trace_name}"
    tables: dict[str, list[tuple[str, object, str]]] = {}
    kept: list[str] = []

    def put(key: str, value: object, note: str) -> None:
        table, name = key.rsplit(".", 1)
        tables.setdefault(table, []).append((name, value, f"{tag}: {note}"))

    def keep(key: str, why: str) -> None:
        kept.append(f"# {key}: the preset's value is kept; {why}")

    def v(name: str) -> float | None:
        return result.value(name)

    gpu = base.gpu
    idle, stalled = v("idle level"), v("checkpoint stall level") or v("teardown level")
    if choice.table or idle is None:  # the idle the scenario holds: built, the preset's, fitted
        written_idle = gpu.idle
    else:
        written_idle = round(min(max(idle, 1.0), gpu.tdp), 1)
    for name, level in (("idle", idle), ("stalled", stalled), ("start-up", v("start-up level"))):
        if level is not None:
            _drawable(level, f"{name} level", base)
    if choice.named and choice.name != given.cluster.gpu:
        put("cluster.gpu", choice.name, "--gpu, the catalogue's")
    if choice.table:  # a GPU built from the trace: its levels are the fitted ones
        put(
            "gpu.source",
            f"built by powermodel fit from {trace_name}: idle {gpu.idle:g} W, TDP {gpu.tdp:g} W "
            f"(the highest sustained level); peak FLOP/s, levers and cooling the {gpu.name}'s",
            "what the built GPU rests on",
        )
        for key, (value, note) in choice.table.items():
            put(f"gpu.{key}", value, note)
    else:
        if idle is not None:
            put("gpu.idle", written_idle, "median idle level")
        else:
            keep("gpu.idle", result.quantities["idle level"].how)
        idle_rest = v("idle rest of node")
        if idle_rest is not None:  # a node idling under the preset's rest of node
            put("cluster.rest_power_idle", idle_rest, "the idle node's power beyond its GPUs")
        if stalled is not None:
            put(
                "gpu.stalled",
                round(min(max(stalled, written_idle), gpu.tdp), 1),
                "median stalled level",
            )
        elif gpu.stalled < written_idle:  # a GPU stalls at its idle at least (idle <= stalled)
            put("gpu.stalled", written_idle, "the preset's stalled level raised to the fitted idle")
        else:
            keep("gpu.stalled", result.quantities["checkpoint stall level"].how)
    _workload_keys(result, base, put, keep, written_idle)
    stall = v("checkpoint stall")
    if stall is not None:
        key = "checkpoint.blocking_time"
        if base.checkpoint.mode == "async":
            key = "checkpoint.async_blocking_time"
        n_ck = int(result.value("checkpoint count", 0))
        put(key, format_duration(round(stall, 3)), f"mean of {n_ck} stalls, edge to edge")
        spread = v("checkpoint stall spread")
        if spread is not None and spread >= MIN_SPREAD:
            # seeded variation of the stalls' lengths, not their median alone
            put(
                "checkpoint.blocking_cv",
                round(min(spread, 3.0), 4),
                f"spread of the {n_ck} stalls' lengths (lognormal, seeded)",
            )
        else:
            keep(
                "checkpoint.blocking_cv",
                f"no spread above {MIN_SPREAD:g} measured"
                if spread is not None
                else result.quantities["checkpoint stall spread"].how,
            )
    else:
        keep("checkpoint.blocking_time", result.quantities["checkpoint stall"].how)
    interval = v("checkpoint interval")
    if interval is not None:
        put(
            "checkpoint.interval",
            format_duration(round(interval, 2)),
            "median training between two stalls",
        )
    elif not np.any(result.timeline.state == State.CHECKPOINT):
        # none seen: an interval longer than the trace, not the preset's (which would draw
        # checkpoints the trace does not have)
        span = result.timeline.duration
        unseen = min(UNSEEN_SPANS * span, MAX_RECOVERY)
        put(
            "checkpoint.interval",
            format_duration(round(unseen, 1)),
            f"{result.quantities['checkpoint interval'].how}; written as {UNSEEN_SPANS:g} x the "
            f"trace's {format_duration(round(span, 1))} span, so that a run of it draws none",
        )
    else:
        keep("checkpoint.interval", result.quantities["checkpoint interval"].how)
    teardown, wait = v("teardown"), v("restart wait")
    if teardown is not None:
        put("reliability.stall_time", format_duration(round(teardown, 2)), "median teardown")
    else:
        keep("reliability.stall_time", result.quantities["teardown"].how)
    if wait is not None:
        put("reliability.restart_time", format_duration(round(wait, 2)), "median idle wait")
    else:
        keep("reliability.restart_time", result.quantities["restart wait"].how)
    if v("job end") is not None:
        kept.append(f"# the job's end: {result.quantities['job end'].how}")
    # the start-up spell holds the model's start-up and its checkpoint read, both at its level
    up, level = v("start-up time"), v("start-up level")
    if up is not None and level is not None:
        reload = derive(base).reload_time
        put(
            "workload.startup_time",
            format_duration(round(max(up - reload, 0.0), 2)),
            f"{result.quantities['start-up time'].how}, less the preset's {reload:.3g}-s "
            "checkpoint read",
        )
        put(
            "workload.startup_power",
            _share_at_least(min(max(level, written_idle), gpu.tdp), gpu.tdp),
            "median start-up level / TDP",
        )
        _startup_spread(result, max(up - reload, 0.0), up, put)
    else:
        keep("workload.startup_time", result.quantities["start-up time"].how)
        keep("workload.startup_cv", result.quantities["start-up spread"].how)
        if given.workload.startup_power * gpu.tdp < written_idle:
            # the model's start-up holds at least idle: the preset's level under the fitted
            # idle would not load (a trace that begins at launch has no idle before its start-up)
            put(
                "workload.startup_power",
                _share_at_least(written_idle, gpu.tdp),
                "the preset's start-up level raised to the fitted idle",
            )
    head = [
        f"# Fitted by `powermodel fit` to {trace_name} ({result.kind} trace, {result.n_gpus} "
        f"GPUs, sampled every {format_duration(round(result.period, 6))}, seen through the "
        f"{result.sensor.key!r} sensor chain).",
        "# [C]: a value calibrated on that trace; what the trace does not resolve keeps the "
        f"preset's value ({preset}), with why.",
        *kept,
        tomli_w.dumps(
            {
                "extends": preset,
                "name": f"fit of {trace_name}"[:200],
                "description": f"{preset} calibrated on the trace {trace_name}"[:200],
            }
        ).rstrip(),
    ]
    body = []
    for table, entries in tables.items():
        body.append(f"\n[{table}]")
        # plain keys before any array of tables: a key after one would belong to its last table
        for name, value, note in sorted(entries, key=lambda e: isinstance(e[1], list)):
            if isinstance(value, list):  # the phases: an array of tables, one per phase
                body += [
                    f"\n[[{table}.{name}]]  # {note}\n{tomli_w.dumps(p).strip()}" for p in value
                ]
                continue
            line = tomli_w.dumps({name: value}).strip()
            body.append(f"{line:<34} # {note}")
    return "\n".join(head + body) + "\n"


def _drawable(watts: float, what: str, base: Scenario) -> float:
    """``watts`` as a fraction of the written GPU's TDP (the preset's, ``--gpu``'s or the one
    built from a GPU trace, whose TDP spans its levels), refused outside what a board draws
    (``workload.compute_power``'s bounds): a level that GPU cannot reach says the trace was read
    with the wrong GPU, GPUs per channel, unit or preset, which clipping would hide."""
    bounds = Workload.model_fields["compute_power"].metadata
    low = next(m.ge for m in bounds if hasattr(m, "ge"))
    top = next(m.le for m in bounds if hasattr(m, "le"))
    gpu = base.gpu
    if not low * gpu.tdp <= watts <= top * gpu.tdp:
        rest = " (a meter's node draws less than the preset's rest of node)" if watts < 0 else ""
        raise PowerModelError(
            f"the fitted {what} is {watts:,.1f} W per GPU{rest}, {watts / gpu.tdp:.3g} x the "
            f"{gpu.name}'s {gpu.tdp:,.0f} W TDP, outside the {low:g} to {top:g} x a board "
            "draws: check --gpus-per-node and the trace's unit, or give --gpu of this GPU (or "
            "none, to build it from a GPU trace), or fit with a preset of this GPU and node "
            "(--preset)"
        )
    return watts / gpu.tdp


def _share_at_least(watts: float, tdp: float) -> float:
    """``watts`` as a share of ``tdp`` to four places, rounded up: never below ``watts``."""
    return math.ceil(watts / tdp * 1e4) / 1e4


def leakage_blocks(result: Fit, scenario: Scenario) -> tuple[float, np.ndarray]:
    """The leakage [W per GPU] the engine adds to ``scenario``'s phase powers while running, per
    plant step (``cooling.dt`` [s], returned first) from the trace's start: its die path
    (:func:`powermodel.facility.plant_path`: the scenario's weather and plant, the die through
    its thermal mass) driven by the trace's own board power in those steps, at the trace's own
    date and time of day. The phase powers hold at the nominal die (steadily running); a job
    that spends most of its time stalled runs cooler and leaks less (a negative amount)."""
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
    extra, _ = _running_mean(
        result.times, leak[block], result.timeline, result.response.settle, State.RUNNING
    )
    return float(extra) if np.isfinite(extra) else 0.0


LEAKED = "the die's leakage adds over the trace's running (the phases hold at the nominal die)"


def _less_leakage(result: Fit, base: Scenario, keys: Callable[[float], dict]) -> float:
    """The leakage [W per GPU] the engine adds over the trace's running to the levels that
    ``keys`` (overrides of ``base``) write for that leakage taken off the measured ones
    (:func:`_running_leakage`), found twice over: the nominal die is the written phases' own."""
    extra = 0.0
    for _ in range(2):
        extra = _running_leakage(result, load_scenario(base, keys(extra)))
    return extra


def _depth_floor(depth: float) -> float:
    """A trough depth to four places, rounded down: its trough never lower than ``depth``'s."""
    return math.floor(depth * 1e4) / 1e4


def _workload_keys(result: Fit, base: Scenario, put, keep, idle: float) -> None:
    """Step time, phase shares and levels, edge rate and start-up ramp; no phase is written
    under ``idle`` [W], the idle the scenario holds (a working GPU draws at least that: a
    deeper trough is bounded, and says so)."""
    tdp = base.gpu.tdp
    step, share = result.value("step time"), result.value("compute share")
    high, low = result.value("compute level"), result.value("communication level")
    mean = result.value("running mean")
    edges = None  # the edge rate an unresolved step written short needs (short_step_edge_rate)
    if step is not None and share is not None and high is not None and low is not None:
        put("workload.step_time", format_duration(round(step, 4)), "folded step time")
        _drawable(high, "compute level", base)
        phases = [
            {"name": "compute", "kind": "compute", "share": round(share, 4)},
            {"name": "communication", "kind": "communication", "share": round(1 - share, 4)},
        ]
        note = "1 - communication / compute level"

        def folded(extra: float) -> dict:  # the folded levels, less the die's leakage
            top, bottom = high - extra, low - extra
            depth = min(max(1.0 - bottom / top, 0.0), 0.99)
            if top * (1.0 - depth) < idle:  # no phase under the idle the scenario holds
                depth = max(1.0 - idle / top, 0.0)
            return {
                "workload.step_time": format_duration(round(step, 4)),
                "workload.phases": phases,
                "workload.compute_power": round(_drawable(top, "compute level", base), 4),
                "workload.trough_depth": _depth_floor(depth) if depth < 0.99 else 0.99,
            }

        extra = _less_leakage(result, base, folded)
        keys = folded(extra)
        if (high - extra) * (1.0 - min(max(1.0 - low / high, 0.0), 0.99)) < idle:
            note += (
                f", bounded: the folded communication level, {low:,.1f} W, is under the "
                f"{idle:g}-W idle the scenario holds, which a working GPU draws at least"
            )
        put(
            "workload.compute_power",
            keys["workload.compute_power"],
            f"compute level / TDP, less the {extra:+.3g} W {LEAKED}",
        )
        put("workload.trough_depth", keys["workload.trough_depth"], note)
        put("workload.phases", phases, "compute share of the folded step")
    else:
        written = result.quantities["step time"]
        if written.value is not None:  # the step the trace allows (fit._unresolved_step)
            put("workload.step_time", format_duration(round(written.value, 6)), written.how)
        else:
            keep("workload.step_time", written.how)
        if mean is not None:
            bound = result.quantities.get("trough depth")
            depth = base.workload.trough_depth if bound is None else bound.value
            note = None if bound is None else bound.how
            # the deepest trough, at most that, whose lowest phase draws at least idle and
            # whose compute phases, at the measured mean, stay within the cap: a GPU built
            # from a trace whose step it does not resolve has its TDP at that mean (issue 27:
            # a 250-W board's trace was refused with its compute level at 1.23 x its TDP)
            depths = np.linspace(0.0, depth, 101)
            compute, levels = _mean_levels(base, depths, mean)
            lowest = levels.min(axis=1) * tdp
            floored = float(depths[(lowest >= idle) & (compute <= 1.0)].max(initial=0.0))
            if floored < depth:
                note = (
                    f"{note + '; ' if note else ''}bounded so that, at the measured running "
                    f"mean, the lowest phase draws at least the {idle:g}-W idle the scenario "
                    f"holds and the compute phases at most the {tdp:g}-W TDP"
                )
                depth = _depth_floor(floored)
            if depth != base.workload.trough_depth:
                put("workload.trough_depth", round(depth, 4), note)

            def averaged(extra: float) -> dict:  # the phases at the mean, less the leakage
                compute = float(_mean_levels(base, np.array([depth]), mean - extra)[0][0])
                level = _drawable(compute * tdp, "compute level", base)
                return {"workload.trough_depth": depth, "workload.compute_power": round(level, 4)}

            averaged(0.0)  # a level no board draws is refused as measured
            extra = _less_leakage(result, base, averaged)
            put(
                "workload.compute_power",
                averaged(extra)["workload.compute_power"],
                "so that the preset's phases average the measured running mean, less the "
                f"{extra:+.3g} W {LEAKED}",
            )
            if written.value is not None:
                edges = short_step_edge_rate(base, written.value, mean)
    edge = result.value("edge duration")
    if edge is not None and high is not None and low is not None and edge > 0:
        put("workload.edge_rate", round((high - low) / (edge * tdp), 4), "folded edge")
    elif edges is not None and edges > base.workload.edge_rate:
        put(
            "workload.edge_rate",
            edges,
            f"unresolved: the preset's edges would outlast the {written.value:.3g}-s step "
            f"written; each made {EDGE_SHARE:g} of it",
        )
    else:
        keep("workload.edge_rate", result.quantities["edge duration"].how)
    cv, level_cv = result.value("step-time spread"), result.value("step-level spread")
    if cv is not None and level_cv is not None and max(cv, level_cv) >= MIN_SPREAD:
        put("workload.variation.step_cv", round(cv, 4), "spread of the step lengths")
        put("workload.variation.level_cv", round(level_cv, 4), "spread of the steps' levels")
    else:
        why = (
            f"no step-to-step spread above {MIN_SPREAD:g} measured"
            if cv is not None
            else result.quantities["step-time spread"].how
        )
        keep("workload.variation", why)
    par = base.workload.parallelism
    if par is not None and par.sync_power is not None and par.sync_power * tdp < idle:
        # the preset's wait at the barrier under the idle the trace shows would not load
        put(
            "workload.parallelism.sync_power",
            _share_at_least(idle, tdp),
            f"the preset's wait at the barrier ({par.sync_power * tdp:,.0f} W) raised to the "
            "idle the scenario holds",
        )
    ramp = result.value("start-up ramp")
    if ramp is not None:
        put("workload.startup_ramp", format_duration(round(ramp, 2)), "fitted rise into running")
    else:
        keep("workload.startup_ramp", result.quantities["start-up ramp"].how)
