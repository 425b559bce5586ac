"""Site water of the cooling plants (issue 12): evaporative cooling, humidification and
blowdown, as the Green Grid's WUE counts them [S, green_grid_wue], against published figures."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import QUIET, REFERENCE

from powermodel import load_scenario, metrics, simulate
from powermodel.calibration import CALIBRATION_YEAR
from powermodel.errors import ScenarioError
from powermodel.models import cooling, plants

HEAT = 1e6  # W
SEA_LEVEL = 101325.0  # Pa


def _design(**changes: float) -> plants.OutsideAirDesign:
    """The reference plant's design (presets/plants.toml), on a 1-min step, for 1 MW."""
    sc = load_scenario(REFERENCE)
    c = sc.cooling
    fields = {
        "design_heat": HEAT,
        "dt": 60.0,
        "tau": c.tau,
        "supply_setpoint": c.supply_setpoint,
        "fan_fraction": c.fan_fraction,
        "pump_fraction": c.pump_fraction,
        "fan_min_speed": c.fan_min_speed,
        "cycles_of_concentration": c.cycles_of_concentration,
        "supply_max": c.supply_max,
        "evap_effectiveness": c.evap_effectiveness,
        "air_delta_t": c.air_delta_t,
        "dew_point_min": c.dew_point_min,
        "humidity_min": c.humidity_min,
        "treatment_yield": c.treatment_yield,
    }
    return plants.OutsideAirDesign(**(fields | changes))


def _hour(temp_air: float, temp_wetbulb: float, temp_dew: float) -> plants.PlantOutput:
    """An hour of steady weather at sea level and 1 MW of heat."""
    steps = np.ones(60)
    outdoor = plants.Outdoor(
        temp_air * steps, temp_wetbulb * steps, temp_dew * steps, SEA_LEVEL * steps
    )
    return plants.outside_air_evaporative(HEAT * steps, outdoor, _design())


# Closed forms, written out here: Magnus saturation pressure (Alduchov 1996), humidity ratio and
# moist-air enthalpy (ASHRAE Handbook—Fundamentals, Chapter 1, eqs. 20 and 32).
def _vapour(temp: float) -> float:
    return 610.94 * np.exp(17.625 * temp / (temp + 243.04))


def _ratio(vapour: float) -> float:
    return 0.621945 * vapour / (SEA_LEVEL - vapour)


def _enthalpy(temp: float, ratio: float) -> float:
    return 1006.0 * temp + ratio * (2.501e6 + 1860.0 * temp)


def test_winter_humidification_by_hand():
    # -10 °C outside with a -20 °C dew point: return air (18 + 12 = 30 °C) is mixed in to hold
    # the 18 °C supply, and misting lifts the mix to Meta's 13 % RH floor at 18 °C [P, meta_water].
    out = _hour(-10.0, -11.0, -20.0)
    w_out, w_sup = _ratio(_vapour(-20.0)), _ratio(0.13 * _vapour(18.0))
    share = (_enthalpy(30.0, w_sup) - _enthalpy(18.0, w_sup)) / (
        _enthalpy(30.0, w_sup) - _enthalpy(-10.0, w_out)
    )
    airflow = HEAT / (1006.0 * 12.0)  # kg/s of dry air carrying 1 MW at a 12 K rise
    evaporated = airflow * share * (w_sup - w_out)
    # 0.0208 kg/s evaporated, 0.0277 L/s drawn with 4 cycles of concentration (a third more)
    assert out.water_use[-1] == pytest.approx(evaporated * 4.0 / 3.0, rel=1e-9)
    assert out.water_use[-1] == pytest.approx(0.0277, abs=5e-4)
    # the mist cools the mix: less outside air than the dry-bulb balance 12/40
    assert 0.27 < share < 12.0 / 40.0
    # no pads and no chillers in winter: the pumps of the pads are off
    assert np.all(out.cooling_power == 0.0) and np.all(out.supply_temp == 18.0)


def test_summer_pads_by_hand_and_no_water_in_between():
    # 35 °C, wet-bulb 20 °C: the pads cool the air to the 27 °C ceiling, 8 K, evaporating the
    # sensible heat of the airflow; the air is humid enough, so no misting on top.
    hot = _hour(35.0, 20.0, 14.0)
    evaporated = HEAT / 12.0 * 8.0 / 2.45e6  # ṁ·c_p·ΔT / h_fg with ṁ·c_p = Q / ΔT_air
    assert hot.water_use[-1] == pytest.approx(evaporated * 4.0 / 3.0, rel=1e-9)
    # 20 °C and a 10 °C dew point: outside air as it is, no water at all
    assert np.all(_hour(20.0, 14.0, 10.0).water_use == 0.0)
    # 20 °C and a -15 °C dew point (Golden in spring): 100 % outside air, misted up to 13 % RH
    # at 20 °C, the floor that follows the supply temperature
    dry = _hour(20.0, 6.0, -15.0)
    expected = HEAT / (1006.0 * 12.0) * (_ratio(0.13 * _vapour(20.0)) - _ratio(_vapour(-15.0)))
    assert dry.water_use[-1] == pytest.approx(expected * 4.0 / 3.0, rel=1e-9)


