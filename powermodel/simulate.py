"""The driver: scenario in, ``xarray.Dataset`` out, through the engine's stages in order
(:mod:`powermodel.engine`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import xarray as xr

from powermodel.engine.campus import campus_profile
from powermodel.engine.connection import job_through_disturbances
from powermodel.engine.derive import rest_power
from powermodel.engine.flex import flex_variables
from powermodel.engine.preflight import memory_estimate, memory_fix, preflight
from powermodel.engine.run import assembled_profile, job_totals, prepare, render_whole
from powermodel.engine.sensor_views import SENSORS, add_views, sensor_chains, sensor_view
from powermodel.engine.series import held_arrays
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
    if scenario.campus is not None:  # its workloads through the same stages, side by side
        ds = campus_profile(scenario, len(chains))
        add_views(ds, chains, ds.attrs["dt"])
        return annotate(ds)
    derived, cells, rate = preflight(scenario, len(chains))  # derive; every check, first
    run = prepare(scenario, derived, cells, rate)  # timeline, waveform, overlays
    means, chunks = render_whole(run)  # the timeline onto the grid
    path = run.plant(*run.plant_means(means))  # weather -> plant -> inlet -> dies
    realised = run.realised(means)  # before the profile takes the means' place
    variables = assembled_profile(run, path, means, chunks)  # IT path, facility, connection
    if scenario.disturbance is not None:  # the connection follows the whole run
        variables = job_through_disturbances(scenario, variables)
    ds = run.dataset(path, variables, 0)
    ds.update(job_totals(run, path, realised, variables["throughput"]))
    if scenario.flexibility:
        ds.update(flex_variables(scenario, [run], [ds["it_power"].values]))
    add_views(ds, chains, run.dt, held=True)  # the profile's own step: none to read back
    return annotate(ds)
