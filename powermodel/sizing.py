"""Sizing mitigations: for each rule, the gentlest setting of each lever that makes it pass.

Each lever is one scenario setting searched by bisection between its gentlest and its strongest
value (a cap from TDP down to the lowest settable cap, a battery from small to large ...), only
where the hardware has it. Runs are shared between rules: a setting simulated once is checked
against every rule. Costs are measured against the unmitigated run of the same seed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd
import xarray as xr

from powermodel import rules
from powermodel.analysis import step_seconds
from powermodel.models import signal
from powermodel.scenario import Scenario, format_duration, load_scenario
from powermodel.scenario.job import Gpu
from powermodel.sensitivity import Runner, in_turn
from powermodel.simulate import simulate

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = [
    "COSTS",
    "costs",
    "Lever",
    "levers",
    "printable",
    "size",
    "STORAGE_HOURS",
]

SOFTWARE_BURN_DELAY = 2.0  # s [A]: an agent polling NVML every second notices a stop within ~2 s
STORAGE_HOURS = 0.25  # h [A]: a 15-min battery, the short-duration end of site storage
BISECTIONS = 7  # a 1/128 of the searched range


@dataclass(frozen=True)
class Lever:
    """One mitigation setting to search."""

    name: str
    unit: str
    gentle: float  # least intrusive value
    strong: float  # most intrusive value searched
    settings: Callable[[float], dict]
    log: bool = False  # bisect in log space (rates, ratings spanning decades)


def levers(scenario: Scenario, rule: rules.Rule, reference: float | None) -> list[Lever]:
    """The mitigations this scenario's hardware and site have ([nvidia_nvml],
    [nvidia_gb300_power]); the battery's controller holds the grid to 80 % of the rule's limit,
    as a ramp."""
    return [
        *_gpu_levers(scenario.gpu),
        *_job_levers(scenario),
        _site_battery(scenario, ramp_limit(rule, reference)),
    ]


def _gpu_levers(gpu: Gpu) -> list[Lever]:
    """The GPU's own settings, where it has them: a power cap and a clock lock."""
    out = []
    if "power_cap" in gpu.levers:
        out.append(
            Lever(
                "power cap",
                "W",
                gpu.tdp,
                gpu.power_cap_min,
                lambda v: {"mitigation.power_cap": v},
            )
        )
    if "clock_lock" in gpu.levers:
        out.append(
            Lever("clock lock", "of nominal", 1.0, 0.5, lambda v: {"mitigation.clock_lock": v})
        )
    return out


def _job_levers(scenario: Scenario) -> list[Lever]:
    """What the job and its software can change: the checkpoint's stall, a burn that fills
    the dips, a burn on stop (the GPU's, or software's slower to react), a graceful start."""
    gpu = scenario.gpu
    out = []
    # Asynchronous checkpointing shortens the stall to the copy into host memory. (Staggering a
    # blocking write across groups does not help a synchronous job: the others wait for it at
    # the next collective, at the stalled level, so the dip lengthens instead of shallowing.)
    ck = scenario.checkpoint
    stall = ck.write_time
    out.append(
        Lever(
            "async checkpoint stall",
            "s",
            stall,
            0.05,
            lambda v: {
                "checkpoint.mode": "async",
                "checkpoint.async_blocking_time": format_duration(v),
            },
            log=True,
        )
    )
    out.append(
        Lever(
            "software burn",
            "of TDP",
            0.01,
            scenario.compute_power,
            lambda v: {"mitigation.software_burn": v},
        )
    )
    delay = 0.0 if "burn_on_stop" in gpu.levers else SOFTWARE_BURN_DELAY
    out.append(
        Lever(
            "burn on stop" + ("" if delay == 0 else f" (software, {delay:g} s to react)"),
            "W/s",
            5000.0,
            1.0,
            lambda v: {"mitigation.stop_burn": {"ramp_down": v, "delay": format_duration(delay)}},
            log=True,
        )
    )
    out.append(
        Lever(
            "graceful start ramp",
            "s",
            0.0,
            3600.0,
            lambda v: {"workload.startup_ramp": format_duration(v)},
        )
    )
    return out


