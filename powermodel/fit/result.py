"""What a fit returns: each fitted :class:`Quantity` (resolved or why not, and the key it is
written to), the :class:`GpuChoice`, and the :class:`Fit` that holds them with the trace as the
sensor saw it; :func:`summary` shows it as a table. Built by
:func:`powermodel.fit.pipeline.fit_cells`, read by :mod:`powermodel.fit.scenario_toml`,
:mod:`powermodel.fit_report` and the dashboard.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from powermodel.fit.sensor import StepResponse
from powermodel.fit.timeline import Timeline
from powermodel.models import sensors


@dataclass(frozen=True)
class Quantity:
    """One fitted quantity: its value (None when unresolved), how it was found or why not, and
    the scenario key it is written to (None: reported only)."""

    name: str
    value: float | None
    unit: str
    resolved: bool
    how: str
    key: str | None = None


@dataclass(frozen=True)
class GpuChoice:
    """The GPU a fit writes: the catalogue entry ``name`` (``cluster.gpu``), with ``table`` the
    ``[gpu]`` keys built from the trace that win over the entry's (empty: the entry as it is),
    each ``(value, note)``; ``named``: given by the caller (``--gpu``)."""

    name: str
    table: dict[str, tuple[object, str]]
    named: bool
    how: str


@dataclass(frozen=True)
class Fit:
    """What a trace shows of a job, through its sensor."""

    source: str
    sensor: sensors.Sensor
    kind: str
    start: np.datetime64
    period: float  # sampling [s]
    n_gpus: int
    times: np.ndarray  # s from start
    power: np.ndarray  # W per GPU, the channels' mean (NaN where none reported)
    timeline: Timeline
    quantities: dict[str, Quantity]
    response: StepResponse
    warnings: tuple[str, ...]
    gpu: GpuChoice

    def value(self, name: str, default: float | None = None) -> float | None:
        q = self.quantities.get(name)
        return q.value if q is not None and q.resolved else default


def summary(result: Fit) -> pd.DataFrame:
    """The fit as a table: quantity | fitted | resolved? | how."""
    rows = []
    for qty in result.quantities.values():
        unit = "" if qty.unit == "1" else qty.unit  # a count or a ratio: the number alone
        shown = "" if qty.value is None else f"{qty.value:.4g} {unit}".strip()
        rows.append(
            {
                "quantity": qty.name,
                "fitted": shown,
                "resolved": "yes" if qty.resolved else "no",
                "key": qty.key or "",
                "how": qty.how,
            }
        )
    return pd.DataFrame(rows)
