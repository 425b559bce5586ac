"""Key introspection over a schema's tables: the field at a dotted key, the tables a field
holds, tagged unions' members, and validation errors said as the user's keys with a fix.

Generic over the root table (the scenario's, a rule's, a grid mode's): the scenario's defaults
are :func:`powermodel.scenario.root.explain` and :func:`powermodel.scenario.root.is_duration`.
"""

from __future__ import annotations

import re
from types import UnionType
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from powermodel.durations import format_duration, parse_duration
from powermodel.scenario.base import did_you_mean, shorten


def tag_of(model: type[BaseModel], key: str = "type") -> str:
    """The value of ``key`` (a plant's ``type``) a tagged union's member is chosen by."""
    return get_args(model.model_fields[key].annotation)[0]


def explain_errors(exc: ValidationError, root: type[BaseModel], most: int = 5) -> str:
    """One line per problem (the first ``most``), with the dotted key, the value given and a
    suggestion, for a table of ``root`` (the scenario's, :func:`powermodel.scenario.root.explain`;
    a rule's in rule files). Of
    a value that fails every branch of a union (a duration or 'young-daly'), the first
    branch's reason is given."""
    lines: dict[str, str] = {}
    for err in exc.errors():
        # pydantic's union branches are no keys; an unknown key (the last part) is the user's,
        # brackets and all
        extra = err["type"] == "extra_forbidden"
        parts = err["loc"][:-1] if extra else err["loc"]
        loc = [p for p in parts if isinstance(p, int) or _is_key(p)] + list(err["loc"][-1:] * extra)
        # a tagged union's member (cooling.liquid.loop_delta_t) is found by the table's `type`:
        # the schema is looked up with it, the key is said without it
        # (an unknown key is the user's, even one spelt like a tag: `cooling.liquid`)
        tagged = loc
        loc = _untagged(loc[:-1], root) + loc[-1:] if extra else _untagged(loc, root)
        if err["type"] in ("union_tag_not_found", "union_tag_invalid"):
            loc = [*loc, err["ctx"]["discriminator"].strip("'")]
        where = shorten(".".join(map(str, loc)) or "scenario", 80).strip("'")
        if where in lines:
            continue
        if extra:
            parent = ".".join(str(p) for p in loc[:-1] if not isinstance(p, int))
            known = [f"{parent}.{f}" if parent else f for f in _fields_at(tuple(tagged[:-1]), root)]
            guess = f"{parent}.{loc[-1]}" if parent else str(loc[-1])
            lines[where] = f"unknown key {where!r}{did_you_mean(guess, known)}"
        elif err["type"] in ("missing", "union_tag_not_found"):
            lines[where] = f"missing key {where!r}"
        elif err["type"] == "union_tag_invalid":
            tags = [repr(t) for t in union_members(field_at(tuple(tagged), root))]
            given = err["input"].get(loc[-1]) if isinstance(err["input"], dict) else None
            lines[where] = (
                f"{where}: Input should be {', '.join(tags[:-1])} or {tags[-1]} "
                f"(got {shorten(given)})"
            )
        else:
            bound = _bound_as_duration(err, tagged, root)
            reason = err["msg"].removeprefix("Value error, ")
            message = bound or _too_large(err, tagged, root) or reason + _in_unit(err, tagged, root)
            given = err.get("input")
            if bound and isinstance(given, float):  # read from the user's text: say it so
                given = format_duration(given) if given < 1e12 else f"{given:.3g}s"
            shown = (
                f" (got {shorten(given)})"
                if isinstance(given, str | int | float) and repr(given) not in message
                else ""
            )
            lines[where] = f"{where}: {message}{shown}"
    found = list(lines.values())
    more = f"; and {len(found) - most} more" if len(found) > most else ""
    return "; ".join(found[:most]) + more


UNIT = re.compile(r"\s*\[([^\]]*)\]\s*$")  # a field's description ends with its unit: "... [W]"


def _in_unit(err: Any, loc: list, root: Any) -> str:
    """The unit a bound or a number is read in, for the message: a limit of 1 is 1 W, and
    "0.6kW" is refused because the key takes plain watts."""
    field = field_at(tuple(loc), root)
    unit = UNIT.search(getattr(field, "description", None) or "")
    if unit is None or unit[1] in ("1", "") or is_duration_field(field):
        return ""
    if err["type"] in _BOUNDS:  # "at least 1 W", "at most 1 (1/K)"
        return f" {unit[1]}" if unit[1][0].isalpha() or unit[1][0] in "°%" else f" ({unit[1]})"
    if err["type"] in ("float_parsing", "float_type", "int_parsing", "int_type"):
        return f": a plain number in {unit[1]}"
    return ""


