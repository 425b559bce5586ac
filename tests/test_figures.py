"""The dashboard's figures and tables as a facilities engineer reads them (issue 10).

Expected values come from powermodel's own API on the same Dataset (``metrics``, ``resample``,
``signal``, ``analysis``) and from the figures' own constants; where a wording is asserted, the
test names what the words must tell the reader.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from powermodel import load_scenario, metrics, rules, simulate
from powermodel.analysis import diurnal_swing, resample
from powermodel.models import signal
from powermodel.models.events import State
from powermodel.webapp import figures, plotting, tables

REFERENCE = "llama3-405b-16k-h100"
ONE_DAY = {"simulation.duration": "1d"}
BATTERY = {"mitigation.storage": [{"location": "site", "power": 2.0, "energy": 0.5}]}


@pytest.fixture(scope="module")
def day():
    return simulate(load_scenario(REFERENCE, ONE_DAY))


@pytest.fixture(scope="module")
def with_battery():
    return simulate(load_scenario(REFERENCE, {"simulation.duration": "2h", **BATTERY}))


def _operations(patch) -> list[dict]:
    return patch.to_plotly_json()["operations"]


# --- 1. no "[R]" --------------------------------------------------------------------------------


def test_thinned_traces_keep_their_names():
    # three days: 4,320 one-minute means, so the means are thinned as well as the samples
    ds = simulate(load_scenario(REFERENCE, {"simulation.duration": "3d"}))
    fig = figures.power_figure(ds)
    assert len(fig.hf_data) == 4  # two lines at full resolution, and their means
    names = [t.name for t in fig.data]
    patch = fig.construct_update_data_patch(
        {"xaxis.range[0]": "2024-07-01 06:00:00", "xaxis.range[1]": "2024-07-02 18:00:00"}
    )
    renamed = {
        op["location"][1]: op["params"]["value"]
        for op in _operations(patch)
        if op["location"][0] == "data" and op["location"][2:] == ["name"]
    }
    assert renamed and all(names[i] == name for i, name in renamed.items())
    assert not any("[R]" in n for n in names)


# --- 2. facility and grid power -----------------------------------------------------------------


def test_facility_power_equal_to_grid_power_is_one_line_named_for_both(day):
    assert_array_equal(day["facility_power"].values, day["grid_power"].values)  # no battery
    assert figures.power_lines(day) == [
        ("facility_power", "Facility power = grid power (no site battery)"),
        ("it_power", "IT power at the rack input"),
    ]
    fig = figures.power_figure(day)
    assert not any(t.name.startswith(day["grid_power"].attrs["long_name"]) for t in fig.data)


def test_a_site_battery_draws_facility_and_grid_power_apart(with_battery):
    ds = with_battery
    assert not np.array_equal(ds["facility_power"].values, ds["grid_power"].values)
    lines = figures.power_lines(ds)
    assert [n for n, _ in lines] == ["facility_power", "it_power", "grid_power"]
    assert [label for _, label in lines] == [ds[n].attrs["long_name"] for n, _ in lines]
    fig = figures.power_figure(ds)
    for trace, (name, label) in zip(fig.hf_data, lines, strict=False):
        assert trace["name"] == label
        assert_allclose(trace["y"], ds[name].values, rtol=0)


# --- 3. the envelope and the mean ---------------------------------------------------------------


def test_power_is_a_light_full_resolution_line_under_bold_one_minute_means(day):
    fig = figures.power_figure(day)
    thin, means = fig.data[:2], fig.data[2:4]
    for trace in thin:  # every sample (min-max thinned when zoomed out), light, no legend entry
        assert trace.opacity == plotting.LIGHT and trace.showlegend is False
        assert trace.line.width < means[0].line.width
    # the means are those of a 1-min export (analysis.resample, energy-exact), each drawn at
    # the middle of its minute's samples: 29.5 s after the first at 1 s
    minutes = resample(day, "1min")
    for trace, name in zip(means, ("facility_power", "it_power"), strict=True):
        assert trace.name.endswith(", 1-min mean") and trace.showlegend is not False
        assert_allclose(trace.y, minutes[name].values, rtol=1e-12)
        assert_array_equal(
            pd.to_datetime(trace.x), day["time"].values[::60] + np.timedelta64(29500, "ms")
        )
    assert [t.legendgroup for t in thin] == [t.legendgroup for t in means]
    # the axis says how to read them
    title = fig.layout.xaxis.title.text
    assert title.startswith("time (UTC)") and "1-min means" in title and "min and max" in title


def test_block_means_keep_a_short_last_block():
    x = np.arange(7.0)
    centres, means = plotting.block_means(x, np.array([1.0, 3, 5, 7, 9, 11, 13]), 3)
    assert_allclose(means, [3.0, 9.0, 13.0])  # (1+3+5)/3, (7+9+11)/3, 13
    assert_allclose(centres, [1.0, 4.0, 6.0])


def test_a_step_of_a_minute_draws_the_samples_alone():
    ds = simulate(load_scenario(REFERENCE, {**ONE_DAY, "simulation.dt": "1min"}))
    fig = figures.power_figure(ds)
    lines = [t for t in fig.data if t.mode == "lines"]
    assert len(lines) == 2 and all(t.opacity == 1.0 and t.showlegend for t in lines)
    assert fig.layout.xaxis.title.text == "time (UTC)"


def test_grid_mitigation_and_compare_views_draw_means_too(day, with_battery):
    grid = figures.grid_figure(day)
    assert [t.name for t in grid.data[:5]] == [
        "P at the connection",
        "Q at the connection (+ absorbed)",
        "P at the connection, 1-min mean",
        "Q at the connection (+ absorbed), 1-min mean",
        "max − min in 5 s, unfiltered [MW]",
    ]
    assert_allclose(grid.data[2].y, resample(day, "1min")["grid_power"].values, rtol=1e-12)
    two = figures.before_after_figure(day, day)
    assert [t.name for t in two.data] == [
        "P without mitigation",
        "P with mitigation",
        "P without mitigation, 1-min mean",
        "P with mitigation, 1-min mean",
    ]
    compare = figures.compare_figure(day, with_battery, ("a", "b"))
    assert [t.name for t in compare.data] == ["a", "a, 1-min mean", "b", "b, 1-min mean"]


# --- 4. the spectrum's bands --------------------------------------------------------------------


def test_spectrum_bands_have_legend_entries(day):
    chosen = rules.load_rules(["ercot-5s", "ieso-1min"])  # a band, and a rule without one
    fig = figures.spectrum_figure(day, chosen)
    shapes = [(s.name, s.showlegend, s.x0, s.x1) for s in fig.layout.shapes]
    # ERCOT: 0.1-55 Hz, shaded up to Nyquist at 1 s (0.5 Hz); half of Nyquist is resolved
    assert shapes == [
        ("ercot-5s band, 0.1–55 Hz", True, 0.1, 0.5),
        ("not resolved at a 1-s step (above 0.25 Hz)", True, 0.25, 0.5),
    ]
    assert fig.layout.annotations == ()  # the legend names them


# --- 5. the ramp histograms ---------------------------------------------------------------------


def test_each_ramp_reading_has_its_own_axis_and_unit(day):
    fig = figures.ramp_figure(day)
    assert [t.name for t in fig.data] == [
        "1-min net change",
        "1-min average slope",
        "5-s max − min",
    ]
    assert [t.xaxis for t in fig.data] == ["x", "x2", "x3"]
    units = [fig.layout[f"xaxis{i}"].title.text for i in ("", "2", "3")]
    assert units == ["MW", "MW/min", "MW"]
    assert [a.text for a in fig.layout.annotations] == [t.name for t in fig.data]
    for trace, unit in zip(fig.data, units, strict=True):
        assert f"}} {unit}:" in trace.hovertemplate
        assert_allclose(trace.y.sum(), 1.0, rtol=1e-12)  # shares of time
    # the slope histogram spans what metrics() reports as the 1-min ramps up and down
    m = metrics(day)
    slope = fig.data[1]
    assert slope.x[-1] + slope.width[-1] / 2 == pytest.approx(
        m["grid_ramp_1min_average_slope_up_mw"], rel=1e-12
    )
    assert slope.x[0] - slope.width[0] / 2 == pytest.approx(
        -m["grid_ramp_1min_average_slope_down_mw"], rel=1e-12
    )


# --- 6. the clock above 1 -----------------------------------------------------------------------


def test_the_clock_above_one_at_failures_is_explained_where_it_is_drawn(day):
    # the clock is above 1.03 only while the job does not run (idle GPUs cool) or in the three
    # minutes after it resumes, while the dies warm again
    clock, state = day["clock_factor"].values, day["job_state"].values
    idle_lately = signal.rolling_mean(state != State.RUNNING, 181) > 0
    assert clock.max() > 1.03 and not np.any((clock > 1.03) & ~idle_lately)
    fig = figures.thermal_figure(day)
    trace = next(t for t in fig.data if t.name == day["clock_factor"].attrs["long_name"])
    assert "× nominal" in trace.hovertemplate
    (note,) = fig.layout.annotations
    assert (note.xref, note.yref) == (f"{trace.xaxis} domain", f"{trace.yaxis} domain")
    for words in ("power cap", "leaks less", "failures", "idle GPUs cool", "after the restart"):
        assert words in note.text
    assert fig.layout[f"yaxis{trace.yaxis[1:]}"].title.text == "clock ÷ nominal"


# --- 7. the thermal view's numbers --------------------------------------------------------------


def test_thermal_numbers_say_what_each_measures(day):
    m = metrics(day)
    swing, trough = diurnal_swing(day)
    timezone = day.attrs["site_timezone"]
    rows = tables.thermal_numbers(m, swing, trough, timezone)
    table = {what: (value, meaning) for what, value, meaning in rows}
    assert list(table) == [
        "PUE over the run",
        "WUE",
        "chiller hours",
        "throughput lost to heat",
        "daily throughput swing",
    ]
    assert table["PUE over the run"][0] == f"{m['pue']:.3f}"
    assert table["WUE"][0] == f"{m['wue_l_per_kwh']:.3f} L/kWh"
    assert table["throughput lost to heat"][0] == f"{m['throughput_lost_to_heat']:.2%}"
    assert table["daily throughput swing"][0] == f"{swing:.2%}, lowest at {trough}:00 ({timezone})"
    # the two throughput numbers measure different things, and the loss is the smaller
    assert 0 < m["throughput_lost_to_heat"] < swing
    lost, daily = table["throughput lost to heat"][1], table["daily throughput swing"][1]
    assert "whole run" in lost and "setpoint" in lost
    assert "hour of day" in daily and "over the daily mean" in daily


# --- 8. time axes -------------------------------------------------------------------------------


def test_every_time_axis_says_utc_or_local_time(day):
    results = rules.check(day, rules.load_rules(["ercot-5s"]))
    for fig, rows in (
        (figures.power_figure(day), 1),
        (figures.thermal_figure(day), 4),
        (figures.grid_figure(day, results), 3),
        (figures.before_after_figure(day, day), 2),
    ):
        bottom = fig.layout[f"xaxis{rows if rows > 1 else ''}"]
        assert bottom.title.text.startswith("time (UTC)")
        assert {
            fig.layout[f"xaxis{i if i > 1 else ''}"].hoverformat for i in range(1, rows + 1)
        } == {plotting.HOVER_TIME}
        marks = [t for t in fig.data if t.mode == "markers"]
        assert marks == [] or all("UTC" in t.hovertemplate for t in marks)
    diurnal = figures.diurnal_figure(day)
    assert diurnal.layout.xaxis.title.text == "hour of day, site local time (America/New_York)"
    compare = figures.compare_figure(day, day, ("a", "b"))
    assert compare.layout.xaxis2.title.text.startswith("hours since each run's start")


# --- 9. units in the tables ---------------------------------------------------------------------


def test_metric_table_units(day):
    m = metrics(day)
    assert {key for key, *_ in tables.METRICS} <= set(m)  # no key the metrics lost
    units = {key: unit for key, _, unit, _ in tables.METRICS}
    # IESO's 1-min rule reads the average slope in MW/min (rules.toml, [S, ieso])
    assert units["grid_ramp_1min_average_slope_up_mw"] == "MW/min"
    assert units["grid_ramp_1min_average_slope_down_mw"] == "MW/min"
    for _, label, unit, fmt in tables.METRICS:
        if fmt.endswith("%}"):  # a fraction, shown as a percentage
            assert unit.startswith("%"), label
    rows = {r["metric"]: r["this"] for r in tables.metric_rows([m], ["this"])}
    assert rows["effective training time [% of the run]"] == f"{m['effective_training_time']:.1%}"
    assert rows["load factor at the grid (mean ÷ peak) [%]"] == f"{m['grid_load_factor']:.1%}"


def test_cost_rows_say_their_units():
    costs = {
        "grid_energy_cost": -0.1,
        "grid_energy_mwh_per_day": -45.0,
        "throughput_cost": 0.05,
        "storage_cycles_per_day": 1.5,
        "cost_per_year": 1.0e6,
    }
    assert tables.cost_rows(costs) == [
        {"cost": "grid energy change [%]", "value": "-10.00%"},
        {"cost": "grid energy change per day", "value": "-45.00 MWh/day"},
        {"cost": "tokens lost [%]", "value": "5.00%"},
        {"cost": "battery full cycles per day", "value": "1.50"},
        {"cost": "cost per year", "value": "$1,000,000"},
    ]


def test_ramp_readings_match_the_signal_library(day):
    # the histograms count the same readings the rules measure (powermodel.models.signal)
    fig = figures.ramp_figure(day, bins=30)
    p, n = day["grid_power"].values, 60
    for trace, values in zip(
        fig.data,
        (
            signal.net_change(p, n)[n:],
            signal.average_slope(p, n)[2 * n :],
            signal.rolling_range(p, 5),
        ),
        strict=True,
    ):
        counts, _ = np.histogram(values, bins=30)
        assert_allclose(trace.y, counts / values.size, rtol=1e-12)


def test_a_swing_the_step_cannot_measure_says_so():
    # issue 10: "largest 5-s swing nan MW": a 5-s window spans under two steps of 10 s
    coarse = simulate(
        load_scenario(REFERENCE, {"simulation.duration": "1d", "simulation.dt": "10s"})
    )
    m = metrics(coarse)
    assert np.isnan(m["grid_swing_5s_mw"])
    rows = {r["metric"]: r["this"] for r in tables.metric_rows([m], ["this"])}
    unresolved = "not resolved at a 10s step (needs dt <= 2.5s)"
    assert rows["largest 5-s swing at the grid [MW]"] == unresolved
    # found in review: a 3-s step printed a "5-s swing" over a 6-s window, and a run that never
    # trains said its step was too coarse. Two whole steps must fit the window, and each NaN
    # says its own reason (the CLI prints the same words)
    three = metrics(coarse.isel(time=slice(0, 2)).assign_attrs(dt=3.0))
    assert three["not_measured"]["grid_swing_5s_mw"].startswith("not resolved at a 3s step")
    idle = load_scenario(REFERENCE, {"simulation.duration": "10min", "workload.startup_ramp": "1d"})
    m = metrics(simulate(idle))
    assert np.isfinite(m["grid_swing_5s_mw"]) and m["tokens"] == 0
    assert m["not_measured"] == {
        "grid_swing_5s_training_mw": "none: no 5-s window lies wholly in training",
        "grid_energy_per_token_j": "none: no tokens trained",
    }
    rows = {r["metric"]: r["this"] for r in tables.metric_rows([m], ["this"])}
    assert rows["grid energy per token [J]"] == "none: no tokens trained"


def test_the_swing_row_draws_its_top_bold(day):
    # a week's rolling 5-s swing thins to a solid block; the bold line is the largest of each
    # minute, the band's upper edge, which is what a rule on the swing reads
    fig = figures.grid_figure(day)
    swing = signal.rolling_range(day["grid_power"].values, 5)
    bold = next(t for t in fig.data if t.name.endswith("largest a minute [MW]"))
    assert bold.line.width > 2 and len(bold.y) == day.sizes["time"] // 60
    assert_allclose(bold.y, swing.reshape(-1, 60).max(axis=1), rtol=0)
