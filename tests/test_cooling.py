"""Cooling plants, tested on numbers: the DOE-2 chiller against its equations, the building blocks
against hand-computed values, the chiller-curve reader against good and broken files."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from numpy.testing import assert_allclose

from powermodel.errors import DataFileError, PowerModelError
from powermodel.iotools.chillers import (
    AIR_COOLED,
    WATER_COOLED,
    chiller,
    read_chiller_curves,
)
from powermodel.models import cooling

# Three rows of data/chillers/Chillers_EIR_curves.csv (EnergyPlus DataSets, Chillers.idf), all
# calibrated at the AHRI 550/590 rating point (6.67 °C chilled water, 29.44 °C condenser water):
# a small screw, a mid-size centrifugal whose minimum part-load ratio (0.39) puts the 30 % load in
# the cycling range, and the largest centrifugal of the set (file lines 139, 82 and 135). Values
# copied from the file by hand:
# name: (Q_ref [W], COP_ref, PLR_min, CAPFT c1..c6, EIRFT c1..c6, EIRFPLR c1..c3).
CHILLERS = {
    "ElectricEIRChiller Trane RTWA 383kW/4.17COP/Valve": (
        383300, 4.17, 0.25,
        (9.830684e-01, 3.676199e-02, 5.307995e-05, -4.828624e-03, -4.755963e-05, -2.377982e-04),
        (6.228513e-01, -8.700783e-03, 9.719796e-04, 5.184584e-03, 4.951699e-04, -9.632370e-04),
        (3.295553e-02, 9.114398e-01, 5.565265e-02),
    ),
    "ElectricEIRChiller Carrier 19XL 1797kW/5.69COP/Vanes": (
        1797000, 5.69, 0.39,
        (9.084596e-01, 4.671596e-02, -1.188845e-03, -2.284596e-03, -3.170254e-05, -3.577858e-04),
        (1.084290e00, -4.318103e-02, 1.586113e-03, 1.664015e-03, 8.043383e-05, 5.681056e-05),
        (5.926251e-01, -2.657314e-01, 6.731751e-01),
    ),
    "ElectricEIRChiller Carrier 19FA 5651kW/5.50COP/Vanes": (
        5651300, 5.50, 0.19,
        (1.299676e00, 1.790645e-02, -2.522300e-03, 2.536423e-03, -1.128041e-03, 3.003265e-03),
        (7.853207e-01, -1.652255e-02, -3.294526e-04, 4.569179e-03, 1.964013e-04, 1.761497e-04),
        (1.629327e-01, 5.709336e-01, 2.659304e-01),
    ),
}  # fmt: skip
REFERENCE_TEMPS = (6.67, 29.44)  # °C, AHRI 550/590 leaving chilled water, entering condenser
AIR_COOLED_NAME = "ElectricEIRChiller Carrier 30XA240 801.6kW/3COP"


def doe2_power(name: str, load: float, x: float, y: float) -> tuple[float, float]:
    """Chiller:Electric:EIR written out from the EnergyPlus Engineering Reference: (P, unmet)."""
    q_ref, cop, plr_min, a, b, c = CHILLERS[name]
    capft = a[0] + a[1] * x + a[2] * x**2 + a[3] * y + a[4] * y**2 + a[5] * x * y
    eirft = b[0] + b[1] * x + b[2] * x**2 + b[3] * y + b[4] * y**2 + b[5] * x * y
    q_avail = q_ref * capft
    plr = min(load / q_avail, 1.0)
    cycling = min(plr / plr_min, 1.0)
    p = max(plr, plr_min)
    eirfplr = c[0] + c[1] * p + c[2] * p**2
    return q_avail / cop * eirft * eirfplr * cycling, max(load - q_avail, 0.0)


def test_reader_renames_and_keeps_the_coefficients():
    data, meta = read_chiller_curves()
    assert len(data) == 162 and data.index.is_unique
    for name, (q_ref, cop, plr_min, capft, eirft, eirfplr) in CHILLERS.items():
        curves = chiller(name)
        assert (curves.reference_capacity, curves.reference_cop) == (q_ref, cop)
        assert curves.min_part_load == plr_min and curves.condenser_type == "WaterCooled"
        assert (curves.reference_temp_chw_leaving, curves.reference_temp_cond_entering) == (
            REFERENCE_TEMPS
        )
        assert (curves.capft, curves.eirft, curves.eirfplr) == (capft, eirft, eirfplr)
    # Two generic DOE-2 rows carry no capacity ("Autosize").
    assert meta["autosized"] == ["DOE-2 Centrifugal/5.50COP", "DOE-2 Reciprocating/3.67COP"]
    assert np.isnan(data.loc["DOE-2 Centrifugal/5.50COP", "reference_capacity"])
    air, _ = read_chiller_curves(AIR_COOLED)
    assert len(air) == 111 and set(air["condenser_type"]) == {"AirCooled"}


@pytest.mark.parametrize("name", CHILLERS)
def test_chiller_power_matches_the_doe2_equations(name):
    curves = chiller(name)
    fractions = np.array([0.3, 0.6, 1.0])[:, None, None]
    temp_chw = np.array([6.67, 10.0])[None, :, None]
    temp_cond = np.array([20.0, 29.4, 35.0])[None, None, :]
    load = fractions * curves.reference_capacity
    op = cooling.chiller_power(load, temp_chw, temp_cond, curves)
    assert op.power.shape == op.unmet.shape == op.capacity.shape == (3, 2, 3)
    expected = np.array(
        [
            doe2_power(name, f * curves.reference_capacity, x, y)
            for f in fractions.ravel()
            for x in temp_chw.ravel()
            for y in temp_cond.ravel()
        ]
    ).reshape(3, 2, 3, 2)
    # Same arithmetic in another order: agreement to rounding.
    assert_allclose(op.power, expected[..., 0], rtol=1e-12)
    assert_allclose(op.unmet, expected[..., 1], rtol=1e-12, atol=1e-6)


@pytest.mark.parametrize("name", CHILLERS)
def test_curves_are_about_one_at_the_reference_point(name):
    curves = chiller(name)
    # The curves are regressions normalised near 1 at the calibration point: CAPFT of these rows is
    # within 0.7 % of 1 (19FA: 0.9936), EIRFT and EIRFPLR(1) within 0.4 %.
    assert cooling.biquadratic(curves.capft, *REFERENCE_TEMPS) == pytest.approx(1.0, abs=0.01)
    assert cooling.biquadratic(curves.eirft, *REFERENCE_TEMPS) == pytest.approx(1.0, abs=0.005)
    assert cooling.part_load_curve(curves.eirfplr, 1.0) == pytest.approx(1.0, abs=0.005)
    op = cooling.chiller_power(curves.reference_capacity, *REFERENCE_TEMPS, curves)
    ideal = curves.reference_capacity / curves.reference_cop
    assert op.power == pytest.approx(ideal, rel=0.01)
    assert op.capacity == pytest.approx(curves.reference_capacity, rel=0.01)


def test_load_beyond_capacity_is_unmet():
    curves = chiller("ElectricEIRChiller Carrier 19FA 5651kW/5.50COP/Vanes")
    full = cooling.chiller_power(curves.reference_capacity, 6.67, 35.0, curves)
    # At 35 °C condenser water this chiller's CAPFT extrapolates to 0.715 of its capacity.
    assert full.capacity == pytest.approx(0.715 * curves.reference_capacity, rel=1e-3)
    double = cooling.chiller_power(2 * curves.reference_capacity, 6.67, 35.0, curves)
    assert double.unmet == pytest.approx(2 * curves.reference_capacity - double.capacity)
    assert double.power == pytest.approx(full.power)  # both run flat out
    # A larger maximum part-load ratio (Chillers.idf sets 1.02–1.15) lifts the capacity with it.
    stretched = dataclasses.replace(curves, max_part_load=1.15)
    more = cooling.chiller_power(2 * curves.reference_capacity, 6.67, 35.0, stretched)
    assert more.capacity == pytest.approx(1.15 * double.capacity)
    assert more.power > double.power
    assert cooling.chiller_power(0.0, 6.67, 29.44, curves).power == 0.0


def test_air_cooled_chiller_draws_more_per_kw_when_hotter():
    curves = chiller(AIR_COOLED_NAME, AIR_COOLED)
    outdoor = np.array([25.0, 30.0, 35.0, 40.0, 45.0])
    load = 0.6 * curves.reference_capacity
    op = cooling.chiller_power(load, 6.67, outdoor, curves)
    assert np.all(op.unmet == 0.0)
    kw_per_kw = op.power / load
    assert np.all(np.diff(kw_per_kw) > 0.0)
    # About 2.5 % more electricity per kelvin of outdoor air for this unit (its curves).
    assert kw_per_kw[-1] / kw_per_kw[0] == pytest.approx(1.65, abs=0.05)


def test_part_load_curve_quadratic_and_cubic():
    assert cooling.part_load_curve((1.0, 2.0, 3.0), 2.0) == 1 + 4 + 12
    assert cooling.part_load_curve((1.0, 2.0, 3.0, 4.0), 2.0) == 1 + 4 + 12 + 32
    with pytest.raises(ValueError, match="3 or 4"):
        cooling.part_load_curve((1.0, 2.0), 0.5)


def test_evaporative_supply_and_water_on_hand_values():
    # 35 °C dry-bulb, 20 °C wet-bulb, ε = 0.85: 35 − 0.85 · 15 = 22.25 °C.
    assert cooling.direct_evaporative_supply(35.0, 20.0) == pytest.approx(22.25)
    assert cooling.direct_evaporative_supply(35.0, 20.0, effectiveness=1.0) == pytest.approx(20.0)
    # 1 MW rejected by evaporation: 1e6 / 2.45e6 = 0.408 kg/s; with 4 cycles of concentration the
    # make-up is 4/3 of that (blowdown = evaporation / 3): 0.544 kg/s.
    assert cooling.evaporation_water(1e6) == pytest.approx(0.40816, rel=1e-4)
    assert cooling.evaporation_water(1e6, cycles_of_concentration=4.0) == pytest.approx(
        0.54422, rel=1e-4
    )
    with pytest.raises(ValueError, match="exceed 1"):
        cooling.evaporation_water(1e6, cycles_of_concentration=1.0)


def test_heat_rejection_and_fans_on_hand_values():
    # 78 °F wet-bulb with the default 7 °F approach gives the 85 °F condenser water of AHRI 550/590.
    assert cooling.cooling_tower_leaving((78 - 32) / 1.8) == pytest.approx(
        (85 - 32) / 1.8, abs=0.02
    )
    assert cooling.dry_cooler_leaving(30.0, approach=8.0) == 38.0
    assert_allclose(
        cooling.fan_power(np.array([1.0, 0.5, 0.1, 0.0]), 10e3), [10e3, 1250.0, 80.0, 80.0]
    )


def test_chiller_curves_validate():
    curves = chiller("ElectricEIRChiller Carrier 19FA 5651kW/5.50COP/Vanes")
    with pytest.raises(ValueError, match="min_part_load"):
        dataclasses.replace(curves, min_part_load=0.0)
    with pytest.raises(ValueError, match="capft"):
        dataclasses.replace(curves, capft=(1.0, 0.0))


def test_unknown_chiller_suggests_a_name():
    with pytest.raises(PowerModelError, match="did you mean 'ElectricEIRChiller Carrier 19FA"):
        chiller("Carrier 19FA")
    with pytest.raises(PowerModelError, match="did you mean 'ElectricEIRChiller Carrier 19FA"):
        chiller("ElectricEIRChiller Carier 19FA 5651kW/5.50COP/Vanes")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text.replace("5.89,", "five,", 1), r"ref_COP of chiller .* is 'five'"),
        (lambda text: text.replace("min_PLR,", "minPLR,", 1), "missing column.*min_PLR"),
        (lambda text: text.replace("Curve:Quadratic", "Curve:Linear", 1), "Curve:Linear"),
        (lambda text: text.replace(",0.10,WaterCooled", ",0.0,WaterCooled", 1), "min_part_load"),
        (lambda text: text.splitlines()[0], "no chillers"),
        (lambda text: "", "not a readable CSV"),
    ],
)
def test_bad_files_raise_one_line_naming_the_file(tmp_path, edit, message):
    path = tmp_path / "chillers.csv"
    path.write_text(edit(WATER_COOLED.read_text()))
    with pytest.raises(DataFileError, match=message) as info:
        read_chiller_curves(path)
    assert str(info.value).startswith(str(path)) and "\n" not in str(info.value)


def test_missing_file():
    with pytest.raises(DataFileError, match="no such file"):
        read_chiller_curves(WATER_COOLED.with_name("nothing.csv"))
