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
year); ``meta["filled"]`` counts the filled values per column. :func:`site_of` names a source's
site and time zone from its first line alone.
"""

from __future__ import annotations

import csv
import difflib
import io
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from powermodel.errors import DataFileError
from powermodel.iotools import data_dir, exists, is_file

if TYPE_CHECKING:  # read when a file is: loading a scenario names its weather, reads none
    import pandas as pd

TYPICAL_YEAR = 2019
HOURS = 8760
COLUMNS = ("temp_air", "temp_dew", "relative_humidity", "pressure")

SHIPPED = {
    "sterling": "USA_VA_Sterling-Washington.Dulles.Intl.AP.724030_TMY3.epw",
    "tampa": "USA_FL_Tampa.Intl.AP.722110_TMY3.epw",
    "chicago": "USA_IL_Chicago-OHare.Intl.AP.725300_TMY3.epw",
    "golden": "USA_CO_Golden-NREL.724666_TMY3.epw",
}
# The site and its IANA time zone of each shipped file. The LOCATION lines name the stations
# ("Washington Dc Dulles IntL Ar"); these are the towns the file names give.
SITES = {
    "sterling": ("Sterling, Virginia", "America/New_York"),
    "tampa": ("Tampa, Florida", "America/New_York"),
    "chicago": ("Chicago, Illinois", "America/Chicago"),
    "golden": ("Golden, Colorado", "America/Denver"),
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
_CALENDAR = ("month", "day", "hour")
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
# A weather file's first line is under 1 kB; reading no more keeps a huge binary cheap.
_MAX_LINE = 1 << 16  # [bytes]
# Air temperatures of 180–340 are kelvin (−93…67 °C); in °C no air reaches 180.
_KELVIN = (180.0, 340.0)

# Site numbers: latitude and longitude by their definitions; UTC offsets as in use, UTC−12
# (Baker Island) to UTC+14 (Line Islands), the IANA tz database's range and the EPW data
# dictionary's; elevation from the Dead Sea shore (−430 m) to Everest (8,849 m), with a margin.
_SITE = {
    "latitude": (-90.0, 90.0, "°N"),
    "longitude": (-180.0, 180.0, "°E"),
    "utc_offset": (-12.0, 14.0, "h"),
    "elevation": (-500.0, 9000.0, "m"),
}

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
    """The shipped weather files' folder (:func:`~powermodel.iotools.data_dir`)."""
    return data_dir() / "weather"


def shipped_weather() -> dict[str, Path]:
    """Short name → path of each weather file shipped in ``data/weather/``."""
    return {name: weather_dir() / file for name, file in SHIPPED.items()}


