"""The sweep itself (:func:`sweep`): the base and each point loaded, their runs mapped and gathered.

The driver of a sweep, its stages in order: the grid checked (:mod:`powermodel.sweep.points`),
the base and each point's scenario loaded (a point that does not load is its error), one run a
point and seed mapped (:func:`powermodel.sweep.placement.run_all`; :func:`_execute` is what a
worker runs), the outcomes gathered into one Dataset (:mod:`powermodel.sweep.results`).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import xarray as xr

from powermodel import rules
from powermodel._version import __version__
from powermodel.analysis import metrics, resample, resample_factor
from powermodel.engine.preflight import available_memory, check_memory
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.scenario import Scenario, load_scenario, presets, shorten
from powermodel.simulate import memory_estimate, simulate
from powermodel.sweep.placement import Failure, _default_workers, check_placement, run_all
from powermodel.sweep.points import (
    EXTENDS,
    MAX_RUNS,
    _check_fixed,
    _check_key,
    _interval,
    _json,
    _points,
    _rules_of,
    _seed_count,
)
from powermodel.sweep.results import _gather


@dataclass(frozen=True)
class _Run:
    """One run: a point's scenario at one seed, what to measure (shipped to a worker)."""

    scenario: Scenario
    seed: int
    rule_list: tuple[rules.Rule, ...]
    registered_demand: float | None
    series: str | None


def sweep(
    base: Scenario | str | Path,
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
    seeds: int = 1,
    *,
    overrides: Mapping[str, Any] | None = None,
    rules: str | Sequence[str] | None = None,
    registered_demand: float | None = None,
    series: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    client: Any = None,
    progress: bool = True,
) -> xr.Dataset:
    """Run a scenario over swept keys and seeds; one Dataset of every run's results.

    Parameters
    ----------
    base
        The scenario, a preset name or a TOML path.
    grid
        ``{"cluster.n_gpus": [8192, 16384], "site.weather": ["sterling", "tampa"]}``: every
        combination (a dimension per key, in order), or ``[{"cluster.n_gpus": 8192}, ...]``: these
        points (a ``point`` dimension, each key a coordinate on it, ``""`` or NaN where a point
        leaves it as the base has it). Keys are dotted scenario keys, as ``--set`` takes them,
        each value listed once; ``extends`` names a preset or scenario file that replaces
        ``base`` for the point. ``simulation.seed`` is not swept (``seeds`` is).
    seeds
        Runs per point: seed ``i`` of every point is the base's ``simulation.seed`` (with the
        overrides) plus ``i``. [1]
    overrides
        Dotted overrides every point has, applied to the base once (a base that is invalid
        alone may be made valid here); a point's own win. Refused on a key the grid sweeps or
        every point sets (it would change nothing).
    rules
        Rule or group names or rule files (:func:`powermodel.rules.load_rules`) to check.
    registered_demand
        Overrides each scenario's for the rules that refer to it. [MW]
    series
        Also keep each run's ``grid_power`` as interval means at this step (``"1min"``).
    workers
        Processes of a ``LocalCluster`` started for the sweep; 0 runs in turn in this process
        (dask.distributed is not imported). Default: in turn when all runs together take fewer
        than :data:`MIN_CLUSTER_STEPS` steps (starting a cluster would take longer), else the
        cores, as many as the memory holds, at most one a run (in turn when that is one).
    scheduler
        Address of a running dask scheduler (``tcp://host:8786``) to run on instead (not with
        ``workers``).
    client
        A ``dask.distributed.Client`` to run on instead.
    progress
        A progress bar on stderr.

    Returns
    -------
    xarray.Dataset
        Dimensions: each swept key (or ``point``), ``seed`` (from 0), with rules ``rule``, with
        ``series`` ``elapsed`` (from the run's start). Variables: each scalar metric (NaN where
        the run failed), ``simulation_seed`` (-1 where the point did not load), ``error`` (``""``
        where the run ran); with rules ``rule_passed`` (1 pass, 0 fail, NaN no verdict),
        ``rule_worst``, ``rule_limit``, ``rule_violations_per_day``, ``rule_resolved_to`` (where
        the run's step cut the rule's band, so that a pass is not proven above it; NaN where it
        resolved the band) and ``rule_refused`` (why no verdict); with ``series``
        ``grid_power``. Attributes: ``scenario`` (the base with the overrides, as JSON),
        ``grid``, ``overrides``, ``seeds``, ``rules``, ``series``, ``powermodel_version``.

    Raises
    ------
    PowerModelError
        Before any run: an unknown key, an empty grid, more than :data:`MAX_RUNS` runs, a base
        that does not load, unknown rules, more workers than the memory holds, a scheduler's
        address that is not ``tcp://host:port``. A point whose values do not validate is
        recorded, not raised.
    """
    seeds = _seed_count(seeds)
    check_placement(workers, scheduler, client)
    planned = _plan(base, grid, seeds, dict(overrides or {}), rules, registered_demand, series)
    outcomes = _run(planned, workers, scheduler, client, progress)
    return _gathered(planned, grid, outcomes)


