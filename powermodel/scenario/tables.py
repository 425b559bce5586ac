"""Raw TOML tables before validation: TOML parsed as data (depth-limited), dotted keys read, set
and dropped, tables merged, and dotted overrides (``--set``) parsed.

Stage: loading, before the catalogues fill the tables and the schema validates them.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Iterable, Mapping
from typing import Any

from powermodel.errors import ScenarioError
from powermodel.scenario.base import MAX_DEPTH, shorten


def flat_keys(keys: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A ``set`` table as dotted keys, nested tables walked and merged key by key (``{"mitigation":
    {"clock_lock": 0.8}}`` sets ``mitigation.clock_lock`` alone, as the dotted form does); a key
    given twice, the later wins."""
    out: dict[str, Any] = {}
    for key, value in keys.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict) and value:
            out.update(flat_keys(value, f"{path}."))
        else:
            out[path] = value
    return out


def dotted_keys(keys: dict[str, Any]) -> list[str]:
    """The dotted keys a ``set`` table reaches (:func:`flat_keys`)."""
    return list(flat_keys(keys))


def get_dotted(table: Any, key: str) -> Any:
    """The value at ``a.b`` in nested tables; None where a table or the key is missing."""
    for part in key.split("."):
        if not isinstance(table, dict) or part not in table:
            return None
        table = table[part]
    return table


def drop_dotted(table: Any, key: str) -> None:
    """Remove ``a.b`` from nested tables, where it is."""
    *parents, last = key.split(".")
    for part in parents:
        table = table.get(part) if isinstance(table, dict) else None
    if isinstance(table, dict):
        table.pop(last, None)


_MOST_KEY_PARTS = 8 * MAX_DEPTH


# A key of more parts than that, bare or quoted, with optional blanks around each dot. The
# look-behind starts a match only at the start of a word and the possessive quantifiers never
# backtrack, so the search is linear in the text's length.
_LONG_DOTTED_KEY = re.compile(
    r"""(?<![\w"'.-])(?:(?:[A-Za-z0-9_-]++|"[^"\n]*+"|'[^'\n]*+')[ \t]*+\.[ \t]*+)"""
    + f"{{{_MOST_KEY_PARTS},}}"
)


def parse_toml(text: str, label: str) -> dict[str, Any]:
    """TOML text as data, never evaluated; nesting deeper than :data:`MAX_DEPTH` is refused
    (deeper structures are no scenario and would exhaust Python's recursion). A key of more
    parts than a line could need is refused before parsing, wherever it stands (a line's key or
    one inside an inline table): the parser's time and memory grow with the square of its length."""
    if _LONG_DOTTED_KEY.search(text):
        raise ScenarioError(
            f"{label}: a key of more than {_MOST_KEY_PARTS} dotted parts, nested more than "
            f"{MAX_DEPTH} deep: no scenario or rule needs that; check the key"
        )
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"{label}: TOML syntax error: {exc}") from None
    except RecursionError:
        data = None
    return _shallow(data, label)


def _shallow(data: dict[str, Any] | None, label: str) -> dict[str, Any]:
    """Parsed TOML (None where the parser ran out of recursion), refused when too deep."""
    if data is None or _depth(data) > MAX_DEPTH:
        raise ScenarioError(
            f"{label}: tables or arrays nested more than {MAX_DEPTH} deep: no scenario or rule "
            "needs that; check the brackets"
        )
    return data


def _depth(value: Any) -> int:
    """Nesting depth of tables and arrays, without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level + 1)
            if level + 1 <= MAX_DEPTH:  # deeper is refused anyway: stop looking
                stack.extend(
                    (v, level + 1) for v in (item.values() if isinstance(item, dict) else item)
                )
    return deepest


def merge_tables(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge: tables merge key by key, anything else (values, arrays) is replaced."""
    out = copy.deepcopy(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = merge_tables(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def parse_overrides(overrides: Mapping[str, Any] | Iterable[str] | None) -> dict[str, Any]:
    """Dotted overrides as a table, each text value read as a TOML value where it parses as one:
    ``{"cluster.n_gpus": 8192}`` as it is, ``["cluster.n_gpus=8192"]`` (``--set``) the same.

    Raises
    ------
    ScenarioError
        An item not of the form ``key.path=value``, or nested too deep.
    """
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        items = list(overrides.items())
    else:
        items = []
        for text in overrides:
            key, sep, value = str(text).partition("=")
            if not sep or not key.strip():
                raise ScenarioError(f"override {shorten(text)} is not of the form key.path=value")
            items.append((key.strip(), value.strip()))
    parsed = {str(key): _toml_value(value) for key, value in items}
    for key, value in parsed.items():  # as deep as a file may be, counting the key's parts
        if key.count(".") + _depth(value) >= MAX_DEPTH:
            raise ScenarioError(
                f"override {shorten(key)}: nested more than {MAX_DEPTH} deep: check the key "
                "and the brackets"
            )
    return parsed


def _toml_value(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        data = tomllib.loads(f"v = {value}")
    except tomllib.TOMLDecodeError:
        return value  # a bare word: the string itself
    except RecursionError:
        data = None
    return _shallow(data, f"override {shorten(value)}")["v"]


def set_dotted(raw: dict[str, Any], key: str, value: Any) -> None:
    """Set ``a.b.c`` in nested tables; a number indexes an array (``workload.phases.0``)."""
    parts = key.split(".")
    node: Any = raw
    for depth, part in enumerate(parts):
        where = ".".join(parts[: depth + 1])
        last = depth == len(parts) - 1
        if isinstance(node, list):
            if not part.isdigit() or int(part) >= len(node):
                raise ScenarioError(f"override {key!r}: {where!r} needs an index below {len(node)}")
            part = int(part)
        elif not isinstance(node, dict):
            raise ScenarioError(f"override {key!r}: {'.'.join(parts[:depth])!r} is a value")
        if last:
            node[part] = value
        else:
            if isinstance(node, dict) and part not in node:
                node[part] = {}
            node = node[part]
