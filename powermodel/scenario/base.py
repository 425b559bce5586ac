"""What every scenario table is built on: the :class:`Section` base, durations, labels, text and
the bounds beyond which no job or site exists (the engine's arrays are sized by them).

Lowest module of the scenario package: it imports none of its siblings.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from datetime import datetime
from importlib import resources
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from powermodel.durations import format_duration, parse_duration


def packaged(name: str) -> Any:
    """A file shipped in ``powermodel/presets`` (a Traversable: ``read_text()``), read as
    package data: importing ``powermodel.presets`` as a module would rebind the package's
    ``presets`` name from the function to it."""
    return resources.files("powermodel") / "presets" / name


Duration = Annotated[
    float,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
]


# Bounds of the scenario's durations and sizes [s]: beyond them no training job or site exists,
# and the engine's arrays and loops are sized by them.
MINUTE, HOUR, DAY = 60.0, 3600.0, 86400.0


MAX_RUN = 3660 * DAY  # ten years: weather is a typical year, repeated


MAX_RECOVERY = 30 * DAY  # a stall, restart or maintenance: a month is already a lost job


MAX_GPUS = 10_000_000  # ten times the largest campus announced (about 1 GW, 2026)


MAX_BATTERIES = 16  # battery systems a site holds


MAX_DEPTH = 12  # tables and arrays nested in a scenario or rule file (the schema needs 4)


MAX_TEXT = 2000  # characters of a free-text field (a name, a note, a source)


TIME_RANGE = (datetime(1677, 9, 22), datetime(2262, 4, 11))  # datetime64[ns] holds these


Text = Annotated[str, Field(max_length=MAX_TEXT)]  # free text: a description, a note, a source


Name = Annotated[str, Field(max_length=200)]  # a name or a key


def _printable(value: str) -> str:
    """A label shown in tables, files and the dashboard: printable, not blank."""
    if not value.strip() or not value.isprintable():
        raise ValueError(
            f"{value!r} is blank or holds a control character: use letters, digits, spaces "
            "and punctuation"
        )
    return value


Label = Annotated[str, Field(min_length=1, max_length=60), AfterValidator(_printable)]


class Section(BaseModel):
    """Base of every scenario table: unknown keys are errors, numbers must be finite, values are
    validated on assignment."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)


def shorten(value: Any, width: int = 60) -> str:
    """``repr(value)`` cut to ``width`` characters, for messages about arbitrary input."""
    text = repr(value)
    return text if len(text) <= width else text[: width - 1] + "…"


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    choices = list(choices)
    folded = {c.casefold(): c for c in choices}
    close = [c for c in folded if word and c.startswith(word.casefold())][:1]
    if not close:
        close = difflib.get_close_matches(word.casefold(), list(folded), n=1, cutoff=0.6)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""
