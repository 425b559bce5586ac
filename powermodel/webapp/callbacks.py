"""Callbacks of the dashboard: controls -> scenario -> cached simulation -> the open view.

Each callback is a method of :class:`Dashboard`, a few lines on top of the pure functions in
``controls``, ``figures`` and ``powermodel`` itself, so that tests call them directly. The
browser holds the scenario (its base and the controls' changes), never arrays; the server keeps
simulations and the figures built from them in a bounded :class:`SimulationCache`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import queue
import re
import threading
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import dash
import pandas as pd
from dash import ALL, MATCH, Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from powermodel import metrics, rules, sizing
from powermodel.analysis import diurnal_swing
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.export import TOOLS
from powermodel.iotools.weather import SHIPPED, read_weather
from powermodel.scenario import Scenario, load_scenario, loads_scenario, parse_duration
from powermodel.webapp import downloads, figures, ids
from powermodel.webapp.cache import Entry, SimulationCache
from powermodel.webapp.controls import (
    BY_KEY,
    CONTROLS,
    Link,
    base_scenario,
    changes,
    from_query,
    options,
    overrides,
    scenario_of,
    shown_values,
    to_query,
    value_at,
)
from powermodel.webapp.layout import compare_options, summary

MAX_STEPS = 5_000_000  # steps the dashboard simulates: 58 days at 1 s, about 0.7 GB
PREFETCHED = ("power", "thermal", "grid", "mitigation")  # views built ahead of a tab change
MITIGATION_KEYS = ("checkpoint.mode", "workload.startup_ramp")  # levers outside [mitigation]


class UploadError(ValueError):
    """An upload the dashboard refuses (too large, not text, not the right kind of file)."""


def decode_upload(contents: str, filename: str, limit: int) -> bytes:
    """The bytes of a ``dcc.Upload`` data URL, refused over ``limit`` bytes."""
    _, _, data = (contents or "").partition(",")
    size = len(data) * 3 // 4
    if size > limit:
        raise UploadError(
            f"{filename} is {size / 1e6:.1f} MB; the dashboard takes files up to {limit / 1e6:g} MB"
        )
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise UploadError(f"{filename} did not arrive whole: upload it again") from None


class Dashboard:
    """The callbacks of one app, sharing its cache, defaults and upload folder."""

    def __init__(
        self,
        cache: SimulationCache,
        preset: str,
        defaults: dict[str, Any],
        uploads: Path,
        upload_limit: int,
    ) -> None:
        self.cache = cache
        self.preset = preset
        self.defaults = defaults  # overrides every preset opens with (the app's period)
        self.uploads = uploads
        self.upload_limit = upload_limit
        # one daemon thread: the server's exit (or a test's) need not wait for a prefetch
        self._prefetches: queue.Queue = queue.Queue()
        self._latest: str | None = None
        self._resampling = threading.Lock()
        threading.Thread(target=self._prefetch_loop, name="prefetch", daemon=True).start()

    # --- scenario ---------------------------------------------------------------------------

    def set_base(
        self,
        trigger: str | None,
        search: str | None,
        preset: str | None,
        contents: str | None,
        filename: str | None,
    ) -> tuple:
        """The base and every control's value: from the URL on page load, from the preset
        picker, or from an uploaded scenario. Returns base, control values, preset, tab,
        message."""
        tab, message, preset_out = no_update, "", no_update
        if trigger == ids.UPLOAD_SCENARIO:
            try:
                text = decode_upload(contents, filename, self.upload_limit).decode("utf-8")
                scenario = loads_scenario(text, label=filename)
            except UnicodeDecodeError:
                return _unchanged(f"{filename} is not a text file: upload a TOML scenario")
            except (UploadError, ScenarioError) as exc:
                return _unchanged(f"{exc} — the scenario shown is unchanged")
            base, changed, message = {"upload": filename, "toml": text}, {}, f"loaded {filename}"
        else:
            name, changed = preset or self.preset, {}
            if trigger != ids.PRESET:  # page load: the link's state
                try:
                    link = from_query(search)
                except (ScenarioError, ValueError) as exc:
                    link, message = Link(None, {}, None, None), f"{exc}; showing the preset"
                name, changed = link.preset or self.preset, link.changed
                tab = link.tab if link.tab in ids.VIEWS else no_update
                if link.upload:
                    message = (
                        f"this link was made from an uploaded scenario, {link.upload}, which a "
                        f"link cannot carry: upload it again (meanwhile its changes are shown "
                        f"on {name})"
                    )
            base = {"preset": name, "overrides": self.defaults}
            try:
                scenario = base_scenario(base)
            except ScenarioError as exc:
                base, changed = {"preset": self.preset, "overrides": self.defaults}, {}
                scenario, message = base_scenario(base), f"{exc}; showing {self.preset}"
            preset_out = base["preset"]
        values = shown_values(scenario) | changed
        return base, [values[c.key] for c in CONTROLS], preset_out, tab, message

    def assemble(self, base: dict | None, values: list) -> tuple[Any, str]:
        """The scenario of the base and the controls, or why it is refused (the last good
        scenario stays shown)."""
        if base is None:
            raise PreventUpdate
        try:
            start = base_scenario(base)
            changed = changes(dict(zip(BY_KEY, values, strict=True)), start)
            scenario = load_scenario(start, overrides(changed, start))
            self.check_limits(scenario)
        except (ScenarioError, PowerModelError, ValueError) as exc:
            return no_update, f"not applied: {exc}"
        state = {
            "key": self.cache.remember(scenario),
            "name": scenario.name or base.get("upload", "scenario"),
            "base": base,
            "changes": changed,
            "query": to_query(base, changed),
        }
        return state, ""

    def check_limits(self, scenario: Scenario) -> None:
        """Refuse what the dashboard should not run: too many steps, a weather file that is
        neither shipped nor uploaded."""
        steps = scenario.simulation.n_steps
        if steps > MAX_STEPS:
            raise ScenarioError(
                f"{steps:,} steps is more than the dashboard draws ({MAX_STEPS:,}): lengthen "
                "the step or shorten the period (the command line has no such limit)"
            )
        weather = scenario.site.weather
        uploaded = Path(weather).parent == self.uploads
        if weather.lower() not in SHIPPED and weather != "synthetic" and not uploaded:
            raise ScenarioError(
                f"site.weather {weather!r}: the dashboard reads the shipped weather files "
                f"({', '.join(SHIPPED)}), 'synthetic' or an uploaded EPW: upload the file"
            )

    def scenario(self, state: dict) -> Scenario:
        """The scenario of a page state: by its key, or rebuilt from its base and changes."""
        known = self.cache.scenarios.get(state["key"])
        return known or scenario_of(state["base"], state["changes"])

    def entry(self, state: dict | None) -> Entry:
        """The simulated scenario; a scenario that does not simulate leaves the views as they
        are (the summary line says why)."""
        if not state:
            raise PreventUpdate
        try:
            return self.cache.get(self.scenario(state))
        except PowerModelError:
            raise PreventUpdate from None

    def summarize(self, state: dict | None) -> tuple[str, str]:
        """Scenario name and headline numbers, or why the scenario does not simulate."""
        if not state:
            raise PreventUpdate
        try:
            entry = self.cache.get(self.scenario(state))
        except PowerModelError as exc:
            return state["name"], f"not simulated: {exc} (the figures show the last run)"
        return state["name"], summary(self.metrics(entry), entry.scenario.simulation.duration)

    def opened(self, name: str, state: dict | None, rule_names: list[str] | None = None) -> dict:
        """The open tab's view; the other views follow in the background."""
        shown = self.view(name, state, rule_names)
        self.prefetch(state, rule_names)
        return shown

    def prefetch(self, state: dict, rule_names: list[str] | None) -> Future:
        """Build every view of the latest scenario on a background thread, once the open one
        is shown, so that a tab change finds it ready; a newer scenario stops older ones."""
        self._latest = state["key"]
        done: Future = Future()
        self._prefetches.put((state, rule_names, done))
        return done

    def _prefetch_loop(self) -> None:
        while True:
            state, rule_names, done = self._prefetches.get()
            for name in PREFETCHED:
                if self._latest != state["key"]:
                    break
                try:
                    self.view(name, state, rule_names)
                except Exception:  # the open tab's callback meets it and reports it
                    break
            done.set_result(None)

    def toml(self, n_clicks: int | None, state: dict | None) -> dict:
        """The scenario as a TOML file: loading it reproduces the view."""
        if not n_clicks or not state:
            raise PreventUpdate
        scenario = self.scenario(state)
        return dcc.send_string(scenario.to_toml(), f"{scenario.name or 'scenario'}.toml")

    def upload_weather(self, contents: str | None, filename: str | None, uploaded: dict) -> tuple:
        """Keep an uploaded EPW if it reads as one; returns uploaded, weather options and
        value, message."""
        if not contents:
            raise PreventUpdate
        name = re.sub(r"[^A-Za-z0-9._-]", "_", filename or "weather.epw")
        try:
            data = decode_upload(contents, name, self.upload_limit)
            if not name.lower().endswith(".epw"):
                raise UploadError(f"{name} is not an EPW file (.epw)")
            path = self.uploads / f"{hashlib.sha1(data).hexdigest()[:12]}-{name}"
            path.write_bytes(data)
            try:
                _, meta = read_weather(path)
            except PowerModelError:
                path.unlink()
                raise
        except (UploadError, PowerModelError) as exc:
            return no_update, no_update, no_update, f"{exc} — the weather is unchanged"
        uploaded = {**(uploaded or {}), name: str(path)}
        place = ", ".join(str(meta[k]) for k in ("city", "state", "country") if meta.get(k))
        return (
            uploaded,
            options("site.weather", uploaded),
            str(path),
            f"weather {name}: {place}, UTC{meta['utc_offset']:+g} h",
        )

    # --- views --------------------------------------------------------------------------------

    def view(
        self,
        name: str,
        state: dict | None,
        rule_names: list[str] | None = None,
        compare_with: str | None = None,
        pinned: dict | None = None,
    ) -> dict[str, Any]:
        """Everything a view shows, built once per scenario (and rules, or other scenario)."""
        entry = self.entry(state)
        if name == "power":
            return self.cache.view(entry, name, lambda e: {"figure": figures.power_figure(e.ds)})
        if name == "thermal":
            return self.cache.view(entry, name, lambda e: _thermal(e, self.metrics(e)))
        chosen = tuple(rule_names or ())
        if name == "grid":
            return self.cache.view(
                entry, f"grid:{','.join(chosen)}", lambda e: _grid(e, *self.checked(e, chosen))
            )
        if name == "mitigation":
            before = self.cache.get(unmitigated(entry.scenario, base_scenario(state["base"])))
            return self.cache.view(
                entry,
                f"mitigation:{','.join(chosen)}",
                lambda e: _mitigation(
                    e, before, self.checked(e, chosen)[0], self.checked(before, chosen)[0]
                ),
            )
        if name == "compare":
            other, label = self._other(compare_with, pinned)
            names = (f"this: {state['name']}", label)
            return self.cache.view(
                entry,
                f"compare:{self.cache.remember(other.scenario)}",
                lambda e: _compare(e, other, names, [self.metrics(e), self.metrics(other)]),
            )
        raise KeyError(name)

    def metrics(self, entry: Entry) -> dict[str, Any]:
        """:func:`powermodel.metrics` of a run, once per run (summary, thermal, compare)."""
        return self.cache.view(entry, "metrics", lambda e: metrics(e.ds))

    def checked(
        self, entry: Entry, names: tuple[str, ...]
    ) -> tuple[list[rules.RuleResult], list[dict]]:
        """The rules' results on a run, once per run and rule set (grid and mitigation)."""
        return self.cache.view(entry, f"rules:{','.join(names)}", lambda e: _check(e, names))

    def _other(self, compare_with: str | None, pinned: dict | None) -> tuple[Entry, str]:
        if compare_with == "pinned" and pinned:
            return self.entry(pinned), f"pinned: {pinned['name']}"
        if not compare_with:
            raise PreventUpdate
        return self.cache.get(load_scenario(compare_with, self.defaults)), compare_with

    def power(self, state: dict | None, tab: str) -> Any:
        _only(tab, "power")
        return self.opened("power", state)["figure"]

    def thermal(self, state: dict | None, tab: str) -> tuple:
        _only(tab, "thermal")
        v = self.opened("thermal", state)
        return v["figure"], v["diurnal"], v["numbers"]

    def grid(self, state: dict | None, tab: str, rule_names: list[str]) -> tuple:
        _only(tab, "grid")
        v = self.opened("grid", state, rule_names)
        return v["figure"], v["ramps"], v["spectrum"], v["compliance"], v["violations"]

    def mitigation(self, state: dict | None, tab: str, rule_names: list[str]) -> tuple:
        _only(tab, "mitigation")
        v = self.opened("mitigation", state, rule_names)
        return v["note"], v["figure"], v["costs"], v["rules"]

    def compare(
        self, state: dict | None, tab: str, compare_with: str | None, pinned: dict | None
    ) -> tuple:
        _only(tab, "compare")
        v = self.view("compare", state, compare_with=compare_with, pinned=pinned)
        return v["figure"], v["table"]

    def pin(self, n_clicks: int | None, state: dict | None) -> tuple:
        """Pin the scenario shown for comparison with the ones that follow."""
        if not n_clicks or not state:
            raise PreventUpdate
        return state, compare_options(state["name"]), "pinned"

    def export(self, state: dict | None, fmt: str, interval: str | None) -> tuple:
        """Resolutions on offer, the chosen one, the download link and what it holds."""
        if not state:
            raise PreventUpdate
        sim = self.scenario(state).simulation
        choices = downloads.intervals(sim.dt, sim.n_steps)
        interval = interval if interval in choices else choices[0]
        step = TOOLS[fmt][0] or interval
        rows = round(sim.duration / parse_duration(step))
        note = f"{rows:,} rows at {step}" + (
            ", each with its interval's min and max" if step != choices[0] else ""
        )
        link = downloads.href(state["key"], fmt, None if TOOLS[fmt][0] else interval)
        return choices, interval, link, note

    # --- zoom -----------------------------------------------------------------------------------

    def zoom(
        self,
        relayout: dict | None,
        state: dict | None,
        rule_names: list[str] | None,
        compare_with: str | None,
        pinned: dict | None,
    ) -> Any:
        """New points for a resampled graph after a pan or zoom (plotly-resampler)."""
        if not relayout or not state:
            raise PreventUpdate
        view = ctx.triggered_id["view"] if ctx.triggered_id else "power"
        figure = self.view(view, state, rule_names, compare_with, pinned)["figure"]
        return self._patch(figure, relayout)

    def _patch(self, figure: Any, relayout: dict) -> Any:
        """plotly-resampler's answer to a relayout. A cached figure is shared by every page
        showing its scenario, and the resampler keeps per-call state: one at a time."""
        with self._resampling:
            return figure.construct_update_data_patch(relayout)

    def show_violation(
        self,
        selected: list[dict] | None,
        state: dict | None,
        rule_names: list[str] | None,
    ) -> Any:
        """Zoom the grid view onto the violation chosen in the table, a minute either side."""
        if not selected or not state:
            raise PreventUpdate
        row = selected[0]
        start = _timestamp(row["start"]) - 60.0
        end = _timestamp(row["end"]) + 60.0
        x0, x1 = (_dash_time(s) for s in (start, end))
        fig = self.view("grid", state, rule_names)["figure"]
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
                "x0": row["start"],
                "x1": row["end"],
                "y0": 0,
                "y1": 1,
                "fillcolor": "#e74c3c",
                "opacity": 0.15,
                "line": {"width": 0},
            }
        ]
        return patch

    # --- wiring -----------------------------------------------------------------------------------

    def register(self, app: dash.Dash) -> None:
        """Register every callback on ``app``."""
        app.callback(
            Output(ids.BASE, "data"),
            Output({"type": "control", "key": ALL}, "value"),
            Output(ids.PRESET, "value"),
            Output(ids.TABS, "value"),
            Output(ids.MESSAGE, "children"),
            Input(ids.URL, "search"),
            Input(ids.PRESET, "value"),
            Input(ids.UPLOAD_SCENARIO, "contents"),
            State(ids.UPLOAD_SCENARIO, "filename"),
        )(lambda *a: self.set_base(ctx.triggered_id, *a))
        busy = [(Output(ids.STATUS, "children"), "simulating…", "")]
        app.callback(
            Output(ids.SCENARIO, "data"),
            Output(ids.SCENARIO_ERROR, "children"),
            Input(ids.BASE, "data"),
            Input({"type": "control", "key": ALL}, "value"),
            running=busy,  # shown from the keystroke on, before the scenario reaches the server
        )(self.assemble)
        app.clientside_callback(
            """function(state, tab) {
                if (!state) { return window.dash_clientside.no_update; }
                const query = state.query + (tab && tab !== "power" ? "&tab=" + tab : "");
                window.history.replaceState(null, "", query);
                return query;
            }""",
            Output(ids.SHARE, "href"),
            Input(ids.SCENARIO, "data"),
            Input(ids.TABS, "value"),
        )
        app.callback(
            Output(ids.SCENARIO_NAME, "children"),
            Output(ids.SUMMARY, "children"),
            Input(ids.SCENARIO, "data"),
            running=busy,
        )(self.summarize)
        app.callback(
            Output(ids.TOML_DOWNLOAD, "data"),
            Input(ids.TOML_BUTTON, "n_clicks"),
            State(ids.SCENARIO, "data"),
            prevent_initial_call=True,
        )(self.toml)
        weather = ids.control("site.weather")
        app.callback(
            Output(ids.UPLOADED_WEATHER, "data"),
            Output(weather, "options"),
            Output(weather, "value", allow_duplicate=True),
            Output(ids.MESSAGE, "children", allow_duplicate=True),
            Input(ids.UPLOAD_WEATHER, "contents"),
            State(ids.UPLOAD_WEATHER, "filename"),
            State(ids.UPLOADED_WEATHER, "data"),
            prevent_initial_call=True,
        )(self.upload_weather)

        scenario, tab = Input(ids.SCENARIO, "data"), Input(ids.TABS, "value")
        rules_in = Input(ids.RULES, "value")
        app.callback(Output(ids.resampled("power"), "figure"), scenario, tab)(self.power)
        app.callback(
            Output(ids.resampled("thermal"), "figure"),
            Output(ids.THERMAL_DIURNAL, "figure"),
            Output(ids.THERMAL_NUMBERS, "children"),
            scenario,
            tab,
        )(self.thermal)
        app.callback(
            Output(ids.resampled("grid"), "figure"),
            Output(ids.GRID_RAMPS, "figure"),
            Output(ids.GRID_SPECTRUM, "figure"),
            Output(ids.COMPLIANCE, "rowData"),
            Output(ids.VIOLATIONS, "rowData"),
            scenario,
            tab,
            rules_in,
        )(self.grid)
        app.callback(
            Output(ids.MITIGATION_NOTE, "children"),
            Output(ids.resampled("mitigation"), "figure"),
            Output(ids.MITIGATION_COSTS, "rowData"),
            Output(ids.MITIGATION_RULES, "rowData"),
            scenario,
            tab,
            State(ids.RULES, "value"),
        )(self.mitigation)
        app.callback(
            Output(ids.resampled("compare"), "figure"),
            Output(ids.COMPARE_TABLE, "rowData"),
            scenario,
            tab,
            Input(ids.COMPARE_WITH, "value"),
            Input(ids.COMPARE, "data"),
        )(self.compare)
        app.callback(
            Output(ids.COMPARE, "data"),
            Output(ids.COMPARE_WITH, "options"),
            Output(ids.COMPARE_WITH, "value"),
            Input(ids.PIN, "n_clicks"),
            State(ids.SCENARIO, "data"),
            prevent_initial_call=True,
        )(self.pin)
        app.callback(
            Output(ids.EXPORT_INTERVAL, "options"),
            Output(ids.EXPORT_INTERVAL, "value"),
            Output(ids.EXPORT_LINK, "href"),
            Output(ids.EXPORT_NOTE, "children"),
            scenario,
            Input(ids.EXPORT_FORMAT, "value"),
            Input(ids.EXPORT_INTERVAL, "value"),
        )(self.export)
        app.callback(
            Output(ids.resampled(MATCH), "figure", allow_duplicate=True),
            Input(ids.resampled(MATCH), "relayoutData"),
            State(ids.SCENARIO, "data"),
            State(ids.RULES, "value"),
            State(ids.COMPARE_WITH, "value"),
            State(ids.COMPARE, "data"),
            prevent_initial_call=True,
        )(self.zoom)
        app.callback(
            Output(ids.resampled("grid"), "figure", allow_duplicate=True),
            Input(ids.VIOLATIONS, "selectedRows"),
            State(ids.SCENARIO, "data"),
            State(ids.RULES, "value"),
            prevent_initial_call=True,
        )(self.show_violation)


