"""Metrics of a simulated (or measured) profile: Dataset in, numbers and tables out."""

from __future__ import annotations

import html
import json
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from powermodel import deadline, variables
from powermodel.errors import PowerModelError
from powermodel.models import sensors, signal
from powermodel.models.events import State
from powermodel.models.grid import connection_voltage
from powermodel.models.signal import (
    average_slope,
    net_change,
    nyquist,
    resolved,
    rolling_range,
    samples,
    spectrum,
)
from powermodel.models.thermal import step_stretch
from powermodel.piecewise import Neighbours, Windowed, ramp_stages
from powermodel.scenario import format_duration, parse_duration

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "average_slope",
    "band_variances",
    "blocks",
    "diurnal_swing",
    "diurnal_throughput",
    "drops",
    "flexibility",
    "load_duration",
    "local_hours",
    "max_swing",
    "metrics",
    "net_change",
    "nyquist",
    "part",
    "Pieces",
    "RAMPS",
    "ramps",
    "resample",
    "resample_factor",
    "resolved",
    "rolling_range",
    "samples",
    "sensor_swings",
    "spectrum",
    "State",
    "step_seconds",
    "StreamedMetrics",
    "swing_resolved",
    "SWING_WINDOW",
    "workloads",
]

SWING_WINDOW = 5.0  # s: the rolling window of ERCOT's 5-s peak-to-peak proposal [S, ercot_lli]
SWING_BLOCK = 1 << 18  # samples a block of the swing search (2 MB of float64)


def step_seconds(ds: xr.Dataset) -> float:
    """Time step of a Dataset. [s]"""
    if "dt" in ds.attrs:
        return float(ds.attrs["dt"])
    times = ds["time"].values
    if times.size < 2:
        raise PowerModelError("the profile needs at least two time samples")
    return float((times[1] - times[0]) / np.timedelta64(1, "s"))


def swing_resolved(dt: float, window: float = SWING_WINDOW) -> bool:
    """Whether a step resolves a swing within ``window``: two whole steps fit in it."""
    return window >= 2.0 * dt * (1.0 - 1e-9)


def max_swing(
    power: np.ndarray,
    dt: float,
    window: float = SWING_WINDOW,
    where: np.ndarray | None = None,
) -> float:
    """Largest max − min of ``power`` in any rolling ``window``; NaN if the step does not
    resolve the window (:func:`swing_resolved`).

    The window covers ``round(window / dt)`` interval means (5 s at 1 s: five samples). With
    ``where`` (one bool a sample), only windows wholly inside it count; NaN if none is.
    """
    if not swing_resolved(dt, window):
        return float("nan")
    size = round(window / dt)
    # a window's share of samples inside is exactly 1 only when all are
    inside = None if where is None else signal.rolling_mean(where, size) == 1.0
    # in blocks, each with the window before it (no swing array of the signal's size); a
    # signal with NaN whole, as scipy's filter orders its NaN over the whole
    block = len(power) if np.isnan(power).any() else max(SWING_BLOCK, 4 * size)
    best = []
    for start in range(0, len(power), block):
        lead = min(start, size - 1)
        swing = signal.rolling_range(power[start - lead : start + block], size)[lead:]
        if inside is not None:
            swing = swing[inside[start : start + block]]
        if swing.size:
            best.append(np.max(swing))
    return float(max(best)) if best else float("nan")


# the site's batteries: a part's view has none of its own
PART_DROPPED = ("bess_power", "bess_soc", "rack_storage_power")


def part(ds: xr.Dataset, workload: str | None = None, hall: str | None = None) -> xr.Dataset:
    """One part of a campus as a run of its own, which :func:`metrics`, the rules, sizing and
    the exporters read as they read a run.

    A ``workload``: its GPU and IT power, throughput and states in place of the totals; its
    share of the site's losses, cooling, misc loads and reactive power allocated by its share of
    the IT power, step by step, so the parts' facility power sums to the site's; its connection
    power is that (no site battery), its voltage the change its own load makes at the site's
    connection; its interruptions, goodput and training time.
    A ``hall``: its own plant and chain (``hall_*``), the misc loads in its losses; its
    workloads' GPU power and tokens trained, the states of its largest training job.
    """
    dim, name = _chosen_part(ds, workload, hall)
    mine, it, share, around, facility = (
        _workload_power(ds, workload) if hall is None else _hall_power(ds, hall)
    )
    members = ds[["workload_gpus", "workload_kind", "workload_goodput"]].sel(workload=mine)
    training = members["workload_kind"].values == "training"
    largest = mine[int(np.argmax(members["workload_gpus"].values * training))]
    gpu = ds["workload_gpu_power"].sel(workload=mine).sum("workload").values
    tokens = ds["workload_throughput"].sel(workload=mine[0] if hall is None else mine)
    tokens = tokens.values if hall is None else tokens.values[training].sum(axis=0)
    kept = ds["workload_effective_training_time"].sel(workload=mine).values
    gpus = members["workload_gpus"].values
    out = _without_the_site(ds, mine)
    reactive = ds["grid_reactive_power"].values * share
    out = out.assign(
        # the voltage change the part's own load makes at the site's connection
        grid_voltage=("time", connection_voltage(facility, reactive, *recorded_grid(ds.attrs))),
        gpu_power=("time", gpu),
        it_power=("time", it),
        **{k: ("time", v) for k, v in around.items()},
        facility_power=("time", facility),
        grid_power=("time", facility),
        grid_reactive_power=("time", reactive),
        throughput=("time", tokens),
        job_state=("time", ds["workload_job_state"].sel(workload=largest).values),
        clock_factor=("time", ds["workload_clock_factor"].sel(workload=largest).values),
        # a workload's tokens trained or served; a hall's tokens trained
        goodput=float(members["workload_goodput"].values[training | (hall is None)].sum()),
        effective_training_time=float(
            gpus[training] @ kept[training] / gpus[training].sum() if training.any() else 1.0
        ),
    )
    for key in ("job_state", *ds.data_vars):
        if key in out and key in ds:
            out[key].attrs = dict(ds[key].attrs)
    out.attrs = _part_attrs(ds, largest, f"{dim} {name}")
    return out


