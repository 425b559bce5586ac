"""powermodel: power and thermal fluctuations of AI training datacenters.

Public API::

    from powermodel import load_scenario, simulate, metrics
    ds = simulate(load_scenario("llama3-405b-16k-h100", {"simulation.duration": "7d"}))
    metrics(ds)  # {"it_mean_mw": ..., "facility_peak_mw": ..., "grid_swing_5s_mw": ...}

Every power and energy metric is named by where it is metered: ``it_`` (the racks),
``cooling_`` (the plant), ``facility_`` (what the site draws) or ``grid_`` (the connection,
after any site battery).

Beyond these names, the public modules are those with an ``__all__``: ``powermodel.scenario``,
``powermodel.simulate``, ``powermodel.analysis`` (also the measurement chain's filters and the
job states), ``powermodel.rules``, ``powermodel.sizing``, ``powermodel.export``,
``powermodel.iotools`` (the weather readers), ``powermodel.reference`` (the scenario's keys),
``powermodel.ride_through`` (grid disturbances: the report, requirements, the dynamic model)
and ``powermodel.errors``. The dashboard uses nothing else (tests/test_layers.py).

Importing the package imports none of them (issue 30: ``powermodel --version`` must not pay the
numeric stack): each name of the face is imported from its module the first time it is read
(:pep:`562`), then kept. Three of those names are also the names of modules
(``powermodel.simulate``, ``powermodel.sensitivity``, the preset files' package
``powermodel.presets``), and importing a module sets it on its package under its name: so the
face is a module of the class :class:`_Face`, which keeps a face name for the face's function
whatever order the modules are imported in (``powermodel.simulate(...)`` calls the function, as
``from powermodel.simulate import simulate`` gives it; the modules stay in ``sys.modules``).
xarray's dask record is deferred (:func:`powermodel._xarray.defer_dask`) the moment xarray is
imported, whoever imports it, so before any Dataset is made.
"""

import importlib
import sys
from types import ModuleType
from typing import Any

from powermodel._version import __version__
from powermodel._xarray import defer_dask_on_import

# each name of the face and the module it is defined in
_FACE = {
    "PowerModelError": "powermodel.errors",
    "Scenario": "powermodel.scenario",
    "ScenarioError": "powermodel.errors",
    "load_scenario": "powermodel.scenario",
    "metrics": "powermodel.analysis",
    "presets": "powermodel.scenario",
    "sensitivity": "powermodel.sensitivity",
    "simulate": "powermodel.simulate",
}

__all__ = ["__version__", *_FACE]


def __getattr__(name: str) -> Any:
    """A name of the face, imported from its module on first use and kept; else a module of
    the package (``powermodel.rules`` after ``import powermodel``, as when the face imported
    them all)."""
    if name in _FACE:
        value = getattr(importlib.import_module(_FACE[name]), name)
        globals()[name] = value
        return value
    if not name.startswith("_"):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _Face(ModuleType):
    """The package's module: a submodule imported under a name of the face (the import system
    sets it on the package) leaves that name to the face's function or class."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _FACE and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Face
defer_dask_on_import()  # before any Dataset: xarray imports dask.array only for dask's own arrays
