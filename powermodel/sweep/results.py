"""A sweep's results: the runs' outcomes gathered into one Dataset, its table, summary and file.

The last stage of a sweep: every run's metrics, rule verdicts and series become a Dataset with
a dimension per swept key (or ``point``) and ``seed``; :func:`table` is one row per run,
:func:`summary` the median over seeds a point, :func:`write` the ``.nc`` or ``.csv`` file.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from powermodel import rules
from powermodel.errors import PowerModelError
from powermodel.output import check_folder, netcdf, staged
from powermodel.sweep.points import _interval, _json
from powermodel.variables import attrs as variable_attrs

# Headline metrics the summary table shows (median over seeds): where the grid sees the site,
# its largest 5-s swing, and what the job trained
SUMMARY = ("grid_mean_mw", "grid_peak_mw", "grid_swing_5s_mw", "effective_training_time")
IN_RULE_UNIT = {"description": "in each rule's unit: the rule_unit coordinate"}
# Units of a metric by the end of its name (analysis.metrics names them so); the rest are 1
_UNITS = (
    ("_mwh", "MWh"),
    ("_mw", "MW"),
    ("_mvar", "Mvar"),
    ("_pct", "%"),
    ("_j", "J"),
    ("_l_per_kwh", "L/kWh"),
    ("_hours", "h"),
)


def _gather(
    results: list[list[dict[str, Any]]],
    keys: list[str],
    coords: dict[str, list[Any]],
    rule_list: Sequence[rules.Rule],
    series: str | None,
    is_grid: bool,
) -> xr.Dataset:
    """Every run's outcome (in point, seed order) as one Dataset."""
    n_points, seeds = len(results), len(results[0]) if results else 0
    flat = [r for point in results for r in point]
    dims = [*(keys if is_grid else ["point"]), "seed"]
    shape = (*(len(coords[k]) for k in keys), seeds) if is_grid else (n_points, seeds)
    names = list(dict.fromkeys(k for r in flat for k in r.get("metrics", {})))
    data: dict[str, Any] = {}
    for name in names:
        values = np.array([r.get("metrics", {}).get(name, np.nan) for r in flat])
        data[name] = (dims, values.reshape(shape), {"units": _unit(name)})
    seeds_run = np.array([r.get("seed", -1) for r in flat], dtype=np.int64)
    data["simulation_seed"] = (dims, seeds_run.reshape(shape), {"units": "1"})
    data["error"] = (
        dims,
        np.array([r["error"] if "error" in r else "" for r in flat], dtype=str).reshape(shape),
    )
    data["not_measured"] = (
        dims,
        np.array([r.get("not_measured", "") for r in flat], dtype=str).reshape(shape),
        {"description": "the run's metrics that are NaN and why: 'key: why; key: why'"},
    )
    if rule_list:
        data.update(_rule_variables(flat, rule_list, dims, shape))
    coords_out: dict[str, Any] = {"seed": np.arange(seeds)}
    if series is not None:
        data["grid_power"] = _series_variable(flat, dims, shape, series)
        step = np.timedelta64(round(_interval(series) * 1e9), "ns")
        coords_out["elapsed"] = np.arange(data["grid_power"][1].shape[-1]) * step
    ds = xr.Dataset(data, coords=coords_out)
    if is_grid:
        ds = ds.assign_coords({k: _coordinate(coords[k]) for k in keys})
    else:
        ds = ds.assign_coords(
            point=np.arange(n_points), **{k: ("point", _coordinate(coords[k])) for k in keys}
        )
    if rule_list:
        ds = ds.assign_coords(
            rule=[r.name for r in rule_list], rule_unit=("rule", [r.unit for r in rule_list])
        )
    return ds


def _rule_variables(
    flat: list[dict[str, Any]], rule_list: Sequence[rules.Rule], dims: list[str], shape: tuple
) -> dict[str, tuple]:
    def field_of(name: str, missing: Any) -> np.ndarray:
        return np.array(
            [
                [r.get("rules", {}).get(rule.name, {}).get(name, missing) for rule in rule_list]
                for r in flat
            ]
        ).reshape(*shape, len(rule_list))

    ruled = [*dims, "rule"]
    return {
        "rule_passed": (ruled, field_of("passed", np.nan), {"units": "1"}),
        "rule_worst": (ruled, field_of("worst", np.nan), IN_RULE_UNIT),
        "rule_limit": (ruled, field_of("limit", np.nan), IN_RULE_UNIT),
        "rule_violations_per_day": (
            ruled,
            field_of("violations_per_day", np.nan),
            {"units": "1/d"},
        ),
        "rule_resolved_to": (
            ruled,
            field_of("resolved_to", np.nan),
            {
                "units": "Hz",
                "description": "the run's step cut the rule's band here: a pass is not proven "
                "above it (NaN: the band is resolved)",
            },
        ),
        "rule_refused": (ruled, field_of("refused", "").astype(str), {}),
    }