def _chosen_part(ds: xr.Dataset, workload: str | None, hall: str | None) -> tuple[str, str]:
    """The dimension and name of the part :func:`part` is asked for, checked against the run."""
    if (workload is None) == (hall is None):
        raise PowerModelError("a part is one workload or one hall: give workload or hall")
    dim, name = ("workload", workload) if hall is None else ("hall", hall)
    if dim not in ds.dims:
        raise PowerModelError(f"the run has no {dim}s: it is not a campus (with halls)")
    names = [str(n) for n in ds[dim].values]
    if name not in names:
        raise PowerModelError(f"no {dim} {name!r} in the run: choose one of {', '.join(names)}")
    return dim, name


class _PartPower(NamedTuple):
    """What a part of a campus draws, at each step."""

    workloads: list[str]  # the part's workloads
    it: np.ndarray  # its IT power [MW]
    share: np.ndarray  # of the site's IT power [1]
    around: dict[str, np.ndarray]  # facility_loss, cooling_power, misc_power [MW]
    facility: np.ndarray  # its facility power [MW]


def _it_share(ds: xr.Dataset, it: np.ndarray) -> np.ndarray:
    """A part's share of the site's IT power at each step [1] (none where the site draws none)."""
    site_it = ds["it_power"].values
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(site_it > 0, it / site_it, 0.0)


def _workload_power(ds: xr.Dataset, workload: str) -> _PartPower:
    """A workload's part of the site (:class:`_PartPower`): itself; its IT power [MW] and share
    of the site's; the site's losses, cooling and misc loads [MW] allocated by that share; its
    facility power [MW]."""
    it = ds["workload_it_power"].sel(workload=workload).values
    share = _it_share(ds, it)
    around = {k: ds[k].values * share for k in ("facility_loss", "cooling_power", "misc_power")}
    return [workload], it, share, around, it + sum(around.values())


def _hall_power(ds: xr.Dataset, hall: str) -> _PartPower:
    """A hall's part of the site (:class:`_PartPower`): its workloads; its own chain's IT power
    [MW] and share of the site's; its losses (the misc loads among them) and cooling [MW]; its
    facility power [MW]."""
    mine = [str(w) for w in ds["workload"].values[ds["workload_hall"].values == hall]]
    it = ds["hall_it_power"].sel(hall=hall).values
    facility = ds["hall_facility_power"].sel(hall=hall).values
    cooling = ds["hall_cooling_power"].sel(hall=hall).values
    around = {
        "facility_loss": facility - it - cooling,
        "cooling_power": cooling,
        "misc_power": np.zeros_like(it),
    }
    return mine, it, _it_share(ds, it), around, facility


def _without_the_site(ds: xr.Dataset, mine: list[str]) -> xr.Dataset:
    """The run without its campus dimensions, the site's batteries and the events of workloads
    other than ``mine``."""
    out = ds.drop_dims([d for d in ("workload", "hall", "flex") if d in ds.dims])
    out = out.drop_vars([v for v in PART_DROPPED if v in out])
    events = ds["event_workload"].values
    out = out.isel(event=np.flatnonzero(np.isin(events, mine)))
    return out.drop_vars("event_workload", errors="ignore")


def _part_attrs(ds: xr.Dataset, largest: str, part: str) -> dict:
    """The run's attrs with a part's own job's step, clock and checkpoints (those of the
    workload ``largest``: a hall's largest training job) and its title."""
    own = {
        str(k).removeprefix("workload_"): float(ds[k].sel(workload=largest))
        for k in ds.data_vars
        if ds[k].dims == ("workload",) and ds[k].dtype.kind == "f" and k != "workload_goodput"
    }
    own = {k: v for k, v in own.items() if k in ds.attrs}
    return {**ds.attrs, **own, "title": f"{ds.attrs.get('title', 'powermodel')}: {part}"}


