"""The dashboard: figure builder and header text on numbers, the whole page in a real browser."""

from __future__ import annotations

import numpy as np
import pytest
from numpy.testing import assert_allclose

from powermodel import load_scenario, metrics, simulate
from powermodel.webapp import create_app, ids
from powermodel.webapp.figures import power_figure
from powermodel.webapp.layout import summary

ONE_DAY = {"simulation.duration": "1d"}
TWO_DAYS = {"simulation.duration": "2d"}


@pytest.fixture(scope="module")
def day():
    return simulate(load_scenario("llama3-405b-16k-h100", ONE_DAY))


def test_power_figure_means_envelope_and_events(day):
    env_min, env_max, mean, events = power_figure(day).data

    assert mean.y.size == env_min.y.size == env_max.y.size == 1440  # one day of 1-min means
    # Whole minutes of 1-s interval means: the mean of means is the mean, up to rounding.
    assert_allclose(mean.y.mean(), float(day["it_power"].mean()), rtol=1e-9)
    assert np.all(env_min.y <= mean.y) and np.all(mean.y <= env_max.y)
    assert env_min.y.min() == float(day["it_power"].min())
    assert env_max.y.max() == float(day["it_power"].max())
    for trace in (env_min, env_max, mean):  # the scenario's start, then one point a minute [ms]
        assert (trace.x0, trace.dx) == ("2024-07-01T00:00:00", 60_000)

    unexpected = day["event_kind"].values == "unexpected"
    assert events.x.size == unexpected.sum() == metrics(day)["unexpected_interruptions"] > 0
    assert np.all(events.y > env_max.y.max())  # a row above the envelope, never hiding it


def test_summary_line():
    m = {
        "mean_mw": 15.46,
        "peak_mw": 17.74,
        "min_mw": 5.03,
        "unexpected_interruptions": 21,
        "effective_training_time": 0.8833,
    }
    assert summary(m, 2 * 86400.0) == (
        "2d · mean 15.5 MW · peak 17.7 MW · min 5.0 MW · 21 unexpected interruptions"
        " · effective training time 88.3 %"
    )


def test_page_renders_in_browser(dash_duo):
    m = metrics(simulate(load_scenario("llama3-405b-16k-h100", TWO_DAYS)))
    dash_duo.start_server(create_app(overrides=TWO_DAYS))

    dash_duo.wait_for_text_to_equal(f"#{ids.SCENARIO_NAME}", "llama3-405b-16k-h100")
    dash_duo.wait_for_text_to_equal(f"#{ids.SUMMARY}", summary(m, 2 * 86400.0))
    # Plotly writes the legend once it has drawn the traces, the WebGL ones included.
    dash_duo.wait_for_element(f"#{ids.POWER_GRAPH} .gl-canvas-context")
    dash_duo.wait_for_contains_text(
        f"#{ids.POWER_GRAPH} .legend",
        f"unexpected interruption ({m['unexpected_interruptions']})",
    )
    assert dash_duo.driver.title == "powermodel"
    assert dash_duo.get_logs() == []