def _unchanged(message: str) -> tuple:
    """set_base's answer that changes nothing but the message (one no_update per control)."""
    return no_update, [no_update] * len(CONTROLS), no_update, no_update, message


def _only(tab: str, view: str) -> None:
    """Views are computed when their tab is open, not for every edit."""
    if tab != view:
        raise PreventUpdate


def unmitigated(scenario: Scenario, base: Scenario) -> Scenario:
    """The scenario without its mitigations: no ``[mitigation]``, and the levers that live
    elsewhere (checkpoint mode, start-up ramp) as the base has them."""
    keep = {key: value_at(base, key) for key in MITIGATION_KEYS}
    return load_scenario(scenario, {"mitigation": {}, **keep})


def _thermal(entry: Entry, m: dict[str, Any]) -> dict[str, Any]:
    ds = entry.ds
    swing, trough = diurnal_swing(ds)
    numbers = [
        ("PUE over the run", f"{m['pue']:.3f}"),
        ("WUE", f"{m['wue_l_per_kwh']:.3f} L/kWh"),
        ("chiller hours", f"{m['chiller_hours']:.0f} h"),
        ("throughput lost to heat", f"{m['throughput_lost_to_heat']:.2%}"),
        ("daily throughput swing", f"{swing:.2%}, lowest at {trough}:00"),
    ]
    return {
        "figure": figures.thermal_figure(ds),
        "diurnal": figures.diurnal_figure(ds),
        "numbers": _numbers(numbers),
    }


