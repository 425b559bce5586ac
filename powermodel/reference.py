"""Every key of a scenario as a reference, generated from the schema so that it cannot drift:
its type, unit, default, bounds, the source of its default and description. ``powermodel keys
[PREFIX]`` prints it."""

from __future__ import annotations

import re
import typing
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from powermodel.durations import format_duration
from powermodel.errors import ScenarioError
from powermodel.scenario import Scenario, catalogue, is_duration
from powermodel.scenario.catalogues import CATALOGUES
from powermodel.scenario.keys import UNIONS, UNIT, holds_list, table_of, union_members

# The public surface: the dashboard calls only this (tests/test_layers.py checks it)
__all__ = ["Key", "keys", "text"]

# where a default comes from, inside a description: [A] assumed, [P, young; daly], [D, nrel_tmy3]
_SOURCE = re.compile(r"\s*\[((?:[PSDAC])(?:, [^\]]+)?)\]")
_BOUNDS = (
    (annotated_types.Ge, "ge", ">="),
    (annotated_types.Gt, "gt", ">"),
    (annotated_types.Le, "le", "<="),
    (annotated_types.Lt, "lt", "<"),
)


@dataclass(frozen=True)
class Key:
    """One dotted scenario key (a table in a list at index ``N``)."""

    key: str
    kind: str
    unit: str
    default: str
    bounds: str
    source: str  # of the default: "A" (assumed), "P, young; daly" (bibliography keys), …
    description: str


def keys(prefix: str = "") -> list[Key]:
    """The scenario's keys that start with ``prefix``, in the schema's order.

    Raises
    ------
    ScenarioError
        No key starts with ``prefix``.
    """
    found = [_named(k) for k in _walk(Scenario, "") if k.key.startswith(prefix)]
    if not found:
        first = sorted({k.key.split(".")[0] for k in _walk(Scenario, "")})
        raise ScenarioError(
            f"no scenario key starts with {prefix!r}: every key starts with one of "
            f"{', '.join(first)}"
        )
    return found


def _named(key: Key) -> Key:
    """A key naming a catalogue's entry (``cluster.gpu``, ``cooling.plant``, and the section's
    own name field, ``gpu.name``): its description ends with the names the catalogue holds."""
    for section, entry in CATALOGUES.items():
        if key.key in (f"{entry.table}.{entry.key}", f"{section}.{entry.field}"):
            names = ", ".join(catalogue(section))
            return replace(key, description=f"{key.description} One of: {names}.")
    return key


def text(found: list[Key]) -> str:
    """The keys as the terminal shows them: one line each, aligned."""
    rows = [("key", "type", "unit", "default", "bounds", "source", "description")]
    rows += [(k.key, k.kind, k.unit, k.default, k.bounds, k.source, k.description) for k in found]
    widths = [min(max(len(r[i]) for r in rows), 36) for i in range(6)]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(r[:6], widths, strict=True)) + "  " + r[6]
        for r in rows
    )


def _walk(model: type[BaseModel], prefix: str) -> list[Key]:
    out = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{name}"
        members = union_members(field)
        if members:
            out += _union(members, field.discriminator, f"{key}.")
            continue
        table = table_of(field.annotation)
        if table is not None:
            inner = f"{key}.N." if holds_list(field.annotation) else f"{key}."
            out += _walk(table, inner)
            continue
        description = field.description or ""
        unit = UNIT.search(description)
        description = UNIT.sub("", description)
        duration = is_duration(key.replace(".N.", "."))
        out.append(
            Key(
                key=key,
                kind="duration" if duration else _kind(field.annotation),
                unit="" if unit is None or duration else unit[1],  # a duration says its own
                default=_default(field, duration),
                bounds=_bounds(field.metadata, duration),
                source="; ".join(_SOURCE.findall(description)),
                description=_SOURCE.sub("", description),
            )
        )
    return out


def _union(members: dict[str, type[BaseModel]], tag: str, prefix: str) -> list[Key]:
    """The keys of a tagged union's members (the cooling plant types), each once: the tag lists
    every member's; a key only some members take says which."""
    walked = {name: {k.key: k for k in _walk(model, prefix)} for name, model in members.items()}
    out: dict[str, Key] = {}
    for keys in walked.values():
        for key in keys.values():
            having = [name for name, other in walked.items() if key.key in other]
            if key.key == f"{prefix}{tag}":
                key = replace(key, kind="one of " + ", ".join(members))
            elif len(having) < len(walked):
                key = replace(key, description=f"({' or '.join(having)} only) {key.description}")
            out.setdefault(key.key, key)
    return list(out.values())


def _kind(annotation: Any) -> str:
    """A field's type in words: number, integer, text, one of …, a list of …"""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Literal:
        return "one of " + ", ".join(map(str, args))
    if origin in UNIONS:
        kinds = [_kind(a) for a in args if a is not type(None)]
        return " or ".join(dict.fromkeys(kinds))
    if origin is typing.Annotated:
        return _kind(args[0])
    if origin in (list, tuple):
        return f"list of {_kind(args[0])}" if args else "list"
    if origin is dict:
        return f"table of {_kind(args[1])}" if args else "table"
    names = {float: "number", int: "integer", str: "text", bool: "true/false", datetime: "UTC time"}
    return names.get(annotation, getattr(annotation, "__name__", str(annotation)))


def _default(field: Any, duration: bool) -> str:
    if field.is_required():
        return "required"
    value = field.default
    if value is PydanticUndefined or value is None:
        return "" if field.default_factory is None else "(computed)"
    if duration and isinstance(value, int | float) and not isinstance(value, bool):
        return format_duration(value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _bounds(metadata: list, duration: bool) -> str:
    parts = []
    for kind, attr, sign in _BOUNDS:
        for m in metadata:
            if isinstance(m, kind):
                limit = getattr(m, attr)
                shown = (
                    format_duration(limit)
                    if duration
                    else f"{limit:,}"
                    if isinstance(limit, int)
                    else f"{limit:g}"
                )
                parts.append(f"{sign} {shown}")
    return ", ".join(parts)
