"""The fit shown against its trace, first by prediction, then by replay.

The **prediction** is a fresh run of the fitted scenario by the engine (:func:`powermodel.simulate.
simulate`: its own timeline and seeds, failures off, the trace's span), each GPU's power read
through the trace's sensor at the trace's sample instants; it is measured with the same detector
as the trace (:func:`powermodel.fit.detect`) and compared: energy, running level, checkpoint count
and period, dip depth, start-up, level histogram, 1-s ramps. The same comparison tells how a fit
of the first part of a trace predicts the rest (**hold-out**), and how a fitted scenario with one
key changed predicts another run of the job (``powermodel predict``). The **replay** renders the
fitted scenario over the trace's own detected timeline, so its energy agrees almost by
construction: it is kept, labelled as a replay."""

from __future__ import annotations

import html
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import xarray as xr

from powermodel.analysis import offline_page
from powermodel.durations import format_duration
from powermodel.engine.derive import derive
from powermodel.engine.preflight import preflight
from powermodel.engine.timeline import startup
from powermodel.engine.waveform import drawn_steps, shape_tables
from powermodel.errors import PowerModelError
from powermodel.fit import REFERENCE, Fit, chain_of, detect, fit, fitted_toml, summary, with_gpu
from powermodel.fit.leakage import leakage_blocks
from powermodel.fit.sensor import StepResponse
from powermodel.iotools.telemetry import TelemetryWarning, read_telemetry
from powermodel.models import render, sensors
from powermodel.models.events import State
from powermodel.models.signal import FINEST_STEP
from powermodel.output import check_folder, write_text
from powermodel.scenario import Scenario, load_scenario, loads_scenario, presets
from powermodel.simulate import simulate

__all__ = [
    "FAILURES_OFF",
    "HOLDOUT",
    "MAX_PREDICTED_STEPS",
    "MAX_REPLAY_STEPS",
    "PREDICTED",
    "REPLAYED",
    "FitRun",
    "PredictRun",
    "Prediction",
    "against",
    "comparison_table",
    "fit_trace",
    "fresh_run",
    "fresh_view",
    "holdout",
    "holdout_words",
    "job_end",
    "predict",
    "predict_trace",
    "prediction_words",
    "proof_table",
    "prove",
    "replay",
    "write_report",
]

MAX_REPLAY_STEPS = 20_000_000  # fine steps of a replay (160 MB of float64)
# Steps of a prediction's fresh run: tracemalloc measured about 400 B a step (a 900-s fit's
# run of 4,500 and 18,000 steps), so about 1.6 GB; a longer trace is run on a coarser grid down
# to the step its sensor needs, then refused before the run (and simulate's preflight refuses
# a run the machine's memory cannot hold)
MAX_PREDICTED_STEPS = 4_000_000
# Fresh runs of a scenario that draws its stalls or steps (checkpoint.blocking_cv,
# workload.variation), each with its own seed: one run's checkpoint count in a fixed span moves
# with its stalls' sum (12 stalls at a cv of 0.64 spread it by 18 %: a count off by 2-3), so the
# run shown is the median of these, and the spread over them is said
PREDICTED_SEEDS = 5
HOLDOUT = 0.5  # share of a trace held out at its end by default: fit the first half
MAX_HOLDOUT = 0.9  # the part fitted keeps at least a tenth of the trace
SECOND = 1.0  # s: the means the RMSE compares, and the span of a ramp
PLOTTED = 20_000  # points a time-series trace shows at most
# bins of the level histograms: about 15 W on an H100's 80-700 W, wider than a sensor's noise
LEVEL_BINS = 40
MIN_COMPARED = 20  # samples a comparison needs (the fit's MIN_SAMPLES)
RAMP_QUANTILES = (1.0, 50.0, 99.0)  # percentiles of the 1-s ramps compared
# failures off, through the keys any run takes: the fresh run shows the job as fitted, not a
# failure drawn where the trace had none
FAILURES_OFF = {"reliability.rate_scale": 0.0, "reliability.planned_count": 0.0}
PREDICTED = "predicted (fresh run)"
REPLAYED = "replay (the trace's own timeline)"


@dataclass(frozen=True)
class Prediction:
    """A fresh run of a scenario read as a trace was: per-GPU power [W] at the trace's sample
    instants (NaN where the run does not reach), the trace time [s] the comparison starts at
    (``since``: a hold-out's cut), the trace time [s] of the run's time 0 (``shift``: the two
    aligned on the first rise into running), the scenario as run, the comparison
    (:func:`against`), and the trace time [s] the job's work ended (``end``, the fit's job
    end; None: it trained to the trace's end)."""

    power: np.ndarray
    since: float
    shift: float
    scenario: Scenario
    numbers: dict
    end: float | None = None


@dataclass(frozen=True)
class FitRun:
    """A trace fitted, its scenario written and checked, the prediction, the replay and their
    comparisons, and the hold-out (a :class:`Prediction`, or why none was made)."""

    result: Fit
    scenario: Scenario
    text: str
    predicted: Prediction
    replayed: np.ndarray
    numbers: dict
    holdout: Prediction | str | None = None


