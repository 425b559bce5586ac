"""The run's views: power, thermal, grid (the rules), mitigation, compare, and the export tab.

Each view is built once per scenario (and rules, other scenario or sensor) and kept with its
run in the :class:`~powermodel.webapp.cache.SimulationCache`; a zoom re-samples the kept
figure (plotly-resampler). Two waits remain here, each in the cache's bounded queue: the run
without mitigations that the mitigation view compares against, and the compare view's other
run. A view the server cannot build now says why (:class:`~powermodel.webapp.plumbing.Refused`).
"""

from __future__ import annotations

from typing import Any

import dash
import pandas as pd
from dash import MATCH, Input, Output, State, ctx, html, no_update
from dash.exceptions import PreventUpdate

from powermodel import rules, sizing
from powermodel.analysis import diurnal_swing
from powermodel.export import TOOLS
from powermodel.scenario import (
    Scenario,
    load_scenario,
    parse_duration,
    presets,
    shorten,
)
from powermodel.simulate import SENSORS
from powermodel.webapp import downloads, figures, ids, layout, plotting, tables
from powermodel.webapp.cache import (
    Entry,
    scenario_key,
)
from powermodel.webapp.controls import (
    value_at,
)
from powermodel.webapp.layout import compare_options
from powermodel.webapp.plumbing import (
    OPEN_TAB,
    READY_STATE,
    Board,
    header_name,
    is_plain,
    keeping,
    only_when_open,
    parts_of,
    telling,
)

RESAMPLED = ("power", "thermal", "grid", "mitigation", "compare")  # views with a zoomed graph
MITIGATION_KEYS = ("checkpoint.mode", "workload.startup_ramp")  # levers outside [mitigation]
VIOLATION_ROWS = 20_000  # violations sent to the table: the largest, the rest in the CSV
# what a view's callback sends of it, in its outputs' order
PARTS = {
    "thermal": ("figure", "diurnal", "numbers"),
    "grid": ("figure", "ramps", "spectrum", "compliance", "violations", "violations_note"),
    "mitigation": ("note", "figure", "costs", "rules"),
}


