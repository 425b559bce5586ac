"""The sweep view: an uploaded sweep's results, read, checked and drawn.

The results of ``powermodel sweep`` are read and checked
(:func:`~powermodel.webapp.uploads.read_sweep_results`) within the cells a results file may
hold, kept in the cache, and a chosen metric is drawn against a chosen key
(:func:`powermodel.sweep.bands`); the runs that failed are listed.
"""

from __future__ import annotations

from typing import Any

import dash
import numpy as np
import plotly.graph_objects as go
from dash import Input, Output, State, no_update
from dash.exceptions import PreventUpdate

from powermodel.errors import PowerModelError

# the results files' opener (and h5py) loaded with the server, not by its first upload: h5py's
# import runs `uname -p`, a process (and a walk of PATH) inside a request
from powermodel.iotools.netcdf import VARIABLE_ITEMS
from powermodel.sweep import MAX_RESULT_CELLS, bands, measured, swept_dims, swept_keys
from powermodel.webapp import ids, upload_figures
from powermodel.webapp.cache import (
    BANDS_BYTES_PER_RUN,
    RESULTS_BYTES_PER_CELL,
    SECONDS_PER_RUN,
    SECONDS_PER_UPLOAD_BYTE,
    Work,
    deadline_of,
)
from powermodel.webapp.plumbing import (
    Board,
    telling,
    upload_key,
)
from powermodel.webapp.uploads import (
    UploadError,
    read_sweep_results,
    safe_name,
)

# the sweep view opens on the first of these its results hold: the swing the grid sees first
SWEEP_METRICS = ("grid_swing_5s_mw", "grid_peak_mw", "effective_training_time")
MAX_FAILED_ROWS = 1000  # failed runs listed (a sweep holds up to 10,000 runs)
ERROR_CHARACTERS = 300  # of each failed run's error, as the table shows it
UNIT_CHARACTERS = 40  # of a metric's units in an uploaded results file, as the axis shows them


class SweepUpload(Board):
    """An uploaded sweep's results, the chart of a metric against a key, the failed runs."""

    def open_sweep(self, contents: Any, filename: Any) -> tuple:
        """Read an uploaded sweep's results: the view's store, metric and key choices, message
        and the runs that failed. Results refused say why, and what was shown stays."""
        if not contents:
            raise PreventUpdate
        try:
            key = upload_key("sweep", contents, filename)
            results = self.cache.upload(
                key, lambda: self._sweep_results(contents, filename), self._reading_results()
            ).ds
            label = safe_name(filename, "results.nc")
            metrics_drawn, keys = measured(results), swept_keys(results)
        except PowerModelError as exc:
            why = self.unchanged_because(exc, "the sweep shown", page=True)
            return no_update, *(no_update,) * 4, why, no_update
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
        key_unit = upload_figures.schema_unit(key)  # the schema's, not the file's: a key is a name
        with self.refusing():
            return self.cache.view(
                entry,
                f"sweep:{metric}:{key}",
                lambda e: upload_figures.sweep_figure(
                    bands(e.ds, metric, key), metric, key, unit, key_unit
                ),
            )

    def _register_sweep(self, app: dash.Dash) -> None:
        """The sweep view's callbacks: results uploaded, a metric drawn against a key."""
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
        )(telling(self.sweep_view, ids.SWEEP_MESSAGE, clear=False))


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
