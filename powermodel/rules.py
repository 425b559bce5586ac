"""Utility rules as measurement chains, and checking a profile against them.

A rule is data (``presets/rules.toml`` or a user TOML file): signal, averaging, band, window,
statistic, direction, limit and reference. :func:`check` measures a Dataset (simulated, or a
trace read by :func:`read_trace`) the way the rule says, reports pass or fail with the worst value
and when, and attributes each violation to what caused it from the job's state.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr
from pydantic import Field, ValidationError, field_validator, model_validator

from powermodel import variables
from powermodel.analysis import (
    RAMPS,
    Chained,
    Filtered,
    Neighbours,
    RollingMean,
    Windowed,
    blocks,
    ramp_stages,
    step_seconds,
)
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.iotools import is_file, read_text
from powermodel.iotools.trace import read_trace  # noqa: F401  (rules.read_trace, as before)
from powermodel.models import signal
from powermodel.models.events import STATE_RANK, State
from powermodel.output import check_folder, staged
from powermodel.scenario import Scenario, format_duration, parse_duration, parse_toml, shorten
from powermodel.scenario.base import DAY, Duration, Section, packaged
from powermodel.scenario.root import explain

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "by_cause",
    "CAUSES",
    "check",
    "check_each",
    "check_violations_path",
    "describe",
    "load_rules",
    "measure",
    "site_rules",
    "read_trace",
    "Refusal",
    "Rule",
    "rule_names",
    "RuleError",
    "RuleResult",
    "shipped",
    "StreamedCheck",
    "summary",
    "violations_table",
    "write_violations",
]

Statistic = Literal["range", "net_change", "rate", "average_slope"]
PER_MINUTE = ("rate", "average_slope")  # statistics read per minute; the others per window

# Causes, strongest first: a window holding several is attributed to the first. A grid
# disturbance (grid_event: the site on backup, coming back, recharging, its servers without
# power) outranks the job's own states, whose ranks follow (powermodel.models.events.STATE_RANK)
CAUSES = (
    "grid disturbance",
    "restart",
    "failure",
    "maintenance",
    "checkpoint",
    "iteration swing",
    "weather",
)
_STATE_CODE = STATE_RANK + 1
UNKNOWN = "unknown"  # a measured trace has no job state


class RuleError(PowerModelError):
    """A rule that cannot be read or a verdict the data cannot support."""


class Rule(Section):
    """One utility rule, stated as a measurement chain."""

    name: str = Field(max_length=200)
    title: str = Field(max_length=1000)
    source: str = Field(max_length=2000)
    status: Literal["proposal", "in force", "quoted"]
    signal: Literal["grid_power", "grid_reactive_power", "facility_power", "it_power"] = (
        "grid_power"
    )
    averaging: Duration | None = Field(None, gt=0, le=DAY, description="Rolling mean first. [s]")
    # bands from a three-hour period (0.1 mHz) to 10 kHz: beyond, no meter measures and the
    # filters' state cannot be solved
    band: tuple[float, float] | None = Field(None, description="Filter band. [Hz]")
    window: Duration = Field(gt=0, le=DAY, description="Window of the statistic. [s]")
    statistic: Statistic
    direction: Literal["up", "down", "both"] = "both"
    limit: float | None = Field(None, gt=0, description="Limit in the statistic's unit.")
    limit_fraction: float | None = Field(None, gt=0, description="Limit over the reference.")
    reference: Literal["registered_demand"] | None = None
    choices: str = Field("", max_length=2000)
    groups: list[str] = Field([], max_length=100)

    @field_validator("band")
    @classmethod
    def _ordered(cls, value: tuple[float, float] | None) -> tuple[float, float] | None:
        if value is not None and not 1e-4 <= value[0] < value[1] <= 1e4:
            raise ValueError(
                f"band must be two increasing frequencies within 0.0001-10000 Hz, got {value}"
            )
        return value

    @model_validator(mode="after")
    def _limited(self) -> Rule:
        if self.limit is None and self.limit_fraction is None:
            raise ValueError("a rule needs limit, limit_fraction or both")
        if self.limit_fraction is not None and self.reference is None:
            raise ValueError("limit_fraction needs a reference (registered_demand)")
        return self

    @property
    def per_minute(self) -> bool:
        return self.statistic in PER_MINUTE

    @property
    def unit(self) -> str:
        """The limit's unit: the signal's own (MW, or Mvar for reactive power), per minute
        for a rate."""
        return variables.attrs(self.signal)["units"] + ("/min" if self.per_minute else "")

    def threshold(self, reference: float | None) -> float:
        """The limit that applies: the lesser of the absolute and the relative one."""
        limits = [] if self.limit is None else [self.limit]
        if self.limit_fraction is not None:
            try:
                known = reference is not None and math.isfinite(reference) and reference > 0
            except (TypeError, OverflowError):
                known = False
            if not known:
                raise RuleError(
                    f"rule {self.name} refers to the registered demand: set "
                    "grid.registered_demand in the scenario (or --registered-demand for a trace)"
                )
            limits.append(self.limit_fraction * reference)
        return min(limits)


def rule_names() -> list[str]:
    """Names of the shipped rules and of their groups."""
    shipped = _shipped()
    groups = {g for r in shipped.values() for g in r.get("groups", [])}
    return sorted(set(shipped) | groups)


def site_rules(scenario: Scenario | None) -> list[Rule]:
    """The rules of the site's utility, as the scenario names them (``grid.rules``; shipped
    names only: a scenario names no rule file), for a command given no ``--rules``. Without
    them (or without a scenario: a measured trace) the refusal says how to choose: each
    utility and its shipped rules."""
    chosen = None if scenario is None else scenario.grid.rules
    if chosen is None:
        by_utility: dict[str, list[str]] = {}
        for name, table in _shipped().items():
            utility = table["title"].split()[0].rstrip(":")  # "ERCOT NPRR1191: ..."
            by_utility.setdefault(utility, []).append(name)
        offered = "; ".join(f"{who}: {', '.join(names)}" for who, names in by_utility.items())
        raise RuleError(
            "no rules to measure by: give --rules with your utility's (" + offered + "; or a "
            ".toml rule file)" + ("" if scenario is None else ", or set grid.rules in the scenario")
        )
    unknown = sorted(set(chosen) - set(rule_names()))
    if unknown:
        raise RuleError(
            f"grid.rules names {', '.join(map(repr, unknown))}, not a shipped rule or group: "
            f"choose from {', '.join(rule_names())} (a rule file is given with --rules)"
        )
    return load_rules(chosen)


def load_rules(names: str | list[str]) -> list[Rule]:
    """Rules by name, group name (``nprr1191``) or TOML file path, comma-separated or listed.
    A shipped rule's or group's name is always the shipped rule, whatever files lie in the
    working folder (as a preset's name is the preset): names checked by :func:`shipped` read
    no file."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise RuleError("no rules given: name one or more of " + ", ".join(rule_names()))
    shipped = _shipped()
    out: dict[str, Rule] = {}
    for name in names:
        if name in shipped:
            tables = {name: shipped[name]}
        else:
            tables = {k: v for k, v in shipped.items() if name in v.get("groups", [])}
        if not tables and (name.endswith(".toml") or is_file(name)):
            tables = _read_rule_file(Path(name))
        if not tables:
            raise RuleError(f"unknown rule {name!r}: choose from {', '.join(rule_names())}")
        for key, table in tables.items():
            if "name" in table:
                raise RuleError(
                    f"rule {key}: a rule is named by its table header [{key}]; remove its "
                    "'name' key"
                )
            try:
                out[key] = Rule.model_validate({**table, "name": key})
            except ValidationError as exc:
                raise RuleError(f"rule {key}: {explain(exc, Rule)}") from None
    return list(out.values())


@lru_cache(maxsize=1)
def _shipped() -> dict[str, dict]:
    """The shipped rules' tables, read once (callers copy what they change)."""
    text = packaged("rules.toml").read_text("utf-8")
    return parse_toml(text, "rules.toml")


def shipped(names: object) -> tuple[str, ...]:
    """Rule and group names that arrive from outside (a page, a link), each checked against
    the shipped set (a name is never read as a file) and given once, in the order given.

    Raises
    ------
    RuleError
        Not a list of names, or one that is not shipped.
    """
    known = set(rule_names())
    if not isinstance(names, list | tuple) or len(names) > len(known):
        raise RuleError(f"rules: give up to {len(known)} names of {', '.join(sorted(known))}")
    unknown = [n for n in names if not isinstance(n, str) or n not in known]
    if unknown:
        raise RuleError(
            f"unknown rule {shorten(unknown[0])}: choose from {', '.join(sorted(known))}"
        )
    return tuple(dict.fromkeys(names))


def _read_rule_file(path: Path) -> dict[str, dict]:
    text = read_text(path, "rule file", RuleError)
    try:
        tables = parse_toml(text, str(path))
    except ScenarioError as exc:
        raise RuleError(str(exc)) from None
    bad = [k for k, v in tables.items() if not isinstance(v, dict)]
    if bad:
        raise RuleError(f"{path}: each rule is a table [name]; {', '.join(bad)} is not")
    return tables


@dataclass
class RuleResult:
    """A rule's verdict on one profile."""

    rule: Rule
    limit: float
    worst: float
    worst_time: np.datetime64
    violations: pd.DataFrame  # start, end, worst, cause (categorical: CAUSES and UNKNOWN)
    days: float
    resolved_to: float | None = None  # Hz: the band is cut there, so a pass is a lower bound
    by_cause: dict[str, int] = field(default_factory=dict)  # violations
    seconds_by_cause: dict[str, float] = field(default_factory=dict)  # time over the limit

    @property
    def passed(self) -> bool:
        return self.violations.empty

    def per_day(self) -> dict[str, float]:
        return {cause: n / self.days for cause, n in self.by_cause.items()}


def check(
    ds: xr.Dataset, rules: list[Rule], registered_demand: float | None = None
) -> list[RuleResult]:
    """Measure a profile by each rule.

    Parameters
    ----------
    ds
        A simulated Dataset or a trace from :func:`read_trace`.
    rules
        From :func:`load_rules`.
    registered_demand
        Overrides the Dataset's ``registered_demand`` attribute. [MW]

    Raises
    ------
    RuleError
        For a verdict the data cannot support: a window or averaging shorter than five steps, a
        band whose low edge lies above half the Nyquist frequency, a missing signal (the first
        such rule, in the order given), or a signal whose every reading is NaN.
    """
    results, refused = _in_blocks(ds, rules, step_seconds(ds), registered_demand, refuse=True)
    if refused:  # found by the measurement itself: every reading missing
        raise RuleError(refused[0].reason)
    return results


@dataclass(frozen=True)
class Refusal:
    """A rule whose verdict the profile cannot support, and why."""

    rule: Rule
    reason: str


def check_each(
    ds: xr.Dataset, rules: list[Rule], registered_demand: float | None = None
) -> tuple[list[RuleResult], list[Refusal]]:
    """:func:`check` rule by rule: the verdicts the profile supports, and the rules it cannot
    judge with the reason, so that one refused rule does not hide the others' results."""
    try:
        dt = step_seconds(ds)
    except PowerModelError as exc:  # no step: no rule can be judged
        return [], [Refusal(rule, str(exc)) for rule in rules]
    return _in_blocks(ds, rules, dt, registered_demand)


def _in_blocks(
    ds: xr.Dataset,
    rules: list[Rule],
    dt: float,
    registered_demand: float | None,
    refuse: bool = False,
) -> tuple[list[RuleResult], list[Refusal]]:
    """:func:`check_each` of a whole profile, measured as a streamed run's chunks are, in
    cache-sized blocks (:func:`powermodel.analysis.blocks`): the same verdicts to the bit, in
    time and memory that grow with the profile's length alone. With ``refuse``, the first rule
    the profile cannot support is raised before any work."""
    attrs = {**ds.attrs, "dt": dt}
    measured = StreamedCheck(rules, ds.sizes["time"], attrs, set(ds.data_vars), registered_demand)
    if refuse and measured.errors:
        raise measured.errors[min(measured.errors)]
    pieces = lambda: blocks(ds, StreamedCheck.NAMES, measured.least())  # noqa: E731
    if "job_state" in ds and np.any(ds["job_state"].values == State.CHECKPOINT):
        # the signals' running medians first (what a checkpoint is held at), so that every
        # rule is measured in one pass: a streamed run finds them after its first pass, from
        # histograms (:func:`_medians`); here np.median of the running samples, one signal's
        # copy at a time, takes a third of the time of those two passes
        running = ds["job_state"].values == State.RUNNING
        medians = {name: _running_median(ds[name].values, running) for name in measured.signals()}
        # a signal with NaN (np.median's is NaN): the histograms' median, NaN ordered past the
        # infinities as a streamed run orders them
        odd = {name for name, median in medians.items() if median is None}
        if odd:
            states = lambda: blocks(ds, ("job_state", *odd), measured.least())  # noqa: E731
            histograms: dict[str, np.ndarray] = {}
            for columns, _, _ in states():
                _histogram(histograms, columns, odd)
            medians.update(_medians(states, histograms, odd))
        measured.use_medians(medians)
    if len(measured.errors) < len(rules):
        for piece in pieces():
            measured.feed(*piece)
    return measured.finish(pieces)


def _running_median(x: np.ndarray, running: np.ndarray) -> float | None:
    """``np.median`` of the running samples, in float64 (as :func:`_medians`); NaN if none;
    None if one is NaN (which :func:`_medians` orders, past the infinities)."""
    values = x[running].astype(np.float64, copy=False)
    if np.isnan(values).any():
        return None
    return float(np.median(values, overwrite_input=True)) if values.size else float("nan")


def _judgeable(
    rule: Rule, names: object, size: int, dt: float, reference: float | None
) -> tuple[float, int]:
    """The limit that applies and the samples a reading looks back over, or why the profile
    (its variables ``names``, ``size`` samples of ``dt``) cannot support a verdict."""
    if rule.signal not in names:
        raise RuleError(f"rule {rule.name} measures {rule.signal}, which the profile lacks")
    limit = rule.threshold(reference)
    _check_band(rule, dt)
    n = signal.samples(rule.window, dt)
    # the samples a reading looks back over: the averaging, then the window (two for the
    # slope of the average); a reading needs all of them, or it measures a partial window
    span = 2 * n if rule.statistic == "average_slope" else n
    lookback = span + (signal.samples(rule.averaging, dt, "averaging") if rule.averaging else 0)
    if lookback >= size:  # refused before any work: the window's arrays would be the largest
        raise RuleError(
            f"rule {rule.name} looks at {format_duration(lookback * dt)} at a time, longer "
            f"than the profile ({format_duration(size * dt)}): check a longer run or trace"
        )
    return limit, lookback


LABELS = np.array([*CAUSES, UNKNOWN], dtype=object)


def _runs(value: np.ndarray, cause: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The violations: runs of samples over the limit with one cause (``cause`` -1 under it),
    as their starts and stops (indices) and the worst ``value`` of each."""
    bounds = np.concatenate(([0], np.flatnonzero(cause[1:] != cause[:-1]) + 1, [cause.size]))
    over = np.flatnonzero(cause[bounds[:-1]] >= 0)
    start, stop = bounds[over], bounds[over + 1]
    return start, stop, signal.segment_max(value, start, stop)


def _table(start: np.ndarray, end: np.ndarray, worst: np.ndarray, code: np.ndarray) -> pd.DataFrame:
    """The violations table: start, end, worst, cause (from its code, a categorical: with a
    violation every iteration, a week holds hundreds of thousands)."""
    cause = pd.Categorical.from_codes(code, categories=LABELS)
    return pd.DataFrame({"start": start, "end": end, "worst": worst, "cause": cause})


def _result(
    rule: Rule,
    limit: float,
    worst: tuple[float, np.datetime64],
    violations: tuple[np.ndarray, ...],
    counts: np.ndarray,
    size: int,
    dt: float,
) -> RuleResult:
    """A rule's verdict from its ``violations`` (start, end, worst value and cause code of
    each) and its samples over the limit by cause (``counts``)."""
    resolved = signal.resolved(dt)
    runs = np.bincount(violations[3], minlength=len(LABELS))
    order = sorted(np.flatnonzero(runs), key=lambda c: (-runs[c], c))  # most frequent first
    return RuleResult(
        rule=rule,
        limit=limit,
        worst=worst[0],
        worst_time=worst[1],
        violations=_table(*violations),
        days=size * dt / 86400.0,
        resolved_to=resolved if rule.band and rule.band[1] > resolved else None,
        by_cause={str(LABELS[c]): int(runs[c]) for c in order},
        seconds_by_cause={str(LABELS[c]): float(counts[c] * dt) for c in np.flatnonzero(counts)},
    )


def measure(x: np.ndarray, rule: Rule, dt: float) -> np.ndarray:
    """The rule's statistic at every sample, signed so that larger is worse. [rule.unit]"""
    return _signed(_statistic(x, rule, dt), rule)


def _signed(stat: np.ndarray, rule: Rule) -> np.ndarray:
    """A new array of the statistic, signed so that larger is worse."""
    if rule.statistic == "range" or rule.direction == "both":
        return np.abs(stat)
    return stat.copy() if rule.direction == "up" else -stat


def _statistic(x: np.ndarray, rule: Rule, dt: float) -> np.ndarray:
    """The rule's statistic at every sample, before its direction. [rule.unit]"""
    if rule.averaging:
        x = signal.rolling_mean(x, signal.samples(rule.averaging, dt, "averaging"))
    if rule.band:
        _check_band(rule, dt)
        x = signal.band(x, dt, *rule.band)
    # the ramp readings of analysis.ramps; "rate" is the net change per minute
    stat = RAMPS["net_change" if rule.statistic == "rate" else rule.statistic](
        x, signal.samples(rule.window, dt)
    )
    if rule.per_minute:
        stat = stat * 60.0 / rule.window
    return stat


def _attribute(
    cause: np.ndarray,
    over: np.ndarray,
    limit: float,
    held: Callable[[], np.ndarray],
    rest: Callable[[], np.ndarray],
) -> np.ndarray:
    """Cause code (index into ``CAUSES``, or of ``UNKNOWN``) of each sample ``over`` the limit.

    ``cause`` is the strongest job event within the statistic's reach before the sample.
    Checkpoints are short and frequent, so a window often holds one beside an iteration swing
    that violates on its own: the checkpoint is blamed only if the sample would pass with the
    checkpoint stalls ``held`` at the running median. Running throughout, the iteration swing
    is blamed if the signal less the cooling plant (``rest``) violates too, the weather (the
    plant's response) if not. ``held`` and ``rest`` are read only when a sample needs them.
    """
    checkpoint = over & (cause == CAUSES.index("checkpoint"))
    if checkpoint.any():
        anyway = checkpoint & (held() > limit)
        cause = np.where(anyway, CAUSES.index("iteration swing"), cause)
    running = over & (cause == CAUSES.index("iteration swing"))
    if running.any():
        weather = running & (rest() <= limit)
        cause = np.where(weather, CAUSES.index("weather"), cause)
    return cause


def _warm_up(ds: xr.Dataset | dict, dt: float) -> int:
    """Samples after a (re)start in which the dies still warm: three of the GPU's thermal time
    constants, from the scenario in the attrs (none for a measured trace)."""
    try:
        attrs = ds if isinstance(ds, dict) else ds.attrs
        tau = parse_duration(json.loads(attrs["scenario"])["gpu"]["thermal_tau"])
    except (KeyError, TypeError, ValueError):
        return 0
    return math.ceil(3.0 * tau / dt)


def summary(per_seed: list[list[RuleResult]], refused: list[Refusal] = ()) -> pd.DataFrame:
    """One row per rule: verdict (failing runs), worst value (P50 and P95 over runs) and when
    it happened in the first run, the limit, violations per day (P50 and P95), the share of the
    run over the limit [%]; then a "cannot say" row for each refused rule, with the reason."""
    rows = []
    for results in zip(*per_seed, strict=True):
        first = results[0]
        worst = np.array([r.worst for r in results])
        daily = np.array([sum(r.per_day().values()) for r in results])
        rows.append(
            {
                "rule": first.rule.name,
                "status": first.rule.status,
                "verdict": "pass" if all(r.passed for r in results) else "FAIL",
                "failing runs": f"{sum(not r.passed for r in results)}/{len(results)}",
                "worst p50": np.percentile(worst, 50),
                "worst p95": np.percentile(worst, 95),
                "limit": first.limit,
                "unit": first.rule.unit,
                "worst at (run 1)": f"{pd.Timestamp(first.worst_time):%Y-%m-%d %H:%M:%S}",
                "violations/day p50": np.percentile(daily, 50),
                "violations/day p95": np.percentile(daily, 95),
                "time over limit p50 [%]": 100.0
                * np.percentile(
                    [sum(r.seconds_by_cause.values()) / (r.days * 86400.0) for r in results], 50
                ),
                "note": (
                    f"band cut at {first.resolved_to:g} Hz: a pass is not proven above it"
                    if first.resolved_to
                    else ""
                ),
            }
        )
    rows += [
        {
            "rule": no.rule.name,
            "status": no.rule.status,
            "verdict": "cannot say",
            "unit": no.rule.unit,
            "note": no.reason,
        }
        for no in refused
    ]
    return pd.DataFrame(rows)


def violations_table(per_seed: list[list[RuleResult]]) -> pd.DataFrame:
    """Every violation of every run, by start time: ``run`` (from 1, as :func:`summary` counts
    them), ``rule``, ``start``, ``end``, ``worst`` and its ``unit``, ``cause``."""
    columns = ["run", "rule", "start", "end", "worst", "unit", "cause"]
    frames = [
        r.violations.assign(run=i, rule=r.rule.name, unit=r.rule.unit)
        for i, results in enumerate(per_seed, start=1)
        for r in results
        if len(r.violations)
    ]
    if not frames:
        return pd.DataFrame(columns=columns)
    return pd.concat(frames)[columns].sort_values(["run", "start"], kind="stable")


def check_violations_path(path: str | Path) -> Path:
    """Where :func:`write_violations` is to write, checked before any run: a ``.csv`` name in
    a folder that exists and can be written (:func:`powermodel.output.check_folder`)."""
    path = Path(path)
    if path.suffix.lower() != ".csv":
        raise PowerModelError(
            f"cannot write {str(path)!r}: the violations are written as CSV: give a .csv name"
        )
    return check_folder(path)


def write_violations(table: pd.DataFrame, path: str | Path) -> None:
    """A :func:`violations_table` as CSV, its times in ISO 8601 UTC ending in ``Z`` as the
    profile CSV writes them (fractions of a second only where there are some); whole or not
    at all (:func:`powermodel.output.staged`)."""
    out = table.copy()
    for column in ("start", "end"):
        text = pd.to_datetime(out[column]).dt.strftime("%Y-%m-%dT%H:%M:%S.%f")
        out[column] = text.str.rstrip("0").str.rstrip(".") + "Z"
    with staged(check_violations_path(path)) as temporary:
        out.to_csv(temporary, index=False)


def by_cause(per_seed: list[list[RuleResult]]) -> pd.DataFrame:
    """Violations per day of each rule by cause, P50 and P95 over runs (causes seen only)."""
    rows = []
    for results in zip(*per_seed, strict=True):
        causes = sorted({c for r in results for c in r.by_cause}, key=_cause_order)
        for cause in causes:
            daily = np.array([r.per_day().get(cause, 0.0) for r in results])
            share = [r.seconds_by_cause.get(cause, 0.0) / (r.days * 86400.0) for r in results]
            rows.append(
                {
                    "rule": results[0].rule.name,
                    "cause": cause,
                    "per day p50": np.percentile(daily, 50),
                    "per day p95": np.percentile(daily, 95),
                    "time over limit p50 [%]": 100.0 * np.percentile(share, 50),
                }
            )
    columns = ["rule", "cause", "per day p50", "per day p95", "time over limit p50 [%]"]
    return pd.DataFrame(rows, columns=columns)


def _cause_order(cause: str) -> int:
    return CAUSES.index(cause) if cause in CAUSES else len(CAUSES)


def _check_band(rule: Rule, dt: float) -> None:
    """Refuse a band the profile cannot resolve, saying the step that would, in one wording."""
    if rule.band is None or rule.band[0] < signal.resolved(dt):
        return
    low, high = rule.band
    raise RuleError(
        f"rule {rule.name} measures {low:g}-{high:g} Hz: a {format_duration(dt)} profile "
        f"resolves only up to {signal.resolved(dt):g} Hz; for the whole band, "
        f"{signal.step_advice(high)} (for its low edge, {signal.step_advice(low)})"
    )


def describe(rule: Rule) -> str:
    """The measurement chain in words."""
    parts = [f"{rule.signal}"]
    if rule.averaging:
        parts.append(f"averaged over {format_duration(rule.averaging)}")
    if rule.band:
        parts.append(
            f"filtered to {rule.band[0]:g}-{rule.band[1]:g} Hz ({signal.step_advice(rule.band[1])})"
        )
    parts.append(
        f"{rule.statistic.replace('_', ' ')} ({rule.direction}) in {format_duration(rule.window)}"
    )
    limit = [f"{rule.limit:g} {rule.unit}"] if rule.limit else []
    if rule.limit_fraction:
        limit.append(f"{rule.limit_fraction:.1%} of {rule.reference}")
    return ", ".join(parts) + " <= " + " or ".join(limit) + (" (lesser)" if len(limit) > 1 else "")


class _HeldUnknown(Exception):
    """A checkpoint's sample needs the running median, which the first pass does not know."""


class StreamedCheck:
    """:func:`check_each` accumulated over a run's chunks, without the run held whole.

    Feed each piece of the run in order (:class:`powermodel.analysis.Pieces` over
    :data:`NAMES`), then :meth:`finish` with a ``replay`` that gives the run's chunks again
    from its start. Each rule's statistic is carried across pieces exactly (the rolling mean's
    cumulative sum, the band filters' state, the windows' last samples, the states either side
    of an interval), so worst values, their times, violations, causes and verdicts are the
    in-memory :func:`check`'s to the bit (which measures a whole profile so, in blocks). The
    rules alike but for direction and limit share their statistics (:class:`_Chain`). A rule
    whose violations a checkpoint may have caused needs the running median of its signal over
    the whole run: known before the first piece (:meth:`use_medians`), or else a pass over the
    replay finds it exactly (the values in its 1/256-wide bucket of a histogram taken in the
    first pass), and a second measures those rules again with it.
    """

    NAMES = (
        "grid_power",
        "grid_reactive_power",
        "facility_power",
        "it_power",
        "cooling_power",
        "job_state",
        "grid_event",
    )

    def __init__(
        self,
        rules: list[Rule],
        size: int,
        attrs: dict,
        names: object,
        registered_demand: float | None = None,
    ) -> None:
        self.rules, self.size, self.attrs = rules, size, attrs
        self.dt = float(attrs["dt"])
        self.states = "job_state" in names
        self.plant = "cooling_power" in names
        reference = registered_demand or attrs.get("registered_demand")
        self.judged: dict[int, tuple[float, int]] = {}
        self.errors: dict[int, PowerModelError] = {}  # why each rule refused is
        for i, rule in enumerate(rules):
            try:
                self.judged[i] = _judgeable(rule, names, size, self.dt, reference)
            except PowerModelError as exc:
                self.errors[i] = exc
        self._start({i: None for i in self.judged})
        self.histograms: dict[str, np.ndarray] = {}
        self.tallying = True  # the first pass: the running samples' histograms, for medians

    def use_medians(self, medians: dict[str, float]) -> None:
        """Measure with the signals' running medians known before the first piece (a whole
        profile's, :func:`check`): every rule in one pass, no histograms tallied."""
        self._start({i: medians.get(self.rules[i].signal) for i in self.judged})
        self.tallying = False

    def signals(self) -> set[str]:
        """The signals the rules judged measure."""
        return {self.rules[i].signal for i in self.judged}

    def least(self) -> int:
        """The samples a piece needs at least: every rule's reach and the dies' warm-up."""
        reach = [lookback for _, lookback in self.judged.values()]
        return 2 * (max(reach, default=0) + _warm_up(self.attrs, self.dt) + 2)

    def _start(self, medians: dict[int, float | None]) -> None:
        self.measured = {i: _Measured(self.rules[i], *self.judged[i], self.dt) for i in medians}
        self.chains: dict[tuple, _Chain] = {}
        for i, median in medians.items():
            rule, lookback = self.rules[i], self.judged[i][1]
            if _chain(rule) not in self.chains:
                self.chains[_chain(rule)] = _Chain(rule, lookback, self.dt, median, self.plant)
        self.codes = _PieceCodes(_warm_up(self.attrs, self.dt)) if self.states else None

    def feed(self, columns: dict[str, np.ndarray], at: int, after: dict | None) -> None:
        """Take the run's samples from ``at`` (a piece)."""
        codes = None if self.codes is None else self.codes(columns, after)
        if self.states and self.tallying:
            _histogram(self.histograms, columns, self.signals())
        statistics = {key: chain(columns, at, after, codes) for key, chain in self.chains.items()}
        for i, measured in self.measured.items():
            measured.feed(statistics[_chain(self.rules[i])], at, columns["time"])

    def finish(
        self, replay: Callable[[], Iterator[tuple[dict, int, dict | None]]]
    ) -> tuple[list[RuleResult], list[Refusal]]:
        """Each rule's verdict, and the rules refused with why, as :func:`check_each` gives."""
        self.tallying = False
        again = [i for i, m in self.measured.items() if m.needs_held]
        results = {i: m.result(self.size) for i, m in self.measured.items() if i not in again}
        if again:
            medians = _medians(replay, self.histograms, {self.rules[i].signal for i in again})
            self._start({i: medians[self.rules[i].signal] for i in again})
            for piece in replay():
                self.feed(*piece)
            results |= {i: m.result(self.size) for i, m in self.measured.items()}
        for i, result in list(results.items()):
            if np.isnan(result.worst):  # no reading at all: NaN compares over no limit
                del results[i]
                self.errors[i] = RuleError(
                    f"rule {self.rules[i].name}: every reading of {self.rules[i].signal} is "
                    "missing (NaN), so the profile has no verdict"
                )
        ordered = [results[i] for i in range(len(self.rules)) if i in results]
        refused = [Refusal(self.rules[i], str(self.errors[i])) for i in sorted(self.errors)]
        return ordered, refused


BUCKET = 44  # bits of a value's sortable key below its histogram bucket (20 bits above)


def _keys(x: np.ndarray) -> np.ndarray:
    """Keys of float64 values that sort as the values do (IEEE 754 bits, the negatives'
    inverted)."""
    bits = x.view(np.uint64)
    return np.where(bits >> np.uint64(63), ~bits, bits | np.uint64(1 << 63))


def _histogram(histograms: dict[str, np.ndarray], columns: dict, names: set[str]) -> None:
    """Add a piece's running samples of each signal in ``names`` to its histogram of keys
    (:data:`BUCKET`), for :func:`_medians`."""
    running = columns["job_state"] == State.RUNNING
    for name in names:
        top = _keys(np.asarray(columns[name], np.float64)[running]) >> np.uint64(BUCKET)
        top = top.astype(np.int64)
        if top.size:  # the piece's few buckets counted, then added to the run's
            lo = int(top.min())
            counts = np.bincount(top - lo)
            held = histograms.setdefault(name, np.zeros(1 << (64 - BUCKET), np.int64))
            held[lo : lo + counts.size] += counts


def _medians(
    replay: Callable[[], Iterator[tuple[dict, int, dict | None]]],
    histograms: dict[str, np.ndarray],
    names: set[str],
) -> dict[str, float]:
    """``np.median`` of each signal's running samples over the run, exactly: the buckets of
    the middle ranks from the ``histograms`` of their keys (:func:`_histogram`), the values in
    them from a pass, each value kept once with its count (the iterations' plateaus repeat
    their values: a week of the reference at 100 ms has 210,628 running samples in the middle
    bucket, 12,024 of them distinct; a year held them all, 2.8 GB); NaN for a signal never
    running."""
    wanted = {}
    for name in names:
        counts = histograms.get(name, np.zeros(1, np.int64))
        total = int(counts.sum())
        ranks = [] if total == 0 else sorted({(total - 1) // 2, total // 2})
        below = np.concatenate(([0], np.cumsum(counts)))
        buckets = [int(np.searchsorted(below, r, side="right")) - 1 for r in ranks]
        wanted[name] = (ranks, buckets, below, _Tally())
    for columns, _, _ in replay():
        running = columns["job_state"] == State.RUNNING
        for name, (_, buckets, _, found) in wanted.items():
            x = np.asarray(columns[name], np.float64)[running]
            top = (_keys(x) >> np.uint64(BUCKET)).astype(np.int64)
            found.add(x[np.isin(top, buckets)])
    out = {}
    for name, (ranks, buckets, below, found) in wanted.items():
        if not ranks:
            out[name] = float("nan")
            continue
        values, counts = found.merged()
        first = below[min(buckets)]  # the rank of the first value found
        at = np.searchsorted(np.cumsum(counts), np.array(ranks) - first, side="right")
        out[name] = float(np.mean(values[at]))
    return out


class _Tally:
    """Values seen, each distinct value once with how often: memory grows with the distinct
    values, not with the samples."""

    MERGE = 1 << 20  # values held apart at least before they are merged

    def __init__(self) -> None:
        self.parts: list[tuple[np.ndarray, np.ndarray]] = []
        self.held = 0
        self.bound = self.MERGE

    def add(self, x: np.ndarray) -> None:
        self.parts.append(np.unique(x, return_counts=True))
        self.held += self.parts[-1][0].size
        if self.held > self.bound:
            self.parts = [self.merged()]
            self.held = self.parts[0][0].size
            # twice what was left distinct: merges stay as few as the doublings of the values
            self.bound = max(self.MERGE, 2 * self.held)

    def merged(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct values, sorted, and their counts."""
        if not self.parts:
            return np.empty(0), np.empty(0, np.int64)
        values, where = np.unique(np.concatenate([v for v, _ in self.parts]), return_inverse=True)
        counts = np.bincount(where, weights=np.concatenate([c for _, c in self.parts]))
        return values, counts.astype(np.int64)


class _PieceCodes:
    """:func:`_codes` piece by piece: the state after each piece from the next sample, the
    warm-up's window carried."""

    def __init__(self, warm: int) -> None:
        self.warm = Windowed(signal.rolling_max, warm + 1) if warm else None

    def __call__(self, columns: dict, after: dict | None) -> np.ndarray:
        code = _codes(columns)
        following = code[1:] if after is None else np.r_[code[1:], _codes(after)]
        np.minimum(code[: following.size], following, out=code[: following.size])
        if self.warm is not None:
            code[self.warm(code == _STATE_CODE[State.RAMP], 0)] = _STATE_CODE[State.RAMP]
        return code


def _codes(columns: dict) -> np.ndarray:
    """Each sample's cause code: its job state's, or a grid disturbance's where one acts."""
    code = _STATE_CODE[columns["job_state"]]
    if "grid_event" in columns:
        code = np.where(columns["grid_event"] > 0, CAUSES.index("grid disturbance"), code)
    return code


def _chain(rule: Rule) -> tuple:
    """What a rule's statistic depends on: rules alike here differ only in direction or limit."""
    return (rule.signal, rule.averaging, rule.band, rule.statistic, rule.window)


class _Chain:
    """One chain's statistics (:func:`_chain`: the rules alike but for direction and limit
    share them), piece by piece and unsigned: of the signal as is, with the cooling plant
    removed, with the checkpoints held at the running median (once known), and the strongest
    job event within the statistic's reach before each sample (:func:`_attribute`)."""

    def __init__(
        self, rule: Rule, lookback: int, dt: float, median: float | None, plant: bool
    ) -> None:
        self.name, self.median = rule.signal, median
        self.value = _stages(rule, dt)
        # the cooling plant is in what the grid and the facility draw, not in IT power
        plant = plant and rule.signal in ("grid_power", "facility_power")
        self.rest = _stages(rule, dt) if plant else None
        self.held = _stages(rule, dt) if median is not None else None
        self.stalled = Neighbours()
        self.strongest = Windowed(signal.rolling_min, lookback + 1)

    def __call__(
        self, columns: dict, at: int, after: dict | None, codes: np.ndarray | None
    ) -> tuple[np.ndarray, ...]:
        """The piece's statistics: as is, plant removed, checkpoints held (None where not
        measured), and the strongest cause (None without the job's states)."""
        x = np.asarray(columns[self.name], np.float64)
        rest = None if self.rest is None else self.rest(x - columns["cooling_power"], at)
        held = None
        if self.held is not None:  # the stalls and the intervals either side holding part
            checkpoint = columns["job_state"] == State.CHECKPOINT
            ahead = None if after is None else after["job_state"] == State.CHECKPOINT
            before, behind = self.stalled(checkpoint, ahead, end=False)
            stalled = checkpoint | before | behind
            held = self.held(np.where(stalled, self.median, x), at)
        strongest = None if codes is None else self.strongest(codes, at)
        return self.value(x, at), rest, held, strongest


class _Measured:
    """One rule measured piece by piece from its chain's statistics (:class:`StreamedCheck`)."""

    def __init__(self, rule: Rule, limit: float, lookback: int, dt: float) -> None:
        self.rule, self.limit, self.lookback, self.dt = rule, limit, lookback, dt
        self.needs_held = False
        self.best: tuple[float, np.datetime64] | None = None
        self.counts = np.zeros(len(LABELS), np.int64)
        # the violations (start, end, worst, cause code) found in each piece, as arrays
        self.rows: list[tuple[np.ndarray, ...]] = []
        self.open: tuple | None = None  # the last of the piece before, if it reached its end

    def feed(self, statistics: tuple[np.ndarray, ...], at: int, times: np.ndarray) -> None:
        """Take a piece from ``at``: its chain's ``statistics`` (:class:`_Chain`)."""
        rule, limit = self.rule, self.limit
        stat, rest, held, strongest = statistics
        value = _signed(stat, rule)
        if rule.averaging:  # the run's first readings average fewer samples
            value[: max(min(self.lookback - 1 - at, value.size), 0)] = -np.inf
        over = value > limit
        cause = np.full(over.size, -1, np.int8)
        if over.any():
            if strongest is None:
                cause[over] = len(CAUSES)
            else:
                try:
                    cause = np.where(
                        over,
                        _attribute(
                            strongest,
                            over,
                            limit,
                            lambda: _signed(_known(held), rule),
                            lambda: value if rest is None else _signed(rest, rule),
                        ),
                        cause,
                    )
                except _HeldUnknown:  # measured again once the median is known
                    self.needs_held = True
                    cause = np.where(over, strongest, cause)
        self._tally(value, cause, times)

    def _tally(self, value: np.ndarray, cause: np.ndarray, times: np.ndarray) -> None:
        at = int(np.argmax(value))
        if self.best is None or value[at] > self.best[0]:
            self.best = (float(value[at]), times[at])
        first, stop, worst = _runs(value, cause)
        code = cause[first]
        self.counts += np.bincount(code, weights=stop - first, minlength=len(LABELS)).astype(int)
        start, end = times[first], times[stop - 1]
        if self.open is not None:  # the piece before's last run reached its end
            if first.size and first[0] == 0 and code[0] == self.open[3][0]:  # one run
                start[0], worst[0] = self.open[0][0], max(self.open[2][0], worst[0])
            else:
                self.rows.append(self.open)
        self.open = None
        if stop.size and stop[-1] == cause.size:  # it may go on in the next piece
            self.open, (start, end, worst, code) = (
                (start[-1:], end[-1:], worst[-1:], code[-1:]),
                (start[:-1], end[:-1], worst[:-1], code[:-1]),
            )
        self.rows.append((start, end, worst, code))

    def result(self, size: int) -> RuleResult:
        if self.open is not None:
            self.rows.append(self.open)
            self.open = None
        violations = tuple(np.concatenate(c) for c in zip(*self.rows, strict=True))
        return _result(self.rule, self.limit, self.best, violations, self.counts, size, self.dt)


def _known(held: np.ndarray | None) -> np.ndarray:
    if held is None:
        raise _HeldUnknown
    return held


def _stages(rule: Rule, dt: float) -> Chained:
    """:func:`_statistic` piece by piece (before its direction)."""
    stages = []
    if rule.averaging:
        stages.append(RollingMean(signal.samples(rule.averaging, dt, "averaging")))
    if rule.band:
        stages.append(Filtered(dt, *rule.band))
    n = signal.samples(rule.window, dt)
    stages.append(ramp_stages(n)["net_change" if rule.statistic == "rate" else rule.statistic])
    if rule.per_minute:
        stages.append(lambda x, at: x * 60.0 / rule.window)  # as _statistic: the same rounding
    return Chained(*stages)
