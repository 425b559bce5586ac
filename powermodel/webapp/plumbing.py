"""What every part of the dashboard's callbacks shares: the board, and the shapes of its answers.

The dashboard's callbacks (:class:`~powermodel.webapp.callbacks.Dashboard`) are one board made
of a class per part of the page: the sidebar (``sidebar``), the run's summary (``run_summary``),
the run's views (``run_views``), the campus and grid-events views (``campus_views``), the fit of
an uploaded trace (``fit_upload``) and an uploaded sweep's results (``sweep_upload``). Each is a
:class:`Board`, and reads the others' methods through ``self`` (a view reads the scenario of the
page's state through the sidebar's :meth:`~powermodel.webapp.sidebar.Sidebar.scenario`). Here:
what they all use: the page's words for an error, a view refused (:class:`Refused`, shown by
:func:`telling`), a state left as it is (:func:`keeping`), the store of an upload, a zoom.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import dash
from dash import ALL, Input, Output, no_update
from dash.exceptions import PreventUpdate

from powermodel.errors import PowerModelError
from powermodel.scenario import Scenario
from powermodel.webapp import ids
from powermodel.webapp.cache import Entry, SimulationCache
from powermodel.webapp.controls import BY_KEY, page_values
from powermodel.webapp.uploads import WeatherUploads

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
# every control's value and date (pattern-matching ids): the sidebar's boxes, as a base sets them
CONTROL_VALUES, CONTROL_DATES = (
    {"type": ids.CONTROL_TYPES[prop], "key": ALL} for prop in ("value", "date")
)
SIMULATING = (Output(ids.STATUS, "children"), "simulating…", "")  # while a run is made
# the views follow the state the summary has simulated, not each edit, and the open tab
READY_STATE, OPEN_TAB = Input(ids.READY, "data"), Input(ids.TABS, "value")


class Board:
    """The state a board's callbacks share (set by
    :class:`~powermodel.webapp.callbacks.Dashboard`), and what every part of it uses."""

    cache: SimulationCache
    uploads: WeatherUploads
    upload_limit: int
    app: dash.Dash | None
    _resampling: threading.Lock

    @property
    def weather(self) -> dict[str, str]:
        """The weather files uploaded here, token -> path."""
        return self.uploads.paths()

    def said(self, exc: Exception) -> str:
        """An error as the page shows it: no path of the server's in it."""
        return self.uploads.public(str(exc))

    def unchanged_because(self, exc: Exception, what: str, page: bool = False) -> str:
        """The page's message when an upload or a new base is refused: why (in the page's
        words for the command line's options, with ``page``), and that ``what`` stays."""
        why = page_words(self.said(exc)) if page else self.said(exc)
        return f"{why} — {what} is unchanged"

    @contextlib.contextmanager
    def refusing(self) -> Iterator[None]:
        """A view the server cannot build now (busy, too large, past its deadline) leaves the
        page as it is and says why: a :class:`~powermodel.errors.PowerModelError` inside
        becomes :class:`Refused`."""
        try:
            yield
        except PowerModelError as exc:
            raise Refused(self.said(exc)) from None

    def _uploaded(self, state: Any, kind: str) -> Entry | None:
        """The upload of ``kind`` (``sweep``, ``fit``) a page's store names, if it is kept; a
        key of another kind (a run's, forged into the store) names nothing."""
        key = state.get("key") if isinstance(state, dict) else None
        found = isinstance(key, str) and key.startswith(f"{kind}:")
        return self.cache.find(key) if found else None

    def _patch(self, figure: Any, relayout: dict) -> Any:
        """plotly-resampler's answer to a relayout. A cached figure is shared by every page
        showing its scenario, and the resampler keeps per-call state: one at a time. A range
        it cannot read (not a time, outside the years a timestamp holds) changes nothing."""
        with self._resampling:
            try:
                return figure.construct_update_data_patch(relayout)
            except (ValueError, TypeError, KeyError, OverflowError, IndexError):
                raise PreventUpdate from None


class Refused(PreventUpdate):
    """A view the server did not build (busy, too large, past its deadline): the page keeps
    what it shows, and a callback registered through :func:`telling` says why."""


def telling(callback: Callable, where: str = ids.VIEW_MESSAGE, clear: bool = True) -> Callable:
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


@contextlib.contextmanager
def keeping() -> Iterator[None]:
    """A state that does not build, or a run that does not simulate, leaves the outputs as
    they are (the summary line, or the sidebar, says why): a
    :class:`~powermodel.errors.PowerModelError` inside becomes :class:`PreventUpdate`."""
    try:
        yield
    except PowerModelError:
        raise PreventUpdate from None


def upload_key(kind: str, contents: Any, *shown: Any) -> str:
    """The cache's key of an upload: a hash of its content and of everything shown of it (the
    name it came with, the boxes' values)."""
    payload = contents.partition(",")[2] if isinstance(contents, str) else ""
    digest = hashlib.sha256(payload.encode("utf-8", "backslashreplace"))
    digest.update(json.dumps(shown, default=str).encode())
    return f"{kind}:{digest.hexdigest()[:32]}"


def base_set(
    base: Any, values: dict[str, Any], message: str, preset: Any = no_update, tab: Any = no_update
) -> tuple:
    """The set-base callback's answer (a new base: the link's, a preset, an upload, the fit's
    scenario): the base, every control's value and date, the preset, the tab, the message."""
    return (base, *page_values(values), preset, tab, message)


def base_unchanged(message: str) -> tuple:
    """set_base's answer that changes nothing but the message (one no_update per control)."""
    return base_set(no_update, dict.fromkeys(BY_KEY, no_update), message)


def page_words(message: str) -> str:
    """A reader's or the fit's message with the page's boxes where it names the command
    line's options."""
    for option, box in PAGE_OPTIONS:
        message = message.replace(option, box)
    return message


def is_plain(value: Any, depth: int = 0) -> bool:
    """Whether a value from the browser is plain JSON data of bounded depth: dicts with text
    keys, lists, text, numbers, booleans, None (what the page's stores hold)."""
    if depth > 4:
        return False
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return all(is_plain(v, depth + 1) for v in value)
    return value is None or isinstance(value, str | int | float | bool)


def header_name(scenario: Scenario, state: Any) -> str:
    """The name the header shows: the scenario's, or the uploaded file's."""
    base = state.get("base") if isinstance(state, dict) else None
    upload = base.get("upload") if isinstance(base, dict) else None
    return scenario.name or (upload if isinstance(upload, str) else "scenario")


def parts_of(shown: dict[str, Any], parts: tuple[str, ...]) -> tuple:
    """A view as its callback's outputs: its ``parts``, in the outputs' order."""
    return tuple(shown[part] for part in parts)


def only_when_open(tab: str, view: str) -> None:
    """Views are computed when their tab is open, not for every edit."""
    if tab != view:
        raise PreventUpdate
