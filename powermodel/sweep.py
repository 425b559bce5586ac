"""Sweeps and Monte Carlo: a base scenario over swept keys and seeds, serially or on dask.

A sweep is a base scenario, fixed overrides, swept keys (a cartesian grid or an explicit list of
points) and a number of seeds. Each point runs once per seed, each run is simulated, measured
(:func:`powermodel.analysis.metrics`) and, with rules, checked
(:func:`powermodel.rules.check_each`); the results are gathered into one Dataset with a dimension
per swept key (or ``point``) and one for the seed. A run that fails is recorded in ``error`` and
the sweep goes on.

Seed ``i`` of every point is the base's ``simulation.seed`` plus ``i`` (a point's own seed, from
a file it ``extends``, is not used, and ``simulation.seed`` is not swept): every point sees the
same failure draws (common random numbers), and a run's result does not depend on where it ran,
so a sweep gives the same Dataset serially and on any cluster.

:func:`run_all` is the one place runs are mapped, in turn or on dask.distributed (a
``LocalCluster`` it starts and closes, a scheduler's address, or a client); ``powermodel check
--seeds/--sensitivity --workers N`` map through it too. dask.distributed is imported only
there, so a call in turn never loads it.
"""

from __future__ import annotations

import difflib
import gc
import itertools
import json
import math
import numbers
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from powermodel import rules
from powermodel._version import __version__
from powermodel.analysis import metrics, resample, resample_factor
from powermodel.engine.preflight import available_memory, check_memory
from powermodel.errors import DataFileError, PowerModelError, ScenarioError
from powermodel.iotools import read_text
from powermodel.output import check_folder, netcdf, staged
from powermodel.reference import keys as scenario_keys
from powermodel.scenario import (
    Scenario,
    load_scenario,
    names_a_file,
    parse_duration,
    parse_toml,
    presets,
    shorten,
)
from powermodel.sensitivity import MAX_SEEDS
from powermodel.simulate import memory_estimate, simulate
from powermodel.variables import attrs as variable_attrs

__all__ = [
    "Failure",
    "MAX_RESULT_CELLS",
    "MAX_RUNS",
    "SweepFile",
    "bands",
    "check_output",
    "check_placement",
    "check_scheduler",
    "check_workers",
    "cluster",
    "dropped_series",
    "measured",
    "not_measured_notes",
    "open_results",
    "read_sweep",
    "run_all",
    "summary",
    "sweep",
    "swept_dims",
    "swept_keys",
    "table",
    "threads",
    "write",
]

MAX_RUNS = 10_000  # runs of one sweep (points times seeds): each is a whole simulation
MAX_KEYS = 16  # swept keys of a grid, each a dimension of the result
MAX_OVERRIDES = 500  # keys of one table of overrides ([set] or a point; a scenario has ~170)
MAX_FILE_BYTES = 1 << 20  # a sweep file: a few hundred lines make the largest useful sweep
EXTENDS = "extends"  # a swept key that replaces the base: a preset name or a scenario file
FILE_KEYS = ("base", "seeds", "rules", "registered_demand", "series", "set", "grid", "points")
CONNECT_TIMEOUT = 10.0  # s: a scheduler that does not answer within it is not there
CHUNKS_PER_THREAD = 4  # a chunk is at most the items left over this many times the threads
MAX_CHUNK = 16  # items of one task: a worker that dies loses at most these, each rerun alone
# Worker deaths a task may meet before dask gives it up (its default is 3): a run that kills its
# worker (memory, a crash) is tried twice, not four times, on the clusters a sweep starts
ALLOWED_FAILURES = 1
# Tasks a worker thread holds: one, the others queued at the scheduler, so that a worker that dies
# takes only the run it was running with it (dask's 1.1 holds a second there, which is given up
# with it)
WORKER_SATURATION = 1.0
# Runs in turn, not on a local cluster, when all runs together take fewer steps than this:
# importing dask.distributed and starting and closing a cluster of forked workers costs about
# 0.4 s, as long as 2 x 10^6 steps of runs in turn. Measured here (2 cores shared with other
# work), whole commands of 8 runs of the reference at 1 s, in turn and on 2 workers: 1 h
# (29,000 steps) 2.00 and 2.13 s; 1 d (0.7 M) 2.13 and 2.26 s; 3 d (2.1 M) 2.37-2.46 and
# 2.40-2.46 s; 6 d (4.1 M) 2.71-2.88 and 2.55-2.59 s
MIN_CLUSTER_STEPS = 2_000_000
SEED = "simulation.seed"  # not swept: seed i of every point is the base's seed + i
TICK = "1s"  # a local cluster's event-loop watchdog (dask's 20 ms): its 3-s warning still fires
WORKER_WAIT = 30.0  # s: a scheduler with no worker after it would leave the runs waiting forever
# Headline metrics the summary table shows (median over seeds): where the grid sees the site,
# its largest 5-s swing, and what the job trained
SUMMARY = ("grid_mean_mw", "grid_peak_mw", "grid_swing_5s_mw", "effective_training_time")
IN_RULE_UNIT = {"description": "in each rule's unit: the rule_unit coordinate"}
# Units of a metric by the end of its name (analysis.metrics names them so); the rest are 1
_UNITS = (
    ("_mwh", "MWh"),
    ("_mw", "MW"),
    ("_mvar", "Mvar"),
    ("_pct", "%"),
    ("_j", "J"),
    ("_l_per_kwh", "L/kWh"),
    ("_hours", "h"),
)


@dataclass(frozen=True)
class Failure:
    """A run that raised where it ran (a worker that died, an exception out of the function)."""

    text: str


@dataclass(frozen=True)
class SweepFile:
    """A sweep file as read by :func:`read_sweep`: what :func:`sweep` takes."""

    base: str
    grid: dict[str, list[Any]] | list[dict[str, Any]]
    seeds: int = 1
    overrides: dict[str, Any] = field(default_factory=dict)
    rules: list[str] = field(default_factory=list)
    registered_demand: float | None = None
    series: str | None = None


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
    keys, points, coords = _points(grid)
    fixed = dict(overrides or {})
    for key in dict.fromkeys([*keys, *fixed]):
        _check_key(key)
    _check_fixed(fixed, keys, points, isinstance(grid, Mapping))
    if len(points) * seeds > MAX_RUNS:
        raise PowerModelError(
            f"{len(points):,} points x {seeds:,} seeds is {len(points) * seeds:,} runs, more than "
            f"{MAX_RUNS:,}: sweep fewer values or seeds, or split the sweep into files"
        )
    base_scenario = load_scenario(base, fixed)
    rule_list = tuple(_rules_of(rules))
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
    if workers is None and scheduler is None and client is None:
        workers = _default_workers([job.scenario for _, _, job in jobs], per_run)
    outcomes = run_all(
        _execute,
        [job for _, _, job in jobs],
        workers=workers or 0,
        scheduler=scheduler,
        client=client,
        progress=progress,
        keep_going=True,
        memory=per_run,
        label="sweep",
    )
    results: list[list[dict[str, Any]]] = [
        [{"error": errors[p]} for _ in range(seeds)] for p in range(len(points))
    ]
    for (p, i, job), outcome in zip(jobs, outcomes, strict=True):
        if isinstance(outcome, Failure):
            outcome = {"error": outcome.text}
        results[p][i] = {"seed": job.seed, **outcome}
    ds = _gather(results, keys, coords, rule_list, series, isinstance(grid, Mapping))
    ds.attrs.update(
        title="powermodel sweep",
        scenario=base_scenario.to_json(),
        grid=_json(grid if isinstance(grid, Mapping) else list(grid)),
        overrides=_json(fixed),
        seeds=seeds,
        seed_rule="seed i of every point runs at the base's simulation.seed + i",
        rules=",".join(r.name for r in rule_list),
        series=series or "",
        powermodel_version=__version__,
    )
    return ds


