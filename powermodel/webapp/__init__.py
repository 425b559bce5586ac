"""The dashboard: ``create_app()`` builds it, ``python app.py`` serves it."""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import dash

from powermodel.scenario import load_scenario
from powermodel.webapp import downloads, layout
from powermodel.webapp.cache import DEFAULT_BYTES, SimulationCache
from powermodel.webapp.callbacks import Dashboard

REFERENCE_SCENARIO = "llama3-405b-16k-h100"
# The dashboard opens the first week of a preset: the period the responsiveness targets are set
# for (issue 5); the period control lengthens it to the whole run.
APP_OVERRIDES = {"simulation.duration": "7d"}
UPLOAD_LIMIT = 5_000_000  # bytes: a typical-year EPW is 1.6 MB, a scenario a few kB


def create_app(
    scenario_name: str = REFERENCE_SCENARIO,
    overrides: Mapping[str, Any] | Iterable[str] | None = None,
    cache_bytes: int = DEFAULT_BYTES,
    upload_limit: int = UPLOAD_LIMIT,
) -> dash.Dash:
    """The dashboard, opening on a preset.

    Parameters
    ----------
    scenario_name
        The preset shown first.
    overrides
        Dotted overrides every preset opens with; by default :data:`APP_OVERRIDES`.
    cache_bytes
        Bound of the simulations (and their figures) kept in memory. [B]
    upload_limit
        Largest scenario or weather file accepted. [B]
    """
    defaults = dict(APP_OVERRIDES if overrides is None else _as_mapping(overrides))
    load_scenario(scenario_name, defaults)  # a bad preset or override fails here, not in a page
    cache = SimulationCache(cache_bytes)
    uploads = Path(tempfile.mkdtemp(prefix="powermodel-uploads-")).resolve()
    app = dash.Dash(
        __name__,
        title="powermodel",
        assets_folder=str(Path(__file__).parent / "assets"),
        suppress_callback_exceptions=False,
    )
    # A request carries an upload base64-encoded (4/3 of it) with the rest of the callback.
    app.server.config["MAX_CONTENT_LENGTH"] = 2 * upload_limit + 1_000_000
    app.layout = layout.page(scenario_name, upload_limit)
    Dashboard(cache, scenario_name, defaults, uploads, upload_limit).register(app)
    downloads.register(app.server, cache)
    app.cache = cache
    return app


def _as_mapping(overrides: Mapping[str, Any] | Iterable[str]) -> dict[str, Any]:
    if isinstance(overrides, Mapping):
        return dict(overrides)
    return dict(item.split("=", 1) for item in overrides)
