"""NVIDIA DCGM's two outputs: ``dcgmi dmon -e 155,203,100,150 -d 100`` text (an ``#Entity``
header of the fields' short names, a line of their units, then ``GPU <id>`` rows; it prints no
times, so the rows are timed by ``period``), and concatenated Prometheus scrapes of
dcgm-exporter (``DCGM_FI_DEV_POWER_USAGE``, ``_GPU_UTIL``, ``_SM_CLOCK``, ``_GPU_TEMP``, each
sample labelled with its ``gpu`` and ``Hostname``, in Prometheus' text exposition format
``name{labels} value [timestamp_ms]``; other metrics are ignored, and samples without a
timestamp are timed by ``period``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

from powermodel.errors import DataFileError
from powermodel.iotools.telemetry.lines import bad_rows, refuse_line, split_lines
from powermodel.iotools.telemetry.tidy import gpu_channels
from powermodel.iotools.telemetry.timing import ms_times, poll_numbers, seconds_times, untimed
from powermodel.iotools.telemetry.units import (
    CELSIUS,
    MHZ,
    PERCENT,
    POWER,
    read_fields,
    readings,
)
from powermodel.iotools.trace import to_floats

# Prometheus' exposition: name{labels} value [timestamp_ms]
_PROMETHEUS = re.compile(
    r"^(?P<metric>[A-Za-z_:][A-Za-z0-9_:]*)(?:\{(?P<labels>[^}]*)\})?\s+"
    r"(?P<value>\S+)(?:\s+(?P<stamp>-?\d+))?\s*$"
)
# dcgmi dmon prints each field's short name and unit; field ids 155, 203, 100, 150.
_DMON_FIELDS = {
    "POWER": ("power", POWER),
    "GPUTL": ("utilization", PERCENT),
    "SMCLK": ("sm_clock", MHZ),
    "TMPTR": ("temperature", CELSIUS),
}
_EXPORTER_FIELDS = {
    "DCGM_FI_DEV_POWER_USAGE": ("power", POWER, "W"),
    "DCGM_FI_DEV_GPU_UTIL": ("utilization", PERCENT, "%"),
    "DCGM_FI_DEV_SM_CLOCK": ("sm_clock", MHZ, "MHz"),
    "DCGM_FI_DEV_GPU_TEMP": ("temperature", CELSIUS, "C"),
}


# --- dcgmi dmon ------------------------------------------------------------------------------


def read_dcgmi_dmon(
    text: str, path: Path, period: float | None, log: list, meta: dict
) -> pd.DataFrame:
    """The ``GPU <id>`` rows of ``dcgmi dmon`` output, each poll ``period`` [s] after the one
    before."""
    lines, cut = split_lines(text)
    strip = lines.str.strip()
    is_header = strip.str.match(r"#\s*Entity\b").to_numpy(dtype=bool)
    is_unit = strip.str.match(r"I[Dd]\b").to_numpy(dtype=bool)
    names, units = _dmon_fields(strip, is_header, is_unit, path)
    is_row = strip.str.match(r"(?:GPU|GPU-I|GPU-CI|Switch|vGPU|CPU|Link|Core)\s+\d+").to_numpy(
        dtype=bool
    )
    ignored = strip.str.contains(r"^$|dmon was stopped").to_numpy(dtype=bool)
    junk = ~(is_header | is_unit | is_row | ignored)
    junk = bad_rows(junk, lines, cut, log, path, "a dmon header, unit or entity line")
    is_gpu = (strip.str.match(r"GPU\s+\d+(?:\s|$)").to_numpy(dtype=bool)) & is_row
    rows = strip[is_gpu]
    count = rows.str.count(r"\S+").to_numpy()
    short = count != len(names) + 2
    short = bad_rows(
        _expand(short, is_gpu, len(lines)),
        lines,
        cut,
        log,
        path,
        f"'GPU <id>' and {len(names)} values ({', '.join(names)})",
    )[is_gpu]
    rows, number = rows[~short], rows.index.to_numpy()[~short]
    if rows.empty:
        raise DataFileError(f"{path}: no 'GPU <id>' rows; give dmon output with its samples")
    fields = rows.str.split(expand=True)
    gpu = fields[1].astype(int).to_numpy()
    period = untimed(
        period,
        path,
        "dcgmi dmon prints no times (no release does): the rows are timed by dmon's -d delay",
        meta,
        "steps",
    )
    time = seconds_times(poll_numbers(gpu) * period)
    out = {"line": number, "time": time, "channel": gpu_channels(gpu)}
    columns = (
        (name, unit, fields[j + 2]) for j, (name, unit) in enumerate(zip(names, units, strict=True))
    )
    out.update(read_fields(columns, _DMON_FIELDS, number, path, log))
    if "power" not in out:
        raise DataFileError(
            f"{path}: no POWER field among {', '.join(names)}: record field 155 "
            "(dcgmi dmon -e 155,203,100,150 -d 100)"
        )
    meta["power_field"] = "POWER (155)"
    return pd.DataFrame(out)


def _dmon_fields(
    strip: pd.Series, is_header: np.ndarray, is_unit: np.ndarray, path: Path
) -> tuple[list[str], list[str | None]]:
    """The fields dmon was run with (its ``#Entity`` header's names) and their units (of its
    unit line; None where it has none that fits). Refused: no header, or another within."""
    if not is_header.any():
        raise DataFileError(f"{path}: no '#Entity' header line: not dcgmi dmon output")
    header = strip[is_header]
    other = (
        header.str.replace(r"\s+", " ", regex=True) != re.sub(r"\s+", " ", header.iloc[0])
    ).to_numpy()
    if other.any():
        i = int(np.flatnonzero(other)[0])
        raise DataFileError(
            f"{path}: line {header.index[i]}: a header unlike line {header.index[0]}'s: dmon "
            "was restarted with other fields; record one field list per file"
        )
    names = re.sub(r"^#\s*Entity", "", header.iloc[0]).split()
    unit_line = strip[is_unit]
    units = unit_line.iloc[0].split()[1:] if len(unit_line) else [None] * len(names)
    if len(units) != len(names):
        units = [None] * len(names)
    return names, units


def _expand(flags: np.ndarray, where: np.ndarray, n: int) -> np.ndarray:
    """``flags`` of the rows ``where`` marks, spread over all ``n`` rows (False elsewhere)."""
    out = np.zeros(n, dtype=bool)
    out[where] = flags
    return out


# --- dcgm-exporter ---------------------------------------------------------------------------


def read_dcgm_exporter(
    text: str, path: Path, period: float | None, log: list, meta: dict
) -> pd.DataFrame:
    """The samples of dcgm-exporter's scrapes: one row per GPU and time of a power sample,
    the other metrics of the same GPU and time beside it."""
    frame = _exporter_samples(text, path, log)
    stamped = (frame["stamp"].fillna("") != "").to_numpy(dtype=bool)
    refuse_line(
        ~stamped & stamped.any(),
        frame["line"].to_numpy(),
        path,
        lambda i: (
            "a sample without a timestamp among samples with one; give scrapes all "
            "with or all without timestamps"
        ),
    )
    if stamped.all():
        frame["key"] = to_floats(frame["stamp"]).astype(np.int64)
        meta["timezone"] = "UTC (Prometheus timestamps)"
    else:
        period = untimed(
            period,
            path,
            "the scrapes carry no timestamps (dcgm-exporter writes none): they "
            "are timed by the scrape interval",
            meta,
            "scrapes",
        )
        frame["key"] = frame.groupby(["metric", "channel"]).cumcount()
    dup = frame.duplicated(["metric", "channel", "key"]).to_numpy()
    if dup.any():
        log.append(
            f"{int(dup.sum())} sample(s) repeat a GPU's metric at the same timestamp "
            f"(first at line {frame['line'].iloc[int(np.flatnonzero(dup)[0])]}): the "
            "later dropped"
        )
        frame = frame[~dup]
    out = _beside_power(frame, path, log)
    meta["power_field"] = "DCGM_FI_DEV_POWER_USAGE"
    key = out.pop("key").to_numpy(dtype=np.int64)
    out["time"] = ms_times(key) if stamped.all() else seconds_times(key * period)
    return out


def _exporter_samples(text: str, path: Path, log: list) -> pd.DataFrame:
    """The samples of the metrics read (``line``, ``metric``, ``channel``: ``gpu<i>``, or
    ``<host>/gpu<i>`` where the scrapes hold several hosts, ``stamp`` and ``value`` as
    written); comments skipped, a line that is no sample refused (or, cut at the end,
    dropped)."""
    lines, cut = split_lines(text)
    strip = lines.str.strip()
    comment = strip.str.contains(r"^(?:#|$)").to_numpy(dtype=bool)
    parts = strip.str.extract(_PROMETHEUS.pattern)
    junk = ~comment & parts["metric"].isna().to_numpy()
    junk = bad_rows(junk, lines, cut, log, path, "a Prometheus sample 'NAME{labels} value'")
    kept = parts["metric"].isin(list(_EXPORTER_FIELDS)).to_numpy() & ~junk
    parts = parts[kept]
    if parts.empty:
        raise DataFileError(
            f"{path}: no DCGM_FI_DEV_POWER_USAGE samples: have dcgm-exporter collect it "
            "(its default counters do)"
        )
    labels = parts["labels"].fillna("")
    gpu = labels.str.extract(r'(?:^|,)\s*gpu="(?P<gpu>\d+)"')["gpu"]
    refuse_line(
        gpu.isna().to_numpy(),
        parts.index,
        path,
        lambda i: 'a sample without a gpu="<i>" label; keep dcgm-exporter\'s labels',
    )
    host = labels.str.extract(r'(?:^|,)\s*Hostname="(?P<host>[^"]*)"')["host"].fillna("")
    several = host.nunique() > 1
    channel = (host + "/gpu" + gpu) if several else ("gpu" + gpu)
    return pd.DataFrame(
        {
            "line": parts.index.to_numpy(),
            "metric": parts["metric"].to_numpy(dtype=str),
            "channel": channel.to_numpy(dtype=str),
            "stamp": parts["stamp"].to_numpy(dtype=object),
            "value": parts["value"].to_numpy(dtype=object),
        }
    )


def _beside_power(frame: pd.DataFrame, path: Path, log: list) -> pd.DataFrame:
    """One row per power sample (``line``, ``channel``, ``key``: its time's), each metric
    read (:func:`~powermodel.iotools.telemetry.units.readings`) beside it where the same GPU
    has one at the same key (NaN where not)."""
    power = frame[frame["metric"] == "DCGM_FI_DEV_POWER_USAGE"]
    if power.empty:
        raise DataFileError(
            f"{path}: no DCGM_FI_DEV_POWER_USAGE samples: have dcgm-exporter collect it"
        )
    out = power[["line", "channel", "key"]].reset_index(drop=True)
    for metric, (var, units, unit) in _EXPORTER_FIELDS.items():
        rows = frame[frame["metric"] == metric]
        if rows.empty:
            continue
        values = readings(
            pd.Series(rows["value"].to_numpy(dtype=str)),
            units,
            unit,
            metric,
            rows["line"].to_numpy(),
            path,
            log,
        )
        series = pd.Series(
            values,
            index=pd.MultiIndex.from_arrays([rows["channel"].to_numpy(), rows["key"].to_numpy()]),
        )
        out[var] = series.reindex(
            pd.MultiIndex.from_arrays([out["channel"].to_numpy(), out["key"].to_numpy()])
        ).to_numpy()
    return out
