"""Callbacks of the dashboard: controls -> scenario -> cached simulation -> the open view.

Each callback is a method of :class:`Dashboard`, a few lines on top of the pure functions in
``controls``, ``figures`` and ``powermodel`` itself, so that tests call them directly. The
browser holds the scenario (its base and the controls' changes), never arrays; the server keeps
simulations and the figures built from them in a bounded :class:`SimulationCache`.

The summary waits for the page's simulation: when it has the run, it marks the page's state
*ready*, and the views, the zoom, the export and the pin follow the ready state, so a view
finds its run kept. Three waits remain in a view, each in the same bounded queue (beyond it,
"busy"): the run without mitigations that the mitigation view compares against, the compare
view's other run, and a ready run evicted under memory pressure, simulated again. ``app.py``
serves with 16 threads beside a full queue, so runs waiting never take every thread; a view
waiting for a build slot gives up after :data:`~powermodel.webapp.cache.SLOT_WAIT`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import tempfile
import threading
from collections import OrderedDict, deque
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import dash
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from dash import ALL, MATCH, Input, Output, State, ctx, dcc, html, no_update
from dash.exceptions import PreventUpdate

from powermodel import deadline, fit_report, ride_through, rules, sizing
from powermodel import fit as fitting
from powermodel.analysis import diurnal_swing, flexibility, metrics, workloads
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.export import TOOLS
from powermodel.iotools import SHIPPED

# the results files' opener (and h5py) loaded with the server, not by its first upload: h5py's
# import runs `uname -p`, a process (and a walk of PATH) inside a request
from powermodel.iotools.netcdf import VARIABLE_ITEMS
from powermodel.scenario import (
    Scenario,
    format_duration,
    gpu_catalogue,
    load_scenario,
    loads_scenario,
    names_a_file,
    parse_duration,
    presets,
    shorten,
)
from powermodel.simulate import SENSORS
from powermodel.sweep import MAX_RESULT_CELLS, bands, measured, swept_dims, swept_keys
from powermodel.webapp import downloads, figures, ids, layout
from powermodel.webapp.cache import (
    BANDS_BYTES_PER_RUN,
    FIT_BYTES,
    PREDICTION_BYTES_PER_STEP,
    RESULTS_BYTES_PER_CELL,
    SECONDS_PER_DISTURBANCE,
    SECONDS_PER_RUN,
    SECONDS_PER_UPLOAD_BYTE,
    SLOT_WAIT,
    Entry,
    SimulationCache,
    Work,
    deadline_of,
    scenario_key,
)
from powermodel.webapp.controls import (
    BASE,
    BY_KEY,
    BY_PROP,
    CONTROLS,
    OPTIONAL_TABLES,
    Link,
    base_scenario,
    changes,
    finite,
    from_query,
    options,
    out_of_range,
    overrides,
    page_values,
    same_value,
    shown_values,
    to_query,
    typed,
    value_at,
)
from powermodel.webapp.layout import compare_options, summary
from powermodel.webapp.uploads import (
    UploadError,
    WeatherUploads,
    decode_upload,
    read_sweep_results,
    read_trace,
    safe_name,
    upload_size,
)

# the sweep view opens on the first of these its results hold: the swing the grid sees first
SWEEP_METRICS = ("grid_swing_5s_mw", "grid_peak_mw", "effective_training_time")
MAX_FAILED_ROWS = 1000  # failed runs listed (a sweep holds up to 10,000 runs)
ERROR_CHARACTERS = 300  # of each failed run's error, as the table shows it
UNIT_CHARACTERS = 40  # of a metric's units in an uploaded results file, as the axis shows them
MAX_STEPS = 5_000_000  # steps the dashboard simulates: 57 days 21 h at 1 s, about 1.6 GB at peak
PREFETCHED = ("power", "thermal", "grid")  # views built ahead of a tab change (the mitigation
# view is not: it would simulate the run without its mitigations for every scenario seen)
PREFETCH_KEPT = 4  # scenarios waiting for their views to be built ahead: the latest
RESAMPLED = ("power", "thermal", "grid", "mitigation", "compare")  # views with a zoomed graph
MITIGATION_KEYS = ("checkpoint.mode", "workload.startup_ramp")  # levers outside [mitigation]
BUILT_KEPT = 256  # scenarios rebuilt from page states, kept by state
VIOLATION_ROWS = 20_000  # violations sent to the table: the largest, the rest in the CSV
# An uploaded trace, bounded before its fit: the channel × sample cells of its grid (32 MB of
# float64; the command line's fit takes 50 M), and the fine steps its replay renders at
# min(sampling / 2, 50 ms), the step the fit's replay takes for NVML's and instantaneous chains
FIT_CELLS = 4_000_000
FIT_REPLAY_STEPS = 2_000_000  # a day at 50 ms, 16 MB a series
# the fit's fresh run (its prediction) on a coarser grid, down to the step the sensor needs:
# 27.8 h (the replay's bound) at 0.2 s, 256 MB (PREDICTION_BYTES_PER_STEP)
FIT_PREDICTED_STEPS = 500_000
FIT_SHOWN_WARNINGS = 3  # repairs of a trace named in its message (the rest counted)
# The readers' and the fit's advice names the command line's options; the page has boxes
PAGE_OPTIONS = (
    # the reader's own checks of its keywords, each after the trace's name
    (": gpus_per_node ", ": 'GPUs per meter channel' "),
    (": gpus ", ": 'GPUs per poll' "),
    ("--gpus-per-node N", "'GPUs per meter channel'"),
    ("--gpus-per-node", "'GPUs per meter channel'"),
    ("--gpus N", "'GPUs per poll'"),
    ("--gpus ", "'GPUs per poll' "),
    ("--gpu NAME", "'GPU'"),
    ("--gpu ", "'GPU' "),
    ("period= in seconds", "'period [s]'"),
    ("--period", "'period [s]'"),
)


class Dashboard:
    """The callbacks of one app, sharing its cache, defaults and working folder.

    Everything a callback receives comes from a browser and is checked here, on the server,
    whatever the page would have sent: a scenario is rebuilt from its base (a preset *name*, or
    uploaded TOML parsed as data) and the controls' changes (:meth:`scenario`), and every limit
    (:meth:`check_limits`) holds for every way in — the link, an upload, the stored state of
    the page, the comparison, the pinned scenario, a download.
    """

    def __init__(
        self,
        cache: SimulationCache,
        preset: str,
        defaults: Any,
        folder: Path | tempfile.TemporaryDirectory,
        upload_limit: int,
    ) -> None:
        self.cache = cache
        self.preset = preset
        self.defaults = defaults  # overrides every preset opens with (the app's period)
        # a temporary working folder lives as long as the board, which the app's callbacks hold
        self.workdir = folder if isinstance(folder, tempfile.TemporaryDirectory) else None
        folder = Path(folder.name).resolve() if self.workdir else folder
        self.app: dash.Dash | None = None  # the app the callbacks are registered on
        self.uploads = WeatherUploads(folder / "uploads", upload_limit)
        self.downloads = folder / "downloads"
        self.downloads.mkdir(parents=True, exist_ok=True)
        self.upload_limit = upload_limit
        self._built: OrderedDict[str, Scenario] = OrderedDict()  # scenarios by their state
        self._lock = threading.Lock()
        self._resampling = threading.Lock()
        # one daemon thread: the server's exit (or a test's) need not wait for a prefetch
        self._prefetches: deque[tuple[dict, tuple[str, ...], Future]] = deque()
        self._prefetch_due = threading.Condition()
        self.traces = folder / "traces"  # an uploaded trace, while it is read
        # one fit at a time (seconds of a core), so fits hold at most one of the heavy slots
        self._fitting = threading.BoundedSemaphore(1)
        threading.Thread(target=self._prefetch_loop, name="prefetch", daemon=True).start()

    @property
    def weather(self) -> dict[str, str]:
        """The weather files uploaded here, token -> path."""
        return self.uploads.paths()

    def said(self, exc: Exception) -> str:
        """An error as the page shows it: no path of the server's in it."""
        return self.uploads.public(str(exc))

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
                return _unchanged(f"{label} is not a text file: upload a TOML scenario")
            except PowerModelError as exc:
                return _unchanged(f"{self.said(exc)} — the scenario shown is unchanged")
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
        return (base, *page_values(values), preset_out, tab, message)

    def open_base(
        self,
        trigger: str | None,
        search: str | None,
        preset: str | None,
        contents: str | None,
        filename: str | None,
    ) -> tuple:
        """The set-base callback: :meth:`set_base`'s answer, and the record of the boxes the
        user has set on the new base: a link's keys (its value equal to the base's too, so that
        the link runs as it was made), none for a preset chosen or an upload."""
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
            "name": _title(scenario, {"base": base}),
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
        if not (_plain(base) and _plain(changed) and isinstance(changed, dict)):
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

    def entry(self, state: Any) -> Entry:
        """The simulated scenario of a ready state (the summary has simulated it); a scenario
        that does not simulate leaves the views as they are (the summary line says why)."""
        if not state:
            raise PreventUpdate
        try:
            return self.cache.get(self.scenario(state))
        except PowerModelError:
            raise PreventUpdate from None

    def summarize(self, state: Any) -> tuple[str, str, Any]:
        """Scenario name, headline numbers and the state made ready for the views; or why
        the scenario does not simulate (the views keep the last ready one)."""
        if not state:
            raise PreventUpdate
        try:
            scenario = self.scenario(state)
            entry = self.cache.get(scenario)
            line = summary(self.metrics(entry), scenario.simulation.duration)
        except PowerModelError as exc:
            name = shorten(state.get("name", ""), 80).strip("'") if isinstance(state, dict) else ""
            why = f"not simulated: {self.said(exc)} (the figures show the last run)"
            return name, why, no_update
        return _title(scenario, state), line, state

    def summarized(self, state: Any) -> tuple[str, str, Any]:
        """The summary callback: :meth:`summarize`, and the banner over the views that says
        they show the last run while this one does not simulate."""
        name, line, ready = self.summarize(state)
        stale = f"showing the last valid run — {line}" if ready is no_update else ""
        dash.set_props(ids.STALE_RUN, {"children": stale})
        return name, line, ready

    def progress(self, _: int | None, state: Any) -> str:
        """Where the page's simulation stands while its summary waits: queued, or running."""
        try:
            where = self.cache.position(self.scenario(state))
        except PowerModelError:
            raise PreventUpdate from None
        if where:
            return f"busy: this run is number {where} in the queue"
        return "simulating…" if where == 0 else ""

    def opened(self, name: str, state: Any, chosen_rules: Any = None, sensor: Any = None) -> dict:
        """The open tab's view; the other views follow in the background."""
        shown = self.view(name, state, chosen_rules, sensor=sensor)
        self.prefetch(state, chosen_rules)
        return shown

    def prefetch(self, state: Any, chosen_rules: Any) -> Future:
        """Build the views of a ready state on a background thread, once the open one is shown,
        so that a tab change finds them ready; the newest first, and of those waiting only the
        latest :data:`PREFETCH_KEPT` (the server's users share the thread)."""
        done: Future = Future()
        with self._prefetch_due:
            if len(self._prefetches) >= PREFETCH_KEPT:
                self._prefetches.popleft()[-1].set_result(None)  # too old: not built ahead
            self._prefetches.append((state, chosen_rules, done))
            self._prefetch_due.notify()
        return done

    def warm(self) -> Future:
        """Simulate the opening scenario and measure it on a thread of its own, as a server
        starts: the first page (the preset with the app's period, as the page asks for it)
        finds its summary's run ready, and builds its views ahead as any page does. (Building
        them here too would hold the two cores while the first summary waits.)"""
        done: Future = Future()
        base = {"preset": self.preset}
        state, _ = self.assemble(base, *page_values(shown_values(self.base(base))))

        def run() -> None:
            try:
                self.metrics(self.cache.get(self.scenario(state)))
            except Exception:  # the page's own summary meets it and says why
                pass
            done.set_result(state)

        threading.Thread(target=run, name="warm", daemon=True).start()
        return done

    def _prefetch_loop(self) -> None:
        while True:
            with self._prefetch_due:
                self._prefetch_due.wait_for(lambda: self._prefetches)
                state, chosen_rules, done = self._prefetches.pop()
            for name in PREFETCHED:
                try:
                    self.view(name, state, chosen_rules)
                except Exception:  # the open tab's callback meets it and reports it
                    break
            done.set_result(None)

    def toml(self, n_clicks: int | None, state: Any) -> dict:
        """The scenario as a TOML file: loading it reproduces the view."""
        if not n_clicks or not state:
            raise PreventUpdate
        try:
            scenario = self.uploads.portable(self.scenario(state))
        except PowerModelError:
            raise PreventUpdate from None
        return dcc.send_string(*downloads.scenario_file(scenario))

    def upload_weather(self, contents: Any, filename: Any, uploaded: Any) -> tuple:
        """Keep an uploaded EPW if it reads as one; returns uploaded, weather options and
        value, message. The page holds a token for the file, never its path."""
        if not contents:
            raise PreventUpdate
        try:
            token, label, meta = self.uploads.add(contents, filename)
        except PowerModelError as exc:
            return no_update, no_update, no_update, f"{self.said(exc)} — the weather is unchanged"
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

    # --- a measured trace and its fit (compare view) ------------------------------------------

    def fit_trace(
        self, contents: Any, period: Any, gpus: Any, poll_gpus: Any, gpu: Any, filename: Any
    ) -> tuple:
        """Read an uploaded trace, fit it and replay the fit through the trace's sensor: the
        fit's store (the fitted scenario's text and the fit's key), message, figure, table and
        comparison. A trace refused says why, and what was shown stays."""
        if not contents:
            raise PreventUpdate
        try:
            period = _number(period, "period [s]")
            gpus = _number(gpus, "GPUs per meter channel", whole=True)
            poll_gpus = _number(poll_gpus, "GPUs per poll", whole=True)
            gpu = _catalogue_gpu(gpu)
            if not self._fitting.acquire(timeout=SLOT_WAIT):
                raise UploadError("busy: another trace is being fitted; upload it again shortly")
            try:
                shown = self._fitted(contents, filename, period, gpus, poll_gpus, gpu)
            finally:
                self._fitting.release()
        except PowerModelError as exc:
            why = _page_words(self.said(exc))
            return no_update, f"{why} — the fit shown is unchanged", *(no_update,) * 3
        store = {"key": shown["key"], "upload": shown["name"], "toml": shown["toml"]}
        return store, shown["message"], shown["figure"], shown["table"], shown["numbers"]

    def _fitted(
        self,
        contents: Any,
        filename: Any,
        period: float | None,
        gpus: int | None,
        poll_gpus: int | None,
        gpu: str | None,
    ) -> dict[str, Any]:
        """The fit of an upload and what the page shows of it, each made once and kept in the
        cache (counted by what it holds): by its bytes, the name it came with and the boxes'
        values, everything that is shown of it, so that nobody sees another's name."""
        key = _upload_key("fit", contents, filename, period, gpus, poll_gpus, gpu)
        size = upload_size(contents)
        fitting_it = Work(
            # and the prediction's fresh run, at most FIT_PREDICTED_STEPS steps
            FIT_BYTES[0] + FIT_BYTES[1] * size + FIT_PREDICTED_STEPS * PREDICTION_BYTES_PER_STEP,
            deadline_of(size, SECONDS_PER_UPLOAD_BYTE),
            f"{size / 1e6:.1f} MB",
            "upload a shorter span or fewer channels, or fit it with `powermodel fit`",
            "the fit",
        )
        # its figure and tables draw what the fit holds: the reading's share of the room
        drawing = replace(fitting_it, nbytes=FIT_BYTES[1] * size, what="the fit's figure")

        def fit() -> tuple[dict[str, Any], Work]:
            frame, meta, _ = read_trace(
                contents, filename, self.upload_limit, self.traces, period, gpus, poll_gpus
            )
            deadline.check()
            return fit_of(frame, meta, period, gpus, gpu), drawing

        entry = self.cache.upload(key, fit, fitting_it)
        return {"key": key, **self.cache.view(entry, "fit", lambda e: fit_view(e.ds), cheap=True)}

    def fit_zoom(self, relayout: Any, state: Any) -> Any:
        """New points for the fit's graph after a pan or zoom."""
        entry = self._uploaded(state, "fit")
        if not relayout or entry is None or "fit" not in entry.views or not _plain(relayout):
            raise PreventUpdate
        return self._patch(entry.views["fit"]["figure"], relayout)

    def fit_toml(self, n_clicks: int | None, state: Any) -> dict:
        """The fitted scenario as it was written (with its ``[C]`` tags), once it loads as an
        uploaded scenario does."""
        if not n_clicks:
            raise PreventUpdate
        try:
            base = _fit_base(state)
            self.base(base)
        except PowerModelError:
            raise PreventUpdate from None
        return dcc.send_string(base["toml"], base["upload"])

    def load_fit(self, n_clicks: int | None, state: Any) -> tuple:
        """Make the fitted scenario the sidebar's (as an uploaded scenario, over the period
        every preset opens with); returns what :meth:`set_base` returns."""
        if not n_clicks:
            raise PreventUpdate
        try:
            base = _fit_base(state)
            opened = load_scenario(self.base(base), self.defaults)
        except PowerModelError as exc:
            return _unchanged(f"{self.said(exc)} — the scenario shown is unchanged")
        values = shown_values(opened, self.weather)
        message = (
            f"loaded {base['upload']}, the scenario fitted to the trace, over "
            f"{format_duration(opened.simulation.duration)}"
        )
        return (base, *page_values(values), no_update, no_update, message)

    # --- a sweep's results (sweep view) ---------------------------------------------------------

    def open_sweep(self, contents: Any, filename: Any) -> tuple:
        """Read an uploaded sweep's results: the view's store, metric and key choices, message
        and the runs that failed. Results refused say why, and what was shown stays."""
        if not contents:
            raise PreventUpdate
        try:
            key = _upload_key("sweep", contents, filename)
            results = self.cache.upload(
                key, lambda: self._sweep_results(contents, filename), self._reading_results()
            ).ds
            label = safe_name(filename, "results.nc")
            metrics_drawn, keys = measured(results), swept_keys(results)
        except PowerModelError as exc:
            why = _page_words(self.said(exc))
            return no_update, *(no_update,) * 4, f"{why} — the sweep shown is unchanged", no_update
        metric = next((m for m in SWEEP_METRICS if m in metrics_drawn), metrics_drawn[0])
        runs = int(results["error"].size)
        failed, n_failed = _failed_runs(results)
        message = (
            f"{label}: {runs:,} runs ({results.sizes['seed']} seeds a point) over "
            f"{', '.join(keys)}; {n_failed:,} failed"
        )
        return (
            {"key": key, "name": label},
            [{"label": m, "value": m} for m in metrics_drawn],
            metric,
            [{"label": k, "value": k} for k in keys],
            keys[0],
            message,
            failed,
        )

    def _uploaded(self, state: Any, kind: str) -> Entry | None:
        """The upload of ``kind`` (``sweep``, ``fit``) a page's store names, if it is kept; a
        key of another kind (a run's, forged into the store) names nothing."""
        key = state.get("key") if isinstance(state, dict) else None
        found = isinstance(key, str) and key.startswith(f"{kind}:")
        return self.cache.find(key) if found else None

    def _reading_results(self) -> Work:
        """What reading an uploaded results file takes: the most values one may hold, and
        the most its check of one variable-length attribute may copy (each item at most the
        upload)."""
        return Work(
            MAX_RESULT_CELLS * RESULTS_BYTES_PER_CELL + VARIABLE_ITEMS * self.upload_limit,
            deadline_of(self.upload_limit, SECONDS_PER_UPLOAD_BYTE),
            f"up to {MAX_RESULT_CELLS:,} values",
            "upload the results of a smaller sweep",
            "reading the results",
        )

    def _sweep_results(self, contents: Any, filename: Any) -> tuple[Any, Work]:
        """An uploaded sweep's results, read and checked, and what a chart of them takes:
        :data:`~powermodel.webapp.cache.BANDS_BYTES_PER_RUN` and a deadline per run."""
        results, label, _ = read_sweep_results(contents, filename, self.upload_limit, self.traces)
        if not measured(results) or not swept_keys(results):
            raise UploadError(f"{label} has no metric over a swept key to draw")
        runs = int(results["error"].size)
        return results, Work(
            runs * BANDS_BYTES_PER_RUN,
            deadline_of(runs, SECONDS_PER_RUN),
            f"{runs:,} runs",
            "upload the results of a sweep of fewer points or seeds",
            "the sweep chart",
        )

    def sweep_view(self, state: Any, metric: Any, key: Any) -> go.Figure:
        """The chosen metric against the chosen key, from results kept here, drawn once."""
        entry = self._uploaded(state, "sweep")
        if entry is None or metric not in measured(entry.ds) or key not in swept_keys(entry.ds):
            raise PreventUpdate  # never uploaded here, evicted, or not the results' own
        # an uploaded file's own text: a unit, cut to what an axis title holds
        unit = str(entry.ds[metric].attrs.get("units", "1"))[:UNIT_CHARACTERS]
        key_unit = figures.schema_unit(key)  # the schema's, not the file's: a key is a name
        try:
            return self.cache.view(
                entry,
                f"sweep:{metric}:{key}",
                lambda e: figures.sweep_figure(
                    bands(e.ds, metric, key), metric, key, unit, key_unit
                ),
            )
        except PowerModelError as exc:
            raise Refused(self.said(exc)) from None

    def violations(self, scenario: Scenario, names: tuple[str, ...]) -> pd.DataFrame:
        """Every violation of the rules on a run, as the CLI's ``check --violations`` writes."""
        entry = self.cache.get(scenario)
        return rules.violations_table([self.checked(entry, names)[0]])

    # --- views --------------------------------------------------------------------------------

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
        try:
            return self._view(name, state, chosen_rules, compare_with, pinned, sensor)
        except PowerModelError as exc:
            raise Refused(self.said(exc)) from None

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
            names = (f"this: {_title(entry.scenario, state)}", label)
            return self.cache.view(
                entry,
                f"compare:{self.cache.remember(other.scenario)}",
                lambda e: _compare(e, other, names, [self.metrics(e), self.metrics(other)]),
            )
        raise PreventUpdate  # a view this page does not have

    def metrics(self, entry: Entry) -> dict[str, Any]:
        """:func:`powermodel.metrics` of a run, once per run (summary, thermal, compare)."""
        return self.cache.view(entry, "metrics", lambda e: metrics(e.ds), cheap=True)

    def checked(
        self, entry: Entry, names: tuple[str, ...]
    ) -> tuple[list[rules.RuleResult], list[rules.Refusal]]:
        """The rules' results on a run, and those it cannot judge, once per run and rule set
        (grid and mitigation)."""
        return self.cache.view(
            entry, f"rules:{','.join(names)}", lambda e: rules.check_each(e.ds, _loaded(names))
        )

    def _other(self, compare_with: str | None, pinned: dict | None) -> tuple[Entry, str]:
        if compare_with == "pinned" and pinned:
            return self.entry(pinned), f"pinned: {_title(self.scenario(pinned), pinned)}"
        if compare_with not in presets():
            raise PreventUpdate  # nothing chosen, or not a preset: presets go by name only
        try:
            return self.cache.get(self.base({"preset": compare_with})), compare_with
        except PowerModelError:
            raise PreventUpdate from None

    def power(
        self, state: dict | None, tab: str, sensor: Any = None, chosen_rules: Any = None
    ) -> Any:
        """The power view; the page's rules (``chosen_rules``) for the grid view built next
        (issue 28: without them it was built for no rule, and built again on the tab's first
        visit)."""
        _only(tab, "power")
        return self.opened("power", state, chosen_rules, sensor=sensor)["figure"]

    def thermal(self, state: dict | None, tab: str, chosen_rules: Any = None) -> tuple:
        _only(tab, "thermal")
        v = self.opened("thermal", state, chosen_rules)
        return v["figure"], v["diurnal"], v["numbers"]

    def grid(self, state: dict | None, tab: str, chosen_rules: Any) -> tuple:
        _only(tab, "grid")
        v = self.opened("grid", state, chosen_rules)
        return (
            v["figure"],
            v["ramps"],
            v["spectrum"],
            v["compliance"],
            v["violations"],
            v["violations_note"],
        )

    def mitigation(self, state: dict | None, tab: str, chosen_rules: Any) -> tuple:
        _only(tab, "mitigation")
        v = self.opened("mitigation", state, chosen_rules)
        return v["note"], v["figure"], v["costs"], v["rules"]

    def compare(
        self, state: dict | None, tab: str, compare_with: str | None, pinned: dict | None
    ) -> tuple:
        _only(tab, "compare")
        if not compare_with or (compare_with == "pinned" and not pinned):
            return figures.empty_figure(layout.EMPTY["compare"]), []  # nothing chosen: say so
        v = self.view("compare", state, compare_with=compare_with, pinned=pinned)
        return v["figure"], v["table"]

    def campus(self, state: dict | None, tab: str, picked: Any) -> tuple:
        """The campus view: a note, the workloads to pick from, their stacked IT power (and
        each hall's), each workload's numbers, the flexibility events."""
        _only(tab, "campus")
        chosen = (
            sorted({p for p in picked if isinstance(p, str)})[:64]
            if isinstance(picked, list)
            else []
        )
        try:
            v = self.cache.view(
                self.entry(state), f"campus:{json.dumps(chosen)}", lambda e: _campus(e, chosen)
            )
        except PowerModelError as exc:
            raise Refused(self.said(exc)) from None
        return v["note"], v["options"], v["figure"], v["workloads"], v["flex"]

    def grid_events(self, state: dict | None, tab: str, picked: Any) -> tuple:
        """The grid-events view: the site through its disturbances, one of them close up with
        the fitted dynamic model over it, the tables."""
        _only(tab, "grid events")
        number = isinstance(picked, str) and picked.isascii() and picked.isdigit()
        index = int(picked) if number and len(picked) <= 6 else 0
        try:
            entry = self.entry(state)
            index = min(index, max(entry.ds.sizes.get("disturbance", 1) - 1, 0))
            v = self.cache.view(
                entry,
                f"grid-events:{index}",
                lambda e: _grid_events(e, index),
                work=_events_work(entry),
            )
        except PowerModelError as exc:
            raise Refused(self.said(exc)) from None
        return (
            v["note"], v["options"], v["figure"], v["close"], v["table"], v["summary"],
            v["checks"], v["model"],
        )  # fmt: skip

    def pin(self, n_clicks: int | None, state: dict | None) -> tuple:
        """Pin the scenario shown for comparison with the ones that follow."""
        if not n_clicks or not state:
            raise PreventUpdate
        try:
            scenario = self.scenario(state)
        except PowerModelError:
            raise PreventUpdate from None
        return state, compare_options(_title(scenario, state)), "pinned"

    def export(self, state: dict | None, fmt: str, interval: str | None) -> tuple:
        """Resolutions on offer, the chosen one, the download link and what it holds."""
        if not state:
            raise PreventUpdate
        try:
            scenario = self.scenario(state)
        except PowerModelError:
            raise PreventUpdate from None
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

    # --- zoom -----------------------------------------------------------------------------------

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
        if not relayout or not state or not _plain(relayout):
            raise PreventUpdate
        view = ctx.triggered_id["view"] if ctx.triggered_id else "power"
        if view not in RESAMPLED:
            raise PreventUpdate
        figure = self.view(view, state, chosen_rules, compare_with, pinned, sensor)["figure"]
        return self._patch(figure, relayout)

    def _patch(self, figure: Any, relayout: dict) -> Any:
        """plotly-resampler's answer to a relayout. A cached figure is shared by every page
        showing its scenario, and the resampler keeps per-call state: one at a time. A range
        it cannot read (not a time, outside the years a timestamp holds) changes nothing."""
        with self._resampling:
            try:
                return figure.construct_update_data_patch(relayout)
            except (ValueError, TypeError, KeyError, OverflowError, IndexError):
                raise PreventUpdate from None

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

    # --- wiring -----------------------------------------------------------------------------------

    def register(self, app: dash.Dash) -> None:
        """Register every callback on ``app``."""
        self.app = app
        values, dates = (
            {"type": ids.CONTROL_TYPES[prop], "key": ALL} for prop in ("value", "date")
        )
        app.callback(
            Output(ids.BASE, "data"),
            Output(values, "value"),
            Output(dates, "date"),
            Output(ids.PRESET, "value"),
            Output(ids.TABS, "value"),
            Output(ids.MESSAGE, "children"),
            Output(ids.SET_BOXES, "data"),
            Input(ids.URL, "search"),
            Input(ids.PRESET, "value"),
            Input(ids.UPLOAD_SCENARIO, "contents"),
            State(ids.UPLOAD_SCENARIO, "filename"),
        )(lambda *a: self.open_base(ctx.triggered_id, *a))
        busy = [(Output(ids.STATUS, "children"), "simulating…", "")]
        app.callback(
            Output(ids.SCENARIO, "data"),
            Output(ids.SCENARIO_ERROR, "children"),
            # the boxes the run changed (the plant's setpoint ...): a callback's own outputs
            # do not fire it again
            Output(values, "value", allow_duplicate=True),
            Output(dates, "date", allow_duplicate=True),
            Output({"type": "control-error", "key": ALL}, "children"),
            Output({"type": "control-field", "key": ALL}, "className"),
            Output(ids.STALE_FIELDS, "children"),
            Output(ids.SET_BOXES, "data", allow_duplicate=True),
            Input(ids.BASE, "data"),
            Input(values, "value"),
            Input(dates, "date"),
            State(ids.SCENARIO, "data"),
            State(ids.SET_BOXES, "data"),
            running=busy,  # shown from the keystroke on, before the scenario reaches the server
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
            Output(ids.SCENARIO_NAME, "children"),
            Output(ids.SUMMARY, "children"),
            Output(ids.READY, "data"),
            Input(ids.SCENARIO, "data"),
            # while the summary waits, the page polls where its run stands in the queue
            running=[*busy, (Output(ids.POLL, "disabled"), False, True)],
        )(self.summarized)
        app.callback(
            Output(ids.STATUS, "children", allow_duplicate=True),
            Input(ids.POLL, "n_intervals"),
            State(ids.SCENARIO, "data"),
            prevent_initial_call=True,
        )(self.progress)
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

        # the views follow the state the summary has simulated, not each edit
        scenario, tab = Input(ids.READY, "data"), Input(ids.TABS, "value")
        rules_in = Input(ids.RULES, "value")
        # the views built ahead take the page's rules: the grid view is built for them
        rules_now = State(ids.RULES, "value")
        app.callback(
            Output(ids.resampled("power"), "figure"),
            scenario,
            tab,
            Input(ids.SENSOR, "value"),
            rules_now,
        )(_telling(self.power))
        app.callback(
            Output(ids.resampled("thermal"), "figure"),
            Output(ids.THERMAL_DIURNAL, "figure"),
            Output(ids.THERMAL_NUMBERS, "children"),
            scenario,
            tab,
            rules_now,
        )(_telling(self.thermal))
        app.callback(
            Output(ids.resampled("grid"), "figure"),
            Output(ids.GRID_RAMPS, "figure"),
            Output(ids.GRID_SPECTRUM, "figure"),
            Output(ids.COMPLIANCE, "rowData"),
            Output(ids.VIOLATIONS, "rowData"),
            Output(ids.VIOLATIONS_NOTE, "children"),
            scenario,
            tab,
            rules_in,
        )(_telling(self.grid))
        app.callback(
            Output(ids.MITIGATION_NOTE, "children"),
            Output(ids.resampled("mitigation"), "figure"),
            Output(ids.MITIGATION_COSTS, "rowData"),
            Output(ids.MITIGATION_RULES, "rowData"),
            scenario,
            tab,
            State(ids.RULES, "value"),
        )(_telling(self.mitigation))
        app.callback(
            Output(ids.resampled("compare"), "figure"),
            Output(ids.COMPARE_TABLE, "rowData"),
            scenario,
            tab,
            Input(ids.COMPARE_WITH, "value"),
            Input(ids.COMPARE, "data"),
        )(_telling(self.compare))
        app.callback(
            Output(ids.CAMPUS_NOTE, "children"),
            Output(ids.CAMPUS_PICK, "options"),
            Output(ids.CAMPUS_GRAPH, "figure"),
            Output(ids.CAMPUS_WORKLOADS, "rowData"),
            Output(ids.CAMPUS_FLEX, "rowData"),
            scenario,
            tab,
            Input(ids.CAMPUS_PICK, "value"),
        )(_telling(self.campus))
        app.callback(
            Output(ids.GRID_EVENTS_NOTE, "children"),
            Output(ids.GRID_EVENTS_PICK, "options"),
            Output(ids.GRID_EVENTS_GRAPH, "figure"),
            Output(ids.GRID_EVENTS_CLOSE, "figure"),
            Output(ids.GRID_EVENTS_TABLE, "rowData"),
            Output(ids.GRID_EVENTS_SUMMARY, "rowData"),
            Output(ids.GRID_EVENTS_CHECKS, "rowData"),
            Output(ids.GRID_EVENTS_MODEL, "rowData"),
            scenario,
            tab,
            Input(ids.GRID_EVENTS_PICK, "value"),
        )(_telling(self.grid_events))
        app.callback(
            Output(ids.COMPARE, "data"),
            Output(ids.COMPARE_WITH, "options"),
            Output(ids.COMPARE_WITH, "value"),
            Input(ids.PIN, "n_clicks"),
            State(ids.READY, "data"),
            prevent_initial_call=True,
        )(self.pin)
        app.callback(
            Output(ids.FIT, "data"),
            Output(ids.FIT_MESSAGE, "children"),
            Output(ids.FIT_GRAPH, "figure"),
            Output(ids.FIT_TABLE, "rowData"),
            Output(ids.FIT_NUMBERS, "rowData"),
            Input(ids.UPLOAD_TRACE, "contents"),
            Input(ids.TRACE_PERIOD, "value"),
            Input(ids.TRACE_GPUS, "value"),
            Input(ids.TRACE_POLL_GPUS, "value"),
            Input(ids.TRACE_GPU, "value"),
            State(ids.UPLOAD_TRACE, "filename"),
            prevent_initial_call=True,
        )(self.fit_trace)
        app.callback(
            Output(ids.SWEEP, "data"),
            Output(ids.SWEEP_METRIC, "options"),
            Output(ids.SWEEP_METRIC, "value"),
            Output(ids.SWEEP_KEY, "options"),
            Output(ids.SWEEP_KEY, "value"),
            Output(ids.SWEEP_MESSAGE, "children"),
            Output(ids.SWEEP_FAILED, "rowData"),
            Input(ids.UPLOAD_SWEEP, "contents"),
            State(ids.UPLOAD_SWEEP, "filename"),
            prevent_initial_call=True,
        )(self.open_sweep)
        app.callback(
            Output(ids.SWEEP_GRAPH, "figure"),
            Input(ids.SWEEP, "data"),
            Input(ids.SWEEP_METRIC, "value"),
            Input(ids.SWEEP_KEY, "value"),
            prevent_initial_call=True,
        )(_telling(self.sweep_view, ids.SWEEP_MESSAGE, clear=False))
        app.callback(
            Output(ids.FIT_GRAPH, "figure", allow_duplicate=True),
            Input(ids.FIT_GRAPH, "relayoutData"),
            State(ids.FIT, "data"),
            prevent_initial_call=True,
        )(self.fit_zoom)
        app.callback(
            Output(ids.FIT_TOML_DOWNLOAD, "data"),
            Input(ids.FIT_TOML_BUTTON, "n_clicks"),
            State(ids.FIT, "data"),
            prevent_initial_call=True,
        )(self.fit_toml)
        app.callback(
            Output(ids.BASE, "data", allow_duplicate=True),
            Output(values, "value", allow_duplicate=True),
            Output(dates, "date", allow_duplicate=True),
            Output(ids.PRESET, "value", allow_duplicate=True),
            Output(ids.TABS, "value", allow_duplicate=True),
            Output(ids.MESSAGE, "children", allow_duplicate=True),
            Input(ids.FIT_LOAD, "n_clicks"),
            State(ids.FIT, "data"),
            prevent_initial_call=True,
        )(self.load_fit)
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
            State(ids.READY, "data"),
            State(ids.RULES, "value"),
            State(ids.COMPARE_WITH, "value"),
            State(ids.COMPARE, "data"),
            State(ids.SENSOR, "value"),
            prevent_initial_call=True,
        )(_telling(self.zoom))
        app.callback(
            Output(ids.resampled("grid"), "figure", allow_duplicate=True),
            Input(ids.VIOLATIONS, "selectedRows"),
            State(ids.READY, "data"),
            State(ids.RULES, "value"),
            prevent_initial_call=True,
        )(_telling(self.show_violation))