def _site_battery(scenario: Scenario, ramp: float) -> Lever:
    """A site battery of :data:`STORAGE_HOURS`, sized from 1 % to twice the cluster's TDP, its
    controller holding the grid to 80 % of the rule's ``ramp`` limit [MW/min]."""
    design = scenario.cluster.n_gpus * scenario.gpu.tdp / 1e6
    controller = {"tau": "0s", "ramp": 0.8 * ramp}
    return Lever(
        f"site battery ({STORAGE_HOURS * 60:g} min)",
        "MW",
        0.01 * design,
        2.0 * design,
        lambda v: {
            "mitigation.storage": [
                {"location": "site", "power": v, "energy": v * STORAGE_HOURS, **controller}
            ]
        },
        log=True,
    )


def ramp_limit(rule: rules.Rule, reference: float | None) -> float:
    """A rule's limit as a ramp [MW/min]: changes per window become per minute."""
    limit = rule.threshold(reference)
    return limit if rule.per_minute else limit * 60.0 / rule.window


def size(
    scenario: Scenario,
    rule_list: list[rules.Rule],
    registered_demand: float | None = None,
    progress: Callable[[str], None] | None = None,
    runner: Runner | None = None,
    width: int = 1,
    base: xr.Dataset | None = None,
) -> pd.DataFrame:
    """The gentlest passing setting of each lever for each rule, with its costs.

    Parameters
    ----------
    scenario, rule_list
        What to mitigate, and the rules it is to pass.
    registered_demand
        Overrides the scenario's for the rules that refer to it. [MW]
    progress
        Called with each setting before it runs.
    runner
        Maps the runs (:func:`powermodel.sweep.run_all` bound to a cluster); in turn without.
        With one, every lever's search takes its next step in the same call, and where there
        are fewer searches than ``width``, each evaluates the next few steps of its bisection at
        once (every value they could visit): the same runs' verdicts pick the same setting, so
        the table is the one found in turn.
    width
        Runs the runner does at once (its workers' threads).
    base
        The scenario's run, where it is already simulated (before a local cluster's workers
        fork, say, so that they start with its weather and imports loaded).

    Returns
    -------
    pandas.DataFrame
        One row per rule and lever: ``setting`` in ``setting unit`` (NaN where the strongest
        setting still fails: ``verdict`` "cannot", with the causes left in ``still violated
        by``), the ``worst`` value there and the ``limit`` in ``rule unit``, and the costs:
        ``grid_energy_cost`` (extra grid energy, fraction), ``grid_energy_mwh_per_day``,
        ``throughput_cost`` (tokens kept, fraction lost), ``storage_cycles_per_day`` and, with
        prices, ``cost_per_year`` (:data:`COSTS` labels each; :func:`printable` prints them).
    """
    base = simulate(scenario) if base is None else base
    reference = registered_demand or base.attrs["registered_demand"]
    base_results = rules.check(base, rule_list, reference)
    unmitigated = _summary(base)
    del base
    measure = partial(_measured, scenario=scenario, rule_list=rule_list, reference=reference)
    runs = _Runs(measure, runner or in_turn, progress)
    searches = {
        (i, lever.name): (i, lever)
        for i, rule in enumerate(rule_list)
        if not base_results[i].passed
        for lever in levers(scenario, rule, reference)
    }
    groups = [list(searches.values())] if runner else [[s] for s in searches.values()]
    found: dict[tuple[int, str], float | None] = {}
    for group in groups:
        found |= _search(group, runs.run_each, runs.outcome, width if runner else 1)
    rows = [
        _row(rule, i, lever, base_results[i].passed, found, runs, unmitigated)
        for i, rule in enumerate(rule_list)
        for lever in levers(scenario, rule, reference)
    ]
    return pd.DataFrame(rows)


