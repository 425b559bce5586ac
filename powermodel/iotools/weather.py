"""Hourly typical-year weather: EnergyPlus EPW and NREL TMY3 readers, and the shipped files.

Both readers return ``(data, meta)``. ``data`` has 8,760 rows and the columns ``temp_air`` [°C],
``temp_dew`` [°C], ``relative_humidity`` [%] and ``pressure`` [Pa] (station pressure). Its index is
the time of each observation in local *standard* time, timezone-naive, in the non-leap year
:data:`TYPICAL_YEAR`: both formats stamp a row with the hour that ends then (hour 1 = 01:00), and
their temperature, humidity and pressure are readings at that instant (NREL's TMY2 and TMY3
user's manuals; only radiation is a sum over the hour before), so the index is that instant,
``TYPICAL_YEAR-01-01 01:00`` … ``TYPICAL_YEAR+1-01-01 00:00``. Row ``i`` is thus hour of year
``i + 1``, the convention of :func:`powermodel.models.weather.to_grid`. The year column of a
typical-year file mixes source years and is ignored; a leap year's 29 February rows are dropped.

Missing-value codes become NaN and are filled by linear interpolation in time (periodic over the
year); ``meta["filled"]`` counts the filled values per column.
"""

from __future__ import annotations

import csv
import difflib
from pathlib import Path

import numpy as np
import pandas as pd

import powermodel
from powermodel.errors import DataFileError

TYPICAL_YEAR = 2019
HOURS = 8760
COLUMNS = ("temp_air", "temp_dew", "relative_humidity", "pressure")

SHIPPED = {
    "sterling": "USA_VA_Sterling-Washington.Dulles.Intl.AP.724030_TMY3.epw",
    "tampa": "USA_FL_Tampa.Intl.AP.722110_TMY3.epw",
    "chicago": "USA_IL_Chicago-OHare.Intl.AP.725300_TMY3.epw",
    "golden": "USA_CO_Golden-NREL.724666_TMY3.epw",
}

# EnergyPlus Auxiliary Programs, "EnergyPlus Weather File (EPW) Data Dictionary": 35 fields a
# row; a value at or above the code is missing.
_EPW_HEADER = (
    "LOCATION",
    "DESIGN CONDITIONS",
    "TYPICAL/EXTREME PERIODS",
    "GROUND TEMPERATURES",
    "HOLIDAYS/DAYLIGHT SAVINGS",
    "COMMENTS 1",
    "COMMENTS 2",
    "DATA PERIODS",
)
_EPW_FIELDS = 35
_EPW_FIELD = {"temp_air": 6, "temp_dew": 7, "relative_humidity": 8, "pressure": 9}
_EPW_MISSING = {
    "temp_air": 99.9,
    "temp_dew": 99.9,
    "relative_humidity": 999.0,
    "pressure": 999999.0,
}

# NREL TMY3 User's Manual (Wilcox & Marion 2008): missing values are -9900.
_TMY3_COLUMN = {
    "temp_air": "Dry-bulb (C)",
    "temp_dew": "Dew-point (C)",
    "relative_humidity": "RHum (%)",
    "pressure": "Pressure (mbar)",
}
_TMY3_MISSING = -9900.0
_MBAR = 100.0  # [Pa/mbar]

# Bounds that only a wrong file, column or unit can break.
_PLAUSIBLE = {
    "temp_air": (-90.0, 65.0),
    "temp_dew": (-100.0, 40.0),
    "relative_humidity": (0.0, 110.0),
    "pressure": (30e3, 115e3),
}
_MOSTLY_MISSING = 0.5

# ASHRAE Handbook—Fundamentals 2009, Chapter 14, climatic design tables, in the order the EPW
# DESIGN CONDITIONS line quotes them (the same keys as ladybug-tools' DesignCondition).
_DESIGN_KEYS = {
    "heating": (
        "Month", "DB996", "DB990", "DP996", "HR_DP996", "DB_DP996", "DP990", "HR_DP990",
        "DB_DP990", "WS004c", "DB_WS004c", "WS010c", "DB_WS010c", "WS_DB996", "WD_DB996",
    ),
    "cooling": (
        "Month", "DBR", "DB004", "WB_DB004", "DB010", "WB_DB010", "DB020", "WB_DB020", "WB004",
        "DB_WB004", "WB010", "DB_WB010", "WB020", "DB_WB020", "WS_DB004", "WD_DB004", "DP004",
        "HR_DP004", "DB_DP004", "DP010", "HR_DP010", "DB_DP010", "DP020", "HR_DP020", "DB_DP020",
        "EN004", "DB_EN004", "EN010", "DB_EN010", "EN020", "DB_EN020", "Hrs_8-4_&_DB",
    ),
    "extremes": (
        "WS010", "WS025", "WS050", "WBmax", "DBmin_mean", "DBmax_mean", "DBmin_stddev",
        "DBmax_stddev", "DBmin05years", "DBmax05years", "DBmin10years", "DBmax10years",
        "DBmin20years", "DBmax20years", "DBmin50years", "DBmax50years",
    ),
}  # fmt: skip


