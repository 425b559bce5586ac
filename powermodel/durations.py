"""Durations as scenarios, rules and messages write them: a number and its unit.

The bottom of the package: every layer reads and writes durations the same way.
"""

from __future__ import annotations

import math
import re
from typing import Any

# each unit as people write it: the short symbol, its abbreviations and its words, one or many
_NAMES = {
    1e-3: ("ms", "msec", "millisecond", "milliseconds"),
    1.0: ("s", "sec", "secs", "second", "seconds"),
    60.0: ("min", "mins", "minute", "minutes"),
    3600.0: ("h", "hr", "hrs", "hour", "hours"),
    86400.0: ("d", "day", "days"),
    7 * 86400.0: ("w", "wk", "wks", "week", "weeks"),
}
_UNITS = {name: size for size, names in _NAMES.items() for name in names}
_DURATION = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Z]*)\s*$")
_UNIT_HINT = (
    "write a number and a unit, one of ms, s, min, h, d, w (e.g. '100ms', '1s', '10min', '54d')"
)


def parse_duration(value: Any) -> float:
    """Seconds from a duration written with its unit: ``"54d"``, ``"1s"``, ``"100ms"``,
    ``"10min"``, ``"2h"``, or the unit's word: ``"1 week"``, ``"2 days"``, ``"90 minutes"``.

    A bare number is refused: ``duration = 7`` could mean seven seconds or seven days, and a
    scenario must say which. Negative and non-finite durations (``"1e400s"``) are refused too.
    """
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f"{value!r} has no unit: {_UNIT_HINT}")
    if not isinstance(value, str):
        raise ValueError(f"expected a duration such as '10min', got {value!r}")
    match = _DURATION.match(value)
    unit = match.group(2).lower() if match else None
    if unit == "":
        raise ValueError(f"{value!r} has no unit: {_UNIT_HINT}")
    if match is None or unit not in _UNITS:
        raise ValueError(f"cannot read {value!r} as a duration: {_UNIT_HINT}")
    seconds = float(match.group(1)) * _UNITS[unit]
    if not math.isfinite(seconds):
        raise ValueError(f"{value!r} is not a finite duration")
    if seconds < 0:
        raise ValueError(f"{value!r} is negative: a duration is zero or longer")
    return seconds


def format_duration(seconds: float) -> str:
    """The shortest string that :func:`parse_duration` reads back to exactly ``seconds``."""
    seconds = float(seconds)
    for unit, size in (("d", 86400.0), ("h", 3600.0), ("min", 60.0)):
        count = round(seconds / size)
        if count >= 1 and count * size == seconds:
            return f"{count}{unit}"
    if seconds == round(seconds):
        return f"{round(seconds)}s"
    if seconds > 1.0 and seconds * 10.0 == round(seconds * 10.0):
        return f"{seconds!r}s"  # 2.5s, not 2500ms
    millis = round(seconds * 1e3)
    if millis * 1e-3 == seconds:
        return f"{millis}ms"
    return f"{seconds!r}s"