class Refused(PreventUpdate):
    """A view the server did not build (busy, too large, past its deadline): the page keeps
    what it shows, and a callback registered through :func:`_telling` says why."""


def _telling(callback: Callable, where: str = ids.VIEW_MESSAGE, clear: bool = True) -> Callable:
    """``callback`` as the page calls it: a view it refuses leaves its outputs as they are and
    puts the reason in ``where`` (``dash.set_props``: no output of its own); one it builds
    clears ``where`` (with ``clear``)."""

    @functools.wraps(callback)
    def told(*args: Any) -> Any:
        try:
            shown = callback(*args)
        except Refused as refused:
            dash.set_props(where, {"children": str(refused)})
            return no_update
        if clear:
            dash.set_props(where, {"children": ""})
        return shown

    return told


def _upload_key(kind: str, contents: Any, *shown: Any) -> str:
    """The cache's key of an upload: a hash of its content and of everything shown of it (the
    name it came with, the boxes' values)."""
    payload = contents.partition(",")[2] if isinstance(contents, str) else ""
    digest = hashlib.sha256(payload.encode("utf-8", "backslashreplace"))
    digest.update(json.dumps(shown, default=str).encode())
    return f"{kind}:{digest.hexdigest()[:32]}"


def _events_work(entry: Entry) -> Work:
    """What the grid-events view of a run takes: the run's view, and
    :data:`~powermodel.webapp.cache.SECONDS_PER_DISTURBANCE` more for each disturbance (each
    is read against the run; one is simulated close up and fitted)."""
    run = entry.work
    count = entry.ds.sizes.get("disturbance", 0)
    return replace(
        run,
        seconds=run.seconds + count * SECONDS_PER_DISTURBANCE,
        size=f"{count:,} disturbances over {run.size}",
        fix="give fewer disturbances (disturbance.sags) or a shorter simulation.duration",
    )