def check_placement(workers: int | None, scheduler: str | None, client: Any = None) -> None:
    """Where the runs go, said once and checked before anything loads or runs: a local
    cluster's workers (``--workers``; 0 runs in turn), a scheduler's address (``--scheduler``)
    or a client."""
    given = [
        name
        for name, value in (
            ("workers (--workers)", workers),
            ("a scheduler (--scheduler)", scheduler),
            ("a client", client),
        )
        if value is not None
    ]
    if len(given) > 1:
        raise PowerModelError(
            f"give {' or '.join(given)}, not both: workers start a cluster here, a scheduler or "
            "a client names one that runs elsewhere with its own workers"
        )
    if workers is not None:
        check_workers(workers)
    if scheduler is not None:
        check_scheduler(scheduler)


def _check_fixed(
    fixed: dict[str, Any], keys: list[str], points: list[dict[str, Any]], is_grid: bool
) -> None:
    """Refuse fixed overrides a sweep would ignore (a key every point sets), ``extends`` among
    them (the base is ``base``), and ``simulation.seed`` swept (the seeds are ``seeds``)."""
    if SEED in keys:
        raise PowerModelError(
            f"{SEED} is swept: the seeds are the sweep's `seeds` (seed i of every point is the "
            f"base's {SEED} + i, so that points share their failure draws): remove it from the "
            "grid or points and give seeds = N (set the first in [set])"
        )
    if EXTENDS in fixed:
        raise PowerModelError(
            f"{EXTENDS!r} is not a fixed override: name the scenario as the sweep's base"
        )
    every = [k for k in keys if is_grid or all(k in p for p in points)]
    both = [k for k in every if k in fixed]
    if both:
        raise PowerModelError(
            f"{both[0]} is swept and fixed (--set or [set]) too: the swept values would win, so "
            "the fixed one would change nothing: give it in one place"
        )


def _check_extends(value: Any, where: str) -> None:
    """An ``extends`` value names a preset or a scenario file: non-empty text."""
    if not isinstance(value, str) or not value.strip():
        raise PowerModelError(
            f"{where}: {EXTENDS} {shorten(value)} is not a preset name or a scenario file: "
            f'give its name as text, e.g. {EXTENDS} = ["llama3-405b-8k-h100"]'
        )


def _rules_of(names: str | Sequence[str] | None) -> list[rules.Rule]:
    """The rules a sweep checks: none without names."""
    if names is None or (not isinstance(names, str) and not names):
        return []
    return rules.load_rules(names if isinstance(names, str) else list(names))


def _seed_count(seeds: Any) -> int:
    if isinstance(seeds, bool) or not isinstance(seeds, int) or not 1 <= seeds <= MAX_SEEDS:
        raise PowerModelError(
            f"seeds must be a whole number from 1 to {MAX_SEEDS:,}, got {shorten(seeds)}: a P95 "
            "is steady after a few tens of seeds"
        )
    return seeds


def _points(
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]],
) -> tuple[list[str], list[dict[str, Any]], dict[str, list[Any]]]:
    """Keys, each point's overrides and each key's values: per dimension for a grid, per point
    (None where a point leaves the key out) for explicit points."""
    if isinstance(grid, Mapping):
        keys = [str(k) for k in grid]
        if not keys:
            raise PowerModelError(
                "the grid is empty: give each swept key a list of values, e.g. "
                '"cluster.n_gpus" = [8192, 16384]'
            )
        if len(keys) > MAX_KEYS:
            raise PowerModelError(
                f"the grid sweeps {len(keys)} keys, more than {MAX_KEYS} (each is a dimension): "
                "sweep fewer, or list the points you want under [[points]]"
            )
        values = [_values(k, grid[k]) for k in keys]
        count = math.prod(len(v) for v in values)
        if count > MAX_RUNS:
            raise PowerModelError(
                f"the grid has {count:,} points, more than {MAX_RUNS:,} runs: sweep fewer values"
            )
        for value in values[keys.index(EXTENDS)] if EXTENDS in keys else ():
            _check_extends(value, "the grid")
        points = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
        return keys, points, dict(zip(keys, values, strict=True))
    if isinstance(grid, str | bytes) or not isinstance(grid, Sequence):
        raise PowerModelError(
            f"a sweep's grid is a table of key = [values] or a list of points, got {shorten(grid)}"
        )
    if not grid:
        raise PowerModelError("no points: give at least one table under [[points]]")
    if len(grid) > MAX_RUNS:
        raise PowerModelError(f"{len(grid):,} points, more than {MAX_RUNS:,} runs: list fewer")
    points = []
    for n, point in enumerate(grid, start=1):
        if not isinstance(point, Mapping):
            raise PowerModelError(f"point {n} is not a table of key = value: {shorten(point)}")
        points.append(_overrides(point, f"point {n}"))
        if EXTENDS in point:
            _check_extends(point[EXTENDS], f"point {n}")
    keys = list(dict.fromkeys(k for p in points for k in p))
    if len(keys) > MAX_OVERRIDES:
        raise PowerModelError(f"the points set {len(keys)} keys, more than {MAX_OVERRIDES}")
    return keys, points, {k: [p.get(k) for p in points] for k in keys}


def _values(key: str, values: Any) -> list[Any]:
    if isinstance(values, str | bytes | Mapping) or not isinstance(values, Sequence):
        raise PowerModelError(
            f"grid key {key!r}: give a list of values, e.g. {key} = [{shorten(values)}]"
        )
    if not values:
        raise PowerModelError(f"grid key {key!r} has no values: give at least one")
    if len(values) > MAX_RUNS:
        raise PowerModelError(
            f"grid key {key!r} has {len(values):,} values, more than {MAX_RUNS:,} runs"
        )
    seen: set[str] = set()
    for value in values:
        text = _json(value)
        if text in seen:
            raise PowerModelError(
                f"grid key {key!r} lists {shorten(value)} twice: give each value once (a "
                "coordinate indexes one point)"
            )
        seen.add(text)
    return list(values)


def _overrides(table: Mapping[str, Any], label: str) -> dict[str, Any]:
    if len(table) > MAX_OVERRIDES:
        raise PowerModelError(f"{label} sets {len(table):,} keys, more than {MAX_OVERRIDES}")
    return {str(k): v for k, v in table.items()}


