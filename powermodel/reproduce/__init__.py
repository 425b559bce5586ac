"""The model against every public anchor in the references: ``powermodel reproduce``.

Each anchor is one function that runs the model at run time (nothing here is a stored result)
and returns an :class:`Anchor`: the published value in its own form, the model's, the tolerance
and why, what kind of check it is (:data:`KINDS`: a *prediction* against a measurement no
coefficient was fitted to, a *calibration* a coefficient was fitted to, an *identity* that gives
the model the source's own figure and compares what the source computed from it, or a *formula*
the simulation is compared with, no measurement), what the model's coefficients behind it were
fitted on, and the plot behind it. Anchors the model misses are listed with the reason in
:data:`MISSES`. Timelines stand in for whole simulations wherever the anchor is about the job's
states (a 54-day timeline is a millisecond), and each simulation runs at the coarsest step its
anchor resolves.

The package: :mod:`~powermodel.reproduce.anchor` (what an anchor is), one module of anchors a
source or domain (:mod:`~powermodel.reproduce.llama3`, :mod:`~powermodel.reproduce.reliability`,
:mod:`~powermodel.reproduce.node`, :mod:`~powermodel.reproduce.gpu_levers`,
:mod:`~powermodel.reproduce.plant`), :mod:`~powermodel.reproduce.runner` (every anchor, run and
timed) and :mod:`~powermodel.reproduce.report` (the table and the HTML report).
"""

from __future__ import annotations

from powermodel.reproduce.anchor import KINDS, Anchor
from powermodel.reproduce.report import check_report_path, report_html, table
from powermodel.reproduce.runner import ANCHORS, MISSES, NOT_USED, run_anchors

__all__ = [
    "ANCHORS",
    "KINDS",
    "MISSES",
    "NOT_USED",
    "Anchor",
    "check_report_path",
    "report_html",
    "run_anchors",
    "table",
]
