"""Reader of the EnergyPlus chiller-curve data sets (``data/chillers/``).

Two flattened CSV files: ``Chillers_EIR_curves.csv`` (162 water-cooled chillers, from
EnergyPlus's ``Chillers.idf``) and ``AirCooledChiller_EIR_curves.csv`` (111 air-cooled, from
``AirCooledChiller.idf``), one ``Chiller:Electric:EIR`` object and its three curves a row.
See ``data/chillers/README.md``.
"""

from __future__ import annotations

import difflib
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError, PowerModelError
from powermodel.iotools import data_dir
from powermodel.models.cooling import ChillerCurves

CHILLER_DIR = data_dir() / "chillers"
WATER_COOLED = CHILLER_DIR / "Chillers_EIR_curves.csv"
AIR_COOLED = CHILLER_DIR / "AirCooledChiller_EIR_curves.csv"

RENAME = {
    "name": "name",
    "ref_capacity_W": "reference_capacity",
    "ref_COP": "reference_cop",
    "ref_LCHWT_C": "reference_temp_chw_leaving",
    "ref_ECT_C": "reference_temp_cond_entering",
    "min_PLR": "min_part_load",
    "condenser_type": "condenser_type",
}
UNITS = {
    "reference_capacity": "W",
    "reference_cop": "1",
    "reference_temp_chw_leaving": "°C",
    "reference_temp_cond_entering": "°C",
    "min_part_load": "1",
}
COEFFICIENTS = {"capft": 6, "eirft": 6}
PLR_CURVE_TYPES = ("Curve:Quadratic", "Curve:Cubic")
COLUMNS = [
    *RENAME,
    *(f"{curve}_c{i}" for curve, n in COEFFICIENTS.items() for i in range(1, n + 1)),
    "eirfplr_curve_type",
    *(f"eirfplr_c{i}" for i in range(1, 5)),
]


def read_chiller_curves(path: str | Path | None = None) -> tuple[pd.DataFrame, dict]:
    """Read an EnergyPlus chiller-curve CSV, one row per chiller.

    Parameters
    ----------
    path
        The CSV; by default the water-cooled set shipped in ``data/chillers/``.

    Returns
    -------
    data : pandas.DataFrame
        Indexed by ``name``. Columns ``reference_capacity`` [W] (NaN where the source says
        ``Autosize``), ``reference_cop`` [1], ``reference_temp_chw_leaving`` [°C],
        ``reference_temp_cond_entering`` [°C], ``min_part_load`` [1], ``condenser_type``, and the
        coefficient arrays ``capft`` (6), ``eirft`` (6) and ``eirfplr`` (3 for a quadratic,
        4 for a cubic).
    meta : dict
        ``path``, ``source``, ``units`` of the columns and ``autosized`` (names without a
        reference capacity).

    Raises
    ------
    powermodel.errors.DataFileError
        The file is missing or is not in this layout.
    """
    path = Path(path) if path is not None else WATER_COOLED
    raw = _read_csv(path)
    data = raw[list(RENAME)].rename(columns=RENAME).set_index("name")
    for source, column in RENAME.items():
        if column in UNITS:
            data[column] = _floats(raw, path, source, autosize=column == "reference_capacity")
    _check_ranges(data, path)
    for curve, n in COEFFICIENTS.items():
        data[curve] = list(_coefficients(raw, path, curve, n))
    data["eirfplr"] = _plr_coefficients(raw, path)
    meta = {
        "path": str(path),
        "source": "EnergyPlus DataSets Chillers.idf / AirCooledChiller.idf (Chiller:Electric:EIR)",
        "units": dict(UNITS),
        "autosized": list(data.index[data["reference_capacity"].isna()]),
    }
    return data, meta


def chiller(name: str, path: str | Path | None = None) -> ChillerCurves:
    """One chiller of a data set, by its EnergyPlus name.

    Parameters
    ----------
    name
        As in the file, e.g. ``"ElectricEIRChiller Carrier 19FA 5651kW/5.50COP/Vanes"``.
    path
        As for :func:`read_chiller_curves`.

    Raises
    ------
    powermodel.errors.PowerModelError
        No chiller of that name; the message suggests the closest.
    """
    data, meta = read_chiller_curves(path)
    if name not in data.index:
        raise PowerModelError(f"no chiller {name!r} in {meta['path']}{_suggest(name, data.index)}")
    return ChillerCurves(name=name, **data.loc[name].to_dict())