def recorded_grid(attrs: dict) -> tuple[float, float]:
    """The short-circuit power [MVA] and X/R ratio [1] of the connection a run was simulated
    at, from the scenario its ``attrs`` record (``attrs["scenario"]``, its ``[grid]``)."""
    g = json.loads(attrs["scenario"])["grid"]
    return float(g["short_circuit"]), float(g["x_r"])


def workloads(ds: xr.Dataset) -> pd.DataFrame:
    """A campus's workloads side by side: kind, GPUs, IT power mean and peak [MW], largest
    5-s swing [MW], tokens trained or served, training time kept. Empty without a campus."""
    if "workload" not in ds.dims:
        return pd.DataFrame()
    dt = step_seconds(ds)
    rows = []
    for name in ds["workload"].values:
        it = ds["workload_it_power"].sel(workload=name).values
        rows.append(
            {
                "workload": name,
                "kind": ds["workload_kind"].sel(workload=name).item(),
                "GPUs": int(ds["workload_gpus"].sel(workload=name)),
                "IT mean [MW]": float(it.mean()),
                "IT peak [MW]": float(it.max()),
                "IT 5-s swing [MW]": max_swing(it, dt),
                "tokens": float(ds["workload_goodput"].sel(workload=name)),
                "training time kept": float(
                    ds["workload_effective_training_time"].sel(workload=name)
                ),
            }
        )
    return pd.DataFrame(rows)


def flexibility(ds: xr.Dataset) -> pd.DataFrame:
    """The run's flexibility events as a utility reads them, in EPRI DCFlex's terms
    [P, dcflex]: the magnitude shed by the targeted workloads and at the connection [MW] (each
    against the hour before the event, a same-day baseline), the notice and duration [h], how
    often such events ran (events a 30-day month of the run), and the tokens they cost. Empty
    without events."""
    if "flex" not in ds.dims or ds.sizes["flex"] == 0:
        return pd.DataFrame()
    dt = step_seconds(ds)
    time = ds["time"].values
    grid = ds["grid_power"].values
    names = list(dict.fromkeys(ds["flex_name"].values))
    per_month = len(names) / (ds.sizes["time"] * dt / 86400.0) * 30.0
    rows = []
    for name in names:
        mine = ds["flex_name"].values == name
        first = int(np.flatnonzero(mine)[0])
        start = ds["flex_start"].values[first]
        duration = float(ds["flex_duration"].values[first])
        begin = int(np.searchsorted(time, start))
        end = min(begin + max(round(duration / dt), 1), grid.size)
        before = grid[max(begin - round(3600.0 / dt), 0) : begin]
        at_grid = float(before.mean() - grid[begin:end].mean()) if before.size else np.nan
        shed = ds["flex_shed"].values[mine].sum()
        rows.append(
            {
                "event": name,
                "workloads": ", ".join(ds["flex_workload"].values[mine]),
                "lever": ds["flex_lever"].values[first],
                "notice [h]": float(ds["flex_notice"].values[first]) / 3600.0,
                "duration [h]": duration / 3600.0,
                "asked [share]": float(ds["flex_reduction"].values[first]),
                "shed by workloads [MW]": float(shed),
                "shed share": float(shed / ds["flex_baseline"].values[mine].sum()),
                "shed at connection [MW]": at_grid,
                "events a month": per_month,
                "tokens lost": float(ds["flex_tokens_lost"].values[mine].sum()),
            }
        )
    return pd.DataFrame(rows)


def sensor_swings(
    ds: xr.Dataset, chains: list[str | sensors.Sensor], window: float = SWING_WINDOW
) -> pd.DataFrame:
    """The largest swing in ``window`` [s] of each sensor's variable, exact and as the sensor
    reports it, from a profile holding the sensors' views (``simulate(..., sensors=...)``).

    Returns one row a chain (the same chain once): ``sensor``, ``variable``, ``exact`` and
    ``seen`` [the variable's ``units``], ``units`` and ``not_measured`` (why a swing is NaN,
    else ""). A view's readings before its first report and over missing data are NaN (no
    report): only windows wholly of readings count (:func:`max_swing` with ``where``).
    """
    dt = step_seconds(ds)
    rows = []
    for chain in {c.key: c for c in map(sensors.lookup, chains)}.values():
        name = chain.variable
        view = ds[f"{name}_{chain.key}"].values
        exact = max_swing(ds[name].values, dt, window)
        seen = max_swing(view, dt, window, where=np.isfinite(view))
        if not swing_resolved(dt, window):
            why = f"not resolved at a {format_duration(dt)} step"
        elif not np.isfinite(seen):
            why = f"no whole {format_duration(window)} of {chain.label} readings"
        else:
            why = ""
        rows.append((chain.key, name, exact, seen, ds[name].attrs.get("units", ""), why))
    return pd.DataFrame(
        rows, columns=["sensor", "variable", "exact", "seen", "units", "not_measured"]
    )