def _failed_runs(results: Any, limit: int = MAX_FAILED_ROWS) -> tuple[list[dict[str, str]], int]:
    """The runs of a sweep that failed, the first ``limit`` of them: the point (its swept keys'
    values), seed and error; and how many failed. Dimensions are read by name, in whatever
    order the file keeps them."""
    dims = [*swept_dims(results), "seed"]
    error = results["error"].transpose(*dims)  # text (open_results checks it): no copy as str
    where = np.argwhere(error.values != "")
    keys = swept_keys(results)
    seeds = results["seed"].values
    rows = []
    for index in where[:limit]:
        place = results.isel(dict(zip(dims[:-1], index[:-1].tolist(), strict=True)))
        point = ", ".join(f"{k} = {place[k].item()}" for k in keys)
        why = str(error.values[tuple(index)])
        why = why if len(why) <= ERROR_CHARACTERS else why[: ERROR_CHARACTERS - 1] + "…"
        rows.append({"point": point, "seed": str(seeds[index[-1]]), "error": why})
    return rows, len(where)


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


def _unchanged(message: str) -> tuple:
    """set_base's answer that changes nothing but the message (one no_update per control)."""
    nothing = dict.fromkeys(BY_KEY, no_update)
    return (no_update, *page_values(nothing), no_update, no_update, message)


