"""Readings in the vocabulary's units: each field's units and their factors (power in W,
utilisation as a fraction, clocks in MHz, temperatures in °C, memory in MiB), and the one
parser every reader's fields go through, which takes each value by its own suffix or the
header's unit, reads the tool's "no reading" marks as NaN, and refuses junk, an unknown unit or
a suffix contradicting the header by line."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry.lines import refuse_line
from powermodel.iotools.trace import ACTIVE_UNITS, to_floats

FLOAT = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"  # a number as written
_NUMBER = rf"^(?P<number>{FLOAT})\s*(?P<unit>[A-Za-z%°]*)$"
# Readings a tool prints when it has none (nvidia-smi: [N/A], [Not Supported], [GPU is lost]…;
# rocm-smi: N/A, "N/A (Secondary die)" for an MI200 package's second GCD [S, rocm_smi_mi200])
_MISSING = r"^(?:\[.*\]|N/A(?: \([^)]*\))?|NaN|nan|)$"

# Unit → factor to the vocabulary's unit, the unit a value without one is read in first.
# ACTIVE_UNITS are factors to MW; W first, the unit a file without units is read in.
POWER = {u: f * 1e6 for u, f in sorted(ACTIVE_UNITS.items(), key=lambda item: item[1])}
PERCENT = {"%": 0.01}
MHZ = {"MHz": 1.0, "MHZ": 1.0, "GHz": 1e3}
CELSIUS = {"C": 1.0, "°C": 1.0}
# [MiB]: nvidia-smi prints MiB; amd-smi's "MB" are MiB (bytes // 2**20); rocm-smi prints bytes.
MIB = {"MiB": 1.0, "MB": 1.0, "GiB": 1024.0, "B": 2.0**-20}


def readings(
    text: pd.Series,
    units: dict[str, float],
    header_unit: str | None,
    field: str,
    lines: np.ndarray,
    path: Path,
    log: list,
) -> np.ndarray:
    """A field's readings in the vocabulary's unit, each by its own suffix or the header's;
    NaN where the tool printed none. Junk, an unknown unit or a suffix contradicting the
    header is an error naming the line."""
    text = text.str.strip()
    missing = text.str.contains(_MISSING).to_numpy(dtype=bool)
    parts = text.str.extract(_NUMBER)
    number = to_floats(parts["number"])
    junk = ~missing & np.isnan(number)
    refuse_line(
        junk,
        lines,
        path,
        lambda i: (
            f"{field} is {text.iloc[i]!r}, not a number with its unit "
            f"({int(junk.sum())} such); mend or delete the line"
        ),
    )
    suffix = parts["unit"].fillna("").to_numpy(dtype=str)
    known = next(iter(units)) if header_unit is None else header_unit
    if header_unit is not None and header_unit not in units:
        raise DataFileError(
            f"{path}: {field}: its unit {header_unit!r} is not one of {', '.join(units)}; "
            f"write it as e.g. '{field} [{next(iter(units))}]'"
        )
    given = suffix[~missing & (suffix != "")]
    found = np.unique(given)
    unknown = [str(u) for u in found if u not in units]
    if unknown:
        refuse_line(
            suffix == unknown[0],
            lines,
            path,
            lambda i: (
                f"{field} {text.iloc[i]!r} has unit {unknown[0]!r}, not one of "
                f"{', '.join(units)}; convert it"
            ),
        )
    if header_unit is not None and any(u != header_unit for u in found):
        other = next(u for u in found if u != header_unit)
        refuse_line(
            suffix == other,
            lines,
            path,
            lambda i: (
                f"{field} {text.iloc[i]!r} is in {other}, but the header says "
                f"[{header_unit}]: the file mixes units (edited or joined?); convert every value "
                "to the header's unit"
            ),
        )
    if found.size > 1:
        log.append(
            f"{field} is written in {', '.join(found)} on different lines: each read "
            "by its own unit"
        )
    written, which = np.unique(np.where(suffix == "", known, suffix), return_inverse=True)
    factor = np.array([units.get(str(u), np.nan) for u in written])[which]
    return np.where(missing, np.nan, number * factor)


def read_fields(
    columns: Iterable[tuple[str, str | None, pd.Series]],
    table: dict[str, tuple[str, dict[str, float]]],
    lines: np.ndarray,
    path: Path,
    log: list,
) -> dict[str, np.ndarray]:
    """Each of ``columns`` (its name, the header's unit of it or None, its text) that ``table``
    maps (a tool's field name → the variable and its units), read by :func:`readings` as that
    variable, in the order of ``columns``."""
    out = {}
    for name, unit, text in columns:
        if name in table:
            var, units = table[name]
            out[var] = readings(text, units, unit, name, lines, path, log)
    return out