RAMPS = {
    "net_change": signal.net_change,
    "average_slope": signal.average_slope,
    "range": signal.rolling_range,
}


def ramps(power: np.ndarray, dt: float, window: float) -> dict[str, float]:
    """The three readings of "the ramp over a window", up and down. [MW per window]

    ``net_change``: power now less power one window ago; ``average_slope``: the window average
    now less the window average one window ago; ``range``: max − min within the window (no
    direction). On a 6 s swing and a 1-min window the first is near zero, the second moderate and
    the third the whole swing [D].
    """
    n = signal.samples(window, dt)
    values = {name: statistic(power, n) for name, statistic in RAMPS.items()}
    return _ramp_readings({k: (float(v.max()), float(v.min())) for k, v in values.items()})


def _ramp_readings(extremes: dict[str, tuple[float, float]]) -> dict[str, float]:
    """The readings of :func:`ramps` from the largest and least value of each statistic of
    :data:`RAMPS`: the range's largest, the others' largest up and least down (as positive)."""
    out = {}
    for name, (high, low) in extremes.items():
        if name == "range":
            out[name] = high
        else:
            out[f"{name}_up"], out[f"{name}_down"] = high, -low
    return out


def drops(
    power: np.ndarray,
    dt: float,
    window: float = 5.0,
    threshold: float = 0.05,
    shortest: float = 0.5,
) -> pd.DataFrame:
    """Sustained drops of a power trace, as the NLR profiles' analysis finds them [S,
    vercellino_genai]: where the centred ``window``-s rolling mean falls below ``1 − threshold``
    of its own 75th percentile (the baseline) for at least ``shortest`` s.

    Returns one row a drop: ``start`` [s from the first sample], ``length`` [s], ``depth`` (one
    less the raw power's mean over the drop over the baseline) and ``minimum`` (the raw
    power's least over the drop), with the ``baseline`` in ``attrs``. A drop still open at the
    end runs to the last sample.
    """
    numbers = {"dt": dt, "window": window, "threshold": threshold, "shortest": shortest}
    real = all(
        isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
        for v in numbers.values()
    )
    if not (real and all(np.isfinite(v) for v in numbers.values())):
        raise ValueError(f"drops() needs finite real numbers, got {numbers}")
    if not (dt > 0 and window > 0 and 0 < threshold < 1 and shortest >= 0):
        raise ValueError(
            f"drops() needs dt > 0, window > 0, 0 < threshold < 1 and shortest >= 0, got {numbers}"
        )
    if np.iscomplexobj(power):
        raise ValueError("drops() needs a real power trace, not a complex one")
    power = np.asarray(power, dtype=float)
    if power.ndim != 1 or power.size == 0 or not np.isfinite(power).all():
        raise ValueError("drops() needs a non-empty 1-D trace of finite values")
    width = int(min(max(1, round(window / dt)), power.size))
    rolling = pd.Series(power).rolling(width, center=True, min_periods=1).mean().to_numpy()
    baseline = float(np.percentile(rolling, 75))
    if baseline <= 0:
        raise ValueError(
            f"drops() measures against a positive baseline; this trace's is {baseline:g}"
        )
    edges = np.diff(np.r_[0, (rolling < baseline * (1.0 - threshold)).astype(np.int8), 0])
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    keep = (ends - starts) * dt >= shortest - 1e-9
    starts, ends = starts[keep], ends[keep]
    total = np.r_[0.0, np.cumsum(power)]
    out = pd.DataFrame(
        {
            "start": starts * dt,
            "length": (ends - starts) * dt,
            "depth": 1.0 - (total[ends] - total[starts]) / (ends - starts) / baseline,
            "minimum": np.minimum.reduceat(np.r_[power, np.inf], np.c_[starts, ends].ravel())[::2]
            if starts.size
            else np.empty(0),
        }
    )
    out.attrs["baseline"] = baseline
    return out