def fit_of(
    frame: pd.DataFrame,
    meta: dict,
    period: float | None,
    gpus: int | None,
    gpu: str | None = None,
) -> dict:
    """A trace read by :func:`~powermodel.iotools.read_telemetry`, bounded, fitted
    (:func:`powermodel.fit.fit`, on the fit's reference preset), its scenario written, and the
    fit predicted by a fresh run (of at most :data:`FIT_PREDICTED_STEPS` steps) and replayed,
    both through the trace's sensor, and compared (:func:`powermodel.fit_report.prove`): the
    fit, the prediction, the replay, the replay's comparison, the scenario's text, and the
    trace's name and repairs (``meta``'s ``source`` and ``warnings``)."""
    label = meta["source"]
    _bound_trace(frame, meta, period)
    result = fitting.fit(frame, meta, None, fitting.REFERENCE, period, gpus, gpu)
    deadline.check()
    text = fitting.fitted_toml(result, fitting.REFERENCE, label)
    predicted, replayed, numbers = fit_report.prove(
        result, loads_scenario(text, label=label), FIT_PREDICTED_STEPS
    )
    deadline.check()
    return {
        "result": result,
        "predicted": predicted,
        "replayed": replayed,
        "numbers": numbers,
        "toml": text,
        "label": label,
        "warnings": list(meta.get("warnings", ())),
    }


