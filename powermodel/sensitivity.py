"""How the headline metrics move across the sourced range of each decisive default."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from powermodel.analysis import metrics
from powermodel.scenario import Scenario, load_scenario
from powermodel.simulate import simulate

HEADLINE = ["mean_mw", "peak_mw", "min_mw", "swing_5s_mw", "effective_training_time"]


def sensitivity(scenario: Scenario, progress: Callable[[str], None] | None = None) -> pd.DataFrame:
    """Run the scenario at the low and high end of each range in ``scenario.sensitivity``.

    Returns
    -------
    pandas.DataFrame
        One row per run (the baseline first): ``key``, ``case`` (base/low/high), ``value``, the
        headline metrics, and the range's ``source``.
    """
    rows = [
        {
            "key": "(scenario as given)",
            "case": "base",
            "value": None,
            **_headline(scenario),
            "source": "",
        }
    ]
    for item in scenario.sensitivity:
        for case, value in (("low", item.low), ("high", item.high)):
            if progress:
                progress(f"{item.key} = {value:g}")
            varied = load_scenario(scenario, {item.key: value})
            rows.append(
                {
                    "key": item.key,
                    "case": case,
                    "value": value,
                    **_headline(varied),
                    "source": item.source,
                }
            )
    return pd.DataFrame(rows)


def _headline(scenario: Scenario) -> dict[str, float]:
    result = metrics(simulate(scenario))
    return {name: result[name] for name in HEADLINE}