def weather_dir() -> Path:
    """The repository's ``data/weather/`` folder, found from the package location."""
    return Path(powermodel.__file__).resolve().parents[1] / "data" / "weather"


def shipped_weather() -> dict[str, Path]:
    """Short name → path of each weather file shipped in ``data/weather/``."""
    return {name: weather_dir() / file for name, file in SHIPPED.items()}


def resolve_weather(name_or_path: str | Path) -> Path:
    """The weather file for a shipped short name (``"sterling"``) or a path.

    Raises
    ------
    DataFileError
        The name is neither a shipped name nor an existing file (with a did-you-mean), or a
        shipped file is missing from ``data/weather/``.
    """
    shipped = shipped_weather()
    key = str(name_or_path).strip().lower()
    if not isinstance(name_or_path, Path) and key in shipped:
        path = shipped[key]
        if not path.is_file():
            raise DataFileError(
                f"shipped weather {key!r} not found at {path}: powermodel runs from its "
                "repository checkout, where data/weather/ holds the EPW files"
            )
        return path
    path = Path(name_or_path).expanduser()
    if path.is_file():
        return path
    if path.suffix or len(path.parts) > 1:
        raise DataFileError(f"weather file {path} not found: give an existing .epw or .csv file")
    close = difflib.get_close_matches(key, list(shipped), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    raise DataFileError(
        f"weather {str(name_or_path)!r} is neither a shipped name nor a file: {hint}"
        f"use one of {', '.join(sorted(shipped))}, 'synthetic', or a path to an .epw or "
        "TMY3 .csv file"
    )


def read_weather(name_or_path: str | Path) -> tuple[pd.DataFrame, dict]:
    """Read a shipped name or a path: ``.csv`` as TMY3, anything else as EPW."""
    path = resolve_weather(name_or_path)
    reader = read_tmy3 if path.suffix.lower() == ".csv" else read_epw
    return reader(path)


def read_epw(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """Read an EnergyPlus EPW weather file.

    Parameters
    ----------
    path
        The ``.epw`` file: 8 header lines, then one row of 35 fields per hour.

    Returns
    -------
    data : pandas.DataFrame
        ``temp_air`` [°C], ``temp_dew`` [°C], ``relative_humidity`` [%], ``pressure`` [Pa];
        8,760 rows indexed by the hour-ending instant in local standard time (module docstring).
    meta : dict
        ``city``, ``state``, ``country``, ``data_source``, ``station_id`` (WMO), ``latitude``
        [°N], ``longitude`` [°E], ``utc_offset`` [h] (local standard time), ``elevation`` [m],
        ``file``, ``filled`` (values filled per column), and ``design_conditions``: the ASHRAE
        line as ``{"source", "heating", "cooling", "extremes"}``, each section keyed as the
        Handbook's tables (``DB004`` 0.4 % dry-bulb, ``WB_DB004`` its mean coincident wet-bulb,
        ``DBR`` mean daily range of the hottest month, ``WBmax`` extreme wet-bulb, ``DB996``
        99.6 % heating dry-bulb …; temperatures [°C], ``HR`` [g/kg], ``EN`` [kJ/kg], ``WS``
        [m/s], ``WD`` [°]), or None with the reason in ``design_conditions_note``.

    Raises
    ------
    DataFileError
        Not an EPW file, a row count other than 8,760, a row with a field missing or not a
        number, rows out of calendar order, implausible values, or a column mostly missing.
    """
    path = Path(path)
    lines = _read_lines(path)
    for i, key in enumerate(_EPW_HEADER):
        if i >= len(lines) or not lines[i].upper().startswith(key):
            found = repr(lines[i][:60]) if i < len(lines) else "missing"
            raise DataFileError(
                f"{path}: not an EPW weather file: line {i + 1} is {found}, expected it to "
                f"start with {key!r}; give an EnergyPlus .epw file (or a TMY3 .csv)"
            )
    rows = _epw_rows(lines, path)
    meta = _epw_location(lines[0], path)
    meta["design_conditions"], meta["design_conditions_note"] = _design_conditions(lines[1])
    table = _numbers(rows, [1, 2, 3, *_EPW_FIELD.values()], path, first_line=len(_EPW_HEADER) + 1)
    values = {name: table[:, 3 + k] for k, name in enumerate(_EPW_FIELD)}
    missing = {name: values[name] >= code for name, code in _EPW_MISSING.items()}
    data, meta["filled"] = _frame(table[:, 0], table[:, 1], table[:, 2], values, missing, path)
    return data, meta


def read_tmy3(path: str | Path) -> tuple[pd.DataFrame, dict]:
    """Read an NREL TMY3 CSV file.

    Parameters
    ----------
    path
        The ``.csv`` file: line 1 site metadata (USAF, name, state, time zone, latitude,
        longitude, elevation), line 2 column names, then 8,760 hourly rows.

    Returns
    -------
    data : pandas.DataFrame
        As :func:`read_epw`; pressure converted from mbar to Pa.
    meta : dict
        ``city``, ``state``, ``country`` (``"USA"``), ``data_source`` (``"TMY3"``),
        ``station_id`` (USAF), ``latitude`` [°N], ``longitude`` [°E], ``utc_offset`` [h],
        ``elevation`` [m], ``file``, ``filled``.

    Raises
    ------
    DataFileError
        As :func:`read_epw`, and for a missing column (named).
    """
    path = Path(path)
    lines = _read_lines(path)
    header = next(csv.reader(lines[:1]), [])
    names = lines[1].split(",") if len(lines) > 1 else []
    if len(header) < 7 or names[:2] != ["Date (MM/DD/YYYY)", "Time (HH:MM)"]:
        second = lines[1][:60] if len(lines) > 1 else "missing"
        raise DataFileError(
            f"{path}: not a TMY3 CSV file: line 2 is {second!r}, expected column names "
            "starting 'Date (MM/DD/YYYY),Time (HH:MM)' under a line of site metadata; give an "
            "NREL TMY3 .csv file (or an EnergyPlus .epw)"
        )
    absent = [col for col in _TMY3_COLUMN.values() if col not in names]
    if absent:
        raise DataFileError(f"{path}: TMY3 column {absent[0]!r} is missing from line 2")
    rows = lines[2:]
    _check_row_count(rows, path)
    fields = [names.index(col) for col in _TMY3_COLUMN.values()]
    table = _numbers([_tmy3_calendar(row) for row in rows], [0, 1, 2], path, first_line=3)
    values = _numbers(rows, fields, path, first_line=3).T
    values = dict(zip(_TMY3_COLUMN, values, strict=True))
    missing = {name: v <= _TMY3_MISSING for name, v in values.items()}
    values["pressure"] = values["pressure"] * _MBAR
    meta = {
        "city": header[1],
        "state": header[2],
        "country": "USA",
        "data_source": "TMY3",
        "station_id": header[0],
        **_coordinates([header[4], header[5], header[3], header[6]], path),
        "file": str(path),
    }
    data, meta["filled"] = _frame(table[:, 0], table[:, 1], table[:, 2], values, missing, path)
    return data, meta


def _read_lines(path: Path) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the weather file ({exc.strerror})") from exc
    return text.rstrip("\r\n").splitlines()


def _check_row_count(rows: list[str], path: Path) -> None:
    if len(rows) not in (HOURS, HOURS + 24):
        raise DataFileError(_row_count_message(len(rows), path))


def _row_count_message(n: int, path: Path) -> str:
    return (
        f"{path}: has {n} data rows, expected {HOURS} (one year, hourly; {HOURS + 24} with "
        "29 February): the file is truncated or not hourly; give a complete year's file"
    )


def _epw_rows(lines: list[str], path: Path) -> list[str]:
    rows = lines[len(_EPW_HEADER) :]
    _check_row_count(rows, path)
    counts = np.array([row.count(",") + 1 for row in rows])
    bad = np.flatnonzero(counts != _EPW_FIELDS)
    if bad.size:
        i = int(bad[0])
        raise DataFileError(
            f"{path}: data row {i + 1} (line {i + 1 + len(_EPW_HEADER)}) has {counts[i]} fields, "
            f"expected {_EPW_FIELDS} (and {bad.size - 1} more rows): a column is missing or extra; "
            "give an unmodified EPW file"
        )
    return rows


def _epw_location(line: str, path: Path) -> dict:
    f = [s.strip() for s in line.split(",")]
    if len(f) < 10:
        raise DataFileError(
            f"{path}: the LOCATION line has {len(f)} fields, expected 10 (city, state, "
            "country, source, WMO, latitude, longitude, time zone, elevation)"
        )
    return {
        "city": " ".join(f[1].split()),
        "state": f[2],
        "country": f[3],
        "data_source": f[4],
        "station_id": f[5],
        **_coordinates(f[6:10], path),
        "file": str(path),
    }


def _coordinates(fields: list[str], path: Path) -> dict:
    """latitude, longitude, UTC offset, elevation, in that order, as numbers."""
    keys = ("latitude", "longitude", "utc_offset", "elevation")
    try:
        return {k: float(v) for k, v in zip(keys, fields, strict=True)}
    except ValueError as exc:
        raise DataFileError(
            f"{path}: site latitude, longitude, time zone, elevation {fields} are not numbers"
        ) from exc


def _design_conditions(line: str) -> tuple[dict | None, str]:
    """The ASHRAE design conditions of an EPW header, or None and the reason."""
    f = [s.strip() for s in line.split(",")]
    if len(f) < 3 or f[1] in ("", "0"):
        return None, "the file quotes no ASHRAE design conditions"
    found: dict[str, object] = {"source": f[2]}
    for section, keys in _DESIGN_KEYS.items():
        start = next((i for i, s in enumerate(f) if s.lower() == section), None)
        if start is None:
            return None, f"no {section.title()} section in the DESIGN CONDITIONS line"
        stop = next((i for i in range(start + 1, len(f)) if f[i].isalpha()), len(f))
        numbers = f[start + 1 : stop]
        if len(numbers) != len(keys):
            return None, (
                f"the {section.title()} section has {len(numbers)} values, expected "
                f"{len(keys)} as in the 2009 ASHRAE Handbook layout"
            )
        found[section] = {k: float(v) for k, v in zip(keys, numbers, strict=True) if v}
    return found, ""


def _tmy3_calendar(row: str) -> str:
    """``MM/DD/YYYY,HH:MM,…`` → ``MM,DD,HH``."""
    date, time, *_ = [*row.split(",", 2), "", ""]
    return ",".join([*date.split("/")[:2], time.split(":")[0]])


def _numbers(rows: list[str], fields: list[int], path: Path, first_line: int) -> np.ndarray:
    """The given fields of every row as floats; an error names the first bad one."""
    split = [row.split(",") for row in rows]
    try:
        return np.array([[r[c] for c in fields] for r in split], dtype=float)
    except (ValueError, IndexError):
        for i, r in enumerate(split):
            for c in fields:
                text = r[c].strip() if c < len(r) else ""
                try:
                    float(text)
                except ValueError:
                    raise DataFileError(
                        f"{path}: line {first_line + i}, field {c + 1} is {text!r}, not a number"
                    ) from None
        raise


def _frame(
    month: np.ndarray,
    day: np.ndarray,
    hour: np.ndarray,
    values: dict[str, np.ndarray],
    missing: dict[str, np.ndarray],
    path: Path,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Check the calendar, fill missing values, check ranges; build the frame."""
    keep = ~((month == 2) & (day == 29))
    index = pd.date_range(f"{TYPICAL_YEAR}-01-01 01:00", periods=HOURS, freq="h", name="time")
    if keep.sum() != HOURS:
        raise DataFileError(_row_count_message(month.size, path))
    start = index - pd.Timedelta(hours=1)
    expected = np.stack([start.month, start.day, start.hour + 1])
    wrong = np.flatnonzero((np.stack([month, day, hour])[:, keep] != expected).any(axis=0))
    if wrong.size:
        i = int(wrong[0])
        got = "/".join(f"{v[keep][i]:g}" for v in (month, day, hour))
        raise DataFileError(
            f"{path}: data row {i + 1} is month/day/hour {got}, expected "
            f"{'/'.join(str(v) for v in expected[:, i])}: rows must be the 8760 hours of one "
            "year in order"
        )
    filled = {}
    columns = {}
    for name in COLUMNS:
        columns[name], filled[name] = _fill(values[name][keep], missing[name][keep], name, path)
        _check_range(columns[name], name, path)
    return pd.DataFrame(columns, index=index), filled


def _fill(values: np.ndarray, missing: np.ndarray, name: str, path: Path) -> tuple[np.ndarray, int]:
    """Linear interpolation in time across missing values, periodic over the year."""
    n = int(missing.sum())
    if n > _MOSTLY_MISSING * values.size:
        raise DataFileError(
            f"{path}: {name} is missing in {n} of {values.size} rows: the file cannot give "
            "this quantity; use another weather file"
        )
    if n == 0:
        return values, 0
    hours = np.arange(values.size)
    good = ~missing
    return np.interp(hours, hours[good], values[good], period=values.size), n


def _check_range(values: np.ndarray, name: str, path: Path) -> None:
    lo, hi = _PLAUSIBLE[name]
    bad = np.flatnonzero((values < lo) | (values > hi))
    if bad.size:
        raise DataFileError(
            f"{path}: {name} is {values[bad[0]]:g} in data row {bad[0] + 1}, outside "
            f"{lo:g}…{hi:g}: a wrong column or unit?"
        )