class RunViews(Board):
    """The run's views, the comparison's pin, the export's link, the zoom of a resampled graph
    and a violation shown on the grid view's time axis."""

    def view(
        self,
        name: str,
        state: dict | None,
        chosen_rules: Any = None,
        compare_with: str | None = None,
        pinned: dict | None = None,
        sensor: Any = None,
    ) -> dict[str, Any]:
        """Everything a view shows, built once per scenario (and rules, other scenario or
        sensor); a view the server cannot build now (busy, too large, past its deadline)
        leaves the page as it is and says why (:class:`Refused`)."""
        with self.refusing():
            return self._view(name, state, chosen_rules, compare_with, pinned, sensor)

    def _view(
        self,
        name: str,
        state: Any,
        chosen_rules: Any,
        compare_with: Any,
        pinned: Any,
        sensor: Any = None,
    ) -> dict[str, Any]:
        entry = self.entry(state)
        if name == "power":
            # a sensor the page did not offer shows the exact lines
            chain = sensor if isinstance(sensor, str) and sensor in SENSORS else figures.EXACT
            return self.cache.view(
                entry,
                name if chain == figures.EXACT else f"power:{chain}",
                lambda e: {"figure": figures.power_figure(e.ds, chain)},
                cheap=True,
            )
        if name == "thermal":
            return self.cache.view(entry, name, lambda e: _thermal(e, self.metrics(e)))
        chosen = rules.shipped(chosen_rules or [])
        if name == "grid":
            return self.cache.view(
                entry,
                f"grid:{','.join(chosen)}",
                lambda e: _grid(e, *self.checked(e, chosen), self.cache.remember(e.scenario)),
            )
        if name == "mitigation":
            before = self.cache.get(unmitigated(entry.scenario, self.base(state["base"])))
            return self.cache.view(
                entry,
                f"mitigation:{','.join(chosen)}",
                lambda e: _mitigation(
                    e, before, self.checked(e, chosen)[0], self.checked(before, chosen)[0]
                ),
            )
        if name == "compare":
            other, label = self._other(compare_with, pinned)
            names = (f"this: {header_name(entry.scenario, state)}", label)
            return self.cache.view(
                entry,
                f"compare:{self.cache.remember(other.scenario)}",
                lambda e: _compare(e, other, names, [self.metrics(e), self.metrics(other)]),
            )
        raise PreventUpdate  # a view this page does not have

    def checked(
        self, entry: Entry, names: tuple[str, ...]
    ) -> tuple[list[rules.RuleResult], list[rules.Refusal]]:
        """The rules' results on a run, and those it cannot judge, once per run and rule set
        (grid and mitigation)."""
        return self.cache.view(
            entry, f"rules:{','.join(names)}", lambda e: rules.check_each(e.ds, _loaded(names))
        )

    def violations(self, scenario: Scenario, names: tuple[str, ...]) -> pd.DataFrame:
        """Every violation of the rules on a run, as the CLI's ``check --violations`` writes."""
        entry = self.cache.get(scenario)
        return rules.violations_table([self.checked(entry, names)[0]])

    def _other(self, compare_with: str | None, pinned: dict | None) -> tuple[Entry, str]:
        if compare_with == "pinned" and pinned:
            return self.entry(pinned), f"pinned: {header_name(self.scenario(pinned), pinned)}"
        if compare_with not in presets():
            raise PreventUpdate  # nothing chosen, or not a preset: presets go by name only
        with keeping():
            return self.cache.get(self.base({"preset": compare_with})), compare_with

    def power(
        self, state: dict | None, tab: str, sensor: Any = None, chosen_rules: Any = None
    ) -> Any:
        """The power view; the page's rules (``chosen_rules``) for the grid view built next
        (issue 28: without them it was built for no rule, and built again on the tab's first
        visit)."""
        only_when_open(tab, "power")
        return self.opened("power", state, chosen_rules, sensor=sensor)["figure"]

    def thermal(self, state: dict | None, tab: str, chosen_rules: Any = None) -> tuple:
        return self._opened_parts("thermal", tab, state, chosen_rules)

    def grid(self, state: dict | None, tab: str, chosen_rules: Any) -> tuple:
        return self._opened_parts("grid", tab, state, chosen_rules)

    def mitigation(self, state: dict | None, tab: str, chosen_rules: Any) -> tuple:
        return self._opened_parts("mitigation", tab, state, chosen_rules)

    def _opened_parts(self, name: str, tab: str, state: dict | None, chosen_rules: Any) -> tuple:
        """The open tab's view as its callback's outputs: its :data:`PARTS`, in order."""
        only_when_open(tab, name)
        return parts_of(self.opened(name, state, chosen_rules), PARTS[name])

    def compare(
        self, state: dict | None, tab: str, compare_with: str | None, pinned: dict | None
    ) -> tuple:
        only_when_open(tab, "compare")
        if not compare_with or (compare_with == "pinned" and not pinned):
            return plotting.empty_figure(layout.EMPTY["compare"]), []  # nothing chosen: say so
        v = self.view("compare", state, compare_with=compare_with, pinned=pinned)
        return v["figure"], v["table"]

    def pin(self, n_clicks: int | None, state: dict | None) -> tuple:
        """Pin the scenario shown for comparison with the ones that follow."""
        if not n_clicks or not state:
            raise PreventUpdate
        with keeping():
            scenario = self.scenario(state)
        return state, compare_options(header_name(scenario, state)), "pinned"

    def export(self, state: dict | None, fmt: str, interval: str | None) -> tuple:
        """Resolutions on offer, the chosen one, the download link and what it holds."""
        if not state:
            raise PreventUpdate
        with keeping():
            scenario = self.scenario(state)
        sim = scenario.simulation
        choices = downloads.intervals(sim.dt, sim.n_steps)
        if not isinstance(fmt, str) or fmt not in TOOLS:
            return choices, choices[0], "", f"unknown format {shorten(fmt)}: choose one above"
        interval = interval if interval in choices else choices[0]
        step = TOOLS[fmt].step or interval
        rows = round(sim.duration / parse_duration(step))
        note = f"{rows:,} rows at {step}" + (
            ", each with its interval's min and max" if step != choices[0] else ""
        )
        key = scenario_key(scenario)
        link = downloads.href(key, fmt, None if TOOLS[fmt].step else interval)
        return choices, interval, link, note

    def zoom(
        self,
        relayout: dict | None,
        state: dict | None,
        chosen_rules: Any,
        compare_with: str | None,
        pinned: dict | None,
        sensor: Any = None,
    ) -> Any:
        """New points for a resampled graph after a pan or zoom (plotly-resampler)."""
        if not relayout or not state or not is_plain(relayout):
            raise PreventUpdate
        view = ctx.triggered_id["view"] if ctx.triggered_id else "power"
        if view not in RESAMPLED:
            raise PreventUpdate
        figure = self.view(view, state, chosen_rules, compare_with, pinned, sensor)["figure"]
        return self._patch(figure, relayout)

    def show_violation(
        self,
        selected: list[dict] | None,
        state: dict | None,
        chosen_rules: Any,
    ) -> Any:
        """Zoom the grid view onto the violation chosen in the table, a minute either side."""
        if not selected or not state or not isinstance(selected, list):
            raise PreventUpdate
        row = selected[0]
        try:
            start = _timestamp(row["start"]) - 60.0
            end = _timestamp(row["end"]) + 60.0
            x0, x1 = (_dash_time(s) for s in (start, end))
        except (TypeError, KeyError, ValueError, OverflowError):
            raise PreventUpdate from None
        fig = self.view("grid", state, chosen_rules)["figure"]
        patch = self._patch(fig, {"xaxis.range[0]": x0, "xaxis.range[1]": x1})
        if patch is no_update:
            patch = dash.Patch()
        patch["layout"]["xaxis"]["range"] = [x0, x1]
        patch["layout"]["xaxis"]["autorange"] = False
        patch["layout"]["shapes"] = [
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": row["start"],  # read as times above
                "x1": row["end"],
                "y0": 0,
                "y1": 1,
                "fillcolor": "#e74c3c",
                "opacity": 0.15,
                "line": {"width": 0},
            }
        ]
        return patch

    def _register_run_views(self, app: dash.Dash) -> None:
        """The run's views' callbacks: power, thermal, grid, mitigation, compare and its pin."""
        rules_in = Input(ids.RULES, "value")
        # the views built ahead take the page's rules: the grid view is built for them
        rules_now = State(ids.RULES, "value")
        app.callback(
            Output(ids.resampled("power"), "figure"),
            READY_STATE,
            OPEN_TAB,
            Input(ids.SENSOR, "value"),
            rules_now,
        )(telling(self.power))
        app.callback(
            Output(ids.resampled("thermal"), "figure"),
            Output(ids.THERMAL_DIURNAL, "figure"),
            Output(ids.THERMAL_NUMBERS, "children"),
            READY_STATE,
            OPEN_TAB,
            rules_now,
        )(telling(self.thermal))
        app.callback(
            Output(ids.resampled("grid"), "figure"),
            Output(ids.GRID_RAMPS, "figure"),
            Output(ids.GRID_SPECTRUM, "figure"),
            Output(ids.COMPLIANCE, "rowData"),
            Output(ids.VIOLATIONS, "rowData"),
            Output(ids.VIOLATIONS_NOTE, "children"),
            READY_STATE,
            OPEN_TAB,
            rules_in,
        )(telling(self.grid))
        app.callback(
            Output(ids.MITIGATION_NOTE, "children"),
            Output(ids.resampled("mitigation"), "figure"),
            Output(ids.MITIGATION_COSTS, "rowData"),
            Output(ids.MITIGATION_RULES, "rowData"),
            READY_STATE,
            OPEN_TAB,
            State(ids.RULES, "value"),
        )(telling(self.mitigation))
        app.callback(
            Output(ids.resampled("compare"), "figure"),
            Output(ids.COMPARE_TABLE, "rowData"),
            READY_STATE,
            OPEN_TAB,
            Input(ids.COMPARE_WITH, "value"),
            Input(ids.COMPARE, "data"),
        )(telling(self.compare))
        app.callback(
            Output(ids.COMPARE, "data"),
            Output(ids.COMPARE_WITH, "options"),
            Output(ids.COMPARE_WITH, "value"),
            Input(ids.PIN, "n_clicks"),
            State(ids.READY, "data"),
            prevent_initial_call=True,
        )(self.pin)

    def _register_export_and_zoom(self, app: dash.Dash) -> None:
        """The export tab's link, a resampled graph's zoom, a violation shown on the grid
        view's time axis."""
        app.callback(
            Output(ids.EXPORT_INTERVAL, "options"),
            Output(ids.EXPORT_INTERVAL, "value"),
            Output(ids.EXPORT_LINK, "href"),
            Output(ids.EXPORT_NOTE, "children"),
            READY_STATE,
            Input(ids.EXPORT_FORMAT, "value"),
            Input(ids.EXPORT_INTERVAL, "value"),
        )(self.export)
        app.callback(
            Output(ids.resampled(MATCH), "figure", allow_duplicate=True),
            Input(ids.resampled(MATCH), "relayoutData"),
            State(ids.READY, "data"),
            State(ids.RULES, "value"),
            State(ids.COMPARE_WITH, "value"),
            State(ids.COMPARE, "data"),
            State(ids.SENSOR, "value"),
            prevent_initial_call=True,
        )(telling(self.zoom))
        app.callback(
            Output(ids.resampled("grid"), "figure", allow_duplicate=True),
            Input(ids.VIOLATIONS, "selectedRows"),
            State(ids.READY, "data"),
            State(ids.RULES, "value"),
            prevent_initial_call=True,
        )(telling(self.show_violation))


