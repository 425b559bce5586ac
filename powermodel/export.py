"""Writing profiles: CSV (pyarrow), Parquet, NetCDF. The format follows the file extension."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import xarray as xr

from powermodel.analysis import resample as coarsen
from powermodel.analysis import step_seconds
from powermodel.errors import PowerModelError
from powermodel.scenario import parse_duration

FORMATS = (".csv", ".parquet", ".nc")


def profile_table(ds: xr.Dataset, headers: bool = True) -> pa.Table:
    """The ``time`` variables of a Dataset as an Arrow table.

    ``time`` is UTC; with ``headers`` the columns are named ``name [unit]``. ``job_state`` is
    written as state names.
    """
    time = pa.array(ds["time"].values.astype("datetime64[ns]")).cast(pa.timestamp("ns", tz="UTC"))
    columns: dict[str, pa.Array] = {"time": time}
    for name, var in ds.data_vars.items():
        if var.dims != ("time",):
            continue
        units = var.attrs.get("units", "")
        label = f"{name} [{units}]" if headers and units not in ("", "1") else name
        if "flag_meanings" in var.attrs:
            names = np.array(var.attrs["flag_meanings"].split())
            codes = np.searchsorted(var.attrs["flag_values"], var.values)
            columns[label] = pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), names)
        else:
            columns[label] = pa.array(var.values)
    return pa.table(columns)


def iso_times(time: pa.Array, dt: float) -> pa.Array:
    """ISO-8601 UTC strings (``2024-07-01T00:00:00Z``), with fractions only where ``dt`` needs them.

    Casting naive timestamps and patching the separator is 20 times faster than ``strftime``.
    """
    unit = "s" if float(dt).is_integer() else "ms"
    text = pc.cast(time.cast(pa.timestamp(unit, tz="UTC")).cast(pa.timestamp(unit)), pa.string())
    text = pc.replace_substring(text, " ", "T", max_replacements=1)
    return pc.binary_join_element_wise(text, pa.scalar("Z"), "")


def check_path(path: str | Path) -> Path:
    """The output path, if its extension names a format this module writes."""
    path = Path(path)
    if path.suffix not in FORMATS:
        raise PowerModelError(
            f"cannot write {str(path)!r}: unknown extension {path.suffix!r}; use one of "
            + ", ".join(FORMATS)
        )
    return path


def write(ds: xr.Dataset, path: str | Path, resample: str | None = None) -> Path:
    """Write a Dataset's profile to ``path``: ``.csv``, ``.parquet`` or ``.nc``.

    Parameters
    ----------
    ds
        A simulated Dataset.
    path
        Output file; its extension chooses the format.
    resample
        A coarser step (``"1min"``): interval means plus per-interval min and max.
    """
    path = check_path(path)
    if resample is not None:
        ds = coarsen(ds, resample)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".nc":
        ds.to_netcdf(path)
    elif path.suffix == ".parquet":
        pq.write_table(profile_table(ds, headers=False), path)
    else:
        table = profile_table(ds)
        table = table.set_column(0, "time", iso_times(table["time"], step_seconds(ds)))
        pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="needed"))
    return path


# --- grid tools --------------------------------------------------------------------------------
# What the grid sees (grid_power, grid_reactive_power) in the forms grid planners' tools read.
# Each tool gets a resolution it is built for; a coarser export carries the min and max of each
# interval beside its mean, so peaks are not lost to averaging.

TOOLS = {
    # format: (default step, what the tool is for)
    "opendss": (None, "OpenDSS LoadShape for duty-cycle (native step) or daily/yearly runs"),
    "gridlabd": ("1min", "GridLAB-D player files and a runnable .glm"),
    "pypsa": ("1h", "PyPSA CSV folder (import_from_csv_folder)"),
    "pandapower": ("15min", "pandapower time-series profile (DFData/ConstControl)"),
    "playback": (None, "time/P/Q playback CSV for dynamic-simulation tools (PSS/E, PowerFactory)"),
    "csv": (None, "the whole profile, profile.csv (with min/max columns when resampled)"),
    "parquet": (None, "the whole profile, profile.parquet"),
    "netcdf": (None, "the whole Dataset with the scenario in its attributes, profile.nc"),
}
DATASET_FILES = {"csv": "profile.csv", "parquet": "profile.parquet", "netcdf": "profile.nc"}
LOAD = "datacenter"  # the load's name in every tool
DBL_POINTS = 100_000  # longer OpenDSS shapes go to binary doubles, read far faster than text


def export_tool(
    ds: xr.Dataset, tool: str, directory: str | Path, resample: str | None = None
) -> list[Path]:
    """Write the grid-side profile for a grid tool into ``directory``; returns the files.

    Parameters
    ----------
    ds
        A simulated Dataset (with ``grid_power`` and ``grid_reactive_power``).
    tool
        One of :data:`TOOLS`.
    directory
        Created if missing.
    resample
        Step of the export; by default the tool's (``TOOLS``), or the Dataset's own where the
        tool takes any step. Coarser exports add each interval's min and max.
    """
    if tool not in TOOLS:
        raise PowerModelError(f"unknown export format {tool!r}: use one of {', '.join(TOOLS)}")
    if tool in DATASET_FILES:
        return [write(ds, Path(directory) / DATASET_FILES[tool], resample)]
    for name in ("grid_power", "grid_reactive_power"):
        if name not in ds:
            raise PowerModelError(f"the profile has no {name}: export a simulated Dataset")
    step = resample or TOOLS[tool][0]
    dt = step_seconds(ds)
    if step is not None and abs(parse_duration(step) - dt) > 1e-9 * dt:
        ds = coarsen(ds[["grid_power", "grid_reactive_power"]], step)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    writer = {
        "opendss": _opendss,
        "gridlabd": _gridlabd,
        "pypsa": _pypsa,
        "pandapower": _pandapower,
        "playback": _playback,
    }[tool]
    return writer(ds, directory)


def _grid(ds: xr.Dataset) -> tuple[np.ndarray, np.ndarray, float]:
    return ds["grid_power"].values, ds["grid_reactive_power"].values, step_seconds(ds)


def _header(ds: xr.Dataset, comment: str) -> str:
    start = np.datetime_as_string(ds["time"].values[0], unit="s")
    return (
        f"{comment} powermodel {ds.attrs.get('powermodel_version', '')}: "
        f"{ds.attrs.get('title', 'profile')}; grid_power and grid_reactive_power at the point "
        f"of interconnection, from {start} UTC, step {step_seconds(ds):g} s, "
        f"{ds.sizes['time']} points\n"
    )


def _opendss(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    n = p.size
    binary = n > DBL_POINTS
    files, refs = [], []
    for name, values in (("p", p * 1000.0), ("q", q * 1000.0)):  # kW, kvar
        path = directory / f"{LOAD}_{name}.{'dbl' if binary else 'csv'}"
        if binary:
            values.astype("<f8").tofile(path)
        else:
            np.savetxt(path, values, fmt="%.6f")
        refs.append(f"({'dblfile' if binary else 'file'}={path.name})")
        files.append(path)
    shape = directory / "loadshape.dss"
    shape.write_text(
        _header(ds, "!")
        + "! actual kW and kvar (useactual=yes): whatever kW the load has, it follows these\n"
        + f"New LoadShape.{LOAD} npts={n} sinterval={dt:g} mult={refs[0]} qmult={refs[1]} "
        + "useactual=yes\n"
    )
    example = directory / "example.dss"
    short_circuit, x_r = _grid_strength(ds)
    example.write_text(
        _header(ds, "!")
        + "! A source with the site's short-circuit strength feeding the datacenter at its POI.\n"
        + "Clear\n"
        + f"New Circuit.powermodel basekv=138 pu=1.0 phases=3 bus1=poi MVAsc3={short_circuit:g} "
        + f"MVAsc1={short_circuit:g} x1r1={x_r:g} x0r0={x_r:g}\n"
        + "Redirect loadshape.dss\n"
        + f"New Load.{LOAD} bus1=poi phases=3 kv=138 kw={p.max() * 1000:.3f} pf=1 model=1 "
        + f"vminpu=0.7 duty={LOAD} daily={LOAD} yearly={LOAD}\n"
        + f"New Monitor.poi element=Load.{LOAD} terminal=1 mode=1 ppolar=no\n"
        + "Set voltagebases=[138]\nCalcVoltageBases\n"
        + f"Set mode=duty stepsize={dt:g}s number={n}\n"
        + "Solve\n"
    )
    return [*files, shape, example]


def _grid_strength(ds: xr.Dataset) -> tuple[float, float]:
    """Short-circuit MVA and X/R of the Dataset's scenario (typical values for a trace)."""
    grid = json.loads(ds.attrs.get("scenario", "{}")).get("grid", {})
    return float(grid.get("short_circuit", 2400.0)), float(grid.get("x_r", 10.0))


