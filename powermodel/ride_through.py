"""How a simulated site rode through its grid disturbances: per disturbance, overall, and
against the ride-through requirements of ``presets/requirements.toml`` (or a file of one's own).

Dataset in, tables out. The disturbances and the site's answer are simulated by
:mod:`powermodel.engine.disturbances`; here they are measured as a planner would: the load the
connection lost and for how long, how it came back, the energy and fuel on backup, the training
lost, each sag read both ways (worst phase and positive sequence) against the supplies' curve.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr
from pydantic import Field, StrictBool, ValidationError, model_validator

from powermodel.dynamic_model import fit_site
from powermodel.engine import disturbances
from powermodel.engine.disturbances import EVENT_CODES
from powermodel.engine.timeline import GRID_CAUSE
from powermodel.errors import DataFileError, PowerModelError
from powermodel.models import disturbance as dm
from powermodel.models.events import State
from powermodel.models.loadmodel import perc1_response
from powermodel.models.signal import range_reduce
from powermodel.scenario import Scenario, parse_toml
from powermodel.scenario.base import Duration, Name, Section, Text, packaged
from powermodel.scenario.facility import REQUIREMENTS_FILE, CurveDuration, check_curve, curve_steps
from powermodel.scenario.root import explain

__all__ = [
    "BACK",
    "Requirement",
    "check",
    "event_response",
    "load_requirements",
    "report",
    "site_model",
    "summary",
]

MAX_FILE_BYTES = 1 << 20  # a requirements file: tables of a few lines each
ON_BACKUP, NO_POWER = (EVENT_CODES.index(c) for c in ("on backup", "servers without power"))
BACK = 0.9  # the load is back when the grid carries this share of it again [A]


class Requirement(Section):
    """A grid requirement through disturbances, with its source and status."""

    name: Name
    title: Text
    source: Text
    status: Literal["proposal", "in force", "quoted", "study assumption"]
    kind: Literal["ride_through", "load_loss"]
    applies: Text = ""
    verified: StrictBool = Field(description="Its numbers were read from the primary text.")
    voltage_curve: list[tuple[CurveDuration, float]] | None = Field(
        None,
        description="The ride-through region's lower edge, as [duration [s], voltage [p.u.]] "
        "steps (the last duration inf): a sag on or above it must not drop the load.",
    )
    measure: Literal["worst_phase", "positive_sequence"] = "worst_phase"
    frequency_window: tuple[float, float] | None = Field(
        None, description="Frequencies the load must ride through. [Hz]"
    )
    return_time: Duration | None = Field(
        None, ge=0, description="The load back within this of the disturbance's end. [s]"
    )
    limit: float | None = Field(None, gt=0, description="A load-loss limit. [MW]")
    choices: Text = ""

    @model_validator(mode="after")
    def _honest(self) -> Requirement:
        numbers = [self.voltage_curve, self.frequency_window, self.return_time]
        if self.voltage_curve is not None:
            check_curve(self.voltage_curve)
        if self.kind == "load_loss" and self.limit is None:
            raise ValueError(f"requirement {self.name}: a load_loss requirement needs its limit")
        if self.status == "in force" and not self.verified and any(n is not None for n in numbers):
            raise ValueError(
                f"requirement {self.name}: its curve is marked 'in force' but was not verified "
                "from a primary text; read it from the source and set verified = true, or mark "
                "it a proposal"
            )
        if self.status == "in force" and not self.verified and self.limit is not None:
            raise ValueError(
                f"requirement {self.name}: its limit is marked 'in force' but was not verified "
                "from a primary text; verify it, or give another status"
            )
        return self

    @property
    def judgeable(self) -> bool:
        if self.kind == "load_loss":
            return True
        return any(n is not None for n in (self.voltage_curve, self.frequency_window))


def load_requirements(source: str | Path | None = None) -> list[Requirement]:
    """The shipped requirements, or those of a TOML file (a table per requirement)."""
    if source is None:
        text, where = packaged(REQUIREMENTS_FILE).read_text(), REQUIREMENTS_FILE
    else:
        path = Path(source)
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                raise DataFileError(
                    f"requirements file {path}: {path.stat().st_size:,} bytes, more than a "
                    f"requirements file holds ({MAX_FILE_BYTES:,}): give the requirements only"
                )
            text, where = path.read_text(encoding="utf-8"), str(path)
        except (OSError, UnicodeDecodeError) as exc:
            raise DataFileError(f"requirements file {path}: cannot read it ({exc})") from None
    raw = parse_toml(text, where)
    out = []
    for name, table in raw.items():
        if not isinstance(table, dict):
            raise DataFileError(f"{where}: {name} must be a table of a requirement's keys")
        try:
            out.append(Requirement.model_validate({"name": name, **table}))
        except ValidationError as exc:
            raise DataFileError(f"{where}: requirement {name}: {explain(exc)}") from None
    return out


def _scenario(ds: xr.Dataset) -> Scenario:
    return Scenario.model_validate(json.loads(ds.attrs["scenario"]))


def _seconds(ds: xr.Dataset, times: np.ndarray) -> np.ndarray:
    """Instants of a run as seconds from its start."""
    return (times - np.datetime64(ds["time"].values[0])) / np.timedelta64(1, "s")


def _require(ds: xr.Dataset) -> None:
    if "disturbance_time" not in ds:
        raise PowerModelError(
            "this run has no grid disturbance: give [disturbance] (a shipped sequence or sags) "
            "in the scenario"
        )


def report(ds: xr.Dataset) -> pd.DataFrame:
    """Each disturbance and what the site did: its residual voltage at the connection and at
    the supplies, both readings against the supplies' immunity curve, what the UPS did, the
    load the connection lost [MW] and how long until it was back: the grid carrying ``BACK``
    of the site's load and its servers powered [s] (a crashed job's restart follows, in the
    job's states and :func:`summary`'s tokens)."""
    _require(ds)
    scenario = _scenario(ds)
    chain = scenario.site_response()
    curve = chain.curve("immunity")
    dt = float(ds.attrs["dt"])
    sag = ds["disturbance_kind"].values == "sag"
    duration = ds["disturbance_duration"].values
    worst, positive = ds["disturbance_worst"].values, ds["disturbance_positive"].values
    table = pd.DataFrame(
        {
            "time": ds["disturbance_time"].values,
            "kind": ds["disturbance_kind"].values,
            "duration [s]": duration,
            "connection worst phase [pu]": ds["disturbance_connection_worst"].values,
            "connection positive sequence [pu]": ds["disturbance_connection_positive"].values,
            "supplies worst phase [pu]": worst,
            "supplies positive sequence [pu]": positive,
            "frequency [Hz]": ds["disturbance_frequency"].values,
            "immunity, worst phase": _verdict(sag, worst, duration, curve),
            "immunity, positive sequence": _verdict(sag, positive, duration, curve),
            "UPS left the grid": ds["disturbance_transferred"].values,
            "latched on backup": ds["disturbance_latched"].values,
            "servers lost power": ds["disturbance_dropped"].values,
        }
    )
    before, lost, back = _losses(ds, dt)
    table["load before [MW]"] = before
    table["load lost [MW]"] = lost
    table["back after [s]"] = back
    return table


def _verdict(sag: np.ndarray, v: np.ndarray, d: np.ndarray, curve: tuple) -> np.ndarray:
    ok = np.zeros(sag.size, bool)
    ok[sag] = dm.tolerated(v[sag], d[sag], *curve)
    return np.where(sag, np.where(ok, "rides through", "trips"), "").astype(object)


def _losses(ds: xr.Dataset, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per disturbance: the grid's load in the second before [MW], the most it lost from then
    until the disturbance's effects end [MW], and the time from its start until the grid
    carries ``BACK`` of the site again and the servers have power [s] (NaN: not by the run's
    end). One the site rode through (the UPS stayed on the grid, the servers kept their power)
    lost nothing and was back at once: what the grid's load did meanwhile (the training swing
    over a long frequency excursion) is not its doing."""
    grid = ds["grid_power"].values
    event = ds["grid_event"].values
    share = ds["grid_share"].values
    times = _seconds(ds, ds["disturbance_time"].values)
    n = grid.size
    # every disturbance at once, each step of the run read a bounded number of times: a
    # thousand disturbances over millions of steps cost what a few do
    first = np.clip(np.floor(times / dt).astype(np.int64), 0, n - 1)
    ahead = np.maximum(first - max(int(round(1.0 / dt)), 1), 0)
    # the second before: its mean (at the run's first step, that step)
    count = np.maximum(first - ahead, 1)
    before = range_reduce(np.add, grid, ahead, ahead + count) / count
    settle = first + np.ceil(ds["disturbance_duration"].values / dt).astype(np.int64) + 1
    on = np.flatnonzero((share >= BACK) & (event != NO_POWER))
    found = np.searchsorted(on, settle)  # the first step back from the settle on
    seen = found < on.size
    end = np.append(on, n)[found]
    reach = np.minimum(np.maximum(end, settle) + 1, n)
    lost = np.maximum(before - range_reduce(np.minimum, grid, first, reach), 0.0)
    back = np.where(seen, (end - first) * dt, math.nan)
    acted = ds["disturbance_transferred"].values | ds["disturbance_dropped"].values
    return before, np.where(acted, lost, 0.0), np.where(acted, back, 0.0)


