"""The fit shown against its trace: the fitted scenario replayed over the trace's own timeline,
seen through the same sensor at the trace's sample instants, and compared (levels, 1-s means,
energy, checkpoint dips, ramps) in numbers and in an HTML report."""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from powermodel.analysis import offline_page
from powermodel.durations import format_duration
from powermodel.errors import PowerModelError
from powermodel.fit import REFERENCE, Fit, detect, fit, fitted_toml, summary
from powermodel.iotools.telemetry import TelemetryWarning, read_telemetry
from powermodel.models import render, sensors
from powermodel.models.events import State
from powermodel.output import check_folder, write_text
from powermodel.scenario import Scenario, loads_scenario, presets
from powermodel.simulate import derive, drawn_steps, preflight, shape_tables

__all__ = [
    "MAX_REPLAY_STEPS",
    "FitRun",
    "compare",
    "comparison_table",
    "fit_trace",
    "replay",
    "write_report",
]

MAX_REPLAY_STEPS = 20_000_000  # fine steps of a replay (160 MB of float64)
SECOND = 1.0  # s: the means the RMSE compares, and the span of a ramp
PLOTTED = 20_000  # points a time-series trace shows at most


@dataclass(frozen=True)
class FitRun:
    """A trace fitted, its scenario written and checked, and the comparison."""

    result: Fit
    scenario: Scenario
    text: str
    replayed: np.ndarray
    numbers: dict


def fit_trace(
    trace: str | Path,
    output: str | Path,
    format: str | None = None,
    period: float | None = None,
    gpus_per_node: int | None = None,
    preset: str = REFERENCE,
    sensor: str | None = None,
    report: str | Path | None = None,
    gpus: int | None = None,
) -> FitRun:
    """Read a trace, fit it, check the scenario with every check ``validate`` makes and only
    then write it to ``output`` (a ``.toml``), replay it through the sensor and compare; write
    the HTML ``report`` if asked. Paths and names are checked before any work; what the reader
    repaired is in ``result.warnings``. ``gpus`` states the GPUs per poll of an nvidia-smi log
    without ``index`` (:func:`~powermodel.iotools.read_telemetry`)."""
    output = Path(output)
    if output.suffix.lower() != ".toml":
        raise PowerModelError(f"-o {output}: the fitted scenario is TOML: give a .toml name")
    check_folder(output)
    if report is not None and Path(report).suffix.lower() != ".html":
        raise PowerModelError(f"--report {report}: the report is HTML: give a .html name")
    if report is not None:
        check_folder(report)
    if preset not in presets():
        raise PowerModelError(
            f"--preset {preset!r}: the fitted scenario extends a preset, one of "
            f"{', '.join(presets())}"
        )
    if sensor is not None:
        sensors.lookup(sensor)
    with warnings.catch_warnings():  # the repairs are in meta["warnings"]: the caller says them
        warnings.simplefilter("ignore", TelemetryWarning)
        data, meta = read_telemetry(trace, format, period, gpus_per_node, gpus=gpus)
    result = fit(data, meta, sensor, preset, period, gpus_per_node)
    text = fitted_toml(result, preset, Path(trace).name)
    scenario = _write_validated(text, output)
    replayed = replay(result, scenario)
    numbers = compare(result, replayed)
    if report is not None:
        write_report(result, replayed, numbers, report, text)
    return FitRun(result, scenario, text, replayed, numbers)


def _write_validated(text: str, output: Path) -> Scenario:
    """Load the scenario ``text`` with every check ``validate`` makes, then write it to
    ``output`` whole (:func:`powermodel.output.write_text`): a scenario that fails its checks,
    or a write cut short, leaves no file behind."""
    scenario = loads_scenario(text, label=str(output))
    preflight(scenario)
    write_text(output, text)
    return scenario


