"""Layout of the dashboard: functions returning Dash components (styles in assets/style.css)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dash_ag_grid as dag
from dash import dcc, html

from powermodel.export import TOOLS
from powermodel.fit_report import PREDICTED, REPLAYED
from powermodel.rules import rule_names
from powermodel.scenario import format_duration, gpu_catalogue, presets
from powermodel.webapp import design_panel, figures, ids, plotting
from powermodel.webapp.controls import BASE, GROUPS, Control, options

DEFAULT_RULES = ["ercot-5s", "nprr1191-down", "nprr1191-up", "ieso-1min", "ieso-15s"]
# the profile's own formats first, then the grid tools'
EXPORT_FORMATS = {
    name: f"{name}: {tool.description}"
    for name, tool in sorted(TOOLS.items(), key=lambda kv: kv[1].file is None)
}


def summary(metrics: dict[str, Any], duration: float) -> str:
    """One line of headline numbers from :func:`powermodel.metrics` and the run length [s]:
    what the grid sees (after any site battery) first, then the IT load behind it."""
    parts = [
        format_duration(duration),
        "grid mean {grid_mean_mw:.1f}, peak {grid_peak_mw:.1f}, min {grid_min_mw:.1f} MW".format(
            **metrics
        ),
        "IT mean {it_mean_mw:.1f}, peak {it_peak_mw:.1f}, min {it_min_mw:.1f} MW".format(**metrics),
        f"{metrics['unexpected_interruptions']} unexpected interruptions",
        f"effective training time {100 * metrics['effective_training_time']:.1f} %",
    ]
    if "pue" in metrics:
        parts.append(f"PUE {metrics['pue']:.3f}")
    return " · ".join(parts)


@dataclass(frozen=True)
class Opening:
    """What the first page shows as it renders (the opening scenario's run, simulated as the
    server started): every control's value by key, the page's base and state (the summary's
    ready state too), the scenario's name and its summary line."""

    values: dict[str, Any]
    base: dict[str, Any]
    state: dict[str, Any]
    name: str
    line: str


def header(opening: Opening | None = None) -> html.Header:
    """Scenario name, headline numbers, progress, and the ways to take the scenario away."""
    return html.Header(
        [
            html.H1(opening.name if opening else "", id=ids.SCENARIO_NAME),
            html.P(opening.line if opening else "", id=ids.SUMMARY),
            html.Span("", id=ids.STATUS, className="status", role="status"),
            html.Div(
                [
                    html.A("link to this view", id=ids.SHARE, href="", className="button"),
                    html.Button("download scenario (TOML)", id=ids.TOML_BUTTON, className="button"),
                    dcc.Download(id=ids.TOML_DOWNLOAD),
                ],
                className="actions",
            ),
        ],
        className="header",
    )


def _control(control: Control, values: dict[str, Any] | None = None) -> html.Div:
    """A control's block; with ``values``, showing its value there."""
    cid = ids.control(control.key, control.prop)
    shown = {control.prop: values[control.key]} if values else {}
    if control.kind == "dropdown":
        field = dcc.Dropdown(id=cid, options=options(control.key), clearable=False, **shown)
    elif control.kind == "slider":
        field = dcc.Slider(
            **shown,
            id=cid,
            min=control.low,
            max=control.high,
            step=control.step,
            marks=None,
            tooltip={"placement": "bottom", "always_visible": True},
        )
    elif control.kind == "date":
        field = dcc.DatePickerSingle(id=cid, display_format="YYYY-MM-DD", **shown)
    else:
        # no min or max here: a browser sends None for a number outside them, and the server
        # (which checks every value) could then only say "not a number"
        field = dcc.Input(
            id=cid,
            type="text" if control.kind == "text" else "number",
            step=control.step if control.step else "any",
            debounce=True,
            placeholder=control.hint or ("empty: the preset's" if control.empty == BASE else None),
            **shown,
        )
    label = f"{control.label} [{control.unit}]" if control.unit else control.label
    return html.Div(
        [
            html.Label(label, title=control.hint or control.key),
            field,
            # why the box's value is refused, at the box (the run uses every other box)
            html.Div("", id=ids.field_error(control.key), className="field-error", role="alert"),
        ],
        id=ids.field(control.key),
        className=field_class(control),
    )


def field_class(control: Control, refused: bool = False) -> str:
    """The class of a control's block: ``invalid`` marks a refused value."""
    return f"control control-{control.kind}" + (" invalid" if refused else "")


