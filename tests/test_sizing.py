"""Sizing mitigations against rules, and their costs (powermodel.sizing)."""

from __future__ import annotations

import pytest
from conftest import QUIET, REFERENCE

from powermodel import load_scenario, simulate
from powermodel.rules import check, load_rules
from powermodel.sizing import costs, size


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