@dataclass(frozen=True)
class _Plan:
    """A sweep checked and loaded, before any run: its keys, the base, each point's load error
    (``""`` where it loaded) and the runs of the points that loaded, as (point, seed, run)."""

    keys: list[str]
    coords: dict[str, list[Any]]
    is_grid: bool
    base: Scenario
    fixed: dict[str, Any]
    rule_list: tuple[rules.Rule, ...]
    seeds: int
    series: str | None
    errors: list[str]
    jobs: list[tuple[int, int, _Run]]
    per_run: int  # peak memory of the largest run [B]


def _plan(
    base: Scenario | str | Path,
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
    seeds: int,
    fixed: dict[str, Any],
    rule_names: str | Sequence[str] | None,
    registered_demand: float | None,
    series: str | None,
) -> _Plan:
    """The grid and the fixed overrides checked, then the base and each point loaded (the
    base once, with the fixed overrides) and a run made for each point that loads and seed."""
    keys, points, coords = _points(grid)
    for key in dict.fromkeys([*keys, *fixed]):
        _check_key(key)
    _check_fixed(fixed, keys, points, isinstance(grid, Mapping))
    if len(points) * seeds > MAX_RUNS:
        raise PowerModelError(
            f"{len(points):,} points x {seeds:,} seeds is {len(points) * seeds:,} runs, more than "
            f"{MAX_RUNS:,}: sweep fewer values or seeds, or split the sweep into files"
        )
    base_scenario = load_scenario(base, fixed)
    rule_list = tuple(_rules_of(rule_names))
    if series is not None:
        _interval(series)
    scenarios, errors = _load_points(base_scenario, fixed, points, series)
    loaded = [s for s in scenarios if s is not None]
    per_run = max((_estimate(s) for s in loaded), default=0)
    if series is not None:
        _check_series_memory(loaded, series, seeds)
    first_seed = base_scenario.simulation.seed
    jobs = [
        (p, i, _Run(s, first_seed + i, rule_list, registered_demand, series))
        for p, s in enumerate(scenarios)
        if s is not None
        for i in range(seeds)
    ]
    return _Plan(
        keys=keys,
        coords=coords,
        is_grid=isinstance(grid, Mapping),
        base=base_scenario,
        fixed=fixed,
        rule_list=rule_list,
        seeds=seeds,
        series=series,
        errors=errors,
        jobs=jobs,
        per_run=per_run,
    )


def _run(
    planned: _Plan, workers: int | None, scheduler: str | None, client: Any, progress: bool
) -> list[Any]:
    """Each run's outcome, in the plan's order: where ``sweep`` was told, else by
    :func:`powermodel.sweep.placement._default_workers`."""
    if workers is None and scheduler is None and client is None:
        workers = _default_workers([job.scenario for _, _, job in planned.jobs], planned.per_run)
    return run_all(
        _execute,
        [job for _, _, job in planned.jobs],
        workers=workers or 0,
        scheduler=scheduler,
        client=client,
        progress=progress,
        keep_going=True,
        memory=planned.per_run,
        label="sweep",
    )


def _gathered(
    planned: _Plan,
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
    outcomes: list[Any],
) -> xr.Dataset:
    """The runs' outcomes (a point that did not load: its error at every seed) as one Dataset,
    with what the sweep was in its attributes."""
    seeds = planned.seeds
    results: list[list[dict[str, Any]]] = [
        [{"error": error} for _ in range(seeds)] for error in planned.errors
    ]
    for (p, i, job), outcome in zip(planned.jobs, outcomes, strict=True):
        if isinstance(outcome, Failure):
            outcome = {"error": outcome.text}
        results[p][i] = {"seed": job.seed, **outcome}
    rule_list, series = planned.rule_list, planned.series
    ds = _gather(results, planned.keys, planned.coords, rule_list, series, planned.is_grid)
    ds.attrs.update(
        title="powermodel sweep",
        scenario=planned.base.to_json(),
        grid=_json(grid if isinstance(grid, Mapping) else list(grid)),
        overrides=_json(planned.fixed),
        seeds=seeds,
        seed_rule="seed i of every point runs at the base's simulation.seed + i",
        rules=",".join(r.name for r in rule_list),
        series=series or "",
        powermodel_version=__version__,
    )
    return ds