def fit_view(fit: dict) -> dict[str, Any]:
    """What the page shows of a fit (:func:`fit_of`): the figure, the fit's table and the
    comparison as rows, the scenario's text and the name to save it as, and the message."""
    result, replayed, numbers, label = fit["result"], fit["replayed"], fit["numbers"], fit["label"]
    predicted = fit["predicted"]
    guess = predicted.numbers
    sensor = f"{result.sensor.label} sensor"
    repaired = fit["warnings"]
    said = "; ".join(repaired[:FIT_SHOWN_WARNINGS]) + (
        f" and {len(repaired) - FIT_SHOWN_WARNINGS} more"
        if len(repaired) > FIT_SHOWN_WARNINGS
        else ""
    )
    message = (
        f"fitted {label}: {result.kind} trace, {result.n_gpus} GPUs, sampled every "
        f"{format_duration(result.period)} for "
        f"{format_duration(round(result.timeline.duration, 1))}, "
        f"through the {sensor}; the fit predicted by a fresh run gives energy "
        f"{100 * guess['energy_error']:+.2f} %, running level "
        f"{100 * guess['running_error']:+.2f} %, {guess['dips_predicted'].size} checkpoint dips "
        f"({guess['dips_measured'].size} measured); the {fit_report.REPLAYED} gives energy "
        f"{100 * numbers['energy_error']:+.2f} %, {numbers['dips_replayed'].size} dips "
        f"({numbers['dips_measured'].size} measured)" + (f". Repaired: {said}" if said else "")
    )
    return {
        "figure": figures.fit_figure(
            result.start, result.times, result.power, predicted.power, replayed, sensor
        ),
        "table": figures.records(fitting.summary(result), layout.TABLES[ids.FIT_TABLE]),
        "numbers": figures.records(
            fit_report.proof_table(result, predicted, replayed), layout.TABLES[ids.FIT_NUMBERS]
        ),
        "toml": fit["toml"],
        "name": f"{safe_name(f'fit-of-{Path(label).stem}')}.toml",
        "message": message,
    }