def _gridlabd(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    if dt < 1.0 or not float(dt).is_integer():
        raise PowerModelError(
            f"GridLAB-D players step in whole seconds; the profile's step is {dt:g} s: export with "
            "--resample 1s or coarser"
        )
    stamps = np.datetime_as_string(ds["time"].values, unit="s")
    stamps = np.char.replace(stamps, "T", " ")
    per_phase = [
        f"{s},{a:+.3f}{b:+.3f}j" for s, a, b in zip(stamps, p * 1e6 / 3, q * 1e6 / 3, strict=True)
    ]
    player = directory / f"{LOAD}.player"
    player.write_text("\n".join(per_phase) + "\n")
    start = str(stamps[0])
    stop = str(
        np.datetime_as_string(ds["time"].values[-1] + np.timedelta64(int(dt), "s"), unit="s")
    ).replace("T", " ")
    model = directory / "example.glm"
    players = "\n".join(
        f'  object player {{ property constant_power_{ph}; file "{player.name}"; }};'
        for ph in "ABC"
    )
    model.write_text(
        _header(ds, "//")
        + "// The datacenter as a constant-power load (per phase: a third of P + jQ, in VA) at a\n"
        + "// swing bus; the recorder writes what the grid sees at each step.\n"
        + f"clock {{\n  timezone \"UTC0\";\n  starttime '{start}';\n  stoptime '{stop}';\n}}\n"
        + "module tape;\nmodule powerflow { solver_method NR; }\n"
        + "object meter {\n  name poi;\n  bustype SWING;\n  phases ABCN;\n"
        + "  nominal_voltage 79674;\n}\n"
        + f"object load {{\n  name {LOAD};\n  parent poi;\n  phases ABCN;\n"
        + f"  nominal_voltage 79674;\n{players}\n}}\n"
        + "object recorder {\n  parent poi;\n"
        + '  property "measured_real_power,measured_reactive_power";\n'
        + f'  file "poi.csv";\n  interval {int(dt)};\n}}\n'
    )
    return [player, model]


def _envelope_columns(ds: xr.Dataset) -> dict[str, np.ndarray]:
    return {name: ds[name].values for name in ("grid_power_min", "grid_power_max") if name in ds}


def _pypsa(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    index = pd.DatetimeIndex(ds["time"].values, name="snapshot")
    files = {
        "snapshots.csv": pd.DataFrame({"snapshot": index, "weightings": dt / 3600.0}),
        "buses.csv": pd.DataFrame({"name": ["poi"], "v_nom": [138.0]}),
        "loads.csv": pd.DataFrame({"name": [LOAD], "bus": ["poi"]}),
        "loads-p_set.csv": pd.DataFrame({LOAD: p}, index=index),
        "loads-q_set.csv": pd.DataFrame({LOAD: q}, index=index),
    }
    envelope = _envelope_columns(ds)
    if envelope:
        files["powermodel-envelope.csv"] = pd.DataFrame(envelope, index=index)
    out = []
    for name, frame in files.items():
        path = directory / name
        frame.to_csv(path, index=not name.startswith(("snapshots", "buses", "loads.")))
        out.append(path)
    return out


def _pandapower(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, _ = _grid(ds)
    frame = pd.DataFrame(
        {"time": ds["time"].values, "p_mw": p, "q_mvar": q, **_envelope_columns(ds)}
    )
    frame.index.name = "time_step"
    path = directory / "profile.csv"
    frame.to_csv(path)
    return [path]


def _playback(ds: xr.Dataset, directory: Path) -> list[Path]:
    p, q, dt = _grid(ds)
    table = pa.table(
        {
            "t [s]": np.arange(p.size) * dt,
            "P [MW]": p,
            "Q [Mvar]": q,
            **{f"{k} [MW]": v for k, v in _envelope_columns(ds).items()},
        }
    )
    path = directory / "playback.csv"
    pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="needed"))
    return [path]
