"""A sweep file (``powermodel sweep FILE``) read into what :func:`powermodel.sweep.sweep` takes.

Before the sweep: the TOML's keys, their types and its paths (relative to the file's folder)
are read and checked here; the grid's own checks are :mod:`powermodel.sweep.points`'.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from powermodel import rules
from powermodel.errors import PowerModelError
from powermodel.iotools import read_text
from powermodel.scenario import names_a_file, parse_toml, presets, shorten
from powermodel.sweep.points import EXTENDS, MAX_OVERRIDES, MAX_RUNS, _seed_count

MAX_FILE_BYTES = 1 << 20  # a sweep file: a few hundred lines make the largest useful sweep


FILE_KEYS = ("base", "seeds", "rules", "registered_demand", "series", "set", "grid", "points")


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