def load_duration(power: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Load-duration curve: power sorted from highest, and the share of time at or above it."""
    ordered = np.sort(power)[::-1]
    return ordered, np.arange(1, ordered.size + 1) / ordered.size


def band_variances(
    power: np.ndarray, dt: float, bands: tuple[tuple[float, float], ...]
) -> dict[str, float]:
    """Variance of ``power`` in each band [MW²]: "energy in a band" is a variance, not MWh."""
    return {f"{lo:g}-{hi:g} Hz": signal.band_variance(power, dt, lo, hi) for lo, hi in bands}


def metrics(ds: xr.Dataset) -> dict[str, Any]:
    """Headline numbers of a simulated run.

    Every power and energy figure is named by where it is metered, then what, then its unit:
    ``it_`` (``it_power``, the racks), ``cooling_`` (the plant), ``facility_`` (what the site
    draws) and ``grid_`` (the connection: the facility less any site battery), as in
    ``it_mean_mw`` or ``grid_swing_5s_mw`` [MW, MWh]; energies integrate the interval means
    exactly. ``effective_training_time`` is a fraction; ``tokens`` counts tokens trained and
    kept. ``pue`` is facility over IT energy for the whole run, ``wue_l_per_kwh`` water per IT
    kWh, ``throughput_lost_to_heat`` the fraction of tokens the clocks lost to weather: against
    the plant holding its supply setpoint all the time. A figure the run cannot give is NaN,
    and ``not_measured`` says why, by key.

    What the utility sees at the connection starts ``grid_``: ``grid_swing_5s_mw`` is the
    largest 5-s swing of the run, most often a failure's drop; ``grid_swing_5s_training_mw``
    the largest of the windows wholly in the running state (``job_state``), the iterations' own
    swing. An interval mean can straddle a change of state (a checkpoint stall that starts
    mid-interval), so a sample counts as running only with running samples either side.

    The run is read in cache-sized blocks (:func:`blocks`, :class:`StreamedMetrics`), as a
    streamed run's chunks are: the time and memory it takes grow with the run's length alone,
    and the figures are a streamed run's.
    """
    streamed = StreamedMetrics(step_seconds(ds), ds.sizes["time"], ds.attrs)
    for piece in blocks(ds, StreamedMetrics.NAMES, streamed.least()):
        streamed.feed(*piece)
    return streamed.result(ds)


def _why_not_measured(key: str, dt: float) -> str:
    """Why a metric of a run is NaN, in words the CLI and the dashboard show in its place."""
    if "_swing_5s" in key and not swing_resolved(dt):
        coarsest = format_duration(SWING_WINDOW / 2.0)
        return f"not resolved at a {format_duration(dt)} step (needs dt <= {coarsest})"
    if key.endswith("_training_mw"):
        return f"none: no {SWING_WINDOW:g}-s window lies wholly in training"
    if key.endswith("_per_token_j"):
        return "none: no tokens trained"
    return "not measured"


def resample_factor(n_steps: int, dt: float, interval: str | float) -> int:
    """Steps per resampled interval; an error unless ``interval`` is a whole multiple of ``dt``
    that divides the run."""
    try:
        seconds = parse_duration(interval)
    except ValueError as exc:
        raise PowerModelError(f"resample: {exc}") from None
    factor = round(seconds / dt)
    if factor < 1 or abs(factor * dt - seconds) > 1e-9 * seconds or n_steps % factor:
        raise PowerModelError(
            f"resample: {format_duration(seconds)} must be a whole multiple of the step "
            f"({format_duration(dt)}) that divides the run ({n_steps} steps)"
        )
    return factor


def resample(ds: xr.Dataset, interval: str | float) -> xr.Dataset:
    """Coarser profile: interval means (energy-exact) plus each interval's ``_min`` and ``_max``.

    A state variable (one with ``flag_meanings``, ``job_state``) becomes the most common state of
    each interval, and ``share_<state>`` the fraction of the interval in each state. [1]

    Parameters
    ----------
    ds
        A simulated Dataset.
    interval
        New step, a duration (``"1min"``) or seconds; a whole multiple of the Dataset's step that
        divides the run.
    """
    factor = resample_factor(ds.sizes["time"], step_seconds(ds), interval)
    attrs = {**ds.attrs, "dt": factor * step_seconds(ds)}
    time = ds["time"]
    out = xr.Dataset(coords={"time": ("time", time.values[::factor], time.attrs)}, attrs=attrs)
    for name, var in ds.data_vars.items():
        if var.dims != ("time",):
            if "time" not in var.dims:
                out[name] = var
            continue
        if "flag_meanings" in var.attrs:
            out = out.assign(_states(var, factor))
            continue
        blocks = var.values.reshape(-1, factor)
        if name == "pue":  # a ratio of energies, not a mean of ratios (ISO/IEC 30134-2)
            out[name] = ("time", _pue(ds, factor), var.attrs)
            continue
        out[name] = ("time", blocks.mean(axis=1), var.attrs)
        out[f"{name}_min"] = (
            "time",
            blocks.min(axis=1),
            {**var.attrs, "cell_methods": "time: minimum"},
        )
        out[f"{name}_max"] = (
            "time",
            blocks.max(axis=1),
            {**var.attrs, "cell_methods": "time: maximum"},
        )
    return out


def _states(var: xr.DataArray, factor: int) -> dict[str, tuple]:
    """Most common state of each interval (ties to the lower code), and the share of each state.

    One ``bincount`` over (interval, state) pairs counts every interval's states at once.
    """
    codes = np.asarray(var.attrs["flag_values"])
    index = np.searchsorted(codes, var.values)
    n = index.size // factor
    pairs = np.arange(index.size) // factor * codes.size + index
    counts = np.bincount(pairs, minlength=n * codes.size).reshape(n, codes.size)
    mode = codes[counts.argmax(axis=1)].astype(var.dtype)
    out = {var.name: ("time", mode, {**var.attrs, "cell_methods": "time: mode"})}
    for meaning, count in zip(var.attrs["flag_meanings"].split(), counts.T, strict=True):
        out[f"share_{meaning}"] = ("time", count / factor, variables.attrs(f"share_{meaning}"))
    return out


def _pue(ds: xr.Dataset, factor: int) -> np.ndarray:
    """PUE of each resampled interval: its energies' ratio, or its hour's PUE when shorter."""
    if factor * step_seconds(ds) < 3600.0:
        return ds["pue"].values[::factor]
    return ds["facility_power"].values.reshape(-1, factor).sum(axis=1) / ds[
        "it_power"
    ].values.reshape(-1, factor).sum(axis=1)


def local_hours(ds: xr.Dataset) -> np.ndarray:
    """Hour of day (0-23) of each sample on the site's local clock (``site_timezone``)."""
    local = pd.DatetimeIndex(ds["time"].values).tz_localize("UTC")
    return local.tz_convert(ds.attrs.get("site_timezone", "UTC")).hour.to_numpy()


def diurnal_throughput(ds: xr.Dataset) -> np.ndarray:
    """Hour-of-day (local clock time) tokens per second of running time.

    Each interval's running time is recovered exactly from its throughput and clock:
    ``throughput = running share · nominal rate / stretch(clock)``. Returns 24 values, hour 0
    first; NaN for an hour with no running time.
    """
    share = ds.attrs["compute_share"]
    nominal = ds.attrs["token_rate"]
    clock = ds["clock_factor"].values.astype(np.float64)
    tokens = ds["throughput"].values
    stretch = step_stretch(clock, ds.attrs["clock_lock"], share)
    running = tokens * stretch / nominal
    hours = local_hours(ds)
    with np.errstate(invalid="ignore"):
        return np.bincount(hours, tokens, 24) / np.bincount(hours, running, 24)


def diurnal_swing(ds: xr.Dataset) -> tuple[float, int | None]:
    """Peak-to-trough of :func:`diurnal_throughput` over its mean, and the hour of the trough;
    NaN and None for a run with no training time (all start-up, or failed throughout)."""
    profile = diurnal_throughput(ds)
    if not np.isfinite(profile).any():
        return float("nan"), None
    swing = (np.nanmax(profile) - np.nanmin(profile)) / np.nanmean(profile)
    return float(swing), int(np.nanargmin(profile))


def offline_page(title: str, style: str, body: str) -> str:
    """A whole HTML report page that opens offline: plotly.js embedded once in its head (each
    figure of ``body`` written with ``include_plotlyjs=False``), ``style`` its CSS."""
    from plotly.offline import get_plotlyjs  # only where a report is written: plotly is slow

    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{style}</style>"
        f'<script type="text/javascript">{get_plotlyjs()}</script></head>'
        f"<body>{body}</body></html>"
    )


