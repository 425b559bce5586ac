"""Callbacks of the dashboard: controls -> scenario -> cached simulation -> the open view.

Each callback is a method of :class:`Dashboard`, a few lines on top of the pure functions in
``controls``, ``figures`` and ``powermodel`` itself, so that tests call them directly. The
browser holds the scenario (its base and the controls' changes), never arrays; the server keeps
simulations and the figures built from them in a bounded :class:`SimulationCache`.

The board is made of one class per part of the page, each in its module, registered in turn by
:meth:`Dashboard.register`: the sidebar (``sidebar``: page state -> scenario), the run's summary
(``run_summary``), the run's views (``run_views``), the campus and grid-events views
(``campus_views``), the fit of an uploaded trace (``fit_upload``) and an uploaded sweep
(``sweep_upload``); what they share is ``plumbing``'s.

The summary waits for the page's simulation: when it has the run, it marks the page's state
*ready*, and the views, the zoom, the export and the pin follow the ready state, so a view
finds its run kept. Three waits remain in a view, each in the same bounded queue (beyond it,
"busy"): the run without mitigations that the mitigation view compares against, the compare
view's other run, and a ready run evicted under memory pressure, simulated again. ``app.py``
serves with 16 threads beside a full queue, so runs waiting never take every thread; a view
waiting for a build slot gives up after :data:`~powermodel.webapp.cache.SLOT_WAIT`.
"""

from __future__ import annotations

import tempfile
import threading
from collections import OrderedDict, deque
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import dash

from powermodel.scenario import Scenario
from powermodel.webapp.cache import SimulationCache
from powermodel.webapp.campus_views import CampusViews
from powermodel.webapp.fit_upload import FitUpload
from powermodel.webapp.run_summary import RunSummary
from powermodel.webapp.run_views import RunViews
from powermodel.webapp.sidebar import Sidebar
from powermodel.webapp.sweep_upload import SweepUpload
from powermodel.webapp.uploads import WeatherUploads


class Dashboard(Sidebar, RunSummary, RunViews, CampusViews, FitUpload, SweepUpload):
    """The callbacks of one app, sharing its cache, defaults and working folder.

    Everything a callback receives comes from a browser and is checked here, on the server,
    whatever the page would have sent: a scenario is rebuilt from its base (a preset *name*, or
    uploaded TOML parsed as data) and the controls' changes (:meth:`scenario`), and every limit
    (:meth:`check_limits`) holds for every way in — the link, an upload, the stored state of
    the page, the comparison, the pinned scenario, a download.

    Its parts are the page's (:class:`~powermodel.webapp.sidebar.Sidebar`,
    :class:`~powermodel.webapp.run_summary.RunSummary`,
    :class:`~powermodel.webapp.run_views.RunViews`,
    :class:`~powermodel.webapp.campus_views.CampusViews`,
    :class:`~powermodel.webapp.fit_upload.FitUpload`,
    :class:`~powermodel.webapp.sweep_upload.SweepUpload`); this class holds their shared state.
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
        self._opening: Future | None = None  # with the opening run (warm, first_page)
        threading.Thread(target=self._prefetch_loop, name="prefetch", daemon=True).start()

    def register(self, app: dash.Dash) -> None:
        """Register every callback on ``app``."""
        self.app = app
        self._register_sidebar(app)
        self._register_summary(app)
        self._register_run_views(app)
        self._register_campus_views(app)
        self._register_fit(app)
        self._register_sweep(app)
        self._register_export_and_zoom(app)
