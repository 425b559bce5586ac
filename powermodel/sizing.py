"""Sizing mitigations: for each rule, the gentlest setting of each lever that makes it pass.

Each lever is one scenario setting searched by bisection between its gentlest and its strongest
value (a cap from TDP down to the lowest settable cap, a battery from small to large ...), only
where the hardware has it. Runs are shared between rules: a setting simulated once is checked
against every rule. Costs are measured against the unmitigated run of the same seed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from powermodel import rules
from powermodel.analysis import step_seconds
from powermodel.models import signal
from powermodel.scenario import Scenario, format_duration, load_scenario
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
    gpu = scenario.gpu
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
    design = scenario.cluster.n_gpus * gpu.tdp / 1e6
    controller = {"tau": "0s", "ramp": 0.8 * ramp_limit(rule, reference)}
    out.append(
        Lever(
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
    )
    return out


def ramp_limit(rule: rules.Rule, reference: float | None) -> float:
    """A rule's limit as a ramp [MW/min]: changes per window become per minute."""
    limit = rule.threshold(reference)
    return limit if rule.per_minute else limit * 60.0 / rule.window


def size(
    scenario: Scenario,
    rule_list: list[rules.Rule],
    registered_demand: float | None = None,
    progress: Callable[[str], None] | None = None,
) -> pd.DataFrame:
    """The gentlest passing setting of each lever for each rule, with its costs.

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
    base = simulate(scenario)
    reference = registered_demand or base.attrs["registered_demand"]
    base_results = rules.check(base, rule_list, reference)
    runs: dict[str, tuple[Scenario, xr.Dataset, list[rules.RuleResult]]] = {}

    def run(settings: dict) -> tuple[Scenario, xr.Dataset, list[rules.RuleResult]]:
        key = json.dumps(settings, sort_keys=True)
        if key not in runs:
            if progress:
                progress(key)
            varied = load_scenario(scenario, settings)
            ds = simulate(varied)
            runs[key] = (varied, ds, rules.check(ds, rule_list, reference))
        return runs[key]

    rows = []
    for i, rule in enumerate(rule_list):
        for lever in levers(scenario, rule, reference):
            row = {"rule": rule.name, "lever": lever.name}
            if base_results[i].passed:
                rows.append({**row, "setting unit": lever.unit, "verdict": "passes unmitigated"})
                continue
            found = _bisect(lever, lambda v, lever=lever, i=i: run(lever.settings(v))[2][i].passed)
            setting = lever.strong if found is None else found
            varied, ds, results = run(lever.settings(setting))
            rows.append(
                {
                    **row,
                    "setting": np.nan if found is None else found,
                    "setting unit": lever.unit,
                    "verdict": "cannot" if found is None else "pass",
                    "worst": results[i].worst,
                    "limit": results[i].limit,
                    "rule unit": rule.unit,
                    # at the strongest setting, what still breaks the rule
                    "still violated by": ", ".join(results[i].by_cause),
                    **({} if found is None else costs(varied, base, ds)),
                }
            )
    return pd.DataFrame(rows)


def _bisect(lever: Lever, passes: Callable[[float], bool]) -> float | None:
    """The gentlest value that passes, on the passing side of the last bisection."""
    if not passes(lever.strong):
        return None
    if passes(lever.gentle):
        return lever.gentle
    gentle, strong = lever.gentle, lever.strong
    for _ in range(BISECTIONS):
        mid = float(np.sqrt(gentle * strong)) if lever.log else 0.5 * (gentle + strong)
        if passes(mid):
            strong = mid
        else:
            gentle = mid
    return strong


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
    dt = step_seconds(base)
    days = base.sizes["time"] * dt / 86400.0
    grid = [signal.energy(ds["grid_power"], dt) for ds in (base, mitigated)]
    tokens = [float(ds["goodput"]) for ds in (base, mitigated)]
    out = {
        "grid_energy_cost": grid[1] / grid[0] - 1.0,
        "grid_energy_mwh_per_day": (grid[1] - grid[0]) / days,
        "throughput_cost": 1.0 - tokens[1] / tokens[0],
    }
    storage = sum(s.energy for s in scenario.mitigation.storage if s.location == "site")
    if storage:
        moved = signal.energy(np.abs(mitigated["bess_power"]), dt) / 2.0
        out["storage_cycles_per_day"] = moved / storage / days
    prices = scenario.prices
    terms = [
        (prices.energy, (grid[1] - grid[0]) / days * 365.0),
        (prices.gpu_hour, out["throughput_cost"] * scenario.cluster.n_gpus * 8760.0),
        (prices.storage_energy, storage * 1000.0),
    ]
    if any(price is not None for price, _ in terms):
        out["cost_per_year"] = sum(price * amount for price, amount in terms if price is not None)
    return out
