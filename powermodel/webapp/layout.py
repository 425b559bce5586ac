"""Layout of the dashboard: functions returning Dash components."""

from __future__ import annotations

from typing import Any

import plotly.graph_objects as go
from dash import dcc, html

from powermodel.scenario import format_duration
from powermodel.webapp import ids


def summary(metrics: dict[str, Any], duration: float) -> str:
    """One line of headline numbers from :func:`powermodel.metrics` and the run length [s]."""
    return " · ".join(
        [
            format_duration(duration),
            f"mean {metrics['mean_mw']:.1f} MW",
            f"peak {metrics['peak_mw']:.1f} MW",
            f"min {metrics['min_mw']:.1f} MW",
            f"{metrics['unexpected_interruptions']} unexpected interruptions",
            f"effective training time {100 * metrics['effective_training_time']:.1f} %",
        ]
    )


def header(scenario_name: str, summary_line: str) -> html.Header:
    """The scenario's name and its headline numbers, on one line."""
    return html.Header(
        [
            html.H1(
                scenario_name,
                id=ids.SCENARIO_NAME,
                style={"fontSize": "20px", "margin": "0 16px 0 0", "whiteSpace": "nowrap"},
            ),
            html.P(summary_line, id=ids.SUMMARY, style={"margin": "0", "color": "#444"}),
        ],
        style={
            "display": "flex",
            "flexWrap": "wrap",
            "alignItems": "baseline",
            "padding": "12px 20px 4px",
        },
    )


def page(scenario_name: str, summary_line: str, figure: go.Figure) -> html.Div:
    """The whole page: header above the power figure, which fills the rest of the window."""
    return html.Div(
        [
            header(scenario_name, summary_line),
            dcc.Graph(
                id=ids.POWER_GRAPH,
                figure=figure,
                config={"displaylogo": False},
                style={"flex": "1 1 auto", "minHeight": "0"},
            ),
        ],
        style={
            "display": "flex",
            "flexDirection": "column",
            "height": "100vh",
            "fontFamily": "system-ui, sans-serif",
        },
    )
