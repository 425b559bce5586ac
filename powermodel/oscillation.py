"""Oscillation screening of a profile: grid modes from a file, a risk table per mode, what a PMU
sees of the lines. The model is :mod:`powermodel.models.oscillation`; the page is
docs/model/oscillation.md."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import xarray as xr
from pydantic import Field, ValidationError

from powermodel.analysis import step_seconds
from powermodel.errors import DataFileError, PowerModelError
from powermodel.iotools import read_text
from powermodel.models import oscillation as model
from powermodel.models.signal import resolved, step_advice
from powermodel.scenario import parse_toml
from powermodel.scenario.base import Label, Section
from powermodel.scenario.root import explain

__all__ = ["GridMode", "load_modes", "pmu_table", "screen_dataset"]

MAX_MODES = 1000  # modes a file holds: a study's mode table has tens
MAX_FILE_BYTES = 1 << 20
MAX_HARMONICS = 100  # harmonics of the step a shift search holds to its mode
# A mode's half-power band, 2ζ·f_n wide, spans at least this many bins of the record, or the
# spectrum cannot tell a line on the mode from one beside it
BINS_PER_BAND = 4
COLUMNS = {  # column: unit ("unit": the mode's own, in the unit column)
    "mode": "",
    "frequency": "Hz",
    "damping": "1",
    "line_frequency": "Hz",
    "line_amplitude": "MW",
    "gain_at_line": "unit/MW",
    "response": "unit",
    "limit": "unit",
    "unit": "",
    "ratio": "1",
    "verdict": "",
    "swing_limit": "MW",
    "step_time_below": "s",
    "step_time_above": "s",
}


class GridMode(Section):
    """One grid mode as the connection sees it (the resonance of
    :func:`powermodel.models.oscillation.mode_gain`)."""

    name: Label = Field(description="The mode's label in the risk table.")
    frequency: float = Field(gt=0, le=1000, description="Natural frequency of the mode. [Hz]")
    damping: float = Field(gt=0, lt=1, description="Damping ratio of the mode. [1]")
    gain: float = Field(
        gt=0,
        description="Response of the monitored quantity per MW of sinusoidal load swing at the "
        "mode's frequency (participation or sensitivity at the connection), in unit per MW.",
    )
    limit: float = Field(gt=0, description="Allowed response amplitude, in unit.")
    unit: Label = Field("MW", description="Unit of the response and the limit (MW, mHz, ...).")


def load_modes(path: str | Path) -> list[GridMode]:
    """Grid modes from a TOML file (``[[mode]]`` tables) or a CSV file (a header row of
    ``name, frequency, damping, gain, limit`` and optionally ``unit``), each validated as a
    :class:`GridMode`. A bad file raises :class:`~powermodel.errors.DataFileError` naming the
    mode, the field and what it takes."""
    path = Path(path)
    text = read_text(path, "mode file", DataFileError, MAX_FILE_BYTES)
    suffix = path.suffix.lower()
    if suffix == ".toml":
        rows = parse_toml(text, str(path)).get("mode")
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise DataFileError(
                f"{path}: no [[mode]] tables: give each mode as a [[mode]] table with name, "
                "frequency, damping, gain and limit"
            )
    elif suffix == ".csv":
        rows = [
            {k.strip(): v.strip() for k, v in row.items() if k is not None and v not in ("", None)}
            for row in csv.DictReader(io.StringIO(text))
        ]
    else:
        raise DataFileError(f"{path}: a mode file is .toml or .csv, not {suffix or 'no suffix'!r}")
    if not rows:
        raise DataFileError(f"{path}: holds no modes: give at least one")
    if len(rows) > MAX_MODES:
        raise DataFileError(f"{path}: {len(rows)} modes, more than the {MAX_MODES} a file holds")
    modes = []
    for i, row in enumerate(rows, 1):
        try:
            modes.append(GridMode.model_validate(row))
        except ValidationError as exc:
            name = f" ({row['name']})" if isinstance(row.get("name"), str) else ""
            raise DataFileError(f"{path}: mode {i}{name}: {explain(exc, GridMode)}") from None
    return modes


def screen_dataset(
    ds: xr.Dataset, modes: Sequence[GridMode | model.Mode], signal: str = "grid_power"
) -> pd.DataFrame:
    """The risk table of a profile's forced oscillations against grid modes, one row a mode.

    The spectrum of ``signal`` (:func:`~powermodel.models.oscillation.forced_spectrum`) is
    screened against each mode (:func:`~powermodel.models.oscillation.screen`); where the
    Dataset carries a training job's ``step_time`` attr, its harmonics' amplitudes are read
    from the spectrum and each mode gets the nearest step times that clear it
    (:func:`~powermodel.models.oscillation.step_time_shifts`). The units of the columns are in
    ``table.attrs["units"]`` ("unit": the mode's own, in the ``unit`` column). A mode the
    profile cannot speak for reads ``not resolved`` in ``verdict``, with the reason: one above
    what the step resolves, or one narrower than the record's resolution.
    """
    if signal not in ds:
        raise PowerModelError(f"the profile has no {signal!r} to screen: choose a variable it has")
    values = ds[signal]
    if values.dims != ("time",):
        raise PowerModelError(f"{signal} has dims {values.dims}: screen a series on time alone")
    dt = step_seconds(ds)
    freqs, amps = model.forced_spectrum(values.to_numpy(), dt)
    found = model.screen(freqs, amps, modes, enbw=model.FLATTOP_ENBW)
    table = pd.DataFrame(
        {
            "mode": [getattr(m, "name", "") or f"mode {i + 1}" for i, m in enumerate(modes)],
            "frequency": [float(m.frequency) for m in modes],
            "damping": [float(m.damping) for m in modes],
            **{k: found[k] for k in ("line_frequency", "line_amplitude", "gain_at_line")},
            "response": found["response"],
            "limit": [float(m.limit) for m in modes],
            "unit": [getattr(m, "unit", "") for m in modes],
            "ratio": found["ratio"],
            "verdict": [
                _verdict(m, flag, dt, freqs[1])
                for m, flag in zip(modes, found["flagged"], strict=True)
            ],
            "swing_limit": found["swing_limit"],
        }
    )
    step = float(ds.attrs.get("step_time", np.nan))
    shifts = [_shifts(step, freqs, amps, dt, m) for m in modes]
    table["step_time_below"] = [s[0] for s in shifts]
    table["step_time_above"] = [s[1] for s in shifts]
    table.attrs["units"] = dict(COLUMNS)
    return table


def _verdict(mode: GridMode | model.Mode, flagged: bool, dt: float, df: float) -> str:
    if mode.frequency > resolved(dt):
        return (
            f"not resolved: the mode is above what the step resolves; {step_advice(mode.frequency)}"
        )
    if df > 2.0 * mode.damping * mode.frequency / BINS_PER_BAND:
        shortest = BINS_PER_BAND / (2.0 * mode.damping * mode.frequency)
        return (
            "not resolved: the record is too short for the mode's band; "
            f"screen {shortest:.0f} s or more"
        )
    return "flag" if flagged else "clear"


def _shifts(
    step: float, freqs: np.ndarray, amps: np.ndarray, dt: float, mode: GridMode | model.Mode
) -> tuple[float, float]:
    """The nearest step times that clear one mode, from the step's harmonics in the spectrum;
    NaN without a step time or harmonics the step resolves."""
    count = min(MAX_HARMONICS, int(np.floor(resolved(dt) * step))) if np.isfinite(step) else 0
    if count < 1:
        return np.nan, np.nan
    harmonics = model.line_amplitudes(freqs, amps, np.arange(1, count + 1) / step)
    return model.step_time_shifts(step, harmonics, [mode])


def pmu_table(
    ds: xr.Dataset, freqs: Sequence[float], chain: str = "pmu30", signal: str = "grid_power"
) -> pd.DataFrame:
    """What a PMU chain reports of a profile's lines at ``freqs`` [Hz] against the profile
    (:func:`~powermodel.models.oscillation.pmu_view`), one row a line; units in
    ``table.attrs["units"]``."""
    if signal not in ds:
        raise PowerModelError(f"the profile has no {signal!r}: choose a variable it has")
    view = model.pmu_view(ds[signal].to_numpy(), step_seconds(ds), np.asarray(freqs), chain)
    table = pd.DataFrame(view)
    table.attrs["units"] = {
        "frequency": "Hz",
        "raw": "MW",
        "alias": "Hz",
        "reported": "MW",
        "attenuation": "1",
        "expected": "1",
    }
    return table