def summary(ds: xr.Dataset) -> dict[str, float]:
    """The disturbances, those the site rode through (the UPS on the grid, the servers
    powered), and their cost: the largest load lost at once [MW], the time the site spent off
    the grid or without power [s], the energy on the UPS batteries and the generators [MWh],
    fuel [L], the recharge's energy from the grid [MWh], the return ramp seen [s], the training
    work lost in crashes [s] and the tokens not trained because of them."""
    _require(ds)
    scenario = _scenario(ds)
    chain = scenario.site_response()
    dt = float(ds.attrs["dt"])
    table = report(ds)
    event = ds["grid_event"].values
    generator = ds["generator_power"].values
    crashed = ds["event_cause"].values == GRID_CAUSE if "event_cause" in ds else np.zeros(0, bool)
    lost_work = float(ds["event_lost_work"].values[crashed].sum()) if crashed.size else 0.0
    return {
        "disturbances": int(len(table)),
        "ridden through": int(
            np.count_nonzero(~(table["UPS left the grid"] | table["servers lost power"]))
        ),
        # no disturbance loses no load: the largest of none is 0 MW, not unknown
        "largest load lost [MW]": float(table["load lost [MW]"].max()) if len(table) else 0.0,
        "off the grid or without power [s]": float(
            np.count_nonzero(np.isin(event, (ON_BACKUP, NO_POWER))) * dt
        ),
        "servers without power [s]": float(np.count_nonzero(event == NO_POWER) * dt),
        "energy on UPS batteries [MWh]": float(ds["ups_battery_power"].values.sum() * dt / 3600),
        "energy on generators [MWh]": float(generator.sum() * dt / 3600),
        "generator fuel [L]": float(generator.sum() * dt / 3600 * chain.fuel),
        "recharge energy [MWh]": float(ds["recharge_power"].values.sum() * dt / 3600),
        "return ramp [s]": _ramp(ds["grid_share"].values, dt),
        "crashes": int(np.count_nonzero(crashed)),
        "training lost in crashes [s]": lost_work,
        "tokens not trained": _tokens_lost(ds, dt, crashed, lost_work),
    }


