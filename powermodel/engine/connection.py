"""The connection (docs/model/electrical.md): the IT path (what the GPUs and racks finally draw on
the plant path), the facility around it (losses, cooling, misc loads), the batteries, and what the
grid sees: power, reactive power and voltage, also through grid disturbances."""

from __future__ import annotations

import numpy as np

from powermodel.engine import disturbances, facility
from powermodel.engine.derive import _cluster_mw, _psu_slope
from powermodel.engine.series import DISTURBANCE_VARIABLES, _dense, _over
from powermodel.engine.timeline import NO_PAUSES
from powermodel.engine.waveform import stop_ramps
from powermodel.models import events, grid, mitigation
from powermodel.scenario import Scenario


def _it_path(
    scenario: Scenario,
    line: events.Timeline,
    per_gpu: np.ndarray,
    it_power: np.ndarray,
    running: np.ndarray,
    path: facility.PlantPath,
    k: int,
    lo: int,
    paused: np.ndarray = NO_PAUSES,
) -> tuple[np.ndarray, np.ndarray]:
    """What the GPUs and the racks finally draw: ``gpu_power`` and ``it_power`` [MW].

    From the rendered board power per GPU [W] and IT power [MW] on the electrical grid (the
    steps from ``lo``), the share of each interval ``running`` [1] and the plant path (``k``
    steps a plant step): hot dies leak more while training, the ramp limits act on what each
    GPU finally draws, leakage included, and server fans speed up whenever the nodes are on.
    Each node's DC change is small: it passes through the server supplies at their running
    slope.
    """
    cl, dt, n = scenario.cluster, scenario.simulation.dt, per_gpu.size
    leak = running * _over(path.leak_extra, k, lo, n)  # W per GPU, DC
    drawn = stop_ramps(scenario, line, per_gpu + leak, dt, paused)  # W per GPU, DC
    fans = _over(path.fan_extra, k, lo, n)  # W per node, DC
    node = (cl.gpus_per_node * (drawn - per_gpu) + fans) * _psu_slope(scenario)  # W per node, AC
    gpu_power, it_power = _cluster_mw(drawn, cl.n_gpus), it_power + _cluster_mw(node, cl.n_nodes)
    on = disturbances.powered(scenario, lo, n, scenario.simulation.dt)
    if on is not None:  # a disturbance took the servers' power: they draw nothing
        gpu_power, it_power = gpu_power * on, it_power * on
    return gpu_power, it_power


def _facility(
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
    cooling = _over(cooling, k, lo, it_power.size) / 1e6
    misc = _misc(scenario, design)
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


def _misc(scenario: Scenario, design: float | None = None) -> float:
    """Misc loads (lighting, offices, controls) [MW]: they do not follow the IT swing, a share
    of the ``design`` IT power [W] (by default the scenario's)."""
    design = facility.design_it_power(scenario) if design is None else design
    return scenario.cooling.misc_fraction * (design / 1e6)


def _connection(
    scenario: Scenario, it_power: np.ndarray, site: dict[str, np.ndarray], dt: float
) -> tuple[dict[str, np.ndarray], list[mitigation.StorageResult]]:
    """The point of interconnection, from the IT load and the site's draw [MW] on steps of
    ``dt`` [s]: ``grid_power`` [MW] after the site batteries, ``grid_reactive_power`` [Mvar]
    and ``grid_voltage`` [p.u.]; and each site battery's dispatch."""
    other = site["cooling_power"] + site["misc_power"]
    reactive = facility.reactive_power(scenario, it_power, site["facility_loss"], other)
    return _at_connection(scenario, site["facility_power"], reactive, dt)


CONNECTION = ("grid_power", "grid_reactive_power", "grid_voltage")


def _at_connection(
    scenario: Scenario, load: np.ndarray, reactive: np.ndarray, dt: float
) -> tuple[dict[str, np.ndarray], list[mitigation.StorageResult]]:
    """What the grid sees of the site's ``load`` [MW] and ``reactive`` power [Mvar] on steps
    of ``dt`` [s]: :data:`CONNECTION` (after the site batteries, and the voltage change that
    causes), and each site battery's dispatch."""
    grid_power, batteries = facility.storage(scenario, "site", load, dt)
    g = scenario.grid
    voltage = 1.0 + grid.voltage_change(grid_power, reactive, g.short_circuit, g.x_r)
    values = (grid_power, reactive, voltage)
    return dict(zip(CONNECTION, values, strict=True)), batteries


def _through_disturbances(
    scenario: Scenario, variables: dict, supplies: list[tuple[Scenario, np.ndarray]]
) -> dict:
    """The connection through the scenario's grid disturbances: from the run's whole IT
    power, losses, cooling and misc power [MW], what the grid carries (after the site
    batteries), its reactive power and voltage, what the UPS batteries and the generators
    carry, the recharge after (:func:`powermodel.engine.disturbances.connection`). The supplies'
    reactive power is each workload's (``supplies``: its scenario and IT power)."""
    dt, n = scenario.simulation.dt, scenario.simulation.n_steps
    dense = {
        key: _dense(variables[key], n)
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
    connection, batteries = _at_connection(scenario, out["load"], reactive, dt)
    return {
        **connection,
        "batteries": batteries,
        **{key: out[key] for key in DISTURBANCE_VARIABLES},
    }


def _storage_variables(
    rack: list[mitigation.StorageResult], site: list[mitigation.StorageResult]
) -> dict[str, np.ndarray]:
    out = {}
    if rack:
        out["rack_storage_power"] = sum(r.power for r in rack)
    if site:
        out["bess_power"] = sum(r.power for r in site)
        out["bess_soc"] = sum(r.soc * r.energy for r in site) / sum(r.energy for r in site)
    return out