@cache
def _shipped_by_path() -> dict[Path, str]:
    """Resolved path -> short name of each shipped file (once a process: every scenario loaded
    asks which site its weather is)."""
    return {file.resolve(): name for name, file in shipped_weather().items()}


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
        if not is_file(path):
            raise DataFileError(
                f"shipped weather {key!r} not found at {path}: the installation lacks its "
                "data; reinstall powermodel"
            )
        return path
    path = Path(name_or_path).expanduser()
    if is_file(path):
        return path
    if exists(path):  # a folder, a device, a pipe
        raise DataFileError(f"weather {path} is not a file: give an .epw or .csv file")
    # a misspelt shipped name in a scenario file arrives as a path beside the file: hint it too
    close = [] if path.suffix else difflib.get_close_matches(path.name.lower(), list(shipped), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    if path.suffix or len(path.parts) > 1:
        raise DataFileError(
            f"weather file {path} not found: {hint}give an existing .epw or .csv file"
            + (f" or a shipped name ({', '.join(sorted(shipped))})" if close else "")
        )
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


def site_of(name_or_path: str | Path) -> tuple[str, str | None]:
    """The site name and time zone of a weather source, reading no more than its first line.

    Parameters
    ----------
    name_or_path
        A shipped short name (``"sterling"``) or a path, as :func:`read_weather` takes.

    Returns
    -------
    name : str
        A shipped file's town (``"Sterling, Virginia"``), or a file's ``city, state``.
    timezone : str or None
        A shipped file's IANA zone (``"America/New_York"``). For another file, the fixed zone
        ``Etc/GMT±N`` of its whole-hour standard offset, with POSIX's inverted sign (UTC−5 is
        ``Etc/GMT+5``); it keeps no daylight saving, as the file's own times do. A fractional
        offset has the zone of :data:`FRACTIONAL_ZONES`; None for one no zone keeps without
        daylight saving.

    Raises
    ------
    DataFileError
        As :func:`resolve_weather`; or the first line is not an EPW LOCATION line or a TMY3
        site line, or its coordinates are not finite numbers within physical bounds.
    """
    path = resolve_weather(name_or_path)
    shipped = _shipped_by_path()
    if path.resolve() in shipped:
        return SITES[shipped[path.resolve()]]
    try:
        with path.open("rb") as f:
            # the first line, whatever ends it (LF, CRLF, or an old Mac's CR)
            line = next(iter(_decode(f.read(_MAX_LINE), path).splitlines()), "").strip()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the weather file ({exc.strerror})") from exc
    if path.suffix.lower() == ".csv":
        site = _tmy3_site(next(csv.reader([line]), []), path)
    else:
        _check_epw_header([line], path, count=1)
        site = _epw_location(line, path)
    name = ", ".join(s for s in (site["city"], site["state"]) if s not in ("", "-"))
    return name or path.stem, standard_zone(site["utc_offset"])


# Zones whose standard time is a fraction of an hour from UTC and that keep no daylight saving
# (IANA tzdata 2024): the clock of a weather file's standard time. Any zone of that offset
# gives the same hours; the Etc zones name whole hours only.
FRACTIONAL_ZONES = {
    -9.5: "Pacific/Marquesas",
    3.5: "Asia/Tehran",
    4.5: "Asia/Kabul",
    5.5: "Asia/Kolkata",
    5.75: "Asia/Kathmandu",
    6.5: "Asia/Yangon",
    8.75: "Australia/Eucla",
    9.5: "Australia/Darwin",
}


def standard_zone(offset: float) -> str | None:
    """The time zone of a standard time ``offset`` hours from UTC, without daylight saving;
    None for an offset no such zone keeps (the site's zone must then be given)."""
    if offset.is_integer():
        return f"Etc/GMT{-int(offset):+d}" if offset else "Etc/GMT"
    return FRACTIONAL_ZONES.get(offset)


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
        Not an EPW file (or a binary one); site coordinates that are not finite numbers or
        lie outside physical bounds; rows that are not the hours of one year (the days missing
        or extra named) or out of calendar order; a row with a field missing or not a finite
        number; temperatures in kelvin, implausible values, or a column mostly missing.
    """
    path = Path(path)
    lines = _read_lines(path)
    _check_epw_header(lines, path)
    rows = _epw_rows(lines, path)
    meta = _epw_location(lines[0], path)
    meta["design_conditions"], meta["design_conditions_note"] = _design_conditions(lines[1])
    fields = [1, 2, 3, *_EPW_FIELD.values()]
    labels = [f"field {c + 1} ({n})" for c, n in zip(fields, _CALENDAR + COLUMNS, strict=True)]
    table = _numbers(rows, fields, labels, path, first_line=len(_EPW_HEADER) + 1)
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
    if names[:2] != ["Date (MM/DD/YYYY)", "Time (HH:MM)"]:
        second = repr(lines[1][:60]) if len(lines) > 1 else "missing"
        raise DataFileError(
            f"{path}: not a TMY3 CSV file: line 2 is {second}, expected column names "
            "starting 'Date (MM/DD/YYYY),Time (HH:MM)' under a line of site metadata; give an "
            "NREL TMY3 .csv file (or an EnergyPlus .epw)"
        )
    absent = [col for col in _TMY3_COLUMN.values() if col not in names]
    if absent:
        raise DataFileError(
            f"{path}: TMY3 column {absent[0]!r} is missing from line 2; give an unmodified "
            "NREL TMY3 .csv file"
        )
    meta = _tmy3_site(header, path)
    rows = lines[2:]
    _check_row_count(rows, path)
    calendar = [f"the {n} in field {1 + (n == 'hour')}" for n in _CALENDAR]
    table = _numbers([_tmy3_calendar(row) for row in rows], [0, 1, 2], calendar, path, 3)
    fields = [names.index(col) for col in _TMY3_COLUMN.values()]
    labels = [f"field {names.index(col) + 1} ({col})" for col in _TMY3_COLUMN.values()]
    values = dict(zip(_TMY3_COLUMN, _numbers(rows, fields, labels, path, 3).T, strict=True))
    missing = {name: v <= _TMY3_MISSING for name, v in values.items()}
    values["pressure"] = values["pressure"] * _MBAR
    data, meta["filled"] = _frame(table[:, 0], table[:, 1], table[:, 2], values, missing, path)
    return data, meta


def _read_lines(path: Path) -> list[str]:
    """The file's lines, trailing blank ones dropped; any line ending."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read the weather file ({exc.strerror})") from exc
    return _decode(raw, path).rstrip().splitlines()


def _decode(raw: bytes, path: Path) -> str:
    """UTF-8 text, its BOM dropped; else Latin-1, in which older EPW files write city names."""
    if b"\x00" in raw:
        raise DataFileError(
            f"{path}: a binary file, not a weather file; give an EnergyPlus .epw or an NREL "
            "TMY3 .csv file"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _check_epw_header(lines: list[str], path: Path, count: int = len(_EPW_HEADER)) -> None:
    """The first ``count`` lines start with the EPW header keys, in order."""
    for i, key in enumerate(_EPW_HEADER[:count]):
        if i >= len(lines) or not lines[i].upper().startswith(key):
            found = repr(lines[i][:60]) if i < len(lines) else "missing"
            raise DataFileError(
                f"{path}: not an EPW weather file: line {i + 1} is {found}, expected it to "
                f"start with {key!r}; give an EnergyPlus .epw file (or a TMY3 .csv)"
            )


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
            f"{path}: the LOCATION line has {len(f)} fields, expected 10 (LOCATION, city, "
            "state, country, source, WMO, latitude, longitude, time zone, elevation); give an "
            "unmodified EPW file"
        )
    return {
        "city": " ".join(f[1].split()),
        "state": f[2],
        "country": f[3],
        "data_source": f[4],
        "station_id": f[5],
        **_coordinates(f[6:10], [7, 8, 9, 10], "the LOCATION line (line 1)", path),
        "file": str(path),
    }


def _tmy3_site(header: list[str], path: Path) -> dict:
    """The site metadata of a TMY3 file's line 1 (split into fields)."""
    if len(header) < 7:
        raise DataFileError(
            f"{path}: line 1 has {len(header)} site fields, expected 7 (USAF, name, state, time "
            "zone, latitude, longitude, elevation); give an unmodified NREL TMY3 .csv file"
        )
    return {
        "city": header[1],
        "state": header[2],
        "country": "USA",
        "data_source": "TMY3",
        "station_id": header[0],
        **_coordinates([header[4], header[5], header[3], header[6]], [5, 6, 4, 7], "line 1", path),
        "file": str(path),
    }


def _coordinates(fields: list[str], numbers: list[int], where: str, path: Path) -> dict:
    """Latitude, longitude, UTC offset, elevation (in that order, at field ``numbers`` of
    ``where``) as numbers within the bounds of :data:`_SITE`."""
    site = {}
    for (key, (lo, hi, unit)), text, number in zip(_SITE.items(), fields, numbers, strict=True):
        value = _finite(text)
        if value is None:
            raise DataFileError(
                f"{path}: {where}, field {number} ({key}) is {text!r}, not a finite number; "
                f"give the site's {key} [{unit}]"
            )
        if not lo <= value <= hi:
            raise DataFileError(
                f"{path}: {where}, field {number}: {key} {value:g} {unit} is outside "
                f"{lo:g}…{hi:g} {unit}; correct the site's {key}"
            )
        site[key] = value
    return site


def _finite(text: str) -> float | None:
    """``text`` as a finite number, else None (``float`` alone takes "nan", "inf", "1e400")."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if np.isfinite(value) else None


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
        found[section] = {k: _finite(v) for k, v in zip(keys, numbers, strict=True) if v}
        bad = next((k for k, v in found[section].items() if v is None), None)
        if bad:
            return None, f"the {section.title()} section's {bad} is not a finite number"
    problem = _design_day_problem(found["cooling"])
    return (None, problem) if problem else (found, "")


# What a design day is drawn from (the 0.4, 1 and 2 % cooling rows and the daily range), and
# the bounds only a garbled line breaks: the temperatures of _PLAUSIBLE, a range under 40 K.
_DESIGN_DAY_KEYS = ("DB004", "WB_DB004", "DB010", "WB_DB010", "DB020", "WB_DB020", "DBR")


def _design_day_problem(cooling: dict) -> str:
    """Why the cooling design conditions cannot give a design day ("" if they can)."""
    missing = [k for k in _DESIGN_DAY_KEYS if k not in cooling]
    if missing:
        return f"the Cooling section has no {missing[0]}"
    low, high = _PLAUSIBLE["temp_air"]
    for tag in ("004", "010", "020"):
        dry, wet = cooling[f"DB{tag}"], cooling[f"WB_DB{tag}"]
        if not low <= wet <= dry <= high:
            return f"the Cooling section's DB{tag} {dry:g} and WB_DB{tag} {wet:g} are no air"
    if not 0 <= cooling["DBR"] <= 40:
        return f"the Cooling section's daily range DBR {cooling['DBR']:g} K is none a day has"
    return ""


def _tmy3_calendar(row: str) -> str:
    """``MM/DD/YYYY,HH:MM,…`` → ``MM,DD,HH``."""
    date, time, *_ = [*row.split(",", 2), "", ""]
    month, day, *_ = [*date.split("/"), "", ""]
    return ",".join([month, day, time.split(":")[0]])


def _numbers(
    rows: list[str], fields: list[int], labels: list[str], path: Path, first_line: int
) -> np.ndarray:
    """The given fields of every row as finite floats; an error names the first bad one by its
    line and ``labels`` entry."""
    table = _parsed(rows, fields)
    if table is not None and np.isfinite(table).all():
        return table
    import pandas as pd  # noqa: PLC0415 - a scenario's keys and presets need no pandas

    split = (row.split(",") for row in rows)
    cells = pd.DataFrame(
        [[r[c].strip() if c < len(r) else "" for c in fields] for r in split],
        columns=labels,
        dtype=object,
    )
    table = cells.apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    bad = np.argwhere(~np.isfinite(table))
    if bad.size:
        i, k = bad[0]
        text = cells.iat[i, k]
        raise DataFileError(
            f"{path}: line {first_line + i}, {labels[k]} is {repr(text) if text else 'empty'}, "
            "not a finite number; a missing value is written as the format's missing code"
        )
    return table


def _parsed(rows: list[str], fields: list[int]) -> np.ndarray | None:
    """The given fields of rows of plain numbers, by pandas' C reader (a tenth of the time of
    splitting the rows in Python); None where any cell is not a number (an empty one, a word,
    a row short of a field), which :func:`_numbers` then finds and names. A byte-order mark
    the reader would drop from the first row is such a cell too."""
    if rows and rows[0].startswith("\ufeff"):
        return None
    import pandas as pd  # noqa: PLC0415 - a scenario's keys and presets need no pandas

    try:
        frame = pd.read_csv(
            io.StringIO("\n".join(rows)),
            sep=",",
            header=None,
            usecols=fields,
            dtype=np.float64,
            quoting=csv.QUOTE_NONE,
            skipinitialspace=True,
            skip_blank_lines=False,
            na_filter=False,
            engine="c",
        )
    except (ValueError, pd.errors.ParserError):
        return None
    return frame[fields].to_numpy() if len(frame) == len(rows) else None


def _frame(
    month: np.ndarray,
    day: np.ndarray,
    hour: np.ndarray,
    values: dict[str, np.ndarray],
    missing: dict[str, np.ndarray],
    path: Path,
) -> tuple[pd.DataFrame, dict[str, int]]:
    """Check the calendar, fill missing values, check ranges; build the frame."""
    import pandas as pd  # noqa: PLC0415 - a scenario's keys and presets need no pandas

    keep = ~((month == 2) & (day == 29))
    index = pd.date_range(f"{TYPICAL_YEAR}-01-01 01:00", periods=HOURS, freq="h", name="time")
    if keep.sum() != HOURS:
        raise DataFileError(_calendar_message(month, day, path))
    start = index - pd.Timedelta(hours=1)
    expected = np.stack([start.month, start.day, start.hour + 1])
    wrong = np.flatnonzero((np.stack([month, day, hour])[:, keep] != expected).any(axis=0))
    if wrong.size:
        i = int(wrong[0])
        got = "/".join(f"{v[keep][i]:g}" for v in (month, day, hour))
        raise DataFileError(
            f"{path}: data row {np.flatnonzero(keep)[i] + 1} is month/day/hour {got}, expected "
            f"{'/'.join(str(v) for v in expected[:, i])}: rows must be the 8760 hours of one "
            "year in order"
        )
    filled = {}
    columns = {}
    for name in COLUMNS:
        if name in ("temp_air", "temp_dew"):
            _check_celsius(values[name][keep], name, path)
        columns[name], filled[name] = _fill(values[name][keep], missing[name][keep], name, path)
        _check_range(columns[name], name, path, rows=np.flatnonzero(keep))
    return pd.DataFrame(columns, index=index), filled


def _calendar_message(month: np.ndarray, day: np.ndarray, path: Path) -> str:
    """Why the rows are not the hours of one year: the days missing, extra or not 24 rows."""
    import pandas as pd  # noqa: PLC0415 - a scenario's keys and presets need no pandas

    days = pd.date_range(f"{TYPICAL_YEAR}-01-01", periods=365, freq="D")
    key = (days.month * 100 + days.day).to_numpy()
    rows = pd.Series(month * 100 + day).value_counts()
    per_day = rows.reindex(key, fill_value=0).to_numpy()
    problems = ["29 February is present"] if month.size == HOURS and 229 in rows.index else []
    problems += [
        f"{days[i].day} {days[i].month_name()} "
        + ("is missing" if per_day[i] == 0 else f"has {per_day[i]} rows")
        for i in np.flatnonzero(per_day != 24)[:4]
    ]
    problems += [
        f"month/day {k // 100:g}/{k % 100:g} is no date"
        for k in rows.index.difference([*key, 229])[:4]
    ]
    return (
        f"{path}: the {month.size} data rows are not the {HOURS} hours of one year: "
        f"{', '.join(problems[:4])}{' …' if len(problems) > 4 else ''}; give one complete "
        f"year, {HOURS} rows (or {HOURS + 24} with 29 February)"
    )


def _check_celsius(values: np.ndarray, name: str, path: Path) -> None:
    """Refuse a temperature column mostly in the kelvin range (where EPW's 99.9 code is not)."""
    lo, hi = _KELVIN
    if np.mean((values >= lo) & (values <= hi)) > 0.5:
        raise DataFileError(
            f"{path}: {name} looks like kelvin (median {np.median(values):g}): EPW and TMY3 "
            "temperatures are in °C; convert the column (°C = K − 273.15)"
        )


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


def _check_range(values: np.ndarray, name: str, path: Path, rows: np.ndarray) -> None:
    """Values within :data:`_PLAUSIBLE`; ``rows`` are their data rows, counted from 0."""
    lo, hi = _PLAUSIBLE[name]
    bad = np.flatnonzero((values < lo) | (values > hi))
    if bad.size:
        raise DataFileError(
            f"{path}: {name} is {values[bad[0]]:g} in data row {rows[bad[0]] + 1}, outside "
            f"{lo:g}…{hi:g}: a wrong column or unit?"
        )
