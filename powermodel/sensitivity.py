"""Runs over variations of a scenario: the sourced range of each decisive default, and seeds."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pandas as pd

from powermodel import rules
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
) -> tuple[list[list[rules.RuleResult]], list[rules.Refusal]]:
    """:func:`powermodel.rules.check_each` on ``seeds`` runs from the scenario's seed on: each
    run's results, and the rules refused (for the step, length or registered demand, which the
    seed does not change: found on the first run, not asked again)."""
    seed_count(seeds)
    first = scenario.simulation.seed
    runs = (
        simulate(load_scenario(scenario, {"simulation.seed": seed}))
        for seed in range(first, first + seeds)
    )
    results, refused = rules.check_each(next(runs), rule_list, registered_demand)
    judged = [r.rule for r in results]
    return [results, *(rules.check(ds, judged, registered_demand) for ds in runs)], refused


def check_sensitivity(
    scenario: Scenario, rule_list: list[rules.Rule], registered_demand: float | None = None
) -> pd.DataFrame:
    """Violations per day by cause at the low and high end of each range in
    ``scenario.sensitivity``: which events violate a rule depends on these defaults."""
    rows = []
    for case, varied in _cases(scenario):
        for result in rules.check_each(simulate(varied), rule_list, registered_demand)[0]:
            rows.append(
                {
                    **{k: case[k] for k in ("key", "case", "value")},
                    "rule": result.rule.name,
                    "worst": result.worst,
                    **{f"{c}/day": result.per_day().get(c, 0.0) for c in rules.CAUSES},
                }
            )
    return pd.DataFrame(rows)