def _read_csv(path: Path) -> pd.DataFrame:
    """The file as text cells, with every expected column and at least one uniquely named row."""
    if not path.is_file():
        raise DataFileError(f"{path}: no such file")
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataFileError(f"{path}: not a readable CSV ({detail})") from None
    missing = [c for c in COLUMNS if c not in raw.columns]
    if missing:
        raise DataFileError(
            f"{path}: missing column(s) {', '.join(missing)}: not an EnergyPlus chiller-curve CSV"
        )
    if raw.empty:
        raise DataFileError(f"{path}: no chillers in the file")
    raw = raw.apply(lambda column: column.str.strip())
    repeated = raw["name"][raw["name"].duplicated()]
    if not repeated.empty:
        raise DataFileError(f"{path}: chiller {repeated.iloc[0]!r} appears more than once")
    return raw


def _floats(raw: pd.DataFrame, path: Path, column: str, autosize: bool = False) -> np.ndarray:
    """One column as floats; ``Autosize``, where allowed, reads as NaN."""
    text = raw[column]
    values = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float)
    allowed = autosize & (text.str.lower() == "autosize").to_numpy()
    bad = np.flatnonzero(np.isnan(values) & ~allowed)
    if bad.size:
        i = bad[0]
        raise DataFileError(
            f"{path}: {column} of chiller {raw['name'].iloc[i]!r} (row {i + 1}) is "
            f"{text.iloc[i]!r}, not a number"
        )
    return values


def _check_ranges(data: pd.DataFrame, path: Path) -> None:
    for column, ok in (
        ("reference_cop", data["reference_cop"] > 0.0),
        ("min_part_load", (data["min_part_load"] > 0.0) & (data["min_part_load"] <= 1.0)),
    ):
        if not ok.all():
            name = ok.index[~ok.to_numpy()][0]
            raise DataFileError(
                f"{path}: {column} of chiller {name!r} is {data.at[name, column]:g}, "
                "outside its range (COP > 0, 0 < minimum part-load ratio ≤ 1)"
            )


def _coefficients(raw: pd.DataFrame, path: Path, curve: str, n: int) -> np.ndarray:
    """An ``(rows, n)`` array of one curve's coefficients."""
    return np.column_stack([_floats(raw, path, f"{curve}_c{i}") for i in range(1, n + 1)])


def _plr_coefficients(raw: pd.DataFrame, path: Path) -> list[np.ndarray]:
    """The part-load curve of each row: 3 coefficients if quadratic, 4 if cubic."""
    kind = raw["eirfplr_curve_type"]
    unknown = ~kind.isin(PLR_CURVE_TYPES)
    if unknown.any():
        i = int(np.flatnonzero(unknown)[0])
        raise DataFileError(
            f"{path}: eirfplr_curve_type of chiller {raw['name'].iloc[i]!r} (row {i + 1}) is "
            f"{kind.iloc[i]!r}, not one of {' or '.join(PLR_CURVE_TYPES)}"
        )
    cubic = (kind == "Curve:Cubic").to_numpy()
    # A quadratic's fourth cell is unused (and empty in the data sets).
    c = _coefficients(
        raw.assign(eirfplr_c4=raw["eirfplr_c4"].where(cubic, "0")), path, "eirfplr", 4
    )
    return [row if is_cubic else row[:3] for row, is_cubic in zip(c, cubic, strict=True)]


def _suggest(name: str, names: pd.Index) -> str:
    """``": did you mean …?"`` for a likely typo or a fragment of a name, else a pointer."""
    lowered = name.lower()
    close = [n for n in names if lowered in n.lower()] or difflib.get_close_matches(
        name, list(names), n=1, cutoff=0.6
    )
    if close:
        return f": did you mean {close[0]!r}?"
    return f" ({len(names)} chillers; read_chiller_curves() lists them)"