def test_blowdown_scales_with_cycles_of_concentration():
    # Make-up = evaporation · C/(C − 1): 2 cycles draw twice what evaporates, 6 draw 1.2 times.
    outdoor = plants.Outdoor(*(np.full(60, v) for v in (35.0, 20.0, 14.0, SEA_LEVEL)))
    water = {
        c: plants.outside_air_evaporative(
            np.full(60, HEAT), outdoor, _design(cycles_of_concentration=c)
        ).water_use[-1]
        for c in (2.0, 4.0, 6.0)
    }
    assert water[2.0] / water[4.0] == pytest.approx(2.0 / (4.0 / 3.0), rel=1e-12)
    assert water[6.0] / water[4.0] == pytest.approx(1.2 / (4.0 / 3.0), rel=1e-12)


def _year(site: str, plant: str = "meta-outside-air-evaporative", **cooling: float) -> float:
    over = {**CALIBRATION_YEAR, "site.weather": site, "cooling.plant": plant}
    over |= {f"cooling.{key}": value for key, value in cooling.items()}
    return metrics(simulate(load_scenario(REFERENCE, over)))["wue_l_per_kwh"]


@pytest.fixture(scope="module")
def meta_years():
    return {site: _year(site) for site in ("sterling", "tampa", "chicago", "golden")}


def test_annual_wue_of_the_reference_plant_by_site(meta_years):
    # This model's values (a year at 1 min): pads in humid heat (Tampa), misting in dry cold
    # (Chicago, Golden). Before humidification and blowdown were counted: 0.026, 0.075, 0.017,
    # 0.017. Meta's published 0.22 (Prineville 1, 2012 [S, ocp_prineville_wue]) and 0.26 (its
    # 2021 buildings [P, meta_water]) are higher: docs/model/cooling.md says why it is not fitted.
    expected = {"sterling": 0.039, "tampa": 0.100, "chicago": 0.028, "golden": 0.030}
    for site, wue in expected.items():
        assert meta_years[site] == pytest.approx(wue, abs=0.002), site
    assert meta_years["tampa"] > meta_years["sterling"] > meta_years["golden"]


def test_lowering_the_humidity_floor_saves_what_metas_pilot_saved(meta_years):
    # Validation, not fitted: Meta lowered its floor from 20 to 13 % RH and saved more than 40 %
    # of the water (Los Lunas, New Mexico, dry and high) [P, meta_water]. Golden, the shipped
    # climate nearest to it, saves 58 % in this model; humid Sterling saves less.
    for site, low, high in (("golden", 0.40, 0.70), ("sterling", 0.10, 0.40)):
        before = _year(site, humidity_min=20.0)
        saving = 1.0 - meta_years[site] / before
        assert low < saving < high, (site, saving)


def test_tower_and_dry_cooler_plants_against_published_water():
    # Towers evaporate the heat and the chillers' power, plus a third for blowdown at 4 cycles:
    # 1.82 L/kWh, against an average US data center's 1.8 L/kWh on site [S, shehabi2016]. The
    # dry-cooler loop draws none (Meta's closed-loop dry-cooler sites: domestic water only).
    assert _year("sterling", "liquid-tower") == pytest.approx(1.8, abs=0.1)
    assert _year("sterling", "liquid-dry-cooler") == 0.0
    # the chilled-water hall rejects its chillers' work too: more water per IT kWh
    assert 2.0 < _year("sterling", "modern-chilled-water") < 2.5


@pytest.mark.parametrize("n_gpus", [8, 32, 512, 16384])
def test_water_per_it_energy_does_not_depend_on_cluster_size(n_gpus):
    # Every term of the water is the airflow the heat needs times a humidity difference: WUE is
    # the same at one node, a rack, 512 GPUs and 16K (a January week at Golden, with misting),
    # to within the plant's view of the heat: it sees IT power before the GPUs' cooler dies
    # leak less (1-2 % of IT where GPUs dominate it; storage scales with the GPUs).
    week = {
        **QUIET,
        "simulation.start": "2024-01-08T07:00:00",
        "simulation.duration": "7d",
        "simulation.dt": "1min",
        "site.weather": "golden",
        "workload.step_time": "6s",
        # the step and shares held at the reference's: no layout, which refuses one node
        "workload.parallelism": None,
    }
    wue = metrics(simulate(load_scenario(REFERENCE, {**week, "cluster.n_gpus": n_gpus})))
    reference = metrics(simulate(load_scenario(REFERENCE, {**week, "cluster.n_gpus": 16384})))
    assert wue["wue_l_per_kwh"] == pytest.approx(reference["wue_l_per_kwh"], rel=0.03)
    assert wue["wue_l_per_kwh"] > 0.01  # misting is on in that week


