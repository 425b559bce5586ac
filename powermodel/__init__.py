"""powermodel: power and thermal fluctuations of AI training datacenters.

Public API::

    from powermodel import load_scenario, simulate, metrics
    ds = simulate(load_scenario("llama3-405b-16k-h100", {"simulation.duration": "7d"}))
    metrics(ds)  # {"it_mean_mw": ..., "facility_peak_mw": ..., "grid_swing_5s_mw": ...}

Every power and energy metric is named by where it is metered: ``it_`` (the racks),
``cooling_`` (the plant), ``facility_`` (what the site draws) or ``grid_`` (the connection,
after any site battery).
"""

__version__ = "0.1.0"

from powermodel.analysis import metrics  # noqa: E402
from powermodel.errors import PowerModelError, ScenarioError  # noqa: E402
from powermodel.scenario import Scenario, load_scenario, presets  # noqa: E402
from powermodel.sensitivity import sensitivity  # noqa: E402
from powermodel.simulate import simulate  # noqa: E402

__all__ = [
    "PowerModelError",
    "Scenario",
    "ScenarioError",
    "load_scenario",
    "metrics",
    "presets",
    "sensitivity",
    "simulate",
]