class Pieces:
    """A run's chunks (consecutive Datasets on ``time``, of any lengths) as pieces of at least
    ``least`` samples: each piece is given with the run's first sample after it, so that
    what reads one sample ahead (the states either side of an interval) is exact."""

    def __init__(self, names: tuple[str, ...], least: int) -> None:
        self.names, self.least, self.at = names, max(least, 2), 0
        self.held: list[dict[str, np.ndarray]] = []

    def feed(self, ds: xr.Dataset) -> Iterator[tuple[dict[str, np.ndarray], int, dict | None]]:
        """The pieces ``ds`` completes: (columns, index of its first sample, the next sample's
        columns). A piece within ``ds`` is a view of its arrays; only one that begins with
        the samples held from before is copied."""
        columns = {n: ds[n].values for n in self.names if n in ds}
        columns["time"] = ds["time"].values
        held, self.held = self.held, [*self.held, columns]
        size = sum(c["time"].size for c in self.held)
        if size <= self.least:  # (so ``ds`` has samples: those held are at most ``least``)
            return
        head = {n: np.concatenate([c[n] for c in held]) for n in columns} if held else None
        h = size - columns["time"].size  # the samples held before ``ds``

        def part(lo: int, hi: int) -> dict[str, np.ndarray]:  # samples lo to hi of the joined
            if lo >= h:
                return _rows(columns, lo - h, hi - h)
            if hi <= h:
                return _rows(head, lo, hi)
            return {n: np.concatenate((head[n][lo:], v[: hi - h])) for n, v in columns.items()}

        self.held = [{n: v[-1:] for n, v in columns.items()}]
        yield from self._pieces(size - 1, part, self.held[0])

    def finish(self) -> Iterator[tuple[dict[str, np.ndarray], int, dict | None]]:
        """The last piece, to the run's end."""
        if self.held:
            names = self.held[0]
            joined = {n: np.concatenate([c[n] for c in self.held]) for n in names}
            self.held = []
            size = joined["time"].size
            yield from self._pieces(size, lambda lo, hi: _rows(joined, lo, hi), None)

    def _pieces(
        self, size: int, part: Callable[[int, int], dict], after: dict | None
    ) -> Iterator[tuple[dict, int, dict | None]]:
        """The ``size`` samples ``part(lo, hi)`` gives in cache-sized pieces
        (:data:`BLOCK_STEPS`, or ``least`` where more; the last takes the rest), each with the
        sample after it: what is measured over a chunk then holds temporaries of a piece, not
        of the chunk."""
        step = max(BLOCK_STEPS, self.least)
        cuts = [*range(0, size - step, step)[1:], size] if size > step else [size]
        start = 0
        for stop in cuts:
            yield part(start, stop), self.at + start, part(stop, stop + 1) if stop < size else after
            start = stop
        self.at += size