def test_treatment_reject_is_drawn_on_top_of_blowdown():
    # Make-up = E·C/((C − 1)·y): a reverse-osmosis unit passing 65 % of its feed as permeate
    # [S, gofog_ro] draws 1/0.65 times what the sprays take (4 cycles: 4/3 of E).
    evaporated = np.array([0.0, 0.01, 0.02])
    drawn = cooling.make_up_water(evaporated, 4.0, 0.65)
    np.testing.assert_allclose(drawn, evaporated * (4.0 / 3.0) / 0.65, rtol=1e-12)
    np.testing.assert_array_equal(cooling.make_up_water(evaporated, 4.0), evaporated * 4.0 / 3.0)
    with pytest.raises(ValueError, match="treatment_yield must be in"):
        cooling.make_up_water(evaporated, 4.0, 0.0)
    with pytest.raises(ScenarioError, match="treatment_yield"):
        load_scenario(REFERENCE, {"cooling.treatment_yield": 1.5})


@pytest.fixture(scope="module")
def prineville_years():
    return {site: _year(site, "meta-prineville-1") for site in ("sterling", "golden")}


def test_prineville_1_settings_against_its_published_wue(prineville_years, meta_years):
    # Prineville 1's first phase: inlet to 80 °F and a 25 °F rise [S, facebook_inlet_2011], the
    # 20 % RH floor of before 2020 [P, meta_water], misting on reverse-osmosis water (65 %
    # permeate [S, gofog_ro]). This model's values (a year at 1 min): 0.091 L/kWh at Golden,
    # 0.082 at Sterling, against the published 0.22 [S, ocp_prineville_wue]: below the
    # reproduce anchor's factor-1.5 band (0.147), which therefore fails.
    assert prineville_years["golden"] == pytest.approx(0.091, abs=0.002)
    assert prineville_years["sterling"] == pytest.approx(0.082, abs=0.002)
    assert prineville_years["golden"] < 0.22 / 1.5
    # three times the reference hall's water at Golden: the older floor, cooler inlet, the reject
    assert 2.5 < prineville_years["golden"] / meta_years["golden"] < 3.5
    # the reject alone: the same plant with untreated water draws 65 % as much
    untreated = _year("golden", "meta-prineville-1", treatment_yield=1.0)
    assert untreated / prineville_years["golden"] == pytest.approx(0.65, rel=1e-9)


def test_no_single_water_coefficient_fits_prineville_and_the_checks(prineville_years, meta_years):
    # Why nothing is calibrated to 0.22: the missing water as a factor on all of it, or as a
    # fixed volume per IT kWh, each fitted to Prineville 1 at Golden, fails a figure it was
    # not fitted to. A factor leaves the reference hall far below Meta's 0.26 for its 2021
    # buildings [P, meta_water] (factor-1.5 band from 0.173) at Sterling and Golden; a fixed
    # volume drowns the humidification that Meta's Los Lunas pilot cut by "more than 40 %"
    # [P, meta_water] (20 to 13 % RH at Golden, the dry, high proxy).
    factor = 0.22 / prineville_years["golden"]
    extra = 0.22 - prineville_years["golden"]
    assert factor * meta_years["sterling"] < 0.26 / 1.5
    assert factor * meta_years["golden"] < 0.26 / 1.5
    before = _year("golden", humidity_min=20.0)
    saving = (before - meta_years["golden"]) / (before + extra)
    assert saving < 0.40
    # while the model as it is passes the pilot's check (test above): 58 %
    assert 1.0 - meta_years["golden"] / before > 0.40


@pytest.mark.parametrize(
    ("key", "value"),
    [("cooling.treatment_yield", 0.05), ("cooling.cycles_of_concentration", 1.05)],
)
def test_make_up_water_inputs_beyond_any_plant_are_refused(key, value):
    # at a yield of 0.05 or 1.05 cycles the make-up is 20 times the evaporation or more: no
    # plant runs so, and at the schema's old limits (> 0, > 1) it overflowed to infinity
    plant = {"cooling.plant": "meta-outside-air-evaporative"}
    with pytest.raises(ScenarioError, match=rf"{key}: Input should be greater than or equal"):
        load_scenario(REFERENCE, {**plant, key: value})


def test_a_held_variable_beyond_float32_is_refused_not_stored_as_infinite():
    from powermodel.engine.series import checked_float32
    from powermodel.errors import PowerModelError

    np.testing.assert_array_equal(checked_float32("water_use", np.array([0.5, 3e38])), [0.5, 3e38])
    with pytest.raises(PowerModelError, match=r"water_use reaches 1e\+39 L/s"):
        checked_float32("water_use", np.array([0.5, 1e39]))
