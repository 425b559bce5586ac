"""The fit's driver: :func:`fit` reads a trace onto its grid (:mod:`powermodel.fit.trace`)
and :func:`fit_cells` runs the stages in order: the sensor's response
(:mod:`powermodel.fit.sensor`), the states (:mod:`powermodel.fit.states`), the held spells and a
meter's rest of node (:mod:`powermodel.fit.idle`), the quantities (:func:`_quantities`: held
levels, ramps, running mean, the running shape of :mod:`powermodel.fit.running`, the timing of
:mod:`powermodel.fit.timing`), and the GPU (:mod:`powermodel.fit.gpu`), into a
:class:`~powermodel.fit.result.Fit`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.durations import format_duration
from powermodel.errors import DataFileError
from powermodel.fit.gpu import choose_gpu, with_gpu
from powermodel.fit.idle import _idle_seen, _state_rest, rest_share
from powermodel.fit.result import Fit, Quantity
from powermodel.fit.running import _running_shape
from powermodel.fit.sensor import StepResponse, chain_of, step_response
from powermodel.fit.states import detect
from powermodel.fit.timeline import (
    Timeline,
    _segment_of,
    _settled_level,
    _state_levels,
    well_formed,
)
from powermodel.fit.timing import _ramp_length, _sharp, _timing, _with_ramps
from powermodel.fit.trace import (
    MIN_SAMPLES,
    _outside_the_job,
    _refuse_gaps,
    _trace_start,
    per_gpu_signal,
)
from powermodel.models import sensors
from powermodel.models.events import State
from powermodel.scenario import Scenario, load_scenario
from powermodel.simulate import rest_power

REFERENCE = "llama3-405b-16k-h100"  # the preset a fit extends by default


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
        seg = _segment_of(line, times)
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
        start=_trace_start(meta),
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
        level, n = _settled_level(times, measured, line, state, settle, average=np.median)
        how = f"median of {n:,} {what} samples once the sensor settled ({format_duration(settle)})"
        add(f"{what} level", level if n else None, "W", how if n else f"no {what} state seen", key)

    held(State.FAILED_IDLE, "idle", "gpu.idle")
    held(State.CHECKPOINT, "checkpoint stall", "gpu.stalled")
    held(State.STALLED, "teardown", None)
    held(State.LOADING, "start-up", None)
    # the rises are fitted to the mean of what they rise to: the running segments', or (a trace
    # that only rises into running) the later half of each rise's run
    mean, _ = _settled_level(times, measured, line, State.RUNNING, settle, average=np.mean)
    if not np.isfinite(mean):
        mean, _ = _settled_level(
            times, measured, line, State.RAMP, settle, average=np.mean, later_half=True
        )

    def level(name: str) -> float:
        return q[name].value if q[name].resolved else np.nan

    before = _state_levels(
        line.state,
        mean,
        level("idle level"),
        level("checkpoint stall level"),
        level("start-up level"),
    )
    ramp, shift = _ramp_length(times, x, line, response, mean, before)
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
    mean, n = _settled_level(times, measured, line, State.RUNNING, settle, average=np.mean)
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
    _timing(add, line, found["period"], sharp, settle)
    return q, line, repaired
