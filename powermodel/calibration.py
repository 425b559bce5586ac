"""Calibrated coefficients: how each is recomputed from the figure it was fitted to."""

from __future__ import annotations

import numpy as np

from powermodel.models import events
from powermodel.scenario import Scenario
from powermodel.simulate import derive, recoveries, startup


def exposure_gpu_hours(scenario: Scenario) -> float:
    """Running GPU-hours over which the scenario's interruption counts were observed.

    The published counts (e.g. Llama 3 Table 5: 419 unexpected and 47 planned in 54 days) were seen
    in wall-clock time that includes every recovery. Rates per *running* GPU-hour need the up time:
    ``up = duration − start-up − Σ count·down time`` (renewal balance), with the scenario's own
    recovery times. The result goes into ``reliability.exposure_gpu_hours``.
    """
    derived = derive(scenario)
    rel = scenario.reliability
    counts = np.array([c.count for c in rel.causes] + [rel.planned_count])
    downtimes = np.array([r.duration for r in recoveries(scenario, derived)])
    start = sum(d for _, d in startup(scenario, derived))
    up = events.expected_up_time(scenario.simulation.duration, start, counts, downtimes)
    return scenario.cluster.n_gpus * up / 3600.0