class _Runs:
    """The runs of the settings searched, each run once and kept by its settings: what the
    rules' searches share (``measure`` runs a setting, mapped by ``runner``; ``progress`` is
    told each setting before it runs)."""

    def __init__(
        self,
        measure: Callable[[dict], tuple[Scenario, _Outcome]],
        runner: Runner,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.measure, self.runner, self.progress = measure, runner, progress
        self.done: dict[str, tuple[Scenario, _Outcome]] = {}

    def run_each(self, settings: list[dict]) -> None:
        """Each setting not yet run, run (all in one call of the runner)."""
        new = {}
        for one in settings:
            key = json.dumps(one, sort_keys=True)
            if key not in self.done and key not in new:
                if self.progress:
                    self.progress(key)
                new[key] = one
        self.done.update(zip(new, self.runner(self.measure, list(new.values())), strict=True))

    def outcome(self, settings: dict) -> tuple[Scenario, _Outcome]:
        """The run of ``settings``, once run."""
        return self.done[json.dumps(settings, sort_keys=True)]


def _row(
    rule: rules.Rule,
    i: int,
    lever: Lever,
    passed: bool,
    found: dict[tuple[int, str], float | None],
    runs: _Runs,
    unmitigated: _Outcome,
) -> dict:
    """:func:`size`'s row of a rule (the ``i``-th) and a lever: the rule ``passed``
    unmitigated, or the gentlest passing setting ``found`` (None: none) with its verdict, worst
    value and costs against the ``unmitigated`` run."""
    row = {"rule": rule.name, "lever": lever.name}
    if passed:
        return {**row, "setting unit": lever.unit, "verdict": "passes unmitigated"}
    setting = found[i, lever.name]
    varied, measured = runs.outcome(lever.settings(lever.strong if setting is None else setting))
    result = measured.results[i]
    return {
        **row,
        "setting": np.nan if setting is None else setting,
        "setting unit": lever.unit,
        "verdict": "cannot" if setting is None else "pass",
        "worst": result.worst,
        "limit": result.limit,
        "rule unit": rule.unit,
        # at the strongest setting, what still breaks the rule
        "still violated by": ", ".join(result.by_cause),
        **({} if setting is None else _costs(varied, unmitigated, measured)),
    }


@dataclass(frozen=True)
class _Outcome:
    """What sizing keeps of a run: its verdicts and the totals its costs come from."""

    results: list[rules.RuleResult]
    grid: float  # grid energy [MWh]
    tokens: float  # goodput
    moved: float  # energy through the site battery, each way counted half [MWh]
    days: float  # simulated [d]


def _summary(ds: xr.Dataset, results: list[rules.RuleResult] | None = None) -> _Outcome:
    dt = step_seconds(ds)
    battery = ds.get("bess_power")
    return _Outcome(
        results or [],
        signal.energy(ds["grid_power"], dt),
        float(ds["goodput"]),
        0.0 if battery is None else signal.energy(np.abs(battery), dt) / 2.0,
        ds.sizes["time"] * dt / 86400.0,
    )


def _measured(
    settings: dict, scenario: Scenario, rule_list: list[rules.Rule], reference: float
) -> tuple[Scenario, _Outcome]:
    """The scenario with one lever's settings, run, checked and summed: what a worker does
    (the Dataset stays there)."""
    varied = load_scenario(scenario, settings)
    ds = simulate(varied)
    return varied, _summary(ds, rules.check(ds, rule_list, reference))


Search = tuple[int, Lever]  # a rule's index, a lever


def _search(
    searches: list[Search],
    run_each: Callable[[list[dict]], None],
    outcome: Callable[[dict], tuple[Scenario, _Outcome]],
    width: int,
) -> dict[tuple[int, str], float | None]:
    """Each search's gentlest passing value (None: none), all searches taking their steps
    together: each round runs what every search asks for next, in one call of ``run_each``."""
    active = {(i, lever.name): (i, lever) for i, lever in searches}
    depth = _depth(width, len(active))
    steps = {k: _bisect(lever, lambda: depth) for k, (_, lever) in active.items()}
    asked = {k: next(step) for k, step in steps.items()}
    found: dict[tuple[int, str], float | None] = {}
    while asked:
        depth = _depth(width, len(asked))
        run_each([active[k][1].settings(v) for k, values in asked.items() for v in values])
        for k, values in list(asked.items()):
            i, lever = active[k]
            verdicts = {v: outcome(lever.settings(v))[1].results[i].passed for v in values}
            try:
                asked[k] = steps[k].send(verdicts)
            except StopIteration as done:
                found[k] = done.value
                del asked[k]
    return found


def _depth(width: int, searches: int) -> int:
    """Bisection steps a search takes at once: as many as ``width`` runs hold for every search
    (a step more doubles the values a search runs), one at least."""
    return max(1, int(np.log2(width / max(searches, 1) + 1.0)))


def _bisect(
    lever: Lever, depth: Callable[[], int]
) -> Generator[list[float], dict[float, bool], float | None]:
    """The gentlest value that passes, on the passing side of the last bisection: sends the
    values it needs verdicts on, receives them. Taking ``depth()`` steps at once, it asks for
    every value those steps could visit and then takes them as one at a time would."""
    if depth() > 1:  # both ends at once
        ends = yield [lever.strong, lever.gentle]
    else:
        ends = yield [lever.strong]
        if ends[lever.strong]:
            ends |= yield [lever.gentle]
    if not ends[lever.strong]:
        return None
    if ends[lever.gentle]:
        return lever.gentle
    gentle, strong = lever.gentle, lever.strong
    left = BISECTIONS
    while left:
        steps = min(depth(), left)
        passes = yield _midpoints(gentle, strong, steps, lever.log)
        for _ in range(steps):
            mid = _mid(gentle, strong, lever.log)
            if passes[mid]:
                strong = mid
            else:
                gentle = mid
        left -= steps
    return strong


def _mid(gentle: float, strong: float, log: bool) -> float:
    return float(np.sqrt(gentle * strong)) if log else 0.5 * (gentle + strong)


def _midpoints(gentle: float, strong: float, steps: int, log: bool) -> list[float]:
    """Every value ``steps`` bisections of [gentle, strong] could visit (2**steps - 1)."""
    if steps == 0:
        return []
    mid = _mid(gentle, strong, log)
    return [
        mid,
        *_midpoints(gentle, mid, steps - 1, log),
        *_midpoints(mid, strong, steps - 1, log),
    ]


COSTS = {  # each figure of :func:`costs`: its label, and its value as printed with its unit
    "grid_energy_cost": ("grid energy change [%]", "{:+.2%}"),
    "grid_energy_mwh_per_day": ("grid energy change per day", "{:+.2f} MWh/day"),
    "throughput_cost": ("tokens lost [%]", "{:.2%}"),
    "storage_cycles_per_day": ("battery full cycles per day", "{:.2f}"),
    "cost_per_year": ("cost per year", "${:,.0f}"),
}


def printable(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`size`'s table for people: each cost under its label, its value with its unit
    (blank where the lever was not needed or cannot pass)."""
    shown = table.copy()
    for key, (_, fmt) in COSTS.items():
        if key in shown:
            shown[key] = [fmt.format(v) if np.isfinite(v) else "" for v in shown[key]]
    return shown.rename(columns={k: label for k, (label, _) in COSTS.items()})


def costs(scenario: Scenario, base: xr.Dataset, mitigated: xr.Dataset) -> dict[str, float]:
    """What the mitigation of ``scenario`` (the mitigated one) costs against the unmitigated
    run: extra grid energy, tokens lost, battery cycling and, with prices, money per year."""
    return _costs(scenario, _summary(base), _summary(mitigated))


def _costs(scenario: Scenario, base: _Outcome, mitigated: _Outcome) -> dict[str, float]:
    days = base.days
    grid = [base.grid, mitigated.grid]
    tokens = [base.tokens, mitigated.tokens]
    out = {
        "grid_energy_cost": grid[1] / grid[0] - 1.0,
        "grid_energy_mwh_per_day": (grid[1] - grid[0]) / days,
        "throughput_cost": 1.0 - tokens[1] / tokens[0],
    }
    storage = sum(s.energy for s in scenario.mitigation.storage if s.location == "site")
    if storage:
        out["storage_cycles_per_day"] = mitigated.moved / storage / days
    prices = scenario.prices
    terms = [
        (prices.energy, (grid[1] - grid[0]) / days * 365.0),
        (prices.gpu_hour, out["throughput_cost"] * scenario.cluster.n_gpus * 8760.0),
        (prices.storage_energy, storage * 1000.0),
    ]
    if any(price is not None for price, _ in terms):
        out["cost_per_year"] = sum(price * amount for price, amount in terms if price is not None)
    return out