def _check_key(key: str) -> None:
    """Refuse a key that is no scenario key (nor a table of them, nor ``extends``)."""
    if key == EXTENDS:
        return
    known = _known_keys()
    generic = ".".join("N" if part.isdigit() else part for part in key.split("."))
    if generic in known or any(k.startswith(generic + ".") for k in known):
        return
    near = difflib.get_close_matches(generic, known, n=1)
    hint = f"; did you mean {near[0].replace('.N.', '.0.')!r}?" if near else ""
    raise ScenarioError(
        f"unknown scenario key {shorten(key)}{hint} (`powermodel keys` lists them; "
        f"{EXTENDS!r} swaps the base)"
    )


@lru_cache(maxsize=1)
def _known_keys() -> list[str]:
    return [k.key for k in scenario_keys()]


def _interval(series: str) -> float:
    try:
        seconds = parse_duration(series)
    except (TypeError, ValueError) as exc:
        raise PowerModelError(f'series {shorten(series)}: {exc}; e.g. series = "1min"') from None
    if seconds <= 0:
        raise PowerModelError(f'series {shorten(series)}: give a positive step, e.g. "1min"')
    return seconds


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


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _default_workers(runs: list[Scenario], per_run: int) -> int:
    """None (in turn) when the runs together take fewer than :data:`MIN_CLUSTER_STEPS` steps;
    else as many workers as there are cores, as the memory holds and as there are runs, none
    when that is one."""
    if sum(s.simulation.n_steps for s in runs) < MIN_CLUSTER_STEPS:
        return 0
    fit = available_memory() // per_run if per_run else len(runs)
    count = min(_cores(), len(runs), max(int(fit), 1))
    return count if count > 1 else 0


def check_workers(workers: int) -> int:
    """``workers`` for a ``LocalCluster`` on this machine: 0 (in turn) to its cores."""
    cores = _cores()
    if isinstance(workers, bool) or not isinstance(workers, int) or not 0 <= workers <= cores:
        raise PowerModelError(
            f"--workers must be 0 (in turn) to {cores} (this machine's cores), got "
            f"{shorten(workers)}: for more, start a dask cluster and give --scheduler"
        )
    return workers


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


def run_all(
    function: Callable[[Any], Any],
    items: Sequence[Any],
    *,
    workers: int = 0,
    scheduler: str | None = None,
    client: Any = None,
    progress: bool = False,
    keep_going: bool = False,
    memory: int = 0,
    label: str = "runs",
) -> list[Any]:
    """``[function(item) for item in items]``, in turn or on dask.distributed, in items' order.

    Parameters
    ----------
    function, items
        A function importable by name (a worker imports it) and what to call it on.
    workers
        0: in turn in this process (dask.distributed is not imported); else a
        ``LocalCluster`` of this many single-threaded processes, started and closed here.
    scheduler
        Address of a running dask scheduler to run on instead.
    client
        A ``dask.distributed.Client`` to run on instead.
    progress
        A progress bar on stderr.
    keep_going
        A call that raises gives a :class:`Failure` in its place; else the first raises here
        (the others are cancelled).
    memory
        Peak memory of one call [B]: refused before any call when the workers' calls at once
        would not fit (this machine's memory, or each remote worker's limit).
    label
        The progress bar's label.
    """
    with (
        _bar(len(items), progress, label) as bar,
        cluster(workers, scheduler, client, memory) as connected,
    ):
        if connected is None:
            return [_counted(_call(function, item, keep_going), bar) for item in items]
        return _on_dask(connected, function, items, keep_going, bar)


def _bar(total: int, progress: bool, label: str) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, disable=not progress, file=sys.stderr, desc=label, unit="run")


def _call(function: Callable[[Any], Any], item: Any, keep_going: bool) -> Any:
    """``function(item)``; with ``keep_going`` a :class:`Failure` where it raises."""
    try:
        return function(item)
    except Exception as exc:
        if not keep_going:
            raise
        return _failure(exc)


def _counted(result: Any, bar: Any) -> Any:
    bar.update()
    return result


def _failure(exc: BaseException) -> Failure:
    if _worker_lost(exc):  # dask's text: half a page
        return Failure(
            "the worker died running it (its process exited or was killed, most often for "
            "memory: a nanny stops a worker over 95 % of its limit), and dask gave it up"
        )
    return Failure(f"worker failed: {type(exc).__name__}: {exc}")


@contextmanager
def cluster(
    workers: int = 0,
    scheduler: str | None = None,
    client: Any = None,
    memory: int = 0,
) -> Iterator[Any]:
    """The dask client that :func:`run_all` maps on, as its arguments say (None: in turn);
    a ``LocalCluster`` started here is closed on leaving. Checked before any run: workers
    there, powermodel's version on them, memory for ``memory`` bytes a run on each."""
    if client is not None:
        _check_cluster(client, memory)
        yield client
        return
    check_placement(workers or None, scheduler)
    if scheduler is None:
        free = available_memory()
        if workers * memory > free:
            raise PowerModelError(
                f"{workers} workers x {memory / 1e9:.2f} GB a run need more than the "
                f"{free / 1e9:.1f} GB available: use at most {max(free // max(memory, 1), 1)} "
                "workers, or make the runs smaller (lengthen simulation.dt or shorten "
                "simulation.duration)"
            )
        if workers == 0:
            yield None
            return
    with _frozen():
        yield from _on_cluster(workers, scheduler, memory)


def _on_cluster(workers: int, scheduler: str | None, memory: int) -> Iterator[Any]:
    """:func:`cluster`'s dask client, a ``LocalCluster`` of ``workers`` or the scheduler's."""
    import dask
    from dask.distributed import Client, LocalCluster

    if scheduler is None:
        # Workers start without dask's MALLOC_TRIM_THRESHOLD_: setting it fixes glibc's mmap
        # threshold, so every large temporary of a run is fresh pages and the runs take 1.6
        # times as long as in this process (measured here on 7 days at 1 min)
        environ = dask.config.get("distributed.nanny.pre-spawn-environ", {})
        environ = {k: v for k, v in environ.items() if k != "MALLOC_TRIM_THRESHOLD_"}
        with (
            dask.config.set(
                {
                    "distributed.nanny.pre-spawn-environ": environ,
                    "distributed.worker.multiprocessing-method": _start_method(),
                    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
                    "distributed.scheduler.worker-saturation": WORKER_SATURATION,
                    # a cluster with no dashboard: the workers' statistical profiler (a sample
                    # of the running task's stack every 10 ms) and the event loops' 20-ms
                    # watchdog tick only take the runs' time (256 week-long runs on 2 workers,
                    # measured here side by side: 3.26 -> 3.09 s and 3.14 s apart, 3.01 both)
                    "distributed.worker.profile.enabled": False,
                    "distributed.admin.tick.interval": TICK,
                }
            ),
            LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
            ) as local_cluster,
            Client(local_cluster) as local,
        ):
            yield local
        return
    address = check_scheduler(scheduler)
    _probe(address)
    try:
        with dask.config.set({"distributed.comm.timeouts.connect": CONNECT_TIMEOUT}):
            remote = Client(address, timeout=CONNECT_TIMEOUT)
    except Exception as exc:  # noqa: BLE001  dask's many ways to fail: one line
        raise _unreachable(address, f"{type(exc).__name__}: {exc}") from None
    with remote:
        _check_cluster(remote, memory)
        yield remote


