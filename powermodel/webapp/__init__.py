"""Dashboard of a simulated run: ``create_app()`` builds it, ``python app.py`` serves it."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import dash

from powermodel import load_scenario, metrics, simulate
from powermodel.analysis import step_seconds
from powermodel.webapp import layout
from powermodel.webapp.figures import power_figure

REFERENCE_SCENARIO = "llama3-405b-16k-h100"


def create_app(
    scenario_name: str = REFERENCE_SCENARIO,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
) -> dash.Dash:
    """A Dash app showing one scenario, simulated once here.

    Parameters
    ----------
    scenario_name
        A preset name or a path to a scenario file.
    overrides
        Dotted overrides, as for :func:`powermodel.load_scenario`.
    """
    scenario = load_scenario(scenario_name, overrides)
    ds = simulate(scenario)
    duration = ds.sizes["time"] * step_seconds(ds)
    app = dash.Dash(__name__, title="powermodel")
    app.layout = layout.page(scenario.name, layout.summary(metrics(ds), duration), power_figure(ds))
    return app
