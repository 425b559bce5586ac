"""Measured power traces: a CSV of time and active (and optionally reactive) power, as a Dataset.

The file is comma-separated UTF-8 text with one header line. A power header names its unit in
square brackets, ``P [kW]``, as the project's own CSV exports write them
(:func:`powermodel.variables.header`), so that a kilowatt meter is never read as megawatts; a
numeric time column names its unit the same way, ``time [s]``.

Unlike the weather readers' ``(data, meta)``, :func:`read_trace` returns one Dataset, its meta
(step and source) in the attrs: the form :func:`powermodel.rules.check` takes for a simulation.
"""

from __future__ import annotations

import csv
import difflib
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import xarray as xr

from powermodel.errors import DataFileError
from powermodel.variables import annotate

# The columns looked for when none is named, in order of preference.
ACTIVE = ("grid_power", "facility_power", "power", "P")
REACTIVE = ("grid_reactive_power", "Q")

# Header unit -> factor to MW, Mvar or s. The unit spellings meters and SCADA exports use; "mW"
# (milliwatt) is not one of them, so units are matched exactly.
ACTIVE_UNITS = {"GW": 1e3, "MW": 1.0, "kW": 1e-3, "KW": 1e-3, "W": 1e-6}
REACTIVE_UNITS = {
    "Gvar": 1e3,
    "Mvar": 1.0,
    "MVAr": 1.0,
    "MVAR": 1.0,
    "kvar": 1e-3,
    "kVAr": 1e-3,
    "kVAR": 1e-3,
    "var": 1e-6,
    "VAr": 1e-6,
    "VAR": 1e-6,
}
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "min": 60.0, "h": 3600.0}

# Numeric time counts from the start of the trace, placed here so that it is a valid UTC time.
EPOCH = np.datetime64("1970-01-01T00:00", "ns")
# datetime64[ns] spans ±292 years; a larger time since the start is a wrong column or unit.
_MAX_SECONDS = 9e9
# A header line this long is not a trace's (a few columns), and reading it all costs memory.
_MAX_HEADER = 1 << 20  # [bytes]
_HEADER = re.compile(r"\s*(?P<name>.*?)\s*(?:\[(?P<unit>[^\]]*)\]|\((?P<paren>[^)]*)\))\s*")
# A time of day followed by Z or ±hh[:mm]: the time carries its UTC offset.
UTC_OFFSET = r"\d:\d{2}(?::\d{2}(?:\.\d+)?)?\s*(?:[Zz]|[+-]\d{2}(?::?\d{2})?)\s*$"
_STEP_RTOL = 1e-6
# PMUs report at most 120 frames/s (IEEE C37.118.1) and power-quality meters half-cycle RMS
# values (IEC 61000-4-30), 8–10 ms: a step under 1 ms is a unit mix-up, not a power reading,
# and would put millions of samples in a rule's window.
_MIN_STEP = 1e-3  # [s]


