"""NVIDIA's ``nvidia-smi --query-gpu=<fields> --format=csv`` logs: one line per GPU per poll, a
header naming the query's fields with their units (``power.draw [W]``) unless written with
``noheader``/``nounits``, and the header repeated each time the logger restarts. The fields are
nvidia-smi's own names (``nvidia-smi --help-query-gpu``); ``power.draw.instant`` (preferred) or
``power.draw.average`` may replace ``power.draw``. Timestamps are local time without an offset,
read as UTC. A log with ``index`` names each line's GPU; one without is read by each line's place
in its poll (:mod:`~powermodel.iotools.telemetry.nvidia_smi_polls`)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry.lines import (
    bad_rows,
    csv_fields,
    header_rows,
    refuse_line,
    split_lines,
)
from powermodel.iotools.telemetry.nvidia_smi_polls import gpu_polls
from powermodel.iotools.telemetry.tidy import gpu_channels
from powermodel.iotools.telemetry.units import CELSIUS, MHZ, MIB, PERCENT, POWER, read_fields
from powermodel.iotools.trace import parse_iso, split_unit, to_floats

# The query the docs tell users to record, and the column order taken for a log written with
# --format=csv,noheader when no ``columns`` are given.
NVIDIA_SMI_QUERY = (
    "timestamp",
    "index",
    "power.draw",
    "utilization.gpu",
    "clocks.sm",
    "temperature.gpu",
)
# Field → (vocabulary name, unit → factor to the vocabulary's unit)
_SMI_FIELDS = {
    "power.draw.instant": ("power", POWER),
    "power.draw": ("power", POWER),
    "power.draw.average": ("power", POWER),
    "utilization.gpu": ("utilization", PERCENT),
    "clocks.sm": ("sm_clock", MHZ),
    "clocks.current.sm": ("sm_clock", MHZ),
    "temperature.gpu": ("temperature", CELSIUS),
    "memory.used": ("memory_used", MIB),
}


def read_nvidia_smi(
    text: str,
    path: Path,
    columns: Sequence[str] | None,
    gpus: int | None,
    log: list,
    meta: dict,
) -> pd.DataFrame:
    """An nvidia-smi log's samples: ``line``, ``time``, ``channel`` and the fields read
    (``columns``: a ``noheader`` log's fields; ``gpus``: GPUs per poll of a log without
    ``index``, inferred when None)."""
    lines, cut = split_lines(text)
    lines = lines[lines.str.strip() != ""]
    names, header_units, has_header, is_header = _header(lines, columns, path, log)
    power_field = _power_field(names, path)
    meta["power_field"] = power_field
    meta["timezone"] = "UTC assumed: nvidia-smi prints local time without an offset"
    # Every run of the logger starts a new sequence of polls (for a log without index).
    run = np.cumsum(is_header)[~is_header]
    fields, time, number, run = _timed_rows(
        lines[~is_header], run, names, has_header, cut, log, path, meta
    )
    # the power field read, the query's other power fields not
    table = {n: f for n, f in _SMI_FIELDS.items() if f[0] != "power" or n == power_field}
    columns = [(name, unit, fields[j]) for j, (name, unit) in enumerate(header_units.items())]
    out = {"line": number, "time": time, **read_fields(columns, table, number, path, log)}
    raw = pd.DataFrame(out)
    if "index" in names:
        raw["channel"] = _indexed_channels(fields[names.index("index")], number, path)
        return raw
    return gpu_polls(raw, run, gpus, path, log, meta)


def _header(
    lines: pd.Series, columns: Sequence[str] | None, path: Path, log: list
) -> tuple[list[str], dict[str, str | None], bool, np.ndarray]:
    """The log's fields (its first line's, or ``columns`` for a log without a header), each
    field's unit in the header (None without one), whether the log has a header, and which
    lines repeat it (each copy noted in ``log``). Refused: another header within the file, a
    field given twice, no timestamp."""
    first = lines.iloc[0].strip()
    has_header = bool(re.match(r"[A-Za-z]", first))
    if has_header:
        header = [h.strip() for h in first.split(",")]
        is_header = header_rows(
            lines,
            lines.str.match(r"\s*[A-Za-z]").to_numpy(dtype=bool),
            path,
            "nvidia-smi restarted with another query; record one query per file, or split the "
            "file there",
        )
    else:
        header = list(columns or NVIDIA_SMI_QUERY)
        is_header = np.zeros(len(lines), dtype=bool)
    restarts = int(is_header.sum()) - int(has_header)
    if restarts:
        log.append(
            f"the header is repeated {restarts} time(s) (nvidia-smi restarted): "
            "the copies are skipped"
        )
    names = [split_unit(h)[0] for h in header]
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise DataFileError(f"{path}: field {twice!r} is given twice; give each once")
    if "timestamp" not in names:
        raise DataFileError(
            f"{path}: no timestamp field among {', '.join(names)}: record with "
            f"--query-gpu={','.join(NVIDIA_SMI_QUERY)}"
        )
    units = {
        name: split_unit(h)[1] if has_header else None
        for name, h in zip(names, header, strict=True)
    }
    return names, units, has_header, is_header


def _power_field(names: list[str], path: Path) -> str:
    """The field read as power: the first of the query's power fields in the order of
    preference (power.draw.instant, power.draw, power.draw.average)."""
    power_field = next(
        (f for f in _SMI_FIELDS if f in names and _SMI_FIELDS[f][0] == "power"), None
    )
    if power_field is None:
        raise DataFileError(
            f"{path}: no power field among {', '.join(names)}: record power.draw (or "
            f"power.draw.instant); --query-gpu={','.join(NVIDIA_SMI_QUERY)}"
        )
    return power_field


def _timed_rows(
    body: pd.Series,
    run: np.ndarray,
    names: list[str],
    has_header: bool,
    cut: bool,
    log: list,
    path: Path,
    meta: dict,
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """The rows of ``body`` (the lines after the header) with a field for each of ``names``
    and a time: their fields, times, line numbers and logger runs. A row whose field count
    differs from the header's is cut (at the end) or broken."""
    first = body.iloc[: min(len(body), 2)].str.count(",").to_numpy() + 1
    if not has_header and (first != len(names)).all():
        raise DataFileError(
            f"{path}: rows have {first[0]} fields, the columns {len(names)} "
            f"({', '.join(names)}): give columns= in the order of --query-gpu"
        )
    want = f"{len(names)} comma-separated fields ({', '.join(names)})"
    body, fields, bad = csv_fields(body, len(names), cut, log, path, want)
    run = run[~bad]
    stamp = fields[names.index("timestamp")].str.strip()
    time, offset = parse_iso(stamp.str.replace("/", "-", n=2))
    bad = bad_rows(
        np.isnat(time),
        body,
        cut,
        log,
        path,
        "a line starting with a time like 2024/07/01 12:00:00.123",
    )
    if offset[~bad].any():
        meta["timezone"] = "UTC, converted from the offsets written"
    return fields[~bad], time[~bad], body.index.to_numpy()[~bad], run[~bad]


def _indexed_channels(text: pd.Series, number: np.ndarray, path: Path) -> np.ndarray:
    """The channel ``gpu<i>`` of each row of a log with ``index`` (``text``, its index field)."""
    text = text.str.strip()
    index = to_floats(text)
    refuse_line(
        ~(np.isfinite(index) & (index >= 0) & (index == np.round(index))),
        number,
        path,
        lambda i: f"index {text.iloc[i]!r} is not a GPU index (0, 1, ...); mend or delete the line",
    )
    return gpu_channels(index.astype(np.int64))