def _ramp(share: np.ndarray, dt: float) -> float:
    """The longest rise of the grid's share from near none (1 %) to near all (99 %) [s]; NaN
    where the share never fell to near none (the site never left the grid)."""
    low = np.flatnonzero(share <= 0.01)
    if low.size == 0:
        return math.nan
    last = np.r_[low[np.flatnonzero(np.diff(low) > 1)], low[-1]]  # each stretch's last step
    high = np.flatnonzero(share >= 0.99)
    found = np.searchsorted(high, last)
    risen = found < high.size
    return float(((high[found[risen]] - last[risen]) * dt).max(initial=0.0))


def _tokens_lost(ds: xr.Dataset, dt: float, crashed: np.ndarray, lost_work: float) -> float:
    """Tokens the crashes cost: the work each threw away and the time from it until its job
    trains again, at that job's token rate (a campus's workloads each at their own)."""
    if not crashed.any():
        return 0.0
    when = _seconds(ds, ds["event_time"].values[crashed])
    lost = ds["event_lost_work"].values[crashed]
    if "event_workload" in ds and "workload_token_rate" in ds:  # a campus: each job its own
        names = list(ds["workload"].values)
        rows = np.array([names.index(w) for w in ds["event_workload"].values[crashed]])
        rates = ds["workload_token_rate"].values[rows]
        states = ds["workload_job_state"].values
    else:
        rows = np.zeros(when.size, np.int64)
        rates = np.full(when.size, float(ds.attrs.get("token_rate", math.nan)))
        states = ds["job_state"].values[None, :]
    k = (when // dt).astype(np.int64)
    down = np.zeros(when.size)
    for row in np.unique(rows):  # each workload that crashed: its steps read once
        mine = rows == row
        running = np.flatnonzero(states[row] == State.RUNNING)
        found = np.searchsorted(running, k[mine], side="right")  # the first after the crash
        down[mine] = (np.append(running, states.shape[1])[found] - k[mine]) * dt
    return float(np.sum((lost + down) * rates))


def check(ds: xr.Dataset, requirements: list[Requirement]) -> pd.DataFrame:
    """Each requirement's verdict on the run: pass, fail, or not judged (with why)."""
    _require(ds)
    table = report(ds)
    # how long the run goes on after each disturbance's end: a return not seen by then is
    # unknown, not late, unless the requirement's return time fits before the run's end
    ends = _seconds(ds, table["time"].to_numpy()) + table["duration [s]"].to_numpy(float)
    remaining = ds.sizes["time"] * float(ds.attrs["dt"]) - ends
    rows = []
    for req in requirements:
        verdict, detail = _judge(req, table, remaining)
        rows.append(
            {
                "requirement": req.name,
                "status": req.status,
                "verdict": verdict,
                "detail": detail,
                "source": req.source,
            }
        )
    return pd.DataFrame(rows)


def _judge(req: Requirement, table: pd.DataFrame, remaining: np.ndarray) -> tuple[str, str]:
    """A requirement's verdict on the disturbances (``remaining``: the run after each one's
    end [s]): pass or fail where the run shows it, "not judged" with the reason where it
    cannot (no disturbance at all, a return the run ends too soon to see)."""
    if table.empty:
        return "not judged", (
            "the run has no disturbance to judge (its frequency stays within the deadband "
            "and it has no sag): give a sequence that disturbs the site"
        )
    if req.kind == "load_loss":
        worst = float(table["load lost [MW]"].max())
        verdict = "pass" if worst <= req.limit else "fail"
        return verdict, (
            f"largest simultaneous loss {worst:,.1f} MW against {req.limit:,.0f} MW "
            f"({worst / req.limit:.0%} of it)"
        )
    if not req.judgeable:
        return "not judged", (
            "the source's curve was not verified and none is shipped: give voltage_curve, "
            "frequency_window and return_time from the primary text in a requirements file"
        )
    must = np.zeros(len(table), bool)
    sag = table["kind"].to_numpy() == "sag"
    if req.voltage_curve is not None:
        column = (
            "connection worst phase [pu]"
            if req.measure == "worst_phase"
            else "connection positive sequence [pu]"
        )
        v = table[column].to_numpy(float)
        duration = table["duration [s]"].to_numpy(float)[sag]
        must[sag] = dm.tolerated(v[sag], duration, *curve_steps(req.voltage_curve))
    if req.frequency_window is not None:
        f = table["frequency [Hz]"].to_numpy(float)
        low, high = req.frequency_window
        must |= ~sag & (f >= low) & (f <= high)
    back = table["back after [s]"].to_numpy(float) - table["duration [s]"].to_numpy(float)
    left = table["UPS left the grid"].to_numpy(bool) | table["servers lost power"].to_numpy(bool)
    unseen = np.zeros(len(table), bool)
    if req.return_time is None:
        failed = must & left
        rule = "stay on the grid"
    else:
        late = back > req.return_time
        # not back by the run's end: late if the return time had passed by then
        unseen = must & left & np.isnan(back) & (remaining < req.return_time)
        failed = must & left & (late | (np.isnan(back) & ~unseen))
        rule = f"come back within {req.return_time:g} s"
    if not must.any():
        return "pass", "no disturbance lay within the requirement's ride-through region"
    if unseen.any() and not failed.any():
        first = table["time"].to_numpy()[unseen][0]
        return "not judged", (
            f"{np.count_nonzero(unseen)} of {np.count_nonzero(must)} disturbances within the "
            f"region were not back by the run's end, less than {req.return_time:g} s after "
            f"them (the first at {pd.Timestamp(first).isoformat()}): lengthen the run"
        )
    if failed.any():
        first = table["time"].to_numpy()[failed][0]
        return "fail", (
            f"{np.count_nonzero(failed)} of {np.count_nonzero(must)} disturbances within the "
            f"region did not {rule} (the first at {pd.Timestamp(first).isoformat()})"
        )
    return "pass", f"all {np.count_nonzero(must)} disturbances within the region did {rule}"


def _normal(ds: xr.Dataset, seconds: float) -> np.ndarray:
    """Up to ``seconds`` of the grid power in normal operation: the end of the longest stretch
    in which no disturbance acts and the job trains (every workload of a campus)."""
    dt = float(ds.attrs["dt"])
    state = (
        ds["workload_job_state"].values if "workload_job_state" in ds else ds["job_state"].values
    )
    calm = (ds["grid_event"].values == 0) & (np.atleast_2d(state) == State.RUNNING).all(axis=0)
    edges = np.flatnonzero(np.diff(np.r_[0, calm.astype(np.int8), 0]))
    if edges.size == 0:
        return np.zeros(0)
    begin, end = edges[::2], edges[1::2]
    longest = int(np.argmax(end - begin))
    stop = int(end[longest])
    return ds["grid_power"].values[max(int(begin[longest]), stop - int(seconds / dt)) : stop]


def event_response(
    ds: xr.Dataset, index: int = 0, before: float = 1.0, after: float = 30.0, step: float = 1e-3
) -> pd.DataFrame:
    """The site at the connection through one disturbance, on a fine step: time [s from the
    disturbance's start], the positive-sequence voltage [p.u.] and frequency [Hz] imposed,
    and what the site draws, P [MW] and Q [Mvar], the UPS recharge [MW] among it; ``after``
    [s] at most, and not past the next disturbance.

    The load's own levels are those of the second before (what a dynamic model scales); the
    disturbance's shares of it on the grid, the recharge after, and the frequency come from the
    same models the run used (:mod:`powermodel.engine.disturbances`), evaluated exactly on the fine
    step. The training swing is left out: the oscillation model carries it
    (:func:`site_model`).
    """
    _require(ds)
    scenario = _scenario(ds)
    r = disturbances.response(scenario)
    if not 0 <= index < r.triggers.time.size:
        raise PowerModelError(
            f"disturbance {index}: the run has {r.triggers.time.size} (0 to "
            f"{r.triggers.time.size - 1})"
        )
    t0 = float(r.triggers.time[index])
    following = r.triggers.time[index + 1 :]
    if following.size:  # up to the next disturbance only: one event's response
        after = min(after, float(following[0] - t0) - step)
    lo = int(math.floor((t0 - before) / step))
    n = int(math.ceil((before + after) / step))
    dt = float(ds.attrs["dt"])
    k = int(t0 // dt)
    ahead = slice(max(k - max(int(round(1.0 / dt)), 1), 0), max(k, 1))
    levels = {
        name: float(np.mean(np.broadcast_to(ds[name].values, ds["time"].shape)[ahead]))
        for name in ("it_power", "facility_loss", "cooling_power", "misc_power")
    }
    it_path = levels["it_power"] + levels["facility_loss"]
    other = levels["cooling_power"] + levels["misc_power"]
    q_total = float(ds["grid_reactive_power"].values[ahead].mean())
    pf = scenario.grid.other_power_factor
    q_other = other * math.sqrt(1.0 - pf * pf) / pf
    o = r.outcome
    s_it = dm.interval_means(dm.on_grid(o.it), lo, n, step, 1.0)
    s_other = dm.interval_means(dm.on_grid(o.other), lo, n, step, 1.0)
    on = 1.0 - dm.interval_means(dm.stretches(o.lost), lo, n, step, 0.0)
    time = (lo + np.arange(n) + 0.5) * step
    # the recharge as the run drew it, held over each of its steps
    recharge = np.interp(
        time, (np.arange(ds.sizes["time"]) + 0.5) * dt, ds["recharge_power"].values
    )
    p = it_path * s_it * on + other * s_other + recharge
    q = (q_total - q_other) * s_it * on + q_other * s_other
    voltage = np.ones(n)
    sag = np.isfinite(r.triggers.readings.connection_positive)
    # each sag's samples [t, t + d), in time order (a later one's over an earlier one's); the
    # few that reach this window only
    lo_i = np.searchsorted(time, r.triggers.time[sag], side="left")
    hi_i = np.searchsorted(time, r.triggers.time[sag] + r.triggers.duration[sag], side="left")
    reaching = np.flatnonzero(hi_i > lo_i)
    residual = r.triggers.readings.connection_positive[sag][reaching]
    for a, b, v in zip(lo_i[reaching], hi_i[reaching], residual, strict=True):
        voltage[a:b] = v
    d = scenario.disturbance
    offset = (scenario.disturbance_start() - scenario.simulation.start).total_seconds()
    ft = offset + np.array([x for x, _ in d.frequency], float)
    ff = np.array([y for _, y in d.frequency], float)
    frequency = (
        np.interp(time, ft, ff, left=d.nominal_frequency)
        if ft.size
        else np.full(n, d.nominal_frequency)
    )
    return pd.DataFrame(
        {
            "time": time - t0,
            "voltage": voltage,
            "frequency": frequency,
            "p": p,
            "q": q,
            "recharge": recharge,
        }
    )


def site_model(
    ds: xr.Dataset, index: int = 0, after: float = 30.0, bus: int = 1, load_id: str = "1"
):
    """The planners' models of the site (:func:`powermodel.dynamic_model.fit_site`): a
    PERC1-style load fitted to its response to disturbance ``index``, and RATLLE's square
    oscillation fitted to ten minutes of its grid power in normal operation (:func:`_normal`);
    with the re-simulated errors and the files' text.

    PERC1 cannot draw more than it drew before: it is fitted to the response less the UPS
    recharge, and the comparison gives its error both against that and against the whole
    response, recharge included (what the recharge costs the model)."""

    response = event_response(ds, index, after=after)
    whole = response["p"].to_numpy()
    response["p"] = whole - response["recharge"].to_numpy()
    swing = _normal(ds, 600.0)
    dt = float(ds.attrs["dt"])
    columns = [response[c].to_numpy() for c in ("time", "voltage", "frequency", "p", "q")]
    rows = []
    try:
        fit = fit_site(*columns, swing=swing, swing_dt=dt, bus=bus, load_id=load_id)
    except PowerModelError as exc:  # a swing that is not periodic: the load model alone
        fit = fit_site(*columns, bus=bus, load_id=load_id)
        rows.append([f"P swing (square oscillation): not fitted, {exc}", np.nan, np.nan])
    p0 = float(columns[3][0])
    modelled, _ = perc1_response(*columns[:3], p0, float(columns[4][0]), fit.perc1)
    error = float(np.sqrt(np.mean((modelled - whole) ** 2)))
    rows.append(["P after the sag, recharge included", error, error / p0])
    extra = pd.DataFrame(rows, columns=fit.comparison.columns)
    return replace(fit, comparison=pd.concat([fit.comparison, extra], ignore_index=True))
