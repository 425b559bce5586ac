"""CSVs of node, rack, PDU or facility meters: a time column and one power column per meter,
each headed with its unit (``rack1 [kW]``, ``feeder (MW)``), as a building-management or PDU
export writes them; times as :func:`powermodel.iotools.trace.read_trace` reads them (ISO 8601,
with or without an offset, or time since the start with its unit). Each meter is a channel."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry import limits
from powermodel.iotools.telemetry.units import POWER
from powermodel.iotools.trace import (
    ACTIVE_UNITS,
    UTC_OFFSET,
    first_bad,
    parse_times,
    read_columns,
    read_header,
    split_unit,
    to_floats,
)


def read_meter(path: Path, text: str, log: list, meta: dict) -> pd.DataFrame:
    """The meters' readings [W], one row per meter and time (``text``: the file's, checked)."""
    header, t_col, channels, names = _meter_header(path)
    frame = _meter_rows(path, header, text, log)
    time = parse_times(frame[t_col], header[t_col], path)
    first = frame[t_col].iloc[0].strip()
    unit = split_unit(header[t_col])[1]
    meta["timezone"] = (
        "time since the start, placed at 1970-01-01T00:00"
        if unit
        else "UTC, converted from the offsets written"
        if re.search(UTC_OFFSET, first)
        else "UTC assumed: the times carry no offset"
    )
    values = []
    for i in channels:
        text_i = frame[i].str.strip()
        number = to_floats(text_i)
        first_bad(
            np.isnan(number) & (text_i != "").to_numpy(dtype=bool),
            text_i,
            header[i],
            path,
            "a number (or empty for a missing reading)",
        )
        values.append(number * POWER[split_unit(header[i])[1]])
    n = len(frame)
    meta["power_field"] = "the meter columns"
    return pd.DataFrame(
        {
            "line": np.tile(np.arange(2, n + 2), len(channels)),
            "time": np.tile(time, len(channels)),
            "channel": np.repeat(np.array(names, dtype=object), n),
            "power": np.concatenate(values),
        }
    )


def _meter_header(path: Path) -> tuple[list[str], int, list[int], list[str]]:
    """The file's header, its time column, its meters' columns and their names. Refused: more
    meters than :data:`~powermodel.iotools.telemetry.limits.MAX_CHANNELS`, none, one without a
    unit of power, two of one name."""
    header = read_header(path)
    if len(header) > limits.MAX_CHANNELS + 1:
        raise DataFileError(
            f"{path}: {len(header) - 1} meter columns is over the "
            f"{limits.MAX_CHANNELS} channels a file may have; split it"
        )
    t_col = next(
        (i for i, h in enumerate(header) if split_unit(h)[0] == "time"),
        next((i for i, h in enumerate(header) if h.startswith("time")), 0),
    )
    channels = [i for i in range(len(header)) if i != t_col]
    if not channels:
        raise DataFileError(f"{path}: no meter column besides the time; add 'name [kW]' columns")
    for i in channels:
        name, unit = split_unit(header[i])
        if unit not in ACTIVE_UNITS:
            found = f"its unit {unit!r} is not one of" if unit else "it has no unit: one of"
            raise DataFileError(
                f"{path}: column {header[i]!r}: {found} {', '.join(ACTIVE_UNITS)}; head each "
                f"meter with its unit, e.g. '{name} [kW]'"
            )
    names = [split_unit(header[i])[0] for i in channels]
    if len(set(names)) < len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise DataFileError(f"{path}: two columns are named {twice!r}; name each meter once")
    return header, t_col, channels, names


def _meter_rows(path: Path, header: list[str], text: str, log: list) -> pd.DataFrame:
    """The file's rows as text, one column per header field; a last row cut short while the
    file was written is dropped, any other row without the header's fields refused."""
    ragged: list[int] = []

    def skip(row) -> str:
        ragged.append(row.number)
        return "skip"

    frame = read_columns(path, len(header), list(range(len(header))), ragged=skip)
    last = len(re.split(r"\r\n?|\n", text.rstrip("\r\n")))
    if ragged:
        cut = not text.endswith(("\n", "\r"))
        if ragged != [last] or not cut:
            line = ragged[0] if ragged[0] is not None else "?"
            raise DataFileError(
                f"{path}: line {line} has not the {len(header)} values of the header "
                f"({len(ragged)} such line(s)); mend or delete it"
            )
        log.append(f"line {last} is cut short: dropped")
    if len(frame) < 2:
        raise DataFileError(f"{path}: {len(frame)} data row(s): a trace needs two or more")
    return frame
