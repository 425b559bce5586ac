"""The sidebar's callbacks: page state -> scenario, the first step of every callback.

The browser holds the scenario as its base (a preset's *name*, or an uploaded TOML's text) and
the controls' changes, never arrays. :class:`Sidebar` sets the base (from the link, the preset
picker, an upload), assembles the page's boxes into a state (each refused box named and kept
out of the run), and rebuilds a state into a checked :class:`~powermodel.scenario.Scenario`
(:meth:`Sidebar.scenario`, the only way from a browser's state to a scenario: every view,
download and upload of the board goes through it). The scenario's TOML and the weather upload
are the sidebar's too.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import dash
from dash import ALL, Input, Output, State, ctx, dcc, no_update
from dash.exceptions import PreventUpdate

from powermodel.errors import PowerModelError, ScenarioError
from powermodel.iotools import SHIPPED
from powermodel.scenario import (
    Scenario,
    load_scenario,
    names_a_file,
    presets,
    shorten,
)
from powermodel.webapp import downloads, ids, layout
from powermodel.webapp.controls import (
    BASE,
    BY_KEY,
    BY_PROP,
    CONTROLS,
    OPTIONAL_TABLES,
    Link,
    base_scenario,
    changes,
    from_query,
    opens,
    options,
    out_of_range,
    overrides,
    page_values,
    same_value,
    shown_values,
    to_query,
    typed,
)
from powermodel.webapp.plumbing import (
    CONTROL_DATES,
    CONTROL_VALUES,
    SIMULATING,
    Board,
    base_set,
    base_unchanged,
    header_name,
    is_plain,
    keeping,
)
from powermodel.webapp.uploads import (
    decode_upload,
    safe_name,
)

MAX_STEPS = 5_000_000  # steps the dashboard simulates: 57 days 21 h at 1 s, about 1.6 GB at peak
BUILT_KEPT = 256  # scenarios rebuilt from page states, kept by state


class Sidebar(Board):
    """The sidebar: the base, the boxes, the page's state, the scenario of a state and the
    limits it is checked against (:meth:`check_limits`), its TOML, an uploaded weather file."""

    def set_base(
        self,
        trigger: str | None,
        search: str | None,
        preset: str | None,
        contents: str | None,
        filename: str | None,
    ) -> tuple:
        """The base and every control's value: from the URL on page load, from the preset
        picker, or from an uploaded scenario. Returns base, control values, dates, preset,
        tab, message."""
        tab, message, preset_out = no_update, "", no_update
        if trigger == ids.UPLOAD_SCENARIO:
            label = safe_name(filename, "scenario.toml")
            try:
                base = {
                    "upload": label,
                    "toml": decode_upload(contents, label, self.upload_limit).decode("utf-8"),
                }
                scenario = self.base(base)
            except UnicodeDecodeError:
                return base_unchanged(f"{label} is not a text file: upload a TOML scenario")
            except PowerModelError as exc:
                return base_unchanged(self.unchanged_because(exc, "the scenario shown"))
            changed, message = {}, f"loaded {label}"
        else:
            name, changed = preset if preset in presets() else self.preset, {}
            if trigger != ids.PRESET:  # page load: the link's state
                try:
                    link = from_query(search)
                except (ScenarioError, ValueError) as exc:
                    link = Link(None, {}, None, None)
                    message = f"{self.said(exc)}; showing the preset"
                name, changed = link.preset or self.preset, link.changed
                tab = link.tab if link.tab in ids.VIEWS else no_update
                if link.upload:
                    message = (
                        f"this link was made from an uploaded scenario, {link.upload}, "
                        f"which a link cannot carry: upload it again (meanwhile its changes are "
                        f"shown on {name})"
                    )
            base = {"preset": name}
            try:
                scenario = self.base(base)
            except PowerModelError as exc:
                base, changed = {"preset": self.preset}, {}
                scenario, message = self.base(base), f"{self.said(exc)}; showing {self.preset}"
            preset_out = base["preset"]
        values = shown_values(scenario, self.weather) | changed
        return base_set(base, values, message, preset_out, tab)

    def open_base(
        self,
        trigger: str | None,
        search: str | None,
        preset: str | None,
        contents: str | None,
        filename: str | None,
        shown: Any = None,
    ) -> tuple:
        """The set-base callback: :meth:`set_base`'s answer, and the record of the boxes the
        user has set on the new base: a link's keys (its value equal to the base's too, so that
        the link runs as it was made), none for a preset chosen or an upload. A page load that
        finds its page showing the opening preset as it is (``shown``, its state: a first page
        made with the opening run, :meth:`~powermodel.webapp.run_summary.RunSummary.first_page`)
        and a link that asks for nothing else leaves it as it is."""
        if trigger in (None, ids.URL) and _opening_link(search, self.preset, shown):
            raise PreventUpdate
        answer = self.set_base(trigger, search, preset, contents, filename)
        base = answer[0]
        if base is no_update:
            return (*answer, no_update)
        keys: list[str] = []
        if trigger not in (ids.PRESET, ids.UPLOAD_SCENARIO):
            try:
                link = from_query(search)
            except (ScenarioError, ValueError):
                link = None
            if link is not None and base == {"preset": link.preset or self.preset}:
                keys = list(link.changed)
        return (*answer, {"base": base, "keys": keys})

    def assemble(
        self,
        base: Any,
        values: Any,
        dates: Any,
        previous: Any = None,
        boxes: Any = None,
        fired: frozenset[str] = frozenset(),
    ) -> tuple[Any, str]:
        """The state of the base and the controls, and why any box is not applied.

        The run takes every box whose value is valid; each refused one is named (``not
        applied: ...``) and kept out of the run, so that it never blocks an edit of another
        box (:meth:`assembled`, whose :class:`Assembly` says which). The state is
        ``no_update`` when the base does not build, or when it is the run already shown."""
        state, message, _ = self.assembled(base, values, dates, previous, boxes, fired)
        return state, message

    def assembled(
        self,
        base: Any,
        values: Any,
        dates: Any,
        previous: Any = None,
        boxes: Any = None,
        fired: frozenset[str] = frozenset(),
    ) -> tuple[Any, str, Assembly | None]:
        """:meth:`assemble`, and what the page's boxes then show (:class:`Assembly`).

        ``previous`` is the page's state before this edit, ``boxes`` the page's record of the
        boxes the user has set (:data:`~powermodel.webapp.ids.SET_BOXES`) and ``fired`` the
        keys of the boxes the user changed (or ``base`` when the base itself changed): a box
        the user has set stays set, every other box shows the value the run uses (the plant's
        own supply setpoint, the compute share the layout gives at the GPU count) and follows
        it."""
        if base is None:
            raise PreventUpdate
        try:
            sent = _by_key(BY_PROP["value"], values) | _by_key(BY_PROP["date"], dates)
            start = self.base(base)
        except PowerModelError as exc:
            return no_update, f"not applied: {self.said(exc)}", None
        before = _previous(previous, boxes, base, fired)
        if before is not None:  # what the page's run shows: a box showing it follows the run
            try:
                ran = self.scenario({"base": base, "changes": before["changes"]})
                before["shown"] = shown_values(ran, self.weather)
            except PowerModelError:
                before = None  # a state this dashboard did not make: from the boxes alone
        linked = _set_on(boxes, base)  # on a new base, the keys its link set
        chosen = _chosen(sent, start, before, fired, linked, self.weather)
        try:
            scenario, changed, refused = self._valid(base, chosen, before, fired)
        except PowerModelError as exc:
            return no_update, f"not applied: {self.said(exc)}", None
        message = f"not applied: {'; '.join(dict.fromkeys(refused.values()))}" if refused else ""
        assembly = Assembly(scenario, sent, chosen, refused)
        state = {
            "key": self.cache.remember(scenario),
            "name": header_name(scenario, {"base": base}),
            "base": base,
            "changes": changed,
            "query": to_query(base, changed),
        }
        if before is not None and _same_run(before, state):
            return no_update, message, assembly  # the run shown: its views stay as they are
        return state, message, assembly

    def _valid(
        self, base: dict, chosen: dict[str, Any], before: dict | None, fired: frozenset[str]
    ) -> tuple[Scenario, dict[str, Any], dict[str, str]]:
        """The scenario of every valid box: all of ``chosen`` if it builds, else each box
        added in turn, those the page ran before first and the ones just changed last (so
        that a new value is refused, not an old one), a box that does not build refused with
        its reason. Returns the scenario, the boxes it takes, and the refused by key."""
        try:
            return self.scenario({"base": base, "changes": chosen}), chosen, {}
        except PowerModelError:
            pass
        ran = set(before["changes"]) if before else set()
        units: dict[str, list[str]] = {}  # a table's fields go in together (smoothing's three)
        for key in sorted(chosen, key=lambda k: (k in fired, k not in ran)):  # stable: sidebar's
            table = next((t for t in OPTIONAL_TABLES if key.startswith(f"{t}.")), key)
            units.setdefault(table, []).append(key)
        accepted: dict[str, Any] = {}
        refused: dict[str, str] = {}
        scenario = self.base(base)
        for keys in units.values():
            trial = {**accepted, **{k: chosen[k] for k in keys}}
            try:
                scenario = self.scenario({"base": base, "changes": trial})
            except PowerModelError as exc:
                refused |= dict.fromkeys(keys, self.said(exc))
            else:
                accepted = trial
        return scenario, {k: accepted[k] for k in chosen if k in accepted}, refused

    def apply(self, base: Any, values: Any, dates: Any, previous: Any, boxes: Any) -> tuple:
        """The assemble callback: the state, the refusal at the top of the sidebar, the boxes
        the run changed (each other ``no_update``), each box's refusal and mark, the banner
        over the views while a refused box keeps them from showing the boxes, and the record
        of the boxes the user has set."""
        fired = _fired(ctx.triggered_prop_ids)
        state, message, assembly = self.assembled(base, values, dates, previous, boxes, fired)
        fields = CONTROLS  # in the sidebar's order, as the page lists the pattern's blocks
        if assembly is None:
            keep = [no_update] * len(fields)
            shown_now = page_values(dict.fromkeys(BY_KEY, no_update))
            return state, message, *shown_now, keep, keep, no_update, no_update
        now = shown_values(assembly.scenario, self.weather)
        follow = {
            key: (no_update if key in assembly.chosen or same_value(now[key], sent) else now[key])
            for key, sent in assembly.sent.items()
        }
        refused = assembly.refused
        errors = [refused.get(c.key, "") for c in fields]
        classes = [layout.field_class(c, c.key in refused) for c in fields]
        banner = (
            "showing the last valid run: the boxes marked in the sidebar are not applied ("
            + ", ".join(BY_KEY[k].label for k in refused)
            + "); the figures use every other box"
            if refused
            else ""
        )
        chosen = {"base": base, "keys": list(assembly.chosen)}
        return state, message, *page_values(follow), errors, classes, banner, chosen

    def base(self, base: Any) -> Scenario:
        """The scenario a page's base names, checked as :meth:`scenario` checks."""
        return self.scenario({"base": base, "changes": {}})

    def scenario(self, state: Any) -> Scenario:
        """The scenario of a page's state, rebuilt on the server from its base and the
        controls' changes, and checked against every limit: the only way from a browser's
        state to a scenario (a state the page never made is refused, never trusted).

        Raises
        ------
        ScenarioError
            The state is malformed, the scenario does not validate, or it breaks a limit.
        """
        base = state.get("base") if isinstance(state, dict) else None
        changed = state.get("changes") if isinstance(state, dict) else None
        if not (is_plain(base) and is_plain(changed) and isinstance(changed, dict)):
            raise ScenarioError("the page's state is not one this dashboard made: reload the page")
        text = base.get("toml") if isinstance(base, dict) else None
        if isinstance(text, str) and len(text) > self.upload_limit:
            raise ScenarioError(
                f"the uploaded scenario is over {self.upload_limit / 1e6:g} MB: upload a "
                "smaller one"
            )
        key = hashlib.sha256(json.dumps([base, changed], sort_keys=True).encode()).hexdigest()
        with self._lock:
            built = self._built.get(key)
            if built is not None:
                self._built.move_to_end(key)
        if built is not None:
            self._check_weather(built)  # an upload it reads may have gone since
            return built
        start = base_scenario(base, self.defaults)
        scenario = load_scenario(start, overrides(changed, start, self.weather))
        self.check_limits(scenario)
        with self._lock:
            self._built[key] = scenario
            if len(self._built) > BUILT_KEPT:
                self._built.popitem(last=False)
        return scenario

    def check_limits(self, scenario: Scenario) -> None:
        """Refuse what the dashboard should not run, however the scenario came: too many
        steps, more memory than its bound, a control's value beyond the dashboard's limit, a
        weather file that is neither shipped nor uploaded here."""
        steps = scenario.simulation.n_steps
        if steps > MAX_STEPS:
            raise ScenarioError(
                f"{steps:,} steps is more than the dashboard draws ({MAX_STEPS:,}): lengthen "
                "the step or shorten the period (the command line has no such limit)"
            )
        self.cache.admit(scenario)
        problem = out_of_range(scenario)
        names = [w.name for w in scenario.campus.workloads] if scenario.campus else []
        for name, part in zip(names, scenario.parts, strict=True):  # a campus's workloads too
            problem = problem or (
                f"campus workload {name!r}: {out_of_range(part)}" if out_of_range(part) else None
            )
        if problem:
            raise ScenarioError(problem)
        self._check_weather(scenario)

    def _check_weather(self, scenario: Scenario) -> None:
        """Refuse a weather file that is neither shipped nor an upload kept here."""
        weather = scenario.site.weather
        if not names_a_file(weather) or weather in self.weather.values():
            return
        label = self.uploads.label_of(weather)
        if label is not None:
            raise ScenarioError(
                f"the uploaded weather file {label} is no longer kept on the server (it keeps "
                f"the latest {self.uploads.kept}): upload it again"
            )
        raise ScenarioError(
            f"site.weather {shorten(weather)}: the dashboard reads the shipped weather files "
            f"({', '.join(SHIPPED)}), 'synthetic' or an EPW uploaded here: upload the file"
        )

    def toml(self, n_clicks: int | None, state: Any) -> dict:
        """The scenario as a TOML file: loading it reproduces the view."""
        if not n_clicks or not state:
            raise PreventUpdate
        with keeping():
            scenario = self.uploads.portable(self.scenario(state))
        return dcc.send_string(*downloads.scenario_file(scenario))

    def upload_weather(self, contents: Any, filename: Any, uploaded: Any) -> tuple:
        """Keep an uploaded EPW if it reads as one; returns uploaded, weather options and
        value, message. The page holds a token for the file, never its path."""
        if not contents:
            raise PreventUpdate
        try:
            token, label, meta = self.uploads.add(contents, filename)
        except PowerModelError as exc:
            return no_update, no_update, no_update, self.unchanged_because(exc, "the weather")
        kept = self.weather
        listed = uploaded if isinstance(uploaded, dict) else {}
        listed = {k: v for k, v in listed.items() if isinstance(v, str) and v in kept}
        listed[label] = token
        place = ", ".join(str(meta[k]) for k in ("city", "state", "country") if meta.get(k))
        design = (
            ""
            if meta.get("design_conditions")
            else "; no ASHRAE design day in it, so rules relative to the registered demand "
            "cannot be checked"
        )
        return (
            listed,
            options("site.weather", listed),
            token,
            f"weather {label}: {place}, UTC{meta['utc_offset']:+g} h{design}",
        )

    def _register_sidebar(self, app: dash.Dash) -> None:
        """The sidebar's callbacks: the base, the boxes, the link, the scenario's file, the
        weather upload."""
        app.callback(
            Output(ids.BASE, "data"),
            Output(CONTROL_VALUES, "value"),
            Output(CONTROL_DATES, "date"),
            Output(ids.PRESET, "value"),
            Output(ids.TABS, "value"),
            Output(ids.MESSAGE, "children"),
            Output(ids.SET_BOXES, "data"),
            Input(ids.URL, "search"),
            Input(ids.PRESET, "value"),
            Input(ids.UPLOAD_SCENARIO, "contents"),
            State(ids.UPLOAD_SCENARIO, "filename"),
            State(ids.SCENARIO, "data"),
        )(lambda *a: self.open_base(ctx.triggered_id, *a))
        app.callback(
            Output(ids.SCENARIO, "data"),
            Output(ids.SCENARIO_ERROR, "children"),
            # the boxes the run changed (the plant's setpoint ...): a callback's own outputs
            # do not fire it again
            Output(CONTROL_VALUES, "value", allow_duplicate=True),
            Output(CONTROL_DATES, "date", allow_duplicate=True),
            Output({"type": "control-error", "key": ALL}, "children"),
            Output({"type": "control-field", "key": ALL}, "className"),
            Output(ids.STALE_FIELDS, "children"),
            Output(ids.SET_BOXES, "data", allow_duplicate=True),
            Input(ids.BASE, "data"),
            Input(CONTROL_VALUES, "value"),
            Input(CONTROL_DATES, "date"),
            State(ids.SCENARIO, "data"),
            State(ids.SET_BOXES, "data"),
            # shown from the keystroke on, before the scenario reaches the server
            running=[SIMULATING],
            prevent_initial_call=True,  # the base comes with the page's first answer
        )(self.apply)
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