def _rows(columns: dict[str, np.ndarray], lo: int, hi: int) -> dict[str, np.ndarray]:
    """Samples ``lo`` to ``hi`` of each column (views)."""
    return {n: v[lo:hi] for n, v in columns.items()}


BLOCK_STEPS = 1 << 17  # samples a block of an in-memory run holds (1 MB of float64)


def blocks(
    ds: xr.Dataset, names: tuple[str, ...], least: int = 0
) -> Iterator[tuple[dict[str, np.ndarray], int, dict | None]]:
    """A whole run's samples as :class:`Pieces` gives a streamed run's: blocks of ``names``
    (those the Dataset has) and ``time``, each at least ``least`` samples but the last, with
    the index of its first sample and the run's next sample (None after the last).

    Blocks are cache-sized (:data:`BLOCK_STEPS`), so that what is measured over them takes time
    and memory in proportion to the run's length; a variable held lazily (the plant's, PUE) is
    read one block at a time, never whole.
    """
    size, step = ds.sizes["time"], max(BLOCK_STEPS, least)
    held = {n: ds.variables[n] for n in (*names, "time") if n in ds.variables}
    for at in range(0, size, step):
        deadline.check()  # a request's measures stop at its deadline (powermodel.deadline)
        stop = min(at + step, size)
        read = {n: v[at : stop + 1].values for n, v in held.items()}
        columns = {n: v[: stop - at] for n, v in read.items()}
        yield columns, at, ({n: v[-1:] for n, v in read.items()} if stop < size else None)


