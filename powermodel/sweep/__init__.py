"""Sweeps and Monte Carlo: a base scenario over swept keys and seeds, serially or on dask.

A sweep is a base scenario, fixed overrides, swept keys (a cartesian grid or an explicit list of
points) and a number of seeds. Each point runs once per seed, each run is simulated, measured
(:func:`powermodel.analysis.metrics`) and, with rules, checked
(:func:`powermodel.rules.check_each`); the results are gathered into one Dataset with a dimension
per swept key (or ``point``) and one for the seed. A run that fails is recorded in ``error`` and
the sweep goes on.

Seed ``i`` of every point is the base's ``simulation.seed`` plus ``i`` (a point's own seed, from
a file it ``extends``, is not used, and ``simulation.seed`` is not swept): every point sees the
same failure draws (common random numbers), and a run's result does not depend on where it ran,
so a sweep gives the same Dataset serially and on any cluster.

:func:`run_all` is the one place runs are mapped, in turn or on dask.distributed (a
``LocalCluster`` it starts and closes, a scheduler's address, or a client); ``powermodel check
--seeds/--sensitivity --workers N`` map through it too. dask.distributed is imported only
there, so a call in turn never loads it.

The package, in the order a sweep runs: :mod:`~powermodel.sweep.points` (the grid or points,
checked), :mod:`~powermodel.sweep.sweep_file` (a sweep file read), :mod:`~powermodel.sweep.runs`
(:func:`sweep`, the driver), :mod:`~powermodel.sweep.placement` (where the runs go:
:func:`run_all`), :mod:`~powermodel.sweep.results` (the Dataset, its table and file) and
:mod:`~powermodel.sweep.saved` (a results file read back, the dashboard's bands).
"""

from __future__ import annotations

from powermodel.sweep.placement import (
    Failure,
    check_placement,
    check_scheduler,
    check_workers,
    cluster,
    run_all,
    threads,
)
from powermodel.sweep.points import MAX_RUNS
from powermodel.sweep.results import (
    check_output,
    dropped_series,
    not_measured_notes,
    summary,
    table,
    write,
)
from powermodel.sweep.runs import sweep
from powermodel.sweep.saved import (
    MAX_RESULT_CELLS,
    bands,
    measured,
    open_results,
    swept_dims,
    swept_keys,
)
from powermodel.sweep.sweep_file import SweepFile, read_sweep

__all__ = [
    "Failure",
    "MAX_RESULT_CELLS",
    "MAX_RUNS",
    "SweepFile",
    "bands",
    "check_output",
    "check_placement",
    "check_scheduler",
    "check_workers",
    "cluster",
    "dropped_series",
    "measured",
    "not_measured_notes",
    "open_results",
    "read_sweep",
    "run_all",
    "summary",
    "sweep",
    "swept_dims",
    "swept_keys",
    "table",
    "threads",
    "write",
]
