"""The compare view's measured trace: an upload read, bounded, fitted, predicted and replayed.

A trace is read (:func:`~powermodel.webapp.uploads.read_trace`), bounded before its fit
(:data:`FIT_CELLS`, :data:`FIT_REPLAY_STEPS`), fitted (:func:`powermodel.fit.fit`), predicted by
a fresh run and replayed through the trace's sensor (:func:`powermodel.fit_report.prove`), one
fit at a time, kept in the cache by its bytes and the boxes' values. The fitted scenario can be
saved, or loaded as the sidebar's base.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import dash
import numpy as np
import pandas as pd
from dash import Input, Output, State, dcc, no_update
from dash.exceptions import PreventUpdate

from powermodel import deadline, fit_report
from powermodel import fit as fitting
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.scenario import (
    format_duration,
    gpu_catalogue,
    load_scenario,
    loads_scenario,
    shorten,
)
from powermodel.webapp import ids, layout, tables, upload_figures
from powermodel.webapp.cache import (
    FIT_BYTES,
    PREDICTION_BYTES_PER_STEP,
    SECONDS_PER_UPLOAD_BYTE,
    SLOT_WAIT,
    Work,
    deadline_of,
)
from powermodel.webapp.controls import (
    finite,
    shown_values,
)
from powermodel.webapp.plumbing import (
    CONTROL_DATES,
    CONTROL_VALUES,
    Board,
    base_set,
    base_unchanged,
    is_plain,
    keeping,
    upload_key,
)
from powermodel.webapp.uploads import (
    UploadError,
    read_trace,
    safe_name,
    upload_size,
)

# An uploaded trace, bounded before its fit: the channel × sample cells of its grid (32 MB of
# float64; the command line's fit takes 50 M), and the fine steps its replay renders at
# min(sampling / 2, 50 ms), the step the fit's replay takes for NVML's and instantaneous chains
FIT_CELLS = 4_000_000
FIT_REPLAY_STEPS = 2_000_000  # a day at 50 ms, 16 MB a series
# the fit's fresh run (its prediction) on a coarser grid, down to the step the sensor needs:
# 27.8 h (the replay's bound) at 0.2 s, 256 MB (PREDICTION_BYTES_PER_STEP)
FIT_PREDICTED_STEPS = 500_000
FIT_SHOWN_WARNINGS = 3  # repairs of a trace named in its message (the rest counted)


class FitUpload(Board):
    """The fit of an uploaded trace, its graph's zoom, and the fitted scenario saved or loaded."""

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
            why = self.unchanged_because(exc, "the fit shown", page=True)
            return no_update, why, *(no_update,) * 3
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
        key = upload_key("fit", contents, filename, period, gpus, poll_gpus, gpu)
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
        if not relayout or entry is None or "fit" not in entry.views or not is_plain(relayout):
            raise PreventUpdate
        return self._patch(entry.views["fit"]["figure"], relayout)

    def fit_toml(self, n_clicks: int | None, state: Any) -> dict:
        """The fitted scenario as it was written (with its ``[C]`` tags), once it loads as an
        uploaded scenario does."""
        if not n_clicks:
            raise PreventUpdate
        with keeping():
            base = _fit_base(state)
            self.base(base)
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
            return base_unchanged(self.unchanged_because(exc, "the scenario shown"))
        values = shown_values(opened, self.weather)
        message = (
            f"loaded {base['upload']}, the scenario fitted to the trace, over "
            f"{format_duration(opened.simulation.duration)}"
        )
        return base_set(base, values, message)

    def _register_fit(self, app: dash.Dash) -> None:
        """The fit's callbacks: a trace uploaded and fitted, its zoom, its scenario saved or
        loaded."""
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
            Output(CONTROL_VALUES, "value", allow_duplicate=True),
            Output(CONTROL_DATES, "date", allow_duplicate=True),
            Output(ids.PRESET, "value", allow_duplicate=True),
            Output(ids.TABS, "value", allow_duplicate=True),
            Output(ids.MESSAGE, "children", allow_duplicate=True),
            Input(ids.FIT_LOAD, "n_clicks"),
            State(ids.FIT, "data"),
            prevent_initial_call=True,
        )(self.load_fit)


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
        "figure": upload_figures.fit_figure(
            result.start, result.times, result.power, predicted.power, replayed, sensor
        ),
        "table": tables.records(fitting.summary(result), layout.TABLES[ids.FIT_TABLE]),
        "numbers": tables.records(
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


def _fit_base(state: Any) -> dict[str, str]:
    """The fitted scenario of the fit's store as a base (an uploaded scenario): its name made
    safe here, its text checked as any upload's by :meth:`Dashboard.base`."""
    text = state.get("toml") if isinstance(state, dict) else None
    name = state.get("upload") if isinstance(state, dict) else None
    if not isinstance(text, str) or not isinstance(name, str):
        raise ScenarioError("no fitted scenario: upload a trace first")
    return {"upload": f"{safe_name(name.removesuffix('.toml'), 'fit')}.toml", "toml": text}
