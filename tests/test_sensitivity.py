"""Verdicts over seeds and over the sourced ranges of the defaults (powermodel.sensitivity)."""

from __future__ import annotations

from conftest import QUIET, REFERENCE

from powermodel import load_scenario
from powermodel.rules import by_cause, load_rules
from powermodel.sensitivity import check_seeds, check_sensitivity


def test_counts_per_day_over_seeds_p50_p95():
    sc = load_scenario(REFERENCE, {"simulation.duration": "12h", "reliability.rate_scale": 3.0})
    per_seed, refused = check_seeds(sc, load_rules("nprr1191-down"), seeds=4)
    assert refused == []
    table = by_cause(per_seed)
    failure = table[table["cause"] == "failure"].iloc[0]
    # 419 crashes in 54 days (Llama 3) at three times the rate: 23.3 a day; a P50 over 4 seeds
    # of half-day runs lies within a Poisson spread of that
    assert 10 <= failure["per day p50"] <= failure["per day p95"] <= 45


def test_iteration_swings_violate_ercot_only_with_deep_troughs():
    # The sensitivity the report shows: with the sourced 30 % trough (Ko & Zhu) iteration swings
    # stay under ERCOT's 10 MW; at the 80 % end they break it.
    sc = load_scenario(
        REFERENCE, {**QUIET, "simulation.duration": "30min", "simulation.dt": "0.1s"}
    )
    table = check_sensitivity(sc, load_rules("ercot-5s"))
    trough = table[table["key"] == "workload.trough_depth"].set_index("case")
    base = table[table["case"] == "base"].iloc[0]
    assert base["iteration swing/day"] == 0 and base["worst"] < 10.0
    assert trough.loc["high", "iteration swing/day"] > 0 and trough.loc["high", "worst"] > 10.0
