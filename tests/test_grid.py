"""The connection (powermodel.models.grid): reactive power from the power-factor curves and the
voltage change a swing makes on the grid's strength (issue 4)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import REFERENCE

from powermodel import load_scenario, simulate


def test_grid_power_is_facility_power_without_storage_and_reactive_power_follows_the_curves():
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "2h"}))
    np.testing.assert_array_equal(ds["grid_power"].values, ds["facility_power"].values)
    sc = load_scenario(REFERENCE)
    # leading server supplies (standby chain, no rectifier in between): at the running load
    # ``it_power / (nodes · 19.8 kW)`` the preset's curve gives pf; Q = -P·tan(acos pf) for IT,
    # +P·tan(acos 0.95) for cooling and misc
    it, other = ds["it_power"].values, (ds["cooling_power"] + ds["misc_power"]).values
    pf = np.interp(
        it / (sc.cluster.n_nodes * sc.cluster.psu.capacity / 1e6),
        [0.1, 0.2, 0.5, 1.0],
        [0.90, 0.96, 0.98, 0.99],
    )
    expected = -it * np.tan(np.arccos(pf)) + other * np.tan(np.arccos(0.95))
    np.testing.assert_allclose(ds["grid_reactive_power"].values, expected, rtol=1e-9)
    # a double-conversion UPS shows the grid its rectifier's lagging 0.99 instead
    ups = simulate(
        load_scenario(
            REFERENCE, {"simulation.duration": "2h", "electrical.chain": "double-conversion"}
        )
    )
    assert np.all(ups["grid_reactive_power"].values > 0)


def test_voltage_change_of_a_swing_from_the_grid_strength():
    # IEC 61000-3-7 style estimate: dV/V = -(dP cos θ + dQ sin θ)/S_sc, θ = atan(X/R).
    # A 10 MW step at unity power factor on 2,400 MVA, X/R 10: -10·0.0995/2400 = -0.0415 %.
    from powermodel.models.grid import voltage_change

    assert voltage_change(10.0, 0.0, 2400.0, 10.0) == pytest.approx(
        -10 * np.cos(np.arctan(10)) / 2400
    )
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "2h"}))
    sc = load_scenario(REFERENCE)
    theta = np.arctan(sc.grid.x_r)
    expected = (
        1 - (ds["grid_power"] * np.cos(theta) + ds["grid_reactive_power"] * np.sin(theta)) / 2400.0
    )
    np.testing.assert_allclose(ds["grid_voltage"].values, expected.values, rtol=1e-12)
