"""The run's summary: the page's simulation made, measured, and its views built ahead.

The summary waits for the page's simulation: when it has the run, it marks the page's state
*ready*, and the views follow the ready state (``run_views``, ``campus_views``), so a view finds
its run kept. Once the open view is shown, the others of :data:`PREFETCHED` are built on one
background thread, the newest state first; :meth:`RunSummary.warm` simulates the opening
scenario as the server starts.
"""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import dash
from dash import Input, Output, State, no_update
from dash.exceptions import PreventUpdate

from powermodel.analysis import metrics
from powermodel.errors import PowerModelError
from powermodel.scenario import (
    shorten,
)
from powermodel.webapp import ids
from powermodel.webapp.cache import (
    Entry,
)
from powermodel.webapp.controls import (
    page_values,
    shown_values,
)
from powermodel.webapp.layout import summary
from powermodel.webapp.plumbing import (
    SIMULATING,
    Board,
    header_name,
    keeping,
)

PREFETCHED = ("power", "thermal", "grid")  # views built ahead of a tab change (the mitigation
# view is not: it would simulate the run without its mitigations for every scenario seen)
PREFETCH_KEPT = 4  # scenarios waiting for their views to be built ahead: the latest


class RunSummary(Board):
    """The summary line, where the page's run stands in the queue, the run of a ready state
    (:meth:`entry`), its metrics, and the views built ahead of a tab change."""

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

    def _register_summary(self, app: dash.Dash) -> None:
        """The summary's callbacks: the run's headline and where it stands in the queue."""
        app.callback(
            Output(ids.SCENARIO_NAME, "children"),
            Output(ids.SUMMARY, "children"),
            Output(ids.READY, "data"),
            Input(ids.SCENARIO, "data"),
            # while the summary waits, the page polls where its run stands in the queue
            running=[SIMULATING, (Output(ids.POLL, "disabled"), False, True)],
        )(self.summarized)
        app.callback(
            Output(ids.STATUS, "children", allow_duplicate=True),
            Input(ids.POLL, "n_intervals"),
            State(ids.SCENARIO, "data"),
            prevent_initial_call=True,
        )(self.progress)