@dataclass(frozen=True)
class PredictRun:
    """Another trace of a job and a scenario's prediction of it."""

    result: Fit
    scenario: Scenario
    predicted: Prediction


def fit_trace(
    trace: str | Path,
    output: str | Path,
    format: str | None = None,
    period: float | None = None,
    gpus_per_node: int | None = None,
    preset: str = REFERENCE,
    sensor: str | None = None,
    report: str | Path | None = None,
    gpu: str | None = None,
    holdout: float | None = HOLDOUT,
    gpus: int | None = None,
) -> FitRun:
    """Read a trace, fit it, check the scenario with every check ``validate`` makes and only
    then write it to ``output`` (a ``.toml``); predict the trace by a fresh run of it, replay it
    over the trace's timeline, and compare both; fit the first part of the trace and predict
    the ``holdout`` share at its end (None or 0: no hold-out); write the HTML ``report`` if
    asked. Paths, names and bounds are checked before any work; what the reader repaired is
    in ``result.warnings``. ``gpus`` states the GPUs per poll of an nvidia-smi log
    without ``index`` (:func:`~powermodel.iotools.read_telemetry`)."""
    output = Path(output)
    if output.suffix.lower() != ".toml":
        raise PowerModelError(f"-o {output}: the fitted scenario is TOML: give a .toml name")
    check_folder(output)
    _check_report(report)
    if preset not in presets():
        raise PowerModelError(
            f"--preset {preset!r}: the fitted scenario extends a preset, one of "
            f"{', '.join(presets())}"
        )
    if sensor is not None:
        sensors.lookup(sensor)
    _check_holdout(holdout)
    base = with_gpu(load_scenario(preset), gpu)  # a GPU name is checked before the trace is read
    data, meta = _read(trace, format, period, gpus_per_node, gpus, sensor, base)

    def fit_part(frame: pd.DataFrame) -> Fit:  # the whole trace, or a hold-out's first part
        return fit(frame, meta, sensor, preset, period, gpus_per_node, gpu)

    result = fit_part(data)
    text = fitted_toml(result, preset, Path(trace).name)
    scenario = _write_validated(text, output)
    predicted, replayed, numbers = prove(result, scenario)
    held = None
    if holdout:
        held = _held_out(data, holdout, result, fit_part, preset)
    if report is not None:
        write_report(result, report, text, predicted, replayed, held)
    return FitRun(result, scenario, text, predicted, replayed, numbers, held)


def predict_trace(
    scenario: str | Path,
    trace: str | Path,
    overrides: list[str] | dict | None = None,
    format: str | None = None,
    period: float | None = None,
    gpus_per_node: int | None = None,
    gpus: int | None = None,
    sensor: str | None = None,
    report: str | Path | None = None,
) -> PredictRun:
    """Predict another run of a job: the scenario (a fitted ``.toml``, or any) with
    ``overrides`` (the key changed between the runs, e.g. ``checkpoint.interval=...``) run
    afresh and compared with ``trace``, which is read and measured as a fit reads it (the
    scenario's node inverts a meter's). Names and bounds are checked before any work."""
    _check_report(report)
    if sensor is not None:
        sensors.lookup(sensor)
    chosen = load_scenario(scenario, overrides)
    # its checks before the trace is read; memory is the fresh run's, checked when it runs
    preflight(chosen, memory=False)
    data, meta = _read(trace, format, period, gpus_per_node, gpus, sensor, chosen)
    result = fit(data, meta, sensor, chosen, period, gpus_per_node)
    predicted = predict(result, chosen)
    if report is not None:
        write_report(result, report, chosen.to_toml(), predicted)
    return PredictRun(result, chosen, predicted)


def prove(
    result: Fit, scenario: Scenario, most: int = MAX_PREDICTED_STEPS
) -> tuple[Prediction, np.ndarray, dict]:
    """The fitted ``scenario`` against its trace: the prediction (:func:`predict`, a fresh run
    of at most ``most`` steps), the replay (:func:`replay`) and the replay's comparison over
    every sample of the trace."""
    predicted = predict(result, scenario, most=most)
    replayed = replay(result, scenario)
    return predicted, replayed, against(result, replayed, "replayed")


def proof_table(result: Fit, predicted: Prediction, replayed: np.ndarray) -> pd.DataFrame:
    """The prediction and the replay against the trace, over the samples the prediction
    compares (:func:`comparison_table`)."""
    return comparison_table(predicted.numbers, _replay_beside(result, predicted, replayed))


def _replay_beside(result: Fit, predicted: Prediction, replayed: np.ndarray) -> dict:
    """The replay against the trace over the samples the prediction compares."""
    return against(result, replayed, "replayed", predicted.since, np.isfinite(predicted.power))