def read_trace(
    path: str | Path, power: str | None = None, reactive: str | None = None
) -> xr.Dataset:
    """A measured profile from CSV: a time column and active (and optionally reactive) power.

    Parameters
    ----------
    path
        Comma-separated UTF-8 file with one header line. The time column is the one named
        ``time`` (or whose header starts with ``time``), else the first column. Times are either
        ISO 8601 text, UTC unless each carries its offset (``2025-07-01T14:00:00Z``,
        ``…+02:00``), or numbers with their unit in the header, ``time [s]`` (also ``[ms]``,
        ``[min]``, ``[h]``): time since the start of the trace, which is then placed at
        1970-01-01T00:00 UTC. The active power is the first column named ``grid_power``,
        ``facility_power``, ``power`` or ``P``; the reactive power, if any, ``grid_reactive_power``
        or ``Q``. Each power header gives its unit in brackets (or parentheses): ``P [MW]``
        (``GW``, ``MW``, ``kW``, ``W``), ``Q [Mvar]`` (``Gvar``, ``Mvar``, ``kvar``, ``var``).
    power, reactive
        Header of the active (reactive) power column to use instead of the defaults: the whole
        header text (``"P_meter [kW]"``) or its name before the unit (``"P_meter"``).

    Returns
    -------
    xarray.Dataset
        ``grid_power`` [MW] (and ``grid_reactive_power`` [Mvar]) on ``time`` (timezone-naive
        UTC, uniform step); attrs ``dt`` (the step [s]) and ``source`` (the file).

    Raises
    ------
    DataFileError
        The file is missing, empty, binary, not UTF-8, not comma-separated or ragged; a column
        is missing or ambiguous; a power header has no known unit; a time or power value cannot
        be read or is not finite (named by line); times do not increase in equal steps, or
        the step is under 1 ms.
    """
    path = Path(path)
    header = read_header(path)
    t_col = next(
        (i for i, h in enumerate(header) if split_unit(h)[0] == "time"),
        next((i for i, h in enumerate(header) if h.startswith("time")), 0),
    )
    p_col = _column(header, power, ACTIVE, path, "active power")
    q_col = _column(header, reactive, REACTIVE, path, "reactive power", required=False)
    if t_col in (p_col, q_col):
        raise DataFileError(
            f"{path}: no time column: looked for 'time' and took the first column, "
            f"{header[t_col]!r}, which is the power; put the times first, headed e.g. 'time'"
        )
    frame = read_columns(path, len(header), [c for c in (t_col, p_col, q_col) if c is not None])
    first = _first_reading(frame[p_col])
    if len(frame) - first < 2:
        rows = len(frame) - first
        raise DataFileError(
            f"{path}: {rows} data row{'s' if rows != 1 else ''}"
            f"{' with a power reading' if first else ''}: a trace needs at least two times to "
            "have a step"
        )
    time = parse_times(frame[t_col], header[t_col], path)[first:]
    dt = _step(time, path)
    power = _values(frame[p_col], header[p_col], ACTIVE_UNITS, "MW", path, first)
    out = xr.Dataset({"grid_power": ("time", power[first:])}, coords={"time": time})
    if q_col is not None:
        q = _values(frame[q_col], header[q_col], REACTIVE_UNITS, "Mvar", path, first)
        out["grid_reactive_power"] = ("time", q[first:])
    out.attrs.update(dt=dt, source=str(path))
    if first:
        out.attrs["skipped"] = (
            f"{header[p_col]!r}: the first {first:,} rows hold no reading (a sensor's view "
            "before its first report): the trace starts at the first reading"
        )
    return annotate(out)


def _first_reading(column: pd.Series) -> int:
    """Rows before the first power reading: a sensor's view as powermodel writes it
    (``grid_power_revenue``) has none before its first window ends, an empty or ``nan`` cell.
    A missing reading after the first stays an error."""
    reading = ~column.str.strip().str.lower().isin(("", "nan")).to_numpy()
    return int(np.argmax(reading)) if reading.any() else len(column)


def read_header(path: Path) -> list[str]:
    """The column headers, read from the first line only (a file may be huge)."""
    try:
        with path.open("rb") as f:
            start = f.read(_MAX_HEADER)
    except FileNotFoundError:
        raise DataFileError(f"{path}: no such file; give the path of a trace CSV") from None
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the trace ({exc.strerror})") from None
    if not start.strip():
        raise DataFileError(f"{path}: the file is empty; give a CSV with a header and rows")
    if b"\x00" in start:
        raise DataFileError(f"{path}: a binary file, not a CSV trace; give a CSV text file")
    line, *rest = re.split(rb"\r\n?|\n", start, maxsplit=1)
    if not rest and len(start) == _MAX_HEADER:
        raise DataFileError(
            f"{path}: the header line is longer than {_MAX_HEADER >> 20} MiB: not a trace CSV "
            "(time and one or two power columns)"
        )
    try:
        text = line.decode("utf-8-sig").strip()
    except UnicodeDecodeError:
        raise DataFileError(f"{path}: line 1 is not UTF-8 text; save the trace as UTF-8") from None
    header = [h.strip() for h in next(csv.reader([text]))]
    if len(header) < 2 and any(sep in text for sep in ";\t"):
        raise DataFileError(
            f"{path}: the header {text[:60]!r} is separated by semicolons or tabs; save the trace "
            "as comma-separated values with '.' as the decimal point"
        )
    return header