@dataclass(frozen=True)
class Assembly:
    """What the boxes of a page make: the scenario run (of every valid box), the values the
    page sent, the boxes the user has set (key -> value, refused ones too) and the refused
    ones' reasons."""

    scenario: Scenario
    sent: dict[str, Any]
    chosen: dict[str, Any]
    refused: dict[str, str]


FIELD_KEYS = {c.key.replace(".", "-"): c.key for c in CONTROLS}  # a control's id -> its key


BASE_FIRED = "base"  # in ``fired``: the base changed (page load, preset, upload, fit loaded)


def _opening_link(search: str | None, preset: str, shown: Any) -> bool:
    """Whether a page's state (``shown``) is ``preset`` as it is, and its link asks for
    nothing else (:func:`~powermodel.webapp.controls.opens`)."""
    if not isinstance(shown, dict) or shown.get("base") != {"preset": preset}:
        return False
    return shown.get("changes") == {} and opens(search, preset)


def _fired(triggered: Any) -> frozenset[str]:
    """The keys of the boxes that fired a callback (Dash's ``triggered_prop_ids``), and
    :data:`BASE_FIRED` when the base did."""
    out = set()
    for prop, cid in dict(triggered or {}).items():
        if isinstance(cid, dict):
            key = FIELD_KEYS.get(cid.get("key"))
            if key is not None:
                out.add(key)
        elif str(prop).startswith(f"{ids.BASE}."):
            out.add(BASE_FIRED)
    return frozenset(out)