def _numbers(rows: list[tuple[str, str]]) -> html.Table:
    return html.Table([html.Tr([html.Td(k), html.Td(v)]) for k, v in rows], className="numbers")


def _check(entry: Entry, names: tuple[str, ...]) -> tuple[list[rules.RuleResult], list[dict]]:
    """Results of the rules that can be read off this profile, and a row for each that cannot."""
    results, refused = [], []
    for rule in rules.load_rules(list(names)) if names else []:
        try:
            results += rules.check(entry.ds, [rule])
        except PowerModelError as exc:
            refused.append({"rule": rule.name, "verdict": "cannot say", "note": str(exc)})
    return results, refused


def _grid(entry: Entry, results: list[rules.RuleResult], refused: list[dict]) -> dict[str, Any]:
    return {
        "figure": figures.grid_figure(entry.ds, results),
        "ramps": figures.ramp_figure(entry.ds),
        "spectrum": figures.spectrum_figure(entry.ds, [r.rule for r in results]),
        "compliance": figures.compliance_rows(results) + refused,
        "violations": figures.violation_rows(results),
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
            "worst without": f"{b.worst:.3g}",
            "worst with": f"{a.worst:.3g}",
            "verdict with": "violated" if len(a.violations) else "passes",
        }
        for a, b in zip(after_results, before_results, strict=True)
    ]
    return {
        "note": note,
        "figure": figures.before_after_figure(before.ds, entry.ds),
        "costs": figures.cost_rows(sizing.costs(entry.scenario, before.ds, entry.ds)),
        "rules": verdicts,
    }


def _compare(
    entry: Entry, other: Entry, names: tuple[str, str], both: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "figure": figures.compare_figure(entry.ds, other.ds, names),
        "table": figures.metric_rows(both, ("this", "other")),
    }


def _timestamp(text: str) -> float:
    return pd.Timestamp(text).timestamp()


def _dash_time(seconds: float) -> str:
    """A UTC instant as plotly's date axes write it."""
    return pd.Timestamp(seconds, unit="s").strftime("%Y-%m-%d %H:%M:%S.%f")