def _series_variable(
    flat: list[dict[str, Any]], dims: list[str], shape: tuple, series: str
) -> tuple:
    """Each run's ``grid_power`` series on ``elapsed``, NaN past a shorter run's end."""
    length = max((len(r["series"]) for r in flat if "series" in r), default=0)
    values = np.full((len(flat), length), np.nan)
    for row, r in zip(values, flat, strict=True):
        if "series" in r:
            row[: len(r["series"])] = r["series"]
    attrs = {**variable_attrs("grid_power"), "cell_methods": f"elapsed: mean (interval: {series})"}
    return [*dims, "elapsed"], values.reshape(*shape, length), attrs


def _unit(name: str) -> str:
    return next((unit for end, unit in _UNITS if name.endswith(end)), "1")


def _coordinate(values: list[Any]) -> np.ndarray:
    """A key's values as a coordinate: numbers or booleans as such, the rest as text (``""``
    where a point leaves the key out)."""
    present = [v for v in values if v is not None]
    missing = len(present) < len(values)
    if present and all(isinstance(v, bool) for v in present) and not missing:
        return np.array(values, dtype=bool)
    if present and all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        if not missing:
            return np.array(values, dtype=np.int64)
    if present and all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return np.array([np.nan if v is None else float(v) for v in values])
    return np.array(
        ["" if v is None else v if isinstance(v, str) else _json(v) for v in values], dtype=str
    )


def check_output(path: str | Path) -> Path:
    """The results file, checked before any run: its extension (``.nc`` or ``.csv``, in any
    case) names a format :func:`write` writes, and a file can be made there
    (:func:`powermodel.output.check_folder`)."""
    path = Path(path)
    if path.suffix.lower() not in (".nc", ".csv"):
        raise PowerModelError(
            f"cannot write {str(path)!r}: unknown extension {path.suffix!r}; use .nc (NetCDF) "
            "or .csv (one row per run)"
        )
    return check_folder(path)


def dropped_series(ds: xr.Dataset, path: str | Path) -> str:
    """The note :func:`write` gives for ``path``: a CSV holds one row per run, so a sweep's
    ``series`` are not in it (``""`` where nothing is dropped)."""
    series = ds.attrs.get("series") or ""
    if not series or Path(path).suffix.lower() != ".csv":
        return ""
    return (
        f"note: {Path(path).name} holds one row per run: the runs' grid_power series "
        f'(series = "{series}") are not in it; write .nc to keep them'
    )


def write(ds: xr.Dataset, path: str | Path) -> Path:
    """A sweep's results to ``path``: ``.nc`` the Dataset, ``.csv`` :func:`table` (one row
    per run: a sweep's ``series`` are dropped, which :func:`dropped_series` says). Written
    whole or not at all (:func:`powermodel.output.staged`): a failed write leaves no partial
    file and an earlier file whole."""
    path = check_output(path)
    with staged(path) as temporary:
        if path.suffix.lower() == ".nc":
            netcdf(ds, temporary, engine="netcdf4")
        else:
            table(ds).to_csv(temporary, index=False)
    return path


def _key_columns(ds: xr.Dataset) -> list[str]:
    """The swept keys: the dimensions before ``seed``, or the coordinates on ``point``."""
    dims = [d for d in ds["error"].dims if d != "seed"]
    if dims == ["point"]:
        return ["point", *(c for c in ds.coords if ds[c].dims == ("point",) and c != "point")]
    return dims