def replay(result: Fit, scenario: Scenario) -> np.ndarray:
    """Per-GPU power [W] of the fitted scenario over the trace's detected timeline, read by the
    trace's sensor at its sample instants.

    The scenario's failures are random draws that would not fall where the trace's did, so the
    model's renderer is given the timeline found in the trace (its states and their times) and
    the fitted scenario supplies what each state draws: the iteration's waveform, the held
    levels, the start-up ramp, the steps drawn with ``workload.variation`` (their draws are the
    scenario's, not the trace's). Per-GPU board power does not depend on the GPU count (the fit
    adds no offsets between groups), so the scenario is rendered as written.
    """
    derived = derive(scenario)
    cells, rate = shape_tables(scenario, derived)
    line = result.timeline
    fine = min(result.period / 2.0, 0.05, sensors.step_needed(result.sensor))
    n = int(np.ceil(line.duration / fine))
    if n > MAX_REPLAY_STEPS:
        fine = line.duration / MAX_REPLAY_STEPS
        if fine > sensors.step_needed(result.sensor):
            raise PowerModelError(
                f"a trace of {format_duration(line.duration)} is too long to replay through the "
                f"{result.sensor.label} sensor: fit a shorter span"
            )
        n = MAX_REPLAY_STEPS
    edges = np.arange(n + 1) * fine
    steps = drawn_steps(scenario, derived, line, cells)  # with workload.variation, each step
    means = render.interval_means(
        line.start, line.state.astype(np.int64), rate, render.cumulative_tables(cells), edges, steps
    )
    per_gpu = means[0] * 1e6 / scenario.cluster.n_gpus  # W
    # the trace's instrument was reading before the log began: its first state held before 0
    at = np.clip(result.times, 0.0, edges[-1])
    return sensors.read(per_gpu, fine, result.sensor, at=at, held_before=True)


def compare(result: Fit, replayed: np.ndarray) -> dict:
    """Measured against replayed, on the samples the trace has.

    Returns energy [Wh per GPU] of each and their relative difference, the RMSE of 1-s means
    [W], the checkpoint dips each shows (count, durations [s], found by the same detector), the
    level histograms and the 1-s ramps [W/s] of each.
    """
    ok = np.isfinite(result.power)
    t, m, r = result.times[ok], result.power[ok], replayed[ok]
    dt = result.period
    energy = (float(m.sum() * dt / 3600.0), float(r.sum() * dt / 3600.0))
    second = np.floor(t / SECOND).astype(np.int64)
    counts = np.bincount(second)
    has = counts > 0
    m1 = np.bincount(second, m)[has] / counts[has]
    r1 = np.bincount(second, r)[has] / counts[has]
    seen, _ = detect(result.times, np.where(np.isfinite(replayed), replayed, 0.0), result.response)
    bins = np.linspace(min(m.min(), r.min()), max(m.max(), r.max()), 81)
    return {
        "energy_measured_wh": energy[0],
        "energy_replayed_wh": energy[1],
        "energy_error": energy[1] / energy[0] - 1.0 if energy[0] else np.nan,
        "rmse_1s_w": float(np.sqrt(np.mean((m1 - r1) ** 2))),
        "dips_measured": _dips(result.timeline),
        "dips_replayed": _dips(seen),
        "histogram_edges": bins,
        "histogram_measured": np.histogram(m, bins)[0],
        "histogram_replayed": np.histogram(r, bins)[0],
        "ramps_measured": _ramps(t, m),
        "ramps_replayed": _ramps(t, r),
    }


def _dips(line) -> np.ndarray:
    """Durations [s] of the checkpoint stalls of a timeline, leaving out any cut by its ends."""
    lengths = line.lengths()
    inner = line.state == State.CHECKPOINT
    inner[0] = inner[-1] = False
    return lengths[inner]