def unmitigated(scenario: Scenario, base: Scenario) -> Scenario:
    """The scenario without its mitigations: no ``[mitigation]``, and the levers that live
    elsewhere (checkpoint mode, start-up ramp) as the base has them."""
    raw = base.to_dict()  # durations written with their unit, as overrides take them
    keep = {key: value_at(raw, key) for key in MITIGATION_KEYS}
    return load_scenario(scenario, {"mitigation": {}, **keep})


def _loaded(names: tuple[str, ...]) -> list[rules.Rule]:
    return rules.load_rules(list(names)) if names else []


def _thermal(entry: Entry, m: dict[str, Any]) -> dict[str, Any]:
    ds = entry.ds
    swing, trough = diurnal_swing(ds)
    rows = tables.thermal_numbers(m, swing, trough, ds.attrs["site_timezone"])
    return {
        "figure": figures.thermal_figure(ds),
        "diurnal": figures.diurnal_figure(ds),
        "numbers": html.Table(
            [html.Tr([html.Td(what), html.Td(value), html.Td(why)]) for what, value, why in rows],
            className="numbers",
        ),
    }


def _grid(
    entry: Entry, results: list[rules.RuleResult], refused: list[rules.Refusal], key: str
) -> dict[str, Any]:
    table = rules.violations_table([results])
    grouped_events = tables.violation_events(table)  # grouped once: counted, then listed
    shown = tables.violation_rows(grouped_events, VIOLATION_ROWS)
    events = len(grouped_events)
    link = downloads.href(key, downloads.VIOLATIONS, None, tuple(r.rule.name for r in results))
    grouped = (
        f"{len(table):,} violations in {events:,} events (those of one rule and cause within "
        f"{tables.EVENT_GAP:g} s of each other; filter by rule or cause in the column heads)"
    )
    if events > len(shown):
        note = [
            f"{grouped}: the {len(shown):,} largest events shown; ",
            html.A("every violation as CSV", href=link),
        ]
    else:
        note = [f"{grouped}; ", html.A("every violation as CSV", href=link)] if len(table) else []
    swing = figures.five_second_swing(entry.ds)  # drawn in both figures, computed once
    return {
        "figure": figures.grid_figure(entry.ds, results, swing, grouped_events),
        "ramps": figures.ramp_figure(entry.ds, swing=swing),
        "spectrum": figures.spectrum_figure(entry.ds, [r.rule for r in results]),
        "compliance": tables.compliance_rows(results)
        + [{"rule": no.rule.name, "verdict": "cannot say", "note": no.reason} for no in refused],
        "violations": shown,
        "violations_note": note,
    }


