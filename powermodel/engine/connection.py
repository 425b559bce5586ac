"""The connection (docs/model/electrical.md): the IT path (what the GPUs and racks finally draw on
the plant path), the facility around it (losses, cooling, misc loads), the batteries, and what the
grid sees: power, reactive power and voltage, also through grid disturbances."""

from __future__ import annotations

from functools import partial
from typing import Protocol

import numpy as np

from powermodel.engine import disturbances, facility
from powermodel.engine.derive import cluster_mw, per_gpu_power
from powermodel.engine.series import (
    DISTURBANCE_VARIABLES,
    ORDER,
    block_mean,
    held_array,
    on_every_step,
)
from powermodel.models import grid, mitigation
from powermodel.scenario import Scenario


class Workload(Protocol):
    """What the IT path needs of a workload rendered on the grid: a training job's
    :class:`~powermodel.engine.run.Run` or an inference fleet's
    :class:`~powermodel.engine.fleet.Fleet`."""

    @property
    def scenario(self) -> Scenario: ...

    @property
    def k(self) -> int:
        """Electrical steps a plant step."""

    @property
    def slope(self) -> float:
        """d(AC)/d(DC) of a server's supplies at the workload's running load [1]."""

    def board_power(
        self, means: np.ndarray, per_gpu: np.ndarray, path: facility.PlantPath, lo: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """What the GPUs finally draw [MW] over the steps from ``lo`` of the rendered ``means``
        (board power per GPU ``per_gpu`` [W]) on the plant path, and each GPU's change over
        its rendered board power [W, DC]."""

    def own_series(
        self, means: np.ndarray, path: facility.PlantPath, on: np.ndarray | None
    ) -> dict:
        """Its throughput, states, clock, goodput and attrs as a campus workload (``on``: where
        a disturbance left its servers powered, None if it took none)."""


def it_path(
    workload: Workload, means: np.ndarray, path: facility.PlantPath, lo: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """What the GPUs and the racks finally draw: ``gpu_power`` and ``it_power`` [MW], and where
    a disturbance left the servers powered (None if it took none).

    From the rendered means (:meth:`~powermodel.engine.run.Run.render`'s: board power [MW] and
    IT power [MW] on the electrical grid, the steps from ``lo``) and the plant path: what each
    GPU finally draws (the workload's :meth:`~Workload.board_power`: hot dies leak more, ramp
    limits act), and server fans speed up whenever the nodes are on. Each node's DC change is
    small: it passes through the server supplies at their running slope.
    """
    scenario, n = workload.scenario, means.shape[1]
    cl = scenario.cluster
    per_gpu = per_gpu_power(means[0], cl.n_gpus)
    gpu_power, change = workload.board_power(means, per_gpu, path, lo)  # MW; W per GPU, DC
    fans = held_array(path.fan_extra, workload.k, lo, n)  # W per node, DC
    node = (cl.gpus_per_node * change + fans) * workload.slope  # W per node, AC
    it_power = means[1] + cluster_mw(node, cl.n_nodes)
    on = disturbances.powered(scenario, lo, n, scenario.simulation.dt)
    if on is not None:  # a disturbance took the servers' power: they draw nothing
        gpu_power, it_power = gpu_power * on, it_power * on
    return gpu_power, it_power, on


def campus_series(
    workload: Workload, means: np.ndarray, path: facility.PlantPath, scale: float
) -> dict:
    """A workload's own series on a campus, from its rendered ``means`` over the whole run on
    its hall's plant (``path``): what its GPUs and racks draw (its ``scale`` share of the rack
    batteries in front of them), its throughput, states and clock, its goodput, its attrs."""
    scenario = workload.scenario
    gpu_power, it_power, on = it_path(workload, means, path, 0)
    it_power, rack = facility.storage(scenario, "rack", it_power, scenario.simulation.dt, scale)
    return {
        "gpu_power": gpu_power,
        "it_power": it_power,
        "rack": rack,
        **workload.own_series(means, path, on),
    }


def plant_means(workload: Workload, means: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The plant-step means of a workload's rendered board power per GPU [W] and IT power [MW],
    from its rendered ``means`` over whole plant steps: the heat its plant carries."""
    n_gpus = workload.scenario.cluster.n_gpus
    per_gpu = partial(per_gpu_power, n_gpus=n_gpus)
    return block_mean(means[0], workload.k, per_gpu), block_mean(means[1], workload.k)


def facility_draw(
    scenario: Scenario,
    it_power: np.ndarray,
    cooling: np.ndarray,
    k: int,
    lo: int,
    design: float | None = None,
) -> dict[str, np.ndarray]:
    """What the site (or a hall) draws around the IT load [MW] over the steps from ``lo``:
    ``facility_loss``, ``cooling_power`` (the plant's ``cooling`` [W] on plant steps, ``k``
    electrical steps a plant step), ``misc_power`` and ``facility_power``, all [MW]; sized for
    the ``design`` IT power [W], by default the scenario's."""
    design = facility.design_it_power(scenario) if design is None else design
    cooling = held_array(cooling, k, lo, it_power.size) / 1e6
    misc = misc_load(scenario, design)
    capacity = scenario.electrical.design_margin * design / 1e6
    loss = facility.facility_loss(it_power, scenario, capacity, cooling + misc)
    on = disturbances.powered(scenario, lo, it_power.size, scenario.simulation.dt)
    if on is not None:  # the UPS and PDUs feeding servers without power are down with them
        loss = loss * on
    return {
        "facility_loss": loss,
        "cooling_power": cooling,
        "misc_power": misc,
        "facility_power": it_power + loss + cooling + misc,
    }


def misc_load(scenario: Scenario, design: float | None = None) -> float:
    """Misc loads (lighting, offices, controls) [MW]: they do not follow the IT swing, a share
    of the ``design`` IT power [W] (by default the scenario's)."""
    design = facility.design_it_power(scenario) if design is None else design
    return scenario.cooling.misc_fraction * (design / 1e6)


def site_connection(
    scenario: Scenario, it_power: np.ndarray, site: dict[str, np.ndarray], dt: float
) -> tuple[dict[str, np.ndarray], list[mitigation.StorageResult]]:
    """The point of interconnection, from the IT load and the site's draw [MW] on steps of
    ``dt`` [s]: ``grid_power`` [MW] after the site batteries, ``grid_reactive_power`` [Mvar]
    and ``grid_voltage`` [p.u.]; and each site battery's dispatch."""
    other = site["cooling_power"] + site["misc_power"]
    reactive = facility.reactive_power(scenario, it_power, site["facility_loss"], other)
    return at_connection(scenario, site["facility_power"], reactive, dt)


CONNECTION = ("grid_power", "grid_reactive_power", "grid_voltage")


def at_connection(
    scenario: Scenario, load: np.ndarray, reactive: np.ndarray, dt: float
) -> tuple[dict[str, np.ndarray], list[mitigation.StorageResult]]:
    """What the grid sees of the site's ``load`` [MW] and ``reactive`` power [Mvar] on steps
    of ``dt`` [s]: :data:`CONNECTION` (after the site batteries, and the voltage change that
    causes), and each site battery's dispatch."""
    grid_power, batteries = facility.storage(scenario, "site", load, dt)
    g = scenario.grid
    voltage = grid.connection_voltage(grid_power, reactive, g.short_circuit, g.x_r)
    values = (grid_power, reactive, voltage)
    return dict(zip(CONNECTION, values, strict=True)), batteries


def through_disturbances(
    scenario: Scenario, variables: dict, supplies: list[tuple[Scenario, np.ndarray]]
) -> dict:
    """The connection through the scenario's grid disturbances: from the run's whole IT
    power, losses, cooling and misc power [MW], what the grid carries (after the site
    batteries), its reactive power and voltage, what the UPS batteries and the generators
    carry, the recharge after (:func:`powermodel.engine.disturbances.connection`). The supplies'
    reactive power is each workload's (``supplies``: its scenario and IT power)."""
    dt, n = scenario.simulation.dt, scenario.simulation.n_steps
    dense = {
        key: on_every_step(variables[key], n)
        for key in ("it_power", "facility_loss", "cooling_power", "misc_power")
    }
    it_path = dense["it_power"] + dense["facility_loss"]
    other = dense["cooling_power"] + dense["misc_power"]
    out = disturbances.connection(scenario, it_path, other, dt)
    q_it, q_other = facility.reactive_parts(
        scenario, dense["it_power"], dense["facility_loss"], other, supplies
    )
    pf = scenario.electrical.input_power_factor or 1.0  # the recharge: the UPS rectifier's
    reactive = (
        q_it * out["it_share"]
        + q_other * out["other_share"]
        + out["recharge_power"] * np.sqrt(1.0 - pf * pf) / pf
    )
    connection, batteries = at_connection(scenario, out["load"], reactive, dt)
    return {
        **connection,
        "batteries": batteries,
        **{key: out[key] for key in DISTURBANCE_VARIABLES},
    }


def storage_variables(
    rack: list[mitigation.StorageResult], site: list[mitigation.StorageResult]
) -> dict[str, np.ndarray]:
    out = {}
    if rack:
        out["rack_storage_power"] = sum(r.power for r in rack)
    if site:
        out["bess_power"] = sum(r.power for r in site)
        out["bess_soc"] = sum(r.soc * r.energy for r in site) / sum(r.energy for r in site)
    return out


def job_through_disturbances(scenario: Scenario, variables: dict) -> dict:
    """A job's whole profile ``variables`` (in the order of :data:`ORDER`) with the connection
    through the scenario's grid disturbances (:func:`through_disturbances`) and what they add,
    in that order."""
    changed = through_disturbances(scenario, variables, [(scenario, variables["it_power"])])
    batteries = changed.pop("batteries")
    merged = {**variables, **changed, **storage_variables([], batteries)}
    return {name: merged[name] for name in ORDER if name in merged}