def _ramps(t: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Change over each second [W/s]: the value a second later less the value now."""
    later = np.interp(t + SECOND, t, x, right=np.nan)
    change = (later - x) / SECOND
    return change[np.isfinite(change)]


def comparison_table(numbers: dict) -> pd.DataFrame:
    """The comparison as rows: what | measured | re-simulated."""
    dm, dr = numbers["dips_measured"], numbers["dips_replayed"]
    rm, rr = numbers["ramps_measured"], numbers["ramps_replayed"]

    def spread(x: np.ndarray) -> str:
        return f"{np.median(x):.2f} s (from {x.min():.2f} to {x.max():.2f})" if x.size else "none"

    def q(x: np.ndarray, p: float) -> str:
        return f"{np.percentile(x, p):.1f} W/s" if x.size else ""

    rows = [
        (
            "energy per GPU",
            f"{numbers['energy_measured_wh']:.2f} Wh",
            f"{numbers['energy_replayed_wh']:.2f} Wh ({100 * numbers['energy_error']:+.2f} %)",
        ),
        ("RMSE of 1-s means", "", f"{numbers['rmse_1s_w']:.1f} W"),
        ("checkpoint dips", f"{dm.size}", f"{dr.size}"),
        ("dip duration", spread(dm), spread(dr)),
        ("1-s ramp P1 / P99", f"{q(rm, 1)} / {q(rm, 99)}", f"{q(rr, 1)} / {q(rr, 99)}"),
    ]
    return pd.DataFrame(rows, columns=["what", "measured", "re-simulated"])


STYLE = (
    "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
)


def write_report(
    result: Fit, replayed: np.ndarray, numbers: dict, path: str | Path, scenario_text: str
) -> Path:
    """An HTML report: the fit's table, the comparison, and the figures (measured and
    re-simulated power through the sensor, level histograms, dip durations, 1-s ramps), with
    plotly.js embedded once so that it opens offline."""
    path = Path(path)
    figures = [
        _series(result, replayed),
        _histogram(numbers),
        _dip_figure(numbers),
        _ramp_figure(numbers),
    ]
    body = "\n".join(f.to_html(full_html=False, include_plotlyjs=False) for f in figures)
    title = f"powermodel fit of {result.source or 'a trace'}"
    chain = result.sensor.label
    page = offline_page(
        title,
        STYLE,
        f"""<h1>{html.escape(title)}</h1>
<p>{result.kind} trace, {result.n_gpus} GPUs, sampled every {format_duration(result.period)},
{format_duration(result.timeline.duration)} long, seen through the {html.escape(chain)} sensor
(averaging window {format_duration(result.response.window)}). The re-simulation replays the states
and times found in the trace through the model with the fitted values and reads it through
the same sensor at the trace's sample instants.</p>
<h2>Fitted</h2>{summary(result).to_html(index=False, escape=True)}
<h2>Measured and re-simulated</h2>{comparison_table(numbers).to_html(index=False)}
{body}
<h2>Scenario written</h2><pre>{html.escape(scenario_text)}</pre>""",
    )
    return write_text(path, page)


def _series(result: Fit, replayed: np.ndarray) -> go.Figure:
    stride = max(1, result.times.size // PLOTTED)
    t = result.start + (result.times[::stride] * 1e9).astype("timedelta64[ns]")
    fig = go.Figure()
    fig.add_scatter(x=t, y=result.power[::stride], name="measured", mode="lines")
    fig.add_scatter(x=t, y=replayed[::stride], name="re-simulated", mode="lines")
    fig.update_layout(
        title=f"Power per GPU through the {result.sensor.label} sensor", yaxis_title="W", height=380
    )
    return fig


def _histogram(numbers: dict) -> go.Figure:
    edges = numbers["histogram_edges"]
    centre = 0.5 * (edges[1:] + edges[:-1])
    fig = go.Figure()
    for name in ("measured", "replayed"):
        counts = numbers[f"histogram_{name}"]
        fig.add_bar(x=centre, y=counts / max(counts.sum(), 1), name=name, opacity=0.6)
    fig.update_layout(
        title="Levels", barmode="overlay", xaxis_title="W per GPU", yaxis_title="share of samples"
    )
    return fig


def _dip_figure(numbers: dict) -> go.Figure:
    fig = go.Figure()
    for name in ("measured", "replayed"):
        dips = numbers[f"dips_{name}"]
        fig.add_scatter(x=np.arange(1, dips.size + 1), y=dips, mode="markers", name=name)
    fig.update_layout(title="Checkpoint dips", xaxis_title="dip", yaxis_title="duration [s]")
    return fig


def _ramp_figure(numbers: dict) -> go.Figure:
    fig = go.Figure()
    for name in ("measured", "replayed"):
        ramps = np.sort(numbers[f"ramps_{name}"])
        if ramps.size:
            stride = max(1, ramps.size // PLOTTED)
            share = np.arange(1, ramps.size + 1)[::stride] / ramps.size
            fig.add_scatter(x=ramps[::stride], y=share, mode="lines", name=name)
    fig.update_layout(
        title="Ramps over 1 s", xaxis_title="W/s per GPU", yaxis_title="share at or below"
    )
    return fig