def sidebar(preset: str, upload_limit: int, values: dict[str, Any] | None = None) -> html.Aside:
    """The scenario: preset, upload, every control by group (showing ``values``, by key),
    weather upload, messages."""
    mb = f"{upload_limit / 1e6:g} MB"
    weather_upload = dcc.Upload(
        html.Div(["upload weather (EPW, up to ", mb, ")"]),
        id=ids.UPLOAD_WEATHER,
        accept=".epw",
        className="upload",
    )
    groups = [
        html.Details(
            [
                html.Summary(title),
                *(_control(c, values) for c in group),
                *([weather_upload] if any(c.key == "site.weather" for c in group) else []),
            ],
            open=True,
        )
        for title, group in GROUPS
    ]
    return html.Aside(
        [
            html.Div(
                [
                    html.Label("preset"),
                    dcc.Dropdown(id=ids.PRESET, options=presets(), value=preset, clearable=False),
                ],
                className="control",
            ),
            dcc.Upload(
                html.Div(["upload a scenario (TOML, up to ", mb, ")"]),
                id=ids.UPLOAD_SCENARIO,
                accept=".toml",
                className="upload",
            ),
            html.Div("", id=ids.SCENARIO_ERROR, className="message error", role="alert"),
            html.Div("", id=ids.MESSAGE, className="message", role="alert"),
            design_panel.panel(),
            *groups,
        ],
        className="sidebar",
    )


# what an empty view says to do, where it would draw empty axes
EMPTY = {
    "compare": "choose a preset to compare with above, or pin this scenario and change it",
    "fit": "upload a measured trace above (nvidia-smi, DCGM, rocm-smi or amd-smi, a meter's "
    "CSV, an MLPerf power log) to fit it and see it beside the fit",
    "sweep": "upload a sweep's results above (powermodel sweep SWEEP.toml -o results.nc) to "
    "draw a metric against a swept key",
    "campus": "open a campus (a preset with workloads, or a file with [campus] workloads) to "
    "see its workloads and halls",
}


def _graph(graph_id: Any, empty: str | None = None, **style: str) -> dcc.Graph:
    figure = plotting.empty_figure(EMPTY[empty]) if empty else None
    return dcc.Graph(
        id=graph_id,
        config={"displaylogo": False},
        className="graph",
        style=style,
        **({"figure": figure} if figure else {}),
    )


TABLES = {
    ids.COMPLIANCE: ("rule", "verdict", "limit", "worst", "when", "violations per day", "note"),
    ids.VIOLATIONS: ("rule", "start", "end", "violations", "worst", "unit", "cause"),
    ids.MITIGATION_COSTS: ("cost", "value"),
    ids.MITIGATION_RULES: ("rule", "limit", "worst without", "worst with", "verdict with"),
    ids.COMPARE_TABLE: ("metric", "this", "other", "change"),
    ids.FIT_TABLE: ("quantity", "fitted", "resolved", "how"),
    ids.FIT_NUMBERS: ("what", "measured", PREDICTED, REPLAYED),
    ids.SWEEP_FAILED: ("point", "seed", "error"),
    ids.CAMPUS_WORKLOADS: (
        "workload", "kind", "GPUs", "IT mean [MW]", "IT peak [MW]", "IT 5-s swing [MW]",
        "tokens", "training time kept",
    ),
    ids.CAMPUS_FLEX: (
        "event", "workloads", "lever", "notice [h]", "duration [h]", "asked [share]",
        "shed by workloads [MW]", "shed share", "shed at connection [MW]", "events a month",
        "tokens lost",
    ),
    ids.GRID_EVENTS_TABLE: (
        "time", "kind", "duration", "connection worst phase [pu]",
        "connection positive sequence [pu]", "supplies worst phase [pu]",
        "supplies positive sequence [pu]", "immunity, worst phase",
        "immunity, positive sequence", "UPS left the grid", "latched on backup",
        "servers lost power", "load lost [MW]", "back after",
    ),
    ids.GRID_EVENTS_SUMMARY: ("quantity", "value"),
    ids.GRID_EVENTS_CHECKS: ("requirement", "status", "verdict", "detail", "source"),
    ids.GRID_EVENTS_MODEL: ("quantity", "rmse", "rmse_share_of_p0"),
}  # fmt: skip


HEADERS = {"start": "start (UTC)", "end": "end (UTC)", "when": "when (UTC)"}


FILTERED = {ids.VIOLATIONS: ("rule", "cause")}  # columns filtered by text, in their heads


# a time stays on one line (the disturbances' wrapped over four): its column's least width
# [px], the text "2024-07-10 19:00:16.400" at the page's 14 px and the cell's padding
TIME_WIDTH = {"start": 180, "end": 180, "when": 180, "time": 215}