@contextmanager
def _frozen() -> Iterator[None]:
    """This process's objects left out of garbage collection from before dask.distributed is
    imported until its cluster closes (Python's advice for forking without exec,
    :func:`gc.freeze`). A local cluster's workers fork from this process: their full
    collections otherwise walked every object they inherited, 100 ms each and their pages
    copied, and week-long runs took 1.13 times as long on average. The import itself, whose
    collections walked every object alive here, takes 0.18 s, not 0.25. A caller that froze
    objects itself keeps them, and these, frozen."""
    already = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not already:
            gc.unfreeze()


def _start_method() -> str:
    """How a local cluster starts its workers: forked from this process on Linux, so that each
    begins with numpy, xarray, scipy and powermodel imported and this process's caches (a worker
    started afresh spends seconds importing them, as long as a hundred week-long runs); started
    afresh elsewhere (macOS's system libraries are not safe to fork, Windows cannot).

    The fork is safe here: the threads this process has besides the forking one are dask's
    (its event loop and queue watchers) and the numerical libraries' pools; the child runs none
    of their code but its own new event loop, and CPython re-creates in it the locks it takes
    (imports, logging, multiprocessing queues), as glibc does malloc's and OpenBLAS its pool.
    """
    return "fork" if sys.platform == "linux" else "spawn"


def check_scheduler(scheduler: str) -> str:
    """A dask scheduler's address as ``tcp://host:port`` (a bare ``host:port`` is TCP),
    checked without connecting: TLS, UCX and in-process addresses need a set-up a sweep does not
    make (certificates, a UCX build, this process's own scheduler), so they are refused."""
    example = "give the scheduler's address as tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786"
    if not isinstance(scheduler, str) or not 0 < len(scheduler) <= 1000 or "\n" in scheduler:
        raise PowerModelError(f"scheduler {shorten(scheduler)}: {example}")
    scheme, sep, rest = scheduler.strip().rpartition("://")
    if sep and scheme.lower() != "tcp":
        raise PowerModelError(
            f"scheduler {shorten(scheduler)}: {scheme or 'no'} protocol: a sweep connects over "
            f"plain TCP only (tls, ucx and inproc need set-up it does not make): {example}"
        )
    host, colon, port = rest.rpartition(":")
    bracketed = host.startswith("[") == host.endswith("]")
    if not colon or not host.strip("[]") or not bracketed or not port.isdigit():
        raise PowerModelError(f"scheduler {shorten(scheduler)}: no host and port: {example}")
    if not 0 < int(port) < 65536:
        raise PowerModelError(
            f"scheduler {shorten(scheduler)}: port {port} is not 1 to 65535: {example}"
        )
    return f"tcp://{host}:{int(port)}"


def _probe(address: str) -> None:
    """Ask the scheduler who it is, all within :data:`CONNECT_TIMEOUT`: a port that accepts
    connections but does not speak dask (a web server, a silent socket) would otherwise hold
    the client's start-up forever."""
    import asyncio

    from distributed.comm import connect

    async def identity() -> Any:
        comm = await connect(address, timeout=CONNECT_TIMEOUT)
        try:
            await comm.write({"op": "identity"})
            return await comm.read()
        finally:
            comm.abort()

    def ask() -> Any:  # in a thread of its own: the caller may be in an event loop (Jupyter)
        return asyncio.run(asyncio.wait_for(identity(), CONNECT_TIMEOUT))

    try:
        with ThreadPoolExecutor(1) as pool:
            reply = pool.submit(ask).result()
    except TimeoutError:
        raise _unreachable(address, f"no dask answer within {CONNECT_TIMEOUT:g} s") from None
    except Exception as exc:  # noqa: BLE001  refused, reset, garbage: one line
        raise _unreachable(address, f"{type(exc).__name__}: {exc}") from None
    if not isinstance(reply, dict) or reply.get("type") != "Scheduler":
        raise _unreachable(address, f"it answered as {shorten(reply, 40)}, not as a scheduler")


def _unreachable(address: str, why: str) -> PowerModelError:
    why = " ".join(why.split())[:120]
    return PowerModelError(
        f"cannot reach the dask scheduler at {address} ({why}): start one (`dask scheduler`), "
        "or give the address it prints (tcp://HOST:PORT)"
    )


def _check_cluster(client: Any, memory: int) -> None:
    try:
        client.wait_for_workers(1, timeout=WORKER_WAIT)
    except TimeoutError:
        raise PowerModelError(
            f"the dask scheduler has had no worker for {WORKER_WAIT:.0f} s: start workers "
            "(`dask worker ADDRESS`) before the sweep"
        ) from None
    try:
        versions = client.run(_worker_version)
    except Exception as exc:
        raise PowerModelError(
            f"the dask workers cannot run powermodel ({type(exc).__name__}: {exc}): install "
            f"powermodel {__version__} on them"
        ) from None
    other = {v for v in versions.values() if v != __version__}
    if other:
        raise PowerModelError(
            f"the dask workers run powermodel {', '.join(sorted(other))}, this is {__version__}: "
            "install the same version on them, so that runs give the same results"
        )
    limits = [
        (w.get("memory_limit") or 0) / max(w.get("nthreads") or 1, 1)
        for w in client.scheduler_info()["workers"].values()
    ]
    if memory and all(0 < limit < memory for limit in limits):
        raise PowerModelError(
            f"a run needs about {memory / 1e9:.2f} GB, more than any dask worker's memory limit "
            f"({max(limits) / 1e9:.2f} GB a thread): give the workers more memory, or make the "
            "runs smaller (lengthen simulation.dt or shorten simulation.duration)"
        )


def _worker_version() -> str:
    return __version__


def _on_dask(
    client: Any, function: Callable[[Any], Any], items: Sequence[Any], keep_going: bool, bar: Any
) -> list[Any]:
    """The items mapped on the cluster in chunks (:func:`_spans`): a task costs the scheduler
    and this process milliseconds, as much as a short run. A chunk whose worker died (a run
    that exhausted its memory or crashed the process) is mapped again an item a task, so that
    only the item that kills its worker is recorded as failed."""
    from dask.distributed import as_completed

    spans = _spans(len(items), threads(client))
    chunks = [list(items[start:stop]) for start, stop in spans]
    futures = client.map(_chunk, chunks, function=function, keep_going=keep_going, pure=False)
    where = {f.key: span for span, f in zip(spans, futures, strict=True)}
    pending = as_completed(futures)
    out: list[Any] = [None] * len(items)
    try:
        for future in pending:
            start, stop = where.pop(future.key)
            try:
                out[start:stop] = future.result()
            except Exception as exc:
                if not keep_going:
                    raise
                if _worker_lost(exc) and stop - start > 1:
                    alone = client.map(
                        _chunk,
                        [[item] for item in items[start:stop]],
                        function=function,
                        keep_going=keep_going,
                        pure=False,
                    )
                    for i, single in zip(range(start, stop), alone, strict=True):
                        where[single.key] = (i, i + 1)
                        pending.add(single)
                    continue
                out[start:stop] = [_failure(exc)] * (stop - start)
            bar.update(stop - start)
    finally:
        client.cancel(list(pending.futures))
    return out