def _check_report(report: str | Path | None) -> None:
    if report is not None and Path(report).suffix.lower() != ".html":
        raise PowerModelError(f"--report {report}: the report is HTML: give a .html name")
    if report is not None:
        check_folder(report)


def _check_holdout(share: float | None) -> None:
    if share is not None and not (share == 0 or 0.0 < share <= MAX_HOLDOUT):
        raise PowerModelError(
            f"--holdout {share!r}: the share of the trace held out at its end is a number "
            f"above 0 and at most {MAX_HOLDOUT:g} (e.g. 0.5: fit the first half, predict the "
            "rest), or 0 for none"
        )


def _write_validated(text: str, output: Path) -> Scenario:
    """Load the scenario ``text`` with every check ``validate`` makes, then write it to
    ``output`` whole (:func:`powermodel.output.write_text`): a scenario that fails its checks,
    or a write cut short, leaves no file behind."""
    scenario = loads_scenario(text, label=str(output))
    preflight(scenario)
    write_text(output, text)
    return scenario


def _fine_step(
    duration: float, period: float, sensor: sensors.Sensor, most: int, what: str
) -> float:
    """The step [s] a model's per-GPU power is rendered at before a trace's ``sensor`` reads it
    at its sampling ``period`` [s]: half the period, at most 50 ms and what the sensor needs;
    coarser where ``duration`` [s] would take more than ``most`` steps, down to what the sensor
    needs, and refused beyond."""
    needed = sensors.step_needed(sensor)
    fine = min(period / 2.0, 0.05, needed)
    if duration / fine > most:
        fine = duration / most
        if fine > needed:
            raise PowerModelError(
                f"a trace of {format_duration(round(duration, 3))} is too long to {what} "
                f"through the {sensor.label} sensor ({most:,} steps of at most "
                f"{format_duration(needed)}): fit a shorter span"
            )
    return fine


