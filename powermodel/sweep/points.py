"""The sweep's grid or points and the keys they set, checked before any scenario loads.

The first stage of a sweep (:func:`powermodel.sweep.sweep`): a ``[grid]`` table becomes every
combination of its values, ``[[points]]`` these points; keys, values, seeds, series and the fixed
overrides are refused here, with one line, before anything is loaded or run.
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from powermodel import rules
from powermodel.errors import PowerModelError, ScenarioError
from powermodel.reference import keys as scenario_keys
from powermodel.scenario import parse_duration, shorten
from powermodel.sensitivity import MAX_SEEDS

MAX_RUNS = 10_000  # runs of one sweep (points times seeds): each is a whole simulation
MAX_KEYS = 16  # swept keys of a grid, each a dimension of the result
MAX_OVERRIDES = 500  # keys of one table of overrides ([set] or a point; a scenario has ~170)


EXTENDS = "extends"  # a swept key that replaces the base: a preset name or a scenario file


SEED = "simulation.seed"  # not swept: seed i of every point is the base's seed + i


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


def _json(value: Any) -> str:
    return json.dumps(value, default=str)
