"""A campus (docs/model/campus.md): several workloads, each rendered as a job or a fleet of its
own, on their halls' plants, summed at the connection."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import xarray as xr

from powermodel.engine import disturbances, facility
from powermodel.engine.connection import (
    CONNECTION,
    at_connection,
    campus_series,
    facility_draw,
    plant_means,
    storage_variables,
    through_disturbances,
)
from powermodel.engine.derive import plant_steps
from powermodel.engine.fleet import Fleet
from powermodel.engine.flex import events_targeting, flex_variables
from powermodel.engine.preflight import check_memory, errors_named_for, named_workloads, preflight
from powermodel.engine.run import JOB_ATTRS, Run, gpu_attrs, prepare, run_totals
from powermodel.engine.series import ORDER, datetimes, held_series, hourly_ratio
from powermodel.engine.timeline import JOB, event_variables, launch_delay
from powermodel.models import events, mitigation
from powermodel.scenario import Scenario
from powermodel.variables import annotate


def campus_profile(scenario: Scenario, sensors: int = 0) -> xr.Dataset:
    """:func:`simulate` of a campus: each workload rendered as a job of its own, its servers on
    its hall's plant; the halls' IT power, losses and plants summed at the connection."""
    check_memory(scenario, sensors)
    sim, dt, k = scenario.simulation, scenario.simulation.dt, plant_steps(scenario)
    n, parts = sim.n_steps, scenario.parts
    runs, means = _campus_runs(scenario)
    paths, plants = _campus_plants(scenario, runs, means)
    # the site's rack batteries, shared by the workloads' racks in proportion to their nameplate
    nameplate = np.array([facility.design_it_power(p) for p in parts])
    jobs = [
        campus_series(run, m, path, scale)
        for run, m, path, scale in zip(runs, means, paths, nameplate / nameplate.sum(), strict=True)
    ]
    halls = [
        _hall_power(hall, [parts[j] for j in members], [jobs[j] for j in members], plant, k)
        for (hall, members), plant in zip(scenario.hall_members(), plants, strict=True)
    ]
    site = {key: sum(h[key] for h in halls) for key in halls[0]}
    connection, bess, disturbed = _campus_connection(scenario, site, jobs)
    training = [run.trains for run in runs]
    # the job-level attrs and the plant state shown are the largest training job's, its
    # water and chillers the campus's
    largest = int(np.argmax([p.cluster.n_gpus * t for p, t in zip(parts, training, strict=True)]))
    shown = replace(
        paths[largest],
        water_use=sum(site_plant.out.water_use for site_plant, _, _ in plants),
        chiller_load=sum(site_plant.out.chiller_load for site_plant, _, _ in plants),
    )
    trains = [job for job, t in zip(jobs, training, strict=True) if t]
    variables = {
        "gpu_power": sum(job["gpu_power"] for job in jobs),
        "it_power": site["it_power"],
        "facility_loss": site["facility_loss"],
        "facility_power": site["facility_power"],
        **connection,
        **storage_variables([r for job in jobs for r in job["rack"]], bess),
        "pue": hourly_ratio(site["facility_power"], site["it_power"], dt),
        # tokens trained: an inference fleet's served tokens are its own workload's
        "throughput": sum(job["throughput"] for job in trains),
        # the campus's state: at each instant its training jobs' strongest (a failure of any
        # shows), so that the rules attribute a swing to the workload that made it
        "job_state": strongest_state([job["job_state"] for job in trains]),
        **runs[largest].held(shown, 0, n),
        "cooling_power": held_series(sum(c for _, c, _ in plants) / 1e6, k, 0, n),
        "misc_power": held_series(np.array([site["misc_power"]]), n, 0, n),
        **disturbed,
    }
    ds = runs[largest].dataset(shown, {v: variables[v] for v in ORDER if v in variables}, 0)
    ds = ds.assign_coords(workload=[w.name for w in scenario.campus.workloads])
    ds.update(_workload_variables(scenario, runs, jobs))
    ds["chiller_hours"] = run_totals(runs[largest], shown, 1.0, jobs[0]["throughput"])[
        "chiller_hours"
    ]
    if scenario.campus.halls:
        ds = _with_halls(scenario, ds, halls)
    if scenario.flexibility:
        ds.update(flex_variables(scenario, runs, [job["it_power"] for job in jobs]))
    ds.update(disturbances.variables(scenario))
    ds.attrs.update(
        scenario=scenario.to_json(),
        title=f"powermodel: {scenario.name or 'campus'}",
        registered_demand=facility.registered_demand(scenario),
        campus_aligned=int(scenario.campus.aligned),
        **gpu_attrs(scenario),
    )
    return annotate(ds)


def _campus_connection(
    scenario: Scenario, site: dict[str, np.ndarray], jobs: list[dict]
) -> tuple[dict[str, np.ndarray], list[mitigation.StorageResult], dict[str, np.ndarray]]:
    """What the grid sees of the campus's summed halls (``site``): :data:`CONNECTION`, each
    site battery's dispatch, and through grid disturbances what the backup carries (the
    supplies' reactive power each workload's, from its series in ``jobs``)."""
    dt = scenario.simulation.dt
    if scenario.disturbance is None:
        load, reactive = site["facility_power"], site["grid_reactive_power"]
        connection, bess = at_connection(scenario, load, reactive, dt)
        return connection, bess, {}
    supplies = [(part, job["it_power"]) for part, job in zip(scenario.parts, jobs, strict=True)]
    disturbed = through_disturbances(scenario, site, supplies)
    bess = disturbed.pop("batteries")
    connection = {key: disturbed.pop(key) for key in CONNECTION}
    return connection, bess, disturbed


def _with_halls(scenario: Scenario, ds: xr.Dataset, halls: list[dict]) -> xr.Dataset:
    """The campus's profile with its halls' IT, cooling and facility power on ``hall`` and the
    hall of each workload."""
    ds = ds.assign_coords(hall=[h.name for h in scenario.campus.halls])
    ds.update(
        {
            f"hall_{key}": (("hall", "time"), np.stack([h[key] for h in halls]))
            for key in ("it_power", "cooling_power", "facility_power")
        }
    )
    ds["workload_hall"] = (
        "workload",
        np.array([scenario.campus.hall_of(w) for w in scenario.campus.workloads], object),
    )
    return ds


def _campus_runs(scenario: Scenario) -> tuple[list[Run | Fleet], list[np.ndarray]]:
    """Each campus workload made ready and rendered over the whole run: a training job (its
    own draws and launch unless aligned, the flexibility events on it) or a fleet."""
    aligned, n = scenario.campus.aligned, scenario.simulation.n_steps
    runs = []
    for j, (name, part) in enumerate(named_workloads(scenario)):
        spec, job = scenario.campus.workloads[j], JOB if aligned else j
        with errors_named_for(name):
            flex = events_targeting(scenario, name)
            if spec.kind == "inference":
                runs.append(Fleet(part, spec.inference, job, flex))
                continue
            derived, cells, rate = preflight(part, memory=False)
            launch = (0.0, 0.0) if aligned else launch_delay(part, derived, j)
            runs.append(prepare(part, derived, cells, rate, job, launch, flex))
    return runs, [run.render(0, n) for run in runs]


def _campus_plants(
    scenario: Scenario, runs: list[Run | Fleet], means: list[np.ndarray]
) -> tuple[list[facility.PlantPath], list[tuple[facility.SitePlant, np.ndarray, float]]]:
    """Each hall's plant on its workloads' heat, sized for their nameplate; each workload's
    servers on its hall's plant (its plant path), the hall's plant power [W] on its path.
    Returns the paths, in the workloads' order, and each hall's plant, plant power [W] and
    nameplate IT power [W]."""
    sim, k, parts = scenario.simulation, plant_steps(scenario), scenario.parts
    heat_of = [plant_means(run, m) for run, m in zip(runs, means, strict=True)]
    middle = datetimes(sim.start, (np.arange(heat_of[0][1].size) + 0.5) * k * sim.dt)
    paths: list[facility.PlantPath] = [None] * len(runs)
    plants = []
    for hall, members in scenario.hall_members():
        heat = sum(heat_of[j][1] for j in members) * 1e6
        design = sum(facility.design_it_power(parts[j]) for j in members)
        site = facility.site_plant(hall, middle, heat, k * sim.dt, design)
        cooling = facility.campus_cooling(hall, site, [parts[j] for j in members])
        plants.append((site, cooling, design))
        for j in members:
            path = facility.job_path(parts[j], site, heat_of[j][0], k * sim.dt)
            paths[j] = runs[j].locked(replace(path, cooling_power=cooling))
    return paths, plants


def _hall_power(
    hall: Scenario,
    parts: list[Scenario],
    jobs: list[dict],
    plant: tuple[facility.SitePlant, np.ndarray, float],
    k: int,
) -> dict[str, np.ndarray]:
    """A hall's IT power, its chain's losses, its plant and misc loads, its facility power
    [MW] and its reactive power [Mvar] (its workloads' supplies), from its workloads' series
    (``jobs``) and its plant (plant power [W], nameplate [W])."""
    _, cooling, design = plant
    it = sum(job["it_power"] for job in jobs)
    power = facility_draw(hall, it, cooling, k, 0, design)
    other = power["cooling_power"] + power["misc_power"]
    supplies = [(part, job["it_power"]) for part, job in zip(parts, jobs, strict=True)]
    reactive = facility.reactive_power(hall, it, power["facility_loss"], other, supplies)
    return {"it_power": it, **power, "grid_reactive_power": reactive}


def _workload_variables(
    scenario: Scenario, runs: list[Run | Fleet], jobs: list[dict]
) -> dict[str, tuple]:
    """A campus's variables on ``workload`` and its events (each labelled by its workload),
    and its totals of what they trained."""
    parts, workloads = scenario.parts, scenario.campus.workloads
    training = np.array([run.trains for run in runs])
    gpus = np.array([p.cluster.n_gpus for p in parts])
    kept = np.array([run.effective_training_time for run in runs])  # a fleet: serving
    names = np.array([w.name for w in workloads], dtype=object)
    lines = [(part, run.line) for part, run in zip(parts, runs, strict=True) if run.line]
    events = [event_variables(part, line) for part, line in lines]
    return {
        **{
            f"workload_{key}": (("workload", "time"), np.stack([job[key] for job in jobs]))
            for key in ("gpu_power", "it_power", "throughput", "job_state", "clock_factor")
        },
        **{
            f"workload_{key}": ("workload", np.array([job["attrs"][key] for job in jobs]))
            for key in JOB_ATTRS
        },
        "workload_gpus": ("workload", gpus),
        "workload_kind": ("workload", np.array([w.kind for w in workloads], dtype=object)),
        "workload_goodput": ("workload", np.array([job["goodput"] for job in jobs])),
        "workload_effective_training_time": ("workload", kept),
        **{key: ("event", np.concatenate([e[key][1] for e in events])) for key in events[0]},
        "event_workload": (
            "event",
            np.repeat(names, [run.line.event_time.size if run.line else 0 for run in runs]),
        ),
        "goodput": ((), float(sum(j["goodput"] for j, t in zip(jobs, training, strict=True) if t))),
        # the campus's: its training jobs' training time kept, weighed by their GPUs
        "effective_training_time": (
            (),
            float(gpus[training] @ kept[training] / gpus[training].sum()),
        ),
    }


def strongest_state(states: list[np.ndarray]) -> np.ndarray:
    """At each step, the strongest of the ``states`` (:data:`events.STATE_RANK`: a restart,
    a failure, maintenance, a checkpoint, training)."""
    stacked = np.stack(states)
    pick = np.argmin(events.STATE_RANK[stacked], axis=0)
    return np.take_along_axis(stacked, pick[None], axis=0)[0]