class StreamedMetrics:
    """:func:`metrics` accumulated over a run's pieces, without the run held whole.

    Feed each piece (:class:`Pieces` of a streamed run, :func:`blocks` of one in memory) in
    order, then :meth:`result` with the run's scalars and events (``goodput``,
    ``effective_training_time``, ``chiller_hours``, ``event_kind``, ``event_category``) and its
    attrs. Peaks, minima, 5-s swings (wholly in training too), 1-min ramps and counts are the
    same to the bit however the run is cut; energies and means are sums added piece by piece,
    so two cuttings differ within 1e-12 relative (numpy's pairwise sums split differently).
    """

    NAMES = (
        "it_power",
        "facility_power",
        "cooling_power",
        "water_use",
        "clock_factor",
        "throughput",
        "grid_power",
        "grid_voltage",
        "grid_reactive_power",
        "job_state",
    )

    def __init__(self, dt: float, size: int, attrs: dict) -> None:
        self.dt, self.size, self.attrs = dt, size, attrs
        self.sums: dict[str, float] = {}
        self.peaks: dict[str, float] = {}
        self.lows: dict[str, float] = {}
        self.seen: set[str] = set()
        resolved_swing = swing_resolved(dt)
        n = round(SWING_WINDOW / dt)
        self.swings = {
            name: Windowed(signal.rolling_range, n) if resolved_swing else None
            for name in ("it_power", "grid_power", "grid_voltage")
        }
        self.inside = Windowed(signal.rolling_mean, n) if resolved_swing else None
        self.running = Neighbours()
        self.minute = (
            ramp_stages(signal.samples(60.0, dt)) if size * dt >= 120.0 and dt <= 12.0 else {}
        )

    def least(self) -> int:
        """The samples a piece needs at least: two of the 1-min ramps' windows."""
        return 2 * round(60.0 / self.dt) + 2

    def _add(self, key: str, values: np.ndarray) -> None:
        self.sums[key] = self.sums.get(key, 0.0) + float(np.sum(values))

    def _energy(self, key: str) -> float:
        """The energy of a power summed over the run. [MWh]"""
        return self.sums[key] * self.dt / 3600.0

    def _mean(self, key: str) -> float:
        """A variable's mean over the run, from its sum."""
        return self.sums[key] / self.size

    def _extremes(self, key: str, values: np.ndarray) -> None:
        self.peaks[key] = max(self.peaks.get(key, -np.inf), float(np.max(values)))
        self.lows[key] = min(self.lows.get(key, np.inf), float(np.min(values)))

    def feed(self, columns: dict[str, np.ndarray], at: int, after: dict | None) -> None:
        """Take the run's samples from ``at`` (a :class:`Pieces` or :func:`blocks` piece)."""
        self.seen |= set(columns)
        for name in ("it_power", "facility_power", "cooling_power", "grid_power"):
            if name in columns:
                self._add(name, columns[name])
                self._extremes(name, columns[name])
        if "grid_reactive_power" in columns:
            self._add("grid_reactive_power", columns["grid_reactive_power"])
        if "facility_power" in columns:
            self._add("water_use", columns["water_use"].astype(np.float64))
            clock = columns["clock_factor"].astype(np.float64)
            stretch = step_stretch(clock, self.attrs["clock_setpoint"], self.attrs["compute_share"])
            self._add("throughput", columns["throughput"])
            # tokens had the plant held its supply setpoint: each interval's throughput times
            # the ratio of its step stretch to the stretch at the setpoint
            self._add("nominal", columns["throughput"] * stretch)
        self._swings(columns, at, after)
        if "grid_power" in columns:
            for name, stage in self.minute.items():
                value = stage(np.asarray(columns["grid_power"], np.float64), at)
                self._extremes(f"ramp_{name}", value)

    def _swings(self, columns: dict[str, np.ndarray], at: int, after: dict | None) -> None:
        swings = {}
        for name in ("it_power", "grid_power", "grid_voltage"):
            if name in columns and self.swings[name] is not None:
                swings[name] = self.swings[name](columns[name], at)
                self._extremes(f"swing_{name}", swings[name])
        if "grid_power" not in columns or self.inside is None:
            return
        running = columns["job_state"] == State.RUNNING
        ahead = None if after is None else after["job_state"] == State.RUNNING
        # running with running samples either side (metrics); the run's ends as they are
        before, behind = self.running(running, ahead, end=True)
        inside = running & before & behind
        whole = self.inside(inside, at) == 1.0
        swing = swings["grid_power"][whole]  # the grid's swings, of windows wholly in training
        if swing.size:
            self._extremes("swing_training", swing)

    def result(self, totals: xr.Dataset) -> dict[str, Any]:
        """The :func:`metrics` dict of the whole run, from its scalars and events
        (``totals``)."""
        dt = self.dt
        nan = float("nan")
        kinds = totals["event_kind"].values if "event_kind" in totals else np.array([])
        unexpected = kinds == "unexpected"
        categories, counts = np.unique(
            totals["event_category"].values[unexpected], return_counts=True
        )
        it_mwh = self._energy("it_power")
        out: dict[str, Any] = {
            "it_energy_mwh": it_mwh,
            "it_mean_mw": self._mean("it_power"),
            "it_peak_mw": self.peaks["it_power"],
            "it_min_mw": self.lows["it_power"],
            "it_swing_5s_mw": self.peaks.get("swing_it_power", nan),
            "unexpected_interruptions": int(unexpected.sum()),
            "planned_interruptions": int((kinds == "planned").sum()),
            "interruptions_by_category": dict(
                zip(categories.tolist(), counts.tolist(), strict=True)
            ),
            "effective_training_time": float(totals["effective_training_time"]),
            "tokens": float(totals["goodput"]),
        }
        if "facility_power" in self.sums:
            facility_mwh = self._energy("facility_power")
            nominal = self.sums["nominal"]
            out |= {
                "facility_energy_mwh": facility_mwh,
                "cooling_energy_mwh": self._energy("cooling_power"),
                "facility_peak_mw": self.peaks["facility_power"],
                "pue": facility_mwh / it_mwh,
                "wue_l_per_kwh": self.sums["water_use"] * dt / (it_mwh * 1000.0),
                "chiller_hours": float(totals["chiller_hours"]),
                "throughput_lost_to_heat": 1.0 - self.sums["throughput"] / nominal
                if nominal
                else 0.0,
            }
        if "grid_power" in self.sums:
            out |= self._grid(totals)
        out["not_measured"] = {
            key: _why_not_measured(key, dt)
            for key, value in out.items()
            if isinstance(value, float) and not np.isfinite(value)
        }
        return out

    def _grid(self, totals: xr.Dataset) -> dict[str, float]:
        """The ``grid_`` figures of :func:`metrics`, from the sums and extremes."""
        nan = float("nan")
        energy = self._energy("grid_power")
        tokens = float(totals["goodput"]) if "goodput" in totals else 0.0
        mean, peak = self._mean("grid_power"), self.peaks["grid_power"]
        minute = _ramp_readings(
            {k: (self.peaks[f"ramp_{k}"], self.lows[f"ramp_{k}"]) for k in self.minute}
        )
        out = {
            "grid_energy_mwh": energy,
            "grid_mean_mw": mean,
            "grid_peak_mw": peak,
            "grid_min_mw": self.lows["grid_power"],
            "grid_load_factor": mean / peak,
            "grid_swing_5s_mw": self.peaks.get("swing_grid_power", nan),
            "grid_swing_5s_training_mw": self.peaks.get("swing_training", nan),
            **{f"grid_ramp_1min_{k}_mw": v for k, v in minute.items()},
            "grid_energy_per_token_j": energy * 3.6e9 / tokens if tokens else nan,
        }
        if "grid_voltage" in self.seen:
            out["grid_voltage_swing_5s_pct"] = 100.0 * self.peaks.get("swing_grid_voltage", nan)
        if "grid_reactive_power" in self.sums:
            out["grid_reactive_mean_mvar"] = self._mean("grid_reactive_power")
        return out