def _read(
    trace: str | Path,
    format: str | None,
    period: float | None,
    gpus_per_node: int | None,
    gpus: int | None,
    sensor: str | None,
    scenario: Scenario,
) -> tuple[pd.DataFrame, dict]:
    """A trace read as ``fit`` and ``predict`` read it, its repairs left to ``meta["warnings"]``
    (the caller says them), and refused once read if its prediction would be too long
    (:func:`_check_span`)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TelemetryWarning)
        data, meta = read_telemetry(trace, format, period, gpus_per_node, gpus=gpus)
    _check_span(data, meta, sensor, scenario, period)
    return data, meta


def _check_span(
    data: pd.DataFrame,
    meta: dict,
    sensor: str | None,
    scenario: Scenario,
    period: float | None,
) -> None:
    """Refuse, once a trace is read and before it is fitted, one whose prediction's fresh run
    would take more than :data:`MAX_PREDICTED_STEPS` (:func:`_fine_step`; a run a little longer,
    by its start-up, is still refused before it starts, by :func:`fresh_run`)."""
    step = float(period or meta.get("step") or 0.0)
    if not step > 0.0 or data.empty:  # the fit names what is missing
        return
    chain = sensors.lookup(sensor) if sensor else chain_of(meta, step, scenario.gpu.name)
    span = float((data["time"].max() - data["time"].min()) / np.timedelta64(1, "s")) + step
    _fine_step(span, step, chain, MAX_PREDICTED_STEPS, "predict")


def replay(result: Fit, scenario: Scenario) -> np.ndarray:
    """Per-GPU power [W] of the fitted scenario over the trace's detected timeline, read by the
    trace's sensor at its sample instants.

    The scenario's failures are random draws that would not fall where the trace's did, so the
    model's renderer is given the timeline found in the trace (its states and their times) and
    the fitted scenario supplies what each state draws: the iteration's waveform, the held
    levels, the start-up ramp, the steps drawn with ``workload.variation`` (their draws are the
    scenario's, not the trace's), and, while running, the leakage the die path adds at the
    trace's own board power (:func:`powermodel.fit.leakage_blocks`: the fit wrote the phases at
    the nominal die, less it). Per-GPU board power does not depend on the GPU count (the fit
    adds no offsets between groups), so the scenario is rendered as written. Its energy agrees
    with the trace's almost by construction: :func:`predict` is the test of the fit.
    """
    derived = derive(scenario)
    cells, rate = shape_tables(scenario, derived)
    line = result.timeline
    fine = _fine_step(line.duration, result.period, result.sensor, MAX_REPLAY_STEPS, "replay")
    n = int(np.ceil(line.duration / fine - 1e-9))
    edges = np.arange(n + 1) * fine
    steps = drawn_steps(scenario, derived, line, cells)  # with workload.variation, each step
    means = render.interval_means(
        line.start, line.state.astype(np.int64), rate, render.cumulative_tables(cells), edges, steps
    )
    per_gpu = means[0] * 1e6 / scenario.cluster.n_gpus  # W
    plant, leak = leakage_blocks(result, scenario)
    mid = edges[:-1] + 0.5 * fine
    state = line.state[np.clip(np.searchsorted(line.start, mid, side="right") - 1, 0, None)]
    block = np.minimum((mid // plant).astype(np.int64), leak.size - 1)
    per_gpu += np.where(state == State.RUNNING, leak[block], 0.0)
    # the trace's instrument was reading before the log began: its first state held before 0
    at = np.clip(result.times, 0.0, edges[-1])
    return sensors.read(per_gpu, fine, result.sensor, at=at, held_before=True)


def fresh_run(
    scenario: Scenario, result: Fit, most: int = MAX_PREDICTED_STEPS
) -> tuple[Scenario, float]:
    """The scenario as a prediction of ``result``'s trace runs it, and the trace time [s] of its
    time 0.

    Failures off (:data:`FAILURES_OFF`; a Young/Daly checkpoint interval first fixed at what the
    failures gave it), its one start-up of the mean length, the scenario's own seed, its own
    timeline from its start-up, at the trace's own date and time of day (the site's weather
    then, as the fit's leakage took); the run aligned on the trace's first rise into running
    (its ramp, or, for a trace that begins running, its running) and long enough to cover the
    trace from there to the job's end (:func:`job_end`; :func:`fresh_view` holds the GPUs idle
    after it), in whole plant steps (``cooling.dt``), on a grid fine enough for the trace's
    sensor (:func:`_fine_step`), bounded by ``most`` steps before it starts.
    """
    keys = dict(FAILURES_OFF)
    # without failures the run has one start-up, the one it is aligned on: its mean length
    # (workload.startup_cv spreads the restarts a run with failures makes)
    keys["workload.startup_cv"] = 0.0
    if scenario.checkpoint.interval == "young-daly":
        keys["checkpoint.interval"] = _seconds(derive(scenario).checkpoint_interval)
    off = load_scenario(scenario, keys)
    line = result.timeline
    up = np.flatnonzero(np.isin(line.state, (State.RAMP, State.RUNNING, State.CHECKPOINT)))
    (_, begin), (_, reload), (_, ramp) = startup(off, derive(off))
    engine = begin + reload  # the fresh run's rise into running
    if up.size == 0:  # never up: compare from the start
        trace = engine
    elif up[0] == 0 and line.state[0] != State.RAMP:  # the log began with the job running
        trace, engine = 0.0, engine + ramp
    else:
        trace = float(line.start[up[0]])
    shift = trace - engine
    plant = float(off.cooling.dt)
    duration = max(np.ceil((job_end(result) - shift) / plant - 1e-9), 1.0) * plant
    # no finer than the model's floor (an averaging sensor sampled every 2 ms or faster: its
    # window still spans many steps; the fit's probe refuses a sample at each poll that fast)
    fine = max(_fine_step(duration, result.period, result.sensor, most, "predict"), FINEST_STEP)
    k = int(np.ceil(plant / fine - 1e-9))
    run = load_scenario(
        off,
        {
            "simulation.duration": _seconds(duration),
            "simulation.dt": _seconds(plant / k),
            # the trace's own date and time of day: the site's weather then, not the preset's
            "simulation.start": pd.Timestamp(  # to the microsecond a datetime holds
                result.start + np.timedelta64(round(shift * 1e9), "ns")
            )
            .floor("us")
            .to_pydatetime()
            .isoformat(),
        },
    )
    return run, shift


def job_end(result: Fit) -> float:
    """The trace time [s] the job's work ends: the fit's ``job end`` (the last training, then
    idle to the trace's end with no restart), else the trace's end."""
    end = result.value("job end")
    return result.timeline.duration if end is None else float(end)


def fresh_view(
    result: Fit,
    run: Scenario,
    shift: float,
    ds: xr.Dataset,
    variable: str = "gpu_power",
    times: np.ndarray | None = None,
) -> np.ndarray:
    """A fresh run's ``variable`` (``gpu_power`` or ``it_power`` [MW] of ``ds``, the run of
    :func:`fresh_run` whose time 0 is at ``shift`` [s] of the trace) as the trace's sensor
    read it at the trace's sample instants (or ``times`` [s of the trace]): the job from its
    start-up to the trace's job end (:func:`job_end`) and, before it and after, its GPUs idle
    as the engine draws the idle state (the run's own shape tables,
    :func:`powermodel.simulate.shape_tables`), so that the sensor's window sees the job start
    and end as a trace does."""
    dt = float(run.simulation.dt)
    at = (result.times if times is None else np.asarray(times, float)) - shift  # in run time
    cells, _ = shape_tables(run, derive(run))
    idle = float(cells[("gpu_power", "it_power").index(variable), State.FAILED_IDLE].mean())
    values = ds[variable].values
    stop = int(np.clip(np.ceil((job_end(result) - shift) / dt - 1e-9), 0, values.size))
    before = int(max(np.ceil(-at.min() / dt - 1e-9), 0)) if at.size else 0
    after = int(max(np.ceil(at.max() / dt - 1e-9) + 1 - stop, 0)) if at.size else 0
    series = np.concatenate((np.full(before, idle), values[:stop], np.full(after, idle)))
    return sensors.read(series, dt, result.sensor, at=at + before * dt, held_before=True)


def _seconds(value: float) -> str:
    """A duration as the scenario's keys take it, exactly: ``'1020.0s'``."""
    return f"{float(value)!r}s"


