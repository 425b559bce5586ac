"""The driver: scenario in, ``xarray.Dataset`` out, through the engine's stages in order
(:mod:`powermodel.engine`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import xarray as xr

from powermodel.engine import disturbances
from powermodel.engine.campus import campus_profile
from powermodel.engine.connection import storage_variables, through_disturbances
from powermodel.engine.derive import rest_power
from powermodel.engine.flex import flex_variables
from powermodel.engine.preflight import CHUNK_STEPS, memory_estimate, memory_fix, preflight
from powermodel.engine.run import assembled_profile, prepare, run_totals
from powermodel.engine.sensor_views import SENSORS, sensor_chains, sensor_reading, sensor_view
from powermodel.engine.series import ORDER, held_arrays
from powermodel.engine.timeline import event_variables
from powermodel.models import sensors
from powermodel.scenario import Scenario, load_scenario
from powermodel.variables import annotate

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "held_arrays",
    "memory_estimate",
    "memory_fix",
    "rest_power",
    "SENSORS",
    "sensor_view",
    "simulate",
]


def simulate(
    scenario: Scenario | str | Path, sensors: Sequence[str | sensors.Sensor] = ()
) -> xr.Dataset:
    """Simulate a scenario (or a preset name or TOML path, loaded as given) on its time grid.

    Parameters
    ----------
    scenario
        The scenario, a preset name or a TOML path.
    sensors
        Sensor chains (keys of :data:`SENSORS` or :class:`~powermodel.models.sensors.Sensor`)
        whose view of their default variable to add, as :func:`sensor_view` gives it; a chain
        the scenario's step cannot resolve is refused before the run.

    Returns
    -------
    xarray.Dataset
        On ``time`` (interval means, each labelled by its start, timezone-naive UTC): the
        electrical path ``gpu_power``, ``it_power``, ``facility_loss``, ``cooling_power``,
        ``misc_power``, ``facility_power``, ``pue`` (hourly), ``throughput``, ``job_state``; the
        plant path, held over each plant step: ``temp_air``, ``temp_wetbulb``, ``supply_temp``,
        ``gpu_temp``, ``clock_factor``, ``water_use`` (these, ``cooling_power``, the hourly
        ``pue`` and the constant ``misc_power`` are held at their own resolution and expanded
        when read, e.g. by ``.values``; ``ds.load()`` expands them all); the connection:
        ``grid_power``, ``grid_reactive_power``, ``grid_voltage`` (and ``bess_power``,
        ``bess_soc``, ``rack_storage_power`` with batteries). The interruptions on ``event``;
        ``goodput`` and ``effective_training_time``; the scenario as JSON in
        ``attrs["scenario"]``. With ``sensors``, each chain's view of its variable,
        ``<variable>_<key>`` (held lazily too, as its readings where they change, for a chain
        that reports every other step or less often).
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    chains = sensor_chains(sensors, scenario.simulation.dt)
    if scenario.campus is not None:
        ds = campus_profile(scenario, len(chains))
        for chain in chains:
            ds[f"{chain.variable}_{chain.key}"] = sensor_reading(
                ds, chain, chain.variable, ds.attrs["dt"]
            )
        return annotate(ds)
    derived, cells, rate = preflight(scenario, len(chains))
    run = prepare(scenario, derived, cells, rate)
    n = scenario.simulation.n_steps
    chunks = run.chunks(0, n, CHUNK_STEPS)
    means = np.empty((run.tables.shape[0], n))
    for lo, hi in chunks:  # bounded temporaries: only the profile takes memory per step
        means[:, lo:hi] = run.render(lo, hi)
    path = run.plant(*run.plant_means(means))
    realised = run.realised(means)
    variables = assembled_profile(run, path, means, chunks)
    if scenario.disturbance is not None:
        changed = through_disturbances(scenario, variables, [(scenario, variables["it_power"])])
        batteries = changed.pop("batteries")
        merged = {**variables, **changed, **storage_variables([], batteries)}
        variables = {name: merged[name] for name in ORDER if name in merged}
    ds = run.dataset(path, variables, 0)
    ds.update(
        {
            **run_totals(run, path, realised, variables["throughput"]),
            **event_variables(scenario, run.line),
            "effective_training_time": ((), run.effective_training_time),
            **disturbances.variables(scenario),
        }
    )
    if scenario.flexibility:
        ds.update(flex_variables(scenario, [run], [ds["it_power"].values]))
    for chain in chains:  # the profile's own step: no need to read it back from its times
        ds[f"{chain.variable}_{chain.key}"] = sensor_reading(
            ds, chain, chain.variable, run.dt, True
        )
    return annotate(ds)