def _column(field: str, filtered: bool = False) -> dict[str, Any]:
    """A table column; a rule's name stays on one line (nprr1191-down broke at its hyphen),
    and so does a time."""
    wide = {"minWidth": 130} if field == "rule" else {}
    if field in TIME_WIDTH:
        wide = {"minWidth": TIME_WIDTH[field], "wrapText": False}
    found = {"filter": "agTextColumnFilter", "floatingFilter": True} if filtered else {}
    return {"field": field, "headerName": HEADERS.get(field, field), **wide, **found}


def _table(table_id: str, page_size: int = 10) -> dag.AgGrid:
    selectable = {
        "rowSelection": {"mode": "singleRow", "checkboxes": False, "enableClickSelection": True}
    }
    return dag.AgGrid(
        id=table_id,
        columnDefs=[_column(c, c in FILTERED.get(table_id, ())) for c in TABLES[table_id]],
        rowData=[],
        columnSize="responsiveSizeToFit",
        defaultColDef={
            "resizable": True,
            "sortable": True,
            "wrapText": True,
            "autoHeight": True,
            "wrapHeaderText": True,
            "autoHeaderHeight": True,
        },
        dashGridOptions={
            "domLayout": "autoHeight",
            "pagination": True,
            "paginationPageSize": page_size,
            "paginationPageSizeSelector": False,
            **(selectable if table_id == ids.VIOLATIONS else {}),
        },
        className="ag-theme-alpine table",
        style={"height": None},
    )


# what a view's spinner says while it is built (the grid view's first visit of a week took
# 19-20 s behind a bare spinner)
BUILDING = {
    "grid": "checking the utility rules over the run and drawing the grid view: a few seconds "
    "for a week (the rules' verdicts, each violation grouped into events)",
    "mitigation": "simulating the run without its mitigations, to compare: as long as the run",
    "compare": "simulating the run compared with, if it is not kept: as long as the run",
    "grid events": "simulating each disturbance close up and fitting the dynamic model",
}


def _loading(*children: Any, view: str = "") -> dcc.Loading:
    """A view behind its spinner, which says what is being built."""
    said = BUILDING.get(view, f"building the {view} view" if view else "building the view")
    spinner = html.Div([html.Div(className="spinner"), html.P(said)], className="building")
    return dcc.Loading(html.Div(list(children), className="view"), custom_spinner=spinner)


def views() -> dcc.Tabs:
    """One tab per view; each view's content is computed when its tab is open."""
    tabs = {
        "power": _power_tab(),
        "thermal": _thermal_tab(),
        "grid": _grid_tab(),
        "mitigation": _mitigation_tab(),
        "compare": _compare_tab(),
        "campus": _campus_tab(),
        "grid events": _grid_events_tab(),
        "sweep": _loading(*sweep_section(), view="sweep"),
        "export": _export_tab(),
    }
    return dcc.Tabs(
        [dcc.Tab(children, label=name, value=name) for name, children in tabs.items()],
        id=ids.TABS,
        value="power",
    )


def _power_tab() -> dcc.Loading:
    """The power view: the sensor chosen, the run's power."""
    return _loading(
        html.Div(
            [
                html.Label("as measured by"),
                dcc.Dropdown(
                    id=ids.SENSOR,
                    options=figures.sensor_options(),
                    value=figures.EXACT,
                    clearable=False,
                ),
            ],
            className="control",
        ),
        _graph(ids.resampled("power"), height="calc(100vh - 210px)"),
        view="power",
    )


def _thermal_tab() -> dcc.Loading:
    """The thermal view: the run's temperatures and cooling, the day's swing, its numbers."""
    return _loading(
        html.Div(
            [
                _graph(ids.resampled("thermal"), height="calc(100vh - 150px)"),
                html.Div(
                    [
                        _graph(ids.THERMAL_DIURNAL, height="360px"),
                        html.Div(id=ids.THERMAL_NUMBERS),
                    ],
                ),
            ],
            className="two-columns",
        ),
        view="thermal",
    )


def _grid_tab() -> dcc.Loading:
    """The grid view: the rules chosen, what the grid sees, ramps, spectrum, verdicts and
    violations."""
    return _loading(
        html.Div(
            [
                html.Label("utility rules"),
                dcc.Dropdown(id=ids.RULES, options=rule_names(), value=DEFAULT_RULES, multi=True),
            ],
            className="control wide",
        ),
        _graph(ids.resampled("grid"), height="520px"),
        html.Div(
            [_graph(ids.GRID_RAMPS, height="320px"), _graph(ids.GRID_SPECTRUM, height="320px")],
            className="two-columns even",
        ),
        html.H3("compliance"),
        _table(ids.COMPLIANCE),
        html.H3("violations, as events (click one to see it on the time axis)"),
        html.P(id=ids.VIOLATIONS_NOTE),
        _table(ids.VIOLATIONS, page_size=10),
        view="grid",
    )