def predict(
    result: Fit, scenario: Scenario, since: float = 0.0, most: int = MAX_PREDICTED_STEPS
) -> Prediction:
    """A fresh run of ``scenario`` (:func:`fresh_run`) read by ``result``'s sensor at its
    trace's sample instants, idle before the job's start and after its end
    (:func:`fresh_view`), compared with the trace from ``since`` [s] on (a hold-out's cut).
    A scenario that draws its stalls or steps is run with :data:`PREDICTED_SEEDS` seeds
    (:func:`_seeds`): the run shown has their median checkpoint count, and ``numbers`` gain
    ``seeds``, ``dips_range`` and ``energy_range_wh`` (their spread)."""
    run, shift = fresh_run(scenario, result, most)
    members = []
    for seed in _seeds(run, most):
        member = (
            load_scenario(run, {"simulation.seed": seed}) if seed != run.simulation.seed else run
        )
        ds = simulate(member)
        power = fresh_view(result, member, shift, ds) * 1e6 / member.cluster.n_gpus  # W per GPU
        members.append((power, member, against(result, power, "predicted", since)))
    # the run shown: the first (the scenario's own seed where it is typical) whose checkpoint
    # count is the members' median
    counts = [m[2]["dips_predicted"].size for m in members]
    typical = sorted(counts)[len(counts) // 2]
    power, run, numbers = members[counts.index(typical)]
    if len(members) > 1:
        energy = [m[2]["energy_predicted_wh"] for m in members]
        numbers = {
            **numbers,
            "seeds": len(members),
            "dips_range": (min(counts), max(counts)),
            "energy_range_wh": (min(energy), max(energy)),
        }
    return Prediction(power, since, shift, run, numbers, result.value("job end"))


def _seeds(run: Scenario, most: int) -> list[int]:
    """The seeds a prediction runs: the scenario's own, and, where it draws its stalls or steps,
    up to :data:`PREDICTED_SEEDS` in all, as many as ``most`` steps hold."""
    varied = run.checkpoint.blocking_cv > 0 or run.workload.variation is not None
    steps = int(np.ceil(run.simulation.duration / run.simulation.dt))
    n = min(PREDICTED_SEEDS, max(most // max(steps, 1), 1)) if varied else 1
    return [run.simulation.seed + i for i in range(n)]


def _held_out(
    data: pd.DataFrame, share: float, result: Fit, fit_part: Callable[[pd.DataFrame], Fit], preset
) -> Prediction | str:
    """The hold-out of :func:`fit_trace`: :func:`holdout` on the trace, or why it could not be
    made (the first part too short to fit, or fitted to no scenario that loads)."""
    try:
        return holdout(data, share, result, fit_part, preset)
    except PowerModelError as exc:
        return f"no hold-out: {exc}"


def holdout(
    data: pd.DataFrame,
    share: float,
    result: Fit,
    fit_part: Callable[[pd.DataFrame], Fit],
    preset: str = REFERENCE,
) -> Prediction:
    """Fit the first ``1 - share`` of a trace and predict the rest: the scenario fitted to the
    first part, run afresh over the whole trace, compared on the samples held out.

    Parameters
    ----------
    data
        The trace as read (:func:`~powermodel.iotools.telemetry.read_telemetry`).
    share
        The share of the trace held out at its end, above 0 and at most :data:`MAX_HOLDOUT`.
    result
        The fit of the whole trace (its samples are the ones compared).
    fit_part
        Fits a part of ``data`` as the whole was fitted (the same options).
    preset
        The preset the part's scenario extends.
    """
    _check_holdout(share)
    cut = (1.0 - share) * result.timeline.duration
    first = data[data["time"] < result.start + np.timedelta64(int(round(cut * 1e9)), "ns")]
    part = fit_part(first.reset_index(drop=True))
    scenario = loads_scenario(fitted_toml(part, preset, "the first part"), label="the hold-out fit")
    preflight(scenario)
    return predict(result, scenario, since=cut)


def _features(times: np.ndarray, x: np.ndarray, response: StepResponse, since: float) -> dict:
    """What a trace shows from ``since`` [s] on, found by the fit's own detector
    (:func:`powermodel.fit.detect`) over all of it (the states before give the detector its
    levels): energy [Wh per GPU], running level [W] (the running samples once the sensor
    settled), the checkpoint stalls between two running runs (count, durations [s], median
    period [s]), the dip depth (running less stalled level) [W] and the start-up (from the job's
    first state the detector finds above idle, a start-up level's start or a rise's midpoint,
    until its power is nine tenths of the way up from idle to running) [s], if it begins after
    ``since``."""
    dt = float(np.median(np.diff(times)))
    line, _ = detect(times, x, response)
    rel, cut = times - times[0], since - times[0]
    seg = np.clip(np.searchsorted(line.start, rel, side="right") - 1, 0, line.state.size - 1)
    use = rel >= cut
    settled = use & (rel >= line.start[seg] + response.settle)
    state = line.state[seg]

    def level(s: State) -> float:
        inside = settled & (state == s)
        return float(np.mean(x[inside])) if inside.any() else np.nan

    inner = (line.state == State.CHECKPOINT) & (line.start >= cut)
    inner[0] = inner[-1] = False
    starts = line.start[inner]
    running = level(State.RUNNING)
    stalled = float(np.median(x[settled & (state == State.CHECKPOINT)])) if inner.any() else np.nan
    # the detector's raw timeline runs a rise on to the next stall: the start-up ends where
    # the power first comes within a tenth of the way from idle to the running level
    active = np.flatnonzero(line.state != State.FAILED_IDLE)
    idle = level(State.FAILED_IDLE)
    floor = float(np.min(x[use])) if not np.isfinite(idle) else idle
    begin = line.start[active[0]] if active.size and line.start[active[0]] >= cut else np.nan
    reached = (rel >= begin) & (x >= floor + 0.9 * (running - floor))
    startup_length = float(rel[np.argmax(reached)] - begin) if reached.any() else np.nan
    return {
        "energy_wh": float(x[use].sum() * dt / 3600.0),
        "running_w": running,
        "dips": line.lengths()[inner],
        "period_s": float(np.median(np.diff(starts))) if starts.size > 1 else np.nan,
        "depth_w": running - stalled,
        "startup_s": startup_length,
    }


def against(
    result: Fit,
    model: np.ndarray,
    name: str,
    since: float = 0.0,
    within: np.ndarray | None = None,
) -> dict:
    """The trace measured against a model's view of it (``model`` [W per GPU] at the trace's
    samples, NaN where it has none) from ``since`` [s] on, both sides measured the same way
    (:func:`_features`: the same detector, over the samples both have, or those ``within``);
    keys ``<what>_measured`` and ``<what>_<name>``.

    Returns energy [Wh per GPU] of each and their relative difference (``energy_error``), the
    RMSE of 1-s means [W], running level [W] and its relative error, checkpoint dips (count
    and durations [s]) and the difference of the counts (``checkpoint_error``), their period
    [s] and depth [W], the start-up [s], the level histograms and their overlap coefficient
    (the shared area of the two normalised histograms, 1 when equal), and the 1-s ramps [W/s]
    of each with their percentiles :data:`RAMP_QUANTILES`.
    """
    seen = np.isfinite(result.power) & np.isfinite(model)
    if within is not None:
        seen &= within
    ok = seen & (result.times >= since)
    if np.count_nonzero(ok) < MIN_COMPARED:
        raise PowerModelError(
            f"{result.source or 'the trace'}: {np.count_nonzero(ok)} samples overlap the "
            f"{name} run: too few to compare, at least {MIN_COMPARED} (give a longer trace)"
        )
    t, m, r = result.times[ok], result.power[ok], model[ok]
    second = np.floor((t - t[0]) / SECOND).astype(np.int64)
    counts = np.bincount(second)
    has = counts > 0
    m1 = np.bincount(second, m)[has] / counts[has]
    r1 = np.bincount(second, r)[has] / counts[has]
    tt = result.times[seen]
    response = result.response
    measured = _features(tt, result.power[seen], response, since)
    made = _features(tt, model[seen], response, since)
    bins = np.linspace(min(m.min(), r.min()), max(m.max(), r.max()) + 1e-9, LEVEL_BINS + 1)
    hm, hr = np.histogram(m, bins)[0], np.histogram(r, bins)[0]
    ramps = {"measured": _ramps(t, m), name: _ramps(t, r)}
    out = {
        "name": name,
        "samples": int(ok.sum()),
        "from_s": float(t[0]),
        "to_s": float(t[-1]),
        "rmse_1s_w": float(np.sqrt(np.mean((m1 - r1) ** 2))),
        "histogram_edges": bins,
        "histogram_measured": hm,
        f"histogram_{name}": hr,
        "level_overlap": float(np.minimum(hm / hm.sum(), hr / hr.sum()).sum()),
    }
    for side, found in (("measured", measured), (name, made)):
        out[f"energy_{side}_wh"] = found["energy_wh"]
        out[f"running_{side}_w"] = found["running_w"]
        out[f"dips_{side}"] = found["dips"]
        out[f"period_{side}_s"] = found["period_s"]
        out[f"depth_{side}_w"] = found["depth_w"]
        out[f"startup_{side}_s"] = found["startup_s"]
        out[f"ramps_{side}"] = ramps[side]
        out[f"ramp_quantiles_{side}"] = (
            np.percentile(ramps[side], RAMP_QUANTILES) if ramps[side].size else np.full(3, np.nan)
        )
    e = out["energy_measured_wh"]
    out["energy_error"] = out[f"energy_{name}_wh"] / e - 1.0 if e else np.nan
    level = out["running_measured_w"]
    out["running_error"] = out[f"running_{name}_w"] / level - 1.0 if level else np.nan
    out["checkpoint_error"] = int(out[f"dips_{name}"].size - out["dips_measured"].size)
    return out


def _ramps(t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Change over each second [W/s]: the value a second later less the value now."""
    later = np.interp(t + SECOND, t, x, right=np.nan)
    change = (later - x) / SECOND
    return change[np.isfinite(change)]


LABELS = {"predicted": PREDICTED, "replayed": REPLAYED}  # a model's column in the tables


def comparison_table(*numbers: dict) -> pd.DataFrame:
    """Comparisons (:func:`against`, over the same samples) as rows: what | measured | one
    column per model, labelled (:data:`LABELS`), each value with its error where it has one."""

    def spread(x: np.ndarray) -> str:
        return f"{np.median(x):.2f} s (from {x.min():.2f} to {x.max():.2f})" if x.size else "none"

    def value(x: float, unit: str, of: float | None = None) -> str:
        if not np.isfinite(x):
            return "none"
        shown = f"{x:.2f} {unit}".strip()
        if of is not None and np.isfinite(of) and of:
            shown += f" ({100 * (x / of - 1.0):+.1f} %)"
        return shown

    def quantiles(q: np.ndarray) -> str:
        return " / ".join(f"{v:.1f}" for v in q) + " W/s" if np.all(np.isfinite(q)) else "none"

    def count(n: int, of: int | None = None, over: dict | None = None) -> str:
        shown = f"{n}" if of is None else f"{n} ({n - of:+d})"
        if over is not None and over.get("seeds", 1) > 1 and over["dips_range"] != (n, n):
            low, high = over["dips_range"]  # the seeds' counts differ: say how
            shown += f", {low} to {high} over {over['seeds']} seeds"
        return shown

    def rows(n: dict, side: str, measured: bool) -> list[str]:
        base = numbers[0]

        def of(key: str) -> float | None:
            return None if measured else base[key.replace(side, "measured")]

        dips = n[f"dips_{side}"]
        return [
            value(n[f"energy_{side}_wh"], "Wh", of(f"energy_{side}_wh")),
            value(n[f"running_{side}_w"], "W", of(f"running_{side}_w")),
            count(dips.size, None if measured else base["dips_measured"].size, n),
            value(n[f"period_{side}_s"], "s", of(f"period_{side}_s")),
            value(n[f"depth_{side}_w"], "W", of(f"depth_{side}_w")),
            spread(dips),
            value(n[f"startup_{side}_s"], "s"),
            "" if measured else f"{n['level_overlap']:.3f}",
            quantiles(n[f"ramp_quantiles_{side}"]),
            "" if measured else f"{n['rmse_1s_w']:.1f} W",
        ]

    what = [
        "energy per GPU",
        "running level",
        "checkpoint dips",
        "checkpoint period",
        "dip depth",
        "dip duration",
        "start-up",
        "level histogram overlap",
        "1-s ramp P1 / P50 / P99",
        "RMSE of 1-s means",
    ]
    table = {"what": what, "measured": rows(numbers[0], "measured", True)}
    for n in numbers:
        table[LABELS.get(n["name"], n["name"])] = rows(n, n["name"], False)
    return pd.DataFrame(table)


STYLE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
)


def write_report(
    result: Fit,
    path: str | Path,
    scenario_text: str,
    predicted: Prediction,
    replayed: np.ndarray | None = None,
    held: Prediction | str | None = None,
) -> Path:
    """An HTML report: the fit's table, the prediction (and the replay, labelled) against the
    trace, the hold-out, and the figures (measured, predicted and replayed power through the
    sensor, level histograms, dip durations, 1-s ramps), with plotly.js embedded once so that it
    opens offline."""
    path = Path(path)
    numbers = [predicted.numbers]
    if replayed is not None:
        numbers.append(_replay_beside(result, predicted, replayed))
    table = comparison_table(*numbers)
    models = {PREDICTED: predicted.power, **({REPLAYED: replayed} if replayed is not None else {})}
    figures = [
        _series(result, models),
        _histogram(numbers),
        _dip_figure(numbers),
        _ramp_figure(numbers),
    ]
    body = "\n".join(f.to_html(full_html=False, include_plotlyjs=False) for f in figures)
    title = f"powermodel fit of {result.source or 'a trace'}"
    chain = result.sensor.label
    if isinstance(held, Prediction):
        held_part = (
            f"<h2>Hold-out</h2><p>{html.escape(holdout_words(held))}</p>"
            f"{comparison_table(held.numbers).to_html(index=False)}"
        )
    else:
        held_part = f"<h2>Hold-out</h2><p>{html.escape(held)}</p>" if held else ""
    fitted = f"<h2>Fitted</h2>{summary(result).to_html(index=False, escape=True)}"
    page = offline_page(
        title,
        STYLE,
        f"""<h1>{html.escape(title)}</h1>
<p>{result.kind} trace, {result.n_gpus} GPUs, sampled every {format_duration(result.period)},
{format_duration(result.timeline.duration)} long, seen through the {html.escape(chain)} sensor
(averaging window {format_duration(result.response.window)}). {
            html.escape(prediction_words(predicted))
        } The replay renders the states and times found in the trace through the model
with the fitted values: its energy agrees almost by construction.</p>
{fitted if replayed is not None else ""}
<h2>Predicted and replayed against the trace</h2>{table.to_html(index=False)}
{held_part}
{body}
<h2>Scenario</h2><pre>{html.escape(scenario_text)}</pre>""",
    )
    return write_text(path, page)


def prediction_words(predicted: Prediction) -> str:
    """How the prediction was made, in one sentence."""
    run, n = predicted.scenario, predicted.numbers
    return (
        f"The prediction is a fresh run of the scenario ({format_duration(run.simulation.dt)} "
        f"steps, {_seed_words(n, run.simulation.seed)}, failures off), its own timeline "
        "aligned on the "
        f"trace's first rise into running (its time 0 at {predicted.shift:.1f} s of the trace), "
        + (
            f"its job ending where the trace's did ({predicted.end:.1f} s), its GPUs idle "
            "before the job's start and after its end, "
            if predicted.end is not None
            else "its GPUs idle before the job's start, "
        )
        + "read through the same sensor at the trace's sample instants and compared from "
        f"{n['from_s']:.1f} s to {n['to_s']:.1f} s."
    )


def _seed_words(numbers: dict, seed: int) -> str:
    if numbers.get("seeds", 1) == 1:
        return f"seed {seed}"
    low, high = numbers["energy_range_wh"]
    return (
        f"seed {seed}, of {numbers['seeds']} seeds the first with their median checkpoint "
        f"count; their energy "
        f"spans {low:.3g} to {high:.3g} Wh a GPU"
    )


def holdout_words(held: Prediction) -> str:
    """What the hold-out fitted and what it predicted, in one sentence."""
    n = held.numbers
    return (
        f"Fitted on the trace before {n['from_s']:.1f} s, predicted from there to "
        f"{n['to_s']:.1f} s: energy {100 * n['energy_error']:+.1f} %, running level "
        f"{100 * n['running_error']:+.1f} %, checkpoints {n['checkpoint_error']:+d}."
    )


def _series(result: Fit, models: dict[str, np.ndarray]) -> go.Figure:
    stride = max(1, result.times.size // PLOTTED)
    t = result.start + (result.times[::stride] * 1e9).astype("timedelta64[ns]")
    fig = go.Figure()
    fig.add_scatter(x=t, y=result.power[::stride], name="measured", mode="lines")
    for name, power in models.items():
        fig.add_scatter(x=t, y=power[::stride], name=name, mode="lines")
    fig.update_layout(
        title=f"Power per GPU through the {result.sensor.label} sensor", yaxis_title="W", height=380
    )
    return fig


def _sides(numbers: list[dict]) -> list[tuple[str, str, dict]]:
    """(key suffix, legend name, numbers) of the measured side and of each model's."""
    return [("measured", "measured", numbers[0])] + [
        (n["name"], LABELS.get(n["name"], n["name"]), n) for n in numbers
    ]


def _histogram(numbers: list[dict]) -> go.Figure:
    fig = go.Figure()
    for side, label, n in _sides(numbers):
        edges = n["histogram_edges"]
        counts = n[f"histogram_{side}"]
        centre = 0.5 * (edges[1:] + edges[:-1])
        fig.add_bar(x=centre, y=counts / max(counts.sum(), 1), name=label, opacity=0.6)
    fig.update_layout(
        title="Levels", barmode="overlay", xaxis_title="W per GPU", yaxis_title="share of samples"
    )
    return fig


def _dip_figure(numbers: list[dict]) -> go.Figure:
    fig = go.Figure()
    for side, label, n in _sides(numbers):
        dips = n[f"dips_{side}"]
        fig.add_scatter(x=np.arange(1, dips.size + 1), y=dips, mode="markers", name=label)
    fig.update_layout(title="Checkpoint dips", xaxis_title="dip", yaxis_title="duration [s]")
    return fig


def _ramp_figure(numbers: list[dict]) -> go.Figure:
    fig = go.Figure()
    for side, label, n in _sides(numbers):
        ramps = np.sort(n[f"ramps_{side}"])
        if ramps.size:
            stride = max(1, ramps.size // PLOTTED)
            share = np.arange(1, ramps.size + 1)[::stride] / ramps.size
            fig.add_scatter(x=ramps[::stride], y=share, mode="lines", name=label)
    fig.update_layout(
        title="Ramps over 1 s", xaxis_title="W/s per GPU", yaxis_title="share at or below"
    )
    return fig
