"""Runs over variations of a scenario: the sourced range of each decisive default, and seeds."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from functools import partial
from typing import Any

import pandas as pd

from powermodel import rules, stream
from powermodel.analysis import metrics
from powermodel.errors import PowerModelError
from powermodel.scenario import Scenario, load_scenario
from powermodel.simulate import simulate

# IT power as the ranges move it, then the connection's largest 5-s swing over the run (most
# often a failure's drop) beside its largest while training (the iterations' own swing)
HEADLINE = [
    "it_mean_mw",
    "it_peak_mw",
    "it_min_mw",
    "grid_swing_5s_mw",
    "grid_swing_5s_training_mw",
    "effective_training_time",
]
MAX_SEEDS = 1000  # runs of one check: each is a whole simulation, its results all kept

# Maps a function over runs, in their order: powermodel.sweep.run_all, bound to its workers, runs
# them on dask; without one they run in turn here
Runner = Callable[[Callable[[Any], Any], Sequence[Any]], list[Any]]


def in_turn(function: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    """The :data:`Runner` without workers: the items in turn, in this process."""
    return [function(item) for item in items]


def sensitivity(scenario: Scenario, progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Run the scenario at the low and high end of each range in ``scenario.sensitivity``.

    Returns
    -------
    pandas.DataFrame
        One row per run (the baseline first): ``key``, ``case`` (base/low/high), ``value``, the
        headline metrics, and the range's ``source``.
    """
    rows = []
    for case, varied in _cases(scenario):
        if progress and case["value"] is not None:
            progress(f"{case['key']} = {case['value']}")
        rows.append({**case, **_headline(varied)})
    return pd.DataFrame(rows)[["key", "case", "value", *HEADLINE, "source"]]


def _cases(scenario: Scenario) -> Iterator[tuple[dict, Scenario]]:
    """The scenario as given, then at the low and high end of each sourced range: a row's
    ``key``, ``case``, ``value`` and ``source``, and the varied scenario."""
    yield {"key": "(scenario as given)", "case": "base", "value": None, "source": ""}, scenario
    for item in scenario.sensitivity:
        for case, value in (("low", item.low), ("high", item.high)):
            row = {"key": item.key, "case": case, "value": value, "source": item.source}
            yield row, load_scenario(scenario, {item.key: value})


def _headline(scenario: Scenario) -> dict[str, float]:
    result = metrics(simulate(scenario))
    return {name: result[name] for name in HEADLINE}


def seed_count(seeds: int) -> int:
    """``seeds``, refused outside 1 to :data:`MAX_SEEDS` before any run."""
    if not 1 <= seeds <= MAX_SEEDS:
        raise PowerModelError(
            f"--seeds must be 1 to {MAX_SEEDS:,}, got {seeds:,}: a P95 is steady after a few "
            "tens of seeds"
        )
    return seeds


def check_seeds(
    scenario: Scenario,
    rule_list: list[rules.Rule],
    seeds: int,
    registered_demand: float | None = None,
    runner: Runner | None = None,
) -> tuple[list[list[rules.RuleResult]], list[rules.Refusal]]:
    """:func:`powermodel.rules.check_each` on ``seeds`` runs from the scenario's seed on: each
    run's results, and the rules refused (for the step, length or registered demand, which the
    seed does not change: those of the first run). ``runner`` maps the runs (in turn without)."""
    seed_count(seeds)
    first = scenario.simulation.seed
    runs = [
        load_scenario(scenario, {"simulation.seed": seed}) for seed in range(first, first + seeds)
    ]
    checked = _checked_all(runs, rule_list, registered_demand, runner)
    results, refused = checked[0]
    judged = {r.rule.name for r in results}
    for _, no in checked[1:]:
        lost = [n.reason for n in no if n.rule.name in judged]
        if lost:  # the first run judged what this one cannot: no P50 over the runs
            raise rules.RuleError(lost[0])
    later = ([r for r in each if r.rule.name in judged] for each, _ in checked[1:])
    return [results, *later], refused


def _checked_all(
    runs: list[Scenario],
    rule_list: list[rules.Rule],
    registered_demand: float | None,
    runner: Runner | None,
) -> list[tuple[list[rules.RuleResult], list[rules.Refusal]]]:
    check = partial(_checked, rule_list=rule_list, registered_demand=registered_demand)
    return (runner or in_turn)(check, runs)


def _checked(
    scenario: Scenario, rule_list: list[rules.Rule], registered_demand: float | None
) -> tuple[list[rules.RuleResult], list[rules.Refusal]]:
    """One run checked: what a worker does (streamed in chunks where it does not fit the
    worker's memory, :func:`powermodel.stream.checked`)."""
    return stream.checked(scenario, rule_list, registered_demand)


def check_sensitivity(
    scenario: Scenario,
    rule_list: list[rules.Rule],
    registered_demand: float | None = None,
    runner: Runner | None = None,
) -> pd.DataFrame:
    """Violations per day by cause at the low and high end of each range in
    ``scenario.sensitivity``: which events violate a rule depends on these defaults.
    ``runner`` maps the runs (in turn without)."""
    cases = list(_cases(scenario))
    checked = _checked_all([varied for _, varied in cases], rule_list, registered_demand, runner)
    rows = []
    for (case, _), (results, _) in zip(cases, checked, strict=True):
        for result in results:
            rows.append(
                {
                    **{k: case[k] for k in ("key", "case", "value")},
                    "rule": result.rule.name,
                    "worst": result.worst,
                    **{f"{c}/day": result.per_day().get(c, 0.0) for c in rules.CAUSES},
                }
            )
    return pd.DataFrame(rows)