_BOUNDS = {
    "greater_than": "longer than",
    "greater_than_equal": "at least",
    "less_than": "shorter than",
    "less_than_equal": "at most",
}


def _bound_as_duration(err: Any, loc: list, root: Any) -> str | None:
    """A bound broken by a duration, said in durations: 'must be at most 30d'."""
    if err["type"] not in _BOUNDS or not is_duration_field(field_at(tuple(loc), root)):
        return None
    (limit,) = err["ctx"].values()
    return f"must be {_BOUNDS[err['type']]} {format_duration(float(limit))}"


def _too_large(err: Any, loc: list, root: Any) -> str | None:
    """A whole number too large to read, said with the field's bound."""
    if err["type"] != "int_parsing_size":
        return None
    field = field_at(tuple(loc), root)
    bounds = [m.le for m in getattr(field, "metadata", ()) if hasattr(m, "le")]
    return f"must be at most {bounds[0]:,}" if bounds else "is too large"


def is_duration_field(field: Any) -> bool:
    """Whether a field holds a :data:`Duration` (alone or in a union)."""
    validators = [getattr(m, "func", None) for m in getattr(field, "metadata", ())]
    return field is not None and (
        parse_duration in validators or "parse_duration" in repr(field.annotation)
    )


def _is_key(part: Any) -> bool:
    """A location part that names a key, not one of pydantic's union or validator branches."""
    return isinstance(part, str) and not any(c in part for c in "[](),")


def _fields_at(loc: tuple[Any, ...], root: Any) -> list[str]:
    """Field names of the table at ``loc`` (empty where ``loc`` is no table); of every member
    of a tagged union whose member the location does not name."""
    models = _models_at(loc, root)
    return list(dict.fromkeys(f for model in models for f in model.model_fields))


def field_at(loc: tuple[Any, ...], root: Any) -> Any:
    """The schema's FieldInfo at a location (``("cluster", "n_gpus")``) in ``root`` (a table:
    the scenario's, a rule's), or None. In a tagged union (``cooling``) the location may name
    the member (``("cooling", "liquid", "chiller")``); else the first member with the key
    serves."""
    return _walk_to(loc, root)[0]


def _models_at(loc: tuple[Any, ...], root: Any) -> list[Any]:
    """The tables (several for a tagged union) at a location; none for a value."""
    return _walk_to(loc, root)[1] if loc else [root]


def _walk_to(loc: tuple[Any, ...], root: Any) -> tuple[Any, list[Any]]:
    """The field at a location and the tables it holds."""
    models: list[Any] = [root]
    field = None
    for part in (p for p in loc if not isinstance(p, int)):
        members = union_members(field)
        if part in members:
            models = [members[part]]
            continue
        field = next((m.model_fields[part] for m in models if part in m.model_fields), None)
        if field is None:
            return None, []
        models = tables_of(field.annotation)
    return field, models


def union_members(field: Any) -> dict[str, Any]:
    """A tagged union's members by their tag (``{"liquid": LiquidPlant, ...}``); empty for any
    other field."""
    key = getattr(field, "discriminator", None)
    if not isinstance(key, str):
        return {}
    return {tag_of(m, key): m for m in tables_of(field.annotation)}


def _untagged(loc: list[Any], root: Any) -> list[Any]:
    """A location without the tags pydantic puts after a tagged union's key: the user's key."""
    out: list[Any] = []
    for part in loc:
        if not union_members(field_at(tuple(out), root)).get(part):
            out.append(part)
    return out


UNIONS = (Union, UnionType)


def table_of(annotation: Any) -> Any:
    """The table (model) a field's annotation holds, directly, in a list or optionally (the
    first member of a tagged union); None for a value."""
    tables = tables_of(annotation)
    return tables[0] if tables else None


def tables_of(annotation: Any) -> list[Any]:
    """Every table (model) a field's annotation holds, directly, in a list, optionally or as
    members of a union, in the annotation's order; empty for a value."""
    pending, seen, found = [annotation], 0, []
    while pending and seen < 16:
        annotation, seen = pending.pop(0), seen + 1
        if hasattr(annotation, "model_fields"):
            found.append(annotation)
        else:
            pending.extend(getattr(annotation, "__args__", ()))
    return found


def holds_list(annotation: Any) -> bool:
    """Whether a field's annotation is a list (of tables or values), directly or optionally."""
    if get_origin(annotation) is list:
        return True
    return any(holds_list(a) for a in get_args(annotation) if get_origin(annotation) in UNIONS)