def table(ds: xr.Dataset) -> pd.DataFrame:
    """One row per run: the swept keys, ``seed``, ``simulation_seed``, ``error``, the metrics,
    and for each rule ``<rule> passed``, ``worst [unit]``, ``limit [unit]``, ``violations/day``,
    ``resolved to [Hz]`` (where the run's step cut the rule's band: a pass is not proven above
    it; empty where the band is resolved) and ``refused``."""
    per_run = [
        n for n, v in ds.data_vars.items() if "rule" not in v.dims and "elapsed" not in v.dims
    ]
    wide = ds[per_run]
    if "rule" in ds.dims:
        for name, unit in zip(ds["rule"].values, ds["rule_unit"].values, strict=True):
            columns = {
                "passed": "passed",
                "worst": f"worst [{unit}]",
                "limit": f"limit [{unit}]",
                "violations_per_day": "violations/day",
                "resolved_to": "resolved to [Hz]",
                "refused": "refused",
            }
            for field_name, column in columns.items():
                if f"rule_{field_name}" not in ds:
                    continue  # results written before the variable was
                picked = ds[f"rule_{field_name}"].sel(rule=name).reset_coords(drop=True)
                wide[f"{name} {column}"] = picked
    frame = wide.to_dataframe().reset_index()
    first = [*_key_columns(ds), "seed"]
    return frame[[*first, *(c for c in frame.columns if c not in first)]]


def _failing(passed: pd.Series) -> str:
    """Runs failing a rule of those it judged: ``1/4``, or ``no verdict``."""
    judged = int(passed.notna().sum())
    return f"{int((passed == 0).sum())}/{judged}" if judged else "no verdict"


def summary(ds: xr.Dataset, width: int = 60) -> pd.DataFrame:
    """One row per point: its keys, the runs that ran (of the seeds), the median over seeds of
    the headline metrics, the runs failing each rule (of those it judged; ``*`` where a run
    passed a band its step cut), and the first error (cut to ``width`` characters).

    The returned frame's ``attrs["notes"]`` holds one line per starred rule: the frequency its
    band was cut at, above which a pass is not proven."""
    keys = _key_columns(ds)
    frame = table(ds)
    groups = frame.groupby(keys, sort=False, dropna=False)
    out = groups.size().reset_index()[keys]
    runs = groups["error"].agg(lambda e: f"{int((e == '').sum())}/{len(e)}")
    out["ran"] = runs.values
    for name in SUMMARY:
        if name in frame:
            out[f"{name} p50"] = groups[name].median().values
    notes = []
    for name in ds["rule"].values if "rule" in ds.dims else ():
        failing = groups[f"{name} passed"].agg(_failing).values
        cut = f"{name} resolved to [Hz]"
        if cut in frame:
            # a pass where the band was cut is a lower bound: starred, the cut in a note
            cut_pass = frame[cut].where(frame[f"{name} passed"] == 1)
            starred = cut_pass.groupby([frame[k] for k in keys], sort=False, dropna=False).count()
            failing = [f"{f}*" if n else f for f, n in zip(failing, starred.values, strict=True)]
            if cut_pass.notna().any():
                low, high = cut_pass.min(), cut_pass.max()
                at = f"{low:g} Hz" if low == high else f"{low:g}-{high:g} Hz"
                notes.append(
                    f"* {name}: the runs' step cut its band at {at}: a pass is not proven "
                    "above that"
                )
        out[f"{name} failing"] = failing
    out["error"] = (
        groups["error"]
        .agg(lambda e: next((t if len(t) <= width else t[: width - 1] + "…" for t in e if t), ""))
        .values
    )
    out.attrs["notes"] = notes + not_measured_notes(ds, SUMMARY)
    return out


def not_measured_notes(ds: xr.Dataset, names: Sequence[str] | None = None) -> list[str]:
    """One line per metric of ``names`` (all by default) that a run which ran did not measure,
    with why and in how many runs, from the ``not_measured`` variable: ``grid_swing_5s_mw: not
    measured in 24 runs: not resolved at a 10s step (needs dt <= 2.5s)``."""
    if "not_measured" not in ds:
        return []  # results written before the variable was
    ran = ds["error"].values.ravel() == ""
    counts: dict[tuple[str, str], int] = {}
    for cell in ds["not_measured"].values.ravel()[ran]:
        for item in str(cell).split("; ") if cell else ():
            key, _, why = item.partition(": ")
            if names is None or key in names:
                counts[(key, why)] = counts.get((key, why), 0) + 1
    return [
        f"{key}: not measured in {count:,} run{'s' * (count != 1)}: {why}"
        for (key, why), count in counts.items()
    ]