def _bound_trace(frame: pd.DataFrame, meta: dict, period: float | None) -> None:
    """Refuse a trace whose fit or replay would take more than the dashboard gives one."""
    label, step = meta["source"], float(period or meta.get("step") or 0.0)
    if not step > 0.0:
        raise UploadError(f"{label}: no sampling period found: give 'period [s]'")
    span = float((frame["time"].max() - frame["time"].min()) / np.timedelta64(1, "s"))
    channels = len(meta.get("channels", ()))
    cells = channels * (span / step + 1.0)
    fix = "upload a shorter span or fewer channels, or fit it with `powermodel fit`"
    if cells > FIT_CELLS:
        raise UploadError(
            f"{label}: {channels} channels over {span / 3600:.1f} h at "
            f"{format_duration(step)} make {cells:,.0f} samples, more than the dashboard fits "
            f"({FIT_CELLS:,}): {fix}"
        )
    fine = min(step / 2.0, 0.05)
    if span / fine > FIT_REPLAY_STEPS:
        raise UploadError(
            f"{label} spans {span / 3600:.1f} h: the dashboard replays a fit over at most "
            f"{FIT_REPLAY_STEPS * fine / 3600:.1f} h of a trace sampled every "
            f"{format_duration(step)}: {fix}"
        )