def split_unit(header: str) -> tuple[str, str | None]:
    """``"P [kW]"`` (or ``"P (kW)"``) → ``("P", "kW")``; ``"P"`` → ``("P", None)``."""
    match = _HEADER.fullmatch(header)
    if not match:
        return header, None
    unit = (match["unit"] if match["unit"] is not None else match["paren"]).strip()
    return match["name"], unit or None  # empty brackets give no unit


def _column(
    header: list[str],
    name: str | None,
    defaults: tuple[str, ...],
    path: Path,
    what: str,
    required: bool = True,
) -> int | None:
    """The index of the named column, or of the first default one; None if optional and absent."""
    names = [split_unit(h)[0] for h in header]
    if name is not None:
        found = [i for i, h in enumerate(header) if h == name] or [
            i for i, n in enumerate(names) if n == name
        ]
        if not found:
            close = difflib.get_close_matches(name, header, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise DataFileError(
                f"{path}: no column {name!r} among {', '.join(map(repr, header))}{hint}; name a "
                "column by its header"
            )
    else:
        found = next(
            (match for d in defaults if (match := [i for i, n in enumerate(names) if n == d])),
            [],
        )
        if not found and required:
            raise DataFileError(
                f"{path}: no {what} column: looked for {', '.join(defaults)} among "
                f"{', '.join(map(repr, header))}; name it e.g. 'P [MW]' or choose one with --power"
            )
    if len(found) > 1:
        raise DataFileError(
            f"{path}: {len(found)} {what} columns, {', '.join(repr(header[i]) for i in found)}: "
            "rename all but the one to read, or choose one by its whole header"
        )
    return found[0] if found else None


def read_columns(
    path: Path, width: int, columns: list[int], ragged: Callable | None = None
) -> pd.DataFrame:
    """The chosen columns as text, keyed by column index; trailing blank lines dropped.

    Arrow's reader refuses a row with more or fewer values than the header, where pandas' would
    drop the extra values (a decimal comma, ``1,5``, read as 1), and reads only the chosen
    columns of a wide file. A blank line reads as empty values, refused where they are used.
    ``ragged``, if given, is called with each row of another width (a
    ``pyarrow.csv.InvalidRow``) and returns ``"skip"`` or ``"error"``.
    """
    names = [str(i) for i in range(width)]
    try:
        table = pacsv.read_csv(
            path,
            read_options=pacsv.ReadOptions(column_names=names, skip_rows=1, use_threads=False),
            parse_options=pacsv.ParseOptions(ignore_empty_lines=False, invalid_row_handler=ragged),
            convert_options=pacsv.ConvertOptions(
                include_columns=[names[c] for c in columns],
                column_types=dict.fromkeys(names, pa.string()),
                strings_can_be_null=False,
            ),
        )
    except pa.ArrowInvalid as exc:
        problem = str(exc).removeprefix("CSV parse error: ").replace("Row #", "line ")
        if "UTF8" in problem:
            raise DataFileError(f"{path}: not UTF-8 text; save the trace as UTF-8") from None
        raise DataFileError(
            f"{path}: not a readable CSV ({problem}); write one value per header column, "
            "comma-separated, with '.' as the decimal point"
        ) from None
    frame = table.to_pandas(types_mapper=pd.ArrowDtype)  # Arrow strings: 10 times faster
    frame.columns = columns
    filled = np.flatnonzero((frame != "").any(axis=1).to_numpy(dtype=bool))
    return frame.iloc[: filled[-1] + 1 if filled.size else 0]


def parse_times(column: pd.Series, header: str, path: Path) -> np.ndarray:
    """Timezone-naive UTC times of a time column (ISO 8601 text, or numbers with a unit)."""
    text = column.str.strip()
    name, unit = split_unit(header)
    if unit in TIME_UNITS:
        since = to_floats(text) * TIME_UNITS[unit]
        want = f"a time since the start in {unit} (within ±285 years)"
        first_bad(~(np.abs(since) <= _MAX_SECONDS), text, header, path, want)
        return EPOCH + np.round(since * 1e9).astype(np.int64).astype("timedelta64[ns]")
    if np.isfinite(to_floats(text)).all():
        raise DataFileError(
            f"{path}: the time column {header!r} holds numbers without a unit: give ISO 8601 "
            f"UTC times (2025-07-01T14:00:00Z) or name the column with its unit, e.g. "
            f"'{name} [s]' ([ms], [min], [h]) for time since the start of the trace"
        )
    time, offset = parse_iso(text)
    first_bad(np.isnat(time), text, header, path, "an ISO 8601 time (2025-07-01T14:00Z)")
    if not (offset == offset[0]).all():
        i = int(np.flatnonzero(offset != offset[0])[0])
        raise DataFileError(
            f"{path}: line {i + 2}: time {text.iloc[i]!r} "
            f"{'has no' if offset[0] else 'has a'} UTC offset, unlike line 2's "
            f"{text.iloc[0]!r}: give every time in UTC, or every one with its offset"
        )
    return time


def parse_iso(text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """ISO 8601 text as timezone-naive UTC times (NaT where unreadable), and whether each
    carried its UTC offset (a time without one is taken as UTC)."""
    time = pd.to_datetime(text, utc=True, format="ISO8601", errors="coerce")
    offset = text.str.contains(UTC_OFFSET).to_numpy(dtype=bool)
    return time.dt.tz_localize(None).to_numpy(dtype="datetime64[ns]"), offset


def _step(time: np.ndarray, path: Path) -> float:
    """The uniform time step [s]; an error names the first line that breaks it."""
    steps = np.diff(time) / np.timedelta64(1, "s")
    bad = np.flatnonzero((steps <= 0) | (np.abs(steps - steps[0]) > _STEP_RTOL * abs(steps[0])))
    if bad.size:
        i = int(bad[0])
        before = f"line {i + 2}'s {np.datetime_as_string(time[i], unit='auto')}"
        found = (
            f"not after {before}: duplicated or out of order"
            if steps[i] <= 0
            else f"{steps[i]:g} s after {before}, unlike the first step of {steps[0]:g} s"
        )
        raise DataFileError(
            f"{path}: line {i + 3}: time {np.datetime_as_string(time[i + 1], unit='auto')} (UTC) "
            f"is {found}; times must increase in equal steps: resample the trace to a uniform "
            "step first"
        )
    if steps[0] < _MIN_STEP:
        raise DataFileError(
            f"{path}: the time step is {steps[0]:g} s, under the {_MIN_STEP:g} s of the finest "
            "power meters: a wrong time unit? Numbers of seconds are headed 'time [s]'"
        )
    return float(steps[0])


def _values(
    column: pd.Series,
    header: str,
    units: dict[str, float],
    example: str,
    path: Path,
    first: int = 0,
) -> np.ndarray:
    """The column's numbers converted by its header's unit; an error names the first bad line
    from row ``first`` on (the rows before it hold no reading yet)."""
    name, unit = split_unit(header)
    if unit not in units:
        found = f"its unit {unit!r} is not one of {', '.join(units)}" if unit else "it has no unit"
        close = [u for u in units if u.lower() == (unit or "").lower()]
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        if close and unit == "m" + close[0][1:] and close[0][0] == "M":  # milli: no typo of mega
            hint = f" ({unit!r} is milli-, {close[0]!r} mega-: no site is metered in milli)"
        raise DataFileError(
            f"{path}: column {header!r}: {found}{hint}; write the unit in brackets, e.g. "
            f"'{name} [{example}]'"
        )
    text = column.str.strip()
    values = to_floats(text)
    bad = ~np.isfinite(values)
    bad[:first] = False
    first_bad(bad, text, header, path, "a finite number")
    return values * units[unit]


def to_floats(text: pd.Series) -> np.ndarray:
    """Text as floats, NaN where it is not a number. Arrow's cast reads a clean column ten
    times faster than pandas; a column with anything else in it is read by pandas."""
    try:
        return pc.cast(pa.array(text, type=pa.string()), pa.float64()).to_numpy(
            zero_copy_only=False
        )
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def first_bad(bad: np.ndarray, text: pd.Series, header: str, path: Path, want: str) -> None:
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        found = repr(text.iloc[i]) if text.iloc[i] else "empty"
        raise DataFileError(
            f"{path}: line {i + 2}: {header!r} is {found}, not {want} "
            f"({int(bad.sum())} such row{'s' if bad.sum() > 1 else ''})"
        )
