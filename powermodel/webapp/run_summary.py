"""The run's summary: the page's simulation made, measured, and its views built ahead.

The summary waits for the page's simulation: when it has the run, it marks the page's state
*ready*, and the views follow the ready state (``run_views``, ``campus_views``), so a view finds
its run kept. Once the open view is shown, the others of :data:`PREFETCHED` are built on one
background thread, the newest state first; :meth:`RunSummary.warm` simulates the opening
scenario as the server starts.
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import Future
from concurrent.futures import TimeoutError as NotYet
from typing import Any
from urllib.parse import urlsplit

import dash
import flask
from dash import Input, Output, State, html, no_update
from dash.exceptions import PreventUpdate

from powermodel.analysis import metrics
from powermodel.errors import PowerModelError
from powermodel.scenario import (
    shorten,
)
from powermodel.webapp import ids, layout
from powermodel.webapp.cache import (
    Entry,
)
from powermodel.webapp.controls import (
    opens,
    page_values,
    shown_values,
)
from powermodel.webapp.layout import Opening, summary
from powermodel.webapp.plumbing import (
    SIMULATING,
    Board,
    header_name,
    keeping,
)

PREFETCHED = ("power", "thermal", "grid")  # views built ahead of a tab change (the mitigation
# view is not: it would simulate the run without its mitigations for every scenario seen)
PREFETCH_KEPT = 4  # scenarios waiting for their views to be built ahead: the latest
# s a first page waits for the opening run being simulated as the server starts, before it is
# served without it (its summary then follows as on any page): 7 days at 1 s take 0.9 s
FIRST_PAGE_WAIT = 3.0


class RunSummary(Board):
    """The summary line, where the page's run stands in the queue, the run of a ready state
    (:meth:`entry`), its metrics, the views built ahead of a tab change, and the first page
    (:meth:`first_page`)."""

    preset: str
    _opening: Future | None  # the first page with the opening run, once :meth:`warm` has it

    @functools.cached_property
    def _plain_page(self) -> html.Div:
        """The page with no run in it, made once (after :meth:`warm` has started)."""
        return layout.page(self.preset, self.upload_limit)

    def entry(self, state: Any) -> Entry:
        """The simulated scenario of a ready state (the summary has simulated it); a scenario
        that does not simulate leaves the views as they are (the summary line says why)."""
        if not state:
            raise PreventUpdate
        with keeping():
            return self.cache.get(self.scenario(state))

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
        return header_name(scenario, state), line, state

    def summarized(self, state: Any) -> tuple[str, str, Any]:
        """The summary callback: :meth:`summarize`, and the banner over the views that says
        they show the last run while this one does not simulate."""
        name, line, ready = self.summarize(state)
        stale = f"showing the last valid run — {line}" if ready is no_update else ""
        dash.set_props(ids.STALE_RUN, {"children": stale})
        return name, line, ready

    def progress(self, _: int | None, state: Any) -> str:
        """Where the page's simulation stands while its summary waits: queued, or running."""
        with keeping():
            where = self.cache.position(self.scenario(state))
        if where:
            return f"busy: this run is number {where} in the queue"
        return "simulating…" if where == 0 else ""

    def metrics(self, entry: Entry) -> dict[str, Any]:
        """:func:`powermodel.metrics` of a run, once per run (summary, thermal, compare)."""
        return self.cache.view(entry, "metrics", lambda e: metrics(e.ds), cheap=True)

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
        finds its summary's run ready, and builds its views ahead as any page does. Its result
        is the opening page's state. The first page is served with it (:meth:`first_page`)
        once it is measured, and asks for the power view at once: that one is built here next
        (the others would hold the two cores while the first page loads)."""
        done: Future = Future()
        opening: Future = Future()
        base = {"preset": self.preset}
        scenario = self.base(base)
        values = shown_values(scenario, self.weather)
        state, _ = self.assemble(base, *page_values(values))

        def run() -> None:
            try:
                line = summary(
                    self.metrics(self.cache.get(self.scenario(state))), scenario.simulation.duration
                )
                opened = Opening(values, base, state, header_name(scenario, state), line)
                opening.set_result(layout.page(self.preset, self.upload_limit, opened))
                self.view("power", state)  # which that page asks for first
            except Exception:  # the page's own summary (or view) meets it and says why
                if not opening.done():
                    opening.set_result(None)
            done.set_result(state)

        self._opening = opening
        threading.Thread(target=run, name="warm", daemon=True).start()
        return done

    def first_page(self) -> html.Div:
        """The page a browser loads (the app's layout, made for each load): once :meth:`warm`
        has the opening run (waiting for it up to :data:`FIRST_PAGE_WAIT`), with its boxes,
        summary and ready state in it, so that the summary shows as the page renders and the
        open view is asked for at once, not after three round trips (the base from the link,
        the state of the boxes, the summary); else, and for a link that asks for anything but
        the opening preset as it is (its query, which the page's request for its layout
        carries as its referrer: :func:`~powermodel.webapp.controls.opens`), the page that
        asks for them."""
        link = flask.request.referrer if flask.has_request_context() else None
        opening = self._opening
        if opening is None or link is None or not opens(urlsplit(link).query, self.preset):
            return self._plain_page
        try:
            return opening.result(timeout=FIRST_PAGE_WAIT) or self._plain_page
        except NotYet:
            return self._plain_page

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

    def _register_summary(self, app: dash.Dash) -> None:
        """The summary's callbacks: the run's headline and where it stands in the queue."""
        app.callback(
            Output(ids.SCENARIO_NAME, "children"),
            Output(ids.SUMMARY, "children"),
            Output(ids.READY, "data"),
            Input(ids.SCENARIO, "data"),
            # while the summary waits, the page polls where its run stands in the queue
            running=[SIMULATING, (Output(ids.POLL, "disabled"), False, True)],
            # the first page holds its summary (first_page), or has no state yet
            prevent_initial_call=True,
        )(self.summarized)
        app.callback(
            Output(ids.STATUS, "children", allow_duplicate=True),
            Input(ids.POLL, "n_intervals"),
            State(ids.SCENARIO, "data"),
            prevent_initial_call=True,
        )(self.progress)