def _worker_lost(exc: BaseException) -> bool:
    """Whether a task failed because its worker died (dask gave it up after
    :data:`ALLOWED_FAILURES` deaths), not because its function raised: by the names of
    dask.distributed's exceptions, which a call in turn does not import."""
    return type(exc).__name__ in ("KilledWorker", "CommClosedError")


def threads(client: Any) -> int:
    """Runs a dask cluster does at once: its workers' threads."""
    return max(sum(client.nthreads().values()), 1)


def _spans(count: int, threads: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of each chunk of ``count`` items for ``threads`` worker threads: each
    a share of those left (:data:`CHUNKS_PER_THREAD` a thread, at most :data:`MAX_CHUNK`
    items, which a worker's death loses together), so chunks shrink to one item at
    the end and the threads finish together (equal chunks leave all but one thread idle for up
    to a chunk's time at the end, with a few tens of runs a chunk about a second)."""
    spans, start = [], 0
    while start < count:
        share = math.ceil((count - start) / (threads * CHUNKS_PER_THREAD))
        stop = start + min(max(1, share), MAX_CHUNK)
        spans.append((start, min(stop, count)))
        start = stop
    return spans


def _chunk(items: list[Any], function: Callable[[Any], Any], keep_going: bool) -> list[Any]:
    """A chunk's items in turn, on a worker."""
    return [_call(function, item, keep_going) for item in items]


def _gather(
    results: list[list[dict[str, Any]]],
    keys: list[str],
    coords: dict[str, list[Any]],
    rule_list: Sequence[rules.Rule],
    series: str | None,
    is_grid: bool,
) -> xr.Dataset:
    """Every run's outcome (in point, seed order) as one Dataset."""
    n_points, seeds = len(results), len(results[0]) if results else 0
    flat = [r for point in results for r in point]
    dims = [*(keys if is_grid else ["point"]), "seed"]
    shape = (*(len(coords[k]) for k in keys), seeds) if is_grid else (n_points, seeds)
    names = list(dict.fromkeys(k for r in flat for k in r.get("metrics", {})))
    data: dict[str, Any] = {}
    for name in names:
        values = np.array([r.get("metrics", {}).get(name, np.nan) for r in flat])
        data[name] = (dims, values.reshape(shape), {"units": _unit(name)})
    seeds_run = np.array([r.get("seed", -1) for r in flat], dtype=np.int64)
    data["simulation_seed"] = (dims, seeds_run.reshape(shape), {"units": "1"})
    data["error"] = (
        dims,
        np.array([r["error"] if "error" in r else "" for r in flat], dtype=str).reshape(shape),
    )
    data["not_measured"] = (
        dims,
        np.array([r.get("not_measured", "") for r in flat], dtype=str).reshape(shape),
        {"description": "the run's metrics that are NaN and why: 'key: why; key: why'"},
    )
    if rule_list:
        data.update(_rule_variables(flat, rule_list, dims, shape))
    coords_out: dict[str, Any] = {"seed": np.arange(seeds)}
    if series is not None:
        data["grid_power"] = _series_variable(flat, dims, shape, series)
        step = np.timedelta64(round(_interval(series) * 1e9), "ns")
        coords_out["elapsed"] = np.arange(data["grid_power"][1].shape[-1]) * step
    ds = xr.Dataset(data, coords=coords_out)
    if is_grid:
        ds = ds.assign_coords({k: _coordinate(coords[k]) for k in keys})
    else:
        ds = ds.assign_coords(
            point=np.arange(n_points), **{k: ("point", _coordinate(coords[k])) for k in keys}
        )
    if rule_list:
        ds = ds.assign_coords(
            rule=[r.name for r in rule_list], rule_unit=("rule", [r.unit for r in rule_list])
        )
    return ds


def _rule_variables(
    flat: list[dict[str, Any]], rule_list: Sequence[rules.Rule], dims: list[str], shape: tuple
) -> dict[str, tuple]:
    def field_of(name: str, missing: Any) -> np.ndarray:
        return np.array(
            [
                [r.get("rules", {}).get(rule.name, {}).get(name, missing) for rule in rule_list]
                for r in flat
            ]
        ).reshape(*shape, len(rule_list))

    ruled = [*dims, "rule"]
    return {
        "rule_passed": (ruled, field_of("passed", np.nan), {"units": "1"}),
        "rule_worst": (ruled, field_of("worst", np.nan), IN_RULE_UNIT),
        "rule_limit": (ruled, field_of("limit", np.nan), IN_RULE_UNIT),
        "rule_violations_per_day": (
            ruled,
            field_of("violations_per_day", np.nan),
            {"units": "1/d"},
        ),
        "rule_resolved_to": (
            ruled,
            field_of("resolved_to", np.nan),
            {
                "units": "Hz",
                "description": "the run's step cut the rule's band here: a pass is not proven "
                "above it (NaN: the band is resolved)",
            },
        ),
        "rule_refused": (ruled, field_of("refused", "").astype(str), {}),
    }


def _series_variable(
    flat: list[dict[str, Any]], dims: list[str], shape: tuple, series: str
) -> tuple:
    """Each run's ``grid_power`` series on ``elapsed``, NaN past a shorter run's end."""
    length = max((len(r["series"]) for r in flat if "series" in r), default=0)
    values = np.full((len(flat), length), np.nan)
    for row, r in zip(values, flat, strict=True):
        if "series" in r:
            row[: len(r["series"])] = r["series"]
    attrs = {**variable_attrs("grid_power"), "cell_methods": f"elapsed: mean (interval: {series})"}
    return [*dims, "elapsed"], values.reshape(*shape, length), attrs


def _unit(name: str) -> str:
    return next((unit for end, unit in _UNITS if name.endswith(end)), "1")


def _coordinate(values: list[Any]) -> np.ndarray:
    """A key's values as a coordinate: numbers or booleans as such, the rest as text (``""``
    where a point leaves the key out)."""
    present = [v for v in values if v is not None]
    missing = len(present) < len(values)
    if present and all(isinstance(v, bool) for v in present) and not missing:
        return np.array(values, dtype=bool)
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        if not missing:
            return np.array(values, dtype=np.int64)
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return np.array([np.nan if v is None else float(v) for v in values])
    return np.array(
        ["" if v is None else v if isinstance(v, str) else _json(v) for v in values], dtype=str
    )


def _json(value: Any) -> str:
    return json.dumps(value, default=str)


def read_sweep(path: str | Path) -> SweepFile:
    """A sweep file: ``base``, ``seeds``, ``rules``, ``registered_demand``, ``series``, a
    ``[set]`` table of fixed overrides and either a ``[grid]`` table (key = [values]) or
    ``[[points]]`` tables. Paths in it (``base``, ``extends``, ``site.weather``, rule files in
    ``rules``) are relative to the file's folder.

    Raises
    ------
    PowerModelError
        With one line: a file that is missing, too large, not TOML; an unknown key or one of
        the wrong type; no grid or points, or both.
    """
    path = Path(path)
    raw = parse_toml(_read_text(path), str(path))
    unknown = [str(k) for k in raw if k not in FILE_KEYS]
    if unknown:
        near = difflib.get_close_matches(unknown[0], FILE_KEYS, n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise PowerModelError(
            f"{path}: unknown key {shorten(unknown[0])}{hint}; a sweep file has "
            f"{', '.join(FILE_KEYS)} (a scenario key goes under [set], [grid] or [[points]])"
        )
    if ("grid" in raw) == ("points" in raw):
        raise PowerModelError(
            f"{path}: give the swept keys as a [grid] table (every combination) or as "
            "[[points]] tables (these points), one of the two"
        )
    folder = path.resolve().parent
    base = _typed(raw, "base", str, path)
    if base is None or not base.strip():
        raise PowerModelError(f'{path}: no base: name the scenario to sweep, base = "PRESET"')
    overrides = _located(_flat(_typed(raw, "set", dict, path) or {}, "[set]", path), folder)
    if "grid" in raw:
        table = _flat(_typed(raw, "grid", dict, path), "[grid]", path)
        grid: Any = {k: _located_values(k, v, folder) for k, v in table.items()}
    else:
        listed = _typed(raw, "points", list, path)
        if len(listed) > MAX_RUNS:
            raise PowerModelError(f"{path}: {len(listed):,} points, more than {MAX_RUNS:,}")
        if not all(isinstance(p, dict) for p in listed):
            raise PowerModelError(f"{path}: each of [[points]] is a table of key = value")
        grid = [_located(_flat(p, f"point {n}", path), folder) for n, p in enumerate(listed, 1)]
    rule_names = raw.get("rules")
    if rule_names is not None and not (
        isinstance(rule_names, str)
        or (isinstance(rule_names, list) and all(isinstance(n, str) for n in rule_names))
    ):
        raise PowerModelError(f'{path}: rules is a list of rule names, e.g. ["ercot-5s"]')
    demand = _typed(raw, "registered_demand", int | float, path)
    if demand is not None and (isinstance(demand, bool) or not 0 < demand < math.inf):
        raise PowerModelError(f"{path}: registered_demand is a positive number of MW")
    return SweepFile(
        base=_located_base(base, folder),
        grid=grid,
        seeds=_seed_count(raw.get("seeds", 1)),
        overrides=overrides,
        rules=[_located_rule(n, folder) for n in _listed(rule_names)],
        registered_demand=None if demand is None else float(demand),
        series=_typed(raw, "series", str, path),
    )


def _read_text(path: Path) -> str:
    return read_text(path, "sweep file", PowerModelError, MAX_FILE_BYTES)


def _typed(raw: dict[str, Any], key: str, kind: Any, path: Path) -> Any:
    value = raw.get(key)
    if value is not None and not isinstance(value, kind):
        names = {str: "text", dict: "a table", list: "a list of tables"}
        raise PowerModelError(
            f"{path}: {key} must be {names.get(kind, 'a number')}, got {shorten(value)}"
        )
    return value


def _flat(table: dict[str, Any], label: str, path: Path) -> dict[str, Any]:
    """A table's nested tables as dotted keys, in the file's order (``cluster.n_gpus = …``
    nests in TOML). The nesting is bounded by :func:`parse_toml`."""
    out: dict[str, Any] = {}

    def walk(prefix: str, node: dict[str, Any]) -> None:
        for key, value in node.items():
            if isinstance(value, dict) and value:
                walk(f"{prefix}{key}.", value)
            else:
                out[f"{prefix}{key}"] = value
            if len(out) > MAX_OVERRIDES:
                raise PowerModelError(f"{path}: {label} sets more than {MAX_OVERRIDES} keys")

    walk("", table)
    return out


def _listed(names: str | list[str] | None) -> list[str]:
    """Rule names as a list: ``"ieso-1min, mine.toml"`` is two, as ``--rules`` takes them."""
    if isinstance(names, str):
        names = names.split(",")
    return [n.strip() for n in names or [] if n.strip()]


def _located_rule(name: str, folder: Path) -> str:
    """A shipped rule or group name as it is; a rule file relative to ``folder``."""
    if name in rules.rule_names():
        return name
    path = folder / Path(name).expanduser()
    if name.endswith(".toml") or len(Path(name).parts) > 1 or path.is_file():
        return str(path)
    return name


def _located_base(name: str, folder: Path) -> str:
    """A preset name as it is; a scenario file relative to ``folder``."""
    if name in presets() or not (name.endswith(".toml") or len(Path(name).parts) > 1):
        return name
    return str(folder / Path(name).expanduser())


def _located_value(key: str, value: Any, folder: Path) -> Any:
    if isinstance(value, str) and key == EXTENDS:
        return _located_base(value, folder)
    if isinstance(value, str) and key == "site.weather" and names_a_file(value):
        return str(folder / Path(value).expanduser())
    return value


def _located(table: dict[str, Any], folder: Path) -> dict[str, Any]:
    return {k: _located_value(k, v, folder) for k, v in table.items()}


def _located_values(key: str, values: Any, folder: Path) -> Any:
    if not isinstance(values, list):
        return values  # refused by sweep with the key's name
    return [_located_value(key, v, folder) for v in values]


def check_output(path: str | Path) -> Path:
    """The results file, checked before any run: its extension (``.nc`` or ``.csv``, in any
    case) names a format :func:`write` writes, and a file can be made there
    (:func:`powermodel.output.check_folder`)."""
    path = Path(path)
    if path.suffix.lower() not in (".nc", ".csv"):
        raise PowerModelError(
            f"cannot write {str(path)!r}: unknown extension {path.suffix!r}; use .nc (NetCDF) "
            "or .csv (one row per run)"
        )
    return check_folder(path)


def dropped_series(ds: xr.Dataset, path: str | Path) -> str:
    """The note :func:`write` gives for ``path``: a CSV holds one row per run, so a sweep's
    ``series`` are not in it (``""`` where nothing is dropped)."""
    series = ds.attrs.get("series") or ""
    if not series or Path(path).suffix.lower() != ".csv":
        return ""
    return (
        f"note: {Path(path).name} holds one row per run: the runs' grid_power series "
        f'(series = "{series}") are not in it; write .nc to keep them'
    )


def write(ds: xr.Dataset, path: str | Path) -> Path:
    """A sweep's results to ``path``: ``.nc`` the Dataset, ``.csv`` :func:`table` (one row
    per run: a sweep's ``series`` are dropped, which :func:`dropped_series` says). Written
    whole or not at all (:func:`powermodel.output.staged`): a failed write leaves no partial
    file and an earlier file whole."""
    path = check_output(path)
    with staged(path) as temporary:
        if path.suffix.lower() == ".nc":
            netcdf(ds, temporary, engine="netcdf4")
        else:
            table(ds).to_csv(temporary, index=False)
    return path


def _key_columns(ds: xr.Dataset) -> list[str]:
    """The swept keys: the dimensions before ``seed``, or the coordinates on ``point``."""
    dims = [d for d in ds["error"].dims if d != "seed"]
    if dims == ["point"]:
        return ["point", *(c for c in ds.coords if ds[c].dims == ("point",) and c != "point")]
    return dims


def table(ds: xr.Dataset) -> pd.DataFrame:
    """One row per run: the swept keys, ``seed``, ``simulation_seed``, ``error``, the metrics,
    and for each rule ``<rule> passed``, ``worst [unit]``, ``limit [unit]``, ``violations/day``,
    ``resolved to [Hz]`` (where the run's step cut the rule's band: a pass is not proven above
    it; empty where the band is resolved) and ``refused``."""
    per_run = [
        n for n, v in ds.data_vars.items() if "rule" not in v.dims and "elapsed" not in v.dims
    ]
    wide = ds[per_run]
    if "rule" in ds.dims:
        for name, unit in zip(ds["rule"].values, ds["rule_unit"].values, strict=True):
            columns = {
                "passed": "passed",
                "worst": f"worst [{unit}]",
                "limit": f"limit [{unit}]",
                "violations_per_day": "violations/day",
                "resolved_to": "resolved to [Hz]",
                "refused": "refused",
            }
            for field_name, column in columns.items():
                if f"rule_{field_name}" not in ds:
                    continue  # results written before the variable was
                picked = ds[f"rule_{field_name}"].sel(rule=name).reset_coords(drop=True)
                wide[f"{name} {column}"] = picked
    frame = wide.to_dataframe().reset_index()
    first = [*_key_columns(ds), "seed"]
    return frame[[*first, *(c for c in frame.columns if c not in first)]]


def _failing(passed: pd.Series) -> str:
    """Runs failing a rule of those it judged: ``1/4``, or ``no verdict``."""
    judged = int(passed.notna().sum())
    return f"{int((passed == 0).sum())}/{judged}" if judged else "no verdict"


def summary(ds: xr.Dataset, width: int = 60) -> pd.DataFrame:
    """One row per point: its keys, the runs that ran (of the seeds), the median over seeds of
    the headline metrics, the runs failing each rule (of those it judged; ``*`` where a run
    passed a band its step cut), and the first error (cut to ``width`` characters).

    The returned frame's ``attrs["notes"]`` holds one line per starred rule: the frequency its
    band was cut at, above which a pass is not proven."""
    keys = _key_columns(ds)
    frame = table(ds)
    groups = frame.groupby(keys, sort=False, dropna=False)
    out = groups.size().reset_index()[keys]
    runs = groups["error"].agg(lambda e: f"{int((e == '').sum())}/{len(e)}")
    out["ran"] = runs.values
    for name in SUMMARY:
        if name in frame:
            out[f"{name} p50"] = groups[name].median().values
    notes = []
    for name in ds["rule"].values if "rule" in ds.dims else ():
        failing = groups[f"{name} passed"].agg(_failing).values
        cut = f"{name} resolved to [Hz]"
        if cut in frame:
            # a pass where the band was cut is a lower bound: starred, the cut in a note
            cut_pass = frame[cut].where(frame[f"{name} passed"] == 1)
            starred = cut_pass.groupby([frame[k] for k in keys], sort=False, dropna=False).count()
            failing = [f"{f}*" if n else f for f, n in zip(failing, starred.values, strict=True)]
            if cut_pass.notna().any():
                low, high = cut_pass.min(), cut_pass.max()
                at = f"{low:g} Hz" if low == high else f"{low:g}-{high:g} Hz"
                notes.append(
                    f"* {name}: the runs' step cut its band at {at}: a pass is not proven "
                    "above that"
                )
        out[f"{name} failing"] = failing
    out["error"] = (
        groups["error"]
        .agg(lambda e: next((t if len(t) <= width else t[: width - 1] + "…" for t in e if t), ""))
        .values
    )
    out.attrs["notes"] = notes + not_measured_notes(ds, SUMMARY)
    return out


def not_measured_notes(ds: xr.Dataset, names: Sequence[str] | None = None) -> list[str]:
    """One line per metric of ``names`` (all by default) that a run which ran did not measure,
    with why and in how many runs, from the ``not_measured`` variable: ``grid_swing_5s_mw: not
    measured in 24 runs: not resolved at a 10s step (needs dt <= 2.5s)``."""
    if "not_measured" not in ds:
        return []  # results written before the variable was
    ran = ds["error"].values.ravel() == ""
    counts: dict[tuple[str, str], int] = {}
    for cell in ds["not_measured"].values.ravel()[ran]:
        for item in str(cell).split("; ") if cell else ():
            key, _, why = item.partition(": ")
            if names is None or key in names:
                counts[(key, why)] = counts.get((key, why), 0) + 1
    return [
        f"{key}: not measured in {count:,} run{'s' * (count != 1)}: {why}"
        for (key, why), count in counts.items()
    ]


# --- reading a results file back (the dashboard's sweep view) ---------------------------------

MAX_RESULT_CELLS = 4_000_000  # values of one results file read back (32 MB as float64)
MAX_LINES = 12  # lines of one band figure: the other keys' combinations
QUANTILES = {"p5": 0.05, "p50": 0.5, "p95": 0.95}  # over the seeds whose run gave a value
# dimensions a sweep's results may have besides the swept keys (dotted scenario keys, extends)
RESULT_DIMS = {"seed", "point", "rule", "elapsed", EXTENDS}
NOT_RESULTS = "give the results of `powermodel sweep -o results.nc`"


def open_results(path: str | Path, label: str | None = None) -> xr.Dataset:
    """A sweep's results, as :func:`write` saved them to NetCDF, checked and read whole
    (:func:`powermodel.iotools.netcdf.open_netcdf`: a file from anyone).

    Parameters
    ----------
    path
        The NetCDF file.
    label
        The name to give the file in messages (an upload's own name); its path by default.

    Raises
    ------
    DataFileError
        Not a NetCDF file; one that would have HDF5 read another file (external storage, an
        external or soft link, a virtual dataset) or a filter's plugin; more than
        :data:`MAX_RESULT_CELLS` values, counted from the metadata (every variable's shape, a
        text array's characters included) before anything is read; a variable that cannot be
        decoded; or not a sweep's results: ``error`` is text over ``seed`` (whole numbers) and
        the swept keys (dotted scenario keys, ``extends`` or ``point``), none empty, each key
        with its values once each, each metric a number over the same.
    """
    # imported here: h5py costs every other command 0.1-0.2 s (python -X importtime)
    from powermodel.iotools.netcdf import open_netcdf

    name = label or str(path)
    ds = open_netcdf(
        path,
        name,
        max_values=MAX_RESULT_CELLS,
        fix=NOT_RESULTS,
        smaller="sweep fewer points or seeds, or without --series",
    )
    _check_results(ds, name)
    return ds


def _check_results(ds: xr.Dataset, name: str) -> None:
    """Refuse a Dataset that is not a sweep's results, as :func:`open_results` says."""
    error = ds.variables.get("error")
    runs = error.dims if error is not None else ()
    odd = [d for d in ds.dims if d not in RESULT_DIMS and "." not in str(d)]
    if error is None or "seed" not in runs or error.dtype.kind not in "OU":
        _not_results(name, "its error variable is not text over a seed dimension")
    if odd:
        _not_results(name, f"its dimension {odd[0]!r} is no scenario key")
    for dim in runs:
        if ds.sizes[dim] == 0:
            _not_results(name, f"its dimension {dim!r} is empty: it holds no runs")
        if dim == "point":
            continue  # the points' keys are coordinates on it; a point may repeat a value
        if dim not in ds.indexes:
            _not_results(name, f"its dimension {dim!r} has no values (no coordinate variable)")
        if ds.indexes[dim].has_duplicates:
            _not_results(name, f"its dimension {dim!r} lists a value twice")
    if ds["seed"].dtype.kind not in "iu":
        _not_results(name, "its seeds are not whole numbers")


def _not_results(name: str, why: str) -> None:
    raise DataFileError(f"{name} is not a sweep's results ({why}): {NOT_RESULTS}")


def swept_keys(results: xr.Dataset) -> list[str]:
    """The keys a sweep's results vary: its grid's dimensions, or a list of points' keys."""
    return [k for k in _key_columns(results) if k != "point" or "point" not in results.dims]


def swept_dims(results: xr.Dataset) -> list[str]:
    """The dimensions of one run's place in the sweep, ``seed`` aside."""
    return [d for d in results["error"].dims if d != "seed"]


def measured(results: xr.Dataset) -> list[str]:
    """The numeric results measured once a run (the metrics), which :func:`bands` draws."""
    runs = set(results["error"].dims)
    return [
        str(name)
        for name, v in results.data_vars.items()
        if set(v.dims) == runs and v.dtype.kind in "fiu" and name != "simulation_seed"
    ]


def bands(results: xr.Dataset, metric: str, key: str) -> pd.DataFrame:
    """``metric`` against the swept ``key``: its P5, P50 and P95 over the seeds whose run gave
    it a value, per value of ``key`` and combination of the other swept keys (``line``, their
    values; at most :data:`MAX_LINES`, the rest left out).

    Returns
    -------
    pandas.DataFrame
        ``line``, ``key``'s value (as ``x``), ``p5``, ``p50``, ``p95``, ``runs`` (seeds whose
        run gave a value), ``undefined`` (seeds that ran but whose run has no such value: a
        1-min ramp of a shorter run, a 5-s swing at a 10-s step) and ``failed`` (seeds whose
        run failed, with its ``error``), in the order the sweep lists them.

    Notes
    -----
    Worked on the sweep's places (a run's values of the swept keys, its seed aside), never on
    a table of its runs: each place's line and ``x`` are codes of the keys' values, only the
    runs of the lines drawn are read, and every group's quantiles come from one sort, by the
    linear rule (``numpy.percentile``'s and pandas'). Through ``to_dataframe`` and
    ``groupby().quantile`` a file of 4 M values took 2-50 s and 0.4-0.6 GB (``bench/``).
    """
    if metric not in measured(results):
        raise PowerModelError(f"{metric!r} is not a metric of these results")
    keys = swept_keys(results)
    if key not in keys:
        raise PowerModelError(f"{key!r} is not a key of this sweep; it sweeps {', '.join(keys)}")
    places = {d: results.sizes[d] for d in swept_dims(results)}
    line = np.zeros(math.prod(places.values()), dtype=np.int64)  # every place on one line
    steps = []  # per other key: each line's line before it, and its value's label
    for other in (k for k in keys if k != key):
        codes, labels = _place_codes(results, other, places, text=True)
        line, first = pd.factorize(line * len(labels) + codes)  # numbered as first seen
        steps.append((other, first // len(labels), labels[first % len(labels)]))
    x, values = _place_codes(results, key, places, text=False)
    drawn = line < MAX_LINES
    group, first = pd.factorize(line[drawn] * len(values) + x[drawn])
    runs, shape = [*places, "seed"], (drawn.size, results.sizes["seed"])
    metric_values = results[metric].transpose(*runs).values.reshape(shape)[drawn]
    failed = _failed(results["error"].transpose(*runs).values.reshape(shape)[drawn])
    out = _quantiles(np.where(failed, np.nan, metric_values.astype(float)), failed, group)
    out.insert(0, "x", values[first % len(values)])
    out.insert(0, "line", [_line_name(steps, int(n)) for n in first // len(values)])
    return out


def _place_codes(
    results: xr.Dataset, key: str, places: dict[str, int], text: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Each place's value of a swept key as a code into the values returned (equal values one
    code, NaN one of its own); ``text``: the values as text, equal texts one code."""
    coordinate = results[key].variable  # a grid's dimension, or a coordinate on ``point``
    codes, values = pd.factorize(coordinate.values.ravel(), use_na_sentinel=False)
    if text:
        merged, labels = pd.factorize(pd.Series(values, dtype=object).astype(str))
        codes, values = merged[codes], np.asarray(labels, dtype=object)
    coded = xr.Variable(coordinate.dims, codes.reshape(coordinate.shape))
    return coded.set_dims(places).transpose(*places).values.ravel(), np.asarray(values)


def _line_name(steps: list[tuple[str, np.ndarray, np.ndarray]], line: int) -> str:
    """A line's label, ``key = value`` of each other key, from the codes :func:`bands` made."""
    parts = []
    for other, before, label in reversed(steps):
        parts.append(f"{other} = {label[line]}")
        line = int(before[line])
    return ", ".join(reversed(parts)) or "all points"


def _failed(error: np.ndarray) -> np.ndarray:
    """Which runs failed: those whose error (text) is not empty."""
    return error != ""


def _quantiles(value: np.ndarray, failed: np.ndarray, group: np.ndarray) -> pd.DataFrame:
    """The :data:`QUANTILES` of each group's values (NaN left out; NaN where it has none), its
    ``runs`` (values), ``failed`` and ``undefined`` (neither); ``value`` and ``failed`` hold a
    row of seeds for each place, ``group`` each place's group."""
    count = int(group.max(initial=-1)) + 1
    seeds = value.shape[1]
    of = np.repeat(group, seeds)
    flat = value.ravel()
    order = np.lexsort((flat, of))  # by group, then by value, NaN last
    ranked = np.append(flat[order], np.nan)  # a group without values reads the NaN past the end
    size = np.bincount(of, minlength=count)
    start = np.cumsum(size) - size
    runs = np.bincount(of, weights=~np.isnan(flat), minlength=count).astype(np.int64)
    out = {}
    top = np.maximum(runs - 1, 0)  # the rank of each group's largest value
    for name, q in QUANTILES.items():
        at = q * top
        low = np.floor(at).astype(np.int64)
        below, above = ranked[start + low], ranked[start + np.minimum(low + 1, top)]
        out[name] = np.where(runs > 0, below + (above - below) * (at - low), np.nan)
    out["runs"] = runs
    out["failed"] = np.bincount(of, weights=failed.ravel(), minlength=count).astype(np.int64)
    out["undefined"] = size - runs - out["failed"]
    return pd.DataFrame(out)
