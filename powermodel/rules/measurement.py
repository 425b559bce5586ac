"""A profile measured by a rule: the rule's statistic at every sample (in memory, and as
stages that take a run piece by piece), the samples it looks back over, the causes its
violations are attributed to, and the verdict records (:class:`RuleResult`, :class:`Refusal`).

The second stage of a check, after :mod:`powermodel.rules.rule`: :mod:`powermodel.rules.streamed`
drives these over a run's pieces; :mod:`powermodel.rules.report` tabulates the verdicts.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import xarray as xr

from powermodel.analysis import RAMPS
from powermodel.models import signal
from powermodel.models.events import STATE_RANK
from powermodel.piecewise import Chained, Filtered, RollingMean, Scaled, ramp_stages
from powermodel.rules.rule import Rule, RuleError
from powermodel.scenario import format_duration, parse_duration

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


@dataclass(frozen=True)
class Refusal:
    """A rule whose verdict the profile cannot support, and why."""

    rule: Rule
    reason: str


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


def _runs(over: np.ndarray, cause: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The violations among the samples over the limit (``over``: their indices, increasing;
    ``cause``: each one's): runs of consecutive samples with one cause, as the positions in
    ``over`` of each run's first and last sample."""
    new = np.ones(over.size, bool)
    new[1:] = (over[1:] != over[:-1] + 1) | (cause[1:] != cause[:-1])
    first = np.flatnonzero(new)
    return first, np.append(first[1:], over.size)[: first.size] - 1


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
        stages.append(Scaled(60.0, rule.window))  # as _statistic: the same rounding
    return Chained(*stages)


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
