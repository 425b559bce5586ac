"""The power view "as measured by" a sensor chain: the figure builder and its callback."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose

from powermodel import load_scenario, simulate
from powermodel.simulate import SENSORS, sensor_view
from powermodel.webapp import controls, figures, ids, layout
from powermodel.webapp.cache import SimulationCache
from powermodel.webapp.callbacks import Dashboard

REFERENCE = "llama3-405b-16k-h100"
HOUR = {"simulation.duration": "1h"}


@pytest.fixture(scope="module")
def hour():
    return simulate(load_scenario(REFERENCE, HOUR))


def behind(fig, name: str) -> np.ndarray:
    """The full-resolution values behind the trace named ``name``."""
    (trace,) = [t for t in fig.hf_data if t["name"] == name]
    return np.asarray(trace["y"])


def test_a_sensor_is_drawn_over_the_exact_lines_it_reads(hour):
    exact = figures.power_figure(hour)
    fig = figures.power_figure(hour, "nvml")
    view = sensor_view(hour, "nvml")
    # the NVML reading is the library's, at every sample, over the exact GPU power it reads
    assert_allclose(behind(fig, view.attrs["long_name"]), view.values, rtol=0)
    assert_allclose(behind(fig, hour["gpu_power"].attrs["long_name"]), hour["gpu_power"], rtol=0)
    # the exact lines stay first and as they were
    for a, b in zip(exact.hf_data[:2], fig.hf_data[:2], strict=True):
        assert a["name"] == b["name"]
        assert_allclose(a["y"], b["y"], rtol=0)


def test_a_grid_meter_reads_the_line_already_drawn(hour):
    fig = figures.power_figure(hour, "revenue")
    names = [t["name"] for t in fig.hf_data]
    # no battery: facility power is grid power, drawn once under that name; not drawn again
    assert hour["grid_power"].attrs["long_name"] not in names
    reading = behind(fig, "Active power at the point of interconnection, revenue meter reading")
    # 15-min block means at 1 s: the row ending each block holds that block's mean
    blocks = hour["grid_power"].values.reshape(4, 900).mean(axis=1)
    assert_allclose(reading[899::900], blocks, rtol=1e-12)


def test_a_sensor_the_step_cannot_resolve_is_named_not_drawn(hour):
    fig = figures.power_figure(hour, "pmu60")
    assert not [t for t in fig.hf_data if "PMU" in t["name"]]
    assert "not shown: the PMU (60/s) sensor (pmu60)" in fig.layout.xaxis.title.text
    assert "needs dt <= 8.333ms" in fig.layout.xaxis.title.text


def test_the_dropdown_offers_exact_and_every_chain():
    found = [c for c in _walk(layout.views()) if getattr(c, "id", None) == ids.SENSOR]
    assert len(found) == 1 and found[0].value == figures.EXACT
    assert [o["value"] for o in found[0].options] == [figures.EXACT, *SENSORS]
    assert [o["label"] for o in found[0].options][1:4] == ["NVML", "DCGM", "revenue meter"]


def _walk(component):
    yield component
    children = getattr(component, "children", None)
    for child in children if isinstance(children, list | tuple) else [children]:
        if child is not None and not isinstance(child, str):
            yield from _walk(child)


def test_the_callback_shows_the_chosen_sensor_and_ignores_what_it_does_not_offer(tmp_path):
    board = Dashboard(SimulationCache(), REFERENCE, HOUR, tmp_path.resolve(), 100_000)
    base = {"preset": REFERENCE}
    values = controls.shown_values(board.base(base))
    state, error = board.assemble(base, *controls.page_values(values))
    assert error == ""
    fig = board.power(state, "power", "scada")
    assert any(t.name.endswith("SCADA reading") for t in fig.data)
    for hostile in (None, "../../etc/passwd", 7, ["nvml"], "exact"):
        assert board.power(state, "power", hostile) is board.power(state, "power")
    # a zoom (outside a callback: the view the zoom callback looks up, then its patch) answers
    # from the figure with the sensor, whose reading it re-samples too
    t0 = pd.Timestamp("2024-07-01 00:30:00")
    relayout = {"xaxis.range[0]": str(t0), "xaxis.range[1]": str(t0 + pd.Timedelta(seconds=30))}
    shown = board.view("power", state, None, None, None, "scada")["figure"]
    assert shown is fig
    patch = board._patch(shown, relayout).to_plotly_json()
    touched = {op["location"][1] for op in patch["operations"] if op["location"][0] == "data"}
    scada = next(i for i, t in enumerate(fig.data) if t.name.endswith("SCADA reading"))
    assert scada in touched


def test_a_meter_with_no_report_yet_is_a_gap_not_a_made_up_block(hour):
    # the revenue meter reports its first block demand at 15 min: the rows before are NaN, drawn
    # as a gap (null in the page), and the line after holds the library's block demands
    fig = figures.power_figure(hour, "revenue")
    name = "Active power at the point of interconnection, revenue meter reading"
    reading = behind(fig, name)
    assert np.isnan(reading[:899]).all() and np.isfinite(reading[899:]).all()
    (shown,) = [t for t in fig.data if t.name == name]
    y = np.asarray(shown.y, dtype=float)
    assert np.isnan(y).any()
    blocks = hour["grid_power"].values.reshape(4, 900).mean(axis=1)
    assert_allclose(np.nanmax(y), blocks.max(), rtol=1e-12)