def _mitigation_tab() -> dcc.Loading:
    """The mitigation view: the run without and with its mitigations, costs, verdicts."""
    return _loading(
        html.P(id=ids.MITIGATION_NOTE),
        _graph(ids.resampled("mitigation"), height="480px"),
        html.Div(
            [_table(ids.MITIGATION_COSTS), _table(ids.MITIGATION_RULES)],
            className="two-columns even",
        ),
        view="mitigation",
    )


def _compare_tab() -> dcc.Loading:
    """The compare view: the run beside a preset or a pinned scenario; a measured trace's fit."""
    return _loading(
        html.Div(
            [
                html.Label("compare with"),
                dcc.Dropdown(
                    id=ids.COMPARE_WITH,
                    options=compare_options(None),
                    value=None,
                    placeholder="a preset, or pin this scenario and change it",
                ),
                html.Button("pin this scenario for comparison", id=ids.PIN, className="button"),
            ],
            className="control wide inline",
        ),
        _graph(ids.resampled("compare"), "compare", height="440px"),
        _table(ids.COMPARE_TABLE, page_size=20),
        *fit_section(),
        view="compare",
    )


def _campus_tab() -> dcc.Loading:
    """The campus view: the workloads picked, their stacked power, workloads and flexibility."""
    return _loading(
        html.P(id=ids.CAMPUS_NOTE),
        html.Div(
            [
                html.Label("workloads shown"),
                dcc.Dropdown(id=ids.CAMPUS_PICK, options=[], value=[], multi=True),
            ],
            className="control wide",
        ),
        _graph(ids.CAMPUS_GRAPH, "campus", height="520px"),
        html.H3("workloads"),
        _table(ids.CAMPUS_WORKLOADS),
        html.H3("flexibility (EPRI DCFlex: magnitude, notice, duration, frequency)"),
        _table(ids.CAMPUS_FLEX),
        view="campus",
    )


def _grid_events_tab() -> dcc.Loading:
    """The grid-events view: the disturbances, one close up, the tables and requirements."""
    return _loading(
        html.P(id=ids.GRID_EVENTS_NOTE),
        _graph(ids.GRID_EVENTS_GRAPH, height="420px"),
        html.Div(
            [
                html.Label("disturbance shown close up, and fitted"),
                dcc.Dropdown(id=ids.GRID_EVENTS_PICK, options=[], value="0", clearable=False),
            ],
            className="control wide",
        ),
        _graph(ids.GRID_EVENTS_CLOSE, height="560px"),
        html.H3("disturbances"),
        _table(ids.GRID_EVENTS_TABLE),
        html.Div(
            [_table(ids.GRID_EVENTS_SUMMARY, page_size=15), _table(ids.GRID_EVENTS_MODEL)],
            className="two-columns even",
        ),
        html.H3("requirements"),
        _table(ids.GRID_EVENTS_CHECKS),
        view="grid events",
    )


def _export_tab() -> html.Div:
    """The export tab: the format and resolution, the download link and what it holds."""
    return html.Div(
        [
            html.Div(
                [
                    html.Label("format"),
                    dcc.RadioItems(
                        id=ids.EXPORT_FORMAT,
                        options=[{"label": v, "value": k} for k, v in EXPORT_FORMATS.items()],
                        value="csv",
                        className="choices",
                    ),
                ],
                className="control wide",
            ),
            html.Div(
                [
                    html.Label("resolution"),
                    dcc.Dropdown(id=ids.EXPORT_INTERVAL, clearable=False),
                ],
                className="control narrow",
            ),
            html.A("download", id=ids.EXPORT_LINK, href="", className="button", download=""),
            html.P(id=ids.EXPORT_NOTE),
        ],
        className="view",
    )


