"""Sizing mitigations against rules, and their costs (powermodel.sizing)."""

from __future__ import annotations

import pandas as pd
import pytest
from conftest import QUIET, REFERENCE

from powermodel import load_scenario, simulate
from powermodel.cli import main
from powermodel.rules import check, load_rules
from powermodel.sizing import BISECTIONS, Lever, _bisect, costs, size


@pytest.fixture(scope="module")
def sized():
    sc = load_scenario(REFERENCE, {"simulation.duration": "6h", "reliability.rate_scale": 3.0})
    rule_list = load_rules("ercot-5s,nprr1191-down,ieso-15s")
    return sc, rule_list, size(sc, rule_list)


def test_sizing_finds_a_passing_setting_of_each_lever_where_one_exists(sized):
    sc, rule_list, table = sized
    rows = table.set_index(["rule", "lever"])
    # an H100 power cap and a site battery each make ERCOT's 5-s rule pass
    assert rows.loc[("ercot-5s", "power cap"), "verdict"] == "pass"
    assert 200.0 <= rows.loc[("ercot-5s", "power cap"), "setting"] < 700.0
    battery = [lever for lever in table["lever"].unique() if lever.startswith("site battery")][0]
    for rule in ("ercot-5s", "nprr1191-down", "ieso-15s"):
        assert rows.loc[(rule, battery), "verdict"] == "pass"
    # a software agent reacts after 2 s: the crash's drop has reached the grid by then
    burn = [lever for lever in table["lever"].unique() if lever.startswith("burn on stop")][0]
    assert rows.loc[("ercot-5s", burn), "verdict"] == "cannot"
    # costs: a cap saves energy and costs throughput; a battery costs losses, not tokens
    cap = rows.loc[("ercot-5s", "power cap")]
    assert cap["grid_energy_cost"] < 0 and cap["throughput_cost"] > 0
    bat = rows.loc[("ercot-5s", battery)]
    assert bat["grid_energy_cost"] > 0 and bat["throughput_cost"] == pytest.approx(0.0, abs=1e-12)
    assert bat["storage_cycles_per_day"] > 0


def test_check_confirms_each_sized_setting_on_the_mitigated_run(sized):
    from powermodel.sizing import levers

    sc, rule_list, table = sized
    reference = simulate(sc).attrs["registered_demand"]
    for rule in rule_list:
        for lever in levers(sc, rule, reference):
            row = table[(table["rule"] == rule.name) & (table["lever"] == lever.name)].iloc[0]
            if row["verdict"] != "pass":
                continue
            mitigated = simulate(load_scenario(sc, lever.settings(row["setting"])))
            assert check(mitigated, [rule])[0].passed, (rule.name, lever.name)


def test_mitigation_costs_in_money_with_prices():
    over = {**QUIET, "simulation.duration": "6h"}
    prices = {"prices.energy": 50.0, "prices.gpu_hour": 2.0}
    base = simulate(load_scenario(REFERENCE, over))
    capped_sc = load_scenario(REFERENCE, {**over, **prices, "mitigation.power_cap": 500.0})
    c = costs(capped_sc, base, simulate(capped_sc))
    # a year of the daily energy change at $50/MWh, plus the tokens lost as GPU-hours at $2
    expected = c["grid_energy_mwh_per_day"] * 365 * 50.0 + c["throughput_cost"] * 16384 * 8760 * 2.0
    assert c["cost_per_year"] == pytest.approx(expected)
    assert c["throughput_cost"] > 0 and c["grid_energy_mwh_per_day"] < 0


# A small case for the parallel search: an hour with thirty times the failures, two rules
SMALL = {"simulation.duration": "1h", "reliability.rate_scale": 30.0}


@pytest.fixture(scope="module")
def small():
    sc = load_scenario(REFERENCE, SMALL)
    rule_list = load_rules("ieso-15s,ercot-5s")
    settings = []
    return sc, rule_list, size(sc, rule_list, progress=settings.append), settings


@pytest.mark.parametrize("width", [2, 64])
def test_searching_the_levers_together_finds_the_same_table(small, width):
    sc, rule_list, serial, serial_settings = small
    calls = []

    def runner(function, items):  # what run_all does, in this process, counting its calls
        calls.append(len(items))
        return [function(item) for item in items]

    settings = []
    table = size(sc, rule_list, progress=settings.append, runner=runner, width=width)
    pd.testing.assert_frame_equal(table, serial)
    searches = len(table) - (table["verdict"] == "passes unmitigated").sum()
    if width < searches:
        # a step of every search a call: both ends, then the 7 bisections, as in turn
        assert sorted(settings) == sorted(serial_settings)
        assert len(calls) == 2 + BISECTIONS
    else:
        # searches look several steps ahead: fewer calls, some runs more
        assert len(calls) < 2 + BISECTIONS
        assert set(serial_settings) <= set(settings)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("depth", range(1, BISECTIONS + 2))
def test_a_bisection_taking_steps_at_once_lands_where_one_at_a_time_does(depth, log):
    lever = Lever("x", "1", 1.0, 1.0 / 1024 if log else 0.0, lambda v: {}, log=log)
    passes = (lambda v: v <= 0.3) if not log else (lambda v: v <= 0.1)

    search = _bisect(lever, lambda: depth)
    asked = next(search)
    try:
        while True:
            asked = search.send({v: passes(v) for v in asked})
    except StopIteration as done:
        found = done.value
    # 7 bisections of [0, 1]: the largest multiple of 1/128 at most 0.3 is 38/128; in log
    # space over [2**-10, 1] steps are 10/128 of a power of two: 2**(-10 * 43/128) <= 0.1
    assert found == (38 / 128 if not log else pytest.approx(2.0 ** (-10 * 43 / 128), rel=1e-12))


def test_size_on_workers_prints_what_it_prints_in_turn(capsys):
    args = ["size", REFERENCE, "--rules", "ieso-15s"]
    args += [f"--set={k}={v}" for k, v in SMALL.items()]
    assert main(args) == 0
    in_turn = capsys.readouterr().out
    assert main([*args, "--workers", "2"]) == 0
    assert capsys.readouterr().out == in_turn
