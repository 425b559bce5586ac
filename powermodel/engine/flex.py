"""Flexibility events (docs/model/campus.md): the levers' checks, the servers' inlet over an
event, and the clock lock that sheds the share of IT power asked of a training job."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from powermodel.engine import facility
from powermodel.engine.derive import Derived, derive, per_gpu_power, plant_steps
from powermodel.engine.series import datetimes
from powermodel.engine.waveform import shape_tables
from powermodel.errors import ScenarioError
from powermodel.models import thermal
from powermodel.models.cooling import server_fan_extra
from powermodel.models.events import State
from powermodel.scenario import Scenario, format_duration
from powermodel.scenario.campus import FlexEvent, Inference

HOUR_S = 3600.0


# the clocks a flexibility event may lock a training job at [1]: below, the phases' law is far
# from where it was measured
LOWEST_FLEX_CLOCK = 0.3


def check_lever(scenario: Scenario, event: FlexEvent) -> None:
    """A clock-lock event needs a GPU whose clock can be locked."""
    if event.lever == "clock" and "clock_lock" not in scenario.gpu.levers:
        raise ScenarioError(
            f"flexibility {event.name!r}: the {scenario.gpu.name} has no clock lock (its levers: "
            f"{', '.join(scenario.gpu.levers)}): use the lever 'pause'"
        )


def event_inlet(scenario: Scenario, heat: float, event: FlexEvent) -> float:
    """The servers' mean inlet over ``event`` [°C]: the plant from an hour before it (its lags
    settle) to its end, with the job drawing ``heat`` [MW]."""
    sim, plant_dt = scenario.simulation, plant_steps(scenario) * scenario.simulation.dt
    begin = (event.start - sim.start).total_seconds()
    first = max(begin - HOUR_S, 0.0)
    count = max(int(np.ceil((begin + event.duration - first) / plant_dt)), 1)
    middle = datetimes(sim.start, first + (np.arange(count) + 0.5) * plant_dt)
    heat = np.full(count, heat * 1e6)
    site = facility.site_plant(scenario, middle, heat, plant_dt, facility.design_it_power(scenario))
    during = first + (np.arange(count) + 0.5) * plant_dt >= begin
    return float(site.out.supply_temp[during].mean() + scenario.cooling.inlet_offset)


def flex_clock(scenario: Scenario, derived: Derived, cells: np.ndarray, event: FlexEvent) -> float:
    """The clock lock that lowers the training job's IT power by ``reduction`` [1] of what it
    draws training, found between :data:`LOWEST_FLEX_CLOCK` and its own clock.

    What it draws is the shapes' mean with the leakage of its dies at the event's inlet: the
    plant run over the event with the job training (:func:`event_inlet`), each die at its
    steady temperature there. A locked GPU runs off its cap, so all of its leakage follows its
    die; a free one holds its cap in compute phases, so only the other phases' does. The
    reduction holds once the dies have settled, within their thermal time constant of the start.
    """
    cl = scenario.cluster
    inlet = event_inlet(scenario, float(cells[1, State.RUNNING].mean()), event)
    nominal, slope = derived.nominal_die, derived.slope

    def drawn(clock: float | None) -> float:
        """The job's IT power training at a locked ``clock`` (None: its own) [MW]."""
        locked = scenario.model_copy(
            update={"mitigation": scenario.mitigation.model_copy(update={"clock_lock": clock})}
        )
        mean = (cells if clock is None else shape_tables(locked, derive(locked))[0])[
            :, State.RUNNING
        ].mean(axis=1)
        off_cap = 1.0 if clock is not None else 1.0 - scenario.compute_share
        board = per_gpu_power(mean[0], cl.n_gpus)
        return float(mean[1] + settled_it_extra(scenario, inlet, board, nominal, slope, off_cap))

    training = drawn(scenario.mitigation.clock_lock)

    def shed(clock: float) -> float:
        return 1.0 - drawn(clock) / training - reduction

    reduction = event.reduction
    top = scenario.mitigation.clock_lock or 1.0
    most = shed(LOWEST_FLEX_CLOCK) + reduction
    if most < reduction:
        raise ScenarioError(
            f"a clock lock sheds at most {most:.0%} of the job's IT power (at "
            f"{LOWEST_FLEX_CLOCK:g} of its clock), less than the {reduction:.0%} asked: lower "
            "the reduction, or pause the job (lever 'pause')"
        )
    from scipy import optimize  # noqa: PLC0415 - scipy's import is paid by what uses it

    return float(optimize.brentq(shed, LOWEST_FLEX_CLOCK, top, xtol=1e-12))