def _mitigation(
    entry: Entry,
    before: Entry,
    after_results: list[rules.RuleResult],
    before_results: list[rules.RuleResult],
) -> dict[str, Any]:
    if before.scenario == entry.scenario:
        note = "No mitigation is set: choose one under Mitigation in the sidebar to see its effect."
    else:
        note = (
            "The run without its mitigations (top) and with them (bottom); costs against the first."
        )
    verdicts = [
        {
            "rule": a.rule.name,
            "limit": f"{a.limit:.3g} {a.rule.unit}",
            "worst without": f"{b.worst:.3g} {b.rule.unit}",
            "worst with": f"{a.worst:.3g} {a.rule.unit}",
            "verdict with": "violated" if len(a.violations) else "passes",
        }
        for a, b in zip(after_results, before_results, strict=True)
    ]
    return {
        "note": note,
        "figure": figures.before_after_figure(before.ds, entry.ds),
        "costs": tables.cost_rows(sizing.costs(entry.scenario, before.ds, entry.ds)),
        "rules": verdicts,
    }


def _compare(
    entry: Entry, other: Entry, names: tuple[str, str], both: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "figure": figures.compare_figure(entry.ds, other.ds, names),
        "table": tables.metric_rows(both, ("this", "other")),
    }


def _timestamp(text: str) -> float:
    return pd.Timestamp(text).timestamp()


def _dash_time(seconds: float) -> str:
    """A UTC instant as plotly's date axes write it."""
    return pd.Timestamp(seconds, unit="s").strftime("%Y-%m-%d %H:%M:%S.%f")
