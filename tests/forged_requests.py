"""Forged Dash callback requests, made from one the page does send, for the tests that attack
the dashboard (tests/test_dashboard_hostile.py through Flask's test client, and
tests/test_forged_round.py over HTTP against the served app): ``from forged_requests import
forged_shapes``.

Not a test module: pytest puts ``tests/`` on ``sys.path`` (as for ``conftest``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any


def forged_shapes(body: dict) -> Iterator[tuple[str, dict]]:
    """Every shape a page never sends, made from one request the page does send: each item of
    its outputs, inputs and state without its id or property, naming another component, of
    another kind (a group sent as one item, an item as a group, a bare value), the lists
    themselves as dicts, and a changed property that is none of its inputs. Yields (what was
    forged, the request)."""
    for part in ("outputs", "inputs", "state"):
        items = body[part] if isinstance(body[part], list) else [body[part]]
        for index, item in enumerate(items):
            for name, wrong in _wrong_items(item):
                forged = json.loads(json.dumps(body))
                if isinstance(forged[part], list):
                    forged[part][index] = wrong
                else:
                    forged[part] = wrong
                yield f"{part}[{index}] {name}", forged
        forged = json.loads(json.dumps(body))
        forged[part] = {str(i): item for i, item in enumerate(items)}
        if isinstance(body[part], list):
            yield f"{part} as a dict", forged
    yield "changedPropIds a dict", {**body, "changedPropIds": {"a": 1}}
    # what fired, as no page says it: not an input of the request, or no id Dash could make
    # (the zoom's ctx.triggered_id["view"] was HTTP 500 on '"x".relayoutData', found in review)
    for changed in ('"x".relayoutData', "{bad.relayoutData", "no-such-component.value", "x"):
        yield f"changedPropIds {changed!r}", {**body, "changedPropIds": [changed]}


def _wrong_items(item: object) -> Iterator[tuple[str, object]]:
    if isinstance(item, list):  # a pattern's group
        yield "group as one item", {"id": "x", "property": "value", "value": None}
        yield "group as a dict of its items", {str(i): v for i, v in enumerate(item)}
        yield "group of bare values", [None, 5]
        if item:
            yield "group's item without id", [{k: v for k, v in item[0].items() if k != "id"}]
        return
    yield "without id", {k: v for k, v in item.items() if k != "id"}
    yield "without property", {k: v for k, v in item.items() if k != "property"}
    yield "naming another component", {**item, "id": "no-such-component"}
    yield "with another property", {**item, "property": "style"}
    yield "as a group", [item]
    yield "a bare value", "x"
    yield "null", None


def strings_in(
    value: object, path: tuple = (), keyed: bool = False
) -> Iterator[tuple[tuple, bool]]:
    """Every place in a JSON value where text can stand: its path (the value itself first, at
    ``path``) and whether it is a dict's entry, whose key can hold text too."""
    yield path, keyed
    if isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(v, (*path, k), True)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from strings_in(v, (*path, i))


def replaced(value: Any, path: tuple, new: Any, as_key: bool = False) -> Any:
    """A deep copy of a JSON value with the place at ``path`` (from :func:`strings_in`) set to
    ``new``, or, ``as_key``, with the key of the dict entry at ``path`` renamed to ``new``."""
    if not path:
        return new
    copy = json.loads(json.dumps(value))
    parent = copy
    for step in path[:-1]:
        parent = parent[step]
    if as_key:
        parent[new] = parent.pop(path[-1])
    else:
        parent[path[-1]] = new
    return copy