def settled_it_extra(
    scenario: Scenario,
    inlet: float,
    board: np.ndarray | float,
    reference: np.ndarray | float,
    slope: float,
    off_cap: float = 1.0,
) -> np.ndarray | float:
    """What a job's dies and fans settled at ``inlet`` [°C] add to its IT power [MW]: each
    GPU's leakage at its steady die temperature (from its board power [W]) over that at the
    ``reference`` die temperature [°C] its power curve holds at (``off_cap``: the share of it
    that shows as power, not as clock), and the server fans at that inlet, through the
    supplies at ``slope`` [W AC a W DC]."""
    gpu, cl = scenario.gpu, scenario.cluster
    die = thermal.steady_gpu_temperature(inlet, board, gpu.thermal_resistance)
    leak = off_cap * (gpu.leakage(die) - gpu.leakage(reference))
    fans = server_fan_extra(facility.server_fan_speed(scenario, inlet), cl.fans.power)
    return (cl.gpus_per_node * leak + fans) * slope * cl.n_nodes / 1e6


def events_targeting(scenario: Scenario, name: str) -> list[FlexEvent]:
    """The flexibility events that target the campus workload ``name``."""
    return [e for e in scenario.flexibility if not e.workloads or name in e.workloads]


def check_fleet_event(scenario: Scenario, spec: Inference, event: FlexEvent) -> None:
    """An event on an inference fleet starts and ends on its utilisation's steps (the series
    the event changes is constant over each)."""
    step = spec.variation_step
    begin = (event.start - scenario.simulation.start).total_seconds()
    for what, seconds in (("start", begin), ("duration", event.duration)):
        if abs(seconds / step - round(seconds / step)) > 1e-6 or round(seconds / step) < (
            what == "duration"
        ):
            raise ScenarioError(
                f"flexibility {event.name!r}: its {what} ({format_duration(seconds)} from the "
                f"run's start) is not a whole number of the fleet's inference.variation_step "
                f"({format_duration(step)}): align it, or shorten the step"
            )


class FlexedWorkload(Protocol):
    """What :func:`flex_variables` reads of a workload an event targets (a training job's
    :class:`~powermodel.engine.run.Run`, an inference fleet's
    :class:`~powermodel.engine.fleet.Fleet`)."""

    def setting(self, event: FlexEvent) -> float | None:
        """The lever's setting ``event`` took on it [1]; None for a pause."""

    def tokens_lost(self, event: FlexEvent) -> float:
        """Tokens ``event`` cost it [token]."""


def flex_variables(
    scenario: Scenario, runs: Sequence[FlexedWorkload], it: Sequence[np.ndarray]
) -> dict[str, tuple]:
    """Each flexibility event on each workload it targets (the dimension ``flex``): its
    lever, setting and timing, the workload's IT power in the hour before and during it (a
    same-day baseline), what it shed, and the tokens it cost. ``runs`` and their IT power
    ``it`` [MW] in the order of the campus's workloads (one run: the scenario's job)."""
    names = [w.name for w in scenario.campus.workloads] if scenario.campus else ["job"]
    sim, dt = scenario.simulation, scenario.simulation.dt
    rows = []
    for event in scenario.flexibility:
        begin = int((event.start - sim.start).total_seconds() // dt)  # the step it starts in
        end = min(begin + max(int(round(event.duration / dt)), 1), sim.n_steps)
        before = slice(max(begin - int(round(HOUR_S / dt)), 0), begin)
        for j, (name, run) in enumerate(zip(names, runs, strict=True)):
            if event.workloads and name not in event.workloads:
                continue
            value = run.setting(event)
            setting = float("nan") if value is None else float(value)
            base = float(it[j][before].mean()) if before.stop > before.start else float("nan")
            during = float(it[j][begin:end].mean())
            rows.append(
                (event.name, name, event.lever, event.start, event.duration, event.notice,
                 np.nan if event.reduction is None else event.reduction, setting, base, during,
                 base - during, run.tokens_lost(event))
            )  # fmt: skip
    keys = (
        "flex_name", "flex_workload", "flex_lever", "flex_start", "flex_duration", "flex_notice",
        "flex_reduction", "flex_setting", "flex_baseline", "flex_power", "flex_shed",
        "flex_tokens_lost",
    )  # fmt: skip
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(keys)
    out = {}
    for key, values in zip(keys, columns, strict=True):
        kind = "datetime64[ns]" if key == "flex_start" else object if key in FLEX_LABELS else float
        out[key] = ("flex", np.array(values, dtype=kind))
    return out


FLEX_LABELS = ("flex_name", "flex_workload", "flex_lever")
