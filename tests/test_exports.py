"""Each grid-tool export is read by the real tool (issue 4, acceptance 5)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from powermodel import load_scenario, simulate
from powermodel.errors import PowerModelError
from powermodel.export import export_tool

REFERENCE = "llama3-405b-16k-h100"


@pytest.fixture(scope="module")
def profile():
    """Six hours of the reference at 1 s, failures three times as often."""
    return simulate(
        load_scenario(REFERENCE, {"simulation.duration": "6h", "reliability.rate_scale": 3.0})
    )


def test_opendss_duty_run_follows_the_loadshape(profile, tmp_path):
    import opendssdirect as dss

    hour = profile.isel(time=slice(0, 3600))
    export_tool(hour, "opendss", tmp_path)
    dss.Text.Command(f"compile [{tmp_path / 'example.dss'}]")
    assert dss.Solution.Converged()
    dss.Monitors.Name("poi")
    assert dss.Monitors.SampleCount() == 3600
    p = sum(np.array(dss.Monitors.Channel(i)) for i in (1, 3, 5))  # kW of the three phases
    q = sum(np.array(dss.Monitors.Channel(i)) for i in (2, 4, 6))
    # monitors store single precision: 1e-6 relative
    np.testing.assert_allclose(p, hour["grid_power"].values * 1000, rtol=1e-6, atol=0.5)
    np.testing.assert_allclose(q, hour["grid_reactive_power"].values * 1000, rtol=1e-6, atol=0.5)


def test_opendss_example_without_a_scenario_says_it_uses_the_default_grid(profile, tmp_path):
    import opendssdirect as dss

    from powermodel.export import DEFAULT_GRID

    minutes = profile.isel(time=slice(0, 600))
    export_tool(minutes, "opendss", tmp_path / "simulated")
    example = (tmp_path / "simulated" / "example.dss").read_text()
    assert "short-circuit strength: the scenario's [grid]" in example
    trace = minutes.copy()
    trace.attrs = {k: v for k, v in minutes.attrs.items() if k != "scenario"}  # as a trace's
    export_tool(trace, "opendss", tmp_path / "trace")
    example = (tmp_path / "trace" / "example.dss").read_text()
    assert DEFAULT_GRID == {"short_circuit": 2400.0, "x_r": 10.0}
    assert "no scenario [grid] (a measured trace): the default 2,400 MVA, X/R 10" in example
    assert "MVAsc3=2400 MVAsc1=2400 x1r1=10 x0r0=10" in example
    dss.Text.Command(f"compile [{tmp_path / 'trace' / 'example.dss'}]")
    assert dss.Solution.Converged()


def test_opendss_long_shapes_go_to_binary_doubles(tmp_path):
    import opendssdirect as dss

    from powermodel.export import DBL_POINTS

    long = simulate(
        load_scenario(REFERENCE, {"simulation.duration": "30h", "reliability.rate_scale": 0.0})
    )
    assert long.sizes["time"] > DBL_POINTS
    files = export_tool(long, "opendss", tmp_path)
    assert {f.suffix for f in files} >= {".dbl"}
    dss.Text.Command(f"compile [{tmp_path / 'loadshape.dss'}]")
    dss.LoadShape.Name("datacenter")
    assert dss.LoadShape.Npts() == long.sizes["time"]
    np.testing.assert_allclose(dss.LoadShape.PMult(), long["grid_power"].values * 1000)


def test_gridlabd_plays_the_profile_and_the_recorder_matches(profile, tmp_path):
    import gridlabd

    minutes = profile.isel(time=slice(0, 7200))
    export_tool(minutes, "gridlabd", tmp_path)  # 1-min default: 120 points
    sim = gridlabd.GridLabD()
    try:
        assert sim.setup_before_load() == 0
        assert sim.load_glm(str(tmp_path / "example.glm"), workdir=str(tmp_path)) == 0
        assert sim.setup_after_load() == 0
        assert sim.run() == 0
    finally:
        sim.finalize()
    recorded = pd.read_csv(tmp_path / "poi.csv", comment="#", header=None, names=["time", "p", "q"])
    means = minutes["grid_power"].values.reshape(-1, 60).mean(axis=1)
    q_means = minutes["grid_reactive_power"].values.reshape(-1, 60).mean(axis=1)
    assert len(recorded) == means.size
    np.testing.assert_allclose(recorded["p"].values, means * 1e6, rtol=1e-5)
    np.testing.assert_allclose(recorded["q"].values, q_means * 1e6, rtol=1e-5, atol=10.0)


def test_gridlabd_refuses_sub_second_steps(tmp_path):
    fine = simulate(
        load_scenario(
            REFERENCE,
            {"simulation.duration": "1min", "simulation.dt": "0.5s", "reliability.rate_scale": 0},
        )
    )
    with pytest.raises(PowerModelError, match="whole seconds"):
        export_tool(fine, "gridlabd", tmp_path, resample="0.5s")


def test_pypsa_imports_the_folder(profile, tmp_path):
    import pypsa

    export_tool(profile, "pypsa", tmp_path)  # hourly by default, with min/max beside
    n = pypsa.Network()
    n.import_from_csv_folder(str(tmp_path))
    hourly = profile["grid_power"].values.reshape(-1, 3600)
    np.testing.assert_allclose(n.loads_t.p_set["datacenter"].values, hourly.mean(axis=1))
    np.testing.assert_allclose(
        n.loads_t.q_set["datacenter"].values,
        profile["grid_reactive_power"].values.reshape(-1, 3600).mean(axis=1),
    )
    assert list(pd.to_datetime(n.snapshots)) == list(pd.to_datetime(profile["time"].values[::3600]))
    envelope = pd.read_csv(tmp_path / "powermodel-envelope.csv", index_col=0)
    np.testing.assert_allclose(envelope["grid_power_max [MW]"].values, hourly.max(axis=1))


def test_pandapower_runs_a_time_series_on_the_profile(profile, tmp_path):
    import pandapower as pp
    from pandapower.control import ConstControl
    from pandapower.timeseries import DFData, OutputWriter, run_timeseries

    export_tool(profile.isel(time=slice(0, 7200)), "pandapower", tmp_path)  # 15-min steps
    frame = pd.read_csv(tmp_path / "profile.csv", index_col="time_step")
    assert len(frame) == 8
    assert frame["time"].iloc[1] == "2024-07-01T00:15:00Z"  # UTC, as every CSV we write
    net = pp.create_empty_network()
    poi = pp.create_bus(net, vn_kv=138.0)
    pp.create_ext_grid(net, poi)
    pp.create_load(net, poi, p_mw=0.0, q_mvar=0.0, name="datacenter")
    source = DFData(frame)
    ConstControl(net, "load", "p_mw", element_index=[0], data_source=source, profile_name=["p_mw"])
    ConstControl(
        net, "load", "q_mvar", element_index=[0], data_source=source, profile_name=["q_mvar"]
    )
    writer = OutputWriter(net, time_steps=frame.index, output_path=None)
    writer.log_variable("res_ext_grid", "p_mw")
    writer.log_variable("res_ext_grid", "q_mvar")
    run_timeseries(net, time_steps=frame.index, verbose=False)
    quarter = profile["grid_power"].values[:7200].reshape(-1, 900).mean(axis=1)
    np.testing.assert_allclose(writer.output["res_ext_grid.p_mw"][0].values, quarter, rtol=1e-9)
    # the grid supplies (generator reference, positive out) the Q our load absorbs: one sign
    q_quarter = profile["grid_reactive_power"].values[:7200].reshape(-1, 900).mean(axis=1)
    np.testing.assert_allclose(writer.output["res_ext_grid.q_mvar"][0].values, q_quarter, rtol=1e-9)


def test_playback_csv_is_time_p_q_at_the_native_step(profile, tmp_path):
    path, notes = export_tool(profile, "playback", tmp_path)
    frame = pd.read_csv(path)
    assert list(frame.columns) == ["t [s]", "P [MW]", "Q [Mvar]"]
    assert "from 2024-07-01T00:00:00Z (UTC)" in notes.read_text()
    assert "reactive power positive absorbed (lagging)" in notes.read_text()
    np.testing.assert_allclose(frame["t [s]"].values, np.arange(profile.sizes["time"]) * 1.0)
    np.testing.assert_allclose(frame["P [MW]"].values, profile["grid_power"].values)


def test_dataset_exports_through_the_same_command(profile, tmp_path):
    import xarray as xr

    (nc,) = export_tool(profile, "netcdf", tmp_path)
    back = xr.open_dataset(nc)
    np.testing.assert_allclose(back["grid_power"].values, profile["grid_power"].values)
    assert back.attrs["scenario"] == profile.attrs["scenario"]
    (csv,) = export_tool(profile, "csv", tmp_path, resample="1min")
    frame = pd.read_csv(csv)
    np.testing.assert_allclose(  # to the CSV's 7 significant digits (export.CSV_DIGITS)
        frame["grid_power_max [MW]"].values,
        profile["grid_power"].values.reshape(-1, 60).max(axis=1),
        rtol=5e-7,
        atol=0,
    )
