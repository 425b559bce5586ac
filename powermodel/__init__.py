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
"""

from powermodel._version import __version__
from powermodel._xarray import defer_dask
from powermodel.analysis import metrics
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.scenario import Scenario, load_scenario, presets
from powermodel.sensitivity import sensitivity
from powermodel.simulate import simulate

__all__ = [
    "PowerModelError",
    "__version__",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "metrics",
    "presets",
    "sensitivity",
    "simulate",
]

defer_dask()  # before any Dataset: xarray imports dask.array only for dask's own arrays