def _number(value: Any, name: str, whole: bool = False) -> float | int | None:
    """A number box's value from the browser: None when empty, else a finite number (whole
    where ``whole``); the reader and the fit check its range."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not finite(value):
        raise UploadError(f"{name}: {shorten(value)} is not a number")
    if whole:
        if value != int(value):
            raise UploadError(f"{name}: {value:g} is not a whole number")
        return int(value)
    return float(value)


def _catalogue_gpu(value: Any) -> str | None:
    """The GPU box's value from the browser: None when empty, else a name of the catalogue
    (a forged value of any other kind or name is refused before any work)."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value not in gpu_catalogue():
        raise UploadError(
            f"GPU: {shorten(value)} is not in the catalogue; choose one of "
            f"{', '.join(gpu_catalogue())} or leave it empty"
        )
    return value


def _page_words(message: str) -> str:
    """A reader's or the fit's message with the page's boxes where it names the command
    line's options."""
    for option, box in PAGE_OPTIONS:
        message = message.replace(option, box)
    return message


def _fit_base(state: Any) -> dict[str, str]:
    """The fitted scenario of the fit's store as a base (an uploaded scenario): its name made
    safe here, its text checked as any upload's by :meth:`Dashboard.base`."""
    text = state.get("toml") if isinstance(state, dict) else None
    name = state.get("upload") if isinstance(state, dict) else None
    if not isinstance(text, str) or not isinstance(name, str):
        raise ScenarioError("no fitted scenario: upload a trace first")
    return {"upload": f"{safe_name(name.removesuffix('.toml'), 'fit')}.toml", "toml": text}


def _by_key(controls: tuple, values: Any) -> dict[str, Any]:
    """The values the page sent for ``controls``, by key; a list of another length is no page
    of this dashboard."""
    if not isinstance(values, list) or len(values) != len(controls):
        raise ScenarioError("the page's controls are not this dashboard's: reload the page")
    return {c.key: v for c, v in zip(controls, values, strict=True)}


def _plain(value: Any, depth: int = 0) -> bool:
    """Whether a value from the browser is plain JSON data of bounded depth: dicts with text
    keys, lists, text, numbers, booleans, None (what the page's stores hold)."""
    if depth > 4:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v, depth + 1) for v in value)
    return value is None or isinstance(value, str | int | float | bool)


def _loaded(names: tuple[str, ...]) -> list[rules.Rule]:
    return rules.load_rules(list(names)) if names else []


def _title(scenario: Scenario, state: Any) -> str:
    """The name the header shows: the scenario's, or the uploaded file's."""
    base = state.get("base") if isinstance(state, dict) else None
    upload = base.get("upload") if isinstance(base, dict) else None
    return scenario.name or (upload if isinstance(upload, str) else "scenario")


def _only(tab: str, view: str) -> None:
    """Views are computed when their tab is open, not for every edit."""
    if tab != view:
        raise PreventUpdate