def _previous(previous: Any, boxes: Any, base: Any, fired: frozenset[str]) -> dict | None:
    """The page's state before this edit, if it is of this base and the base did not change:
    its key, its changes and the boxes the user has set (keys of this dashboard's controls
    only; they came from a browser, and only keys are read from them: every value is the
    boxes')."""
    if BASE_FIRED in fired or not isinstance(previous, dict) or previous.get("base") != base:
        return None
    changed = previous.get("changes")
    if not isinstance(changed, dict):
        return None
    return {
        "key": previous.get("key"),
        "changes": {k: v for k, v in changed.items() if k in BY_KEY},
        "set": set(_set_on(boxes, base)) | {k for k in changed if k in BY_KEY},
    }


def _chosen(
    sent: dict[str, Any],
    start: Scenario,
    before: dict | None,
    fired: frozenset[str],
    linked: frozenset[str],
    weather: dict[str, str],
) -> dict[str, Any]:
    """The boxes the user has set, by key, in the sidebar's order: with no state before (a
    page load, a new base) those whose value differs from the base's and those a link set;
    else those set before (applied or refused), those just changed, and those that show
    neither the base's value nor the page's run's (an edit whose answer has not come back
    when the next one is sent). A box emptied back to the base's value is none: it shows the
    value the run uses again."""
    differ = changes(sent, start, weather)
    if before is None:  # every box fired with the base: those it sets differently, the link's
        explicit = set(differ) | linked
    else:
        differ = {k: v for k, v in differ.items() if not same_value(v, before["shown"][k])}
        explicit = before["set"] | fired | set(differ)
    out = {}
    for control in CONTROLS:
        if control.key not in explicit or control.key not in sent:
            continue
        value = sent[control.key]
        try:
            emptied = typed(control, value) is None
        except PowerModelError:
            emptied = False  # refused, with its reason
        if control.key in differ or not (emptied and control.empty == BASE):
            out[control.key] = value
    return out


def _set_on(boxes: Any, base: Any) -> frozenset[str]:
    """The keys a page's record of set boxes (:data:`~powermodel.webapp.ids.SET_BOXES`) names
    for ``base`` (this dashboard's controls only)."""
    keys = boxes.get("keys") if isinstance(boxes, dict) and boxes.get("base") == base else None
    return frozenset(k for k in keys if k in BY_KEY) if isinstance(keys, list) else frozenset()


def _same_run(before: dict, state: dict) -> bool:
    """Whether a new state runs and shows what the page's state before did."""
    return before["key"] == state["key"] and before["changes"] == state["changes"]


def _by_key(controls: tuple, values: Any) -> dict[str, Any]:
    """The values the page sent for ``controls``, by key; a list of another length is no page
    of this dashboard."""
    if not isinstance(values, list) or len(values) != len(controls):
        raise ScenarioError("the page's controls are not this dashboard's: reload the page")
    return {c.key: v for c, v in zip(controls, values, strict=True)}