def _load_points(
    base: Scenario,
    fixed: dict[str, Any],
    points: list[dict[str, Any]],
    series: str | None,
) -> tuple[list[Scenario | None], list[str]]:
    """Each point's scenario, or None and why it does not load or would not fit in memory
    alone (the point's recorded error). A point starts from the base as loaded with the fixed
    overrides (read once), or from what it ``extends``; the fixed overrides go with its own, so
    that a catalogue entry a point chooses keeps what they set (as one load of both would)."""
    scenarios: list[Scenario | None] = []
    errors = []
    for point in points:
        merged = {**fixed, **point}
        origin = merged.pop(EXTENDS, base)
        try:
            _check_scenario_file(origin)
            scenario = load_scenario(origin, merged)
            check_memory(scenario)  # a run too large for the machine alone is its point's error
            if series is not None:
                resample_factor(scenario.simulation.n_steps, scenario.simulation.dt, series)
        except PowerModelError as exc:
            scenarios.append(None)
            errors.append(str(exc))
        else:
            scenarios.append(scenario)
            errors.append("")
    return scenarios, errors


def _check_scenario_file(origin: Scenario | str) -> None:
    """A path that is there but no file (a folder, a device) is not a scenario file (the
    loader would call it missing)."""
    if isinstance(origin, str) and origin not in presets():
        path = Path(origin).expanduser()
        if path.exists() and not path.is_file():
            raise ScenarioError(
                f"{EXTENDS} {shorten(origin)} is not a scenario file (a folder or a device): "
                "give a .toml scenario file or a preset name"
            )


def _estimate(scenario: Scenario) -> int:
    try:
        return memory_estimate(scenario)
    except PowerModelError:
        return 0  # the run itself then fails with the reason, recorded


def _check_series_memory(loaded: list[Scenario], series: str, seeds: int) -> None:
    interval = _interval(series)
    samples = max(s.simulation.duration for s in loaded) / interval if loaded else 0.0
    need = 8.0 * samples * len(loaded) * seeds
    free = available_memory()
    if need > free / 2:
        raise PowerModelError(
            f"series of {samples:,.0f} samples for {len(loaded) * seeds:,} runs need about "
            f"{need / 1e9:.1f} GB, more than half the {free / 1e9:.1f} GB available: give a "
            "coarser series step"
        )


def _execute(run: _Run) -> dict[str, Any]:
    """One run on a worker: its metrics, rule verdicts and series, or the error it met."""
    try:
        ds = simulate(load_scenario(run.scenario, {"simulation.seed": run.seed}))
        measured = metrics(ds)
        out: dict[str, Any] = {
            "metrics": {
                k: float(v)
                for k, v in measured.items()
                if isinstance(v, numbers.Real) and not isinstance(v, bool)
            },
            "not_measured": _not_measured_text(measured.get("not_measured", {})),
        }
        if run.rule_list:
            out["rules"] = _verdicts(ds, run.rule_list, run.registered_demand)
        if run.series is not None:
            out["series"] = resample(ds[["grid_power"]], run.series)["grid_power"].values
    except PowerModelError as exc:
        return {"error": str(exc)}
    except Exception as exc:  # a defect, or the machine (memory): recorded, the sweep goes on
        return {"error": f"internal error: {type(exc).__name__}: {exc}"}
    return out


def _not_measured_text(why: Mapping[str, str]) -> str:
    """A run's metrics that are NaN and why, as one cell: ``key: why; key: why`` (``""`` where
    every metric was measured); :func:`not_measured_notes` reads it back."""
    return "; ".join(f"{key}: {reason}" for key, reason in why.items())


def _verdicts(
    ds: xr.Dataset, rule_list: Sequence[rules.Rule], registered_demand: float | None
) -> dict[str, dict[str, Any]]:
    results, refused = rules.check_each(ds, list(rule_list), registered_demand)
    out: dict[str, dict[str, Any]] = {
        r.rule.name: {
            "passed": float(r.passed),
            "worst": float(r.worst),
            "limit": float(r.limit),
            "violations_per_day": float(sum(r.per_day().values())),
            "resolved_to": np.nan if r.resolved_to is None else float(r.resolved_to),
            "refused": "",
        }
        for r in results
    }
    for no in refused:
        out[no.rule.name] = {"refused": no.reason}
    return out