def unmitigated(scenario: Scenario, base: Scenario) -> Scenario:
    """The scenario without its mitigations: no ``[mitigation]``, and the levers that live
    elsewhere (checkpoint mode, start-up ramp) as the base has them."""
    raw = base.to_dict()  # durations written with their unit, as overrides take them
    keep = {key: value_at(raw, key) for key in MITIGATION_KEYS}
    return load_scenario(scenario, {"mitigation": {}, **keep})


def _thermal(entry: Entry, m: dict[str, Any]) -> dict[str, Any]:
    ds = entry.ds
    swing, trough = diurnal_swing(ds)
    rows = figures.thermal_numbers(m, swing, trough, ds.attrs["site_timezone"])
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
    shown = figures.violation_rows(table, VIOLATION_ROWS)
    events = len(figures.violation_events(table))
    link = downloads.href(key, downloads.VIOLATIONS, None, tuple(r.rule.name for r in results))
    grouped = (
        f"{len(table):,} violations in {events:,} events (those of one rule and cause within "
        f"{figures.EVENT_GAP:g} s of each other; filter by rule or cause in the column heads)"
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
        "figure": figures.grid_figure(entry.ds, results, swing),
        "ramps": figures.ramp_figure(entry.ds, swing=swing),
        "spectrum": figures.spectrum_figure(entry.ds, [r.rule for r in results]),
        "compliance": figures.compliance_rows(results)
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


def _campus(entry: Entry, picked: list[str]) -> dict[str, Any]:
    """What the campus view shows of a run (``picked``: the workloads stacked, none: all)."""
    ds = entry.ds
    if "workload" not in ds.dims:
        scenario = entry.scenario
        name = scenario.name or "this scenario"
        note = (
            f"{name} runs one job of {scenario.cluster.n_gpus:,} GPUs, not a campus of "
            "workloads: its power is in the power view. The presets with workloads are "
            f"{' and '.join(campus_presets())}; or upload a scenario with [campus] workloads"
        )
        return {
            "note": note,
            "options": [],
            "figure": figures.empty_figure(note),
            "workloads": [],
            "flex": [],
        }
    names = [str(n) for n in ds["workload"].values]
    flex = flexibility(ds)
    shown = f"{len(names)} workloads" + (
        f" in {ds.sizes['hall']} halls" if "hall" in ds.dims else ""
    )
    return {
        "note": shown + (f"; {len(flex)} flexibility events, shaded" if len(flex) else ""),
        "options": [{"label": n, "value": n} for n in names],
        "figure": figures.campus_figure(ds, picked),
        "workloads": _rows(_percent(workloads(ds), "training time kept")),
        "flex": _rows(flex),
    }


@functools.cache
def campus_presets() -> tuple[str, ...]:
    """The shipped presets with campus workloads (a preset named campus may run one job)."""
    return tuple(p for p in presets() if load_scenario(p).campus is not None)


def _grid_events(entry: Entry, index: int) -> dict[str, Any]:
    """What the grid-events view shows of a run (``index``: the disturbance close up)."""
    ds = entry.ds
    report = ride_through.report(ds) if "disturbance_time" in ds else pd.DataFrame()
    if report.empty:  # this scenario's own answer, never the last one's view
        hidden = {"visible": False}
        clear = "rgba(0,0,0,0)"  # no grey plot area where there is nothing to plot
        empty = go.Figure(
            layout={"xaxis": hidden, "yaxis": hidden, "height": 120, "plot_bgcolor": clear}
        )
        why = (
            "its sequence disturbs nothing (the frequency stays within the deadband, no sag)"
            if "disturbance_time" in ds
            else "it has none"
        )
        return {
            "note": f"this scenario has no grid disturbance: {why}; choose one in the sidebar "
            "(grid disturbance), open the preset nerc-2024-07-virginia-1500mw-campus, or give "
            "[disturbance] in a scenario file",
            "options": [],
            "figure": empty,
            "close": empty,
            "table": [],
            "summary": [],
            "checks": [],
            "model": [],
        }
    index = min(max(index, 0), len(report) - 1)
    response = ride_through.event_response(ds, index)
    try:
        fit = ride_through.site_model(ds, index)
        model, fitted = _rows(fit.comparison), (fit.perc1_fit.p, fit.perc1_fit.q)
    except PowerModelError as exc:  # a response the load model cannot take: say so
        model = [{"quantity": f"not fitted: {exc}", "rmse": "", "rmse_share_of_p0": ""}]
        fitted = None
    summary = ride_through.summary(ds)
    checks = ride_through.check(ds, ride_through.load_requirements())
    return {
        "note": f"{len(report)} disturbances; the site's chain, the requirements and the fitted "
        "model below (powermodel ride-through writes the model's .dyr and .aux)",
        "options": [
            {"label": f"{i}: {pd.Timestamp(t).isoformat()} ({k})", "value": str(i)}
            for i, (t, k) in enumerate(zip(report["time"], report["kind"], strict=True))
        ],
        "figure": figures.grid_events_figure(ds),
        "close": figures.disturbance_figure(response, fitted),
        "table": _rows(
            report.assign(
                time=figures.times_text(report["time"]),
                duration=report["duration [s]"].map(figures.duration_text),
                **{"back after": report["back after [s]"].map(figures.duration_text)},
            ).drop(columns=["duration [s]", "back after [s]"])
        ),
        "summary": [_quantity(k, v) for k, v in summary.items()],
        "checks": _rows(checks),
        "model": model,
    }


def _quantity(name: str, value: Any) -> dict[str, Any]:
    """A row of a quantity and its value, as text: a time in seconds in s, min or h (its unit
    out of its name), other numbers to four digits."""
    if name.endswith(" [s]") and isinstance(value, float | int):
        return {"quantity": name.removesuffix(" [s]"), "value": figures.duration_text(value)}
    # text throughout: the table takes a column's type from its first row (a count), and
    # showed "Invalid Number" for every value written to four digits below it
    return {"quantity": name, "value": f"{value:.4g}" if isinstance(value, float) else str(value)}


def _rows(table: pd.DataFrame) -> list[dict[str, Any]]:
    """A table's rows for a grid, numbers to four digits."""
    return [
        {k: (f"{v:.4g}" if isinstance(v, float) else v) for k, v in row.items()}
        for row in table.to_dict("records")
    ]


def _percent(table: pd.DataFrame, column: str) -> pd.DataFrame:
    """A table with a share column [1] written in % (one decimal), as the summary writes it."""
    return table.assign(**{column: [f"{100 * v:.1f} %" for v in table[column]]})


def _timestamp(text: str) -> float:
    return pd.Timestamp(text).timestamp()


def _dash_time(seconds: float) -> str:
    """A UTC instant as plotly's date axes write it."""
    return pd.Timestamp(seconds, unit="s").strftime("%Y-%m-%d %H:%M:%S.%f")