def fit_section() -> list[Any]:
    """The compare view's measured trace: its upload (with what a file may not say: the
    sampling period, the GPUs behind a meter), the fit's message, the trace and the fit replayed
    through the same sensor, the fit's table, the comparison, and the fitted scenario's ways out."""
    period = "period [s] (dcgmi dmon, scrapes without times)"
    return [
        html.H3("a measured trace and its fit"),
        html.Div(
            [
                dcc.Upload(
                    html.Div(
                        "upload telemetry (nvidia-smi CSV, dcgmi dmon, dcgm-exporter, rocm-smi "
                        "or amd-smi CSV, meter CSV, MLPerf power log)"
                    ),
                    id=ids.UPLOAD_TRACE,
                    className="upload",
                ),
                html.Label(period),
                dcc.Input(id=ids.TRACE_PERIOD, type="number", step="any", debounce=True),
                html.Label("GPUs per meter channel (meter CSV)"),
                dcc.Input(id=ids.TRACE_GPUS, type="number", step=1, debounce=True),
                html.Label("GPUs per poll (nvidia-smi without index; default: inferred)"),
                dcc.Input(id=ids.TRACE_POLL_GPUS, type="number", step=1, debounce=True),
                html.Label("GPU (default: the preset's, or built from the trace)"),
                dcc.Dropdown(
                    id=ids.TRACE_GPU,
                    options=list(gpu_catalogue()),
                    placeholder="the preset's, or built from the trace",
                ),
            ],
            className="control wide inline",
        ),
        html.Div("", id=ids.FIT_MESSAGE, className="message", role="alert"),
        _graph(ids.FIT_GRAPH, "fit", height="400px"),
        html.Div(
            [_table(ids.FIT_TABLE, page_size=20), _table(ids.FIT_NUMBERS)],
            className="two-columns even",
        ),
        html.Div(
            [
                html.Button(
                    "download the fitted scenario (TOML)",
                    id=ids.FIT_TOML_BUTTON,
                    className="button",
                ),
                dcc.Download(id=ids.FIT_TOML_DOWNLOAD),
                html.Button(
                    "load the fitted scenario into the sidebar", id=ids.FIT_LOAD, className="button"
                ),
            ],
            className="actions",
        ),
    ]


def sweep_section() -> list[Any]:
    """The sweep view: a sweep's results uploaded (``powermodel sweep -o results.nc``), one
    metric against one swept key (P50 over the seeds, the P5-P95 band), and the runs that
    failed."""
    return [
        html.Div(
            [
                dcc.Upload(
                    html.Div("upload a sweep's results (NetCDF: powermodel sweep -o results.nc)"),
                    id=ids.UPLOAD_SWEEP,
                    className="upload",
                ),
                html.Label("metric"),
                dcc.Dropdown(id=ids.SWEEP_METRIC, clearable=False),
                html.Label("against"),
                dcc.Dropdown(id=ids.SWEEP_KEY, clearable=False),
            ],
            className="control wide inline",
        ),
        html.Div("", id=ids.SWEEP_MESSAGE, className="message", role="alert"),
        _graph(ids.SWEEP_GRAPH, "sweep", height="480px"),
        html.H3("runs that failed"),
        _table(ids.SWEEP_FAILED, page_size=10),
    ]


def compare_options(pinned: str | None) -> list[dict[str, str]]:
    pinned_option = [{"label": f"pinned: {pinned}", "value": "pinned"}] if pinned else []
    return pinned_option + [{"label": f"preset: {p}", "value": p} for p in presets()]


OPENED = (ids.BASE, ids.SCENARIO, ids.READY, ids.SET_BOXES)  # the stores an opening fills


def page(preset: str, upload_limit: int, opening: Opening | None = None) -> html.Div:
    """The whole page: header, sidebar of controls, tabs of views; with ``opening``, showing
    its scenario's boxes and summary and holding its base and state, so that the views follow
    it at once (no round trip for the base, the state and the summary first)."""
    held = {}
    if opening:  # no box set by the user yet
        boxes = {"base": opening.base, "keys": []}
        held = dict(zip(OPENED, (opening.base, opening.state, opening.state, boxes), strict=True))
    return html.Div(
        [
            dcc.Location(id=ids.URL, refresh=False),
            dcc.Interval(id=ids.POLL, interval=1000, disabled=True),
            *(dcc.Store(id=i, **({"data": held[i]} if held else {})) for i in OPENED),
            dcc.Store(id=ids.COMPARE),
            dcc.Store(id=ids.UPLOADED_WEATHER, data={}),
            dcc.Store(id=ids.FIT),
            dcc.Store(id=ids.SWEEP),
            header(opening),
            html.Div(
                [
                    sidebar(preset, upload_limit, opening.values if opening else None),
                    # why the open view could not be built (past its deadline, over the bound)
                    html.Main(
                        [
                            html.Div(
                                "", id=ids.VIEW_MESSAGE, className="message error", role="alert"
                            ),
                            html.Div("", id=ids.STALE_FIELDS, className="stale", role="alert"),
                            html.Div("", id=ids.STALE_RUN, className="stale", role="alert"),
                            views(),
                        ]
                    ),
                ],
                className="body",
            ),
        ],
        className="page",
    )
